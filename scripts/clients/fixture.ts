/**
 * Turns a recording (scripts/clients/record.ts) into a fixture of test/fixtures/clients/: the
 * client's requests and frames byte for byte, with the headers that carry signatures, and the
 * node's answers. test/clients/ replays them against a fresh node.
 *
 *   npm run client-fixture -- --in session.jsonl --out test/fixtures/clients/x/session.json \
 *     --client "zyndai Python SDK" --version 0.6.1 --source "zyndai/zyndai-python-sdk@bc661a7" \
 *     [--setup-agent REGEX] [--note TEXT]
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname } from 'node:path'
import { parseArgs } from 'node:util'

const { values } = parseArgs({
  options: {
    in: { type: 'string' },
    out: { type: 'string' },
    client: { type: 'string' },
    version: { type: 'string' },
    source: { type: 'string' },
    'setup-agent': { type: 'string' },
    note: { type: 'string' }
  }
})
if (!values.in || !values.out || !values.client || !values.version || !values.source) {
  console.error('usage: fixture --in FILE.jsonl --out FILE.json --client NAME --version V --source REPO@COMMIT')
  process.exit(2)
}

/** Request headers that carry what the node checks: the signatures and the body's type. */
const KEPT = ['content-type', 'authorization', 'x-signature', 'accept']
const setup = values['setup-agent'] ? new RegExp(values['setup-agent']) : null

type Line = Record<string, unknown> & { id: number }
const lines = readFileSync(values.in, 'utf8')
  .split('\n')
  .filter(Boolean)
  .map(line => JSON.parse(line) as Line)

// One timeline: a WebSocket's events stay in place among the HTTP exchanges, as they happened.
const exchanges: Record<string, unknown>[] = []
for (const line of lines) {
  if (typeof line.ws === 'string') {
    if (line.ws === 'open') exchanges.push({ socket: line.id, open: line.path })
    else if (line.ws === 'client' || line.ws === 'server') exchanges.push({ socket: line.id, [line.ws]: line.frame })
    else if (line.ws === 'refused') exchanges.push({ socket: line.id, refused: line.status })
    else if (line.ws === 'error') {
      // Recordings of the first recorder: a refused upgrade as its error text.
      const status = /Unexpected server response: (\d+)/.exec(String(line.error))?.[1]
      if (status) exchanges.push({ socket: line.id, refused: Number(status) })
    }
    continue
  }
  const headers = line.headers as Record<string, string>
  exchanges.push({
    ...(setup?.test(headers['user-agent'] ?? '') ? { setup: true } : {}),
    method: line.method,
    path: line.path,
    headers: Object.fromEntries(KEPT.filter(h => headers[h] !== undefined).map(h => [h, headers[h]])),
    body: line.body,
    status: line.status,
    ...(line.response_headers ? { response_headers: line.response_headers } : {}),
    response: line.response
  })
}

mkdirSync(dirname(values.out), { recursive: true })
writeFileSync(
  values.out,
  `${JSON.stringify(
    {
      client: values.client,
      version: values.version,
      source: values.source,
      recorded_at: (lines[0]?.at as string | undefined)?.slice(0, 10) ?? null,
      ...(values.note ? { note: values.note } : {}),
      exchanges
    },
    null,
    1
  )}\n`
)
console.log(`${values.out}: ${exchanges.length} exchanges`)
