import { readFile } from 'node:fs/promises'
import test from 'ava'
import { applySections, generatedSections } from '../../scripts/docs.js'

test('the README tables match the code (run npm run docs after changing settings, errors or limits)', async t => {
  const readme = await readFile(new URL('../../README.md', import.meta.url), 'utf8')
  t.is(applySections(readme, generatedSections()), readme)
})

test('the README shows the two commands', async t => {
  const readme = await readFile(new URL('../../README.md', import.meta.url), 'utf8')
  t.true(readme.includes('npm install && npm start'))
  t.true(readme.includes('npm install && npm test'))
})
