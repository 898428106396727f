type Column = Uint8Array | Uint16Array | Int32Array | Uint32Array | Float32Array | Float64Array

/** A copy of `column` lengthened to `size`, the new part set to `fill`. */
export function widened<T extends Column>(column: T, size: number, fill = 0): T {
  const next = new (column.constructor as new (n: number) => T)(size)
  if (fill !== 0) next.fill(fill)
  next.set(column)
  return next
}
