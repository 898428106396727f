import { pino, type Logger } from 'pino'
import type { LogLevel } from './config/settings.js'

/** JSON logs to stdout, written asynchronously so request logging stays off the hot path. */
export function createLogger(level: LogLevel): Logger {
  const destination = pino.destination({ dest: 1, sync: false })
  // Standard output redirected to a file on a full disk: the buffered lines wait for space instead of ending the process.
  destination.on('error', () => {})
  return pino({ level, base: undefined, timestamp: pino.stdTimeFunctions.isoTime }, destination)
}
