/**
 * The registry client as the entity runtime and the `call`, `search` and `resolve` commands use it:
 * the typed client (src/client/) plus the writes the runtime signs itself and sends as they are.
 */
import { randomBytes } from 'node:crypto'
import { canonicalJson, withoutSignature } from '../identity/canonical-json.js'
import { type KeyPair, sign } from '../identity/keys.js'
import { RegistryClient as TypedRegistryClient } from '../client/registry-client.js'

export { RegistryRequestError, RegistryUnreachableError } from '../client/request.js'

export type EntityView = Record<string, unknown> & {
  entity_id: string
  public_key: string
  entity_url?: string | null
  status?: string
}

export class RegistryClient extends TypedRegistryClient {
  /** Sends a registration signed already; a 409 (exists, or deregistered) is answered, not thrown. */
  register(body: Record<string, unknown>): Promise<{ status: number; body: Record<string, unknown> }> {
    return this.answer('POST', '/v1/entities', { body, allow: [409] })
  }

  /** Sends an update signed already (its body `signature`). */
  update(id: string, body: Record<string, unknown>): Promise<Record<string, unknown>> {
    return this.send('PUT', `/v1/entities/${encodeURIComponent(id)}`, { body })
  }

  /**
   * States the outcome of a call to `subject` as `issuer` (an entity or developer registered there,
   * whose key this is), with the call's message ID and, for a paid call, its settlement as evidence.
   */
  attest(
    keyPair: KeyPair,
    statement: {
      issuer: string
      subject: string
      outcome: 'success' | 'failure'
      messageId?: string
      payment?: { network: string; transaction: string }
    }
  ): Promise<Record<string, unknown>> {
    const evidence = {
      ...(statement.messageId ? { message_id: statement.messageId } : {}),
      ...(statement.payment ? { payment: statement.payment } : {})
    }
    const unsigned = withoutSignature({
      issuer: statement.issuer,
      subject: statement.subject,
      kind: 'interaction',
      outcome: statement.outcome,
      issued_at: new Date().toISOString(),
      nonce: randomBytes(16).toString('hex'),
      ...(Object.keys(evidence).length > 0 ? { evidence } : {})
    })
    return this.send('POST', '/v1/attestations', {
      body: { ...unsigned, signature: sign(keyPair, canonicalJson(unsigned)) }
    })
  }

  /** Deregisters in the deployed form, as the SDKs' runtimes do: Authorization Bearer over the entity ID. */
  async deregister(id: string, keyPair: KeyPair): Promise<void> {
    await this.deregisterEntity(id, keyPair, { form: 'deployed' })
  }
}
