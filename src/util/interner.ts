/**
 * One copy of each repeated string (categories, tags, developer IDs), however many records carry
 * it: fewer strings on the heap for full collections to mark. Bounded: past `max` distinct values,
 * new ones are returned as they came.
 */
export class Interner {
  private readonly values = new Map<string, string>()

  constructor(private readonly max = 100_000) {}

  intern(value: string): string {
    const known = this.values.get(value)
    if (known !== undefined) return known
    if (this.values.size < this.max) this.values.set(value, value)
    return value
  }
}
