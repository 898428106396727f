#!/usr/bin/env bash
# Checks docker/Dockerfile, docker/compose.yml and .dockerignore as far as a machine WITHOUT a
# container engine allows. Not part of npm test; run it by hand after changing those files, the
# dependencies or the start-up path:   bash scripts/check-docker.sh [--keep]
#
#  1. compose: `docker compose config` (plugin) or `docker-compose config` (Debian: apt-get install
#     docker-compose) parses and validates docker/compose.yml; the resolved services are kept.
#  2. image build, replayed: the Dockerfile is read and its stages replayed in a scratch folder, under
#     the Node major of its FROM lines (node:<major>-...; installed from the npm registry into a cache
#     by scripts/runtimes.mjs) and that Node release's own npm (the npm of the official image): every
#     COPY from the context (checked to exist and not to be excluded by .dockerignore), every RUN of
#     the build stage as written, COPY --from. RUNs of the final stage (mkdir/chown of /data) are
#     printed, not run.
#  3. image smoke run, under the same Node: the final stage's ENTRYPOINT + CMD with its ENV, as a
#     non-root user when run as root, its data in a fresh folder (the VOLUME); the HEALTHCHECK command
#     must pass while the node runs and fail after it stops; /health, /dashboard, the Swagger assets
#     answer; the server kind /v1/info reports is printed; lmdb and onnxruntime-node load from the
#     pruned node_modules, exactly one uWebSockets.js binary is left (the image's ABI) and is loaded
#     where this machine's glibc allows (>= 2.38; else step 5 shows it); dev dependencies are absent;
#     SIGTERM stops it cleanly within docker stop's 10 s.
#  4. mesh: the compose services run as processes with the environment compose gives them (ports
#     moved to free local ones, binds to 127.0.0.1, service names in bootstrap and announced addresses
#     -> localhost, started in depends_on order without waiting, like compose); every bootstrap edge
#     must show up in GET /v1/network/peers (the full mesh is reported); then the bootstrap target
#     restarts on its data and must keep its PeerId and get its peers back (restart: unless-stopped).
#  5. uWS in a trixie root: scripts/check-uws-trixie.sh runs the pruned app of step 2 with
#     --http-server uws in a debootstrapped Debian 13 root (glibc 2.41, like node:24-trixie-slim) under
#     chroot with the same Node, and the HTTP front test files there on uws. Needs root and
#     debootstrap (apt-get installs it); skipped with the reason otherwise, or with CHECK_UWS_TRIXIE=0.
#
# Not checked (needs an engine): pulling node:24-trixie-slim, the build in it (its exact npm, glibc
# and CPU architecture), file ownership and the /data volume inside the image, HEALTHCHECK
# scheduling, Docker DNS names and the port publishing of compose. scripts/check-container.sh
# builds and runs the image with buildah and podman where they are installed.
#
# Environment: CHECK_DOCKER_DIR (scratch folder, kept; default a new one under /tmp, removed), IMAGE_NPM_VERSION
# (npm used for the build stage's RUNs; default the npm bundled with the Node release installed for
# the image, read from its CHANGELOG; "local" uses the npm on PATH), CHECK_DOCKER_USER (uid:gid for
# the node processes when root; default 65534:65534), CHECK_UWS_TRIXIE=0 (skip step 5).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
KEEP=0
[ "${1:-}" = "--keep" ] && KEEP=1

if [ -n "${CHECK_DOCKER_DIR:-}" ]; then
  WORK=$CHECK_DOCKER_DIR KEEP=1   # a folder given by the caller is never removed
  mkdir -p "$WORK"
else
  WORK=$(mktemp -d /tmp/check-docker.XXXXXX)
