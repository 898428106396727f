/**
 * Restricted onboarding. An operator's site approves a developer through the admin webhook
 * (Bearer <webhook secret>); the node generates the developer's key, registers the developer with
 * a registration it signs with that key (so peers verify it like any other), and returns the key
 * encrypted for the client: base64(nonce ‖ AES-256-GCM ciphertext ‖ tag), key = SHA-256(state),
 * plaintext = base64 of the 64-byte private key (seed ‖ public key). The key is never stored.
 */
import { createCipheriv, createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import { RegistryError } from '../../errors.js'
import { canonicalJson } from '../../identity/canonical-json.js'
import { formatKey } from '../../identity/encoding.js'
import { deriveId } from '../../identity/ids.js'
import { generateKeyPair, sign } from '../../identity/keys.js'
import { ApprovalRequest } from '../../wire/names.js'
import { validate } from '../../wire/validate.js'
import type { ServiceComponents } from './components.js'
import { newDeveloper } from './developer-records.js'
import type { HandleService } from './handles.js'
import { acceptOperation } from './operations.js'

export interface OnboardingSettings {
  mode: 'open' | 'restricted'
  authUrl: string
  webhookSecret: string
}

export interface OnboardingComponents extends ServiceComponents {
  handles: HandleService
  onboarding: OnboardingSettings
}

export function encryptPrivateKey(seed: Buffer, publicKey: Buffer, state: string): string {
  const key = createHash('sha256').update(state, 'utf8').digest()
  const nonce = randomBytes(12)
  const cipher = createCipheriv('aes-256-gcm', key, nonce)
  const plaintext = Buffer.from(Buffer.concat([seed, publicKey]).toString('base64'), 'utf8')
  const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()])
  return Buffer.concat([nonce, ciphertext, cipher.getAuthTag()]).toString('base64')
}

export class OnboardingService {
  private readonly now: () => Date
  private readonly secretDigest: Buffer | null

  constructor(private readonly c: OnboardingComponents) {
    this.now = c.now ?? (() => new Date())
    this.secretDigest = c.onboarding.webhookSecret
      ? createHash('sha256').update(c.onboarding.webhookSecret).digest()
      : null
  }

  /** Admin endpoints: restricted mode with a secret, and `Authorization: Bearer <secret>` (compared in constant time). */
  checkAdmin(authorization: string | undefined): void {
    if (this.c.onboarding.mode !== 'restricted' || !this.secretDigest) throw new RegistryError('admin_unavailable')
    const token = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '')?.[1]
    if (!token || !timingSafeEqual(createHash('sha256').update(token).digest(), this.secretDigest))
      throw new RegistryError('admin_unauthorized')
  }

  async approve(
    rawBody: unknown,
    path: string
  ): Promise<{ developer_id: string; public_key: string; private_key_enc: string; handle: string | null }> {
    const body = validate(ApprovalRequest, rawBody)
    const keyPair = generateKeyPair()
    const developerId = deriveId('developer', keyPair.publicKey)
    const publicKey = formatKey(keyPair.publicKey)
    const registration = { name: body.name, public_key: publicKey }
    const signature = sign(keyPair, canonicalJson(registration))
    const raw = Buffer.from(JSON.stringify({ ...registration, signature }))
    const now = this.now().toISOString()
    const stateHash = createHash('sha256').update(body.state, 'utf8').digest('hex')
    const op = acceptOperation(
      this.c.identity,
      'developer.register',
      developerId,
      { raw, path },
      { carrier: 'body', signer: 'self', signature, form: 'spec' },
      now
    )
    await this.c.writes.run(() =>
      this.c.store.commit(tx => {
        if (tx.getApproval(stateHash))
          throw new RegistryError(
            'approval_exists',
            'This state was already approved; the client must start a new onboarding request.',
            'state'
          )
        tx.putApproval(stateHash, { developer_id: developerId, approved_at: now })
        tx.putDeveloper(
          newDeveloper(developerId, keyPair.publicKey, this.c.settings.host, now, { name: body.name, signature })
        )
        tx.appendOperation(op)
        if (body.handle) {
          const claim = { developer_id: developerId, handle: body.handle, public_key: publicKey }
          const claimSignature = sign(keyPair, canonicalJson(claim))
          this.c.handles.claimInTx(
            tx,
            developerId,
            body.handle,
            claimSignature,
            { raw: Buffer.from(JSON.stringify({ ...claim, signature: claimSignature })), body: claim, path },
            { carrier: 'body', signer: 'developer', signature: claimSignature, form: 'spec' },
            now
          )
        }
      })
    )
    this.c.bus.publish('developer_registered', {
      developer_id: developerId,
      name: body.name,
      approved: true,
      created: true
    })
    if (body.handle)
      this.c.bus.publish('handle_claimed', { handle: body.handle, developer_id: developerId, action: 'claim' })
    return {
      developer_id: developerId,
      public_key: publicKey,
      private_key_enc: encryptPrivateKey(keyPair.seed, keyPair.publicKey, body.state),
      handle: body.handle ?? null
    }
  }

  /** Where POST /v1/onboarding/request sends the browser: auth_url with state, callback_port and registry_url. */
  redirectUrl(params: { state?: unknown; callback_port?: unknown; name?: unknown }, registryUrl: string): string {
    if (this.c.onboarding.mode !== 'restricted') throw new RegistryError('onboarding_disabled')
    if (!this.c.onboarding.authUrl)
      throw new RegistryError('admin_unavailable', 'This node has no onboarding.auth_url configured.')
    const state = typeof params.state === 'string' ? params.state : ''
    if (state.length < 8 || state.length > 512)
      throw new RegistryError('validation_failed', 'state: must be 8 to 512 characters', 'state')
    const port =
      params.callback_port === undefined || params.callback_port === '' ? undefined : Number(params.callback_port)
    if (port !== undefined && (!Number.isInteger(port) || port < 1 || port > 65535))
      throw new RegistryError('validation_failed', 'callback_port: must be a port number', 'callback_port')
    const url = new URL(this.c.onboarding.authUrl)
    url.searchParams.set('state', state)
    if (port !== undefined) url.searchParams.set('callback_port', String(port))
    url.searchParams.set('registry_url', registryUrl)
    if (typeof params.name === 'string' && params.name) url.searchParams.set('name', params.name.slice(0, 100))
    return url.toString()
  }
}
