#!/usr/bin/env bash
# Makes sure the AsyncAPI project's parser (@asyncapi/parser, pinned with its dependencies in
# tools/asyncapi/package-lock.json) is installed in tools/asyncapi/node_modules, for pkg/contract's
# TestAsyncAPIParses. It installs Debian's nodejs and npm when node is missing. Safe to run
# again: when the installed tree matches the lock file it does nothing.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dir=$root/tools/asyncapi

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "ensure-asyncapi: installing nodejs and npm from Debian packages" >&2
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
fi

# npm ci keeps node_modules/.package-lock.json: equal to the lock's packages, nothing to do.
stamp=$dir/node_modules/.msgx-lock.sha256
want=$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -d "$dir/node_modules/@asyncapi/parser" ]; then
  exit 0
fi
echo "ensure-asyncapi: npm ci in tools/asyncapi" >&2
(cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
echo "$want" >"$stamp"
