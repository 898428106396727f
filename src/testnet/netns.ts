/**
 * Linux network namespaces for local testnets, so partitions and packet loss act on real packets
 * (existing TCP connections included) instead of on the application's own fault switches.
 * Needs root and iproute2 (`ip`, `tc`); nothing else (no iptables, nft or sysctl changes in the
 * root namespace).
 *
 * ```ts
 * probeNetns(): Promise<NetnsCapabilities>        // never throws; creates and deletes a throwaway namespace
 *   { namespaces, loss, latency, partitionMethod: 'tc-drop' | 'blackhole-route' | 'none', reasons }
 * createNetnsNetwork(count, { subnet? }): Promise<NetnsNetwork>   // 1..253 nodes
 *   .prefix              'rn7a3f-': random per testnet; every namespace and root-namespace link starts with it
 *   .subnet              '10.211.X.0/24', a /24 of 10.211.0.0/16 not in use (ip addr, ip route, other testnets)
 *   .hostAddress         '10.211.X.254': the root namespace's address on the testnet's bridge
 *   .address(i)          '10.211.X.(i+1)': node i's address (its only interface besides lo is eth0)
 *   .namespace(i)        node i's namespace name, `${prefix}n${i}`
 *   .wrap(i, argv)       ['/usr/sbin/ip','netns','exec',namespace(i),...argv]: spawn argv inside node i's namespace
 *   .partition(groups)   nodes in different groups exchange no packets (silently dropped, both ways)
 *   .heal()              undoes partition()
 *   .setLinkFaults({ lossPercent?, latencyMs?, between? }) -> { applied, unsupported }
 *   .clearLinkFaults()
 *   .destroy()           deletes everything; idempotent
 * cleanupStaleNetns(prefixPattern = /^rn[0-9a-f]{4}-/): removes what crashed runs left behind
 * ```
 *
 * Layout. Each testnet has a "switch" namespace `${prefix}sw` holding a bridge `br0`; every node
 * namespace `${prefix}n${i}` has lo up and a veth `eth0` whose other end (`n${i}`) is a port of
 * that bridge. The root namespace joins through one veth, `${prefix}h` (address hostAddress/24,
 * other end `host` on the bridge), so the testnet tool and tests reach address(i) directly. The
 * bridge lives in its own namespace rather than the root one so the host's firewall cannot touch
 * node-to-node traffic: with br_netfilter loaded (net.bridge.bridge-nf-call-iptables = 1, as here)
 * bridged frames go through iptables FORWARD, where e.g. Docker's DROP policy would eat them. The
 * switch namespace starts without rules, and bridge-nf-call-* is also set to 0 in it (best effort,
 * those sysctls are per namespace). IPv6 address generation is off on the veths: IPv4 only.
 *
 * Faults act on each node's eth0 egress, so only node-to-node traffic is affected; traffic between
 * a node and hostAddress (HTTP from the testnet tool) never is.
 * - partition(groups): a node drops every IPv4 packet it sends to a node of another group. Both
 *   ends do this, so nothing crosses either way, for new and for established connections alike;
 *   after heal() TCP's retransmissions carry on with the connections that have not timed out.
 *   Groups: arrays of node indices; nodes listed in no group form one more group together (so
 *   partition([[0]]) cuts node 0 off from everyone else). Each call replaces the previous one.
 *   Mechanism: a classic-BPF tc filter in direct-action mode on a clsact qdisc (returns
 *   TC_ACT_SHOT). Where cls_bpf is missing, blackhole routes in each node's namespace instead:
 *   packets are dropped too, but the sender's socket sees EINVAL at once (connect fails
 *   immediately; established connections retransmit into the void until healed).
 * - setLinkFaults({ lossPercent, latencyMs, between }): on all node-to-node links, or only the
 *   given pairs (both directions of each). lossPercent applies to each direction independently
 *   (a round trip loses 1-(1-p)^2): the same BPF filter, drawing the kernel's per-packet random
 *   number (SKF_AD_RANDOM). latencyMs is one way, added to each direction (RTT grows 2x): an htb
 *   tree on eth0 whose class for the chosen destinations (u32 dst match) has a netem leaf; only
 *   where the kernel has netem, otherwise reported in `unsupported`. Each call replaces the
 *   previous faults; partition and link faults are independent (partition is checked first).
 *
 * Cleanup. Every testnet (and every probe) first writes an owner file `${prefix}owner.json`
 * (pid and process start time) and a subnet lock into /run/registry-node-netns (or
 * $TMPDIR/registry-node-netns); destroy() removes them last. cleanupStaleNetns() removes the
 * namespaces and root-namespace links of every prefix matching the pattern whose owner process is
 * gone (or that has no owner file), and their files; live testnets, including this process's, are
 * kept. It does not kill processes still running inside stale namespaces (their eth0 goes away
 * with the switch namespace); it reports their pids. Callers should stop their node processes
 * before destroy() for the same reason.
 */
