/**
 * The `testnet` and `experiment` commands of the CLI (cli.ts dispatches here).
 *
 * `testnet` starts the nodes, prints their table and then takes fault commands on standard input
 * (`help` lists them) until Ctrl-C or `quit`.
 */
import { createInterface } from 'node:readline'
import { parseArgs } from 'node:util'
import { EntityFactory } from './entity-factory.js'
import { runConvergence } from './experiments/convergence.js'
import { runLiveness } from './experiments/liveness.js'
import { runPropagation } from './experiments/propagation.js'
import { Testnet, TestnetError, type NetworkMode } from './testnet.js'
import { parseTopology, TopologyError } from './topology.js'

const FAULT_HELP = `commands: status | table | stop I | restart I | pause I | resume I | partition 0,1/2,3 | heal
          loss PERCENT [0-1,2-3] | latency MS [0-1] | clear | seed K | quit
          entities | entity-stop K | entity-start K | entities-add K
          (links: only between these pairs; netns mode)`

export class UsageError extends Error {
  override name = 'UsageError'
}

function integer(name: string, text: string | undefined, fallback: number | undefined, min = 0): number {
  if (text === undefined) {
    if (fallback === undefined) throw new UsageError(`--${name} is required`)
    return fallback
  }
  const value = Number(text)
  if (!Number.isInteger(value) || value < min) throw new UsageError(`--${name} must be an integer of at least ${min}`)
  return value
}

/** A comma-separated list of node indexes ("1,2"). */
function nodeList(name: string, text: string | undefined): number[] {
  if (text === undefined) return []
  return text.split(',').map(part => {
    const value = Number(part.trim())
    if (part.trim() === '' || !Number.isInteger(value) || value < 0)
      throw new UsageError(`--${name} takes node indexes separated by commas (e.g. 1,2)`)
    return value
  })
}

/** A loss given as a percentage ("5" or "5%") → a probability. */
function lossOf(text: string | undefined): number | undefined {
  if (text === undefined) return undefined
  const value = Number(text.replace(/%$/, ''))
  if (!Number.isFinite(value) || value < 0 || value > 100) throw new UsageError('--loss is a percentage from 0 to 100')
  return value / 100
}

function networkOf(text: string | undefined): NetworkMode | 'auto' {
  if (text === undefined || text === 'auto' || text === 'netns' || text === 'process') return text ?? 'auto'
  throw new UsageError('--network is auto, netns or process')
}

function topologies(text: string | undefined): string[] {
  const list = (text ?? 'full')
    .split(',')
    .map(t => t.trim())
    .filter(Boolean)
  for (const t of list) parseTopology(t)
  return list
}

const stamp = (): string => new Date().toISOString().replace(/[:.]/g, '-')
const print = (line: string): void => {
  process.stdout.write(`${line}\n`)
}

export async function testnetCommand(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      nodes: { type: 'string' },
      topology: { type: 'string' },
      'seed-entities': { type: 'string' },
      keep: { type: 'boolean' },
      data: { type: 'string' },
      network: { type: 'string' },
      seed: { type: 'string' },
      'trace-dir': { type: 'string' },
      'log-level': { type: 'string' },
      'node-arg': { type: 'string', multiple: true },
      entities: { type: 'string' },
      'entity-heartbeat-seconds': { type: 'string' },
      private: { type: 'string' }
    }
  })
  const nodes = integer('nodes', values.nodes, undefined, 1)
  const privateNodes = nodeList('private', values.private)
  const seed = integer('seed', values.seed, 1)
  const net = new Testnet({
    nodes,
    topology: topologies(values.topology)[0] ?? 'full',
    seed,
    network: networkOf(values.network),
    keep: values.keep ?? false,
    ...(values.data ? { dataRoot: values.data } : {}),
    ...(values['trace-dir'] ? { traceDir: values['trace-dir'] } : {}),
    ...(values['log-level'] ? { logLevel: values['log-level'] } : {}),
    nodeArgs: values['node-arg'] ?? [],
    ...(privateNodes.length > 0 ? { private: privateNodes } : {}),
    log: print,
    entityHeartbeatSeconds: integer('entity-heartbeat-seconds', values['entity-heartbeat-seconds'], 10, 1)
  })
  const started = Date.now()
  await net.start()
  // A directory the user named (--data) is never deleted; a temporary one is unless --keep.
  const keepData = values.keep === true || values.data !== undefined
  print(
    `mesh formed in ${((Date.now() - started) / 1000).toFixed(1)} s (network mode: ${net.mode}); data in ${net.dataRoot}${keepData ? ' (kept)' : ''}`
  )
  print(net.table())
  const factory = new EntityFactory(`testnet ${seed}`)
  let seeded = 0
  const seedEntities = async (count: number): Promise<void> => {
    await net.seedEntities(factory, count, seeded)
    seeded += count
    const ms = await net.waitForEntities(seeded)
    print(`registered ${count} entities (${seeded} in all); every node held them ${ms} ms later`)
  }
  const wanted = integer('seed-entities', values['seed-entities'], 0)
  if (wanted > 0) await seedEntities(wanted)
  const echo = integer('entities', values.entities, 0)
  if (echo > 0) print(await addEntities(net, echo))
  print(FAULT_HELP)

  let stopping: Promise<void> | null = null
  let markStopped = (): void => {}
  const stopped = new Promise<void>(resolve => {
    markStopped = resolve
  })
  const shutdown = (): Promise<void> => {
    stopping ??= (async () => {
      print('stopping the testnet')
      await net.stop()
      print(keepData ? `stopped; data kept in ${net.dataRoot}` : 'stopped; data removed')
      markStopped()
    })()
    return stopping
  }
  const input = createInterface({ input: process.stdin, terminal: false })
  let signals = 0
  const onSignal = (): void => {
    if (++signals > 1) process.exit(130)
    void shutdown()
  }
  process.on('SIGINT', onSignal)
  process.on('SIGTERM', onSignal)
  input.on('line', line => {
    faultCommand(net, line.trim(), seedEntities).then(
      out => {
        if (out === 'quit') void shutdown()
        else if (out) print(out)
      },
      (err: unknown) => print(`error: ${(err as Error).message}`)
    )
  })
  // Until Ctrl-C or quit; the end of standard input (a pipe, /dev/null) does not stop the testnet.
  await stopped
  input.close()
  process.stdin.destroy()
  process.off('SIGINT', onSignal)
  process.off('SIGTERM', onSignal)
}

