/**
 * The import graph of src/: every relative import (type-only ones too, since they tie the files'
 * meaning together), the folders with their files and lines, and the circles (strongly connected
 * groups of more than one file, or a file importing itself).
 */
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'

export interface SourceFile {
  path: string
  lines: number
  imports: string[]
}

export function sourceFiles(root: string): SourceFile[] {
  const files: SourceFile[] = []
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const full = join(dir, entry.name)
      if (entry.isDirectory()) walk(full)
      else if (entry.name.endsWith('.ts')) files.push(parse(root, full))
    }
  }
  walk(join(root, 'src'))
  return files.sort((a, b) => a.path.localeCompare(b.path))
}

function parse(root: string, full: string): SourceFile {
  const text = readFileSync(full, 'utf8')
  const imports = [
    ...text.matchAll(/(?:import|export)\s[^'"]*?from\s+'(\.{1,2}\/[^']+)'|import\('(\.{1,2}\/[^']+)'\)/g)
  ]
    .map(m => m[1] ?? m[2] ?? '')
    .map(spec => relative(root, resolve(dirname(full), spec)).replace(/\.js$/, '.ts'))
  return { path: relative(root, full), lines: text.split('\n').length - 1, imports: [...new Set(imports)] }
}

/** Groups of files that import each other, directly or through others (Tarjan). */
export function circles(files: readonly SourceFile[]): string[][] {
  const graph = new Map(files.map(f => [f.path, f.imports]))
  let index = 0
  const order = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: string[] = []
  const onStack = new Set<string>()
  const found: string[][] = []
  const visit = (v: string): void => {
    order.set(v, index)
    low.set(v, index++)
    stack.push(v)
    onStack.add(v)
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue
      if (!order.has(w)) {
        visit(w)
        low.set(v, Math.min(low.get(v) ?? 0, low.get(w) ?? 0))
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v) ?? 0, order.get(w) ?? 0))
    }
    if (low.get(v) !== order.get(v)) return
    const group: string[] = []
    for (;;) {
      const w = stack.pop() as string
      onStack.delete(w)
      group.push(w)
      if (w === v) break
    }
    if (group.length > 1 || graph.get(v)?.includes(v)) found.push(group.sort())
  }
  for (const v of graph.keys()) if (!order.has(v)) visit(v)
  return found
}
