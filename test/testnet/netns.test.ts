/**
 * Network namespaces for testnets (src/testnet/netns.ts), on real packets: a 3-node network with a
 * TCP echo server in every node namespace; reachability from the root namespace and between nodes,
 * a partition (new connections and an established one), heal, 100 % loss on one link, a node
 * behind a stateful filter that refuses inbound connections, stale cleanup and destroy; and on a
 * 2-node network the uplink bandwidth cap, timed on a download between the namespaces. Skipped,
 * with the probe's reasons, where namespaces are unavailable (not root, not Linux, no iproute2).
 */
import { execFile as execFileCallback, spawn, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { connect } from 'node:net'
import { promisify } from 'node:util'
import test from 'ava'
import { cleanupStaleNetns, createNetnsNetwork, probeNetns, type NetnsNetwork } from '../../src/testnet/netns.js'
import { until } from '../helpers/wait.js'

const execFile = promisify(execFileCallback)
const PORT = 7400
const CONNECT_TIMEOUT_MS = 1000

// `node -e SCRIPT a b`: process.argv is [node, a, b].
const SERVER = `
require('node:net').createServer(s => { s.on('error', () => {}); s.pipe(s) })
  .listen(Number(process.argv[1]), '0.0.0.0', () => console.log('ready'))`
// Exit 0 when the echo comes back, 1 on a socket error, 2 on timeout.
const PROBE_CLIENT = `
const s = require('node:net').connect(Number(process.argv[2]), process.argv[1])
setTimeout(() => process.exit(2), ${CONNECT_TIMEOUT_MS})
s.on('connect', () => s.write('x'))
s.on('data', () => process.exit(0))
s.on('error', () => process.exit(1))`
// Holds one connection; stdin lines go out, echoes come back on stdout.
const LONG_CLIENT = `
const s = require('node:net').connect(Number(process.argv[2]), process.argv[1])
s.setEncoding('utf8')
s.on('connect', () => console.log('connected'))
s.on('data', d => process.stdout.write(d))
s.on('error', e => { console.log('error ' + e.code); process.exit(1) })
process.stdin.setEncoding('utf8')
process.stdin.on('data', d => s.write(d))`
// Sends argv[2] bytes to every connection, then closes it.
const SENDER = `
const bytes = Buffer.alloc(Number(process.argv[2]), 120)
require('node:net').createServer(s => { s.on('error', () => {}); s.end(bytes) })
  .listen(Number(process.argv[1]), '0.0.0.0', () => console.log('ready'))`
// Downloads from a SENDER and prints the bytes and ms after the first chunk: the first chunk may be
// a burst the shaper let through before its tokens ran out, so it is left out of the rate.
const RECEIVER = `
const s = require('node:net').connect(Number(process.argv[2]), process.argv[1])
let first = 0, bytes = 0
s.on('data', d => { if (first === 0) first = performance.now(); else bytes += d.length })
s.on('end', () => console.log(JSON.stringify({ bytes, ms: performance.now() - first })))
s.on('error', e => { console.error(e.code); process.exit(1) })`
/** 600 kB: 2.4 s at 2 Mbit/s. */
const DOWNLOAD_BYTES = 600_000

const caps = await probeNetns()
const children: ChildProcess[] = []
const networks: NetnsNetwork[] = []

interface Output {
  child: ChildProcess
  text: () => string
}

function start(argv: string[]): Output {
  const [file, ...args] = argv
  if (file === undefined) throw new Error('empty argv')
  const child = spawn(file, args, { stdio: ['pipe', 'pipe', 'pipe'] })
  children.push(child)
  let out = ''
  child.stdout?.setEncoding('utf8').on('data', (d: string) => (out += d))
  child.stderr?.setEncoding('utf8').on('data', (d: string) => (out += d))
  return { child, text: () => out }
}

/** Waits until the output holds `needle`. */
async function waitFor(output: Output, needle: string, what: string): Promise<void> {
  await until(what, () => output.text().includes(needle), { intervalMs: 20, detail: () => output.text() })
}

/**
 * Whether one TCP echo round trip from `from` (a node, or the root namespace) to node `to` works
 * within CONNECT_TIMEOUT_MS. For negative checks: a dropped packet never arrives, however long the
 * wait; a positive check goes through reachable() instead.
 */
async function reaches(net: NetnsNetwork, from: number | 'host', to: number): Promise<boolean> {
  if (from === 'host') {
    return new Promise(resolve => {
      const s = connect(PORT, net.address(to))
      const done = (ok: boolean): void => {
        clearTimeout(timer)
        s.destroy()
        resolve(ok)
      }
      const timer = setTimeout(() => done(false), CONNECT_TIMEOUT_MS)
      s.on('connect', () => s.write('x'))
      s.on('data', () => done(true))
      s.on('error', () => done(false))
    })
  }
  const [file, ...args] = net.wrap(from, [process.execPath, '-e', PROBE_CLIENT, net.address(to), String(PORT)])
  if (file === undefined) throw new Error('empty argv')
  try {
    await execFile(file, args, { timeout: CONNECT_TIMEOUT_MS * 3 })
    return true
  } catch {
    return false
  }
}

/** Waits until `from` reaches node `to` (probes of CONNECT_TIMEOUT_MS, again and again): a busy machine may miss one. */
async function reachable(net: NetnsNetwork, from: number | 'host', to: number, what: string): Promise<void> {
  await until(what, () => reaches(net, from, to), { intervalMs: 100 })
}

async function leftovers(prefix: string): Promise<string[]> {
  const { stdout: namespaces } = await execFile('ip', ['netns', 'list'])
  const { stdout: links } = await execFile('ip', ['-o', 'link', 'show'])
  return [...namespaces.split('\n'), ...links.split('\n').map(l => l.replace(/^\d+:\s+/, ''))].filter(l =>
    l.startsWith(prefix)
  )
}

/** Mbit/s of a DOWNLOAD_BYTES download by `from` (a node, or the root namespace) from node `to`'s SENDER. */
async function downloadMbit(net: NetnsNetwork, from: number | 'host', to: number): Promise<number> {
  const argv = [process.execPath, '-e', RECEIVER, net.address(to), String(PORT)]
  const [file, ...args] = from === 'host' ? argv : net.wrap(from, argv)
  if (file === undefined) throw new Error('empty argv')
  const { stdout } = await execFile(file, args, { timeout: 15_000 })
  const { bytes, ms } = JSON.parse(stdout) as { bytes: number; ms: number }
  if (bytes < DOWNLOAD_BYTES / 2) throw new Error(`download of ${bytes} bytes: the first chunk held most of it`)
  return (bytes * 8) / (ms * 1000)
}

function stopChildren(): void {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL')
}

test.after.always(async () => {
  stopChildren()
  for (const net of networks) await net.destroy()
})

if (!caps.namespaces && process.env.CI) {
  // CI machines allow namespaces (root, iproute2): not having them there is a failure, not a skip.
  test('network namespaces: partition, heal, loss, destroy', t =>
    t.fail(`network namespaces unavailable: ${caps.reasons.join('; ')}`))
} else if (!caps.namespaces) {
  console.log(`netns test skipped: ${caps.reasons.join('; ')}`)
  test.skip('network namespaces: partition, heal, loss, destroy', () => {})
} else {
  test.serial('network namespaces: partition, heal, loss, destroy', async t => {
    const began = Date.now()
    t.log(`capabilities: ${JSON.stringify(caps)}`)
    const net = await createNetnsNetwork(3)
    networks.push(net)
    t.log(`${net.prefix}: ${net.subnet}, host ${net.hostAddress}, created in ${Date.now() - began} ms`)
    t.regex(net.prefix, /^rn[0-9a-f]{4}-$/)
    t.is(net.address(1), net.subnet.replace(/0\/24$/, '2'))

    const servers = [0, 1, 2].map(i => start(net.wrap(i, [process.execPath, '-e', SERVER, String(PORT)])))
    for (const [i, s] of servers.entries()) await waitFor(s, 'ready', `the echo server of node ${i} is ready`)

    await reachable(net, 'host', 1, 'root namespace -> node 1')
    await reachable(net, 'host', 2, 'root namespace -> node 2')
    await reachable(net, 0, 1, 'node 0 -> node 1')
    await reachable(net, 2, 0, 'node 2 -> node 0')

    // A connection from node 0 to node 1, established before the partition.
    const long = start(net.wrap(0, [process.execPath, '-e', LONG_CLIENT, net.address(1), String(PORT)]))
    await waitFor(long, 'connected', 'the long-lived connection is established')
    long.child.stdin?.write('one\n')
    await waitFor(long, 'one', 'echo before the partition')

    await net.partition([[0], [1, 2]])
    long.child.stdin?.write('two\n')
    // What the partition leaves reachable is awaited first; then one probe each way across it
    // (a packet the partition drops never arrives, whatever the wait).
    await reachable(net, 1, 2, 'same side: node 1 -> node 2')
    await reachable(net, 'host', 0, 'the root namespace reaches node 0')
    await reachable(net, 'host', 1, 'the root namespace reaches node 1')
    const [zeroToOne, oneToZero] = await Promise.all([reaches(net, 0, 1), reaches(net, 1, 0)])
    t.false(zeroToOne, 'partitioned: node 0 -> node 1')
    t.false(oneToZero, 'partitioned: node 1 -> node 0')
    t.false(long.text().includes('two'), 'no echo across the partition on the established connection')

    await net.heal()
    // TCP retransmits with backoff: after a long partition the next try may be many seconds away.
    await until('the established connection carries on after heal', () => long.text().includes('two'), {
      timeoutMs: 60_000,
      intervalMs: 20
    })
    await reachable(net, 0, 1, 'healed: node 0 -> node 1')
    await reachable(net, 1, 0, 'healed: node 1 -> node 0')

    if (caps.loss) {
      const result = await net.setLinkFaults({ lossPercent: 100, latencyMs: 50, between: [[0, 1]] })
      t.log(`setLinkFaults: ${JSON.stringify(result)}`)
      t.is(result.applied.filter(a => a.startsWith('loss')).length, 1)
      t.is(
        result.unsupported.some(u => u.startsWith('latency')),
        !caps.latency
      )
      await reachable(net, 0, 2, 'other link: node 0 -> node 2')
      await reachable(net, 1, 2, 'other link: node 1 -> node 2')
      t.false(await reaches(net, 0, 1), '100 % loss: node 0 -> node 1')
      await net.clearLinkFaults()
      await reachable(net, 0, 1, 'faults cleared: node 0 -> node 1')
    } else {
      t.log(`loss not supported here: ${caps.reasons.join('; ')}`)
    }

    if (caps.firewall) {
      // Node 2 behind a stateful filter: it dials out, the host reaches it, other nodes cannot.
      await net.refuseInbound([2])
      await reachable(net, 2, 0, 'behind the filter, node 2 dials out to node 0')
      await reachable(net, 'host', 2, 'the root namespace still reaches node 2')
      t.false(await reaches(net, 0, 2), 'the filter refuses node 0 -> node 2')
      t.true(((await net.refusedPackets(2)) ?? 0) > 0, 'the refused SYNs are counted')
      t.is(await net.refusedPackets(1), null)
    } else {
      t.log(`no firewall here: ${caps.reasons.join('; ')}`)
      await t.throwsAsync(net.refuseInbound([2]), { message: /refuseInbound/ })
    }

    // Leftovers of a crashed run (no owner file) go; this live network stays.
    const stale = `rn${randomBytes(2).toString('hex')}-`
    await execFile('ip', ['netns', 'add', `${stale}n0`])
    const cleaned = await cleanupStaleNetns()
    t.true(cleaned.removed.includes(stale), JSON.stringify(cleaned))
    t.true(cleaned.kept.includes(net.prefix), JSON.stringify(cleaned))
    t.deepEqual(await leftovers(stale), [])

    stopChildren()
    await net.destroy()
    await net.destroy()
    t.deepEqual(await leftovers(net.prefix), [])
    await t.throwsAsync(net.partition([[0]]), { message: /destroyed/ })
    t.log(`done in ${Date.now() - began} ms`)
  })

  test.serial("network namespaces: bandwidth caps each node's uplink to the other nodes", async t => {
    const net = await createNetnsNetwork(2)
    networks.push(net)
    if (!caps.bandwidth) {
      const result = await net.setLinkFaults({ bandwidthMbit: 2 })
      t.deepEqual(result.applied, [])
      t.regex(result.unsupported.join('; '), /^bandwidth 2 Mbit\/s: no bandwidth: /)
      return
    }
    const sender = start(net.wrap(1, [process.execPath, '-e', SENDER, String(PORT), String(DOWNLOAD_BYTES)]))
    await waitFor(sender, 'ready', 'the sender of node 1 is ready')
    await reachable(net, 0, 1, 'node 0 -> node 1')

    // With a delay and jitter where netem exists: they share the tree with the cap.
    const result = await net.setLinkFaults({ bandwidthMbit: 2, latencyMs: 20, jitterMs: 5 })
    t.log(`setLinkFaults: ${JSON.stringify(result)}`)
    t.true(result.applied.some(a => a.startsWith('bandwidth 2 Mbit/s')))
    t.is(
      result.applied.some(a => a.startsWith('jitter 5 ms')),
      caps.latency
    )
    t.is(
      result.unsupported.some(u => u.startsWith('jitter 5 ms: no latency')),
      !caps.latency
    )

    const capped = await downloadMbit(net, 0, 1)
    const host = await downloadMbit(net, 'host', 1)
    t.log(`node 1 -> node 0 capped at 2 Mbit/s: ${capped.toFixed(2)} Mbit/s; node 1 -> host: ${host.toFixed(1)} Mbit/s`)
    t.true(capped <= 2 * 1.3, `${capped} Mbit/s through a 2 Mbit/s uplink`)
    t.true(capped >= 0.5, `${capped} Mbit/s: the cap lets traffic through`)
    t.true(host > 20, `${host} Mbit/s: traffic to the host is outside the cap`)

    // The drop filters hang from clsact, beside the root qdisc: a partition still cuts the capped link.
    if (caps.partitionMethod === 'tc-drop') {
      await net.partition([[0], [1]])
      t.false(await reaches(net, 0, 1), 'partitioned under the cap: node 0 -> node 1')
      await net.heal()
    }

    await net.clearLinkFaults()
    const { stdout: qdiscs } = await execFile('tc', ['-n', net.namespace(1), 'qdisc', 'show', 'dev', 'eth0'])
    t.false(qdiscs.includes('htb'), qdiscs)
    const open = await downloadMbit(net, 0, 1)
    t.log(`node 1 -> node 0 after clearLinkFaults: ${open.toFixed(1)} Mbit/s`)
    t.true(open > 10 * 2, `${open} Mbit/s once the cap is cleared`)
    stopChildren()
    await net.destroy()
    t.deepEqual(await leftovers(net.prefix), [])
  })
}
