#!/usr/bin/env bash
# Builds the image of docker/Dockerfile with a daemonless builder (buildah, from Debian) and runs it
# (podman): the counterpart of scripts/check-docker.sh for a machine that has a container builder but
# no Docker daemon. Not part of npm test: test/deploy/container.test.ts runs it when
# CHECK_CONTAINER=1; or by hand:   bash scripts/check-container.sh [--no-build]
#
#  1. base image: the Dockerfile's FROM (node:<major>-trixie-slim) from the store, else pulled; where
#     no image registry is reachable, a local stand-in made once and kept: a debootstrapped Debian 13
#     root (scripts/lib/trixie-root.sh), the Node release of that major and the npm it bundles (both
#     from the npm registry), and the user node (1000:1000) of the official image, tagged with the
#     FROM's name in this script's own image store only (never the machine's).
#  2. build (unless --no-build: the image the last build left): `buildah bud --isolation chroot` of
#     docker/Dockerfile as written, context the repository root; the image must expose 8080, 4001 and
#     4002, run as node, declare the /data volume and keep its HEALTHCHECK.
#  3. run (podman): node-a and node-b of docker/compose.yml in containers with compose's environment
#     (--announce included) and its port mappings (host ports of this machine's choosing) on a podman
#     network where the service names resolve; or, where podman's bridge network does not work, on
#     the host network with free ports. /health and /v1/info answer through the published HTTP port
#     and the server is uWS; the image's HEALTHCHECK passes (podman healthcheck run); node-a reports
#     only its announced addresses; node-b bootstraps from node-a by service name and each lists the
#     other; libp2p answers on the published TCP and WebSocket ports; `podman stop` (SIGTERM) ends
#     node-a with exit code 0.
#  4. compose: docker/compose.yml up with docker-compose or `docker compose`, against podman's
#     Docker-compatible API (podman system service on a socket of this run), host ports moved to free
#     ones: all three nodes form a full mesh (node-b and node-c find each other through node-a by the
#     addresses they announce) and each reports its announced /dns4/<service> addresses; down -v.
#     Skipped, with the reason, without a compose tool or podman's bridge network.
#
# Needs root (the stand-in base is made from a debootstrapped root). Without root, buildah or podman,
# or where they cannot make or run a container, it prints "SKIPPED: <reason>" and exits 0;
# CHECK_CONTAINER=0 skips it too. Machine quirks it works around, each said when it applies: a proxy's
# CA for npm in the build (npm config cafile, mounted for the RUN steps only), runc where crun refuses
# a cgroup v1/v2 hybrid, the shell's own ulimits where root lacks CAP_SYS_RESOURCE.
# Environment: CONTAINER_STORAGE (this script's image store, apart from the machine's; default
# ${XDG_CACHE_HOME:-$HOME/.cache}/registry-node/containers), STORAGE_DRIVER (overlay or vfs; default
# overlay where it mounts, else vfs, which copies the whole image for every container),
# CHECK_CONTAINER_NETWORK (bridge or host; default bridge where it works, else host).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)
T0=$(date +%s)
BUILD=1
while [ $# -gt 0 ]; do
  case "$1" in
    --no-build) BUILD=0; shift ;;   # run the image the last build left in the store
    *) echo "usage: bash scripts/check-container.sh [--no-build]" >&2; exit 2 ;;
  esac
done
skip() { echo "SKIPPED: $*"; exit 0; }
fail() { echo "FAIL: $*" >&2; exit 1; }
ok() { echo "ok: $*"; }
since() { echo "$(( $(date +%s) - $1 )) s"; }

[ "${CHECK_CONTAINER:-1}" = 0 ] && skip "CHECK_CONTAINER=0"
[ "$(uname -s)" = Linux ] || skip "needs Linux"
[ "$(id -u)" = 0 ] || skip "needs root (the local base image is made from a debootstrapped root); this runs as $(id -un)"
command -v buildah >/dev/null || skip "no buildah (Debian: apt-get install -y buildah podman)"
command -v podman >/dev/null || skip "no podman (Debian: apt-get install -y buildah podman)"