import { execFile as execFileCallback } from 'node:child_process'
import { randomBytes, randomInt } from 'node:crypto'
import { existsSync } from 'node:fs'
import { mkdir, readFile, readdir, unlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'

const execFile = promisify(execFileCallback)

export interface NetnsCapabilities {
  /** Namespaces, veth pairs and a bridge can be created: createNetnsNetwork() and partition() work. */
  namespaces: boolean
  /** Probabilistic (and 100 %) packet loss via tc: setLinkFaults({ lossPercent }). */
  loss: boolean
  /** Added delay (needs the netem qdisc, and htb): setLinkFaults({ latencyMs }). */
  latency: boolean
  /** How partition() drops packets: tc filters where loss works, else blackhole routes. */
  partitionMethod: 'tc-drop' | 'blackhole-route' | 'none'
  /** Why something above is false, from the kernel's or the tool's own error messages. */
  reasons: string[]
}

export interface LinkFaults {
  /** 0..100, per direction. */
  lossPercent?: number
  /** One-way delay in milliseconds, per direction. */
  latencyMs?: number
  /** Node pairs the faults apply to (both directions); all node pairs when omitted. */
  between?: [number, number][]
}

export interface NetnsNetwork {
  readonly prefix: string
  readonly count: number
  readonly subnet: string
  readonly hostAddress: string
  readonly capabilities: NetnsCapabilities
  address(i: number): string
  namespace(i: number): string
  wrap(i: number, argv: string[]): string[]
  partition(groups: number[][]): Promise<void>
  heal(): Promise<void>
  setLinkFaults(faults: LinkFaults): Promise<{ applied: string[]; unsupported: string[] }>
  clearLinkFaults(): Promise<void>
  destroy(): Promise<void>
}

export interface StaleCleanup {
  /** Prefixes whose namespaces, links and files were removed. */
  removed: string[]
  /** Prefixes left alone because their owner process is alive. */
  kept: string[]
  /** Processes still running inside the removed namespaces (not killed). */
  orphanPids: number[]
}

export class NetnsError extends Error {
  override name = 'NetnsError'
}

export const DEFAULT_PREFIX_PATTERN = /^rn[0-9a-f]{4}-/
const MAX_NODES = 253
const BASE_RANGE = '10.211'
const COMMAND_TIMEOUT_MS = 15_000
const PARALLEL = 8
const PARTITION_PRIO = '10'
const LOSS_PRIO = '20'

// ---- commands ----

interface CommandResult {
  code: number
  stdout: string
  stderr: string
}

const binaries = new Map<string, string>()
function bin(name: 'ip' | 'tc' | 'sysctl'): string {
  let found = binaries.get(name)
  if (found === undefined) {
    found = ['/usr/sbin', '/sbin', '/usr/bin', '/bin'].map(d => join(d, name)).find(p => existsSync(p)) ?? name
    binaries.set(name, found)
  }
  return found
}

async function run(argv: readonly string[]): Promise<CommandResult> {
  const [file, ...args] = argv
  if (file === undefined) throw new NetnsError('empty command')
  try {
    const { stdout, stderr } = await execFile(file, args, {
      timeout: COMMAND_TIMEOUT_MS,
      encoding: 'utf8',
      maxBuffer: 16 << 20
    })
    return { code: 0, stdout, stderr }
  } catch (err) {
    const e = err as { code?: unknown; stdout?: unknown; stderr?: unknown; message?: unknown }
    const stderr = typeof e.stderr === 'string' && e.stderr.trim() !== '' ? e.stderr : String(e.message ?? err)
    return {
      code: typeof e.code === 'number' ? e.code : -1,
      stdout: typeof e.stdout === 'string' ? e.stdout : '',
      stderr
    }
  }
}

function firstLine(text: string): string {
  return (
    text
      .split('\n')
      .map(l => l.trim())
      .find(l => l !== '') ?? ''
  )
}

async function must(argv: readonly string[]): Promise<string> {
  const r = await run(argv)
  if (r.code !== 0) throw new NetnsError(`${argv.join(' ')}: ${firstLine(r.stderr) || `exit ${r.code}`}`)
  return r.stdout
}

async function mapLimit<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0
  let failure: unknown = null
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const item = items[next++] as T
      try {
        await fn(item)
      } catch (err) {
        failure ??= err
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker))
  if (failure !== null) throw failure
}

async function listNamespaces(): Promise<string[]> {
  const r = await run([bin('ip'), 'netns', 'list'])
  if (r.code !== 0) return []
  return r.stdout
    .split('\n')
    .map(l => l.trim().split(/\s+/)[0] ?? '')
    .filter(n => n !== '')
}

async function listRootLinks(): Promise<string[]> {
  const r = await run([bin('ip'), '-o', 'link', 'show'])
  if (r.code !== 0) return []
  const names: string[] = []
  for (const line of r.stdout.split('\n')) {
    const m = /^\d+:\s+([^:@\s]+)/.exec(line)
    if (m?.[1] !== undefined) names.push(m[1])
  }
  return names
}

