import { createSocket, type RemoteInfo } from 'node:dgram'
import type { AddressInfo } from 'node:net'

export interface TestDnsServer {
  /** `127.0.0.1:<port>`, the form `Resolver#setServers` takes. */
  address: string
  /** Sets (replaces) the TXT records of a name; each record is its list of character-strings. */
  set(name: string, txt: string[][]): void
  close(): Promise<void>
}

const TYPE_TXT = 16
const TYPE_OPT = 41
const CLASS_IN = 1
const RCODE_NOERROR = 0
const RCODE_FORMERR = 1
const RCODE_NXDOMAIN = 3
const RCODE_NOTIMP = 4
/** Largest UDP answer without EDNS (RFC 1035 §4.2.1). */
const UDP_LIMIT = 512

interface Question {
  /** Lowercased, dot-separated, no trailing dot. */
  name: string
  type: number
  cls: number
  /** The question section exactly as received, echoed back in the answer. */
  raw: Buffer
}

interface Query {
  id: number
  flags: number
  question: Question
  /** UDP payload size of the client's EDNS OPT record, when it sent one. */
  ednsSize: number | undefined
}

function normalize(name: string): string {
  return name.toLowerCase().replace(/\.$/, '')
}

/** Reads a (possibly compressed) domain name at `offset`; returns it and the offset after it in the packet. */
function readName(msg: Buffer, offset: number): { name: string; next: number } {
  const labels: string[] = []
  let pos = offset
  let next = -1
  for (let jumps = 0; ; ) {
    const len = msg.readUInt8(pos)
    if (len === 0) {
      pos += 1
      break
    }
    if ((len & 0xc0) === 0xc0) {
      if (++jumps > 16) throw new Error('compression loop')
      if (next === -1) next = pos + 2
      pos = msg.readUInt16BE(pos) & 0x3fff
      continue
    }
    if ((len & 0xc0) !== 0) throw new Error('bad label type')
    if (pos + 1 + len > msg.length) throw new Error('label past the end')
    labels.push(msg.toString('latin1', pos + 1, pos + 1 + len))
    pos += 1 + len
  }
  return { name: labels.join('.'), next: next === -1 ? pos : next }
}

function parseQuery(msg: Buffer): Query | { id: number; flags: number; error: number } | null {
  if (msg.length < 12) return null
  const id = msg.readUInt16BE(0)
  const flags = msg.readUInt16BE(2)
  if (flags & 0x8000) return null // a response, not a query
  const qdcount = msg.readUInt16BE(4)
  const ancount = msg.readUInt16BE(6)
  const nscount = msg.readUInt16BE(8)
  const arcount = msg.readUInt16BE(10)
  if ((flags >> 11) & 0xf) return { id, flags, error: RCODE_NOTIMP } // only standard queries
  if (qdcount !== 1) return { id, flags, error: RCODE_FORMERR }
  try {
    const { name, next } = readName(msg, 12)
    const type = msg.readUInt16BE(next)
    const cls = msg.readUInt16BE(next + 2)
    const question: Question = { name: normalize(name), type, cls, raw: msg.subarray(12, next + 4) }
    let pos = next + 4
    let ednsSize: number | undefined
    for (let i = 0; i < ancount + nscount + arcount; i++) {
      const rr = readName(msg, pos)
      const rrType = msg.readUInt16BE(rr.next)
      const rrClass = msg.readUInt16BE(rr.next + 2)
      const rdlength = msg.readUInt16BE(rr.next + 8)
      if (i >= ancount + nscount && rrType === TYPE_OPT) ednsSize = Math.max(UDP_LIMIT, rrClass)
      pos = rr.next + 10 + rdlength
      if (pos > msg.length) throw new Error('record past the end')
    }
    return { id, flags, question, ednsSize }
  } catch {
    return { id, flags, error: RCODE_FORMERR }
  }
}

/** RDATA of one TXT record: each string as <length byte><bytes>; strings longer than 255 bytes are split. */
function txtRdata(strings: readonly string[]): Buffer {
  const parts: Buffer[] = []
  const chunks = strings.length === 0 ? [Buffer.alloc(0)] : strings.map(s => Buffer.from(s, 'utf8'))
  for (const chunk of chunks) {
    let rest = chunk
    do {
      const piece = rest.subarray(0, 255)
      parts.push(Buffer.from([piece.length]), piece)
      rest = rest.subarray(piece.length)
    } while (rest.length > 0)
  }
  return Buffer.concat(parts)
}