STORE=${CONTAINER_STORAGE:-${XDG_CACHE_HOME:-$HOME/.cache}/registry-node/containers}
mkdir -p "$STORE"
store() { S=(--root "$STORE/storage-$1" --runroot "$STORE/run-$1" --storage-driver "$1"); }
IMAGE=localhost/registry-node:check
NETWORK_MADE=0
cleanup() {
  # The network lives in the machine's podman configuration, not in this script's store.
  [ "$NETWORK_MADE" = 1 ] && podman network rm -f registry-node-check >/dev/null 2>&1 || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# overlay where the kernel lets this user mount it (a container costs no copy of the image), else vfs.
DRIVER=${STORAGE_DRIVER:-}
if [ -z "$DRIVER" ]; then
  store overlay
  if probe=$(buildah "${S[@]}" from scratch 2>/dev/null) && buildah "${S[@]}" mount "$probe" >/dev/null 2>&1; then
    DRIVER=overlay
  else
    DRIVER=vfs
  fi
  [ -n "$probe" ] && buildah "${S[@]}" rm "$probe" >/dev/null 2>&1 || true
fi
store "$DRIVER"
probe=$(buildah "${S[@]}" from scratch 2>&1) || skip "buildah cannot make a container here: $(echo "$probe" | tail -1)"
buildah "${S[@]}" rm "$probe" >/dev/null
echo "builder: $(buildah --version), $(podman --version); store $STORE (storage driver $DRIVER)"

# --- 1. base image --------------------------------------------------------------------------------
BASE=$(sed -n 's/^FROM \([^ ]*\).*/\1/p' docker/Dockerfile | grep -v '^[a-z]*$' | sort -u)
[ "$(echo "$BASE" | wc -w)" = 1 ] || fail "expected one base image in docker/Dockerfile, found: ${BASE:-none}"
case "$BASE" in
  node:[0-9]*-trixie-slim) ;;
  *) fail "the local stand-in can only replace node:<major>-trixie-slim, not $BASE" ;;
esac
NODE_MAJOR=$(echo "$BASE" | sed 's/^node:\([0-9]*\).*/\1/')
FULL_BASE=docker.io/library/$BASE
t=$(date +%s)
if buildah "${S[@]}" inspect --type image "$FULL_BASE" >/dev/null 2>&1; then
  echo "base: $FULL_BASE ($(buildah "${S[@]}" inspect --type image --format '{{index .ImageAnnotations "org.registry-node.base"}}' "$FULL_BASE" 2>/dev/null || true))"
elif timeout 90 buildah "${S[@]}" pull --quiet "$FULL_BASE" >/dev/null 2>"$STORE/pull.log"; then
  ok "pulled $FULL_BASE ($(since "$t"))"
