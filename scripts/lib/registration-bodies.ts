/**
 * Signed registrations for the write benchmarks, made before any node starts, as a new user's load
 * generator would send them (issue 16): agents of 100 developers (HD-derived, each with its
 * developer proof), even ones in the spec's signing form, odd ones in the deployed clients' (Go
 * field spellings, the signature over the fixed subset, docs/compatibility.md).
 */
import { type Agent, type ClientRequest, request } from 'node:http'
import { formatKey } from '../../src/identity/encoding.js'
import { deriveAgentKeyPair } from '../../src/identity/hd.js'
import { deriveId } from '../../src/identity/ids.js'
import { keyPairFromSeed } from '../../src/identity/keys.js'
import { developerKeys, developerProof, signDeployed, signedRegistration } from '../../src/testnet/entity-factory.js'

const DEVELOPERS = Array.from({ length: 100 }, (_, d) => developerKeys(keyPairFromSeed(Buffer.alloc(32, d + 1))))

/** `n` registrations of agents `from` … `from + n − 1`. */
export function makeBodies(n: number, from = 0): { id: string; body: string }[] {
  const out: { id: string; body: string }[] = []
  for (let i = from; i < from + n; i++) {
    const developer = DEVELOPERS[i % DEVELOPERS.length]!
    const index = Math.floor(i / DEVELOPERS.length)
    const a = deriveAgentKeyPair(developer.keyPair.seed, index)
    const content = {
      name: `Bench agent ${i}`,
      category: ['tools', 'finance', 'travel', 'research'][i % 4],
      summary: `Benchmark agent number ${i} that translates and summarises documents`,
      tags: ['bench', `t${i % 50}`],
      entity_url: `https://agent${i}.bench.example`
    }
    let body: Record<string, unknown>
    if (i % 2 === 0) body = signedRegistration(a, { ...content, type: 'agent' }, { developer, index })
    else {
      const proof = developerProof(developer, a, index)
      body = signDeployed(a, {
        ...content,
        public_key: formatKey(a.publicKey),
        developer_id: developer.id,
        entity_type: 'agent',
        developer_proof: {
          developer_public_key: developer.publicKey,
          entity_index: index,
          developer_signature: proof.signature
        }
      })
    }
    out.push({ id: deriveId('agent', a.publicKey), body: JSON.stringify(body) })
  }
  return out
}

/**
 * POSTs one registration body; resolves to the status (0 on a connection error). A write that fails
 * before any answer on a reused keep-alive connection (the server closed it idle as it was reused:
 * ECONNRESET, EPIPE) is sent once more on another connection, as RFC 9112 §9.3.1 allows and node's
 * `req.reusedSocket` documentation shows; a registration that did arrive answers 409 the second time.
 */
export async function postRegistration(agent: Agent, url: URL, body: string): Promise<number> {
  const first = await sendRegistration(agent, url, body)
  if (first.status !== undefined) return first.status
  if (!first.reused || (first.error !== 'ECONNRESET' && first.error !== 'EPIPE')) return 0
  return (await sendRegistration(agent, url, body)).status ?? 0
}

/** What one POST of a registration came to: the status, or the socket error; and whether the connection was reused. */
export type PostOutcome =
  | { status: number; error?: undefined; reused: boolean }
  | { status?: undefined; error: string; reused: boolean }

const errorCode = (err: NodeJS.ErrnoException): string => err.code ?? err.message

/** POSTs one registration body over `agent`; `split` sends it in two chunks 5 ms apart. */
export function sendRegistration(agent: Agent, url: URL, body: string, split = false): Promise<PostOutcome> {
  return new Promise(resolve => {
    const req: ClientRequest = request(
      {
        agent,
        host: url.hostname,
        port: url.port,
        path: '/v1/entities',
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }
      },
      res => {
        res.resume()
        res.on('end', () => resolve({ status: res.statusCode ?? 0, reused: req.reusedSocket }))
        res.on('error', err => resolve({ error: errorCode(err), reused: req.reusedSocket }))
      }
    )
    req.on('error', err => resolve({ error: errorCode(err), reused: req.reusedSocket }))
    if (!split) {
      req.end(body)
      return
    }
    const half = Math.floor(body.length / 2)
    req.write(body.slice(0, half))
    setTimeout(() => req.end(body.slice(half)), 5)
  })
}
