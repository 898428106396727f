import { pino, type Logger } from 'pino'
import type { LogLevel } from './config/settings.js'

/**
 * The children each logger made. pino copies the level into a child when it makes it and never
 * again, so a level changed at run time must be set on every child too; weakly held, so a child
 * nobody uses any more is not kept for this.
 */
const children = new WeakMap<Logger, Set<WeakRef<Logger>>>()

/** JSON logs to stdout, written asynchronously so request logging stays off the hot path. */
export function createLogger(level: LogLevel): Logger {
  const destination = pino.destination({ dest: 1, sync: false })
  // Standard output redirected to a file on a full disk: the buffered lines wait for space instead of ending the process.
  destination.on('error', () => {})
  const made = new Set<WeakRef<Logger>>()
  const root = pino(
    {
      level,
      base: undefined,
      timestamp: pino.stdTimeFunctions.isoTime,
      // Children inherit this hook, so grandchildren are counted too.
      onChild: child => {
        made.add(new WeakRef(child))
      }
    },
    destination
  )
  children.set(root, made)
  return root
}

/** Sets the level of a logger and of the children it made (those made by createLogger are known). */
export function setLogLevel(logger: Logger, level: LogLevel): void {
  logger.level = level
  const made = children.get(logger)
  if (!made) return
  for (const ref of made) {
    const child = ref.deref()
    if (child) child.level = level
    else made.delete(ref)
  }
}