else
  echo "cannot pull $FULL_BASE ($(tail -1 "$STORE/pull.log")); making a local stand-in"
  . scripts/lib/trixie-root.sh
  trixie_root
  node scripts/runtimes.mjs install "$NODE_MAJOR" >/dev/null || fail "could not install Node $NODE_MAJOR from the npm registry"
  NODE_BIN=$(readlink -f "$(node scripts/runtimes.mjs path "$NODE_MAJOR")/node")
  NODE_VERSION=$("$NODE_BIN" -p process.versions.node)
  # The official images carry the npm their Node release bundles: its CHANGELOG names it.
  CHANGELOG=$(find "$(dirname "$(dirname "$NODE_BIN")")" -path '*/node-linux-*/CHANGELOG.md' | head -1)
  NPM_VERSION=$(grep -m1 -oE 'upgrade npm to [0-9]+\.[0-9]+\.[0-9]+' "${CHANGELOG:-/dev/null}" | awk '{print $4}' || true)
  [ -n "$NPM_VERSION" ] || fail "could not tell which npm Node $NODE_VERSION bundles"
  WORK=$(mktemp -d /tmp/check-container.XXXXXX)
  (cd "$WORK" && npm pack --silent "npm@$NPM_VERSION" >/dev/null) || { rm -rf "$WORK"; fail "could not fetch npm@$NPM_VERSION from the npm registry"; }
  ctr=$(buildah "${S[@]}" from scratch)
  mnt=$(buildah "${S[@]}" mount "$ctr")
  # The cached root as it is on disk: its mount points (while scripts/check-uws-trixie.sh runs) stay out.
  tar -C "$ROOTFS" --exclude=./.registry-node-root --exclude='./proc/*' --exclude='./sys/*' --exclude='./dev/*' \
    --exclude='./tmp/*' --exclude='./run/*' --exclude=./app --exclude=./opt/node --exclude="./${REPO#/}" -cf - . | tar -C "$mnt" -xf -
  install -m 755 "$NODE_BIN" "$mnt/usr/local/bin/node"
  mkdir -p "$mnt/usr/local/lib/node_modules/npm"
  tar -C "$mnt/usr/local/lib/node_modules/npm" --strip-components=1 -xzf "$WORK"/npm-*.tgz
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$mnt/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$mnt/usr/local/bin/npx"
  echo 'node:x:1000:' >> "$mnt/etc/group"
  echo 'node:x:1000:1000::/home/node:/bin/bash' >> "$mnt/etc/passwd"
  echo 'node:*:20000:0:99999:7:::' >> "$mnt/etc/shadow"
  install -d -o 1000 -g 1000 "$mnt/home/node"
  buildah "${S[@]}" umount "$ctr" >/dev/null
  rm -rf "$WORK"
  buildah "${S[@]}" config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --env NODE_VERSION="$NODE_VERSION" --cmd node --os linux --arch "$(node -p '({ x64: "amd64", arm64: "arm64" })[process.arch] ?? process.arch')" \
    --annotation "org.registry-node.base=local stand-in: Debian $(cat "$ROOTFS/etc/debian_version") (debootstrap), Node $NODE_VERSION, npm $NPM_VERSION" \
    "$ctr"
  buildah "${S[@]}" commit --quiet --rm "$ctr" "$FULL_BASE" >/dev/null
  ok "local base $FULL_BASE: Debian $(cat "$ROOTFS/etc/debian_version"), Node $NODE_VERSION, npm $NPM_VERSION ($(since "$t"))"
fi

# --- 2. build ---------------------------------------------------------------------------------------
if [ "$BUILD" = 0 ]; then
  buildah "${S[@]}" inspect --type image "$IMAGE" >/dev/null 2>&1 || fail "--no-build: no $IMAGE in $STORE yet"
  echo "-- build: not run (--no-build); $IMAGE of $(buildah "${S[@]}" inspect --type image --format '{{.Docker.Created}}' "$IMAGE")"
else
echo "-- buildah bud --isolation chroot -f docker/Dockerfile ."
t=$(date +%s)
BUILD_MOUNTS=()
# Where outgoing TLS passes a proxy with its own certificate authority (npm config cafile on this
# machine), the build's npm is given it for the RUN steps only: mounts stay out of the image.
CAFILE=$(npm config get cafile 2>/dev/null || true)
if [ -n "$CAFILE" ] && [ "$CAFILE" != null ] && [ -f "$CAFILE" ]; then
  printf 'cafile=/run/host-ca.crt\n' > "$STORE/npmrc"
  BUILD_MOUNTS=(--volume "$CAFILE:/run/host-ca.crt:ro" --volume "$STORE/npmrc:/usr/local/etc/npmrc:ro")
  echo "   npm in the build trusts this machine's CA file ($CAFILE)"
fi
# --format docker: the OCI image format has no HEALTHCHECK (buildah drops it there).
buildah "${S[@]}" bud --isolation chroot --format docker --pull=never --layers=false "${BUILD_MOUNTS[@]}" \
  -f docker/Dockerfile -t "$IMAGE" . > "$STORE/build.log" 2>&1 \
  || { tail -30 "$STORE/build.log" >&2; fail "buildah bud failed (log: $STORE/build.log)"; }