// ---- IPv4 and classic BPF ----

function ipToInt(ip: string): number {
  const parts = ip.split('.').map(Number)
  if (parts.length !== 4 || parts.some(p => !Number.isInteger(p) || p < 0 || p > 255)) {
    throw new NetnsError(`not an IPv4 address: ${ip}`)
  }
  return (((parts[0] as number) * 256 + (parts[1] as number)) * 256 + (parts[2] as number)) * 256 + (parts[3] as number)
}

const BPF_LDH_ABS = 0x28
const BPF_LD_W_ABS = 0x20
const BPF_JEQ_K = 0x15
const BPF_JGE_K = 0x35
const BPF_RET_K = 0x06
const SKF_AD_RANDOM = 0xfffff000 + 56 // SKF_AD_OFF + SKF_AD_RANDOM: a fresh random u32 per packet
const TC_ACT_SHOT = 2
const TC_ACT_UNSPEC = 0xffffffff // -1: not mine, go on with the next filter

/**
 * tc's `bpf bytecode` text for a classic BPF program run in direct-action mode on egress (the frame
 * starts at the Ethernet header): IPv4 packets to one of `destinations` are dropped, every one when
 * `dropBelow` is null, else when a random u32 is below `dropBelow`; everything else passes on.
 */
function dropProgram(destinations: readonly number[], dropBelow: number | null): string {
  const n = destinations.length
  if (n < 1 || n > 252) throw new NetnsError(`drop program for ${n} destinations`)
  const ins: [number, number, number, number][] = [
    [BPF_LDH_ABS, 0, 0, 12], // ethertype
    [BPF_JEQ_K, 0, n + 1, 0x0800], // not IPv4: pass (index n + 3)
    [BPF_LD_W_ABS, 0, 0, 30] // IPv4 destination
  ]
  destinations.forEach((d, k) => {
    ins.push([BPF_JEQ_K, n - k, 0, d])
  }) // match: index n + 4
  ins.push([BPF_RET_K, 0, 0, TC_ACT_UNSPEC])
  if (dropBelow === null) {
    ins.push([BPF_RET_K, 0, 0, TC_ACT_SHOT])
  } else {
    ins.push([BPF_LD_W_ABS, 0, 0, SKF_AD_RANDOM], [BPF_JGE_K, 1, 0, dropBelow], [BPF_RET_K, 0, 0, TC_ACT_SHOT])
    ins.push([BPF_RET_K, 0, 0, TC_ACT_UNSPEC])
  }
  return `${ins.length},${ins.map(i => i.join(' ')).join(',')}`
}

/** Random threshold for lossPercent: null = drop all, 0 = drop none. */
function lossThreshold(lossPercent: number): number | null {
  if (lossPercent >= 100) return null
  return Math.round((lossPercent / 100) * 2 ** 32)
}

// ---- owner files and subnet locks ----

interface OwnerRecord {
  pid: number
  start: string | null
  created: string
  subnet?: string
}

let stateDirPromise: Promise<string> | undefined
function stateDir(): Promise<string> {
  stateDirPromise ??= (async () => {
    for (const dir of ['/run/registry-node-netns', join(tmpdir(), 'registry-node-netns')]) {
      try {
        await mkdir(dir, { recursive: true, mode: 0o700 })
        return dir
      } catch {
        // next candidate
      }
    }
    throw new NetnsError('no writable directory for testnet owner files')
  })()
  return stateDirPromise
}

const ownerFile = (dir: string, prefix: string): string => join(dir, `${prefix}owner.json`)
const subnetLockFile = (dir: string, base: string): string => join(dir, `subnet-${base}.lock`)

async function processStart(pid: number): Promise<string | null> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8')
    // Field 22 (starttime); fields 3.. follow the parenthesised command name.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null
  } catch {
    return null
  }
}

async function ownerAlive(dir: string, prefix: string): Promise<boolean> {
  let record: OwnerRecord
  try {
    record = JSON.parse(await readFile(ownerFile(dir, prefix), 'utf8')) as OwnerRecord
  } catch {
    return false
  }
  if (!Number.isInteger(record.pid) || record.pid <= 0) return false
  const start = await processStart(record.pid)
  if (start === null) return false
  return record.start === null || record.start === start
}

const isExists = (err: unknown): boolean => (err as { code?: unknown }).code === 'EEXIST'

async function removeFile(path: string): Promise<void> {
  await unlink(path).catch(() => undefined)
}

