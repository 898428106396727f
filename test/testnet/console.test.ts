/**
 * The `registry-node testnet` console driven as a script piped on standard input: the commands run
 * one after another in the order written, every line is timestamped, a paused node shows in
 * `status` without being asked, and `quit` stops the testnet once the commands before it are done.
 */
import { spawn } from 'node:child_process'
import test from 'ava'
import { CLI_FOR_TESTS } from '../../scripts/lib/node-process.js'

const SCRIPT = [
  'status',
  'pause 1',
  'status',
  'sleep abc',
  'resume 1',
  'sleep 0.2',
  'seed 2',
  'status',
  'quit',
  'status'
]

/** Runs the testnet with the whole script already on stdin (and stdin ended); its exit code and stdout lines. */
function runScript(
  args: string[],
  script: string[]
): Promise<{ code: number | null; lines: string[]; stderr: string }> {
  const child = spawn(process.execPath, [...CLI_FOR_TESTS, 'testnet', ...args], { stdio: ['pipe', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', d => {
    stdout += d
  })
  child.stderr.on('data', d => {
    stderr += d
  })
  child.stdin.end(`${script.join('\n')}\n`)
  // Bounds a failure only: a hung console would otherwise hang the suite.
  const deadline = setTimeout(() => child.kill('SIGKILL'), 120_000)
  return new Promise(resolve =>
    child.on('close', code => {
      clearTimeout(deadline)
      resolve({ code, lines: stdout.split('\n').filter(Boolean), stderr })
    })
  )
}

test('testnet console: a piped script runs in order, every line timestamped; paused nodes show as paused; quit waits', async t => {
  const run = await runScript(['--nodes', '2', '--network', 'process'], SCRIPT)
  const output = run.lines.join('\n')
  t.is(run.code, 0, `${output}\n${run.stderr}`)

  const stamped = run.lines.map(line => /^\[ *(\d+\.\d{3})\] (.*)$/.exec(line))
  t.true(
    stamped.every(m => m !== null),
    `every line starts with [seconds.milliseconds]:\n${output}`
  )
  const times = stamped.map(m => Number(m![1]))
  const text = stamped.map(m => m![2]!)
  t.true(
    times.every((time, i) => i === 0 || time >= times[i - 1]!),
    'times never go back'
  )
  t.regex(text[0]!, /^testnet command started at \d{4}-\d\d-\d\dT/)

  // The console's own output, from the first status on, in the script's order.
  const from = text.findIndex(l => /^node-0 {2}running/.test(l))
  t.true(from > 0, output)
  const rest = text.slice(from).map(l => l.replace(/digest \w+ \(\d+ operations\)/, 'digest D'))
  t.deepEqual(rest.slice(0, 8), [
    'node-0  running  peers 1  entities 0  digest D',
    'node-1  running  peers 1  entities 0  digest D',
    'paused node-1 (SIGSTOP)',
    'node-0  running  peers 1  entities 0  digest D',
    'node-1  paused',
    'error: sleep takes a number of seconds from 0 to 86400 (e.g. sleep 0.5)',
    'resumed node-1',
    rest[7]!
  ])
  t.regex(
    rest[7]!,
    /^registered 2 entities \(2 in all\) in \d+ ms; every node held them \d+ ms after the first was sent$/
  )
  const sleptFrom = times[from + 6]!
  t.true(times[from + 7]! - sleptFrom >= 0.2, 'seed ran after the 0.2 s sleep')
  t.regex(rest[8]!, /^node-0 {2}running {2}peers 1 {2}entities 2 {2}digest D$/)
  t.regex(rest[9]!, /^node-1 {2}running {2}peers 1 {2}entities 2 {2}digest D$/)
  // After seed, both nodes hold the same operations: the same sync digest.
  const digests = text.slice(from + 8, from + 10).map(l => /digest (\w+)/.exec(l)?.[1])
  t.is(digests[0], digests[1])
  t.not(digests[0], /digest (\w+)/.exec(text[from]!)?.[1], 'the digest moved with the registrations')
  t.deepEqual(rest.slice(10), ['stopping the testnet', 'stopped; data removed'], 'nothing runs after quit')
})