async function addEntities(net: Testnet, count: number): Promise<string> {
  const started = Date.now()
  const added = await net.entities.add(count)
  const first = added[0]
  return `${added.length} echo entities registered and heartbeating in ${((Date.now() - started) / 1000).toFixed(1)} s, spread over the nodes${first ? ` (entity ${first.index}: ${first.entityId} at ${first.url}; call it with registry-node call ${first.entityId} hello --registry ${net.nodes[first.home]?.url})` : ''}`
}

async function faultCommand(
  net: Testnet,
  line: string,
  seed: (count: number) => Promise<void>
): Promise<string | null> {
  const [command, arg, links] = line.split(/\s+/, 3)
  const between = (): { between?: [number, number][] } => {
    if (!links) return {}
    const pairs = links.split(',').map(p => p.split('-').map(Number))
    if (pairs.some(p => p.length !== 2 || p.some(i => !Number.isInteger(i))))
      throw new UsageError('links are pairs of node numbers: 0-1,2-3')
    return { between: pairs as [number, number][] }
  }
  const index = (): number => integer('node', arg, undefined)
  switch (command) {
    case '':
    case undefined:
      return null
    case 'help':
      return FAULT_HELP
    case 'quit':
    case 'exit':
      return 'quit'
    case 'table':
      return net.table()
    case 'status': {
      const rows = await Promise.all(
        net.nodes.map(async n =>
          n.state !== 'running'
            ? `${n.name}  ${n.state}`
            : `${n.name}  running  peers ${(await net.connectedPeers(n.index)).length}  entities ${await net.entityCount(n.index)}`
        )
      )
      return rows.join('\n')
    }
    case 'stop':
      await net.stopNode(index())
      return `stopped node-${arg}`
    case 'restart':
      await net.restartNode(index())
      return `restarted node-${arg}`
    case 'pause':
      net.pauseNode(index())
      return `paused node-${arg} (SIGSTOP)`
    case 'resume':
      net.resumeNode(index())
      return `resumed node-${arg}`
    case 'partition': {
      const groups = (arg ?? '').split('/').map(g => g.split(',').filter(Boolean).map(Number))
      if (groups.length < 2 || groups.flat().some(i => !Number.isInteger(i) || i < 0 || i >= net.nodes.length))
        throw new UsageError('partition takes groups of node numbers: partition 0,1/2,3')
      return `partitioned ${groups.map(g => g.join(',')).join(' | ')} (${await net.partition(groups)} mode)`
    }
    case 'heal':
      return `healed (${await net.heal()} mode)`
    case 'loss':
      return `loss on ${links ? `links ${links}` : 'every link'}: ${JSON.stringify(await net.setLinkFaults({ loss: lossOf(arg) ?? 0, ...between() }))}`
    case 'latency':
      return `latency on ${links ? `links ${links}` : 'every link'}: ${JSON.stringify(await net.setLinkFaults({ latencyMs: integer('latency', arg, undefined), ...between() }))}`
    case 'clear':
      await net.clearLinkFaults()
      return 'link faults cleared'
    case 'seed':
      await seed(integer('seed', arg, undefined, 1))
      return null
    case 'entities':
      return (
        net.entities
          .list()
          .map(e => `entity ${e.index}  ${e.entityId}  node-${e.home}  ${e.url ?? 'stopped'}`)
          .join('\n') || 'no entities (entities-add K starts some)'
      )
    case 'entities-add':
      return addEntities(net, integer('entities-add', arg, undefined, 1))
    case 'entity-stop':
      await net.entities.stop(integer('entity', arg, undefined))
      return `stopped entity ${arg} (its home marks it inactive after the inactivity threshold)`
    case 'entity-start':
      await net.entities.restart(integer('entity', arg, undefined))
      return `restarted entity ${arg}`
    default:
      return `unknown command ${command}; ${FAULT_HELP}`
  }
}