/** A fresh prefix, reserved by its owner file before anything carries its name. */
async function reservePrefix(): Promise<{ prefix: string; dir: string }> {
  const dir = await stateDir()
  const start = await processStart(process.pid)
  for (let attempt = 0; attempt < 50; attempt++) {
    const prefix = `rn${randomBytes(2).toString('hex')}-`
    const names = [...(await listNamespaces()), ...(await listRootLinks())]
    if (names.some(n => n.startsWith(prefix))) continue
    const record: OwnerRecord = { pid: process.pid, start, created: new Date().toISOString() }
    try {
      await writeFile(ownerFile(dir, prefix), JSON.stringify(record), { flag: 'wx' })
      return { prefix, dir }
    } catch (err) {
      if (isExists(err)) continue
      throw err
    }
  }
  throw new NetnsError('could not find a free testnet prefix')
}

/** IPv4 ranges [first, last] already routed or assigned here, as specific as /16 or more. */
async function rangesInUse(): Promise<[number, number][]> {
  const ranges: [number, number][] = []
  const add = (cidr: string): void => {
    const [ip, lenText] = cidr.split('/')
    const len = lenText === undefined ? 32 : Number(lenText)
    if (ip === undefined || !Number.isInteger(len) || len < 16 || len > 32) return
    let value: number
    try {
      value = ipToInt(ip)
    } catch {
      return
    }
    const size = 2 ** (32 - len)
    const first = Math.floor(value / size) * size
    ranges.push([first, first + size - 1])
  }
  const addrs = await run([bin('ip'), '-o', '-4', 'addr', 'show'])
  for (const m of addrs.stdout.matchAll(/\binet (\d+\.\d+\.\d+\.\d+\/\d+)/g)) if (m[1] !== undefined) add(m[1])
  const routes = await run([bin('ip'), '-4', 'route', 'show', 'table', 'all'])
  for (const line of routes.stdout.split('\n')) {
    const token = line
      .trim()
      .split(/\s+/)
      .slice(0, 2)
      .find(t => /^\d+\.\d+\.\d+\.\d+(\/\d+)?$/.test(t))
    if (token !== undefined) add(token)
  }
  return ranges
}

/** Reserves a /24 ('a.b.c') by its lock file: the one asked for, or a free one of 10.211.0.0/16. */
async function reserveSubnet(dir: string, prefix: string, wanted: string | undefined): Promise<string> {
  const used = await rangesInUse()
  const free = (base: string): boolean => {
    const first = ipToInt(`${base}.0`)
    return !used.some(([a, b]) => a <= first + 255 && b >= first)
  }
  const take = async (base: string): Promise<boolean> => {
    try {
      await writeFile(subnetLockFile(dir, base), prefix, { flag: 'wx' })
      return true
    } catch (err) {
      if (isExists(err)) return false
      throw err
    }
  }
  if (wanted !== undefined) {
    const m = /^(\d+\.\d+\.\d+)\.0\/24$/.exec(wanted.trim())
    if (m?.[1] === undefined)
      throw new NetnsError(`subnet ${JSON.stringify(wanted)}: expected a /24 such as 10.211.7.0/24`)
    const base = m[1]
    ipToInt(`${base}.0`)
    if (!free(base)) throw new NetnsError(`subnet ${wanted} overlaps an address or route already in use`)
    if (!(await take(base))) throw new NetnsError(`subnet ${wanted} is reserved by another testnet`)
    return base
  }
  const offset = randomInt(256)
  for (let k = 0; k < 256; k++) {
    const base = `${BASE_RANGE}.${(offset + k) % 256}`
    if (free(base) && (await take(base))) return base
  }
  throw new NetnsError(`no free /24 in ${BASE_RANGE}.0.0/16; pass options.subnet`)
}

async function releaseFiles(dir: string, prefix: string): Promise<void> {
  const files = await readdir(dir).catch(() => [] as string[])
  for (const f of files) {
    if (!f.startsWith('subnet-') || !f.endsWith('.lock')) continue
    const holder = await readFile(join(dir, f), 'utf8').catch(() => '')
    if (holder === prefix) await removeFile(join(dir, f))
  }
  await removeFile(ownerFile(dir, prefix))
}

// ---- teardown ----

const ignorable = (stderr: string): boolean =>
  /cannot find device|no such file|does not exist|not found|cannot open network namespace/i.test(stderr)

/** Deletes every namespace and root-namespace link named with `prefix`; returns pids found inside. */
async function teardownPrefix(prefix: string): Promise<{ pids: number[]; errors: string[] }> {
  const errors: string[] = []
  const pids: number[] = []
  const links = (await listRootLinks()).filter(n => n.startsWith(prefix))
  // Deleting a veth deletes its peer; the root side first, so even a namespace kept alive by a
  // leftover process loses its way out.
  for (const link of links) {
    const r = await run([bin('ip'), 'link', 'del', 'dev', link])
    if (r.code !== 0 && !ignorable(r.stderr)) errors.push(`ip link del ${link}: ${firstLine(r.stderr)}`)
  }
  const namespaces = (await listNamespaces()).filter(n => n.startsWith(prefix))
  await mapLimit(namespaces, PARALLEL, async ns => {
    const inside = await run([bin('ip'), 'netns', 'pids', ns])
    for (const p of inside.stdout.split(/\s+/)) if (/^\d+$/.test(p)) pids.push(Number(p))
    const r = await run([bin('ip'), 'netns', 'del', ns])
    if (r.code !== 0 && !ignorable(r.stderr)) errors.push(`ip netns del ${ns}: ${firstLine(r.stderr)}`)
  })
  return { pids, errors }
}

