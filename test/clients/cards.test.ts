/**
 * Cards signed by the deployed SDKs' runtimes, as they served them (test/fixtures/clients/cards/):
 * A2A JWS `signatures[]` whose signing input is `protected '.' canonical JSON` with the payload not
 * base64url-encoded and no `"b64": false` header, and, from Python, numbers written as Python
 * writes them (a float price 2 as `2.0`). The node judges each verified, and a tampered copy invalid.
 */
import { readdirSync, readFileSync } from 'node:fs'
import test from 'ava'
import { verifyCard } from '../../src/identity/card-signature.js'

interface CardVector {
  client: string
  version: string
  source: string
  how: string
  entity_id: string
  public_key: string
  text: string
}

const dir = new URL('../fixtures/clients/cards/', import.meta.url)
const vectors = readdirSync(dir).map(
  file => [file, JSON.parse(readFileSync(new URL(file, dir), 'utf8')) as CardVector] as const
)

for (const [file, v] of vectors)
  test(`${v.client} ${v.version} card (${file}): verified against the registered key; tampered, invalid`, t => {
    const card = JSON.parse(v.text) as Record<string, unknown>
    t.like(verifyCard(card, v.public_key, v.text), { verification: 'verified' })
    const tampered = v.text.replace(/"name":"([^"]*)"/, '"name":"$1 (edited)"')
    t.not(tampered, v.text)
    t.like(verifyCard(JSON.parse(tampered), v.public_key, tampered), { verification: 'invalid' })
    t.like(verifyCard(card, 'ed25519:iojj3XQJ8ZX9UtstPLpdcspnCb8dlBIb83SIAbQPb1w=', v.text), {
      verification: 'invalid'
    })
  })

test("a Python card's 2.0 verifies only from its text: the parsed value writes it 2", t => {
  const v = vectors.find(([file]) => file.includes('whole-dollar'))?.[1]
  if (!v) return t.fail('the whole-dollar vector is missing')
  t.true(v.text.includes('2.0'))
  t.like(verifyCard(JSON.parse(v.text), v.public_key), { verification: 'invalid' })
  t.like(verifyCard(JSON.parse(v.text), v.public_key, v.text), { verification: 'verified' })
})
