import test from 'ava'
import { VirtualClock } from '../../src/testnet/sim/virtual-clock.js'

test.serial('timers fire in virtual time, in order, and Date and performance.now follow the clock', async t => {
  const clock = new VirtualClock(Date.UTC(2026, 0, 1))
  const realStart = performance.now()
  clock.install()
  const seen: string[] = []
  try {
    setTimeout(() => seen.push(`b ${Date.now() - clock.epochMs}`), 5_000)
    setTimeout(() => seen.push(`a ${performance.now()}`), 1_000)
    const interval = setInterval(() => seen.push(`i ${clock.elapsed}`), 2_000)
    // A zero delay is Node's 1 ms: a timer re-armed at 0 still lets time move.
    setTimeout(() => seen.push(`z ${clock.elapsed}`), 0)
    await clock.advance(4_500)
    clearInterval(interval)
    await clock.advance(10_000)
    t.is(new Date().toISOString(), '2026-01-01T00:00:14.500Z')
  } finally {
    clock.uninstall()
  }
  t.deepEqual(seen, ['z 1', 'a 1000', 'i 2000', 'i 4000', 'b 5000'])
  // An hour of timers took no hour of real time.
  t.true(performance.now() - realStart < 5_000)
})

test.serial('AbortSignal.timeout and refreshed timers run on the clock; the real ones come back', async t => {
  const clock = new VirtualClock(0)
  const realTimeout = globalThis.setTimeout
  clock.install()
  let abortedAt = -1
  let refreshedAt = -1
  try {
    const signal = AbortSignal.timeout(30_000)
    signal.addEventListener('abort', () => {
      abortedAt = clock.elapsed
    })
    const timer = setTimeout(() => {
      refreshedAt = clock.elapsed
    }, 1_000)
    await clock.advance(900)
    timer.refresh()
    await clock.advance(60_000)
  } finally {
    clock.uninstall()
  }
  t.is(abortedAt, 30_000)
  t.is(refreshedAt, 1_900)
  t.is(globalThis.setTimeout, realTimeout)
})
