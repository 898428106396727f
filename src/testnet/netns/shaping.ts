/**
 * Traffic shaping on one node's eth0 egress, by namespace name: the BPF drop filters (partition and
 * loss), the htb tree whose netem leaf delays chosen destinations, and the blackhole routes that
 * stand in for the drop filter where the kernel has no cls_bpf.
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

/** Delays egress packets to `destinations` (IPv4 addresses) by `latencyMs`; other traffic is not delayed. */
export async function installDelay(
  namespace: string,
  latencyMs: number,
  destinations: readonly string[]
): Promise<void> {
  // 1:1 (default) passes straight on, 1:2 holds the netem delay; u32 picks 1:2 by destination.
  // Explicit bursts: at 10gbit tc would compute 0 bytes.
  await tc(namespace, 'qdisc', 'replace', 'dev', 'eth0', 'root', 'handle', '1:', 'htb', 'default', '1')
  for (const cls of ['1:1', '1:2']) {
    await tc(
      namespace,
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
  await tc(
    namespace,
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
    `${latencyMs}ms`,
    'limit',
    '100000'
  )
  for (const address of destinations) {
    await tc(
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
      '1',
      'u32',
      'match',
      'ip',
      'dst',
      `${address}/32`,
      'flowid',
      '1:2'
    )
  }
}

export async function removeDelay(namespace: string): Promise<void> {
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
