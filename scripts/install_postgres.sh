#!/usr/bin/env bash
# Installs Debian's PostgreSQL server packages when no server binaries are present, so that the
# tests can start a throwaway cluster (scripts/servers.py). Needs root or passwordless sudo.
set -euo pipefail
if compgen -G "/usr/lib/postgresql/*/bin/initdb" > /dev/null; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo > /dev/null || { echo "install_postgres: PostgreSQL is missing and this user cannot install it (not root, no sudo); install Debian's postgresql package" >&2; exit 1; }
  SUDO="sudo -n"
fi
echo "install_postgres: installing Debian's postgresql package (server binaries for the tests)"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends postgresql > /dev/null
# The tests run their own cluster; the distribution's default cluster is not needed.
if command -v pg_lsclusters > /dev/null; then
  pg_lsclusters -h 2>/dev/null | while read -r version name _; do
    $SUDO pg_ctlcluster "$version" "$name" stop 2>/dev/null || true
  done
fi
compgen -G "/usr/lib/postgresql/*/bin/initdb" > /dev/null || { echo "install_postgres: postgresql installed but no initdb under /usr/lib/postgresql/*/bin" >&2; exit 1; }
