/**
 * Signed registrations for the write benchmarks, made before any node starts: one developer's HD
 * agents, each body in the spec's signing form with its developer proof.
 */
import { Agent, request } from 'node:http'
import { canonicalJson } from '../../src/identity/canonical-json.js'
import { formatKey } from '../../src/identity/encoding.js'
import { deriveAgentKeyPair, developerProofMessage } from '../../src/identity/hd.js'
import { deriveId } from '../../src/identity/ids.js'
import { keyPairFromSeed, sign } from '../../src/identity/keys.js'

/** `n` registrations of agents `from` … `from + n − 1`. */
export function makeBodies(n: number, from = 0): { id: string; body: string }[] {
  const dev = keyPairFromSeed(Buffer.alloc(32, 7))
  const devKey = formatKey(dev.publicKey)
  const devId = deriveId('developer', dev.publicKey)
  const out: { id: string; body: string }[] = []
  for (let i = from; i < from + n; i++) {
    const a = deriveAgentKeyPair(dev.seed, i)
    const body: Record<string, unknown> = {
      name: `Bench agent ${i}`,
      type: 'agent',
      category: ['tools', 'finance', 'travel', 'research'][i % 4],
      summary: `Benchmark agent number ${i} that translates and summarises documents`,
      tags: ['bench', `t${i % 50}`],
      entity_url: `https://agent${i}.bench.example`,
      public_key: formatKey(a.publicKey),
      developer_id: devId,
      developer_proof: { developer_public_key: devKey, agent_public_key: formatKey(a.publicKey), index: i, signature: sign(dev, developerProofMessage(a.publicKey, i)) }
    }
    body.signature = sign(a, canonicalJson(body))
    out.push({ id: deriveId('agent', a.publicKey), body: JSON.stringify(body) })
  }
  return out
}

/** POSTs one registration body; resolves to the status (0 on a connection error). */
export function postRegistration(agent: Agent, url: URL, body: string): Promise<number> {
  return new Promise(resolve => {
    const req = request({ agent, host: url.hostname, port: url.port, path: '/v1/entities', method: 'POST', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, res => {
      res.resume()
      res.on('end', () => resolve(res.statusCode ?? 0))
    })
    req.on('error', () => resolve(0))
    req.end(body)
  })
}

