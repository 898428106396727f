/** The fields of a document the text index scores, their boosts, and how a term sequence marks them. */

export const FIELDS = ['name', 'tags', 'category', 'summary', 'capabilities'] as const
export type Field = (typeof FIELDS)[number]
export type FieldTokens = Record<Field, readonly string[]>

/** The spec's boosts (name 3.0, tags 2.0, category 1.5, summary 1.0) plus capability text at 1.0. */
export const FIELD_BOOSTS: Readonly<Record<Field, number>> = {
  name: 3.0,
  tags: 2.0,
  category: 1.5,
  summary: 1.0,
  capabilities: 1.0
}

/** The number of fields: a posting holds one term count per field. */
export const F = FIELDS.length
/** A term count saturates at this (one byte). */
export const MAX_TF = 255
/** Between two fields in a document's sequence, so a phrase never spans fields. */
export const FIELD_BREAK = 0xffffffff
