/**
 * The dashboard in a real browser: headless Chromium (Debian's, /usr/bin/chromium, which `npm test`
 * installs through scripts/ensure-test-tools.mjs) drives GET /dashboard of a node meshed with two
 * others. The page shows the node's identity and its peers as a graph; registrations made through the
 * API appear in the live activity stream (newest first) and in the counts without a reload; a stopped
 * peer turns grey.
 *
 * Without /usr/bin/chromium the tests are skipped, or fail when CI is set.
 * DASHBOARD_SCREENSHOT=docs/dashboard.png also saves a screenshot of the page.
 */
import test from 'ava'
import { existsSync } from 'node:fs'
import { chromium, type Browser, type Page } from 'playwright-core'
import { agent, developer, specRegistration } from '../helpers/identities.js'
import { http, startTestNode, tcpAddress, type TestNode } from '../helpers/node.js'
import { until } from '../helpers/wait.js'

const CHROMIUM = '/usr/bin/chromium'
// Without these, Chromium stalls on connections the machine refuses (no internet here).
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync'
]
const available = existsSync(CHROMIUM)
const missing = `${CHROMIUM} is missing: \`npm test\` installs it (scripts/ensure-test-tools.mjs, as root with apt-get), or run \`apt-get install chromium\``

if (!available) {
  if (process.env.CI) {
    test('the dashboard browser test has Chromium', t => {
      t.fail(missing)
    })
  } else {
    console.log(`dashboard-browser: skipped: ${missing}`)
  }
}
const browserTest = available ? test.serial : test.skip

const MESH = { enabled: true }
let a: TestNode
let b: TestNode
let c: TestNode
let browser: Browser
let page: Page
const dev = developer(7)

/** A TCP address of the node, ending in /p2p/<peer-id>. */
const byTestId = (id: string): string => `[data-testid="${id}"]`
const textOf = async (id: string): Promise<string> =>
  (await page.locator(byTestId(id)).first().textContent())?.trim() ?? ''

/** Waits until the element's text is `expected` (the page polls and listens; no reload). */
async function waitForText(id: string, expected: string): Promise<void> {
  await page.waitForFunction(([sel, want]) => document.querySelector(sel!)?.textContent?.trim() === want, [
    byTestId(id),
    expected
  ] as const)
}

async function register(n: TestNode, index: number, name: string, category: string): Promise<string> {
  const a = agent(dev, index)
  const res = await http(n.url, 'POST', '/v1/entities', { body: specRegistration(dev, a, { name, category }) })
  if (res.status !== 201) throw new Error(`registration failed: ${res.status} ${JSON.stringify(res.body)}`)
  return a.agentId
}

test.before(async () => {
  if (!available) return
  a = await startTestNode({ name: 'dash-a', p2p: MESH })
  ;[b, c] = await Promise.all([
    startTestNode({ name: 'dash-b', p2p: { ...MESH, bootstrap: [tcpAddress(a)] } }),
    startTestNode({ name: 'dash-c', p2p: { ...MESH, bootstrap: [tcpAddress(a)] } })
  ])
  await until(
    'node A has two healthy peers',
    async () => {
      const peers: any[] = (await http(a.url, 'GET', '/v1/network/peers')).body.peers
      return peers.length === 2 && peers.every(p => p.health === 'healthy') ? peers : undefined
    },
    { intervalMs: 100 }
  )
  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true })
  page = await browser.newPage({ viewport: { width: 1280, height: 900 } })
  page.setDefaultTimeout(20_000)
})

test.after.always(async () => {
  await browser?.close()
  await Promise.all([a?.stop(), b?.stop(), c?.stop()])
})

