#!/usr/bin/env bash
# The uWebSockets.js fast path on Node 24 with glibc >= 2.38, proven on a machine whose own glibc is
# older (Debian 12: 2.36), without a container engine: a minimal Debian 13 (trixie, glibc 2.41) root
# made by debootstrap, the app and a Node 24 binary bind-mounted into it, run under chroot (same
# network namespace: loopback works across it). Called by scripts/check-docker.sh (step 5); also
# runs alone:   bash scripts/check-uws-trixie.sh [--app DIR] [--no-tests]
#
#  a. smoke: in the chroot, as uid 65534 (the image's USER is not root), the image command
#     `node dist/cli.js start --no-p2p --http-port <free> --data /tmp/... --http-server uws` from DIR
#     (the pruned app: node_modules, dist, package.json; default: this checkout, dist/ built by
#     npm run build); GET /health, /v1/info must report runtime.http_server "uws" and Node 24, the
#     start line names server uws; SIGTERM must give exit code 0 within 5 s.
#  b. tests (unless --no-tests or CHECK_UWS_TRIXIE_TESTS=0): this checkout bind-mounted at its own
#     path, ava (from node_modules) under Node 24 with REGISTRY_NODE_HTTP_SERVER=uws on
#     CHECK_UWS_TRIXIE_FILES (default: the HTTP front, heartbeats, activity and start/stop tests).
#
# Needs root (debootstrap, mount, chroot) and debootstrap (installed with apt-get when missing).
# Otherwise it prints "SKIPPED: <reason>" and exits 0. CHECK_UWS_TRIXIE=0 skips it too.
# Environment: DEBIAN_MIRROR (default: the first Debian URI in /etc/apt/sources.list{,.d/*}),
# XDG_CACHE_HOME (the trixie root is kept in ${XDG_CACHE_HOME:-$HOME/.cache}/registry-node/trixie-root,
# about 215 MB, made once in ~2 min; delete it to start afresh), NODE_MAJOR (default 24).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)
APP=$REPO
TESTS=${CHECK_UWS_TRIXIE_TESTS:-1}
NODE_MAJOR=${NODE_MAJOR:-24}
FILES=${CHECK_UWS_TRIXIE_FILES:-test/api/http-front.test.ts test/api/heartbeats.test.ts test/api/activity.test.ts test/api/start-stop.test.ts}
while [ $# -gt 0 ]; do
  case "$1" in
    --app) APP=$(cd "$2" && pwd); shift 2 ;;
    --no-tests) TESTS=0; shift ;;
    *) echo "usage: bash scripts/check-uws-trixie.sh [--app DIR] [--no-tests]" >&2; exit 2 ;;
  esac
done
T0=$(date +%s)
skip() { echo "SKIPPED: $*"; exit 0; }
fail() { echo "FAIL: $*" >&2; exit 1; }
ok() { echo "ok: $*"; }
since() { echo "$(( $(date +%s) - $1 )) s"; }

[ "${CHECK_UWS_TRIXIE:-1}" = 0 ] && skip "CHECK_UWS_TRIXIE=0"
[ "$(id -u)" = 0 ] || skip "needs root (debootstrap, mount, chroot); this runs as $(id -un)"
[ "$(uname -s)" = Linux ] || skip "needs Linux"
[ -f "$APP/dist/cli.js" ] || fail "$APP/dist/cli.js is missing (npm run build)"

# --- the trixie root (cached; scripts/lib/trixie-root.sh) -------------------------------------------
. scripts/lib/trixie-root.sh
trixie_root
echo "trixie root: $ROOTFS (Debian $(cat "$ROOTFS/etc/debian_version"), $(chroot "$ROOTFS" getconf GNU_LIBC_VERSION); this machine: $(getconf GNU_LIBC_VERSION))"

# --- Node 24 from the npm registry (scripts/runtimes.mjs cache) -------------------------------------
node scripts/runtimes.mjs install "$NODE_MAJOR" >/dev/null
NODE_BIN=$(node scripts/runtimes.mjs path "$NODE_MAJOR")
NODE_HOME=$(dirname "$(dirname "$NODE_BIN")")   # .../runtimes/node-24 (node_modules/.bin/node is a relative link)

