/**
 * docs/architecture.md stays true: every source path it names exists, and its module map names
 * every folder of src/; and src/ has no import circle.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import test from 'ava'
import { circles, sourceFiles } from '../../scripts/lib/import-graph.js'

const root = new URL('../../', import.meta.url)
const map = readFileSync(new URL('docs/architecture.md', root), 'utf8')

/** `src/mesh/{gossip,sync}.ts` → `src/mesh/gossip.ts`, `src/mesh/sync.ts`. */
function expand(path: string): string[] {
  const brace = /\{([^}]*)\}/.exec(path)
  if (!brace) return [path]
  return brace[1]!
    .split(',')
    .flatMap(alt => expand(path.slice(0, brace.index) + alt + path.slice(brace.index + brace[0].length)))
}

test('every path docs/architecture.md names under src/ exists', t => {
  const named = new Set(map.match(/src\/[\w./{},-]*[\w}/]/g) ?? [])
  t.true(named.size > 50)
  const missing = [...named].flatMap(expand).filter(path => !existsSync(new URL(path, root)))
  t.deepEqual(missing, [])
})

test('the module map of docs/architecture.md names every folder of src/', t => {
  const folders = readdirSync(new URL('src/', root), { withFileTypes: true })
    .filter(entry => entry.isDirectory())
    .map(entry => `src/${entry.name}/`)
  t.deepEqual(
    folders.filter(folder => !map.includes(`| \`${folder}\``)),
    [],
    'a folder of src/ without its row in the module map'
  )
})

test('no import circle in src/ (type-only imports count)', t => {
  const files = sourceFiles(fileURLToPath(root))
  t.true(files.length > 100)
  t.deepEqual(circles(files), [])
})