browserTest("the page shows the node's identity and its peers as a graph", async t => {
  const errors: string[] = []
  page.on('pageerror', err => errors.push(err.message))
  page.on('console', message => {
    if (message.type() === 'error') errors.push(message.text())
  })
  const res = await page.goto(`${a.url}/dashboard`)
  t.is(res?.status(), 200)
  const status = (await http(a.url, 'GET', '/v1/network/status')).body
  await waitForText('registry-id', status.registry_id)
  t.is(await textOf('node-name'), 'dash-a')
  t.is(await textOf('node-host'), 'registry.test')
  t.is(await textOf('public-key'), status.public_key)
  t.is(await textOf('peer-id'), status.peer_id)
  t.is(await textOf('version'), status.version)
  await waitForText('ws-state', 'live')

  // This node in the centre, both peers around it, connected. The graph comes from its own request,
  // which may end after the identity's: waited for, then drawn with this node in it.
  await page.waitForFunction(
    sel => document.querySelectorAll(sel).length === 2,
    `${byTestId('graph-peer')}[data-connected="true"]`
  )
  t.is(await page.locator(`${byTestId('peer-graph')} ${byTestId('graph-self')}`).count(), 1)
  const labels = await page.locator(`${byTestId('graph-peer')} text`).allTextContents()
  t.deepEqual(labels.sort(), ['dash-b', 'dash-c'])
  t.is(await page.locator(`${byTestId('peer-table')} tr[data-connected="true"]`).count(), 2)
  await waitForText('count-peers', '2')
  await waitForText('est-registries', '3')
  t.is(await textOf('count-agents'), '0')
  t.deepEqual(errors, [], 'no script errors, no failed requests')
})

browserTest('registrations appear in the activity stream and the counts without a reload', async t => {
  await page.evaluate(() => {
    ;(window as any).notReloaded = true
  })
  const first = await register(a, 1, 'Translator', 'language')
  await page.locator(`${byTestId('activity-item')}[data-type="agent_registered"]`, { hasText: 'Translator' }).waitFor()
  await waitForText('count-agents', '1')
  await waitForText('count-entities', '1')
  await waitForText('count-developers', '1')
  await waitForText('count-active', '1')
  t.is(await textOf('count-inactive'), '0')
  await page.locator(`${byTestId('entity-row')}[data-entity-id="${first}"]`).waitFor()

  // Newest first: a second registration goes on top of the list.
  const second = await register(a, 2, 'Summariser', 'documents')
  await page.locator(`${byTestId('activity-item')}[data-type="agent_registered"]`, { hasText: 'Summariser' }).waitFor()
  const registered = await page.locator(`${byTestId('activity-item')}[data-type="agent_registered"]`).allTextContents()
  t.true(registered[0]!.includes('Summariser'), registered.join(' | '))
  t.true(registered[1]!.includes('Translator'), registered.join(' | '))
  await waitForText('count-agents', '2')
  await waitForText('count-active', '2')
  await page.locator(`${byTestId('entity-row')}[data-entity-id="${second}"]`).waitFor()
  t.is(await page.locator(byTestId('entity-row')).first().getAttribute('data-entity-id'), second)

  // A registration on a peer reaches this node by gossip, and the page with it.
  await register(b, 3, 'Weather oracle', 'data')
  await waitForText('count-agents', '3')
  await page
    .locator(`${byTestId('activity-item')}[data-type="gossip_incoming"]`)
    .first()
    .waitFor()
  t.true(await page.evaluate(() => (window as any).notReloaded === true), 'the page was not reloaded')
})

