#!/usr/bin/env bash
# Makes sure the tools the tests drive are installed: Debian's chromium (the console's browser
# tests, pkg/console, run it headless through chromedp). Used by .ci/run; safe to run when they
# are already there. Without chromium the browser tests skip locally and fail under CI=true.
set -euo pipefail

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

if ! command -v chromium >/dev/null 2>&1; then
  echo "ensure-tools: installing chromium from Debian packages" >&2
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
fi