fi
chmod 755 "$WORK"   # the node processes run as another user when this runs as root
cleanup() {
  if [ "$KEEP" = 1 ]; then echo "scratch folder kept: $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT

step() { printf '\n== %s\n' "$*"; }
fail() { printf 'FAIL: %s\n' "$*" >&2; exit 1; }

# --- 1. compose file ------------------------------------------------------------------------------
step "1. docker/compose.yml: compose config"
if docker compose version >/dev/null 2>&1; then
  echo "using: $(docker compose version)"
  docker compose -f docker/compose.yml config --quiet || fail "docker compose config rejected docker/compose.yml"
  docker compose -f docker/compose.yml config --format json > "$WORK/compose.json" || fail "docker compose config --format json"
elif command -v docker-compose >/dev/null 2>&1; then
  echo "using: $(docker-compose version --short 2>/dev/null || docker-compose version | head -1)"
  docker-compose -f docker/compose.yml config --quiet || fail "docker-compose config rejected docker/compose.yml"
  docker-compose -f docker/compose.yml config > "$WORK/compose.yaml" || fail "docker-compose config"
  # docker-compose (1.x) prints YAML only; it depends on python3-yaml, so that is there.
  python3 -c 'import json, sys, yaml; json.dump(yaml.safe_load(open(sys.argv[1])), open(sys.argv[2], "w"))' \
    "$WORK/compose.yaml" "$WORK/compose.json" || fail "could not convert the resolved compose file to JSON"
else
  fail "neither 'docker compose' nor 'docker-compose' is installed (Debian: apt-get install -y docker-compose)"
fi
echo "ok: compose file valid; services: $(node -e 'console.log(Object.keys(JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).services).join(", "))' "$WORK/compose.json")"

# --- Node and npm of the image ---------------------------------------------------------------------
IMAGE_MAJOR=$(sed -n 's/^FROM node:\([0-9][0-9]*\).*/\1/p' docker/Dockerfile | sort -u)
[ "$(echo "$IMAGE_MAJOR" | wc -w)" = 1 ] || fail "expected every stage of docker/Dockerfile FROM node:<one major>-..., found majors: ${IMAGE_MAJOR:-none}"
t=$(date +%s)
node scripts/runtimes.mjs install "$IMAGE_MAJOR" >/dev/null || fail "could not install Node $IMAGE_MAJOR from the npm registry (scripts/runtimes.mjs)"
NODE_BIN=$(node scripts/runtimes.mjs path "$IMAGE_MAJOR")
IMAGE_NODE=$("$NODE_BIN/node" -p process.versions.node)
# The official images carry the npm bundled with their Node release: the newest "upgrade npm to X"
# entry of that release's CHANGELOG (shipped in the node-<os>-<arch> package) names it.
CHANGELOG=$(find "$(dirname "$(dirname "$NODE_BIN")")" -path '*/node-linux-*/CHANGELOG.md' 2>/dev/null | head -1)
BUNDLED_NPM=$(grep -m1 -oE 'upgrade npm to [0-9]+\.[0-9]+\.[0-9]+' "${CHANGELOG:-/dev/null}" | awk '{print $4}' || true)
NPM_VERSION=${IMAGE_NPM_VERSION:-$BUNDLED_NPM}
[ -n "$NPM_VERSION" ] || fail "could not tell which npm Node $IMAGE_NODE bundles: set IMAGE_NPM_VERSION"
mkdir -p "$WORK/bin"
if [ "$NPM_VERSION" = local ]; then
  NPM_CLI="$NODE_BIN/node $(dirname "$(readlink -f "$(command -v npm)")")/npm-cli.js"
else
  TOOLS=${XDG_CACHE_HOME:-$HOME/.cache}/registry-node/npm-$NPM_VERSION
  if [ ! -f "$TOOLS/node_modules/npm/bin/npm-cli.js" ]; then
    echo "installing npm $NPM_VERSION into $TOOLS (the build stage's npm)"
    npm install --prefix "$TOOLS" --no-save --no-audit --no-fund "npm@$NPM_VERSION" >/dev/null || fail "could not install npm@$NPM_VERSION from the npm registry"
  fi
  NPM_CLI="$NODE_BIN/node $TOOLS/node_modules/npm/bin/npm-cli.js"
fi
printf '#!/bin/sh\nexec %s "$@"\n' "$NPM_CLI" > "$WORK/bin/npm"
chmod +x "$WORK/bin/npm"
# The image's node for the processes run as another user (the cache under $HOME may be closed to
# them): a hard link (or copy) in the scratch folder, first on PATH from here on.
mkdir -p "$WORK/node"
ln -f "$(readlink -f "$NODE_BIN/node")" "$WORK/node/node" 2>/dev/null || cp "$(readlink -f "$NODE_BIN/node")" "$WORK/node/node"
echo "image runtime: Node $IMAGE_NODE ($NODE_BIN), npm $("$WORK/bin/npm" --version)${IMAGE_NPM_VERSION:+ (IMAGE_NPM_VERSION)} ($(( $(date +%s) - t )) s)"
NODE_BIN=$WORK/node

# --- 2-4. replay, smoke, mesh ---------------------------------------------------------------------
cat > "$WORK/check.mjs" <<'EOF'
import { spawn, spawnSync } from 'node:child_process'
import { chownSync, cpSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { dirname, join, posix, relative } from 'node:path'

const [ROOT, WORK] = process.argv.slice(2)
const IS_ROOT = process.getuid?.() === 0
const [UID, GID] = (process.env.CHECK_DOCKER_USER ?? '65534:65534').split(':').map(Number)
const children = new Set()
const fail = message => { console.error(`FAIL: ${message}`); for (const c of children) c.kill('SIGKILL'); process.exit(1) }
const ok = message => console.log(`ok: ${message}`)
const step = title => console.log(`\n== ${title}`)
const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))

