/**
 * Classic BPF programs for tc's cls_bpf in direct-action mode, which drop a node's egress packets to
 * chosen addresses: all of them (partition) or a random share (loss).
 */
import { NetnsError } from './types.js'

const BPF_LDH_ABS = 0x28
const BPF_LD_W_ABS = 0x20
const BPF_JEQ_K = 0x15
const BPF_JGE_K = 0x35
const BPF_RET_K = 0x06
const SKF_AD_RANDOM = 0xfffff000 + 56 // SKF_AD_OFF + SKF_AD_RANDOM: a fresh random u32 per packet
const TC_ACT_SHOT = 2
const TC_ACT_UNSPEC = 0xffffffff // -1: not mine, go on with the next filter

/**
 * tc's `bpf bytecode` text for a classic BPF program run in direct-action mode on egress (the frame
 * starts at the Ethernet header): IPv4 packets to one of `destinations` are dropped, every one when
 * `dropBelow` is null, else when a random u32 is below `dropBelow`; everything else passes on.
 */
export function dropProgram(destinations: readonly number[], dropBelow: number | null): string {
  const n = destinations.length
  if (n < 1 || n > 252) throw new NetnsError(`drop program for ${n} destinations`)
  const ins: [number, number, number, number][] = [
    [BPF_LDH_ABS, 0, 0, 12], // ethertype
    [BPF_JEQ_K, 0, n + 1, 0x0800], // not IPv4: pass (index n + 3)
    [BPF_LD_W_ABS, 0, 0, 30] // IPv4 destination
  ]
  destinations.forEach((d, k) => {
    ins.push([BPF_JEQ_K, n - k, 0, d])
  }) // match: index n + 4
  ins.push([BPF_RET_K, 0, 0, TC_ACT_UNSPEC])
  if (dropBelow === null) {
    ins.push([BPF_RET_K, 0, 0, TC_ACT_SHOT])
  } else {
    ins.push([BPF_LD_W_ABS, 0, 0, SKF_AD_RANDOM], [BPF_JGE_K, 1, 0, dropBelow], [BPF_RET_K, 0, 0, TC_ACT_SHOT])
    ins.push([BPF_RET_K, 0, 0, TC_ACT_UNSPEC])
  }
  return `${ins.length},${ins.map(i => i.join(' ')).join(',')}`
}

/** Random threshold for lossPercent: null = drop all, 0 = drop none. */
export function lossThreshold(lossPercent: number): number | null {
  if (lossPercent >= 100) return null
  return Math.round((lossPercent / 100) * 2 ** 32)
}
