import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import test from 'ava'
import { facts } from '../../src/services/registry/attestation-facts.js'
import { TrustIdIndex } from '../../src/services/registry/trust-id-index.js'
import { EDGE_BYTES, edgeFacts, edgeIssuer, edgeSubject, encodeEdge } from '../../src/store/attestation-edges.js'
import type { AttestationRecord } from '../../src/store/records.js'
import { RegistryStore } from '../../src/store/registry-store.js'

const hex = (n: number): string => n.toString(16).padStart(32, '0')

function attestation(n: number, issuer: string, subject: string): AttestationRecord {
  return {
    attestation_id: `zns:att:${hex(n)}`,
    issuer,
    subject,
    kind: 'interaction',
    outcome: 'success',
    issued_at: '2026-11-29T12:00:00.000Z',
    nonce: hex(n),
    evidence: null,
    comment: null,
    signature: `ed25519:${'A'.repeat(86)}==`,
    accepted_at: '2026-11-29T12:00:01.000Z',
    home_registry: 'localhost',
    payment_check: 'none'
  }
}

test('attestations are found by subject and by issuer, a page at a time, and survive a reopening', async t => {
  const dir = await mkdtemp(join(tmpdir(), 'attestations-'))
  const [a, b, c] = [`zns:${hex(1)}`, `zns:${hex(2)}`, `zns:dev:${hex(3)}`]
  try {
    let store = await RegistryStore.open(dir)
    await store.commit(tx => {
      for (let n = 0; n < 5; n++) tx.putAttestation(attestation(n, c, a))
      tx.putAttestation(attestation(10, a, b))
      t.true(tx.hasAttestation(`zns:att:${hex(10)}`))
    })
    t.deepEqual(
      store.attestationsOf(a, { after: null, limit: 3 }).map(r => r.nonce),
      [0, 1, 2].map(hex)
    )
    t.deepEqual(
      store.attestationsOf(a, { after: `zns:att:${hex(2)}`, limit: 10 }).map(r => r.nonce),
      [3, 4].map(hex)
    )
    t.deepEqual(
      store.attestationsBy(a, { after: null, limit: 10 }).map(r => r.subject),
      [b]
    )
    t.is(store.attestationCountBy(c), 5)
    t.is(store.attestationCountBy(b), 0)
    await store.close()
    store = await RegistryStore.open(dir)
    t.is([...store.allAttestations()].length, 6)
    t.is(store.getAttestation(`zns:att:${hex(10)}`)?.issuer, a)
    await store.close()
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
})

test('an attestation’s trust edge carries what its weight depends on and its subject, exactly', t => {
  const records: AttestationRecord[] = [
    attestation(1, `zns:dev:${hex(3)}`, `zns:${hex(1)}`),
    {
      ...attestation(2, `zns:${hex(1)}`, `zns:svc:${hex(7)}`),
      kind: 'dispute',
      outcome: null,
      evidence: { message_id: 'm', payment: { network: 'eip155:8453', transaction: `0x${'a'.repeat(64)}` } },
      payment_check: 'settled'
    },
    { ...attestation(3, `zns:${hex(1)}`, `zns:${hex(9)}`), outcome: 'failure', payment_check: 'refuted' }
  ]
  const index = new TrustIdIndex([`zns:${hex(1)}`, `zns:${hex(9)}`, `zns:dev:${hex(3)}`, `zns:svc:${hex(7)}`])
  for (const r of records) {
    const edge = encodeEdge(r)!
    t.is(edge.value.length, EDGE_BYTES)
    t.deepEqual(edgeFacts(edge.value), facts(r))
    t.is(index.getRaw(edgeSubject(edge.value)), index.get(r.subject))
    t.is(index.getRaw(edgeIssuer(edge.key)), index.get(r.issuer))
  }
})
