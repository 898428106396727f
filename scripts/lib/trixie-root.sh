# A minimal Debian 13 (trixie) root made by debootstrap and cached, shared by the checks that need a
# trixie userland on a machine that is not trixie (scripts/check-uws-trixie.sh: uWS under glibc 2.41;
# scripts/check-container.sh: the local base image when node:24-trixie-slim cannot be pulled).
# Source it, then call `trixie_root`: it sets ROOTFS to the root, made once (~2 min, about 215 MB)
# under ${XDG_CACHE_HOME:-$HOME/.cache}/registry-node/trixie-root; delete that folder to start afresh.
# Needs root; debootstrap is installed with apt-get when missing. The caller defines skip and fail
# (print a reason; skip exits 0, fail exits 1) and ok. DEBIAN_MIRROR overrides the mirror (default:
# the first Debian URI in /etc/apt/sources.list{,.d/*}).
trixie_root() {
  local cache=${XDG_CACHE_HOME:-$HOME/.cache}/registry-node
  ROOTFS=$cache/trixie-root
  [ -f "$ROOTFS/.registry-node-root" ] && return 0
  if ! command -v debootstrap >/dev/null; then
    command -v apt-get >/dev/null || skip "debootstrap is not installed and there is no apt-get"
    echo "installing debootstrap (apt-get)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends debootstrap >/dev/null 2>&1 \
      || { apt-get update >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends debootstrap >/dev/null 2>&1; } \
      || skip "debootstrap is not installed and apt-get install debootstrap failed"
  fi
  [ -e /usr/share/debootstrap/scripts/trixie ] || skip "this debootstrap ($(dpkg-query -W -f '${Version}' debootstrap 2>/dev/null)) does not know trixie"
  local mirror=${DEBIAN_MIRROR:-}
  if [ -z "$mirror" ]; then
    # one-line (deb [opts] URI suite ...) and deb822 (URIs: ...) sources; the first .../debian archive.
    mirror=$( { awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^(https?|file):/) { print $i; break } }' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null
               awk 'tolower($1) == "uris:" { for (i = 2; i <= NF; i++) print $i }' /etc/apt/sources.list.d/*.sources 2>/dev/null; } \
             | grep -E '/debian/?$' | head -1 || true)
    [ -n "$mirror" ] || skip "no Debian mirror in /etc/apt/sources.list{,.d/*} (set DEBIAN_MIRROR)"
  fi
  echo "debootstrap --variant=minbase trixie $ROOTFS $mirror (once; cached)"
  local t
  t=$(date +%s)
  rm -rf "$ROOTFS.partial"
  mkdir -p "$cache"
  debootstrap --variant=minbase trixie "$ROOTFS.partial" "$mirror" > "$cache/trixie-debootstrap.log" 2>&1 \
    || { tail -20 "$cache/trixie-debootstrap.log" >&2; fail "debootstrap failed (log: $cache/trixie-debootstrap.log)"; }
  # minbase has no /etc/hosts (netbase): `localhost` must resolve in the root.
  [ -f "$ROOTFS.partial/etc/hosts" ] || printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n' > "$ROOTFS.partial/etc/hosts"
  touch "$ROOTFS.partial/.registry-node-root"
  rm -rf "$ROOTFS" && mv "$ROOTFS.partial" "$ROOTFS"
  ok "trixie root made in $(( $(date +%s) - t )) s"
}