// ---------- Dockerfile ----------
function instructions(text) {
  const out = []
  let current = ''
  for (const raw of text.split('\n')) {
    const line = raw.trimEnd()
    if (current === '' && (/^\s*#/.test(line) || line.trim() === '')) continue
    if (current !== '' && /^\s*#/.test(line)) continue
    if (line.endsWith('\\')) { current += line.slice(0, -1) + ' '; continue }
    current += line
    const m = /^\s*(\w+)\s+(.*)$/s.exec(current)
    if (m) out.push({ op: m[1].toUpperCase(), args: m[2].trim() })
    current = ''
  }
  return out
}
function flagsAndRest(args) {
  const flags = {}
  let rest = args
  for (let m; (m = /^--([\w-]+)(?:=(\S+))?\s+/.exec(rest)); rest = rest.slice(m[0].length)) flags[m[1]] = m[2] ?? true
  return { flags, rest }
}
const execForm = args => args.startsWith('[') ? JSON.parse(args) : ['/bin/sh', '-c', args]
function parseEnv(args) {
  const env = {}
  if (!/^\w+=/.test(args)) { const [k, ...v] = args.split(/\s+/); env[k] = v.join(' '); return env }
  for (const m of args.matchAll(/(\w+)=("(?:[^"\\]|\\.)*"|\S*)/g)) env[m[1]] = m[2].startsWith('"') ? JSON.parse(m[2]) : m[2]
  return env
}

// .dockerignore: Docker's rules (patterns relative to the context root, * and ? within one path
// element, ** across elements, ! re-includes, the last matching pattern wins, a match on a folder
// covers what is inside it).
const ignoreRules = (existsSync(join(ROOT, '.dockerignore')) ? readFileSync(join(ROOT, '.dockerignore'), 'utf8') : '')
  .split('\n').map(l => l.trim()).filter(l => l && !l.startsWith('#')).map(l => {
    const negate = l.startsWith('!')
    const pattern = posix.normalize((negate ? l.slice(1) : l).replace(/^\/+/, '')).replace(/\/+$/, '')
    let re = ''
    for (let i = 0; i < pattern.length; i++) {
      const ch = pattern[i]
      if (pattern.startsWith('**/', i)) { re += '(?:.*/)?'; i += 2 } else if (pattern.startsWith('**', i)) { re += '.*'; i += 1 } else if (ch === '*') re += '[^/]*'
      else if (ch === '?') re += '[^/]'
      else re += ch.replace(/[.+^${}()|[\]\\]/g, '\\$&')
    }
    return { negate, re: new RegExp(`^${re}$`) }
  })
function ignored(rel) {
  const parts = rel.split('/')
  let out = false
  for (const rule of ignoreRules) {
    for (let n = 1; n <= parts.length; n++) if (rule.re.test(parts.slice(0, n).join('/'))) { out = !rule.negate; break }
  }
  return out
}

function copyFromContext(src, dest) {
  const rel = posix.normalize(src).replace(/^\.?\/+/, '')
  const from = join(ROOT, rel)
  if (!existsSync(from)) fail(`COPY source ${src} does not exist in the build context`)
  if (ignored(rel)) fail(`COPY source ${src} is excluded by .dockerignore`)
  if (statSync(from).isDirectory()) {
    cpSync(from, dest, { recursive: true, filter: path => { const r = relative(ROOT, path); return r === rel || !ignored(r) } })
    let skipped = 0
    const count = dir => { for (const e of readdirSync(dir)) { const p = join(dir, e); const r = relative(ROOT, p); if (ignored(r)) skipped++; else if (lstatSync(p).isDirectory()) count(p) } }
    count(from)
    if (skipped) console.log(`   (${skipped} entries under ${rel}/ left out by .dockerignore)`)
  } else {
    cpSync(from, dest)
  }
}

async function replay() {
  step('2. docker/Dockerfile: build replayed in a scratch folder')
  const dockerfile = readFileSync(join(ROOT, 'docker/Dockerfile'), 'utf8')
  const all = instructions(dockerfile)
  const stages = []
  for (const ins of all) {
    if (ins.op === 'FROM') {
      const [image, , name] = ins.args.split(/\s+/)
      stages.push({ image, name: name ?? String(stages.length), index: stages.length, root: join(WORK, 'stages', String(stages.length)), workdir: '/', env: {}, ins: [] })
    } else if (stages.length) stages.at(-1).ins.push(ins)
  }
  if (!stages.length) fail('no FROM in docker/Dockerfile')
  const final = stages.at(-1)
  const localMajor = process.versions.node.split('.')[0]
  for (const s of stages) {
    const major = /^node:(\d+)/.exec(s.image)?.[1]
    if (major && major !== localMajor) fail(`stage ${s.name} uses ${s.image} but this machine runs Node ${process.versions.node}: the replay would not say anything about it`)
    console.log(`-- stage ${s.name} (FROM ${s.image}; replayed with Node ${process.versions.node})`)
    mkdirSync(s.root, { recursive: true })
    const runtime = { user: 'root', volumes: [], healthcheck: null, entrypoint: [], cmd: [], expose: [] }
    s.runtime = runtime
    for (const { op, args } of s.ins) {
      const at = p => join(s.root, posix.isAbsolute(p) ? p : posix.join(s.workdir, p))
      switch (op) {
        case 'WORKDIR': s.workdir = posix.resolve(s.workdir, args); mkdirSync(at('.'), { recursive: true }); break
        case 'ENV': Object.assign(s.env, parseEnv(args)); break
        case 'ARG': break
        case 'COPY': {
          const { flags, rest } = flagsAndRest(args)
          const parts = rest.startsWith('[') ? JSON.parse(rest) : rest.split(/\s+/)
          const dest = parts.pop()
          const intoDir = dest.endsWith('/') || parts.length > 1
          for (const src of parts) {
            const target = intoDir ? join(at(dest), posix.basename(src)) : at(dest)
            mkdirSync(dirname(target), { recursive: true })
            if (flags.from) {
              const from = stages.find(x => x.name === flags.from)
              if (!from || from === s) fail(`COPY --from=${flags.from}: no such earlier stage`)
              const path = join(from.root, posix.isAbsolute(src) ? src : posix.join('/', src))
              if (!existsSync(path)) fail(`COPY --from=${flags.from} ${src}: the stage has no such path`)
              cpSync(path, target, { recursive: true, verbatimSymlinks: true })
            } else {
              copyFromContext(src, target)
            }
            console.log(`   COPY ${flags.from ? `--from=${flags.from} ` : ''}${src} -> ${posix.join(s.workdir, dest)}`)
          }
          break
        }
        case 'RUN': {
          if (s === final) { console.log(`   RUN ${args}   (final stage: not run here)`); break }
          console.log(`   RUN ${args}`)
          const started = Date.now()
          const r = spawnSync('/bin/sh', ['-c', args], {
            cwd: at('.'), stdio: ['ignore', 'inherit', 'inherit'],
            env: { ...process.env, ...s.env, PATH: `${join(WORK, 'bin')}:${process.env.PATH}` }
          })
          if (r.status !== 0) fail(`RUN ${args} exited with ${r.status}`)
          console.log(`   (${((Date.now() - started) / 1000).toFixed(1)} s)`)
          break
        }
        case 'USER': runtime.user = args; break
        case 'VOLUME': runtime.volumes.push(...(args.startsWith('[') ? JSON.parse(args) : args.split(/\s+/))); break
        case 'EXPOSE': runtime.expose.push(...args.split(/\s+/)); break
        case 'HEALTHCHECK': {
          const { rest } = flagsAndRest(args)
          if (!rest.startsWith('CMD')) fail(`HEALTHCHECK ${args}: expected CMD`)
          runtime.healthcheck = execForm(rest.slice(3).trim())
          break
        }
        case 'ENTRYPOINT': runtime.entrypoint = execForm(args); break
        case 'CMD': runtime.cmd = execForm(args); break
        default: console.log(`   ${op} ${args}   (not replayed)`)
      }
    }
  }
  return final
}

// ---------- running nodes ----------
async function freePorts(n, consecutive = 1) {
  const out = []
  while (out.length < n) {
    const port = await new Promise((resolve, reject) => { const srv = createServer(); srv.once('error', reject); srv.listen(0, '127.0.0.1', () => { const p = srv.address().port; srv.close(() => resolve(p)) }) })
    let freeAll = true
    for (let k = 1; k < consecutive; k++) {
      freeAll &&= await new Promise(resolve => { const srv = createServer(); srv.once('error', () => resolve(false)); srv.listen(port + k, '127.0.0.1', () => srv.close(() => resolve(true))) })
    }
    if (freeAll && port + consecutive < 65535 && !out.some(p => Math.abs(p - port) < consecutive)) out.push(port)
  }
  return out
}
const asUser = IS_ROOT ? { uid: UID, gid: GID } : {}
function dataDir(name) {
  const dir = join(WORK, 'volumes', name)
  mkdirSync(dir, { recursive: true })
  if (IS_ROOT) chownSync(dir, UID, GID)
  return dir
}
function startNode(label, app, argv, env, logs) {
  const child = spawn(argv[0], argv.slice(1), { cwd: app, env, stdio: ['ignore', 'pipe', 'pipe'], ...asUser })
  children.add(child)
  let out = ''
  child.stdout.on('data', d => { out += d })
  child.stderr.on('data', d => { out += d })
  child.exited = new Promise(resolve => child.on('exit', (code, signal) => { children.delete(child); resolve({ code, signal }) }))
  child.output = () => out
  child.label = label
  logs.push(child)
  return child
}
async function waitFor(what, fn, ms, every = 250) {
  const end = Date.now() + ms
  for (;;) {
    const v = await fn().catch(() => undefined)
    if (v) return v
    if (Date.now() > end) fail(`timed out waiting for ${what}`)
    await sleep(every)
  }
}
const getJson = async (port, path) => { const r = await fetch(`http://127.0.0.1:${port}${path}`); if (!r.ok) throw new Error(`${path}: ${r.status}`); return r.json() }
function healthcheck(runtime, app, env) {
  const r = spawnSync(runtime.healthcheck[0], runtime.healthcheck.slice(1), { cwd: app, env, timeout: 5000, ...asUser })
  return r.status
}
async function stopNode(child, ms = 10_000) {
  const t0 = Date.now()
  child.kill('SIGTERM')
  const result = await Promise.race([child.exited, sleep(ms).then(() => null)])
  if (!result) { child.kill('SIGKILL'); fail(`${child.label} did not stop within ${ms / 1000} s of SIGTERM (docker stop would kill it)`) }
  if (result.code !== 0) fail(`${child.label} exited with ${result.code ?? result.signal} on SIGTERM:\n${child.output()}`)
  return Date.now() - t0
}
function imageEnv(final, extra) {
  // The image's environment: PATH of this machine (node is on it in the image too), the Dockerfile's
  // ENV, volume paths mapped to scratch folders, then the extra variables.
  const env = { PATH: process.env.PATH, HOME: '/tmp', ...final.env }
  return { ...env, ...extra }
}

async function smoke(final) {
  step('3. the image, run: ENTRYPOINT + CMD, HEALTHCHECK, runtime files')
  const app = join(final.root, final.workdir)
  const rt = final.runtime
  const argv = [...rt.entrypoint, ...rt.cmd]
  if (argv.length === 0) fail('no ENTRYPOINT/CMD')
  if (!rt.healthcheck) fail('no HEALTHCHECK')
  if (rt.user === 'root' || rt.user === '0') fail('the final stage runs as root')
  console.log(`   user ${rt.user} (here: ${IS_ROOT ? `uid ${UID}` : 'this user'}); volumes ${rt.volumes.join(' ')}; expose ${rt.expose.join(' ')}; command ${argv.join(' ')}`)
  // The lock file says which packages only development needs ("dev"); one that a production
  // dependency also takes as an optional peer ("devOptional": typescript, for viem) stays after
  // npm prune --omit=dev, as npm means it to.
  const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')).packages
  for (const dev of ['typescript', 'ava', 'tsx', 'playwright-core', 'autocannon', '@types/node']) {
    if (!existsSync(join(app, 'node_modules', dev))) continue
    if (lock[`node_modules/${dev}`]?.devOptional) console.log(`   ${dev} stays: a production dependency takes it as an optional peer`)
    else fail(`dev dependency ${dev} is in the image's node_modules`)
  }
  ok('no dev dependencies in node_modules')
  for (const f of ['dist/cli.js', 'dist/identity/verify-worker.js', 'dist/search/embedders/onnx-worker.js', 'package.json']) {
    if (!existsSync(join(app, f))) fail(`${f} missing from the image`)
  }
  ok('dist/cli.js, the worker scripts and package.json are in the image')
  // Native binaries left after the pruning: onnxruntime-node's for this platform only, and exactly one
  // uWebSockets.js build, the image's: @btc-vision/uwebsockets.js (package root) for this Node ABI.
  const abi = `${process.platform}_${process.arch}_${process.versions.modules}`
  const uwsLeft = ['uWebSockets.js/binaries', '@btc-vision/uwebsockets.js']
    .flatMap(d => existsSync(join(app, 'node_modules', d)) ? readdirSync(join(app, 'node_modules', d)).filter(f => f.endsWith('.node')).map(f => `${d}/${f}`) : [])
  if (uwsLeft.join() !== `@btc-vision/uwebsockets.js/uws_${abi}.node`) fail(`the pruned node_modules should hold exactly @btc-vision/uwebsockets.js/uws_${abi}.node of the uWS binaries; it holds: ${uwsLeft.join(', ') || 'none'}`)
  const ortLeft = readdirSync(join(app, 'node_modules/onnxruntime-node/bin')).flatMap(v => readdirSync(join(app, 'node_modules/onnxruntime-node/bin', v)).flatMap(p => readdirSync(join(app, 'node_modules/onnxruntime-node/bin', v, p)).map(a => `${v}/${p}/${a}`)))
  if (!ortLeft.length || ortLeft.some(d => !d.endsWith(`/${process.platform}/${process.arch}`))) fail(`onnxruntime-node binaries after pruning: ${ortLeft.join(', ')}`)
  ok(`native binaries pruned: uWS ${uwsLeft[0]}; onnxruntime-node ${ortLeft.join(', ')}`)
  const probe = `
    const lmdb = await import('lmdb')
    const db = lmdb.open({ path: process.env.PROBE_DIR }); await db.put('k', 1); if (db.get('k') !== 1) throw new Error('lmdb'); await db.close()
    const ort = await import('onnxruntime-node'); if (typeof ort.InferenceSession?.create !== 'function') throw new Error('onnxruntime-node')
    await import('@huggingface/tokenizers'); await import('swagger-ui-dist/package.json', { with: { type: 'json' } })
    console.log('native modules loaded: lmdb, onnxruntime-node; tokenizers, swagger-ui-dist resolved')
    // The uWS binary itself (the loader never uses a JavaScript imitation): loads, or the first line of why not.
    const { createRequire } = await import('node:module'); const require = createRequire(process.cwd() + '/')
    try { if (typeof require('./node_modules/${uwsLeft[0]}').App !== 'function') throw new Error('no App export'); console.log('uws: loaded') }
    catch (err) { console.log('uws: ' + String(err.message).split('\\n').find(l => /GLIBC_|Error/.test(l)) ?? String(err.message).split('\\n')[0]) }`
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', probe], { cwd: app, env: imageEnv(final, { PROBE_DIR: dataDir('probe') }), encoding: 'utf8', ...asUser })
  if (r.status !== 0) fail(`loading the runtime modules from the pruned node_modules failed:\n${r.error ?? r.stderr}`)
  const [loaded, uwsLine] = r.stdout.trim().split('\n')
  ok(loaded)
  const glibc = process.report.getReport().header.glibcVersionRuntime
  const uwsLoads = uwsLine === 'uws: loaded'
  if (uwsLoads) ok(`${uwsLeft[0]} loads here (glibc ${glibc})`)
  else if (/GLIBC_2\.\d+' not found/.test(uwsLine)) console.log(`   note: ${uwsLeft[0]} does not load on this machine's glibc ${glibc} (${uwsLine.replace(/^uws: /, '').replace(/\(required by .*\)/, '').trim()}); the image's (trixie: 2.41) is new enough: step 5 runs it there`)
  else fail(`${uwsLeft[0]} fails to load for another reason than glibc: ${uwsLine}`)

  const [http, p2p] = await freePorts(2, 2)
  const volumes = Object.fromEntries(rt.volumes.map(v => [v, dataDir('smoke')]))
  const env = imageEnv(final, {
    ...Object.fromEntries(Object.entries(final.env).map(([k, v]) => [k, volumes[v] ?? v])),
    REGISTRY_NODE_HTTP_PORT: String(http), REGISTRY_NODE_P2P_PORT: String(p2p),
    REGISTRY_NODE_HTTP_HOST: '127.0.0.1', REGISTRY_NODE_P2P_HOST: '127.0.0.1'
  })
  const logs = []
  const node = startNode('smoke node', app, argv, env, logs)
  await waitFor('the node to listen', async () => /listening on/.test(node.output()) || (node.exitCode !== null && fail(`the node exited:\n${node.output()}`)), 30_000)
  ok(node.output().split('\n').find(l => /listening on/.test(l)))
  if (/not compatible with your Node\.js build|µWS fallback/.test(node.output())) fail(`the node warns about a native module:\n${node.output()}`)
  const hc = healthcheck(rt, app, env)
  if (hc !== 0) fail(`HEALTHCHECK command exited with ${hc} against a running node`)
  ok('HEALTHCHECK command exits 0 against the running node')
  const health = await getJson(http, '/health')
  if (health.status !== 'ok') fail(`/health answered ${JSON.stringify(health)}`)
  for (const path of ['/dashboard', '/swagger/index.html', '/swagger/swagger-ui-bundle.js', '/swagger/swagger-ui.css', '/v1/info']) {
    const res = await fetch(`http://127.0.0.1:${http}${path}`)
    if (res.status !== 200) fail(`${path} answered ${res.status}`)
  }
  ok('/health {"status":"ok"}; /dashboard, /swagger/ and its assets, /v1/info answer 200')
  const runtime = (await getJson(http, '/v1/info')).runtime
  ok(`server kind reported by /v1/info: ${runtime.http_server} (runtime ${JSON.stringify(runtime)})${runtime.http_server === 'node' && !uwsLoads ? ': node:http, as no uWS build loads on this machine' : ''}`)
  if (uwsLoads && runtime.http_server !== 'uws') fail(`uWS loads here but the image command (--http-server auto) chose ${runtime.http_server}`)
  if (runtime.node !== process.versions.node) fail(`/v1/info reports Node ${runtime.node}, not the image's ${process.versions.node}`)
  const volume = Object.values(volumes)[0]
  const stored = volume ? readdirSync(volume) : []
  if (!stored.length) fail('nothing was written to the data volume')
  ok(`data volume holds ${stored.join(', ')}`)
  const ms = await stopNode(node)
  ok(`SIGTERM: clean exit 0 in ${ms} ms`)
  const after = healthcheck(rt, app, env)
  if (after === 0) fail('HEALTHCHECK command still passes after the node stopped')
  ok(`HEALTHCHECK command fails (exit ${after}) once the node is down`)
  return { app, argv, rt }
}

async function mesh(final, { app, argv, rt }) {
  step('4. docker/compose.yml: the services as local processes')
  const compose = JSON.parse(readFileSync(join(WORK, 'compose.json'), 'utf8'))
  const services = compose.services
  const names = Object.keys(services)
  const ports = await freePorts(names.length * 2, 2)
  const local = {}
  names.forEach((name, i) => {
    const envList = services[name].environment ?? {}
    const env = Array.isArray(envList) ? Object.fromEntries(envList.map(e => e.split(/=(.*)/s).slice(0, 2))) : envList
    local[name] = { env, http: ports[2 * i], p2p: ports[2 * i + 1], containerP2p: Number(env.REGISTRY_NODE_P2P_PORT ?? 4001) }
  })
  const bootstrapOf = {}
  for (const name of names) {
    const list = (local[name].env.REGISTRY_NODE_P2P_BOOTSTRAP ?? '').split(',').map(s => s.trim()).filter(Boolean)
    bootstrapOf[name] = []
    local[name].bootstrap = list.map(address => {
      // /dns4/<service>/tcp/<port>[...] or <service>:<port>: the service's local port, by name (localhost).
      const m = /^\/dns[46]?\/([^/]+)\/tcp\/(\d+)(.*)$/.exec(address) ?? /^()([^:/]+):(\d+)()$/.exec(address)
      const target = m && (address.startsWith('/') ? m[1] : m[2])
      if (!target || !local[target]) { console.log(`   note: ${name}'s bootstrap ${address} names no service of this file; left as it is`); return address }
      bootstrapOf[name].push(target)
      if (/\/p2p\//.test(address)) console.log(`   note: ${name} pins ${target}'s PeerId (${address}): it must match that service's key`)
      // The service listens on its p2p port (TCP) and the next one (WebSockets); any other port of
      // it has nothing behind it, here as in compose (port 1: refused).
      const port = Number(address.startsWith('/') ? m[2] : m[3])
      const mapped = port === local[target].containerP2p ? local[target].p2p : port === local[target].containerP2p + 1 ? local[target].p2p + 1 : 1
      if (mapped === 1) console.log(`   note: ${name} bootstraps from port ${port} of ${target}, which listens on ${local[target].containerP2p} (TCP) and ${local[target].containerP2p + 1} (WebSockets)`)
      return address.startsWith('/') ? `/dns4/localhost/tcp/${mapped}${m[3]}` : `localhost:${mapped}`
    })
    // Announced addresses name the service as its peers reach it: here, its local ports.
    local[name].announce = (local[name].env.REGISTRY_NODE_P2P_ANNOUNCE ?? '').split(',').map(s => s.trim()).filter(Boolean).map(address => {
      const m = /^\/dns[46]?\/([^/]+)\/tcp\/(\d+)(.*)$/.exec(address)
      if (!m || !local[m[1]]) return address
      const port = Number(m[2]) === local[m[1]].containerP2p ? local[m[1]].p2p : Number(m[2]) === local[m[1]].containerP2p + 1 ? local[m[1]].p2p + 1 : 1
      return `/ip4/127.0.0.1/tcp/${port}${m[3]}`
    })
    const { ports: published = [] } = services[name]
    const httpPublished = published.some(p => Number(p.target ?? String(p).split(':').pop()) === Number(local[name].env.REGISTRY_NODE_HTTP_PORT ?? 8080))
    console.log(`   ${name}: HTTP ${local[name].env.REGISTRY_NODE_HTTP_PORT ?? 8080} -> 127.0.0.1:${local[name].http}${httpPublished ? ' (published)' : ''}, p2p ${local[name].containerP2p} -> ${local[name].p2p}; bootstrap ${local[name].bootstrap.join(' ') || '-'}; announce ${local[name].announce.join(' ') || '-'}`)
  }
  // depends_on order; like compose's default condition (service_started) nothing waits for readiness.
  const order = []
  const visit = (n, seen = new Set()) => {
    if (order.includes(n)) return
    if (seen.has(n)) fail(`depends_on cycle at ${n}`)
    seen.add(n)
    const deps = services[n].depends_on ?? []
    for (const d of Array.isArray(deps) ? deps : Object.keys(deps)) visit(d, seen)
    order.push(n)
  }
  names.forEach(n => visit(n))
  const envOf = name => {
    const svcVolumes = (services[name].volumes ?? []).map(v => typeof v === 'string' ? v.split(':')[1] : v.target)
    const volumes = Object.fromEntries([...rt.volumes, ...svcVolumes].map(v => [v, dataDir(name)]))
    const merged = { ...final.env, ...local[name].env }
    return imageEnv(final, {
      ...Object.fromEntries(Object.entries(merged).map(([k, v]) => [k, volumes[v] ?? v])),
      REGISTRY_NODE_HTTP_PORT: String(local[name].http), REGISTRY_NODE_P2P_PORT: String(local[name].p2p),
      REGISTRY_NODE_HTTP_HOST: '127.0.0.1', REGISTRY_NODE_P2P_HOST: '127.0.0.1',
      REGISTRY_NODE_P2P_BOOTSTRAP: local[name].bootstrap.join(','),
      REGISTRY_NODE_P2P_ANNOUNCE: local[name].announce.join(',')
    })
  }
  const logs = []
  const nodes = {}
  const started = Date.now()
  for (const name of order) {
    const deps = services[name].depends_on ?? {}
    for (const [dep, cond] of Object.entries(Array.isArray(deps) ? Object.fromEntries(deps.map(d => [d, {}])) : deps)) {
      if (cond.condition === 'service_healthy') await waitFor(`${dep} healthy`, async () => healthcheck(rt, app, envOf(dep)) === 0, 60_000, 1000)
    }
    nodes[name] = startNode(name, app, argv, envOf(name), logs)
  }
  const peerIds = {}
  for (const name of names) {
    await waitFor(`${name} to listen`, async () => /listening on/.test(nodes[name].output()) || (nodes[name].exitCode !== null && fail(`${name} exited:\n${nodes[name].output()}`)), 30_000)
    peerIds[name] = (await waitFor(`${name}'s status`, () => getJson(local[name].http, '/v1/network/status'), 10_000)).peer_id
    if (healthcheck(rt, app, envOf(name)) !== 0) fail(`HEALTHCHECK fails on ${name}`)
  }
  ok(`all ${names.length} nodes up, HEALTHCHECK passes on each; PeerIds ${names.map(n => `${n}=${peerIds[n].slice(-8)}`).join(' ')}`)
  const nameOf = Object.fromEntries(Object.entries(peerIds).map(([n, id]) => [id, n]))
  const view = async () => Object.fromEntries(await Promise.all(names.map(async n => [n, (await getJson(local[n].http, '/v1/network/peers')).peers.filter(p => p.connected).map(p => nameOf[p.peer_id] ?? p.peer_id)])))
  const edges = names.flatMap(n => bootstrapOf[n].map(t => [n, t]))
  if (!edges.length) fail('no service bootstraps from another: the nodes would not form a mesh')
  const fullMesh = v => names.every(n => v[n].length === names.length - 1)
  const edgesUp = v => edges.every(([n, t]) => v[n].includes(t) && v[t].includes(n))
  // Bootstrap edges must come up (a failed first dial is retried every 30 s); then give the rest a while.
  let v = await waitFor('the bootstrap connections', async () => { const x = await view(); return edgesUp(x) && x }, 75_000, 2000)
  ok(`bootstrap connections up after ${((Date.now() - started) / 1000).toFixed(1)} s: ${edges.map(([n, t]) => `${n}->${t}`).join(', ')}`)
  const meshBy = Date.now() + 20_000
  while (!fullMesh(v) && Date.now() < meshBy) { await sleep(2000); v = await view() }
  console.log(`   peers seen by each node: ${names.map(n => `${n}: [${v[n].join(', ')}]`).join('; ')}`)
  if (fullMesh(v)) ok('full mesh: every node is connected to every other')
  else console.log('   note: not a full mesh within 20 s of the bootstrap connections (only the bootstrap edges are required)')

  // restart of a bootstrap target on its volume: same key, peers back.
  const target = edges[0][1]
  const ms = await stopNode(nodes[target])
  ok(`${target} stopped by SIGTERM in ${ms} ms; restarting it on the same data`)
  const t0 = Date.now()
  nodes[target] = startNode(`${target} (restarted)`, app, argv, envOf(target), logs)
  await waitFor(`${target} to listen again`, async () => /listening on/.test(nodes[target].output()) || (nodes[target].exitCode !== null && fail(`${target} exited:\n${nodes[target].output()}`)), 30_000)
  const again = (await getJson(local[target].http, '/v1/network/status')).peer_id
  if (again !== peerIds[target]) fail(`${target} came back with another PeerId (${again}): its key is not kept in the volume`)
  ok(`${target} kept its PeerId across the restart`)
  await waitFor(`${target}'s peers to reconnect`, async () => { const x = await view(); return edgesUp(x) && x }, 75_000, 2000)
  ok(`bootstrap connections back ${((Date.now() - t0) / 1000).toFixed(1)} s after the restart (re-dial period 30 s)`)
  for (const name of names) await stopNode(nodes[name])
  ok('all nodes stopped cleanly')
}

const final = await replay()
writeFileSync(join(WORK, 'final-app'), join(final.root, final.workdir))   // for step 5
const image = await smoke(final)
await mesh(final, image)
console.log('\nsteps 2-4 passed')
EOF

cd "$WORK"
# Under the image's Node, first on PATH: the RUNs, the image command and HEALTHCHECK all find it.
PATH="$NODE_BIN:$PATH" "$NODE_BIN/node" check.mjs "$ROOT" "$WORK"

# --- 5. uWS in a trixie root ------------------------------------------------------------------------
step "5. the pruned app with --http-server uws in a Debian 13 (trixie) root, chroot, Node $IMAGE_MAJOR"
t=$(date +%s)
NODE_MAJOR=$IMAGE_MAJOR bash "$ROOT/scripts/check-uws-trixie.sh" --app "$(cat "$WORK/final-app")" || fail "uWS in the trixie root (scripts/check-uws-trixie.sh)"
echo "(step 5: $(( $(date +%s) - t )) s)"
echo
echo "all checks passed"
echo
echo "Not checked here (needs a container engine): pulling node:24-trixie-slim and building in it,"
echo "file ownership and the /data volume inside the image, HEALTHCHECK scheduling by the engine,"
echo "compose's network (service-name DNS) and port publishing: scripts/check-container.sh checks those"
echo "where buildah and podman are installed."
