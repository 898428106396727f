/**
 * The API description (Swagger 2.0, info.version 0.2.0), generated from the route table and the
 * same TypeBox schemas that validate requests, plus the explorer served from swagger-ui-dist. The
 * explorer opens the OpenAPI 3.1 document (openapi.ts) first, since 2.0 cannot show nullable or
 * alternative shapes; this one stays selectable, and served, for the clients built on it.
 */
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { ErrorBody } from '../wire/common.js'
import type { RouteDefinition } from '../http/http.js'
import { type ApiMeta, describeRoutes, type JsonSchema } from './route-description.js'

const SWAGGER_KEYS = new Set([
  'type',
  'format',
  'description',
  'enum',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'minLength',
  'maxLength',
  'pattern',
  'items',
  'properties',
  'required',
  'additionalProperties',
  'minItems',
  'maxItems',
  'maxProperties',
  'example',
  'default',
  'title'
])

/** Converts a JSON Schema (TypeBox) into the Swagger 2.0 subset, hoisting `$id` schemas into definitions. */
export function toSwaggerSchema(schema: JsonSchema, definitions: Record<string, JsonSchema>, root = false): JsonSchema {
  const id = schema.$id as string | undefined
  if (id && !root) {
    if (!definitions[id]) {
      definitions[id] = {} // reserve first: schemas may refer to themselves
      definitions[id] = toSwaggerSchema(schema, definitions, true)
    }
    return { $ref: `#/definitions/${id}` }
  }
  if (typeof schema.$ref === 'string') return { $ref: `#/definitions/${schema.$ref}` }
  const anyOf = schema.anyOf as JsonSchema[] | undefined
  if (anyOf) {
    const nonNull = anyOf.filter(s => s.type !== 'null')
    const nullable = nonNull.length < anyOf.length
    let converted: JsonSchema
    if (nonNull.every(s => 'const' in s)) {
      converted = { type: typeof nonNull[0]?.const === 'number' ? 'number' : 'string', enum: nonNull.map(s => s.const) }
    } else if (nonNull.length === 1) {
      converted = toSwaggerSchema(nonNull[0] as JsonSchema, definitions)
    } else {
      converted = { ...toSwaggerSchema(nonNull[0] as JsonSchema, definitions), description: 'one of several shapes' }
    }
    if (schema.description) converted = { ...converted, description: schema.description }
    if (!nullable) return converted
    // Swagger 2.0 ignores members beside $ref, so a nullable reference is wrapped in allOf.
    return converted.$ref ? { allOf: [converted], 'x-nullable': true } : { ...converted, 'x-nullable': true }
  }
  const out: JsonSchema = {}
  for (const [key, value] of Object.entries(schema)) if (SWAGGER_KEYS.has(key)) out[key] = value
  if ('const' in schema) out.enum = [schema.const]
  if (schema.properties) {
    out.properties = Object.fromEntries(
      Object.entries(schema.properties as Record<string, JsonSchema>).map(([k, v]) => [
        k,
        toSwaggerSchema(v, definitions)
      ])
    )
  }
  if (schema.items) out.items = toSwaggerSchema(schema.items as JsonSchema, definitions)
  if (schema.patternProperties) {
    const [value] = Object.values(schema.patternProperties as Record<string, JsonSchema>)
    out.type = 'object'
    out.additionalProperties = value ? toSwaggerSchema(value, definitions) : true
  }
  if (typeof schema.additionalProperties === 'object')
    out.additionalProperties = toSwaggerSchema(schema.additionalProperties as JsonSchema, definitions)
  if (schema.errorMessage && !schema.description) out.description = schema.errorMessage
  return out
}

export function buildSwaggerDocument(routes: readonly RouteDefinition[], meta: ApiMeta): JsonSchema {
  const definitions: Record<string, JsonSchema> = {}
  const errorRef = toSwaggerSchema(ErrorBody as unknown as JsonSchema, definitions)
  const paths: Record<string, Record<string, JsonSchema>> = {}
  const { tags, operations } = describeRoutes(routes)
  for (const { route, method, operationId, pathParams, queryParams, errorStatuses } of operations) {
    const parameters: JsonSchema[] = pathParams.map(name => ({ name, in: 'path', required: true, type: 'string' }))
    for (const { name, required, schema } of queryParams)
      parameters.push({ name, in: 'query', required, ...toSwaggerSchema(schema, definitions) })
    if (route.body)
      parameters.push({
        name: 'body',
        in: 'body',
        required: true,
        schema: toSwaggerSchema(route.body as unknown as JsonSchema, definitions)
      })
    const responses: Record<string, JsonSchema> = {}
    for (const [status, r] of Object.entries(route.responses)) {
      responses[status] = r.schema
        ? { description: r.description, schema: toSwaggerSchema(r.schema as unknown as JsonSchema, definitions) }
        : { description: r.description }
    }
    for (const [status, codes] of errorStatuses)
      responses[String(status)] = { description: `error codes: ${codes.join(', ')}`, schema: errorRef }
    ;(paths[route.path] ??= {})[method] = {
      tags: [route.tag],
      summary: route.summary,
      operationId,
      parameters,
      responses
    }
  }
  return {
    swagger: '2.0',
    info: { title: meta.title, version: '0.2.0', description: meta.description },
    basePath: '/',
    schemes: ['http', 'https'],
    consumes: ['application/json'],
    produces: ['application/json'],
    tags: tags.map(name => ({ name })),
    paths,
    definitions
  }
}

const SWAGGER_ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'application/javascript; charset=utf-8',
  'swagger-ui-standalone-preset.js': 'application/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png'
}

export const SWAGGER_INDEX_HTML = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Registry node API</title>
  <link rel="stylesheet" href="./swagger-ui.css">
  <link rel="icon" type="image/png" href="./favicon-32x32.png">
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="./swagger-ui-bundle.js"></script>
  <script src="./swagger-ui-standalone-preset.js"></script>
  <script>
    window.ui = SwaggerUIBundle({ dom_id: '#swagger-ui', deepLinking: true,
      urls: [{ url: '../openapi.json', name: 'OpenAPI 3.1' }, { url: './doc.json', name: 'Swagger 2.0' }],
      'urls.primaryName': 'OpenAPI 3.1',
      presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset], layout: 'StandaloneLayout' })
  </script>
</body>
</html>
`

/** The explorer's static files, read once from the swagger-ui-dist package (no CDN). */
export function loadSwaggerAssets(): Map<string, { body: Buffer; contentType: string }> {
  const dir = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'))
  const assets = new Map<string, { body: Buffer; contentType: string }>()
  for (const [file, contentType] of Object.entries(SWAGGER_ASSETS))
    assets.set(file, { body: readFileSync(join(dir, file)), contentType })
  return assets
}
