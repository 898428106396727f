/**
 * Settings rows of the node's connections: the libp2p mesh with other registries, and the sockets
 * entities (heartbeats) and watchers (activity) hold open to it. Split from the settings table
 * (settings.ts) only for size; rows keep the table's order.
 */
import type { Setting } from './setting.js'

export const P2P_SETTINGS = [
  {
    key: 'p2p.enabled',
    kind: 'boolean',
    default: true,
    flag: 'p2p',
    doc: 'Join the mesh (libp2p); --no-p2p runs a stand-alone node.'
  },
  {
    key: 'p2p.host',
    kind: 'string',
    default: '0.0.0.0',
    flag: 'p2p-host',
    doc: 'Address the libp2p listeners bind to.'
  },
  {
    key: 'p2p.port',
    kind: 'integer',
    default: 4001,
    flag: 'p2p-port',
    min: 0,
    max: 65534,
    doc: 'libp2p TCP port; WebSockets listens on port + 1 (0: both ephemeral).'
  },
  {
    key: 'p2p.bootstrap',
    kind: 'list',
    default: [],
    flag: 'bootstrap',
    reloadable: true,
    doc: "Peer multiaddrs dialled at start and re-dialled every 30 s while disconnected, sooner after a failed dial (1 s, then doubling) (repeatable); end them in /p2p/<peer-id> to pin the peer's key. A /dnsaddr/<name> entry stands for the addresses the TXT records dnsaddr=<multiaddr> of _dnsaddr.<name> list, resolved anew at each re-dial (p2p.dns_servers)."
  },
  {
    key: 'p2p.announce',
    kind: 'list',
    default: [],
    flag: 'announce',
    doc: 'Multiaddrs announced to peers instead of the listen addresses, e.g. the public address in front of a NAT (repeatable).'
  },
  {
    key: 'p2p.max_connections',
    kind: 'integer',
    default: 100,
    flag: 'max-connections',
    min: 1,
    max: 10_000,
    doc: 'libp2p connections kept open; beyond it the least valuable are closed.'
  },
  {
    key: 'p2p.reachability_check',
    kind: 'boolean',
    default: true,
    flag: 'reachability-check',
    doc: 'Learn whether this node is publicly reachable: connected peers are asked to dial its addresses back (AutoNAT, and /zns/reach/1.0.0 for private ranges), and their requests are answered; the answer shows in /v1/network/status.'
  },
  {
    key: 'p2p.relay_server',
    kind: 'boolean',
    default: true,
    flag: 'relay-server',
    doc: 'Serve circuit relay v2: peers that cannot be dialled reserve a slot here and are reached through this node, within the limits below.'
  },
  {
    key: 'p2p.relay_max_reservations',
    kind: 'integer',
    default: 15,
    flag: 'relay-max-reservations',
    min: 1,
    max: 1024,
    doc: 'Relay slots this node grants at once (p2p.relay_server).'
  },
  {
    key: 'p2p.relay_duration_limit_seconds',
    kind: 'integer',
    default: 120,
    flag: 'relay-duration-limit-seconds',
    min: 1,
    max: 86_400,
    doc: 'How long one relayed connection may stay open; hole punching (p2p.hole_punching) replaces it with a direct one before then where it can.'
  },
  {
    key: 'p2p.relay_data_limit_bytes',
    kind: 'integer',
    default: 1_048_576,
    flag: 'relay-data-limit-bytes',
    min: 1024,
    max: 1_073_741_824,
    doc: 'Bytes one relayed connection may carry in each direction before the relay closes it.'
  },
  {
    key: 'p2p.relay_client',
    kind: 'string',
    default: 'auto',
    flag: 'relay-client',
    choices: ['auto', 'always', 'off'],
    doc: 'Reserve a slot on a relay so peers can reach this node: auto does so unless p2p.announce names the addresses to dial, always does so regardless, off never.'
  },
  {
    key: 'p2p.hole_punching',
    kind: 'boolean',
    default: true,
    flag: 'hole-punching',
    doc: 'Replace relayed connections with direct ones: a dial back, else a TCP simultaneous open from agreed ports (/zns/punch/1.0.0; DCUtR for other implementations) where the firewalls or NATs on both sides let it through.'
  },
  {
    key: 'p2p.upnp',
    kind: 'boolean',
    default: false,
    flag: 'upnp',
    doc: 'Ask the local router (UPnP IGD or NAT-PMP) to forward the libp2p port to this node, and announce the mapped public address.'
  },
  {
    key: 'p2p.target_peers',
    kind: 'integer',
    default: 8,
    flag: 'target-peers',
    min: 0,
    max: 10_000,
    doc: 'Connected peers this node looks for beyond its bootstrap list (the low watermark; p2p.max_connections is the high one): while it has fewer, it dials peers it has heard of and walks the DHT for more every p2p.discovery_interval_seconds. A value above p2p.max_connections counts as that, and with p2p.allow_peers as the number of other peers it names. 0: only the bootstrap list and peers that dial in.'
  },
  {
    key: 'p2p.discovery_interval_seconds',
    kind: 'number',
    default: 30,
    flag: 'discovery-interval-seconds',
    min: 0.1,
    max: 3600,
    doc: 'Pause between two peer discovery rounds while the node has fewer connected peers than p2p.target_peers.'
  },
  {
    key: 'p2p.dns_servers',
    kind: 'list',
    default: [],
    flag: 'p2p-dns-servers',
    doc: 'DNS servers (ip or ip:port) that /dnsaddr/ bootstrap entries are resolved with; empty: the system resolvers.'
  },
  {
    key: 'p2p.dht_announce_interval_seconds',
    kind: 'number',
    default: 30,
    flag: 'dht-announce-interval-seconds',
    min: 0.01,
    max: 3600,
    doc: 'Pause between two DHT provider announcements of this node (its host, then the buckets of its home entities, 17 at most): each costs a DHT query and writes to several peers, so they trickle in the background; lookups are the fallback for what gossip and sync have not brought.'
  },
  {
    key: 'p2p.sync_interval_seconds',
    kind: 'integer',
    default: 60,
    flag: 'sync-interval-seconds',
    min: 1,
    max: 86_400,
    doc: 'Period of sync rounds (/zns/sync/1.0.0) with one connected peer picked at random; a sync also runs when a connection opens.'
  },
  {
    key: 'p2p.gossip_mesh_degree',
    kind: 'integer',
    default: 4,
    flag: 'gossip-mesh-degree',
    min: 2,
    max: 12,
    doc: "Peers each node forwards gossip to (gossipsub's D; the mesh keeps between D − 1 and 1.5 D). A node's own operations go to every connected peer, and sync catches up whatever gossip missed, so a mesh smaller than gossipsub's 6 costs each node fewer copies and control messages per operation."
  },
  {
    key: 'p2p.gossip_max_per_peer_per_second',
    kind: 'integer',
    default: 100,
    flag: 'gossip-max-per-peer-per-second',
    min: 1,
    max: 100_000,
    doc: "Gossip messages accepted per second from one peer (the spec's 100); beyond it they are ignored and left to sync."
  },
  {
    key: 'p2p.gossip_scoring',
    kind: 'boolean',
    default: true,
    flag: 'gossip-scoring',
    doc: "Score gossip peers with this node's parameters (invalid and over-quota messages and replays cost score; docs/decisions.md) and hang up on and refuse a peer below the graylist threshold until its score recovers. --no-gossip-scoring: gossipsub's default scoring, under which invalid messages cost nothing; for tests that publish invalid operations on purpose."
  },
  {
    key: 'p2p.gossip_colocation_whitelist',
    kind: 'list',
    default: ['127.0.0.1', '::1'],
    flag: 'gossip-colocation-whitelist',
    doc: 'IP addresses whose peers gossip scoring does not charge for sharing an address (more than 3 peers on one address cost each −10 × surplus², and 6 or more are graylisted): loopback for testnets on one machine; add the public address of several nodes of yours behind one NAT (repeatable).'
  },
  {
    key: 'p2p.sync_max_per_peer_per_minute',
    kind: 'integer',
    default: 60,
    flag: 'sync-max-per-peer-per-minute',
    min: 1,
    max: 10_000,
    doc: 'Sync sessions one peer may open with this node per minute; beyond, they are answered busy for the rest of the minute and a warning is logged (once a minute per peer). An honest peer opens one when it connects, one per sync interval, and at most one every 2 s while news spreads.'
  },
  {
    key: 'p2p.origin_ops_per_second',
    kind: 'number',
    default: 1_000,
    flag: 'origin-ops-per-second',
    min: 0,
    doc: 'Operations per second taken from one other registry (bursts of 10 × this): at least the write rate an honest node may sustain. Beyond it gossip ignores them (not forwarded from here) and sync takes them later. 0: no limit.'
  },
  {
    key: 'p2p.developer_ops_per_second',
    kind: 'number',
    default: 20,
    flag: 'developer-ops-per-second',
    min: 0,
    doc: "Operations per second taken from the mesh for one developer's records, their status changes aside (bursts of 10 × this), as above. 0: no limit."
  },
  {
    key: 'p2p.max_entities_per_origin',
    kind: 'integer',
    default: 100_000,
    flag: 'max-entities-per-origin',
    min: 0,
    doc: 'Entities homed at one other registry this node keeps; registrations beyond it are refused for good (sync does not offer them again). 0: no limit.'
  },
  {
    key: 'p2p.allow_peers',
    kind: 'list',
    default: [],
    flag: 'allow-peer',
    doc: 'When set, the only peers (PeerIds) this node connects to, either way (repeatable): private meshes and testnet topologies.'
  },
  {
    key: 'p2p.trace_file',
    kind: 'string',
    default: '',
    flag: 'trace',
    doc: 'Append a JSON line per gossip event (publish, first receipt, duplicate) to this file: the propagation trace of experiments.'
  }
] as const satisfies readonly Setting[]