buildah "${S[@]}" rmi --prune >/dev/null 2>&1 || true   # the previous build's image, now untagged
SIZE=$(buildah "${S[@]}" images --format '{{.Size}}' "$IMAGE" | head -1)
ok "image $IMAGE built in $(since "$t") ($SIZE)"
fi
CONFIG=$(buildah "${S[@]}" inspect --type image "$IMAGE")
SUMMARY=$(node -e '
  const c = JSON.parse(process.argv[1]).Docker.config
  const ports = Object.keys(c.ExposedPorts ?? {}).sort()
  const want = ["4001/tcp", "4002/tcp", "8080/tcp"]
  const problems = []
  if (JSON.stringify(ports) !== JSON.stringify(want)) problems.push(`exposes ${ports.join(" ")}, not ${want.join(" ")}`)
  if (c.User !== "node") problems.push(`runs as ${JSON.stringify(c.User)}, not node`)
  if (!("/data" in (c.Volumes ?? {}))) problems.push("declares no /data volume")
  if (!(c.Env ?? []).includes("REGISTRY_NODE_DATA_DIR=/data")) problems.push("REGISTRY_NODE_DATA_DIR is not /data")
  if (!c.Healthcheck?.Test?.length) problems.push("has no HEALTHCHECK")
  if (problems.length) { console.error(problems.join("; ")); process.exit(1) }
  console.log(`exposes ${ports.join(" ")}; user ${c.User}; volume /data; health check; entrypoint ${c.Entrypoint.join(" ")} ${c.Cmd.join(" ")}`)
' "$CONFIG") || fail "image configuration"
ok "image: $SUMMARY"


# --- 3. run -----------------------------------------------------------------------------------------
PODMAN=(podman "${S[@]}")
RUN_OPTS=(--health-interval=disable)   # no systemd timers here; `podman healthcheck run` runs it
out=
for _ in 1 2 3 4; do
  out=$("${PODMAN[@]}" run --rm "${RUN_OPTS[@]}" "$IMAGE" --version 2>"$STORE/probe.log") && break
  out=
  case "$(cat "$STORE/probe.log")" in
    *"cgroups in hybrid mode not supported"*)
      # crun refuses a cgroup v1/v2 hybrid; runc (Debian: apt-get install runc) runs there.
      command -v runc >/dev/null || skip "podman cannot run a container here (crun: cgroups in hybrid mode not supported; runc is not installed)"
      PODMAN+=(--runtime runc); echo "   cgroups v1/v2 hybrid: podman --runtime runc" ;;
    *"setrlimit"*)
      # Without CAP_SYS_RESOURCE podman cannot raise the container's limits to its defaults: keep
      # this shell's hard limits (podman itself runs with at most 32768 processes).
      nproc=$(ulimit -Hu); { [ "$nproc" = unlimited ] || [ "$nproc" -gt 32768 ]; } && nproc=32768
      RUN_OPTS+=(--ulimit "nofile=$(ulimit -Hn):$(ulimit -Hn)" --ulimit "nproc=$nproc:$nproc")
      echo "   no CAP_SYS_RESOURCE: --ulimit nofile=$(ulimit -Hn) nproc=$nproc" ;;
    *) break ;;
  esac
done
[ "$out" = "$(node -p 'require("./package.json").version')" ] || skip "podman cannot run a container here: $(grep -v '^time=' "$STORE/probe.log" | tail -1)"
ok "the image runs: registry-node $out"

NETWORK=${CHECK_CONTAINER_NETWORK:-}
if [ "$NETWORK" != host ]; then
  "${PODMAN[@]}" network exists registry-node-check 2>/dev/null \
    || { "${PODMAN[@]}" network create registry-node-check >/dev/null 2>&1 && NETWORK_MADE=1; } || true
  if "${PODMAN[@]}" run --rm "${RUN_OPTS[@]}" --network registry-node-check -p 127.0.0.1::8080 "$IMAGE" --version >/dev/null 2>"$STORE/network.log"; then
    NETWORK=bridge
  else
    [ "$NETWORK" = bridge ] && fail "podman's bridge network does not work here: $(grep -v '^time=' "$STORE/network.log" | tail -1)"
    echo "   podman's bridge network does not work here ($(grep -v '^time=' "$STORE/network.log" | tail -1)); host network"
    NETWORK=host
  fi
