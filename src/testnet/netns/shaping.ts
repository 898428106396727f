/**
 * Traffic shaping on one node's eth0 egress, by namespace name: the BPF drop filters (partition and
 * loss), the htb tree that limits the uplink and whose netem leaf delays chosen destinations, and the
 * blackhole routes that stand in for the drop filter where the kernel has no cls_bpf.
 */
import { dropProgram } from './drop-program.js'
import { bin, must, run } from './iproute.js'

/** Partition and loss filters sit at separate prios so that each can be cleared without touching the other. */
export const PARTITION_PRIO = '10'
export const LOSS_PRIO = '20'

function tc(namespace: string, ...args: string[]): Promise<string> {
  return must([bin('tc'), '-n', namespace, ...args])
}

/** For removals: what is already gone is fine. */
async function tcQuiet(namespace: string, ...args: string[]): Promise<void> {
  await run([bin('tc'), '-n', namespace, ...args])
}

/** The clsact qdisc the drop filters hang from. */
export async function addEgressHook(namespace: string): Promise<void> {
  await tc(namespace, 'qdisc', 'add', 'dev', 'eth0', 'clsact')
}

/**
 * Installs (or swaps) the egress drop filter at `prio`: packets to `destinations` (IPv4 as integers)
 * are dropped, all of them when `dropBelow` is null, else the random share below it (see dropProgram).
 */
export async function replaceDropFilter(
  namespace: string,
  prio: string,
  destinations: readonly number[],
  dropBelow: number | null
): Promise<void> {
  const program = dropProgram(destinations, dropBelow)
  await tc(
    namespace,
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

export async function removeDropFilter(namespace: string, prio: string): Promise<void> {
  await tcQuiet(namespace, 'filter', 'del', 'dev', 'eth0', 'egress', 'prio', prio)
}

/** What one node's root qdisc on eth0 does (installShaping). */
export interface ShapingPlan {
  /** The node's uplink to the other nodes, Mbit/s; null: unlimited. */
  bandwidthMbit: number | null
  /** Delay to these destinations (IPv4 addresses), netem's `delay L J`; null: none. */
  delay: { latencyMs: number; jitterMs: number; destinations: readonly string[] } | null
  /** The testnet tool's address: its traffic bypasses the limit, as every fault leaves it alone. */
  hostAddress: string
}

/** For the unlimited classes: at 10gbit tc would compute bursts of 0 bytes. */
const UNLIMITED = ['rate', '10gbit', 'burst', '1m', 'cburst', '1m']

/** kbit, so that tc never sees a fraction printed in exponent notation. */
const kbit = (mbit: number): string => `${Math.max(1, Math.round(mbit * 1000))}kbit`

/**
 * Replaces the root qdisc of the node's eth0 with one htb tree:
 *
 *   1:    htb, default 1:10
 *   ├─ 1:1   the uplink: rate = ceil = bandwidth (10gbit when unlimited)
 *   │  ├─ 1:10  other nodes, undelayed
 *   │  └─ 1:20  delayed destinations (u32 dst match), netem leaf 20:
 *   └─ 1:30  the host (u32 dst match), unlimited
 *
 * The two node classes share one parent so that together they never exceed the bandwidth: each is
 * guaranteed half and may borrow the rest. The clsact drop filters are not part of the root qdisc
 * and stay as they are.
 */
export async function installShaping(namespace: string, plan: ShapingPlan): Promise<void> {
  const limit = plan.bandwidthMbit
  const uplink = limit === null ? UNLIMITED : ['rate', kbit(limit), 'ceil', kbit(limit)]
  const share = limit === null ? UNLIMITED : ['rate', kbit(limit / 2), 'ceil', kbit(limit)]
  const cls = (parent: string, classid: string, rate: readonly string[]): Promise<string> =>
    tc(
      namespace,
      'class',
      'add',
      'dev',
      'eth0',
      'parent',
      parent,
      'classid',
      classid,
      'htb',
      ...rate,
      'quantum',
      '60000'
    )
  const route = (prio: string, address: string, flowid: string): Promise<string> =>
    tc(
      namespace,
      'filter',
      'add',
      'dev',
      'eth0',
      'parent',
      '1:',
      'protocol',
      'ip',
      'prio',
      prio,
      'u32',
      'match',
      'ip',
      'dst',
      `${address}/32`,
      'flowid',
      flowid
    )
  await tc(namespace, 'qdisc', 'replace', 'dev', 'eth0', 'root', 'handle', '1:', 'htb', 'default', '10')
  await cls('1:', '1:1', uplink)
  await cls('1:1', '1:10', share)
  await cls('1:', '1:30', UNLIMITED)
  await route('1', plan.hostAddress, '1:30')
  if (plan.delay === null) return
  const { latencyMs, jitterMs, destinations } = plan.delay
  await cls('1:1', '1:20', share)
  const jitter = jitterMs > 0 ? [`${jitterMs}ms`] : []
  await tc(
    namespace,
    'qdisc',
    'add',
    'dev',
    'eth0',
    'parent',
    '1:20',
    'handle',
    '20:',
    'netem',
    'delay',
    `${latencyMs}ms`,
    ...jitter,
    'limit',
    '100000'
  )
  for (const address of destinations) await route('2', address, '1:20')
}

/** Back to the kernel's default root qdisc: no limit, no delay. */
export async function removeShaping(namespace: string): Promise<void> {
  await tcQuiet(namespace, 'qdisc', 'del', 'dev', 'eth0', 'root')
}

/** Moves the namespace's blackhole routes from `current` to `wanted` (both 'a.b.c.d/32'). */
export async function replaceBlackholeRoutes(
  namespace: string,
  current: readonly string[],
  wanted: readonly string[]
): Promise<void> {
  for (const dst of current.filter(d => !wanted.includes(d))) {
    await run([bin('ip'), '-n', namespace, 'route', 'del', 'blackhole', dst])
  }
  for (const dst of wanted) await must([bin('ip'), '-n', namespace, 'route', 'replace', 'blackhole', dst])
}
