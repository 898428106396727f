/**
 * registry-node/client: a typed client for every HTTP route of a registry node's `/v1` API, with
 * writes signed from a key in the spec's form or the deployed clients'. See docs/guide/registry.md.
 */
export { RegistryClient, type RegistrationOptions, type WriteOptions } from './registry-client.js'
export {
  RegistryRequestError,
  RegistryUnreachableError,
  type ClientErrorCode,
  type HttpAnswer,
  type RequestOptions
} from './request.js'
export {
  readSigner,
  signBody,
  signDeletion,
  signUpdate,
  type DeletionOptions,
  type SignedForm,
  type Signer,
  type SigningKey
} from './signing.js'
export type * from './types.js'
export type { ErrorCode } from '../errors.js'
export type { KeyPair } from '../identity/keys.js'
export { keyPairFromSeed, generateKeyPair } from '../identity/keys.js'