fi
echo "-- node-a and node-b of docker/compose.yml in containers ($NETWORK network)"
cat > "$STORE/run.mjs" <<'JS'
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { connect, createServer } from 'node:net'
import { createRequire } from 'node:module'

// The repository's own YAML parser (this file lives in the image store, the repository is the cwd).
const { parse } = createRequire(`${process.cwd()}/`)('yaml')

const [IMAGE, NETWORK, podmanJson, runOptsJson] = process.argv.slice(2)
const PODMAN = JSON.parse(podmanJson)
const RUN_OPTS = JSON.parse(runOptsJson)
const TAG = `registry-node-check-${process.pid}`
const made = { containers: [], volumes: [] }
const podman = (...args) => spawnSync(PODMAN[0], [...PODMAN.slice(1), ...args], { encoding: 'utf8' })
const cleanup = () => {
  for (const c of made.containers) podman('rm', '-f', '-t', '0', c)
  for (const v of made.volumes) podman('volume', 'rm', '-f', v)
}
const fail = message => {
  for (const c of made.containers) console.error(`--- logs of ${c}:\n${podman('logs', c).stdout}${podman('logs', c).stderr}`)
  console.error(`FAIL: ${message}`)
  cleanup()
  process.exit(1)
}
const ok = message => console.log(`ok: ${message}`)
const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))
async function until(what, check, ms = 60_000) {
  const end = Date.now() + ms
  for (;;) {
    try {
      const value = await check()
      if (value) return value
    } catch {}
    if (Date.now() > end) fail(`timed out after ${ms / 1000} s waiting for ${what}`)
    await sleep(500)
  }
}
const freePort = () =>
  new Promise(resolve => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address()
      s.close(() => resolve(port))
    })
  })
const get = async (port, path) => {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(5000) })
  if (!res.ok) throw new Error(`${path}: ${res.status}`)
  return res.json()
}

// The services as compose resolves them (YAML merge keys included).
const compose = parse(readFileSync('docker/compose.yml', 'utf8'), { merge: true })
const services = ['node-a', 'node-b'].map(name => ({ name, ...compose.services[name] }))
for (const s of services) {
  const targets = (s.ports ?? []).map(p => Number(String(p).split(':').pop())).sort()
  if (targets.join() !== '4001,4002,8080') fail(`${s.name} publishes ${targets.join(', ') || 'nothing'}, not 8080, 4001 and 4002`)
  if (!s.environment.REGISTRY_NODE_P2P_ANNOUNCE) fail(`${s.name} sets no REGISTRY_NODE_P2P_ANNOUNCE (--announce)`)
}
ok('compose: node-a and node-b publish 8080, 4001 and 4002 and set --announce (REGISTRY_NODE_P2P_ANNOUNCE)')

