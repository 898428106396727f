import type { Logger } from 'pino'
import type { RegistryStore } from '../../store/registry-store.js'

const TOMBSTONE_PURGE_INTERVAL_MS = 60 * 60 * 1000
const FIRST_TOMBSTONE_PURGE_AFTER_MS = 60 * 1000

/**
 * Purges tombstones past retention a minute after start and every hour after; returns the timers.
 * Not on the way to listening: a purge reads every used signature (seconds at a million entities,
 * spread over turns of the event loop).
 */
export function startTombstonePurge(
  retentionDays: number,
  store: RegistryStore,
  logger: Pick<Logger, 'info' | 'error'>
): NodeJS.Timeout[] {
  const purge = async (): Promise<void> => {
    try {
      const now = new Date()
      const signaturesBefore = new Date(now.getTime() - retentionDays * 86_400_000)
      const purged = await store.purgeExpiredTombstones(now, signaturesBefore)
      if (purged > 0) logger.info({ purged }, 'expired tombstones purged')
    } catch (err) {
      logger.error({ err }, 'tombstone purge failed')
    }
  }
  return [
    setTimeout(() => void purge(), FIRST_TOMBSTONE_PURGE_AFTER_MS).unref(),
    setInterval(() => void purge(), TOMBSTONE_PURGE_INTERVAL_MS).unref()
  ]
}