// ---- probe ----

let capabilitiesPromise: Promise<NetnsCapabilities> | undefined

/** What this machine supports. Creates and deletes a throwaway namespace; never throws. */
export async function probeNetns(): Promise<NetnsCapabilities> {
  const reasons: string[] = []
  const caps: NetnsCapabilities = { namespaces: false, loss: false, latency: false, partitionMethod: 'none', reasons }
  try {
    if (process.platform !== 'linux') {
      reasons.push(`network namespaces need Linux (this is ${process.platform})`)
      return caps
    }
    if (process.getuid?.() !== 0) {
      reasons.push('network namespaces need root (CAP_SYS_ADMIN and CAP_NET_ADMIN)')
      return caps
    }
    const version = await run([bin('ip'), '-V'])
    if (version.code !== 0) {
      reasons.push(`iproute2's ip is not usable: ${firstLine(version.stderr)}`)
      return caps
    }
    const { prefix, dir } = await reservePrefix()
    const ns = `${prefix}probe`
    try {
      const added = await run([bin('ip'), 'netns', 'add', ns])
      if (added.code !== 0) {
        reasons.push(`ip netns add: ${firstLine(added.stderr)}`)
        return caps
      }
      const ip = (...args: string[]): Promise<CommandResult> => run([bin('ip'), '-n', ns, ...args])
      const tc = (...args: string[]): Promise<CommandResult> => run([bin('tc'), '-n', ns, ...args])
      for (const [what, args] of [
        ['veth', ['link', 'add', 'name', 'pa', 'type', 'veth', 'peer', 'name', 'pb']],
        ['bridge', ['link', 'add', 'name', 'br0', 'type', 'bridge']],
        ['bridge port', ['link', 'set', 'dev', 'pa', 'master', 'br0']],
        ['link up', ['link', 'set', 'dev', 'pa', 'up']]
      ] as const) {
        const r = await ip(...args)
        if (r.code !== 0) {
          reasons.push(`${what}: ${firstLine(r.stderr)}`)
          return caps
        }
      }
      caps.namespaces = true
      caps.partitionMethod = 'blackhole-route'
      const tcVersion = await run([bin('tc'), '-V'])
      if (tcVersion.code !== 0) {
        reasons.push(`no packet loss, no latency: iproute2's tc is not usable (${firstLine(tcVersion.stderr)})`)
        return caps
      }
      const clsact = await tc('qdisc', 'add', 'dev', 'pa', 'clsact')
      const filter =
        clsact.code === 0
          ? await tc(
              'filter',
              'add',
              'dev',
              'pa',
              'egress',
              'prio',
              LOSS_PRIO,
              'handle',
              '1',
              'bpf',
              'da',
              'bytecode',
              dropProgram([ipToInt('10.211.255.1')], lossThreshold(50))
            )
          : clsact
      if (filter.code === 0) {
        caps.loss = true
        caps.partitionMethod = 'tc-drop'
      } else {
        reasons.push(
          `no packet loss: tc clsact + cls_bpf direct-action failed (${firstLine(filter.stderr)}); ` +
            'partition() falls back to blackhole routes'
        )
      }
      const netem = await tc('qdisc', 'add', 'dev', 'pb', 'root', 'netem', 'delay', '1ms')
      if (netem.code !== 0) reasons.push(`no latency: netem qdisc failed (${firstLine(netem.stderr)})`)
      else await tc('qdisc', 'del', 'dev', 'pb', 'root')
      const htb = await tc('qdisc', 'add', 'dev', 'pb', 'root', 'handle', '1:', 'htb', 'default', '1')
      if (htb.code !== 0)
        reasons.push(`no latency: htb qdisc (to delay chosen links only) failed (${firstLine(htb.stderr)})`)
      caps.latency = netem.code === 0 && htb.code === 0
      return caps
    } finally {
      await run([bin('ip'), 'netns', 'del', ns])
      await releaseFiles(dir, prefix)
    }
  } catch (err) {
    reasons.push(`probe failed: ${err instanceof Error ? err.message : String(err)}`)
    return caps
  }
}

function capabilities(): Promise<NetnsCapabilities> {
  capabilitiesPromise ??= probeNetns()
  return capabilitiesPromise
}

// ---- the network ----

class Network implements NetnsNetwork {
  readonly subnet: string
  readonly hostAddress: string
  private readonly switchNs: string
  private readonly routes = new Map<number, string[]>() // blackhole routes per node (fallback partition)
  private lossOn = false
  private latencyOn = false
  private destroyed = false

