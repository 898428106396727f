/**
 * The engine's documents in a snapshot, by column: entity IDs, numbers, and each string (category,
 * tag, capability, developer) once in a table that the columns refer to. Decoding a million
 * documents as objects field by field took 19 s; by column it is their construction alone.
 */
import { CAPABILITY_KEYS, type KeptDocument, type SearchDocument } from './engine-query.js'
import { FRESH, type SnapshotReader, type SnapshotWriter } from '../util/snapshot-file.js'
import { widened } from '../util/typed-arrays.js'

const PRESENT = 1
const SERVICE = 2
const ACTIVE = 4
const NO_VALUE = -1
const NOTHING: readonly string[] = Object.freeze([])
const LISTS = ['tags', ...CAPABILITY_KEYS] as const

type Docs = readonly (KeptDocument | undefined)[]

/** What the documents' columns are written from beside the kept documents: the engine's columns by slot. */
export interface SlotValues {
  isService(slot: number): boolean
  isActive(slot: number): boolean
  readonly registeredAt: Float64Array
  readonly lastChange: Float64Array
  readonly uptime: Float32Array
  readonly transitive: Float32Array
}

/** Documents put in columns in one turn of a snapshot's writing (a few milliseconds of work). */
const DOCUMENTS_PER_STEP = 5_000

/** Plans the documents' columns under `prefix`: made a range of documents at a time as the snapshot is written. */
export function saveDocuments(out: SnapshotWriter, prefix: string, docs: Docs, values: SlotValues): void {
  const count = docs.length
  const table = new Map<string, number>()
  const ref = (value: string): number => {
    let n = table.get(value)
    if (n === undefined) table.set(value, (n = table.size))
    return n
  }
  const ids: string[] = new Array(count)
  const kinds = new Uint8Array(count)
  const numbers = new Float64Array(count * 4)
  const category = new Int32Array(count).fill(NO_VALUE)
  const developer = new Int32Array(count).fill(NO_VALUE)
  const listCounts = LISTS.map(() => new Uint32Array(count))
  // Grown as the documents are read: a plain array of millions of numbers moved in old space each time it grew.
  const listRefs = LISTS.map(() => ({ refs: new Uint32Array(1024), length: 0 }))
  const columns = (from: number, to: number): void => {
    for (let slot = from; slot < to; slot++) {
      const doc = docs[slot]
      if (!doc) {
        ids[slot] = ''
        continue
      }
      ids[slot] = doc.entityId
      kinds[slot] = PRESENT | (values.isService(slot) ? SERVICE : 0) | (values.isActive(slot) ? ACTIVE : 0)
      numbers[slot * 4] = values.registeredAt[slot] as number
      numbers[slot * 4 + 1] = values.lastChange[slot] as number
      numbers[slot * 4 + 2] = values.uptime[slot] as number
      numbers[slot * 4 + 3] = values.transitive[slot] as number
      category[slot] = ref(doc.category)
      if (doc.developerId !== null) developer[slot] = ref(doc.developerId)
      LISTS.forEach((list, l) => {
        const values = list === 'tags' ? doc.tags : doc.capabilities[list]
        ;(listCounts[l] as Uint32Array)[slot] = values.length
        const held = listRefs[l] as { refs: Uint32Array; length: number }
        if (held.length + values.length > held.refs.length)
          held.refs = widened(held.refs, Math.max(2 * held.refs.length, held.length + values.length))
        for (const value of values) held.refs[held.length++] = ref(value)
      })
    }
  }
  for (let from = 0; from < count; from += DOCUMENTS_PER_STEP)
    out.step(() => columns(from, Math.min(count, from + DOCUMENTS_PER_STEP)))
  out.strings(`${prefix}.ids`, ids)
  out.strings(`${prefix}.table`, () => [...table.keys()])
  out.array(`${prefix}.kinds`, kinds, FRESH)
  out.array(`${prefix}.numbers`, numbers, FRESH)
  out.array(`${prefix}.category`, category, FRESH)
  out.array(`${prefix}.developer`, developer, FRESH)
  LISTS.forEach((list, l) => {
    out.array(`${prefix}.${list}.counts`, listCounts[l] as Uint32Array, FRESH)
    out.array(
      `${prefix}.${list}.refs`,
      () => {
        const { refs, length } = listRefs[l] as { refs: Uint32Array; length: number }
        return refs.subarray(0, length)
      },
      FRESH
    )
  })
}

/**
 * The documents `saveDocuments` wrote, as kept documents (each string of the table passed through
 * `intern`), and `read`, the whole document of a slot in one object reused by every call.
 */
export function restoreDocuments(
  input: SnapshotReader,
  prefix: string,
  intern: (value: string) => string
): {
  docs: (KeptDocument | undefined)[]
  read: (slot: number, kept: KeptDocument) => SearchDocument
} {
  const ids = input.strings(`${prefix}.ids`)
  const table = input.strings(`${prefix}.table`).map(intern)
  const kinds = input.array(`${prefix}.kinds`, Uint8Array)
  const numbers = input.array(`${prefix}.numbers`, Float64Array)
  const category = input.array(`${prefix}.category`, Int32Array)
  const developer = input.array(`${prefix}.developer`, Int32Array)
  const lists = LISTS.map(list => ({
    counts: input.array(`${prefix}.${list}.counts`, Uint32Array),
    refs: input.array(`${prefix}.${list}.refs`, Uint32Array),
    at: 0
  }))
  const next = (l: number, slot: number): readonly string[] => {
    const list = lists[l] as (typeof lists)[number]
    const n = list.counts[slot] as number
    if (n === 0) return NOTHING
    const values: string[] = new Array(n)
    for (let i = 0; i < n; i++) values[i] = table[list.refs[list.at + i] as number] as string
    list.at += n
    return values
  }
  const docs: (KeptDocument | undefined)[] = new Array(ids.length)
  for (let slot = 0; slot < ids.length; slot++) {
    if (!((kinds[slot] as number) & PRESENT)) {
      docs[slot] = undefined
      continue
    }
    const developerRef = developer[slot] as number
    // Fields in the order keptDocument() makes them, so every document has one shape.
    docs[slot] = {
      entityId: ids[slot] as string,
      category: table[category[slot] as number] as string,
      tags: next(0, slot),
      developerId: developerRef === NO_VALUE ? null : (table[developerRef] as string),
      capabilities: { skills: next(1, slot), protocols: next(2, slot), languages: next(3, slot), models: next(4, slot) }
    }
  }
  const whole: { -readonly [K in keyof SearchDocument]: SearchDocument[K] } = {
    entityId: '',
    type: 'agent',
    category: '',
    tags: NOTHING,
    developerId: null,
    active: false,
    registeredAt: 0,
    lastChange: 0,
    uptime: 0,
    transitive: 0,
    capabilities: { skills: NOTHING, protocols: NOTHING, languages: NOTHING, models: NOTHING }
  }
  const read = (slot: number, kept: KeptDocument): SearchDocument => {
    const kind = kinds[slot] as number
    whole.entityId = kept.entityId
    whole.type = kind & SERVICE ? 'service' : 'agent'
    whole.category = kept.category
    whole.tags = kept.tags
    whole.developerId = kept.developerId
    whole.active = (kind & ACTIVE) !== 0
    whole.registeredAt = numbers[slot * 4] as number
    whole.lastChange = numbers[slot * 4 + 1] as number
    whole.uptime = numbers[slot * 4 + 2] as number
    whole.transitive = numbers[slot * 4 + 3] as number
    whole.capabilities = kept.capabilities
    return whole
  }
  return { docs, read }
}
