#!/usr/bin/env bash
# Installs what `make test` needs when it is missing. Idempotent; quiet when
# everything is there. Tests start and stop their own redis-server on a free
# loopback port (a Redis Cluster of three, made with redis-cli, too); this
# script only makes sure the binaries exist. The dashboard's browser test
# (test/ui_browser_test.go) runs a headless Chromium: Debian's
# chromium-headless-shell, unless one is already there (or ZLINK_CHROMIUM
# names one). The libzmq interoperability tests (test/interop) run Python
# peers with /usr/bin/python3 and Debian's python3-zmq (libzmq) and
# python3-msgpack: the python3 first on PATH may be another interpreter.
set -euo pipefail

need_apt=()
command -v redis-server >/dev/null 2>&1 || need_apt+=(redis-server)
command -v redis-cli >/dev/null 2>&1 || need_apt+=(redis-tools)
have_chromium() {
  [ -n "${ZLINK_CHROMIUM:-}" ] && command -v "$ZLINK_CHROMIUM" >/dev/null 2>&1 && return 0
  local b
  for b in chromium-headless-shell chromium chromium-browser google-chrome google-chrome-stable; do
    command -v "$b" >/dev/null 2>&1 && return 0
  done
  return 1
}
have_chromium || need_apt+=(chromium-headless-shell)
have_pyzmq() { /usr/bin/python3 -c 'import zmq, msgpack' >/dev/null 2>&1; }
have_pyzmq || need_apt+=(python3-zmq python3-msgpack)

if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ] && ! command -v sudo >/dev/null 2>&1; then
    echo "ensure-deps: missing ${need_apt[*]} and not root; install them and retry" >&2
    exit 1
  fi
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  echo "ensure-deps: installing ${need_apt[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
  # Debian starts a system redis on 6379 after install; the tests do not use it.
  if command -v systemctl >/dev/null 2>&1; then $SUDO systemctl stop redis-server >/dev/null 2>&1 || true; fi
fi
command -v redis-server >/dev/null 2>&1 || { echo "ensure-deps: redis-server still missing" >&2; exit 1; }
command -v redis-cli >/dev/null 2>&1 || { echo "ensure-deps: redis-cli (redis-tools) still missing" >&2; exit 1; }
have_pyzmq || { echo "ensure-deps: /usr/bin/python3 cannot import zmq and msgpack (apt-get install python3-zmq python3-msgpack)" >&2; exit 1; }
have_chromium || { echo "ensure-deps: no headless Chromium (apt-get install chromium-headless-shell, or set ZLINK_CHROMIUM)" >&2; exit 1; }