const nodes = {}
for (const s of services) {
  const env = { ...s.environment }
  const published = {}
  const args = ['run', '-d', ...RUN_OPTS, '--name', `${TAG}-${s.name}`]
  const volume = `${TAG}-${s.name}`
  made.volumes.push(volume)
  args.push('-v', `${volume}:/data`)
  if (NETWORK === 'bridge') {
    args.push('--network', 'registry-node-check', '--network-alias', s.name)
    // The compose mappings with host ports of this machine's choosing (the fixed ones may be taken).
    for (const p of s.ports) {
      const target = Number(String(p).split(':').pop())
      published[target] = await freePort()
      args.push('-p', `127.0.0.1:${published[target]}:${target}`)
    }
  } else {
    // One network for all: each node on free ports, service names as 127.0.0.1 with those ports.
    const http = await freePort()
    let p2p = await freePort()
    while (!(await new Promise(r => { const x = createServer().once('error', () => r(false)).listen(p2p + 1, '127.0.0.1', () => x.close(() => r(true))) }))) p2p = await freePort()
    Object.assign(published, { 8080: http, 4001: p2p, 4002: p2p + 1 })
    Object.assign(env, { REGISTRY_NODE_HTTP_PORT: String(http), REGISTRY_NODE_P2P_PORT: String(p2p) })
    args.push('--network', 'host')
  }
  nodes[s.name] = { published, env }
  for (const [k, v] of Object.entries(env)) args.push('-e', `${k}=${v}`)
  args.push(IMAGE)
  nodes[s.name].args = args
}
if (NETWORK === 'host') {
  // /dns4/<service>/tcp/<4001|4002> -> that service's ports on this machine.
  const local = value =>
    value.replace(/\/dns4\/(node-[a-z])\/tcp\/(\d+)/g, (m, name, port) =>
      nodes[name] ? `/ip4/127.0.0.1/tcp/${nodes[name].published[Number(port)]}` : m
    )
  for (const n of Object.values(nodes)) {
    for (const key of ['REGISTRY_NODE_P2P_ANNOUNCE', 'REGISTRY_NODE_P2P_BOOTSTRAP']) {
      if (!n.env[key]) continue
      n.env[key] = local(n.env[key])
      for (let i = 0; i < n.args.length; i++) if (n.args[i].startsWith(`${key}=`)) n.args[i] = `${key}=${n.env[key]}`
    }
  }
}
for (const [name, n] of Object.entries(nodes)) {
  const run = podman(...n.args)
  if (run.status !== 0) fail(`podman run ${name}: ${run.stderr.trim().split('\n').pop()}`)
  n.container = `${TAG}-${name}`
  made.containers.push(n.container)
}

const a = nodes['node-a']
const b = nodes['node-b']
for (const [name, n] of Object.entries(nodes)) {
  const health = await until(`${name}'s /health on port ${n.published[8080]}`, () => get(n.published[8080], '/health'))
  if (health.status !== 'ok') fail(`${name} /health: ${JSON.stringify(health)}`)
  n.info = await get(n.published[8080], '/v1/info')
  n.status = await get(n.published[8080], '/v1/network/status')
}
const rt = a.info.runtime ?? {}
ok(`/health and /v1/info answer through the published ports (registry ${a.status.registry_id}; Node ${rt.node}, server ${rt.http_server})`)
if (rt.http_server !== 'uws') fail(`the image serves HTTP with ${rt.http_server}, not uws (glibc 2.41 of trixie should load it)`)

const hc = podman('healthcheck', 'run', a.container)
if (hc.status !== 0) fail(`the image's HEALTHCHECK fails on node-a: ${hc.stdout}${hc.stderr}`)
ok(`HEALTHCHECK passes (podman healthcheck run: ${hc.stdout.trim() || 'healthy'})`)

const announced = a.env.REGISTRY_NODE_P2P_ANNOUNCE.split(',').map(x => `${x}/p2p/${a.status.peer_id}`)
if (JSON.stringify([...a.status.addresses].sort()) !== JSON.stringify(announced.sort()))
  fail(`node-a reports addresses ${a.status.addresses.join(' ')}, not its announced ${announced.join(' ')}`)
ok(`node-a's addresses are the announced ones only: ${a.status.addresses.join(' ')}`)

const connected = async (n, other) =>
  (await get(n.published[8080], '/v1/network/peers')).peers.some(p => p.connected && p.peer_id === other.status.peer_id)
await until('node-b and node-a connected', async () => (await connected(b, a)) && (await connected(a, b)), 90_000)
ok(`node-b bootstrapped from node-a (${b.env.REGISTRY_NODE_P2P_BOOTSTRAP}); each lists the other as a connected peer`)

