#!/usr/bin/env bash
# Installs what `make test` needs when it is missing. Idempotent; quiet when
# everything is there. Tests start and stop their own redis-server on a free
# loopback port (a Redis Cluster of three, made with redis-cli, too); this
# script only makes sure the binaries exist.
set -euo pipefail

need_apt=()
command -v redis-server >/dev/null 2>&1 || need_apt+=(redis-server)
command -v redis-cli >/dev/null 2>&1 || need_apt+=(redis-tools)

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
