import type { Static, TSchema } from '@sinclair/typebox'
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler'
import { invalidField } from '../errors.js'

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
 * Validates a parsed JSON value against a wire schema and returns it typed, or throws a
 * `validation_failed` error naming the first offending field. A schema may carry an
 * `errorMessage` option to replace the generic text.
 */
export function validate<T extends TSchema>(schema: T, value: unknown): Static<T> {
  const check = checker(schema)
  if (check.Check(value)) return value
  const first = check.Errors(value).First()
  if (!first) throw invalidField('body', 'invalid')
  const custom = (first.schema as { errorMessage?: string }).errorMessage
  const missing = first.value === undefined
  throw invalidField(fieldName(first.path), missing ? 'is required' : custom ?? first.message.replace(/^Expected/, 'expected'))
}