browserTest(
  'a person searches from the page: ranked results with their breakdown and availability, filters, a click to the record and card',
  async t => {
    const search = async (fill: Record<string, string>, federated = false): Promise<void> => {
      for (const [id, value] of Object.entries(fill)) await page.locator(byTestId(id)).fill(value)
      await page.locator(byTestId('search-federated')).setChecked(federated)
      const before = await textOf('search-note')
      await page.locator(byTestId('search-submit')).click()
      await page.waitForFunction(
        ([sel, old]) => {
          const text = document.querySelector(sel!)?.textContent ?? ''
          return text !== old && / found in /.test(text)
        },
        [byTestId('search-note'), before] as const
      )
    }
    const resultIds = () =>
      page.locator(byTestId('search-result')).evaluateAll(rows => rows.map(r => r.getAttribute('data-entity-id')))

    await search({ 'search-query': 'translator', 'search-category': '', 'search-tags': '' })
    const api = (
      await http(a.url, 'POST', '/v1/search', {
        body: { query: 'translator', type: 'any', status: 'any', max_results: 20 }
      })
    ).body
    t.deepEqual(
      await resultIds(),
      api.results.map((r: { entity_id: string }) => r.entity_id)
    )
    t.true(api.results.length >= 1)
    const first = page.locator(byTestId('search-result')).first()
    t.is(await first.locator(byTestId('search-score')).textContent(), api.results[0].score.toFixed(3))
    t.regex(
      (await first.locator(byTestId('search-breakdown')).textContent())!,
      /^text 1\.000 · semantic \d\.\d{3} · trust \d\.\d{3} · fresh \d\.\d{3} · avail 1$/
    )
    t.is(await first.locator('.badge').textContent(), 'active')
    t.regex(await textOf('search-note'), new RegExp(`^${api.total_found} found in `))

    // Filters only: the category, any type and status.
    await search({ 'search-query': '', 'search-category': 'documents' })
    const documents = (
      await http(a.url, 'POST', '/v1/search', { body: { category: 'documents', type: 'any', status: 'any' } })
    ).body
    t.deepEqual(
      await resultIds(),
      documents.results.map((r: { entity_id: string }) => r.entity_id)
    )
    t.is(documents.results.length, 1)

    // A click shows the record and what became of its card.
    await page.locator(byTestId('search-result')).first().click()
    await page.waitForFunction(
      sel => (document.querySelector(sel!)?.textContent ?? '').includes('"entity_id"'),
      byTestId('search-record')
    )
    t.true((await textOf('search-record')).includes(documents.results[0].entity_id))
    await page.waitForFunction(
      ([card, note]) =>
        (document.querySelector(card!)?.textContent ?? '') !== '' ||
        /no card/.test(document.querySelector(note!)?.textContent ?? ''),
      [byTestId('search-card'), byTestId('search-card-note')] as const
    )

    // Federated: the peers are asked, and the note says how many answered.
    await search({ 'search-query': 'weather', 'search-category': '' }, true)
    t.regex(await textOf('search-note'), /found in .* ms, \d+ of \d+ peers answered/)
  }
)

browserTest('a stopped peer stays in the graph, greyed', async t => {
  await c.stop()
  await page.waitForFunction(
    sel => document.querySelectorAll(sel).length === 1,
    `${byTestId('graph-peer')}[data-connected="false"]`
  )
  t.is(await page.locator(`${byTestId('graph-peer')}[data-connected="true"] text`).textContent(), 'dash-b')
  t.is(await page.locator(`${byTestId('graph-peer')}[data-connected="false"] text`).textContent(), 'dash-c')
  t.is(await page.locator(`${byTestId('graph-peer')}[data-connected="false"] circle`).getAttribute('class'), 'peer off')
  await waitForText('count-peers', '1')
  await page
    .locator(`${byTestId('activity-item')}[data-type="peer_disconnected"]`)
    .first()
    .waitFor()
  const shot = process.env.DASHBOARD_SCREENSHOT
  if (shot) await page.screenshot({ path: shot, fullPage: true })
})

browserTest('the activity list is bounded', async t => {
  await page.evaluate(() => {
    const show = (window as any).showEvent as (event: unknown) => void
    for (let i = 0; i < 150; i++)
      show({ type: 'test_event', timestamp: new Date().toISOString(), data: { name: `event ${i}` } })
  })
  const items = page.locator(byTestId('activity-item'))
  t.is(await items.count(), 100)
  // Newest first; a live event of the node's own may have landed on top meanwhile.
  t.true(
    (await page
      .locator(`${byTestId('activity-item')}[data-type="test_event"]`)
      .first()
      .textContent())!.includes('event 149')
  )
})
