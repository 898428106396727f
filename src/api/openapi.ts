/**
 * The API description as OpenAPI 3.1 (GET /openapi.json), from the same route table and TypeBox
 * schemas as the Swagger 2.0 one (swagger.ts), for the client generators that no longer read 2.0.
 * 3.1 speaks JSON Schema 2020-12, which TypeBox already writes, so schemas go in nearly as they
 * are; the few changes are where 2020-12 or generators read a TypeBox habit differently.
 */
import { NODE_VERSION } from '../version.js'
import { ErrorBody } from '../wire/common.js'
import type { RouteDefinition } from '../http/http.js'
import { type ApiMeta, describeRoutes, type JsonSchema } from './route-description.js'

const COMPONENT = '#/components/schemas/'

/** Keywords whose value is a map of subschemas, a list of them, or one (2020-12's applicators). */
const SCHEMA_MAPS = new Set(['properties', 'patternProperties', '$defs', 'dependentSchemas'])
const SCHEMA_LISTS = new Set(['anyOf', 'allOf', 'oneOf', 'prefixItems'])
const SCHEMA_ONE = new Set([
  'items',
  'additionalProperties',
  'not',
  'contains',
  'propertyNames',
  'if',
  'then',
  'else',
  'unevaluatedItems',
  'unevaluatedProperties'
])

/** What TypeBox's Type.Record writes for any string key: generators only understand it as additionalProperties. */
const ANY_KEY = '^(.*)$'

const isSchema = (value: unknown): value is JsonSchema =>
  value !== null && typeof value === 'object' && !Array.isArray(value)

/**
 * Converts a TypeBox schema for the document, hoisting `$id` schemas into components. The `$id`
 * itself must go: in 2020-12 it would rebase every `$ref` beneath it onto a URI that does not exist.
 */
export function toOpenApiSchema(schema: JsonSchema, components: Record<string, JsonSchema>, root = false): JsonSchema {
  const id = schema.$id
  if (typeof id === 'string' && !root) {
    if (!components[id]) {
      components[id] = {} // reserve first: schemas may refer to themselves
      components[id] = toOpenApiSchema(schema, components, true)
    }
    return { $ref: `${COMPONENT}${id}` }
  }
  // Type.Ref names the target by its $id, which is now a component.
  if (typeof schema.$ref === 'string') return { $ref: `${COMPONENT}${schema.$ref}` }
  const out: JsonSchema = Array.isArray(schema.anyOf) ? union(schema.anyOf as JsonSchema[], components) : {}
  const convert = (s: unknown): unknown => (isSchema(s) ? toOpenApiSchema(s, components) : s)
  for (const [key, value] of Object.entries(schema)) {
    if (key === 'anyOf' || key === '$id' || key === 'errorMessage' || key === 'example') continue
    if (SCHEMA_MAPS.has(key) && isSchema(value))
      out[key] = Object.fromEntries(Object.entries(value).map(([k, v]) => [k, convert(v)]))
    else if (SCHEMA_LISTS.has(key) && Array.isArray(value)) out[key] = value.map(convert)
    else if (SCHEMA_ONE.has(key)) out[key] = convert(value)
    else out[key] = value
  }
  // `example` is deprecated in 3.1's Schema Object; 2020-12 has `examples`.
  if ('example' in schema) out.examples = [schema.example]
  // The validator's message says what a value must be, which is what a reader of the document wants.
  if (typeof schema.errorMessage === 'string' && out.description === undefined) out.description = schema.errorMessage
  const patterns = out.patternProperties as JsonSchema | undefined
  if (patterns && Object.keys(patterns).length === 1 && ANY_KEY in patterns && !('additionalProperties' in out)) {
    out.additionalProperties = patterns[ANY_KEY]
    delete out.patternProperties
  }
  return out
}

/**
 * A TypeBox union in the forms generators recognise: literals as an `enum`, `T | null` as a type
 * list (or an `anyOf` with `{type: 'null'}` where T is a reference), other unions as `anyOf`.
 */