# --- mounts, undone on every exit --------------------------------------------------------------------
MOUNTS=()
NODE_PID=
cleanup() {
  [ -n "$NODE_PID" ] && kill -KILL "$NODE_PID" 2>/dev/null || true
  local i
  for (( i = ${#MOUNTS[@]} - 1; i >= 0; i-- )); do
    umount "${MOUNTS[$i]}" 2>/dev/null || umount -l "${MOUNTS[$i]}" 2>/dev/null || echo "warning: could not unmount ${MOUNTS[$i]}" >&2
  done
}
trap cleanup EXIT
trap 'exit 130' INT TERM
mnt() {   # mnt <target inside ROOTFS> <mount args...>
  local target=$ROOTFS$1; shift
  mkdir -p "$target"
  mount "$@" "$target"
  MOUNTS+=("$target")
}
mnt /proc -t proc proc
mnt /dev --bind /dev
mnt /tmp -t tmpfs -o mode=1777 tmpfs          # fresh per run: the node's data, the tests' temp folders
mnt /opt/node --bind "$NODE_HOME"
mount -o remount,bind,ro "$ROOTFS/opt/node"
mnt /app --bind "$APP"
mount -o remount,bind,ro "$ROOTFS/app"       # the image's application files are read-only to its user
CHROOT_PATH=/opt/node/node_modules/.bin:/usr/local/bin:/usr/bin:/bin
NODE_VERSION=$(chroot "$ROOTFS" /opt/node/node_modules/.bin/node -p process.versions.node)
ok "Node $NODE_VERSION runs in the trixie root"

# --- a. the image command with --http-server uws ---------------------------------------------------------
echo "-- smoke: node dist/cli.js start --http-server uws, in the chroot as uid 65534"
t=$(date +%s)
PORT=$(node -e "const s = require('net').createServer().listen(0, '127.0.0.1', () => { console.log(s.address().port); s.close() })")
LOG=$(mktemp /tmp/check-uws-trixie.XXXXXX.log)
chroot --userspec=65534:65534 "$ROOTFS" /usr/bin/env -i PATH="$CHROOT_PATH" HOME=/tmp NODE_ENV=production \
  /bin/sh -c "cd /app && mkdir -p /tmp/uws-smoke && exec node dist/cli.js start --no-p2p --http-host 127.0.0.1 --http-port $PORT --data /tmp/uws-smoke --http-server uws" \
  > "$LOG" 2>&1 &
NODE_PID=$!
for _ in $(seq 1 120); do
  grep -q 'listening on' "$LOG" && break
  kill -0 "$NODE_PID" 2>/dev/null || { wait "$NODE_PID" && code=0 || code=$?; cat "$LOG" >&2; fail "the node exited with $code before listening (uWS on Node $NODE_VERSION, $(chroot "$ROOTFS" getconf GNU_LIBC_VERSION)): $(grep -m1 -o 'no uWebSockets.js build.*' "$LOG" || tail -1 "$LOG")"; }
  sleep 0.25
done
grep -q 'listening on' "$LOG" || { cat "$LOG" >&2; fail "the node did not listen within 30 s"; }
echo "   $(grep -m1 'listening on' "$LOG")"
grep -q "(server uws, Node.js $NODE_MAJOR\." "$LOG" || fail "the start line does not name server uws on Node $NODE_MAJOR"
CHECK=$(node --input-type=module -e "
  const base = 'http://127.0.0.1:$PORT'
  const health = await (await fetch(base + '/health')).json()
  if (health.status !== 'ok') throw new Error('/health: ' + JSON.stringify(health))
  const info = await (await fetch(base + '/v1/info')).json()
  const rt = info.runtime ?? {}
  if (rt.http_server !== 'uws') throw new Error('/v1/info runtime.http_server is ' + JSON.stringify(rt.http_server))
  if (!String(rt.node).startsWith('$NODE_MAJOR.')) throw new Error('/v1/info runtime.node is ' + rt.node)
  console.log('/health ok; /v1/info runtime: ' + JSON.stringify(rt))") || { cat "$LOG" >&2; fail "checks against the node in the chroot"; }
ok "$CHECK"
signalled=$(date +%s%N)
kill -TERM "$NODE_PID"
wait "$NODE_PID" && code=0 || code=$?
NODE_PID=
ms=$(( ($(date +%s%N) - signalled) / 1000000 ))
[ "$code" = 0 ] || { cat "$LOG" >&2; fail "exit code $code after SIGTERM"; }
[ "$ms" -lt 5000 ] || fail "stopped $ms ms after SIGTERM (over 5 s)"
ok "SIGTERM: exit code 0 after $ms ms (smoke: $(since "$t"))"
rm -f "$LOG"

# --- b. test files, REGISTRY_NODE_HTTP_SERVER=uws ------------------------------------------------------
if [ "$TESTS" = 0 ]; then
  echo "-- tests: not run (--no-tests or CHECK_UWS_TRIXIE_TESTS=0)"
elif [ ! -f "$REPO/node_modules/ava/entrypoints/cli.mjs" ] || [ ! -d "$REPO/node_modules/tsx" ]; then
  echo "-- tests: SKIPPED: ava or tsx missing from $REPO/node_modules (npm install)"
else
  echo "-- tests under Node $NODE_VERSION, glibc $(chroot "$ROOTFS" getconf GNU_LIBC_VERSION | cut -d' ' -f2), REGISTRY_NODE_HTTP_SERVER=uws: $FILES"
  t=$(date +%s)
  mnt "$REPO" --bind "$REPO"        # at its own path: the sources, node_modules (ava, tsx), dist/
  LOG=$(mktemp /tmp/check-uws-trixie.XXXXXX.log)
  set +e   # ava's exit status from the pipeline; failures are shown (✘), the rest goes to the log
  chroot "$ROOTFS" /usr/bin/env -i PATH="$CHROOT_PATH" HOME=/tmp TMPDIR=/tmp REGISTRY_NODE_HTTP_SERVER=uws \
    /bin/sh -c "cd '$REPO' && exec node node_modules/ava/entrypoints/cli.mjs $FILES" 2>&1 | tee "$LOG" | grep --line-buffered -E '✘|^\s+[0-9]+ (tests?|hooks?|uncaught|unhandled|known)'
  status=${PIPESTATUS[0]}
  set -e
  passed=$(grep -Eo '^\s*[0-9]+ tests? passed' "$LOG" | grep -Eo '[0-9]+' || echo 0)
  failed=$(grep -Eo '^\s*[0-9]+ tests? failed' "$LOG" | grep -Eo '[0-9]+' || echo 0)
  uws_tests=$(grep -c '✔ start-stop › --http-server uws' "$LOG" || true)
  echo "node $NODE_VERSION in trixie, uws: $passed passed, $failed failed ($(since "$t"))"
  [ "$status" = 0 ] || fail "ava exited with $status in the trixie chroot (output: $LOG)"
  [ "$uws_tests" -ge 1 ] || fail "start-stop did not run its --http-server uws test: uWS did not load for the test process"
  rm -f "$LOG"
  ok "test files pass on uws in the trixie root"
fi
echo "check-uws-trixie: all passed in $(since "$T0")"
