import { mkdir, readFile, rm, writeFile } from 'node:fs/promises'
import { dirname } from 'node:path'
import { formatKey } from './encoding.js'
import { deriveId } from './ids.js'
import { generateKeyPair, keyPairFromSeed, type KeyPair } from './keys.js'

/** The node's own Ed25519 identity; in the mesh issue it is also the libp2p key. */
export interface NodeIdentity {
  keyPair: KeyPair
  registryId: string
  publicKey: string
  /** The node's public host, stamped on the operations it accepts (set by the node from its config). */
  host?: string
}

interface NodeKeyFile {
  type: 'registry-node-key'
  registry_id: string
  public_key: string
  seed: string
  created_at: string
}

export function identityFromKeyPair(keyPair: KeyPair): NodeIdentity {
  return { keyPair, registryId: deriveId('registry', keyPair.publicKey), publicKey: formatKey(keyPair.publicKey) }
}

export async function createNodeKeyFile(path: string): Promise<NodeIdentity> {
  const identity = identityFromKeyPair(generateKeyPair())
  const file: NodeKeyFile = {
    type: 'registry-node-key',
    registry_id: identity.registryId,
    public_key: identity.publicKey,
    seed: identity.keyPair.seed.toString('base64'),
    created_at: new Date().toISOString()
  }
  await mkdir(dirname(path), { recursive: true })
  // wx: never overwrite an existing identity. A write that fails part way (a full disk) leaves no
  // empty file behind to block the next start.
  await writeFile(path, `${JSON.stringify(file, null, 2)}\n`, { mode: 0o600, flag: 'wx' }).catch(
    async (err: NodeJS.ErrnoException) => {
      if (err.code !== 'EEXIST') await rm(path, { force: true })
      throw err
    }
  )
  return identity
}

export async function loadNodeKeyFile(path: string): Promise<NodeIdentity> {
  const file = JSON.parse(await readFile(path, 'utf8')) as Partial<NodeKeyFile>
  const seed = Buffer.from(file.seed ?? '', 'base64')
  if (seed.length !== 32) throw new Error(`${path}: not a node key file (seed must be 32 bytes of base64)`)
  const identity = identityFromKeyPair(keyPairFromSeed(seed))
  if (file.public_key !== undefined && file.public_key !== identity.publicKey)
    throw new Error(`${path}: public_key does not match seed`)
  return identity
}

/** Loads the node key, creating it on first start. */
/** The node key's file name inside the data directory. */
export const NODE_KEY_FILE = 'node-key.json'

export async function loadOrCreateNodeIdentity(path: string): Promise<NodeIdentity> {
  try {
    return await loadNodeKeyFile(path)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
    return createNodeKeyFile(path)
  }
}
