import type { Operation } from '../../src/store/records.js'

/** A node-signed status operation on `subject`, the n-th (its time and signatures follow n). */
export const statusOperation = (subject: string, n: number): Operation => ({
  kind: 'entity.status',
  subject,
  body: null,
  path: null,
  accepted_at: new Date(1_700_000_000_000 + n).toISOString(),
  origin: 'registry',
  auth: { carrier: 'node', signer: 'node', signature: `sig-${n}`, form: 'agent_status' },
  node_signature: `node-sig-${subject}-${n}`
})
