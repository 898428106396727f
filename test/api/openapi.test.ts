import test from 'ava'
import { Validator } from '@seriousme/openapi-schema-validator'
import { openApiServers } from '../../src/api/openapi.js'
import { NODE_VERSION } from '../../src/version.js'
import { http, testNodes, type TestNode } from '../helpers/node.js'
import { collectRefs } from '../helpers/shared.js'

const { start, stopAll } = testNodes()

interface Operation {
  parameters?: { name: string; in: string; required: boolean; schema: Record<string, unknown> }[]
  requestBody?: { required: boolean; content: Record<string, { schema: Record<string, unknown> }> }
  responses: Record<string, { description: string; content?: Record<string, { schema: Record<string, unknown> }> }>
}
type Paths = Record<string, Record<string, Operation>>

let node: TestNode
let doc: {
  openapi: string
  info: { version: string }
  servers: { url: string }[]
  paths: Paths
  components: { schemas: Record<string, { properties?: Record<string, unknown>; required?: string[] }> }
}

test.before(async () => {
  node = await start()
  const res = await http(node.url, 'GET', '/openapi.json')
  if (res.status !== 200) throw new Error(`GET /openapi.json: ${res.status}`)
  doc = res.body
})

test.after.always(stopAll)

/** `["/v1/info get", …]`: the operations of a document's paths under /v1, sorted. */
const operationsUnderV1 = (paths: Paths): string[] =>
  Object.entries(paths)
    .filter(([path]) => path.startsWith('/v1/'))
    .flatMap(([path, ops]) => Object.keys(ops).map(method => `${path} ${method}`))
    .sort()

test('GET /openapi.json is a valid OpenAPI 3.1 document', async t => {
  const validator = new Validator()
  const result = await validator.validate(doc)
  t.true(result.valid, JSON.stringify(result.errors, null, 2))
  t.is(result.errors, undefined)
  t.is(validator.version, '3.1')
  t.is(doc.openapi, '3.1.0')
  t.is(doc.info.version, NODE_VERSION)
  t.deepEqual(doc.servers, [{ url: node.url }, { url: node.url.replace(/^http:/, 'https:') }])
})

test('it lists every /v1 route with its methods, as the Swagger document and the router do', async t => {
  const swagger = (await http(node.url, 'GET', '/swagger/doc.json')).body as { paths: Paths }
  const operations = operationsUnderV1(doc.paths)
  t.true(operations.length >= 30)
  t.deepEqual(operations, operationsUnderV1(swagger.paths))
  t.deepEqual(Object.keys(doc.paths).sort(), Object.keys(swagger.paths).sort())
  // The router says which methods a path has (the Allow of a 405), independently of both documents.
  for (const [path, ops] of Object.entries(doc.paths).filter(([p]) => p.startsWith('/v1/'))) {
    const res = await fetch(node.url + path.replace(/\{\w+\}/g, 'x'), { method: 'PATCH' })
    await res.arrayBuffer()
    t.is(res.status, 405, path)
    const allowed = (res.headers.get('allow') ?? '').split(', ').sort()
    t.deepEqual(
      allowed,
      Object.keys(ops)
        .map(m => m.toUpperCase())
        .sort(),
      path
    )
  }
})

test('POST /v1/entities has its request body, its responses and the error body', t => {
  const post = doc.paths['/v1/entities']?.post
  if (!post) return t.fail('no POST /v1/entities')
  t.true(post.requestBody?.required)
  t.deepEqual(post.requestBody?.content['application/json']?.schema, {
    $ref: '#/components/schemas/RegistrationRequest'
  })
  const registration = doc.components.schemas.RegistrationRequest
  t.truthy(registration?.properties?.public_key)
  t.true(registration?.required?.includes('signature'))
  t.truthy(post.responses['201']?.content?.['application/json'])
  for (const status of ['400', '401', '429'])
    t.deepEqual(post.responses[status]?.content?.['application/json']?.schema, { $ref: '#/components/schemas/Error' })
  const error = doc.components.schemas.Error
  t.deepEqual(Object.keys(error?.properties ?? {}), ['error', 'message', 'field'])
  t.deepEqual(error?.required, ['error', 'message'])
  const byId = doc.paths['/v1/entities/{entity_id}']?.get
  t.true(byId?.parameters?.some(p => p.name === 'entity_id' && p.in === 'path' && p.required))
})

test('schemas are JSON Schema 2020-12: components by reference, no TypeBox or Swagger leftovers', t => {
  const text = JSON.stringify(doc)
  for (const leftover of ['"$id"', '"x-nullable"', '"errorMessage"', '"example"', '"patternProperties":{"^(.*)$"'])
    t.false(text.includes(leftover), leftover)
  const refs = collectRefs(doc)
  t.true(refs.length > 0)
  const dangling = refs.filter(ref => !doc.components.schemas[ref.replace('#/components/schemas/', '')])
  t.deepEqual([...new Set(dangling)], [], 'every $ref names a component')
  // A nullable field keeps its type and admits null, instead of Swagger's x-nullable.
  t.deepEqual(
    (doc.components.schemas.RegistrationRequest?.properties?.summary as { type: unknown } | undefined)?.type,
    ['string', 'null']
  )
})

test('servers: public_url when set, else the Host the request named, never a Host that is not one', t => {
  t.deepEqual(openApiServers('https://registry.example.com/', 'ignored:1'), [{ url: 'https://registry.example.com' }])
  t.deepEqual(openApiServers('', '[::1]:8080'), [{ url: 'http://[::1]:8080' }, { url: 'https://[::1]:8080' }])
  t.deepEqual(openApiServers('', 'evil.example/"><script>'), [{ url: '/' }])
  t.deepEqual(openApiServers('', undefined), [{ url: '/' }])
})

test('the explorer opens this document, the Swagger 2.0 one still selectable', async t => {
  const page = String((await http(node.url, 'GET', '/swagger/index.html')).body)
  t.true(page.includes("url: '../openapi.json'"))
  t.true(page.includes("url: './doc.json'"))
})