function union(members: JsonSchema[], components: Record<string, JsonSchema>): JsonSchema {
  const nonNull = members.filter(s => s.type !== 'null')
  const nullable = nonNull.length < members.length
  if (nonNull.length > 0 && nonNull.every(s => 'const' in s)) {
    const values = nonNull.map(s => s.const)
    const types = [...new Set(values.map(v => typeof v))]
    if (nullable) return { type: [...types, 'null'], enum: [...values, null] }
    return { type: types.length === 1 ? types[0] : types, enum: values }
  }
  const converted = nonNull.map(s => toOpenApiSchema(s, components))
  const [only] = converted
  if (converted.length === 1 && only) {
    if (!nullable) return { ...only }
    if (typeof only.type === 'string') return { ...only, type: [only.type, 'null'] }
  }
  return { anyOf: nullable ? [...converted, { type: 'null' }] : converted }
}

export function buildOpenApiDocument(routes: readonly RouteDefinition[], meta: ApiMeta): JsonSchema {
  const schemas: Record<string, JsonSchema> = {}
  const jsonContent = (schema: JsonSchema): JsonSchema => ({ 'application/json': { schema } })
  const errorContent = jsonContent(toOpenApiSchema(ErrorBody as unknown as JsonSchema, schemas))
  const paths: Record<string, Record<string, JsonSchema>> = {}
  const { tags, operations } = describeRoutes(routes)
  for (const { route, method, operationId, pathParams, queryParams, errorStatuses } of operations) {
    const parameters: JsonSchema[] = pathParams.map(name => ({
      name,
      in: 'path',
      required: true,
      schema: { type: 'string' }
    }))
    for (const { name, required, schema } of queryParams) {
      const { description, ...rest } = toOpenApiSchema(schema, schemas)
      parameters.push({ name, in: 'query', required, ...(description ? { description } : {}), schema: rest })
    }
    const operation: JsonSchema = { tags: [route.tag], summary: route.summary, operationId }
    if (parameters.length > 0) operation.parameters = parameters
    if (route.body)
      operation.requestBody = {
        required: true,
        content: jsonContent(toOpenApiSchema(route.body as unknown as JsonSchema, schemas))
      }
    const responses: Record<string, JsonSchema> = {}
    for (const [status, r] of Object.entries(route.responses)) {
      responses[status] = r.schema
        ? {
            description: r.description,
            content: jsonContent(toOpenApiSchema(r.schema as unknown as JsonSchema, schemas))
          }
        : { description: r.description }
    }
    for (const [status, codes] of errorStatuses)
      responses[String(status)] = { description: `error codes: ${codes.join(', ')}`, content: errorContent }
    operation.responses = responses
    ;(paths[route.path] ??= {})[method] = operation
  }
  return {
    openapi: '3.1.0',
    info: { title: meta.title, version: NODE_VERSION, description: meta.description },
    // Replaced per request (openApiServers); the key is here so that it keeps its place after info.
    servers: [{ url: '/' }],
    tags: tags.map(name => ({ name })),
    paths,
    components: { schemas }
  }
}

/** A Host header as a URL authority: a name or IPv4 address, or a bracketed IPv6 one, and an optional port. */
const HOST = /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/

/**
 * Where a client of this document sends its calls: the operator's `public_url` when set (as in
 * onboarding redirects), else the host the request named, on both schemes the Swagger document
 * lists (a TLS terminator in front is invisible here). A Host that is not a plain authority is not
 * echoed into the document; `/` then means "wherever this document came from".
 */
export function openApiServers(publicUrl: string, host: string | undefined): { url: string }[] {
  const base = publicUrl.replace(/\/+$/, '')
  if (base) return [{ url: base }]
  if (host && HOST.test(host)) return [{ url: `http://${host}` }, { url: `https://${host}` }]
  return [{ url: '/' }]
}
