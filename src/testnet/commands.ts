/**
 * The `testnet` command of the CLI (cli.ts dispatches here; `experiment` is experiment-command.ts).
 *
 * `testnet` starts the nodes, prints their table and then takes fault commands on standard input
 * (`help` lists them) until Ctrl-C or `quit`. The commands run one after another in the order
 * read, so a script piped in (timed with `sleep`) acts and prints in order. Every line the testnet
 * prints starts with the seconds since the command started, `[   12.345] `: one clock for a whole
 * run, which a researcher can line up against the nodes' own timestamps.
 */
import { readFile } from 'node:fs/promises'
import { createInterface } from 'node:readline'
import { parseArgs } from 'node:util'
import { defaultConfig } from '../config/load.js'
import { EntityFactory } from './entity-factory.js'
import { integer, lossOf, nodeList, networkOf, stamp, stampedPrinter, topologies, UsageError } from './command-args.js'
import { sleep, Testnet, TestnetError, type TestnetNode } from './testnet.js'
import { TopologyError } from './topology.js'

const FAULT_HELP = `commands: status | table | stop I | restart I | pause I | resume I | partition 0,1/2,3 | heal
          loss PERCENT [0-1,2-3] | latency MS [JITTER_MS] [0-1] | bandwidth MBIT | clear
          seed K | sleep SECONDS | quit | entities | entity-stop K | entity-start K | entities-add K
          (links: only between these pairs; links, jitter and bandwidth (each node's uplink, Mbit/s)
          need netns mode; loss, latency and bandwidth each replace the link faults set before)`

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
      private: { type: 'string' },
      simulate: { type: 'boolean' },
      scenario: { type: 'string' },
      'network-model': { type: 'string' },
      'mesh-degree': { type: 'string' },
      out: { type: 'string' }
    }
  })
  if (values.simulate) return simulatedTestnet(values, argv)
  for (const flag of ['scenario', 'network-model', 'mesh-degree', 'out'] as const)
    if (values[flag] !== undefined) throw new UsageError(`--${flag} goes with --simulate`)
  const print = stampedPrinter()
  const nodes = integer('nodes', values.nodes, undefined, 1)
  const privateNodes = nodeList('private', values.private)
  const seed = integer('seed', values.seed, 1)
  print(`testnet command started at ${new Date().toISOString()}; [seconds] since then start each line`)
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
    const sent = Date.now()
    await net.seedEntities(factory, count, seeded)
    const registered = Date.now() - sent
    seeded += count
    if (net.partitioned) {
      // The sides cannot agree before the heal: nothing to wait for.
      print(`registered ${count} entities (${seeded} in all) in ${registered} ms; a partition keeps the sides apart`)
      return
    }
    // Timed by the nodes themselves: when each applied the last change before they all agreed.
    const { ms } = await net.waitForConvergence(sent, { entities: seeded })
    print(
      `registered ${count} entities (${seeded} in all) in ${registered} ms; every node held them ${ms} ms after the first was sent`
    )
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
  // One command at a time, in the order read: a command waits for those before it (quit too).
  let queue = Promise.resolve()
  input.on('line', line => {
    queue = queue.then(async () => {
      if (stopping) return
      try {
        const out = await faultCommand(net, line.trim(), seedEntities)
        if (out === 'quit') await shutdown()
        else if (out) print(out)
      } catch (err) {
        print(`error: ${(err as Error).message}`)
      }
    })
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

type TestnetValues = Record<string, string | boolean | string[] | undefined>

/**
 * `testnet --simulate`: the nodes in this process on virtual time (sim/), driven by a scenario file
 * (run as a bundle into --out) or by commands typed on standard input.
 */
async function simulatedTestnet(values: TestnetValues, argv: string[]): Promise<void> {
  const text = (name: string): string | undefined => values[name] as string | undefined
  for (const flag of ['private', 'network', 'entities', 'data', 'keep', 'trace-dir', 'node-arg', 'log-level'])
    if (values[flag] !== undefined) throw new UsageError(`--${flag} does not apply to --simulate`)
  const { loadNetworkModel, runBundle, scenarioParameters } = await import('./sim/sim-experiment.js')
  const { interactiveSimulation, scenarioCommands } = await import('./sim/sim-scenario.js')
  const { makeBundle } = await import('./sim/bundle.js')
  const common = {
    nodes: integer('nodes', text('nodes'), undefined, 2),
    topology: topologies(text('topology'))[0] ?? 'full',
    seed: integer('seed', text('seed'), 1),
    runs: 1,
    mesh_degree: integer('mesh-degree', text('mesh-degree'), defaultConfig().p2p.gossip_mesh_degree, 2),
    network: await loadNetworkModel(text('network-model') ?? 'default')
  }
  const seeded = integer('seed-entities', text('seed-entities'), 0)
  const plain = (line: string): void => {
    process.stdout.write(`${line}\n`)
  }
  // Ctrl-C exits through 'exit', where the simulation removes its stores from memory-backed /dev/shm.
  process.once('SIGINT', () => process.exit(130))
  const scenario = text('scenario')
  if (scenario === undefined) {
    await interactiveSimulation(
      {
        nodes: common.nodes,
        seed: common.seed,
        topology: common.topology,
        network: common.network,
        meshDegree: common.mesh_degree,
        log: plain
      },
      plain,
      seeded > 0 ? [`seed ${seeded}`] : []
    )
    return
  }
  let commands: string[]
  try {
    commands = scenarioCommands(await readFile(scenario, 'utf8'))
  } catch (err) {
    throw new UsageError(
      `--scenario: cannot read ${scenario} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`
    )
  }
  if (seeded > 0) commands.unshift(`seed ${seeded}`)
  const out = text('out') ?? `results/scenario-sim-${stamp()}`
  await runBundle(
    makeBundle(scenarioParameters({ ...common, commands }), ['registry-node', 'testnet', ...argv]),
    out,
    plain
  )
  plain(`results in ${out} (registry-node experiment reproduce ${out} runs it again)`)
}

/**
 * One node's line of `status`. A paused (SIGSTOPped) or stopped node is shown by its state without
 * asking it: it would not answer. A running node that fails to answer is shown with the reason.
 */
async function statusRow(net: Testnet, n: TestnetNode): Promise<string> {
  if (n.state !== 'running') return `${n.name}  ${n.state}`
  try {
    const [peers, sync] = await Promise.all([net.connectedPeers(n.index), net.syncState(n.index)])
    return `${n.name}  running  peers ${peers.length}  entities ${sync.entities}  digest ${sync.digest.slice(0, 12)} (${sync.operations} operations)`
  } catch (err) {
    return `${n.name}  running  no answer: ${(err as Error).message}`
  }
}

async function faultCommand(
  net: Testnet,
  line: string,
  seed: (count: number) => Promise<void>
): Promise<string | null> {
  const [command, arg, third, fourth] = line.split(/\s+/, 4)
  // `latency MS [JITTER_MS] [links]`: a jitter is a bare number, links always hold a dash.
  const jitter = command === 'latency' && third !== undefined && /^\d+(\.\d+)?$/.test(third) ? third : undefined
  const links = jitter === undefined ? third : fourth
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
    case 'status':
      return (await Promise.all(net.nodes.map(n => statusRow(net, n)))).join('\n')
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
    case 'latency': {
      const faults = {
        latencyMs: integer('latency', arg, undefined),
        ...(jitter !== undefined ? { jitterMs: integer('jitter', jitter, undefined) } : {}),
        ...between()
      }
      return `latency on ${links ? `links ${links}` : 'every link'}: ${JSON.stringify(await net.setLinkFaults(faults))}`
    }
    case 'bandwidth': {
      const mbit = Number(arg)
      if (arg === undefined || !Number.isFinite(mbit) || mbit <= 0)
        throw new UsageError('bandwidth takes Mbit/s above 0 (e.g. bandwidth 2 or bandwidth 0.5); clear removes it')
      return `bandwidth on every node's uplink: ${JSON.stringify(await net.setLinkFaults({ bandwidthMbit: mbit }))}`
    }
    case 'clear':
      await net.clearLinkFaults()
      return 'link faults cleared'
    case 'seed':
      await seed(integer('seed', arg, undefined, 1))
      return null
    case 'sleep': {
      const seconds = Number(arg)
      if (arg === undefined || !Number.isFinite(seconds) || seconds < 0 || seconds > 86_400)
        throw new UsageError('sleep takes a number of seconds from 0 to 86400 (e.g. sleep 0.5)')
      await sleep(seconds * 1000)
      return null
    }
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

/** Errors of these commands that are the user's to fix (printed without a stack). */
export function isUsageError(err: unknown): boolean {
  return (
    err instanceof UsageError ||
    err instanceof TopologyError ||
    err instanceof TestnetError ||
    (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS') === true
  )
}
