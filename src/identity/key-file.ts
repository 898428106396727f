/**
 * Key files as `registry-node keys` writes them: JSON with the 32-byte seed in base64, the public
 * key and IDs, and for HD entity keys the index and the developer proof. Written with mode 0600
 * and never overwritten.
 */
import { access, mkdir, readFile, writeFile } from 'node:fs/promises'
import { dirname } from 'node:path'
import { formatKey } from './encoding.js'
import { deriveAgentKeyPair, developerProofMessage } from './hd.js'
import { deriveId } from './ids.js'
import { keyPairFromSeed, sign, type KeyPair } from './keys.js'

export interface DeveloperProofFile {
  developer_public_key: string
  agent_public_key: string
  index: number
  signature: string
}

export interface KeyFile {
  type: 'developer' | 'entity'
  public_key: string
  seed: string
  developer_id?: string
  entity_ids?: { agent: string; service: string }
  index?: number
  developer_proof?: DeveloperProofFile
}

export class KeyFileError extends Error {
  override name = 'KeyFileError'
}

export async function readKeyFile(path: string): Promise<{ file: KeyFile; keyPair: KeyPair }> {
  let file: KeyFile
  try {
    file = JSON.parse(await readFile(path, 'utf8')) as KeyFile
  } catch (err) {
    throw new KeyFileError(`cannot read key file ${path}: ${(err as Error).message}`)
  }
  const seed = Buffer.from(typeof file.seed === 'string' ? file.seed : '', 'base64')
  if (seed.length !== 32) throw new KeyFileError(`${path} is not a key file (seed must be 32 bytes of base64)`)
  return { file, keyPair: keyPairFromSeed(seed) }
}

export async function writeKeyFile(path: string, file: KeyFile): Promise<void> {
  if (
    await access(path).then(
      () => true,
      () => false
    )
  )
    throw new KeyFileError(`${path} exists; refusing to overwrite a key file`)
  await mkdir(dirname(path), { recursive: true })
  await writeFile(path, `${JSON.stringify(file, null, 2)}\n`, { mode: 0o600 })
}

export function developerKeyFile(keyPair: KeyPair): KeyFile {
  return {
    type: 'developer',
    developer_id: deriveId('developer', keyPair.publicKey),
    public_key: formatKey(keyPair.publicKey),
    seed: keyPair.seed.toString('base64')
  }
}

/** The HD entity key at `index` of a developer key, with its developer proof. */
export function entityKeyFile(developer: KeyPair, index: number): { file: KeyFile; keyPair: KeyPair } {
  const keyPair = deriveAgentKeyPair(developer.seed, index)
  const proof: DeveloperProofFile = {
    developer_public_key: formatKey(developer.publicKey),
    agent_public_key: formatKey(keyPair.publicKey),
    index,
    signature: sign(developer, developerProofMessage(keyPair.publicKey, index))
  }
  const file: KeyFile = {
    type: 'entity',
    public_key: formatKey(keyPair.publicKey),
    seed: keyPair.seed.toString('base64'),
    developer_id: deriveId('developer', developer.publicKey),
    entity_ids: { agent: deriveId('agent', keyPair.publicKey), service: deriveId('service', keyPair.publicKey) },
    index,
    developer_proof: proof
  }
  return { file, keyPair }
}
