import { readFile } from 'node:fs/promises'
import test from 'ava'
import { applySections, GENERATED_PAGES, generatedSections } from '../../scripts/docs.js'

test('the reference tables match the code (run npm run docs after changing settings, errors or limits)', async t => {
  const sections = generatedSections()
  for (const [file, names] of Object.entries(GENERATED_PAGES)) {
    const page = await readFile(new URL(`../../${file}`, import.meta.url), 'utf8')
    t.is(applySections(page, sections, names), page, file)
  }
})

test('the README shows the two commands', async t => {
  const readme = await readFile(new URL('../../README.md', import.meta.url), 'utf8')
  t.true(readme.includes('npm install && npm start'))
  t.true(readme.includes('npm install && npm test'))
})

test('every test SECURITY.md cites exists, with the title it quotes', async t => {
  const root = new URL('../../', import.meta.url)
  const security = await readFile(new URL('SECURITY.md', root), 'utf8')
  const citations = [...security.matchAll(/(test\/[\w/.-]+\.test\.ts)(?:, (test\/[\w/.-]+\.test\.ts))?(?: › (.+))?/g)]
  t.true(citations.length >= 20)
  for (const [, first, second, title] of citations) {
    const sources = await Promise.all(
      [first, second].filter((f): f is string => f !== undefined).map(f => readFile(new URL(f, root), 'utf8'))
    )
    // A trailing "(…)" names the part of the test meant; the title is what comes before it.
    if (title)
      t.true(
        sources.some(s => s.includes(title.replace(/ \([^)]*\)$/, '').trim())),
        title
      )
  }
})
