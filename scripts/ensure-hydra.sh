#!/usr/bin/env bash
# Makes sure ORY Hydra (the pinned version below), the OpenID Connect provider the console's OIDC
# tests (pkg/console) run, is built on this machine and prints the binary's path:
#   ${MSGX_HYDRA_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/msgx/hydra-<version>}/bin/hydra
# It is built from the module's source as the Go module proxy serves it. `go install
# github.com/ory/hydra/v2@<version>` refuses the module (its go.mod replaces its own client with
# ./internal/httpclient, a nested module the module's zip leaves out), so the source is copied,
# that one replace dropped (the client is then the released github.com/ory/hydra-client-go/v2 at
# the version hydra's go.mod requires) and built there. Safe to run again and concurrently: when
# the binary is there and reports the version it does nothing. Without the binary the tests skip
# locally and fail under CI=true.
set -euo pipefail

version=v2.3.0
home=${MSGX_HYDRA_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/msgx/hydra-$version}
bin=$home/bin/hydra

die() { echo "ensure-hydra: $*" >&2; exit 1; }

# The version's output is read whole first: grep -q in a pipe would stop reading early and,
# under pipefail, fail the check with hydra's SIGPIPE.
built() {
  local v
  [ -x "$bin" ] && v=$("$bin" version 2>/dev/null) && grep -q "^Version: *$version\$" <<<"$v"
}

if built; then
  echo "$bin"
  exit 0
fi
command -v go >/dev/null 2>&1 || die "go not found"
mkdir -p "$home/bin"
exec 9>"$home/.lock"
flock 9
if built; then # another run built it meanwhile
  echo "$bin"
  exit 0
fi

echo "ensure-hydra: building github.com/ory/hydra/v2@$version from the module proxy into $bin" >&2
tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
src=$(cd "$tmp" && GOFLAGS=-mod=mod go mod download -json "github.com/ory/hydra/v2@$version" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
[ -n "$src" ] && [ -d "$src" ] || die "go mod download github.com/ory/hydra/v2@$version gave no source directory"
cp -r "$src" "$tmp/src"
chmod -R u+w "$tmp/src"
cd "$tmp/src"
go mod edit -dropreplace github.com/ory/hydra-client-go/v2
if ! go build -mod=mod -trimpath -ldflags "-X github.com/ory/hydra/v2/driver/config.Version=$version" -o "$bin.tmp" . >"$home/build.log" 2>&1; then
  tail -n 40 "$home/build.log" >&2
  die "building hydra failed (full output: $home/build.log)"
fi
mv "$bin.tmp" "$bin"
built || die "$bin does not report version $version"
echo "$bin"
