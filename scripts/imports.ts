/**
 * Prints the shape of src/: each folder's files and lines, the largest files and any import circle.
 *
 *   npm run -s imports [-- --largest N] [--root DIR]   (DIR: another checkout, e.g. a worktree of an older commit)
 */
import { dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { circles, sourceFiles } from './lib/import-graph.js'

const { values } = parseArgs({
  options: { largest: { type: 'string', default: '10' }, root: { type: 'string' } }
})
const root = values.root ?? fileURLToPath(new URL('..', import.meta.url))
const files = sourceFiles(root)
const folders = new Map<string, { files: number; lines: number }>()
for (const file of files) {
  const folder = `${dirname(file.path)}/`
  const entry = folders.get(folder) ?? { files: 0, lines: 0 }
  entry.files++
  entry.lines += file.lines
  folders.set(folder, entry)
}
const total = files.reduce((n, f) => n + f.lines, 0)
console.log(`src: ${files.length} files, ${total} lines`)
console.log('\nfolder                          files  lines')
for (const [folder, { files: n, lines }] of [...folders].sort()) {
  console.log(`${folder.padEnd(32)}${String(n).padStart(5)}${String(lines).padStart(7)}`)
}
console.log('\nlargest files')
for (const file of [...files].sort((a, b) => b.lines - a.lines).slice(0, Number(values.largest))) {
  console.log(`${String(file.lines).padStart(6)}  ${file.path}`)
}
const found = circles(files)
console.log(`\nimport circles: ${found.length === 0 ? 'none' : ''}`)
for (const group of found) console.log(`  ${group.join(' ↔ ')}`)