  constructor(
    readonly prefix: string,
    readonly count: number,
    private readonly base: string,
    private readonly dir: string,
    readonly capabilities: NetnsCapabilities
  ) {
    this.subnet = `${base}.0/24`
    this.hostAddress = `${base}.254`
    this.switchNs = `${prefix}sw`
  }

  private index(i: number): number {
    if (!Number.isInteger(i) || i < 0 || i >= this.count)
      throw new RangeError(`node ${i}: expected 0..${this.count - 1}`)
    return i
  }

  address(i: number): string {
    return `${this.base}.${this.index(i) + 1}`
  }

  namespace(i: number): string {
    return `${this.prefix}n${this.index(i)}`
  }

  wrap(i: number, argv: string[]): string[] {
    return [bin('ip'), 'netns', 'exec', this.namespace(i), ...argv]
  }

  private addressInt(i: number): number {
    return ipToInt(this.address(i))
  }

  private ip(i: number, ...args: string[]): Promise<string> {
    return must([bin('ip'), '-n', this.namespace(i), ...args])
  }

  private tc(i: number, ...args: string[]): Promise<string> {
    return must([bin('tc'), '-n', this.namespace(i), ...args])
  }

  private async tcQuiet(i: number, ...args: string[]): Promise<void> {
    await run([bin('tc'), '-n', this.namespace(i), ...args])
  }

  /**
   * Installs (or swaps) node i's egress drop filter at `prio`: packets to the nodes `peers` are dropped,
   * all of them when `dropBelow` is null, else the random share below it (see dropProgram). Partition
   * and loss use separate prios so that each can be cleared without touching the other.
   */
  private async replaceDropFilter(
    i: number,
    prio: string,
    peers: readonly number[],
    dropBelow: number | null
  ): Promise<void> {
    const program = dropProgram(
      peers.map(j => this.addressInt(j)),
      dropBelow
    )
    await this.tc(
      i,
      'filter',
      'replace',
      'dev',
      'eth0',
      'egress',
      'prio',
      prio,
      'handle',
      '1',
      'bpf',
      'da',
      'bytecode',
      program
    )
  }

  private nodes(): number[] {
    return Array.from({ length: this.count }, (_, i) => i)
  }

  private alive(): void {
    if (this.destroyed) throw new NetnsError(`testnet ${this.prefix} was destroyed`)
  }

  /** Builds the switch, the host link and every node; throws on the first failure (caller tears down). */
  async build(): Promise<void> {
    const ip = bin('ip')
    const sw = this.switchNs
    const host = `${this.prefix}h`
    await must([ip, 'netns', 'add', sw])
    await must([ip, '-n', sw, 'link', 'add', 'name', 'br0', 'type', 'bridge', 'stp_state', '0', 'forward_delay', '0'])
    await must([ip, '-n', sw, 'link', 'set', 'dev', 'br0', 'addrgenmode', 'none'])
    await must([ip, '-n', sw, 'link', 'set', 'dev', 'br0', 'up'])
    const sysctl = bin('sysctl')
    if (existsSync('/proc/sys/net/bridge') && existsSync(sysctl)) {
      await run([
        ip,
        'netns',
        'exec',
        sw,
        sysctl,
        '-q',
        '-w',
        'net.bridge.bridge-nf-call-iptables=0',
        'net.bridge.bridge-nf-call-ip6tables=0',
        'net.bridge.bridge-nf-call-arptables=0'
      ])
    }
    await must([ip, 'link', 'add', 'name', host, 'type', 'veth', 'peer', 'name', 'host', 'netns', sw])
    await must([ip, '-n', sw, 'link', 'set', 'dev', 'host', 'addrgenmode', 'none'])
    await must([ip, '-n', sw, 'link', 'set', 'dev', 'host', 'master', 'br0', 'up'])
    await must([ip, 'link', 'set', 'dev', host, 'addrgenmode', 'none'])
    await must([ip, 'addr', 'add', `${this.hostAddress}/24`, 'dev', host])
    await must([ip, 'link', 'set', 'dev', host, 'up'])
    await mapLimit(this.nodes(), PARALLEL, async i => {
      const ns = this.namespace(i)
      await must([ip, 'netns', 'add', ns])
      await must([ip, '-n', sw, 'link', 'add', 'name', `n${i}`, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns])
      await must([ip, '-n', sw, 'link', 'set', 'dev', `n${i}`, 'addrgenmode', 'none'])
      await must([ip, '-n', sw, 'link', 'set', 'dev', `n${i}`, 'master', 'br0', 'up'])
      await this.ip(i, 'link', 'set', 'dev', 'lo', 'up')
      await this.ip(i, 'link', 'set', 'dev', 'eth0', 'addrgenmode', 'none')
      await this.ip(i, 'addr', 'add', `${this.address(i)}/24`, 'dev', 'eth0')
      await this.ip(i, 'link', 'set', 'dev', 'eth0', 'up')
      if (this.capabilities.loss) await this.tc(i, 'qdisc', 'add', 'dev', 'eth0', 'clsact')
    })
  }

