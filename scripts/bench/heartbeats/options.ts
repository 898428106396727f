/**
 * The heartbeat benchmark's flags (parseArgs, with their defaults) and the settings that follow
 * from them: the load, the connections of each kind, the floods, the node's flags and its liveness
 * limits (read with the node's own config loader).
 */
import { parseArgs } from 'node:util'
import { loadConfig } from '../../../src/config/load.js'

export function parseOptions() {
  return parseArgs({
    options: {
      entities: { type: 'string', default: '15000' },
      rate: { type: 'string', default: '5000' },
      seconds: { type: 'string', default: '30' },
      warmup: { type: 'string', default: '5' },
      'entity-sockets': { type: 'string' },
      'mux-sockets': { type: 'string' },
      'per-mux': { type: 'string' },
      'entity-form': { type: 'string', default: 'deployed' },
      flood: { type: 'string', default: 'a,b' },
      'flood-seconds': { type: 'string', default: '20' },
      'flood-factor': { type: 'string', default: '10' },
      'flood-a-sockets': { type: 'string', default: '10' },
      'flood-b-sockets': { type: 'string' },
      'flood-batch': { type: 'string', default: '10' },
      'flood-address': { type: 'string', default: '127.0.0.2' },
      'no-reconnect': { type: 'boolean', default: false },
      drain: { type: 'string', default: '120' },
      connections: { type: 'string', default: '32' },
      workers: { type: 'string', default: '2' },
      profile: { type: 'boolean', default: false },
      'node-src': { type: 'string' },
      'node-arg': { type: 'string', multiple: true, default: [] },
      'http-server': { type: 'string', default: 'auto' }
    }
  }).values
}
export type Args = ReturnType<typeof parseOptions>

/** The options and what follows from them: the load, the connections, the floods, the node's flags and limits. */
export interface Settings {
  args: Args
  N: number
  rate: number
  periodMs: number
  entitySockets: number
  /** Entities on the multiplexed sockets. */
  rest: number
  muxSockets: number
  perMux: number
  entitySpec: boolean
  floods: ('a' | 'b')[]
  floodSeconds: number
  floodRate: number
  floodBatch: number
  drainMs: number
  connections: number
  nodeFlags: string[]
  config: Awaited<ReturnType<typeof loadConfig>>
  /** Frames per second the node allows a multiplexed connection. */
  connectionRate: number
  floodSockets: { a: number; b: number }
}

export async function settingsOf(args: Args): Promise<Settings> {
  const N = Number(args.entities)
  const rate = Number(args.rate)
  const periodMs = (N / rate) * 1000
  const entitySockets = Math.min(N, Number(args['entity-sockets'] ?? Math.round(N / 7.5)))
  const rest = N - entitySockets
  const perMuxWanted = args['per-mux'] === undefined ? undefined : Number(args['per-mux'])
  const muxSockets =
    rest === 0
      ? 0
      : perMuxWanted !== undefined
        ? Math.ceil(rest / perMuxWanted)
        : Number(args['mux-sockets'] ?? Math.ceil(rest / 13))
  const perMux = muxSockets === 0 ? 0 : Math.ceil(rest / muxSockets)
  const floodRate = Number(args['flood-factor']) * rate

  const nodeFlags = [
    '--http-port',
    '0',
    '--no-rate-limit',
    '--http-server',
    args['http-server'],
    ...(args['node-arg'] ?? [])
  ]
  const config = await loadConfig({ argv: nodeFlags, env: {} })
  const L = config.liveness
  const connectionRate = L.frames_per_second_per_entity * L.max_entities_per_connection
  if (perMux > L.max_entities_per_connection)
    throw new Error(
      `${perMux} entities per multiplexed socket exceeds the node's cap of ${L.max_entities_per_connection}`
    )
  if (1000 / periodMs > L.frames_per_second_per_entity)
    console.error(
      `warning: each entity beats ${(1000 / periodMs).toFixed(2)}/s, over the node's ${L.frames_per_second_per_entity}/s per entity`
    )
  return {
    args,
    N,
    rate,
    periodMs,
    entitySockets,
    rest,
    muxSockets,
    perMux,
    entitySpec: args['entity-form'] === 'spec',
    floods: (['a', 'b'] as const).filter(f =>
      args.flood
        .split(',')
        .map(s => s.trim())
        .includes(f)
    ),
    floodSeconds: Number(args['flood-seconds']),
    floodRate,
    floodBatch: Number(args['flood-batch']),
    drainMs: Number(args.drain) * 1000,
    connections: entitySockets + muxSockets,
    nodeFlags,
    config,
    connectionRate,
    floodSockets: {
      a: Number(args['flood-a-sockets']),
      b: Number(args['flood-b-sockets'] ?? Math.ceil(floodRate / connectionRate))
    }
  }
}
