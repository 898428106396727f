/**
 * The heartbeat benchmark's run: the node in service (replaced by a fresh one when a segment did not
 * drain), the valid client, the flood process and what each phase measured. A segment is signed,
 * sent through its phases (a sample at each boundary, the flood told to prepare, go, stop and
 * report), drained, and reported.
 */
import { fork, type ChildProcess } from 'node:child_process'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import { cliEntry, sleep } from '../../lib/mesh-bench.js'
import { TSX_IMPORT } from '../../lib/node-process.js'
import { report } from '../../lib/report.js'
import { ValidClient } from './client.js'
import type { FloodCommand, FloodReply, FloodStats } from './flood.js'
import { sample, waitIdle, type Sample } from './measure.js'
import { bringUp, tearDown, type Live } from './node.js'
import type { Settings } from './options.js'
import { phasesOf, type PhaseList, type PhaseLoop, type PhaseResult, type Segment } from './phases.js'
import { fmt, reportPhase } from './report.js'
import { signBeats, type Signers } from './signing.js'

/** The flood process's entry, run with tsx's loader. */
const FLOOD_CHILD = fileURLToPath(new URL('./flood-child.ts', import.meta.url))

/**
 * The run: the node in service, the valid client (its sockets and what they received), the flood
 * process, and what each phase measured.
 */
export class HeartbeatRun {
  /** The profiler's sampling costs a few % of a core on its own. */
  private readonly idleShare: number
  /** A node with a backlog may take minutes to stop; it is killed after this (no profile then). */
  private readonly stopLimitMs: number
  private readonly entry: string[]

  readonly client: ValidClient
  private nodeCount = 0
  private live!: Live

  private flood: ChildProcess | null = null
  private readonly floodStats: Partial<Record<'a' | 'b', FloodStats>> = {}
  private floodWaiter: (() => void) | null = null

  readonly results = new Map<string, PhaseResult>()

  constructor(
    private readonly s: Settings,
    private readonly signers: Signers,
    readonly profileDir: string | null
  ) {
    const { args } = s
    const cli = cliEntry(args['node-src'])
    this.entry = profileDir ? ['--cpu-prof', '--cpu-prof-dir', profileDir, ...cli] : cli
    this.idleShare = args.profile ? 0.15 : 0.05
    this.stopLimitMs = args.profile ? 600_000 : 30_000
    this.client = new ValidClient(s, signers)
  }

  /** The first node, then the flood process. */
  async start(): Promise<void> {
    this.live = await this.bringUp()
    this.flood = this.s.floods.length > 0 ? fork(FLOOD_CHILD, [], { execArgv: ['--import', TSX_IMPORT] }) : null
    this.flood?.on('message', (m: FloodReply) => {
      if (m.type === 'stats') {
        this.floodStats[m.stats.mode] = m.stats
        this.floodWaiter?.()
      }
    })
    this.tell({ cmd: 'init', ids: this.signers.ids })
  }

  private tell(m: FloodCommand): void {
    this.flood?.send(m)
  }

  // -- Nodes. Each is started on a fresh data directory, loaded over HTTP, left to become idle and
  // connected. A flood segment that leaves its node with a backlog it cannot drain within --drain
  // gets the next flood a fresh node, so one flood's backlog is not measured as the next one's.

  private bringUp(): Promise<Live> {
    const prefix = this.nodeCount++ === 0 ? '' : `node${this.nodeCount}_`
    return bringUp(this.s, this.signers, {
      entry: this.entry,
      idleShare: this.idleShare,
      prefix,
      attach: ws => this.client.attach(ws)
    })
  }

  private tearDown(l: Live): Promise<boolean> {
    return tearDown(l, {
      stopLimitMs: this.stopLimitMs,
      profileDir: this.profileDir,
      closing: on => {
        this.client.closing = on
      }
    })
  }

  /** A fresh node for the next segment (the last one did not drain). */
  async replaceNode(): Promise<void> {
    await this.tearDown(this.live)
    this.client.lastBeat.clear()
    this.live = await this.bringUp()
  }

  private sample(): Promise<Sample> {
    return sample(this.live.pid, this.flood?.pid)
  }

  // -- Segments

