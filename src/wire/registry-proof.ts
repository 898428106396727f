import { Type, type Static } from '@sinclair/typebox'
import { Signature, Timestamp } from './common.js'

export const RegistryProofSchema = Type.Object(
  {
    type: Type.Literal('registry-identity-proof'),
    version: Type.Literal('1'),
    domain: Type.String({ description: 'the host name this node serves (lowercase)', example: 'registry.example.com' }),
    registry_id: Type.String({
      pattern: '^zns:registry:[0-9a-f]{32}$',
      description: 'zns:registry:<32 hex>, derived from ed25519_public_key'
    }),
    ed25519_public_key: Type.String({
      pattern: '^ed25519:[A-Za-z0-9+/]{43}=$',
      description: 'the node key: ed25519:<standard base64 of 32 bytes>'
    }),
    tls_spki_fingerprint: Type.Optional(
      Type.String({
        pattern: '^sha256:[0-9a-f]{64}$',
        description:
          'sha256:<lowercase hex> of the DER SubjectPublicKeyInfo of the certificate served for domain (absent when the node has no tls.cert_file)'
      })
    ),
    issued_at: Timestamp,
    expires_at: Timestamp,
    signature: Signature
  },
  {
    $id: 'RegistryIdentityProof',
    description: '`signature` is by the node key over the canonical JSON of the proof without `signature`.'
  }
)
export type RegistryProofSchema = Static<typeof RegistryProofSchema>
