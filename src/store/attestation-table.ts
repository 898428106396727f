/**
 * Attestations as the store keeps them: the records by ID, and one index of them by subject and
 * by issuer (keys ['s', subject, id] and ['i', issuer, id]), written together with the record.
 */
import type { Database } from 'lmdb'
import { encodeEdge } from './attestation-edges.js'
import type { AttestationRecord } from './records.js'
import { type AttestationIndexKey, keyFits } from './store-databases.js'

export interface AttestationPage {
  /** IDs after this one (null: from the first). */
  after: string | null
  limit: number
}

export class AttestationTable {
  constructor(
    private readonly records: Database<AttestationRecord, string>,
    private readonly index: Database<null, AttestationIndexKey>,
    private readonly edges: Database<Buffer, Buffer>
  ) {}

  get(id: string): AttestationRecord | undefined {
    return keyFits(id) ? this.records.get(id) : undefined
  }

  has(id: string): boolean {
    return keyFits(id) && this.records.doesExist(id)
  }

  /** Inside a transaction: stores the record, its two index entries and its trust edge. */
  put(record: AttestationRecord): void {
    void this.records.put(record.attestation_id, record)
    const edge = encodeEdge(record)
    if (edge) void this.edges.put(edge.key, edge.value)
    void this.index.put(['s', record.subject, record.attestation_id], null)
    void this.index.put(['i', record.issuer, record.attestation_id], null)
  }

  /** Attestations of `subject` (side 's') or by `issuer` (side 'i'), in ID order. */
  of(side: 's' | 'i', party: string, page: AttestationPage): AttestationRecord[] {
    if (!keyFits(party)) return []
    const out: AttestationRecord[] = []
    for (const key of this.index.getKeys({
      start: [side, party, page.after ?? ''],
      end: [side, party, '\uffff']
    }) as Iterable<AttestationIndexKey>) {
      if (key[2] === page.after) continue
      const record = this.records.get(key[2])
      if (record) out.push(record)
      if (out.length >= page.limit) break
    }
    return out
  }

  /** How many attestations `issuer` made (an index range count). */
  countBy(issuer: string): number {
    if (!keyFits(issuer)) return 0
    return this.index.getKeysCount({ start: ['i', issuer, ''], end: ['i', issuer, '\uffff'] })
  }

  /** Whether any attestation is stored. */
  any(): boolean {
    for (const _ of this.records.getKeys({ limit: 1 })) return true
    return false
  }

  *all(): Iterable<AttestationRecord> {
    for (const { value } of this.records.getRange()) yield value
  }
}
