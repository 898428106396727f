import { pino, type Logger } from 'pino'
import type { LogLevel } from './config.js'

/** JSON logs to stdout, written asynchronously so request logging stays off the hot path. */
export function createLogger(level: LogLevel): Logger {
  return pino({ level, base: undefined, timestamp: pino.stdTimeFunctions.isoTime }, pino.destination({ dest: 1, sync: false }))
}
