import { RegistryError } from '../../errors.js'

/** Counts in-flight writes so shutdown can refuse new ones and wait for the rest to commit. */
export class WriteTracker {
  private readonly inFlight = new Set<Promise<unknown>>()
  private draining = false

  get size(): number {
    return this.inFlight.size
  }

  /** Runs a write; refused with 503 once draining has begun. */
  run<T>(write: () => Promise<T>): Promise<T> {
    if (this.draining) return Promise.reject(new RegistryError('shutting_down'))
    const promise = write()
    this.inFlight.add(promise)
    const done = (): void => {
      this.inFlight.delete(promise)
    }
    promise.then(done, done)
    return promise
  }

  /** Resolves once the writes in flight now have settled (later ones are not waited for). */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.inFlight])
  }

  /** Stops accepting writes and resolves once every write already started has settled. */
  async drain(): Promise<void> {
    this.draining = true
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight])
  }
}
