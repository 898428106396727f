/**
 * Profiles: presets of the mesh settings that say which kind of network a node is part of. A profile
 * sits just above the built-in defaults (and `--dev`): whatever the file, environment or flags set
 * wins, so a profile is a starting point an operator can still adjust one setting at a time. Apart
 * from the loader so that the docs generator and the start-up checks read the presets without it.
 */
import { isIP } from 'node:net'
import type { Setting } from './setting.js'
import type { NodeConfig } from './settings.js'

export type ProfileName = Exclude<NodeConfig['profile'], 'none'>

/**
 * public: the built-in defaults, stated so that a later change of a default cannot quietly turn a
 * public node into something else, and so that `config show` says why each value is what it is.
 * private: nobody outside the allow list may connect, so serving a relay, asking peers to dial back
 * and punching holes have no one to serve; discovery already dials only permitted peers.
 */
export const PROFILES: Readonly<Record<ProfileName, Readonly<Record<string, Setting['default']>>>> = {
  public: {
    'p2p.reachability_check': true,
    'p2p.relay_server': true,
    'p2p.relay_client': 'auto',
    'p2p.hole_punching': true,
    'p2p.gossip_scoring': true,
    'p2p.target_peers': 8,
    'p2p.gossip_max_per_peer_per_second': 100,
    'p2p.sync_max_per_peer_per_minute': 60,
    'p2p.origin_ops_per_second': 1_000,
    'p2p.developer_ops_per_second': 20,
    'p2p.max_entities_per_origin': 100_000,
    'rate_limit.enabled': true
  },
  private: {
    'p2p.reachability_check': false,
    'p2p.relay_server': false,
    'p2p.relay_client': 'off',
    'p2p.hole_punching': false,
    'p2p.upnp': false
  }
}

/** The one line that refuses a configuration a profile cannot run with, or null. */
export function profileProblem(config: NodeConfig): string | null {
  if (config.profile === 'public' && config.dev)
    return 'profile public and --dev (dev) contradict each other: development mode is never for a public mesh; drop one'
  if (config.profile === 'private' && config.p2p.enabled && config.p2p.allow_peers.length === 0)
    return 'profile private needs p2p.allow_peers (--allow-peer, REGISTRY_NODE_P2P_ALLOW_PEERS): the peer ids of the closed mesh'
  return null
}

/** Loopback, RFC 1918, CGNAT, link-local and unique-local addresses: nobody on the internet dials them. */
export function isPrivateAddress(ip: string): boolean {
  if (isIP(ip) === 4) {
    const [a = 0, b = 0] = ip.split('.').map(Number)
    return (
      a === 127 ||
      a === 10 ||
      (a === 172 && b >= 16 && b <= 31) ||
      (a === 192 && b === 168) ||
      (a === 100 && b >= 64 && b <= 127) ||
      (a === 169 && b === 254)
    )
  }
  const v6 = ip.toLowerCase()
  return isIP(v6) === 6 && (v6 === '::1' || /^f[cd]/.test(v6) || /^fe[89ab]/.test(v6))
}

/**
 * What a public node is told at start when peers elsewhere could not dial it as configured: it
 * still runs (it reserves relay slots like any unreachable node), but it does not serve the public
 * mesh the way the profile says. A wildcard listen address draws no warning: the reachability check
 * finds out, and /v1/network/status shows the answer.
 */
export function profileWarnings(config: NodeConfig): string[] {
  if (config.profile !== 'public' || !config.p2p.enabled) return []
  const warnings: string[] = []
  // host "localhost" has its own warning at start, whatever the profile.
  if (config.p2p.announce.length === 0 && isPrivateAddress(config.p2p.host))
    warnings.push(
      `profile public with p2p.host ${config.p2p.host}, a private address, and no p2p.announce: peers elsewhere cannot dial this node and it relays for no one; listen on 0.0.0.0 or set --announce to its public address`
    )
  return warnings
}