export async function experimentCommand(argv: string[]): Promise<void> {
  const [kind, ...rest] = argv
  const { values } = parseArgs({
    args: rest,
    options: {
      nodes: { type: 'string' },
      messages: { type: 'string' },
      topology: { type: 'string' },
      loss: { type: 'string' },
      latency: { type: 'string' },
      rate: { type: 'string' },
      out: { type: 'string' },
      network: { type: 'string' },
      seed: { type: 'string' },
      entities: { type: 'string' },
      kill: { type: 'string' },
      'inactive-after': { type: 'string' },
      'node-arg': { type: 'string', multiple: true }
    }
  })
  const nodeArgs = values['node-arg'] ?? []
  const nodes = integer('nodes', values.nodes, undefined, 2)
  const seed = integer('seed', values.seed, 1)
  const network = networkOf(values.network)
  const out = values.out ?? `results/${kind}-${stamp()}`
  if (kind === 'propagation') {
    const loss = lossOf(values.loss)
    const latencyMs = values.latency === undefined ? undefined : integer('latency', values.latency, undefined)
    const rate = values.rate === undefined ? 10 : Number(values.rate)
    if (!(rate > 0)) throw new UsageError('--rate must be a positive number of messages per second')
    const summary = await runPropagation({
      nodes,
      messages: integer('messages', values.messages, undefined, 1),
      topologies: topologies(values.topology),
      out,
      rate,
      seed,
      network,
      nodeArgs,
      log: print,
      ...(loss !== undefined ? { loss } : {}),
      ...(latencyMs !== undefined ? { latencyMs } : {})
    })
    for (const t of summary.topologies) {
      print(
        `${t.topology.padEnd(10)} delivery ${(t.delivery_ratio * 100).toFixed(1)} %  p50 ${t.latency_ms.p50} ms  p95 ${t.latency_ms.p95} ms  p99 ${t.latency_ms.p99} ms  max ${t.latency_ms.max} ms  duplicates/node/msg ${t.duplicates_per_node.per_message}  bytes/msg ${t.bytes_sent.per_message}`
      )
    }
  } else if (kind === 'convergence') {
    const summary = await runConvergence({
      nodes,
      topologies: topologies(values.topology),
      out,
      seed,
      network,
      nodeArgs,
      log: print,
      ...(values.entities !== undefined ? { perSide: integer('entities', values.entities, undefined, 1) } : {})
    })
    for (const r of summary.runs) {
      print(
        `${r.topology.padEnd(10)} converged: ${r.converged}${r.convergence_ms !== null ? ` in ${r.convergence_ms} ms` : ''} (partition ${r.partition_mode} mode, halves apart: ${r.partition_held})`
      )
    }
  } else if (kind === 'liveness') {
    const kill = Number(values.kill ?? '0.2')
    if (!(kill > 0 && kill <= 1)) throw new UsageError('--kill is the share of entities stopped, in (0, 1]')
    const summary = await runLiveness({
      nodes,
      entities: integer('entities', values.entities, 20, 1),
      kill,
      out,
      seed,
      network,
      nodeArgs,
      log: print,
      ...(values.topology ? { topology: topologies(values.topology)[0] as string } : {}),
      ...(values['inactive-after']
        ? { inactiveAfterSeconds: integer('inactive-after', values['inactive-after'], undefined, 1) }
        : {})
    })
    print(
      `inactive on every node: p50 ${summary.inactive_ms.p50} ms, p99 ${summary.inactive_ms.p99} ms, max ${summary.inactive_ms.max} ms (${summary.seen_inactive} of ${summary.pairs}); active again: p50 ${summary.active_ms.p50} ms, max ${summary.active_ms.max} ms (${summary.seen_active} of ${summary.pairs})`
    )
  } else {
    throw new UsageError('experiment is propagation, convergence or liveness')
  }
  print(`results in ${out}`)
}

/** Errors of these commands that are the user's to fix (printed without a stack). */
export function isUsageError(err: unknown): boolean {
  return (
    err instanceof UsageError ||
    err instanceof TopologyError ||
    err instanceof TestnetError ||
    (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS') === true
  )
}