  async partition(groups: number[][]): Promise<void> {
    this.alive()
    const groupOf = new Array<number>(this.count).fill(groups.length)
    const seen = new Set<number>()
    groups.forEach((group, g) => {
      for (const i of group) {
        this.index(i)
        if (seen.has(i)) throw new NetnsError(`partition: node ${i} is in more than one group`)
        seen.add(i)
        groupOf[i] = g
      }
    })
    const blocked = (i: number): number[] => this.nodes().filter(j => groupOf[j] !== groupOf[i])
    await this.applyPartition(blocked)
  }

  async heal(): Promise<void> {
    this.alive()
    await this.applyPartition(() => [])
  }

  private async applyPartition(blocked: (i: number) => number[]): Promise<void> {
    if (this.capabilities.partitionMethod === 'tc-drop') {
      await mapLimit(this.nodes(), PARALLEL, async i => {
        const peers = blocked(i)
        if (peers.length === 0) {
          await this.tcQuiet(i, 'filter', 'del', 'dev', 'eth0', 'egress', 'prio', PARTITION_PRIO)
        } else {
          await this.replaceDropFilter(i, PARTITION_PRIO, peers, null)
        }
      })
      return
    }
    await mapLimit(this.nodes(), PARALLEL, async i => {
      const wanted = blocked(i).map(j => `${this.address(j)}/32`)
      const current = this.routes.get(i) ?? []
      for (const dst of current.filter(d => !wanted.includes(d))) {
        await run([bin('ip'), '-n', this.namespace(i), 'route', 'del', 'blackhole', dst])
      }
      for (const dst of wanted) await this.ip(i, 'route', 'replace', 'blackhole', dst)
      this.routes.set(i, wanted)
    })
  }

  async setLinkFaults(faults: LinkFaults): Promise<{ applied: string[]; unsupported: string[] }> {
    this.alive()
    const loss = faults.lossPercent ?? 0
    const latency = faults.latencyMs ?? 0
    if (!Number.isFinite(loss) || loss < 0 || loss > 100) throw new RangeError(`lossPercent ${loss}: expected 0..100`)
    if (!Number.isFinite(latency) || latency < 0) throw new RangeError(`latencyMs ${latency}: expected >= 0`)
    const targets = new Map<number, Set<number>>(this.nodes().map(i => [i, new Set<number>()]))
    if (faults.between === undefined) {
      for (const i of this.nodes()) for (const j of this.nodes()) if (i !== j) targets.get(i)?.add(j)
    } else {
      for (const [a, b] of faults.between) {
        this.index(a)
        this.index(b)
        if (a === b) throw new NetnsError(`link ${a}<->${b}: a node has no link to itself`)
        targets.get(a)?.add(b)
        targets.get(b)?.add(a)
      }
    }
    const where =
      faults.between === undefined
        ? 'all node-to-node links'
        : `links ${faults.between.map(([a, b]) => `${a}<->${b}`).join(', ')}`
    await this.clearLinkFaults()
    const applied: string[] = []
    const unsupported: string[] = []
    const threshold = lossThreshold(loss)
    if (loss > 0 && threshold !== 0) {
      if (!this.capabilities.loss) {
        unsupported.push(`loss ${loss}%: ${this.reason(/^no packet loss/) ?? 'not supported here'}`)
      } else {
        this.lossOn = true
        await mapLimit(this.nodes(), PARALLEL, async i => {
          const dsts = [...(targets.get(i) ?? [])]
          if (dsts.length === 0) return
          await this.replaceDropFilter(i, LOSS_PRIO, dsts, threshold)
        })
        applied.push(`loss ${loss}% in each direction on ${where}`)
      }
    }
    if (latency > 0) {
      if (!this.capabilities.latency) {
        unsupported.push(`latency ${latency} ms: ${this.reason(/no latency/) ?? 'not supported here'}`)
      } else {
        this.latencyOn = true
        await mapLimit(this.nodes(), PARALLEL, async i => {
          const dsts = [...(targets.get(i) ?? [])]
          if (dsts.length === 0) return
          // 1:1 (default) passes straight on, 1:2 holds the netem delay; u32 picks 1:2 by destination.
          // Explicit bursts: at 10gbit tc would compute 0 bytes.
          await this.tc(i, 'qdisc', 'replace', 'dev', 'eth0', 'root', 'handle', '1:', 'htb', 'default', '1')
          for (const cls of ['1:1', '1:2']) {
            await this.tc(
              i,
              'class',
              'add',
              'dev',
              'eth0',
              'parent',
              '1:',
              'classid',
              cls,
              'htb',
              'rate',
              '10gbit',
              'burst',
              '1m',
              'cburst',
              '1m',
              'quantum',
              '60000'
            )
          }
          await this.tc(
            i,
            'qdisc',
            'add',
            'dev',
            'eth0',
            'parent',
            '1:2',
            'handle',
            '2:',
            'netem',
            'delay',
            `${latency}ms`,
            'limit',
            '100000'
          )
          for (const j of dsts) {
            await this.tc(
              i,
              'filter',
              'add',
              'dev',
              'eth0',
              'parent',
              '1:',
              'protocol',
              'ip',
              'prio',
              '1',
              'u32',
              'match',
              'ip',
              'dst',
              `${this.address(j)}/32`,
              'flowid',
              '1:2'
            )
          }
        })
        applied.push(`latency ${latency} ms one way, in each direction, on ${where}`)
      }
    }
    return { applied, unsupported }
  }