export const LIVENESS_SETTINGS = [
  {
    key: 'liveness.inactive_after_seconds',
    kind: 'number',
    default: 300,
    flag: 'inactive-after-seconds',
    min: 0.1,
    doc: 'Silence after which a home entity becomes inactive (the spec: 5 minutes).'
  },
  {
    key: 'liveness.sweep_interval_seconds',
    kind: 'number',
    default: 60,
    flag: 'sweep-interval-seconds',
    min: 0.05,
    doc: 'How often the inactivity sweep runs (the spec: 60 seconds).'
  },
  {
    key: 'liveness.max_clock_skew_seconds',
    kind: 'number',
    default: 60,
    flag: 'max-clock-skew-seconds',
    min: 1,
    doc: 'Largest accepted difference between a signed timestamp (of a heartbeat, or of a timestamped deletion or release) and the node clock.'
  },
  {
    key: 'liveness.flush_interval_ms',
    kind: 'integer',
    default: 5000,
    flag: 'liveness-flush-ms',
    min: 10,
    max: 300_000,
    doc: 'How often last-seen times are written to LMDB in one batch (a crash loses at most this much heartbeat history; status changes are written at once).'
  },
  {
    key: 'liveness.max_entities_per_connection',
    kind: 'integer',
    default: 50,
    flag: 'max-entities-per-connection',
    min: 1,
    max: 10_000,
    doc: 'Entities one multiplexed /v1/heartbeat connection may carry.'
  },
  {
    key: 'liveness.frames_per_second_per_entity',
    kind: 'number',
    default: 1,
    flag: 'heartbeat-rate',
    reloadable: true,
    min: 0.01,
    doc: 'Heartbeat frames per second one connection may send per entity it may carry (bursts of 10 × this); a connection that keeps exceeding it is closed.'
  },
  {
    key: 'liveness.max_frame_bytes',
    kind: 'integer',
    default: 1024,
    flag: 'heartbeat-frame-bytes',
    min: 256,
    max: 65_536,
    doc: 'Largest heartbeat frame (× max_entities_per_connection on /v1/heartbeat); larger frames close the connection (1009).'
  },
  {
    key: 'liveness.probation_seconds',
    kind: 'number',
    default: 10,
    flag: 'heartbeat-probation-seconds',
    reloadable: true,
    min: 0,
    doc: 'A heartbeat connection is on probation until its first accepted heartbeat and for this long after any rejected one; proven connections are served first.'
  },
  {
    key: 'liveness.probation_in_flight',
    kind: 'integer',
    default: 128,
    flag: 'heartbeat-probation-in-flight',
    reloadable: true,
    min: 1,
    max: 100_000,
    doc: "Heartbeats of connections on probation awaiting verification, node-wide; beyond it they are answered overloaded before any signature work (128: about 17 ms of one worker, the most a flood adds to a proven heartbeat's wait)."
  },
  {
    key: 'liveness.probation_in_flight_per_address',
    kind: 'integer',
    default: 32,
    flag: 'heartbeat-probation-in-flight-per-address',
    reloadable: true,
    min: 1,
    max: 100_000,
    doc: 'The share of liveness.probation_in_flight one remote address may hold.'
  },
  {
    key: 'activity.queue_size',
    kind: 'integer',
    default: 256,
    flag: 'activity-queue-size',
    min: 1,
    max: 100_000,
    doc: 'Events buffered per /v1/ws/activity subscriber; a slower subscriber loses events (the spec: 256).'
  }
] as const satisfies readonly Setting[]
