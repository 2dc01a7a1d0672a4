#!/usr/bin/env bash
# Makes sure the reference consumer (tools/refconsumer: Python, librdkafka through confluent-kafka,
# jsonschema; pinned in requirements.txt) has its virtual environment, tools/refconsumer/.venv,
# for pkg/dispatch's conformance case ReferenceConsumer. It installs Debian's python3-venv when
# python3 cannot make one. Safe to run again: when the environment matches requirements.txt it
# does nothing.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dir=$root/tools/refconsumer
venv=$dir/.venv

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

want=$(sha256sum "$dir/requirements.txt" | cut -d' ' -f1)
stamp=$venv/.msgx-requirements.sha256
if [ -x "$venv/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi
if ! python3 -m venv --help >/dev/null 2>&1 || ! python3 -c 'import ensurepip' >/dev/null 2>&1; then
  echo "ensure-refconsumer: installing python3-venv from Debian packages" >&2
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-venv >/dev/null
fi
echo "ensure-refconsumer: creating tools/refconsumer/.venv" >&2
rm -rf "$venv"
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check --no-input -r "$dir/requirements.txt"
echo "$want" >"$stamp"
