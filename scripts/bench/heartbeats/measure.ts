/**
 * What the heartbeat benchmark reads from /proc (Linux): a process becoming idle, the whole
 * machine's busy time, a process's CPU per thread, and the sample taken at each phase boundary
 * (the node's CPU, threads and RSS, the client's and the flood process's CPU, the machine's).
 */
import { readdir, readFile } from 'node:fs/promises'
import { sleep } from '../../lib/mesh-bench.js'
import { cpuSeconds, memoryMiB } from '../../lib/node-process.js'

/** Waits until the process uses less than `share` of a core over a second (at most `limitMs`); the time it took. */
export async function waitIdle(pid: number, share: number, limitMs = 120_000): Promise<number> {
  const started = performance.now()
  let previous = await cpuSeconds(pid)
  while (performance.now() - started < limitMs) {
    await sleep(1000)
    const now = await cpuSeconds(pid)
    if (now - previous < share) return performance.now() - started
    previous = now
  }
  return Infinity
}

/** CPU seconds the whole machine has been busy, all cores (/proc/stat). */
export async function machineBusy(): Promise<number> {
  const line = (await readFile('/proc/stat', 'utf8')).split('\n', 1)[0]!
  const [user, nice, system, , , irq, softirq, steal] = line.trim().split(/\s+/).slice(1).map(Number) as number[]
  return (user! + nice! + system! + irq! + softirq! + (steal ?? 0)) / 100
}

/** CPU seconds per thread of a process (/proc/<pid>/task; the main thread's id is the pid). */
export async function threadCpu(pid: number): Promise<Map<number, number>> {
  const out = new Map<number, number>()
  for (const tid of await readdir(`/proc/${pid}/task`).catch(() => [] as string[])) {
    const stat = await readFile(`/proc/${pid}/task/${tid}/stat`, 'utf8').catch(() => null)
    if (!stat) continue
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    out.set(Number(tid), (Number(fields[11]) + Number(fields[12])) / 100)
  }
  return out
}

export interface Sample {
  perf: number
  hrUs: number
  nodeCpu: number
  threads: Map<number, number>
  clientCpu: number
  floodCpu: number
  machine: number
  nodeRss: number
}

/** The node (`pid`), this process, the flood process (`floodPid`, if any) and the machine, now. */
export async function sample(pid: number, floodPid: number | undefined): Promise<Sample> {
  const perf = performance.now()
  const hrUs = Number(process.hrtime.bigint() / 1000n)
  const cpu = process.cpuUsage()
  const [nodeCpu, threads, floodCpu, machine, mem] = await Promise.all([
    cpuSeconds(pid),
    threadCpu(pid),
    floodPid ? cpuSeconds(floodPid).catch(() => 0) : 0,
    machineBusy(),
    memoryMiB(pid)
  ])
  return {
    perf,
    hrUs,
    nodeCpu,
    threads,
    clientCpu: (cpu.user + cpu.system) / 1e6,
    floodCpu,
    machine,
    nodeRss: mem.rss
  }
}
