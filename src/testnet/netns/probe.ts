/**
 * What this machine's kernel and tools allow: namespaces, packet loss, added latency, bandwidth
 * limits, and so how partitions are made. Found by trying each on a throwaway namespace, and
 * remembered per process.
 */
import { ipToInt } from './addresses.js'
import { dropProgram, lossThreshold } from './drop-program.js'
import { installFirewall } from './firewall.js'
import { bin, type CommandResult, firstLine, run } from './iproute.js'
import { releaseFiles, reservePrefix } from './ownership.js'
import { LOSS_PRIO } from './shaping.js'
import type { NetnsCapabilities } from './types.js'

let capabilitiesPromise: Promise<NetnsCapabilities> | undefined

/** What this machine supports. Creates and deletes a throwaway namespace; never throws. */
export async function probeNetns(): Promise<NetnsCapabilities> {
  const reasons: string[] = []
  const caps: NetnsCapabilities = {
    namespaces: false,
    loss: false,
    latency: false,
    bandwidth: false,
    firewall: false,
    partitionMethod: 'none',
    reasons
  }
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
      try {
        await installFirewall(ns, '10.211.255.254')
        caps.firewall = true
      } catch (err) {
        reasons.push(`no firewall (refuseInbound): ${err instanceof Error ? err.message : String(err)}`)
      }
      const tcVersion = await run([bin('tc'), '-V'])
      if (tcVersion.code !== 0) {
        reasons.push(
          `no packet loss, no latency, no bandwidth: iproute2's tc is not usable (${firstLine(tcVersion.stderr)})`
        )
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
      // The bandwidth limit is an htb class's rate; the delay tree needs the same classes.
      const htb = await tc('qdisc', 'add', 'dev', 'pb', 'root', 'handle', '1:', 'htb', 'default', '10')
      const htbClass =
        htb.code === 0
          ? await tc(
              'class',
              'add',
              'dev',
              'pb',
              'parent',
              '1:',
              'classid',
              '1:10',
              'htb',
              'rate',
              '1mbit',
              'ceil',
              '1mbit'
            )
          : htb
      if (htbClass.code !== 0) {
        const why = firstLine(htbClass.stderr)
        reasons.push(`no latency: htb qdisc (to delay chosen links only) failed (${why})`)
        reasons.push(`no bandwidth: htb qdisc (the uplink's rate limit) failed (${why})`)
      }
      caps.latency = netem.code === 0 && htbClass.code === 0
      caps.bandwidth = htbClass.code === 0
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

/** The first probe's answer: the kernel's abilities do not change while a process runs. */
export function probedCapabilities(): Promise<NetnsCapabilities> {
  capabilitiesPromise ??= probeNetns()
  return capabilitiesPromise
}
