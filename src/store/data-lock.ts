/**
 * One node per data directory: a second process opening a running node's directory would serve the
 * same registry ID and PeerId over a store the first one writes. The lock is a file holding the
 * owner's PID, created exclusively; one left by a process that is gone is taken over.
 */
import { mkdir, open, readFile, unlink } from 'node:fs/promises'
import { join } from 'node:path'

export const LOCK_FILE = 'registry-node.pid'

export class DataDirInUse extends Error {
  override name = 'DataDirInUse'
}

export class DataDirLock {
  private constructor(private readonly path: string) {}

  static async acquire(dir: string): Promise<DataDirLock> {
    await mkdir(dir, { recursive: true })
    const path = join(dir, LOCK_FILE)
    for (;;) {
      try {
        const file = await open(path, 'wx')
        await file.writeFile(`${process.pid}\n`)
        await file.close()
        return new DataDirLock(path)
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
      }
      const holder = Number.parseInt(await readFile(path, 'utf8').catch(() => ''), 10)
      if (Number.isInteger(holder) && holder > 0 && running(holder)) {
        throw new DataDirInUse(
          `data directory ${dir} is in use by process ${holder}${holder === process.pid ? ' (this one)' : ''}; stop it or choose another --data`
        )
      }
      // The holder is gone (a crash or kill -9): its lock is stale.
      await unlink(path).catch(() => {})
    }
  }

  async release(): Promise<void> {
    await unlink(this.path).catch(() => {})
  }
}

function running(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    // EPERM: it exists, under another user.
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}
