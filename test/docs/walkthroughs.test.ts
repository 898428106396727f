/**
 * Every shell block of the README and the guides runs as written, in order, in a fresh folder per
 * page, and what the page says a command prints is what it prints (test/helpers/walkthrough.ts).
 *
 * They run once per CI, under the README's test command: the commands are the same shell under
 * every runtime, and the other runtimes' runs (scripts/runtimes.mjs sets REGISTRY_NODE_TEST_RUNTIME)
 * cover the code behind them through the rest of the suite.
 */
import { readFile } from 'node:fs/promises'
import anyTest, { type ExecutionContext } from 'ava'
import { type Outcome, Walkthrough, blocksOf, commandsOf, matches } from '../helpers/walkthrough.js'

const test = process.env.REGISTRY_NODE_TEST_RUNTIME ? anyTest.skip : anyTest.serial

interface Page {
  path: string
  /** What the page says must already run: a command ("with a node running") or the steps of another page. */
  after?: { command: string } | { page: string }
}

const PAGES: Page[] = [
  { path: 'README.md' },
  { path: 'docs/guide/entities.md' },
  { path: 'docs/guide/registry.md', after: { command: 'npm start' } },
  { path: 'docs/operator.md' },
  { path: 'docs/guide/payments.md', after: { page: 'docs/guide/entities.md' } },
  { path: 'docs/guide/testnets.md' }
]

for (const page of PAGES) {
  test(`the shell blocks of ${page.path} run as written`, async t => {
    const walk = await Walkthrough.open()
    t.teardown(() => walk.close())
    if (page.after && 'command' in page.after) {
      assertRan(t, await walk.run({ line: 0, text: page.after.command, expect: [], background: true }), 'set-up')
    }
    if (page.after && 'page' in page.after) await runPage(t, walk, page.after.page, { stopServers: false })
    walk.keepServers()
    await runPage(t, walk, page.path, { stopServers: true })
  })
}

async function runPage(t: ExecutionContext, walk: Walkthrough, path: string, { stopServers = true }): Promise<void> {
  const blocks = blocksOf(await readFile(path, 'utf8'))
  t.true(blocks.length > 0, `${path} has shell blocks`)
  for (const block of blocks) {
    for (const command of commandsOf(block)) {
      // The suite is what `npm test` runs; it does not run itself.
      if (/^(npm install && )?npm test\b/.test(command.text)) continue
      assertRan(t, await walk.run(command, 240_000), path)
    }
    if (stopServers) await walk.stopServers()
  }
}

function assertRan(t: ExecutionContext, outcome: Outcome, path: string): void {
  const { command, output, exitCode } = outcome
  const where = `${path}:${command.line}: ${command.text}`
  // A page is a sequence: what follows a failed command would fail for that reason, so stop here.
  // A command may fail where the page shows the error it prints.
  const shownError =
    (command.fails || command.expect.some(piece => piece.includes('error'))) && matches(output, command.expect)
  if (exitCode !== 0 && !shownError) throw new Error(`${where}\nexited ${exitCode}:\n${output}`)
  if (command.fails && exitCode === 0) throw new Error(`${where}\nthe page says it fails; it exited 0:\n${output}`)
  // curl -s exits 0 on an error answer: an error body the page does not show is a failure too.
  if (command.expect.length === 0 && /^\s*\{"error":/m.test(output)) {
    throw new Error(`${where}\nanswered an error:\n${output}`)
  }
  if (command.expect.length > 0 && !matches(output, command.expect)) {
    throw new Error(`${where}\nprinted:\n${output}\nexpected, in order: ${command.expect.join(' … ')}`)
  }
  t.pass()
}
