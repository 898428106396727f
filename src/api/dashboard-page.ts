/**
 * The node's dashboard: one self-contained page (no CDN, no build step) built on the node's own
 * API: GET /v1/network/status and /v1/network/peers every few seconds, GET /v1/entities for the
 * newest entities, and the /v1/ws/activity stream for everything live.
 */
export const DASHBOARD_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Registry node dashboard</title>
<style>
  :root { --fg: #1d2330; --muted: #6b7385; --line: #dde1e8; --ok: #1f9d55; --warn: #d97706; --bad: #c53030; --accent: #2b6cb0; }
  * { box-sizing: border-box; }
  body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: #f6f7f9; }
  header { padding: 14px 20px; background: #fff; border-bottom: 1px solid var(--line); display: flex; gap: 24px; align-items: baseline; flex-wrap: wrap; }
  header h1 { font-size: 18px; margin: 0; }
  .muted { color: var(--muted); }
  code { font: 12px ui-monospace, SFMono-Regular, Menlo, monospace; }
  main { display: grid; grid-template-columns: repeat(auto-fit, minmax(420px, 1fr)); gap: 16px; padding: 16px 20px; }
  section { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 12px 16px; min-width: 0; }
  section h2 { font-size: 15px; margin: 0 0 10px; }
  .stats { display: flex; gap: 12px; flex-wrap: wrap; }
  .stat { flex: 1 1 90px; border: 1px solid var(--line); border-radius: 6px; padding: 8px 10px; }
  .stat b { display: block; font-size: 22px; }
  table { width: 100%; border-collapse: collapse; }
  th, td { text-align: left; padding: 4px 6px; border-bottom: 1px solid var(--line); vertical-align: top; }
  th { font-weight: 600; color: var(--muted); font-size: 12px; }
  .badge { display: inline-block; padding: 0 6px; border-radius: 9px; font-size: 12px; color: #fff; background: var(--muted); }
  .active, .healthy { background: var(--ok); } .inactive, .degraded { background: var(--warn); } .disconnected, .unreachable { background: var(--bad); }
  #events { list-style: none; margin: 0; padding: 0; max-height: 420px; overflow: auto; }
  #events li { padding: 3px 0; border-bottom: 1px dashed var(--line); overflow-wrap: anywhere; }
  #events .type { font-weight: 600; color: var(--accent); }
  svg text { font-size: 11px; fill: var(--fg); }
  #conn { font-weight: 600; }
</style>
</head>
<body>
<header>
  <h1 id="name">Registry node</h1>
  <span class="muted">registry <code id="registry-id">…</code></span>
  <span class="muted">peer <code id="peer-id">…</code></span>
  <span class="muted">host <code id="host">…</code></span>
  <span class="muted">up <span id="uptime">…</span></span>
  <span class="muted">activity stream: <span id="conn">connecting</span></span>
</header>
<main>
  <section>
    <h2>Counts</h2>
    <div class="stats">
      <div class="stat"><b id="count-agents">–</b>agents</div>
      <div class="stat"><b id="count-services">–</b>services</div>
      <div class="stat"><b id="count-developers">–</b>developers</div>
      <div class="stat"><b id="count-peers">–</b>peers</div>
      <div class="stat"><b id="count-gossip">–</b>gossip / min</div>
    </div>
  </section>
  <section>
    <h2>Peers</h2>
    <svg id="graph" viewBox="-160 -120 320 240" width="100%" height="240" role="img" aria-label="peer graph"></svg>
    <table><thead><tr><th>name</th><th>registry</th><th>latency</th><th>health</th></tr></thead><tbody id="peers"></tbody></table>
  </section>
  <section>
    <h2>Newest entities</h2>
    <table><thead><tr><th>name</th><th>type</th><th>status</th><th>home</th></tr></thead><tbody id="entities"></tbody></table>
  </section>
  <section>
    <h2>Live activity</h2>
    <ul id="events"></ul>
  </section>
</main>
<script>
'use strict'
const $ = id => document.getElementById(id)
const text = (el, value) => { el.textContent = value == null ? '–' : String(value) }
const esc = s => String(s == null ? '' : s).replace(/[&<>"']/g, c => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c])
const short = id => (id && id.length > 22 ? id.slice(0, 12) + '…' + id.slice(-6) : id)
const getJson = path => fetch(path, { headers: { accept: 'application/json' } }).then(r => (r.ok ? r.json() : Promise.reject(new Error(path + ': ' + r.status))))

function duration(seconds) {
  const d = Math.floor(seconds / 86400), h = Math.floor(seconds % 86400 / 3600), m = Math.floor(seconds % 3600 / 60)
  return (d ? d + 'd ' : '') + (h || d ? h + 'h ' : '') + m + 'm ' + (seconds % 60) + 's'
}

async function refreshStatus() {
  const s = await getJson('/v1/network/status')
  text($('name'), s.name || 'Registry node'); text($('registry-id'), s.registry_id); text($('peer-id'), short(s.peer_id)); text($('host'), s.host)
  text($('uptime'), duration(s.uptime_seconds))
  text($('count-agents'), s.entities && s.entities.agents); text($('count-services'), s.entities && s.entities.services)
  text($('count-developers'), s.entities && s.entities.developers)
  text($('count-peers'), s.mesh ? s.mesh.peer_count : 0); text($('count-gossip'), s.mesh ? s.mesh.gossip_announcements_per_min : 0)
}

async function refreshPeers() {
  let peers = []
  try { peers = (await getJson('/v1/network/peers')).peers || [] } catch (err) { /* mesh off: no peers */ }
  $('peers').innerHTML = peers.map(p => '<tr><td>' + esc(p.name || '?') + '</td><td><code>' + esc(short(p.registry_id)) + '</code></td><td>' +
    (typeof p.latency_ms === 'number' ? p.latency_ms.toFixed(1) + ' ms' : '–') + '</td><td><span class="badge ' + esc(p.health) + '">' + esc(p.health) + '</span></td></tr>').join('')
  const r = 95
  let svg = ''
  peers.forEach((p, i) => {
    const a = (2 * Math.PI * i) / Math.max(peers.length, 1) - Math.PI / 2
    const x = Math.round(r * Math.cos(a) * 1.4), y = Math.round(r * Math.sin(a))
    const color = p.health === 'healthy' ? 'var(--ok)' : p.health === 'degraded' ? 'var(--warn)' : 'var(--bad)'
    svg += '<line x1="0" y1="0" x2="' + x + '" y2="' + y + '" stroke="#c3c9d4"/>' +
      '<circle cx="' + x + '" cy="' + y + '" r="9" fill="' + color + '"><title>' + esc(p.registry_id) + '</title></circle>' +
      '<text x="' + x + '" y="' + (y + 21) + '" text-anchor="middle">' + esc(p.name || short(p.peer_id)) + '</text>'
  })
  svg += '<circle cx="0" cy="0" r="13" fill="var(--accent)"/><text x="0" y="28" text-anchor="middle">this node</text>'
  $('graph').innerHTML = svg
}

async function refreshEntities() {
  const list = await getJson('/v1/entities?limit=15')
  const rows = (list.entities || list.agents || []).slice().sort((a, b) => String(b.registered_at).localeCompare(String(a.registered_at)))
  $('entities').innerHTML = rows.map(e => '<tr data-id="' + esc(e.entity_id) + '"><td>' + esc(e.name) + '</td><td>' + esc(e.type) + '</td><td><span class="badge ' +
    esc(e.status) + '">' + esc(e.status) + '</span></td><td>' + esc(e.home_registry) + '</td></tr>').join('')
}

function summary(event) {
  const d = event.data || {}
  return d.name || d.fqan || d.entity_id || d.subject || d.developer_id || d.handle || d.peer_id || d.query || d.registry_id || ''
}

function showEvent(event) {
  const li = document.createElement('li')
  const time = (event.timestamp || '').slice(11, 19)
  li.innerHTML = '<span class="muted">' + esc(time) + '</span> <span class="type">' + esc(event.type) + '</span> ' + esc(summary(event))
  const list = $('events')
  list.insertBefore(li, list.firstChild)
  while (list.children.length > 200) list.removeChild(list.lastChild)
}

let entitiesTimer = null
function connect() {
  const ws = new WebSocket((location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + '/v1/ws/activity')
  ws.onopen = () => text($('conn'), 'live')
  ws.onclose = () => { text($('conn'), 'reconnecting'); setTimeout(connect, 2000) }
  ws.onmessage = msg => {
    let event
    try { event = JSON.parse(msg.data) } catch (err) { return }
    if (event.type === 'hello' || event.type === 'events_dropped') return
    showEvent(event)
    // Entity changes refresh the table, at most once a second.
    if (/^agent_|^entity_/.test(event.type) && entitiesTimer === null) {
      entitiesTimer = setTimeout(() => { entitiesTimer = null; refreshEntities().catch(() => {}) }, 300)
    }
  }
}

const tick = () => Promise.all([refreshStatus(), refreshPeers()]).catch(() => {})
tick(); refreshEntities().catch(() => {}); connect()
setInterval(tick, 5000)
setInterval(() => refreshEntities().catch(() => {}), 15000)
</script>
</body>
</html>
`
