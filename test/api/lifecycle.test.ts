/**
 * One lifecycle drives start and stop (src/lifecycle.ts): a failure injected at each start step
 * stops what had started, in reverse order, and leaves nothing open, so the process exits by
 * itself. Each case runs in its own process (test/fixtures/lifecycle/start-and-fail.ts).
 */
import test from 'ava'
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const CHILD = fileURLToPath(new URL('../fixtures/lifecycle/start-and-fail.ts', import.meta.url))
/** A clean process exits within a second or two of its last output; one with an open handle never does. */
const EXIT_LIMIT_MS = 30_000

interface Run {
  steps: string[]
  registered: string[]
  stopped: string[]
  error: string | null
  exitedBySelf: boolean
}

function run(failAt = ''): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', CHILD, failAt], { stdio: ['ignore', 'pipe', 'inherit'] })
    let out = ''
    child.stdout.on('data', chunk => {
      out += chunk
    })
    const limit = setTimeout(() => child.kill('SIGKILL'), EXIT_LIMIT_MS)
    child.on('error', reject)
    child.on('exit', code => {
      clearTimeout(limit)
      const line = out.trim().split('\n').at(-1)
      if (!line) return reject(new Error(`the child printed nothing (exit ${code})`))
      resolve({ ...(JSON.parse(line) as Omit<Run, 'exitedBySelf'>), exitedBySelf: code === 0 })
    })
  })
}

/** Runs `items` through `task`, `width` at a time (each case is a node process). */
async function inBatches<T, R>(items: readonly T[], width: number, task: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = []
  for (let i = 0; i < items.length; i += width)
    results.push(...(await Promise.all(items.slice(i, i + width).map(task))))
  return results
}

test('a node stops its parts in the reverse of their start; a failure at each start step does the same and leaves nothing open', async t => {
  const full = await run()
  t.is(full.error, null)
  t.true(full.exitedBySelf, 'a started and stopped node exits by itself')
  t.deepEqual(full.stopped, [...full.registered].reverse())
  // The order that matters: HTTP stops taking requests first and its connections close last;
  // the mesh stops before writes drain, and writes drain before the store closes.
  t.is(full.stopped[0], 'http')
  t.is(full.stopped.at(-1), 'http connections')
  const at = (step: string) => full.stopped.indexOf(step)
  t.true(
    at('mesh') < at('writes') && at('writes') < at('search') && at('search') < at('store'),
    full.stopped.join(' → ')
  )
  t.true(full.steps.length >= 10, `start steps: ${full.steps.join(', ')}`)

  const runs = await inBatches(full.steps, 3, async step => ({ step, result: await run(step) }))
  for (const { step, result } of runs) {
    t.is(result.error, `injected failure at ${step}`, `the failure at ${step} reaches the caller`)
    t.true(result.exitedBySelf, `a failure at ${step} leaves nothing open`)
    t.deepEqual(result.steps, full.steps.slice(0, full.steps.indexOf(step) + 1), `start stops at ${step}`)
    t.deepEqual(
      result.stopped,
      [...result.registered].reverse(),
      `a failure at ${step} stops what had started, last first`
    )
  }
})