function header(
  id: number,
  queryFlags: number,
  rcode: number,
  counts: { qd: number; an: number; ar: number },
  truncated = false
): Buffer {
  const h = Buffer.alloc(12)
  h.writeUInt16BE(id, 0)
  // QR=1, opcode copied, AA=1, TC as told, RD copied, RA=1, rcode.
  const flags =
    0x8000 | (queryFlags & 0x7800) | 0x0400 | (truncated ? 0x0200 : 0) | (queryFlags & 0x0100) | 0x0080 | rcode
  h.writeUInt16BE(flags, 2)
  h.writeUInt16BE(counts.qd, 4)
  h.writeUInt16BE(counts.an, 6)
  h.writeUInt16BE(0, 8)
  h.writeUInt16BE(counts.ar, 10)
  return h
}

function optRecord(): Buffer {
  const rr = Buffer.alloc(11)
  rr.writeUInt8(0, 0) // root name
  rr.writeUInt16BE(TYPE_OPT, 1)
  rr.writeUInt16BE(4096, 3) // our UDP payload size
  rr.writeUInt32BE(0, 5) // extended rcode, version 0, flags
  rr.writeUInt16BE(0, 9) // no options
  return rr
}

function answer(query: Query, records: ReadonlyMap<string, string[][]>): Buffer {
  const { question } = query
  const txt = records.get(question.name)
  const rcode = txt === undefined ? RCODE_NXDOMAIN : RCODE_NOERROR
  const answers = txt !== undefined && question.type === TYPE_TXT && question.cls === CLASS_IN ? txt : []
  const rrs = answers.map(strings => {
    const rdata = txtRdata(strings)
    const rr = Buffer.alloc(12)
    rr.writeUInt16BE(0xc00c, 0) // pointer to the question's name
    rr.writeUInt16BE(TYPE_TXT, 2)
    rr.writeUInt16BE(CLASS_IN, 4)
    rr.writeUInt32BE(60, 6) // TTL
    rr.writeUInt16BE(rdata.length, 10)
    return Buffer.concat([rr, rdata])
  })
  const additional = query.ednsSize === undefined ? [] : [optRecord()]
  const full = Buffer.concat([
    header(query.id, query.flags, rcode, { qd: 1, an: rrs.length, ar: additional.length }),
    question.raw,
    ...rrs,
    ...additional
  ])
  if (full.length <= (query.ednsSize ?? UDP_LIMIT)) return full
  return Buffer.concat([
    header(query.id, query.flags, rcode, { qd: 1, an: 0, ar: additional.length }, true),
    question.raw,
    ...additional
  ])
}

/**
 * A real, minimal authoritative DNS server over UDP on 127.0.0.1 (ephemeral port) answering TXT
 * queries from `records` (names case-insensitive, trailing dot optional). Unknown names get NXDOMAIN;
 * known names asked for other types get NOERROR with no answers. Answers too large for the client's
 * UDP size are sent truncated (TC), as there is no TCP listener.
 */
export async function startDnsServer(records: Record<string, string[][]>): Promise<TestDnsServer> {
  const table = new Map<string, string[][]>()
  for (const [name, txt] of Object.entries(records)) table.set(normalize(name), txt)
  const socket = createSocket('udp4')
  socket.on('message', (msg: Buffer, rinfo: RemoteInfo) => {
    const query = parseQuery(msg)
    if (query === null) return
    const reply =
      'error' in query ? header(query.id, query.flags, query.error, { qd: 0, an: 0, ar: 0 }) : answer(query, table)
    socket.send(reply, rinfo.port, rinfo.address)
  })
  await new Promise<void>((resolve, reject) => {
    socket.once('error', reject)
    socket.bind(0, '127.0.0.1', () => {
      socket.off('error', reject)
      resolve()
    })
  })
  const { port } = socket.address() as AddressInfo
  return {
    address: `127.0.0.1:${port}`,
    set: (name, txt) => {
      table.set(normalize(name), txt)
    },
    close: () => new Promise<void>(resolve => socket.close(() => resolve()))
  }
}
