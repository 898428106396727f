/**
 * The node's dashboard: one self-contained page (inline CSS and script, no CDN, no build step) built
 * only on the node's own API. Every few seconds it polls GET /v1/network/status (identity, local
 * counts), /v1/network/stats (network estimates), /v1/network/peers?all=true (the peer graph) and
 * GET /v1/entities (the newest entities); the /v1/ws/activity stream feeds the live
 * list and triggers an early refresh when an entity, developer or peer changes.
 *
 * Search: a form over POST /v1/search (query, type, category, tags, status, federated); each
 * result shows its score and breakdown and its availability, and a click shows its record
 * (GET /v1/entities/{id}) and signed card (GET /v1/entities/{id}/card).
 *
 * Liveness: the active/inactive counts of this node's home entities, from the status's `liveness`
 * (other entities' liveness is their home node's to track).
 *
 * Elements the browser test reads carry data-testid attributes. The page's script sits inside this
 * template literal: it uses no backticks, no dollar-brace and no backslashes.
 */
export const DASHBOARD_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Registry node dashboard</title>
<link rel="icon" href="data:,">
<style>
  :root { --fg: #1d2330; --muted: #6b7385; --line: #e2e5eb; --bg: #f5f6f8; --ok: #1f9d55; --warn: #d97706; --bad: #c53030; --off: #a0a7b4; --accent: #2b6cb0; }
  * { box-sizing: border-box; }
  body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg); }
  header { padding: 12px 20px; background: #fff; border-bottom: 1px solid var(--line); display: flex; gap: 16px; align-items: center; flex-wrap: wrap; }
  header h1 { font-size: 18px; margin: 0; }
  header .right { margin-left: auto; display: flex; gap: 16px; align-items: center; }
  .muted { color: var(--muted); }
  code { font: 12px ui-monospace, SFMono-Regular, Menlo, monospace; overflow-wrap: anywhere; }
  code.address { display: block; }
  main { display: grid; grid-template-columns: repeat(auto-fit, minmax(440px, 1fr)); gap: 16px; padding: 16px 20px; }
  section { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 12px 16px; min-width: 0; }
  section.wide { grid-column: 1 / -1; }
  section h2 { font-size: 15px; margin: 0 0 10px; display: flex; justify-content: space-between; align-items: baseline; gap: 8px; }
  section h2 small { font-weight: 400; font-size: 12px; color: var(--muted); }
  dl { display: grid; grid-template-columns: max-content 1fr; gap: 4px 12px; margin: 0; }
  dt { color: var(--muted); } dd { margin: 0; min-width: 0; }
  .group { font-size: 12px; color: var(--muted); margin: 10px 0 4px; text-transform: uppercase; letter-spacing: .04em; }
  .group:first-of-type { margin-top: 0; }
  .stats { display: grid; grid-template-columns: repeat(auto-fill, minmax(104px, 1fr)); gap: 8px; }
  .stat { border: 1px solid var(--line); border-radius: 6px; padding: 6px 10px; color: var(--muted); font-size: 12px; }
  .stat b { display: block; font-size: 22px; color: var(--fg); font-variant-numeric: tabular-nums; }
  .stat.ok b { color: var(--ok); } .stat.warn b { color: var(--warn); }
  table { width: 100%; border-collapse: collapse; }
  th, td { text-align: left; padding: 4px 6px; border-bottom: 1px solid var(--line); vertical-align: top; }
  th { font-weight: 600; color: var(--muted); font-size: 12px; }
  .badge { display: inline-block; padding: 0 7px; border-radius: 9px; font-size: 12px; color: #fff; background: var(--off); }
  .active, .healthy, .live { background: var(--ok); } .inactive, .degraded, .connecting, .reconnecting { background: var(--warn); } .unreachable { background: var(--bad); }
  .empty { color: var(--muted); font-style: italic; }
  #activity { list-style: none; margin: 0; padding: 0; max-height: 460px; overflow: auto; }
  #activity:empty::before { content: 'waiting for events'; color: var(--muted); font-style: italic; }
  #activity li { padding: 3px 0; border-bottom: 1px dashed var(--line); overflow-wrap: anywhere; }
  #activity .type { font-weight: 600; color: var(--accent); }
  #activity li.new { animation: flash 1.5s ease-out; }
  @keyframes flash { from { background: #fff6d6; } to { background: transparent; } }
  #graph { display: block; width: 100%; height: 260px; }
  #graph text { font-size: 11px; fill: var(--fg); }
  #graph .self { fill: var(--accent); } #graph .edge { stroke: #b9c1ce; stroke-width: 1.5; } #graph .edge.off { stroke-dasharray: 4 4; stroke: #d6dae2; }
  #graph .peer.healthy { fill: var(--ok); } #graph .peer.degraded { fill: var(--warn); } #graph .peer.off { fill: var(--off); } #graph text.off { fill: var(--muted); }
  #error { display: none; padding: 8px 20px; background: #fdecec; color: var(--bad); border-bottom: 1px solid #f5c2c2; }
  label { font-size: 12px; color: var(--muted); font-weight: 400; }
  #search-form { display: flex; flex-wrap: wrap; gap: 8px; align-items: center; margin-bottom: 8px; }
  #search-form input[type=text], #search-form input[type=search], #search-form select { font: inherit; padding: 4px 6px; border: 1px solid var(--line); border-radius: 4px; }
  #search-query { flex: 1 1 260px; }
  #search-form button { font: inherit; padding: 4px 14px; border: 0; border-radius: 4px; background: var(--accent); color: #fff; cursor: pointer; }
  #search-results tr[data-entity-id] { cursor: pointer; } #search-results tr[data-entity-id]:hover { background: #f0f4fa; }
  .breakdown { font-size: 11px; color: var(--muted); white-space: nowrap; }
  #search-detail { display: none; margin-top: 10px; } #search-detail pre { background: var(--bg); padding: 8px; border-radius: 6px; overflow: auto; max-height: 320px; font-size: 12px; }
</style>
</head>
<body>
<header>
  <h1 id="node-name" data-testid="node-name">Registry node</h1>
  <span class="muted" id="node-host" data-testid="node-host"></span>
  <div class="right">
    <span class="muted">activity stream <span id="ws-state" data-testid="ws-state" class="badge connecting">connecting</span></span>
    <span class="muted">updated <span id="updated" data-testid="updated">never</span></span>
  </div>
</header>
<div id="error" data-testid="error"></div>
<main>
  <section id="identity" data-testid="identity">
    <h2>Identity</h2>
    <dl>
      <dt>registry ID</dt><dd><code id="registry-id" data-testid="registry-id">…</code></dd>
      <dt>peer ID</dt><dd><code id="peer-id" data-testid="peer-id">…</code></dd>
      <dt>public key</dt><dd><code id="public-key" data-testid="public-key">…</code></dd>
      <dt>version</dt><dd id="version" data-testid="version">…</dd>
      <dt>uptime</dt><dd id="uptime" data-testid="uptime">…</dd>
      <dt>listening</dt><dd id="addresses" data-testid="addresses">…</dd>
    </dl>
  </section>
  <section id="counts" data-testid="counts">
    <h2>Counts</h2>
    <div class="group">held by this node</div>
    <div class="stats">
      <div class="stat"><b id="count-entities" data-testid="count-entities">–</b>entities</div>
      <div class="stat"><b id="count-agents" data-testid="count-agents">–</b>agents</div>
      <div class="stat"><b id="count-services" data-testid="count-services">–</b>services</div>
      <div class="stat"><b id="count-developers" data-testid="count-developers">–</b>developers</div>
    </div>
    <div class="group">liveness of home entities <span id="liveness-note" data-testid="liveness-note"></span></div>
    <div class="stats">
      <div class="stat ok"><b id="count-active" data-testid="count-active">–</b>active</div>
      <div class="stat warn"><b id="count-inactive" data-testid="count-inactive">–</b>inactive</div>
    </div>
    <div class="group">network, as this node sees it</div>
    <div class="stats">
      <div class="stat"><b id="count-peers" data-testid="count-peers">–</b>connected peers</div>
      <div class="stat"><b id="count-known-peers" data-testid="count-known-peers">–</b>known peers</div>
      <div class="stat"><b id="est-registries" data-testid="est-registries">–</b>registries (est.)</div>
      <div class="stat"><b id="est-entities" data-testid="est-entities">–</b>entities (est.)</div>
      <div class="stat"><b id="gossip-rate" data-testid="gossip-rate">–</b>gossip / min</div>
    </div>
  </section>
  <section id="peers" data-testid="peers">
    <h2>Peers <small id="mesh-note" data-testid="mesh-note"></small></h2>
    <svg id="graph" data-testid="peer-graph" viewBox="-200 -125 400 250" preserveAspectRatio="xMidYMid meet" role="img" aria-label="peer graph"></svg>
    <table><thead><tr><th>name</th><th>registry</th><th>latency</th><th>health</th></tr></thead><tbody id="peer-table" data-testid="peer-table"></tbody></table>
  </section>
  <section id="activity-panel" data-testid="activity-panel">
    <h2>Live activity <label><input type="checkbox" id="hide-heartbeats"> hide heartbeats</label></h2>
    <ul id="activity" data-testid="activity-list"></ul>
  </section>
  <section class="wide" id="search-panel" data-testid="search-panel">
    <h2>Search <small id="search-note" data-testid="search-note"></small></h2>
    <form id="search-form" data-testid="search-form">
      <input type="search" id="search-query" data-testid="search-query" placeholder="what should the agent do? (quote a phrase for an exact match)">
      <select id="search-type" data-testid="search-type"><option value="any">any type</option><option value="agent">agents</option><option value="service">services</option></select>
      <input type="text" id="search-category" data-testid="search-category" placeholder="category" size="12">
      <input type="text" id="search-tags" data-testid="search-tags" placeholder="tags, comma separated" size="18">
      <select id="search-status" data-testid="search-status"><option value="any">any status</option><option value="active">active</option><option value="inactive">inactive</option></select>
      <label><input type="checkbox" id="search-federated" data-testid="search-federated"> federated</label>
      <button type="submit" data-testid="search-submit">Search</button>
    </form>
    <table><thead><tr><th>#</th><th>name</th><th>FQAN or ID</th><th>type</th><th>category</th><th>availability</th><th>score</th><th>breakdown</th></tr></thead><tbody id="search-results" data-testid="search-results"></tbody></table>
    <div id="search-detail" data-testid="search-detail">
      <h2>Record <small id="search-detail-id" data-testid="search-detail-id"></small></h2>
      <pre id="search-record" data-testid="search-record"></pre>
      <h2>Card <small id="search-card-note" data-testid="search-card-note"></small></h2>
      <pre id="search-card" data-testid="search-card"></pre>
    </div>
  </section>
  <section class="wide" id="entities-panel" data-testid="entities-panel">
    <h2>Newest entities <small id="entities-note" data-testid="entities-note"></small></h2>
    <table><thead><tr><th>name</th><th>ID</th><th>type</th><th>category</th><th>status</th><th>last heartbeat</th><th>home</th><th>registered</th></tr></thead><tbody id="entity-table" data-testid="entity-table"></tbody></table>
  </section>
</main>
<script>
'use strict'
const POLL_MS = 5000
const MAX_EVENTS = 100
const SHOWN_ENTITIES = 12
const MAX_GRAPH_PEERS = 24
const SVG_NS = 'http://www.w3.org/2000/svg'
const $ = id => document.getElementById(id)
const setText = (id, value) => { $(id).textContent = value == null || value === '' ? '–' : String(value) }
const setNote = (id, value) => { $(id).textContent = value || '' }
const num = n => (typeof n === 'number' ? n.toLocaleString('en') : '–')
const short = id => (id && id.length > 24 ? id.slice(0, 14) + '…' + id.slice(-6) : id)
const time = ts => { const d = new Date(ts); return isNaN(d.getTime()) ? '' : d.toLocaleTimeString('en-GB') }
const getJson = path => fetch(path, { headers: { accept: 'application/json', 'x-registry-dashboard': '1' } })
  .then(r => (r.ok ? r.json() : Promise.reject(new Error(path + ': HTTP ' + r.status))))

/** A DOM element (or an SVG one when ns is given) with attributes and text. */
function el(tag, attrs, text, ns) {
  const node = ns ? document.createElementNS(ns, tag) : document.createElement(tag)
  for (const key in attrs || {}) if (attrs[key] != null) node.setAttribute(key, attrs[key])
  if (text != null) node.textContent = String(text)
  return node
}
const cell = (content, attrs) => { const td = el('td', attrs); if (content instanceof Node) td.appendChild(content); else td.textContent = content == null || content === '' ? '–' : String(content); return td }
const badge = value => el('span', { class: 'badge ' + (value || '') }, value || '?')
const code = value => el('code', { title: value || '' }, short(value) || '–')

function duration(seconds) {
  const d = Math.floor(seconds / 86400), h = Math.floor(seconds % 86400 / 3600), m = Math.floor(seconds % 3600 / 60)
  return (d ? d + 'd ' : '') + (h || d ? h + 'h ' : '') + (m || h || d ? m + 'm ' : '') + (seconds % 60) + 's'
}

// Identity, local counts and the network estimates.
async function refreshStatus() {
  const [s, stats] = await Promise.all([getJson('/v1/network/status'), getJson('/v1/network/stats').catch(() => null)])
  document.title = (s.name || 'Registry node') + ' · dashboard'
  setText('node-name', s.name || 'Registry node'); setText('node-host', s.host)
  setText('registry-id', s.registry_id); setText('public-key', s.public_key)
  setText('peer-id', s.peer_id || 'none (mesh disabled)'); setText('version', s.version)
  setText('uptime', duration(s.uptime_seconds)); $('addresses').replaceChildren(...((s.addresses || []).length ? s.addresses.map(x => el('code', { class: 'address' }, x)) : ['none (mesh disabled)']))
  const e = s.entities || {}
  setText('count-agents', num(e.agents)); setText('count-services', num(e.services)); setText('count-developers', num(e.developers))
  setText('count-entities', num((e.agents || 0) + (e.services || 0)))
  const live = s.liveness || {}
  setText('count-active', num(live.active || 0)); setText('count-inactive', num(live.inactive || 0))
  setNote('liveness-note', '(' + num(live.home_entities || 0) + ')')
  const mesh = s.mesh || {}
  setText('count-peers', num(mesh.peer_count || 0)); setText('count-known-peers', num(mesh.known_peers || 0))
  setText('gossip-rate', num(mesh.gossip_announcements_per_min || 0))
  setNote('mesh-note', mesh.enabled ? 'DHT ' + (mesh.dht_mode || 'off') + ', reachability ' + (mesh.reachability || 'unknown') + (mesh.connections && mesh.connections.relayed ? ', ' + num(mesh.connections.relayed) + ' relayed' : '') + ', connectivity ' + (stats ? Math.round(stats.mesh_connectivity * 100) + ' %' : '–') : 'mesh disabled on this node')
  if (stats) { setText('est-registries', num(stats.estimated_registries)); setText('est-entities', num(stats.estimated_entities)) }
}

// The peer graph: this node in the centre, peers on an ellipse around it; disconnected known peers grey.
const peerNames = {}
async function refreshPeers() {
  const peers = (await getJson('/v1/network/peers?all=true')).peers || []
  for (const p of peers) if (p.name) peerNames[p.peer_id] = p.name
  const rows = peers.map(p => {
    const tr = el('tr', { 'data-peer-id': p.peer_id, 'data-connected': String(p.connected) })
    tr.append(cell(p.name || short(p.peer_id)), cell(code(p.registry_id)), cell(typeof p.latency_ms === 'number' ? p.latency_ms.toFixed(1) + ' ms' : null), cell(badge(p.health)))
    return tr
  })
  if (!rows.length) { const tr = el('tr'); tr.appendChild(el('td', { colspan: 4, class: 'empty' }, 'no peers known')); rows.push(tr) }
  $('peer-table').replaceChildren(...rows)

  const svg = $('graph')
  const shown = peers.slice(0, MAX_GRAPH_PEERS)
  const nodes = []
  const edges = []
  shown.forEach((p, i) => {
    const angle = (2 * Math.PI * i) / shown.length - Math.PI / 2
    const x = Math.round(160 * Math.cos(angle)), y = Math.round(88 * Math.sin(angle))
    const off = p.connected ? '' : ' off'
    edges.push(el('line', { class: 'edge' + off, x1: 0, y1: 0, x2: x, y2: y }, null, SVG_NS))
    const g = el('g', { 'data-testid': 'graph-peer', 'data-connected': String(p.connected) }, null, SVG_NS)
    const dot = el('circle', { class: 'peer ' + (p.connected ? p.health : 'off'), cx: x, cy: y, r: 9 }, null, SVG_NS)
    dot.appendChild(el('title', {}, (p.name || '?') + ' · ' + p.health + ' · ' + p.peer_id, SVG_NS))
    g.append(dot, el('text', { class: off.trim() || null, x, y: y + (y < 0 ? -14 : 22), 'text-anchor': 'middle' }, p.name || short(p.peer_id), SVG_NS))
    nodes.push(g)
  })
  const self = el('g', { 'data-testid': 'graph-self' }, null, SVG_NS)
  self.append(el('circle', { class: 'self', cx: 0, cy: 0, r: 14 }, null, SVG_NS), el('text', { x: 0, y: 30, 'text-anchor': 'middle' }, 'this node', SVG_NS))
  const extra = []
  if (peers.length > shown.length) extra.push(el('text', { x: 195, y: 118, 'text-anchor': 'end', class: 'off' }, '+' + (peers.length - shown.length) + ' more', SVG_NS))
  if (!peers.length) extra.push(el('text', { x: 0, y: 60, 'text-anchor': 'middle', class: 'off' }, 'no peers yet', SVG_NS))
  svg.replaceChildren(...edges, ...nodes, self, ...extra)
}

// Newest entities (the newest of the page fetched, which is all of them while the node holds no more).
const PAGE_SIZES = [200, 50, 10]
let pageSize = 0
async function refreshEntities() {
  let list
  for (; pageSize < PAGE_SIZES.length; pageSize++) {
    try { list = await getJson('/v1/entities?limit=' + PAGE_SIZES[pageSize]); break } catch (err) { if (pageSize === PAGE_SIZES.length - 1) throw err }
  }
  const records = list.entities || []
  const exact = (list.total || 0) <= records.length
  const newest = records.slice().sort((a, b) => String(b.registered_at).localeCompare(String(a.registered_at))).slice(0, SHOWN_ENTITIES)
  setNote('entities-note', newest.length ? newest.length + ' shown' + (exact ? ' of ' + num(list.total) : ', from a page of ' + num(records.length) + ' of ' + num(list.total)) : '')
  const rows = newest.map(e => {
    const tr = el('tr', { 'data-testid': 'entity-row', 'data-entity-id': e.entity_id })
    tr.append(cell(e.name), cell(code(e.entity_id)), cell(e.type), cell(e.category), cell(badge(e.status)),
      cell(e.last_heartbeat ? time(e.last_heartbeat) : 'never'), cell(e.home_registry), cell(time(e.registered_at)))
    return tr
  })
  if (!rows.length) { const tr = el('tr'); tr.appendChild(el('td', { colspan: 8, class: 'empty' }, 'no entities yet')); rows.push(tr) }
  $('entity-table').replaceChildren(...rows)
}

// The live activity stream, newest first, at most MAX_EVENTS items.
function summary(event) {
  const d = event.data || {}
  if (/^peer_/.test(event.type) && peerNames[d.peer_id]) return peerNames[d.peer_id] + ' (' + short(d.peer_id) + ')'
  const main = d.name || d.fqan || d.entity_id || d.subject || d.developer_id || d.handle || d.peer_id || d.query || d.registry_id || ''
  const more = d.status || d.outcome || d.action || (d.kind && d.kind !== main ? d.kind : '') || ''
  return more ? main + ' (' + more + ')' : main
}

function showEvent(event) {
  const li = el('li', { 'data-testid': 'activity-item', 'data-type': event.type, class: 'new' })
  if (event.type === 'agent_heartbeat' && $('hide-heartbeats').checked) li.hidden = true
  li.append(el('span', { class: 'muted' }, time(event.timestamp)), ' ', el('span', { class: 'type' }, event.type), ' ', summary(event))
  const list = $('activity')
  list.insertBefore(li, list.firstChild)
  while (list.children.length > MAX_EVENTS) list.removeChild(list.lastChild)
}
$('hide-heartbeats').addEventListener('change', ev => {
  for (const li of $('activity').querySelectorAll('li[data-type="agent_heartbeat"]')) li.hidden = ev.target.checked
})

function setWs(state) { const b = $('ws-state'); b.textContent = state; b.className = 'badge ' + state }

// Events that change what the polled panels show bring their refresh forward (debounced).
const soon = {}
function refreshSoon(name, fn) {
  if (soon[name]) return
  soon[name] = setTimeout(() => { soon[name] = null; fn().then(ok, fail) }, 500)
}

function connect() {
  const ws = new WebSocket((location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + '/v1/ws/activity')
  ws.onopen = () => setWs('live')
  ws.onclose = () => { setWs('reconnecting'); setTimeout(connect, 2000) }
  ws.onmessage = msg => {
    let event
    try { event = JSON.parse(msg.data) } catch (err) { return }
    if (event.type === 'hello') return
    if (event.type === 'events_dropped') event = { type: 'events_dropped', timestamp: event.timestamp, data: { name: (event.data && event.data.count) + ' events dropped' } }
    showEvent(event)
    const t = event.type
    if (/^(agent_(registered|deregistered|updated|became_active|became_inactive|status)|developer_|gossip_incoming)/.test(t)) {
      refreshSoon('entities', refreshEntities); refreshSoon('status', refreshStatus)
    }
    if (/^peer_/.test(t)) { refreshSoon('peers', refreshPeers); refreshSoon('status', refreshStatus) }
  }
}

// Search over POST /v1/search; a result row opens its record and card.
const postJson = (path, body) => fetch(path, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json' }, body: JSON.stringify(body) })
  .then(r => r.json().then(b => (r.ok ? b : Promise.reject(new Error((b && b.message) || path + ': HTTP ' + r.status)))))
const fixed = n => (typeof n === 'number' ? n.toFixed(3) : '–')

function searchBody() {
  const body = { query: $('search-query').value.trim(), type: $('search-type').value, status: $('search-status').value, max_results: 20 }
  const category = $('search-category').value.trim()
  const tags = $('search-tags').value.split(',').map(t => t.trim()).filter(Boolean)
  if (category) body.category = category
  if (tags.length) body.tags = tags
  if ($('search-federated').checked) body.federated = true
  return body
}

async function runSearch() {
  setNote('search-note', 'searching…')
  const reply = await postJson('/v1/search', searchBody())
  const stats = reply.search_stats || {}
  setNote('search-note', num(reply.total_found) + ' found in ' + stats.latency_ms + ' ms' + (stats.federated ? ', ' + (stats.peers_answered || 0) + ' of ' + (stats.peers_queried || 0) + ' peers answered' : '') + ' · semantic ' + (stats.semantic || '–'))
  const rows = (reply.results || []).map((r, i) => {
    const b = r.score_breakdown || {}
    const tr = el('tr', { 'data-testid': 'search-result', 'data-entity-id': r.entity_id })
    tr.append(cell(i + 1), cell(r.name), cell(code(r.fqan || r.entity_id)), cell(r.type || r.entity_type), cell(r.category), cell(badge(r.status)),
      cell(fixed(r.score), { 'data-testid': 'search-score' }),
      cell('text ' + fixed(b.text_relevance) + ' · semantic ' + fixed(b.semantic_similarity) + ' · trust ' + fixed(b.trust_score) + ' · fresh ' + fixed(b.freshness) + ' · avail ' + b.availability, { class: 'breakdown', 'data-testid': 'search-breakdown' }))
    tr.addEventListener('click', () => { showDetail(r.entity_id).catch(fail) })
    return tr
  })
  if (!rows.length) { const tr = el('tr'); tr.appendChild(el('td', { colspan: 8, class: 'empty' }, 'no match')); rows.push(tr) }
  $('search-results').replaceChildren(...rows)
}

async function showDetail(id) {
  $('search-detail').style.display = 'block'
  setNote('search-detail-id', id)
  $('search-record').textContent = JSON.stringify(await getJson('/v1/entities/' + encodeURIComponent(id)), null, 2)
  setNote('search-card-note', 'fetching…')
  $('search-card').textContent = ''
  try {
    const card = await getJson('/v1/entities/' + encodeURIComponent(id) + '/card')
    setNote('search-card-note', '')
    $('search-card').textContent = JSON.stringify(card, null, 2)
  } catch (err) {
    setNote('search-card-note', 'no card: ' + err.message)
  }
}
$('search-form').addEventListener('submit', ev => {
  ev.preventDefault()
  runSearch().then(() => $('error').style.display = 'none', err => setNote('search-note', 'search failed: ' + err.message))
})

function ok() { $('error').style.display = 'none'; setText('updated', new Date().toLocaleTimeString('en-GB')) }
function fail(err) { const box = $('error'); box.textContent = 'Could not reach the node API: ' + (err && err.message ? err.message : err); box.style.display = 'block' }
const tick = () => Promise.all([refreshStatus(), refreshPeers(), refreshEntities()]).then(ok, fail)
tick(); connect()
setInterval(tick, POLL_MS)
</script>
</body>
</html>
`
