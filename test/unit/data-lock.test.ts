/**
 * One node per data directory: a second opener is refused naming the holder; a lock left by a
 * process that is gone is taken over; a stopped node's directory opens again.
 */
import { spawnSync } from 'node:child_process'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import test from 'ava'
import { DataDirInUse, DataDirLock, LOCK_FILE } from '../../src/store/data-lock.js'
import { startTestNode } from '../helpers/node.js'

test('a second lock on a directory is refused, naming the holder; released, it is taken again', async t => {
  const dir = await mkdtemp(join(tmpdir(), 'data-lock-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const lock = await DataDirLock.acquire(dir)
  t.is((await readFile(join(dir, LOCK_FILE), 'utf8')).trim(), String(process.pid))
  await t.throwsAsync(DataDirLock.acquire(dir), {
    instanceOf: DataDirInUse,
    message: new RegExp(`process ${process.pid}`)
  })
  await lock.release()
  const again = await DataDirLock.acquire(dir)
  await again.release()
})

test('a lock left by a process that is gone is taken over', async t => {
  const dir = await mkdtemp(join(tmpdir(), 'data-lock-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  // The PID of a process that has exited.
  const gone = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], {
    encoding: 'utf8'
  }).stdout
  await writeFile(join(dir, LOCK_FILE), `${gone}\n`)
  const lock = await DataDirLock.acquire(dir)
  t.is((await readFile(join(dir, LOCK_FILE), 'utf8')).trim(), String(process.pid))
  await lock.release()
})

test("a node's data directory cannot be opened by a second node until the first stops", async t => {
  const first = await startTestNode()
  t.teardown(() => rm(first.dataDir, { recursive: true, force: true }))
  await t.throwsAsync(startTestNode({}, first.dataDir), { instanceOf: DataDirInUse })
  await first.stop(true)
  const second = await startTestNode({}, first.dataDir)
  t.is(second.node.identity.registryId, first.node.identity.registryId)
  await second.stop(true)
})