// The published libp2p ports reach the listeners: TCP (multistream-select greets) and WebSockets (101).
const exchange = (port, send, until) =>
  new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1')
    let data = ''
    socket.setTimeout(5000, () => { socket.destroy(); reject(new Error(`no answer on ${port}: ${JSON.stringify(data)}`)) })
    socket.on('connect', () => send && socket.write(send))
    socket.on('data', d => {
      data += d
      if (until.test(data)) { socket.destroy(); resolve(data) }
    })
    socket.on('error', reject)
  })
await exchange(a.published[4001], '\x13/multistream/1.0.0\n', /multistream/).catch(err => fail(`libp2p TCP through published port ${a.published[4001]}: ${err.message}`))
await exchange(a.published[4002], 'GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n', /^HTTP\/1\.1 101/).catch(err => fail(`libp2p WebSockets through published port ${a.published[4002]}: ${err.message}`))
ok(`libp2p answers on the published ports: TCP ${a.published[4001]} -> 4001, WebSockets ${a.published[4002]} -> 4002`)

const stopped = Date.now()
const stop = podman('stop', '-t', '10', a.container)
if (stop.status !== 0) fail(`podman stop: ${stop.stderr}`)
const code = podman('inspect', '--format', '{{.State.ExitCode}}', a.container).stdout.trim()
if (code !== '0') fail(`node-a exited with ${code} after podman stop (SIGTERM)`)
ok(`podman stop (SIGTERM): node-a exited 0 after ${Date.now() - stopped} ms`)
cleanup()
JS
node "$STORE/run.mjs" "$IMAGE" "$NETWORK" "$(node -p 'JSON.stringify(process.argv.slice(1))' -- "${PODMAN[@]}")" "$(node -p 'JSON.stringify(process.argv.slice(1))' -- "${RUN_OPTS[@]}")" \
  || fail "the image in containers"

