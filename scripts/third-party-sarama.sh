#!/usr/bin/env bash
# Checks (default) or rewrites (--write) third_party/sarama, the copy of sarama that go.mod's
# replace directive builds instead of the released module: the released version's non-test Go
# files, its LICENSE.md and go.mod, with third_party/sarama.patch applied (third_party/README.md
# says why). The released source comes from the Go module proxy through `go mod download`,
# which checks it against the checksum database. Exit 0 when the copy is exactly that, 1 when
# it differs (the difference is printed).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
version=v1.61.1
sum=h1:I59MWPHQUWqJNdRpsDUcbeCriog8SxjQaPfHNWxidEg= # go.sum of sarama v1.61.1
dest=$root/third_party/sarama
patchfile=$root/third_party/sarama.patch

die() { echo "third-party-sarama: $*" >&2; exit 1; }

mode=check
case "${1:-}" in
  "") ;;
  --write) mode=write ;;
  *) die "usage: $0 [--write]" ;;
esac

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Outside the module, so the replace directive does not apply.
json=$(cd "$tmp" && GOWORK=off GOFLAGS= go mod download -json "github.com/IBM/sarama@$version")
field() { sed -n "s/^[[:space:]]*\"$1\": \"\(.*\)\",\{0,1\}\$/\1/p" <<<"$json"; }
src=$(field Dir)
[ -d "$src" ] || die "go mod download gave no directory for github.com/IBM/sarama@$version: $json"
[ "$(field Sum)" = "$sum" ] || die "sarama $version has sum $(field Sum), want $sum"
# The files the build reads: every non-test .go file of the module's packages that msgx links
# (sarama and sarama/internal/queue), the module's go.mod and its licence.
(cd "$src" && find . -name '*.go' ! -name '*_test.go' \( -path './internal/queue/*' -o ! -path './*/*' \) -print0 |
  xargs -0 -I{} install -D -m 0644 {} "$tmp/sarama/{}")
install -m 0644 "$src/go.mod" "$src/LICENSE.md" "$tmp/sarama/"
(cd "$tmp/sarama" && patch --quiet -p1 <"$patchfile") || die "$patchfile does not apply to sarama $version"

if [ "$mode" = write ]; then
  rm -rf "$dest"
  cp -R "$tmp/sarama" "$dest"
  echo "third-party-sarama: $dest rewritten from sarama $version and $(basename "$patchfile")"
  exit 0
fi
if ! diff -r "$tmp/sarama" "$dest"; then
  echo "third-party-sarama: $dest is not sarama $version with $(basename "$patchfile") (run $0 --write)" >&2
  exit 1
fi
echo "third-party-sarama: $dest is sarama $version with $(basename "$patchfile")"
