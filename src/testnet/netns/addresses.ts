/**
 * IPv4 for the netns modules: addresses as integers, the ranges this machine already uses, and the
 * choice (and lock) of a free /24 for a testnet.
 */
import { randomInt } from 'node:crypto'
import { writeFile } from 'node:fs/promises'
import { bin, run } from './iproute.js'
import { isExists, subnetLockFile } from './ownership.js'
import { NetnsError } from './types.js'

const BASE_RANGE = '10.211'

export function ipToInt(ip: string): number {
  const parts = ip.split('.').map(Number)
  if (parts.length !== 4 || parts.some(p => !Number.isInteger(p) || p < 0 || p > 255)) {
    throw new NetnsError(`not an IPv4 address: ${ip}`)
  }
  return (((parts[0] as number) * 256 + (parts[1] as number)) * 256 + (parts[2] as number)) * 256 + (parts[3] as number)
}

/** IPv4 ranges [first, last] already routed or assigned here, as specific as /16 or more. */
async function rangesInUse(): Promise<[number, number][]> {
  const ranges: [number, number][] = []
  const add = (cidr: string): void => {
    const [ip, lenText] = cidr.split('/')
    const len = lenText === undefined ? 32 : Number(lenText)
    if (ip === undefined || !Number.isInteger(len) || len < 16 || len > 32) return
    let value: number
    try {
      value = ipToInt(ip)
    } catch {
      return
    }
    const size = 2 ** (32 - len)
    const first = Math.floor(value / size) * size
    ranges.push([first, first + size - 1])
  }
  const addrs = await run([bin('ip'), '-o', '-4', 'addr', 'show'])
  for (const m of addrs.stdout.matchAll(/\binet (\d+\.\d+\.\d+\.\d+\/\d+)/g)) if (m[1] !== undefined) add(m[1])
  const routes = await run([bin('ip'), '-4', 'route', 'show', 'table', 'all'])
  for (const line of routes.stdout.split('\n')) {
    const token = line
      .trim()
      .split(/\s+/)
      .slice(0, 2)
      .find(t => /^\d+\.\d+\.\d+\.\d+(\/\d+)?$/.test(t))
    if (token !== undefined) add(token)
  }
  return ranges
}

/** Reserves a /24 ('a.b.c') by its lock file: the one asked for, or a free one of 10.211.0.0/16. */
export async function reserveSubnet(dir: string, prefix: string, wanted: string | undefined): Promise<string> {
  const used = await rangesInUse()
  const free = (base: string): boolean => {
    const first = ipToInt(`${base}.0`)
    return !used.some(([a, b]) => a <= first + 255 && b >= first)
  }
  const take = async (base: string): Promise<boolean> => {
    try {
      await writeFile(subnetLockFile(dir, base), prefix, { flag: 'wx' })
      return true
    } catch (err) {
      if (isExists(err)) return false
      throw err
    }
  }
  if (wanted !== undefined) {
    const m = /^(\d+\.\d+\.\d+)\.0\/24$/.exec(wanted.trim())
    if (m?.[1] === undefined)
      throw new NetnsError(`subnet ${JSON.stringify(wanted)}: expected a /24 such as 10.211.7.0/24`)
    const base = m[1]
    ipToInt(`${base}.0`)
    if (!free(base)) throw new NetnsError(`subnet ${wanted} overlaps an address or route already in use`)
    if (!(await take(base))) throw new NetnsError(`subnet ${wanted} is reserved by another testnet`)
    return base
  }
  const offset = randomInt(256)
  for (let k = 0; k < 256; k++) {
    const base = `${BASE_RANGE}.${(offset + k) % 256}`
    if (free(base) && (await take(base))) return base
  }
  throw new NetnsError(`no free /24 in ${BASE_RANGE}.0.0/16; pass options.subnet`)
}