  private reason(pattern: RegExp): string | undefined {
    return this.capabilities.reasons.find(r => pattern.test(r))
  }

  async clearLinkFaults(): Promise<void> {
    if (this.destroyed) return
    const loss = this.lossOn
    const latency = this.latencyOn
    await mapLimit(this.nodes(), PARALLEL, async i => {
      if (loss) await this.tcQuiet(i, 'filter', 'del', 'dev', 'eth0', 'egress', 'prio', LOSS_PRIO)
      if (latency) await this.tcQuiet(i, 'qdisc', 'del', 'dev', 'eth0', 'root')
    })
    this.lossOn = false
    this.latencyOn = false
  }

  async destroy(): Promise<void> {
    this.destroyed = true
    const { errors } = await teardownPrefix(this.prefix)
    const left = [...(await listNamespaces()), ...(await listRootLinks())].filter(n => n.startsWith(this.prefix))
    if (left.length > 0) {
      const why = errors.length > 0 ? ` (${errors.join('; ')})` : ''
      throw new NetnsError(`destroy ${this.prefix}: still present: ${left.join(', ')}${why}`)
    }
    await releaseFiles(this.dir, this.prefix)
  }
}

/**
 * Creates `count` node namespaces on a fresh /24 (options.subnet, e.g. '10.211.7.0/24', or a free
 * one of 10.211.0.0/16). On failure everything created so far is removed before the error is thrown.
 */
export async function createNetnsNetwork(count: number, options: { subnet?: string } = {}): Promise<NetnsNetwork> {
  if (!Number.isInteger(count) || count < 1 || count > MAX_NODES) {
    throw new RangeError(`node count ${count}: expected 1..${MAX_NODES}`)
  }
  const caps = await capabilities()
  if (!caps.namespaces) throw new NetnsError(`network namespaces unavailable: ${caps.reasons.join('; ')}`)
  const { prefix, dir } = await reservePrefix()
  try {
    const base = await reserveSubnet(dir, prefix, options.subnet)
    const network = new Network(prefix, count, base, dir, caps)
    await network.build()
    return network
  } catch (err) {
    await teardownPrefix(prefix).catch(() => undefined)
    await releaseFiles(dir, prefix)
    throw err
  }
}

/**
 * Removes the namespaces, root-namespace links and files of every testnet prefix matching
 * `prefixPattern` (anchored at the start of the name; its match is the prefix) whose owner process
 * has exited, or that has no owner file. Testnets whose owner is alive are kept.
 */
export async function cleanupStaleNetns(prefixPattern: RegExp = DEFAULT_PREFIX_PATTERN): Promise<StaleCleanup> {
  const pattern = new RegExp(prefixPattern.source, prefixPattern.flags.replace(/[gy]/g, ''))
  const prefixOf = (name: string): string | undefined => {
    const m = pattern.exec(name)
    return m !== null && m.index === 0 && m[0] !== '' ? m[0] : undefined
  }
  const dir = await stateDir()
  const prefixes = new Set<string>()
  for (const name of [...(await listNamespaces()), ...(await listRootLinks())]) {
    const p = prefixOf(name)
    if (p !== undefined) prefixes.add(p)
  }
  const files = await readdir(dir).catch(() => [] as string[])
  for (const f of files) {
    if (f.endsWith('owner.json')) {
      const p = prefixOf(f.slice(0, -'owner.json'.length))
      if (p !== undefined && `${p}owner.json` === f) prefixes.add(p)
    }
  }
  const result: StaleCleanup = { removed: [], kept: [], orphanPids: [] }
  for (const prefix of [...prefixes].sort()) {
    if (await ownerAlive(dir, prefix)) {
      result.kept.push(prefix)
      continue
    }
    const { pids } = await teardownPrefix(prefix)
    await releaseFiles(dir, prefix)
    result.removed.push(prefix)
    result.orphanPids.push(...pids)
  }
  // Subnet locks held by prefixes matching the pattern that have no live owner.
  for (const f of files) {
    if (!f.startsWith('subnet-') || !f.endsWith('.lock')) continue
    const holder = await readFile(join(dir, f), 'utf8').catch(() => null)
    if (holder === null) continue
    const p = prefixOf(holder)
    if (p !== undefined && p === holder && !(await ownerAlive(dir, p))) await removeFile(join(dir, f))
  }
  return result
}
