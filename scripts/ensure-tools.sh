#!/usr/bin/env bash
# Makes sure the tools the tests drive are installed: Debian's chromium (the console's browser
# tests, pkg/console, run it headless through chromedp) and promtool from Debian's prometheus
# package at a pinned version (make rules-test runs promtool test rules on the alert rules;
# building promtool from Go source compiles most of Prometheus and would blow make test's
# 10-minute cold-cache budget on 2 cores). Used by .ci/run; safe to run when they are already
# there. Without chromium the browser tests skip locally and fail under CI=true.
set -euo pipefail

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

if ! command -v chromium >/dev/null 2>&1; then
  echo "ensure-tools: installing chromium from Debian packages" >&2
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
fi

PROMETHEUS_DEB=2.42.0+ds-5+deb12u1
if [ "$(dpkg-query -W -f='${Version}' prometheus 2>/dev/null || true)" != "$PROMETHEUS_DEB" ]; then
  echo "ensure-tools: installing promtool (Debian prometheus=$PROMETHEUS_DEB)" >&2
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "prometheus=$PROMETHEUS_DEB" >/dev/null
fi
