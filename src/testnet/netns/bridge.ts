/**
 * Building one testnet's namespaces: the switch namespace with its bridge, the root namespace's
 * link onto it, and each node's namespace with its veth `eth0` plugged into the bridge.
 */
import { existsSync } from 'node:fs'
import { bin, mapLimit, must, PARALLEL, run } from './iproute.js'
import { addEgressHook } from './shaping.js'

/** The naming and addressing of a testnet, as the Network handle defines it. */
export interface BridgeLayout {
  readonly prefix: string
  readonly count: number
  readonly hostAddress: string
  namespace(i: number): string
  address(i: number): string
}

/**
 * Builds the switch, the host link and every node; throws on the first failure (the caller tears
 * down). With `egressHooks`, each node's eth0 gets the clsact qdisc the drop filters need.
 */
export async function buildBridge(layout: BridgeLayout, egressHooks: boolean): Promise<void> {
  const ip = bin('ip')
  const sw = `${layout.prefix}sw`
  const host = `${layout.prefix}h`
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
  await must([ip, 'addr', 'add', `${layout.hostAddress}/24`, 'dev', host])
  await must([ip, 'link', 'set', 'dev', host, 'up'])
  const nodes = Array.from({ length: layout.count }, (_, i) => i)
  await mapLimit(nodes, PARALLEL, async i => {
    const ns = layout.namespace(i)
    const inNode = (...args: string[]): Promise<string> => must([ip, '-n', layout.namespace(i), ...args])
    await must([ip, 'netns', 'add', ns])
    await must([ip, '-n', sw, 'link', 'add', 'name', `n${i}`, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns])
    await must([ip, '-n', sw, 'link', 'set', 'dev', `n${i}`, 'addrgenmode', 'none'])
    await must([ip, '-n', sw, 'link', 'set', 'dev', `n${i}`, 'master', 'br0', 'up'])
    await inNode('link', 'set', 'dev', 'lo', 'up')
    await inNode('link', 'set', 'dev', 'eth0', 'addrgenmode', 'none')
    await inNode('addr', 'add', `${layout.address(i)}/24`, 'dev', 'eth0')
    await inNode('link', 'set', 'dev', 'eth0', 'up')
    if (egressHooks) await addEgressHook(ns)
  })
}
