#!/usr/bin/env bash
# Makes sure the jars of the pinned Apache Kafka broker (tools/kafka/pom.xml) are on this machine
# and prints their directory, for the tests that run a real broker (pkg/dev/apachekafka). The jars
# come from Maven Central through mvn into a cache outside the clone:
#   ${MSGX_KAFKA_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/msgx/kafka-<version>}/lib
# and must match tools/kafka/jars.sha256 (the same set of files, the same SHA-256 sums). Safe to
# run again and concurrently: when the directory matches it only checks the sums.
# MSGX_KAFKA_UPDATE_SUMS=1 resolves afresh and rewrites jars.sha256 (after changing the version).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
pom=$root/tools/kafka/pom.xml
sums=$root/tools/kafka/jars.sha256

die() { echo "ensure-kafka: $*" >&2; exit 1; }

command -v java >/dev/null 2>&1 ||
  die "java not found: Apache Kafka 4 needs Java 17 or newer (apt-get install openjdk-17-jre-headless)"
spec=$(java -XshowSettings:properties -version 2>&1 | awk -F' = ' '/java.specification.version/ {print $2}')
major=${spec#1.}
major=${major%%.*}
[[ $major =~ ^[0-9]+$ ]] && [ "$major" -ge 17 ] ||
  die "java $(command -v java) is version '$spec': Apache Kafka 4 needs Java 17 or newer (apt-get install openjdk-17-jre-headless)"

version=$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$pom")
[ -n "$version" ] || die "no <kafka.version> in $pom"
home=${MSGX_KAFKA_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/msgx/kafka-$version}
lib=$home/lib

# matches DIR: DIR holds exactly the jars jars.sha256 lists, each with its sum.
matches() {
  [ -d "$1" ] && [ "$(find "$1" -mindepth 1 -maxdepth 1 | wc -l)" = "$(grep -c . "$sums")" ] &&
    (cd "$1" && sha256sum --quiet --strict -c "$sums" >/dev/null 2>&1)
}

if [ "${MSGX_KAFKA_UPDATE_SUMS:-}" != 1 ] && matches "$lib"; then
  echo "$lib"
  exit 0
fi

command -v mvn >/dev/null 2>&1 || die "mvn not found: the Kafka jars come from Maven Central through it (apt-get install maven)"
mkdir -p "$home"
exec 9>"$home/.lock"
flock 9
if [ "${MSGX_KAFKA_UPDATE_SUMS:-}" != 1 ] && matches "$lib"; then # another run fetched them meanwhile
  echo "$lib"
  exit 0
fi

tmp=$home/lib.tmp.$$
rm -rf "$tmp"
trap 'rm -rf "$tmp"' EXIT
echo "ensure-kafka: resolving Apache Kafka $version from Maven Central into $lib" >&2
if ! mvn -B -C -f "$pom" dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$tmp" >"$home/mvn.log" 2>&1; then
  tail -n 40 "$home/mvn.log" >&2
  die "mvn could not resolve the jars of $pom (is Maven Central reachable? full output: $home/mvn.log)"
fi

if [ "${MSGX_KAFKA_UPDATE_SUMS:-}" = 1 ]; then
  (cd "$tmp" && LC_ALL=C sha256sum -- *.jar) >"$sums"
  echo "ensure-kafka: wrote $sums ($(grep -c . "$sums") jars)" >&2
elif ! matches "$tmp"; then
  echo "ensure-kafka: the jars mvn resolved differ from $sums:" >&2
  (cd "$tmp" && sha256sum --quiet -c "$sums" >&2 2>&1) || true
  diff <(cut -d' ' -f3 "$sums") <(cd "$tmp" && LC_ALL=C ls) >&2 || true
  die "refusing to use them; if the version changed on purpose, rerun with MSGX_KAFKA_UPDATE_SUMS=1 and commit $sums"
fi
rm -rf "$lib"
mv "$tmp" "$lib"
echo "$lib"