# --- 4. compose -------------------------------------------------------------------------------------
# docker-compose (Debian: apt-get install docker-compose) or the docker CLI's compose plugin, talking
# to podman's Docker-compatible API on a socket of this run, with podman set up as step 3 found it
# must be (runtime, limits). The file as written, but for its host ports (free ones of this machine).
COMPOSE=()
if docker compose version >/dev/null 2>&1; then COMPOSE=(docker compose)
elif command -v docker-compose >/dev/null; then COMPOSE=(docker-compose)
fi
if [ ${#COMPOSE[@]} = 0 ]; then
  echo "-- compose: SKIPPED: neither 'docker compose' nor 'docker-compose' is installed (Debian: apt-get install docker-compose)"
elif [ "$NETWORK" = host ]; then
  echo "-- compose: SKIPPED: podman's bridge network does not work here, and compose needs it"
else
  echo "-- docker/compose.yml up with ${COMPOSE[*]}, through podman's Docker API"
  t=$(date +%s)
  PROJECT=registry-node-check-$$
  SOCK=$STORE/run-$DRIVER/podman-$$.sock
  runtime=
  for ((i = 0; i < ${#PODMAN[@]}; i++)); do [ "${PODMAN[$i]}" = --runtime ] && runtime=${PODMAN[$((i + 1))]}; done
  ulimits=$(for ((i = 0; i < ${#RUN_OPTS[@]}; i++)); do [ "${RUN_OPTS[$i]}" = --ulimit ] && printf '"%s",' "${RUN_OPTS[$((i + 1))]}"; done | sed 's/,$//' || true)
  {
    echo '[containers]'
    [ -n "$ulimits" ] && echo "default_ulimits = [$ulimits]"
    echo '[engine]'
    [ -n "$runtime" ] && echo "runtime = \"$runtime\""
    true
  } > "$STORE/containers-$$.conf"
  CONTAINERS_CONF=$STORE/containers-$$.conf podman "${S[@]}" system service --time=0 "unix://$SOCK" > "$STORE/service.log" 2>&1 &
  SERVICE_PID=$!
  compose_down() {
    DOCKER_HOST=unix://$SOCK timeout 120 "${COMPOSE[@]}" -p "$PROJECT" -f "$STORE/compose-$$.json" down -v >/dev/null 2>&1 || true
    kill "$SERVICE_PID" 2>/dev/null || true
    rm -f "$STORE/compose-$$.json" "$STORE/containers-$$.conf" "$SOCK"
  }
  trap 'compose_down; cleanup' EXIT
  for _ in $(seq 1 50); do [ -S "$SOCK" ] && break; sleep 0.2; done
  [ -S "$SOCK" ] || fail "podman system service did not open $SOCK: $(tail -1 "$STORE/service.log")"
  podman "${S[@]}" tag "$IMAGE" registry-node:local
  # The resolved file (JSON is YAML) with free host ports, and the build left out: the image is made.
  node -e '
    const { parse } = require(process.cwd() + "/node_modules/yaml")
    const net = require("node:net")
    const free = () => new Promise(r => { const s = net.createServer().listen(0, "127.0.0.1", () => { const { port } = s.address(); s.close(() => r(port)) }) })
    const c = parse(require("node:fs").readFileSync("docker/compose.yml", "utf8"), { merge: true })
    ;(async () => {
      const http = {}
      for (const [name, s] of Object.entries(c.services)) {
        delete s.build
        s.ports = await Promise.all(s.ports.map(async p => { const port = await free(); const target = String(p).split(":").pop(); if (target === "8080") http[name] = port; return `127.0.0.1:${port}:${target}` }))
      }
      for (const k of Object.keys(c)) if (k.startsWith("x-")) delete c[k]
      require("node:fs").writeFileSync(process.argv[1], JSON.stringify(c, null, 1))
      console.log(Object.entries(http).map(([n, p]) => `${n}=${p}`).join(" "))
    })()
  ' "$STORE/compose-$$.json" > "$STORE/compose-ports"
  DOCKER_HOST=unix://$SOCK timeout 300 "${COMPOSE[@]}" -p "$PROJECT" -f "$STORE/compose-$$.json" up -d > "$STORE/compose.log" 2>&1 \
    || { tail -20 "$STORE/compose.log" >&2; fail "compose up failed (log: $STORE/compose.log)"; }
  ok "compose up: $(tr ' ' '\n' < "$STORE/compose-ports" | sed 's/=/ HTTP on /' | paste -sd, - | sed 's/,/, /g')"
  node --input-type=module -e '
    const ports = Object.fromEntries(process.argv[1].trim().split(" ").map(x => x.split("=")))
    const get = async (port, path) => (await fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(5000) })).json()
    const names = Object.keys(ports)
    const end = Date.now() + 120_000
    let status = {}
    let peers = {}
    for (;;) {
      try {
        for (const n of names) status[n] = await get(ports[n], "/v1/network/status")
        const nameOf = Object.fromEntries(names.map(n => [status[n].peer_id, n]))
        for (const n of names) peers[n] = (await get(ports[n], "/v1/network/peers")).peers.filter(p => p.connected).map(p => nameOf[p.peer_id] ?? p.peer_id)
        if (names.every(n => peers[n].length === names.length - 1)) break
      } catch {}
      if (Date.now() > end) { console.error(`FAIL: no full mesh within 120 s: ${JSON.stringify(peers)}`); process.exit(1) }
      await new Promise(r => setTimeout(r, 1000))
    }
    for (const n of names) {
      const own = status[n].addresses.map(a => a.split("/p2p/")[0]).sort().join(" ")
      if (own !== `/dns4/${n}/tcp/4001 /dns4/${n}/tcp/4002/ws`) { console.error(`FAIL: ${n} reports addresses ${own}`); process.exit(1) }
    }
    console.log(`ok: full mesh (${names.map(n => `${n}: ${peers[n].join(" ")}`).join("; ")}); each reports its announced /dns4/<service> addresses`)
  ' "$(cat "$STORE/compose-ports")" || { DOCKER_HOST=unix://$SOCK "${COMPOSE[@]}" -p "$PROJECT" -f "$STORE/compose-$$.json" logs --tail 20 >&2 || true; fail "compose mesh"; }
  compose_down
  trap cleanup EXIT
  ok "compose down -v ($(since "$t"))"
fi
echo "check-container: all passed in $(since "$T0")"
