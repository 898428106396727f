import { Type, type TSchema } from '@sinclair/typebox'

export const PublicKey = Type.String({
  pattern: '^(ed25519:)?[A-Za-z0-9+/]{43}=$',
  errorMessage: 'must be an Ed25519 public key: ed25519:<base64 of 32 bytes>',
  description: 'ed25519:<standard base64 of the 32-byte key>; the prefix is optional on input',
  example: 'ed25519:Rf+eqPiJ8cVhLxf5Gs3FrayrBIzz/QpRua+TDPdGnd0='
})

export const Signature = Type.String({
  pattern: '^ed25519:[A-Za-z0-9+/]{86}==$',
  errorMessage: 'must be an Ed25519 signature: ed25519:<base64 of 64 bytes> (the prefix is mandatory)',
  description: 'ed25519:<standard base64 of the 64-byte signature>'
})

export const EntityId = Type.String({
  pattern: '^zns:(svc:)?[0-9a-f]{32}$',
  description: 'zns:<32 hex> (agent) or zns:svc:<32 hex> (service)'
})
export const DeveloperId = Type.String({
  pattern: '^zns:dev:[0-9a-f]{32}$',
  errorMessage: 'must be a developer ID: zns:dev:<32 lowercase hex>',
  description: 'zns:dev:<32 hex>'
})

export const Timestamp = Type.String({ format: 'date-time', description: 'ISO 8601 UTC' })

export const Uint32 = Type.Integer({
  minimum: 0,
  maximum: 0xffff_ffff,
  errorMessage: 'must be an unsigned 32-bit integer'
})

// https://semver.org/#is-there-a-suggested-regular-expression-regex-to-check-a-semver-string
export const SEMVER_PATTERN =
  '^(0|[1-9]\\d*)\\.(0|[1-9]\\d*)\\.(0|[1-9]\\d*)(?:-((?:0|[1-9]\\d*|\\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\\.(?:0|[1-9]\\d*|\\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\\+([0-9a-zA-Z-]+(?:\\.[0-9a-zA-Z-]+)*))?$'

export const Semver = Type.String({
  pattern: SEMVER_PATTERN,
  maxLength: 64,
  errorMessage: 'must be a semantic version such as 1.2.3',
  example: '0.1.0'
})

/** A version where deployed clients send "" for none (the Python SDK's register_name): "" means absent. */
export const SemverOrEmpty = Type.String({
  pattern: `^$|${SEMVER_PATTERN}`,
  maxLength: 64,
  errorMessage: 'must be a semantic version such as 1.2.3 (or "" for none)',
  example: '0.1.0'
})

export const Url = Type.String({ maxLength: 2048, description: 'absolute URL (at most 2048 characters)' })

export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()])

export const ErrorBody = Type.Object(
  {
    error: Type.String({ description: 'machine code, see the error table' }),
    message: Type.String(),
    field: Type.Optional(Type.String({ description: 'the offending field, when one applies' }))
  },
  { $id: 'Error' }
)

export const Message = Type.Object({ message: Type.String() }, { additionalProperties: true })

/** What a PUT answers beside the updated record: the fields it changed (none: it sent nothing to change). */
export const Changed = Type.Object({
  changed: Type.Array(Type.String(), {
    description: 'fields whose value this update changed; empty when the body changed nothing'
  })
})
