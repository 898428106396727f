import type { Static, TSchema } from '@sinclair/typebox'
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler'
import type { ValueError } from '@sinclair/typebox/errors'
import { RegistryError, type ErrorCode } from '../errors.js'

const compiled = new WeakMap<TSchema, TypeCheck<TSchema>>()

function checker<T extends TSchema>(schema: T): TypeCheck<T> {
  let check = compiled.get(schema) as TypeCheck<T> | undefined
  if (!check) {
    check = TypeCompiler.Compile(schema)
    compiled.set(schema, check)
  }
  return check
}

/** JSON pointer `/developer_proof/index` → field name `developer_proof.index`. */
function fieldName(path: string): string {
  return path.replace(/^\//, '').replace(/\//g, '.').replace(/~1/g, '/').replace(/~0/g, '~') || 'body'
}

/**
 * A union (e.g. a nullable field) reports only "expected union value"; its branches know more.
 * The most specific branch error is the deepest one, preferring branches other than null.
 */
function mostSpecific(error: ValueError): ValueError {
  const hasOwnMessage = (error.schema as { errorMessage?: string }).errorMessage !== undefined
  let best = error
  for (const branch of error.errors ?? []) {
    const first = branch.First()
    if (!first) continue
    const candidate = mostSpecific(first)
    const isNull = (candidate.schema as { type?: string }).type === 'null'
    if (candidate.path.length > best.path.length || (best === error && !isNull && !hasOwnMessage)) best = candidate
  }
  return best
}

/**
 * Validates a parsed JSON value against a wire schema and returns it typed, or throws a
 * `validation_failed` error naming the first offending field. A schema may carry an
 * `errorMessage` option to replace the generic text.
 */
export function validate<T extends TSchema>(
  schema: T,
  value: unknown,
  code: ErrorCode = 'validation_failed'
): Static<T> {
  const check = checker(schema)
  if (check.Check(value)) return value
  const top = check.Errors(value).First()
  if (!top) throw new RegistryError(code, 'body: invalid', 'body')
  const first = mostSpecific(top)
  const custom = (first.schema as { errorMessage?: string }).errorMessage
  const missing = first.value === undefined
  const field = fieldName(first.path)
  throw new RegistryError(
    code,
    `${field}: ${missing ? 'is required' : (custom ?? first.message.replace(/^Expected/, 'expected'))}`,
    field
  )
}