  /** Signs, runs, drains and reports one segment; whether it drained. */
  async runSegment(label: string, phaseList: PhaseList): Promise<boolean> {
    const { phases, durationMs: D } = phasesOf(phaseList)
    const K = Math.ceil(D / this.s.periodMs) + 1
    const { frames, wallT0, startLag } = await signBeats(this.s, this.signers, this.client.offsets, label, K)
    const T0 = performance.now()
    const current: Segment = {
      phases,
      durationMs: D,
      beats: K,
      wallT0,
      T0,
      wallAtT0: Date.now(),
      sendTimes: new Float64Array(this.s.N * K),
      ackTimes: new Float64Array(this.s.N * K),
      errorTimes: new Float64Array(this.s.N * K)
    }
    this.client.seg = current
    const { samples, loops } = await this.send(current, frames)
    const { drainS, stillUnacked, idleAfter } = await this.drain(current)
    samples[phases.length] ??= await this.sample()

    report(
      `${label}_timestamp_age_at_send`,
      fmt(Math.max(0, startLag), 0),
      'ms (how far the signed timestamps trail the send times)'
    )
    for (let i = 0; i < phases.length; i++) {
      const p = phases[i]!
      const f = p.role === 'flood' ? this.floodStats[p.flood!] : undefined
      const errs = this.client.errorsByPhase.get(p.name)
      const result = reportPhase(
        this.s,
        current,
        p,
        samples[i]!,
        samples[i + 1]!,
        loops[i]!,
        drainS,
        this.live.pid,
        errs,
        f
      )
      this.results.set(p.name, result)
    }
    report(
      `${label}_drain`,
      fmt(drainS, 1),
      `s until every valid heartbeat of the segment was answered (${stillUnacked} still unanswered; the limit is --drain ${this.s.args.drain} s)`
    )
    report(
      `${label}_node_idle_after`,
      idleAfter === Infinity ? 'not within 60' : fmt(idleAfter / 1000, 1),
      's more until the node was idle'
    )
    this.client.keepLastBeats(current)
    this.client.seg = null
    this.client.currentPhase = null
    return stillUnacked === 0
  }

  /**
   * Sends every beat at its planned time (ValidClient.sendBeats) and moves through the phases: a
   * sample of the node at each boundary, and the flood process told to prepare, go, stop and report.
   */
  private async send(current: Segment, frames: readonly string[]): Promise<{ samples: Sample[]; loops: PhaseLoop[] }> {
    const { floodRate, floodBatch, floodSockets, args } = this.s
    const { phases, durationMs: D, T0 } = current
    const { socketOf, node } = this.live
    const samples: Sample[] = []
    const loops: PhaseLoop[] = phases.map(() => ({
      delay: monitorEventLoopDelay({ resolution: 5 }),
      lateMax: 0,
      late10: 0
    }))
    let phaseIndex = -1
    const boundary = (i: number): void => {
      const ending = phases[i - 1]
      const starting = phases[i]
      if (ending?.role === 'flood') this.tell({ cmd: 'stop' })
      if (ending?.role === 'recovery') this.tell({ cmd: 'collect' })
      if (starting?.role === 'prep')
        this.tell({
          cmd: 'prepare',
          mode: starting.flood!,
          url: node.url,
          rate: floodRate,
          batch: floodBatch,
          reconnect: !args['no-reconnect'],
          sockets: floodSockets[starting.flood!],
          address: args['flood-address']
        })
      if (starting?.role === 'flood') this.tell({ cmd: 'go' })
      if (ending) loops[i - 1]!.delay.disable()
      if (starting) loops[i]!.delay.enable()
      phaseIndex = i
      this.client.currentPhase = starting?.name ?? null
      void this.sample().then(x => {
        samples[i] = x
      })
    }
    phases.forEach((p, i) => {
      setTimeout(() => boundary(i), Math.max(0, T0 + p.start - performance.now()))
    })
    const ended = new Promise<void>(resolve =>
      setTimeout(() => {
        boundary(phases.length)
        resolve()
      }, D)
    )
    await this.client.sendBeats(current, frames, socketOf, () => loops[phaseIndex])
    await ended
    return { samples, loops }
  }

  /** The last answers (and the node's backlog) before anything else is measured; then the flood's figures. */
  private async drain(current: Segment): Promise<{ drainS: number; stillUnacked: number; idleAfter: number }> {
    const drainStarted = performance.now()
    const unacked = (): number => this.client.unacked(current)
    while (unacked() > 0 && performance.now() - drainStarted < this.s.drainMs) await sleep(250)
    const drainS = (performance.now() - drainStarted) / 1000
    const stillUnacked = unacked()
    const idleAfter = await waitIdle(this.live.pid, this.idleShare, 60_000)
    if (this.flood && current.phases.some(p => p.role === 'flood')) {
      const f = current.phases.find(p => p.role === 'flood')!.flood!
      if (!this.floodStats[f]) {
        this.tell({ cmd: 'stop' })
        this.tell({ cmd: 'collect' })
        await new Promise<void>(resolve => {
          this.floodWaiter = resolve
          setTimeout(resolve, 10_000)
        })
      }
    }
    return { drainS, stillUnacked, idleAfter }
  }

  // -- After the run

  /** The last node's state of a few entities (ValidClient.checkState). */
  checkState(): Promise<void> {
    return this.client.checkState(this.live.node.url)
  }

  /** Shutdown: the flood process, then the node. */
  async stop(): Promise<void> {
    this.tell({ cmd: 'exit' })
    await this.tearDown(this.live)
  }
}
