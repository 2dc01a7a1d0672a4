#!/usr/bin/env bash
# A/B of the end-to-end drain: the working tree against a base commit, on this machine, in one
# run (make bench-ab BASE=<commit> [PAIRS=3]). Each pair drains the same pre-written backlog with a
# fresh stack (MSGX_BENCH_DRAIN_ONLY=1; MSGX_BENCH_BACKLOG and MSGX_BENCH_BRIEF pass through) once
# with the base's binaries and once with the tree's, alternating which goes first so that a drift
# of the machine falls on both. It prints benchstat's medians and the ratios tree/base of the
# medians (msgs/s, CPU µs per message in all and of the processor and of PostgreSQL, WAL bytes per
# message where both trees print it, each binary's peak RSS), the figures issue-level claims are
# stated in. The base is checked out in a temporary worktree, removed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:?usage: scripts/bench-ab.sh BASE [PAIRS]}
pairs=${2:-3}
rev=$(git rev-parse --verify "$base^{commit}")
tmp=$(mktemp -d)
cleanup() {
  git worktree remove --force "$tmp/base" >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT
git worktree add --detach -q "$tmp/base" "$rev"

# drain TREE NAME: one drain with TREE's code; its figures appended to $tmp/NAME.txt as a
# benchmark line benchstat reads.
drain() {
  (cd "$1" && MSGX_BENCH_DRAIN_ONLY=1 go test -run '^$' -bench BenchmarkEndToEnd -benchtime 1x -timeout 60m ./e2e/) \
    >"$tmp/$2.last.log" 2>&1 || { cat "$tmp/$2.last.log" >&2; echo "bench-ab: the $2 drain failed" >&2; exit 1; }
  awk '
    /^throughput: / {
      for (i = 1; i <= NF; i++) {
        if ($(i) ~ /^msgs\/s,?$/) rate = $(i-1)
        if ($(i) == "µs") cpu = $(i-1)
        if ($(i) == "WAL/msg;") wal = sprintf(" %s wal_B/msg", $(i-2))
        if ($(i) ~ /^\(?(processor|postgres)$/) { n = $(i); sub(/^\(/, "", n); v = $(i+1); sub(/[,)]+$/, "", v); parts = parts sprintf(" %s %s_us/msg", v, n) }
      }
    }
    /^peak RSS / { rss = rss sprintf(" %s %s_rss_MB", $4, $3) }
    END {
      if (rate == "") exit 1
      printf "BenchmarkDrain 1 %s msgs/s %s cpu_us/msg%s%s%s\n", rate, cpu, parts, wal, rss
    }' "$tmp/$2.last.log" >>"$tmp/$2.txt"
  tail -1 "$tmp/$2.txt"
}

echo "bench-ab: base $rev, tree $(git rev-parse --short HEAD)$(git diff --quiet || echo '+changes'), $pairs pairs; load $(cut -d' ' -f1-3 /proc/loadavg)"
for i in $(seq 1 "$pairs"); do
  if [ $((i % 2)) = 1 ]; then
    echo "pair $i: base"; drain "$tmp/base" base
    echo "pair $i: tree"; drain . tree
  else
    echo "pair $i: tree"; drain . tree
    echo "pair $i: base"; drain "$tmp/base" base
  fi
done
echo "bench-ab: load at the end $(cut -d' ' -f1-3 /proc/loadavg)"
go build -C tools -o "$tmp/benchstat" golang.org/x/perf/cmd/benchstat
(cd "$tmp" && ./benchstat base.txt tree.txt)

# ratio of the medians, tree/base, per unit
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
units=$(awk '{ for (i = 4; i <= NF; i += 2) print $i }' "$tmp/base.txt" | sort -u)
echo
echo "ratio of medians (tree/base):"
for u in $units; do
  col() { awk -v u="$u" '{ for (i = 4; i <= NF; i += 2) if ($i == u) print $(i-1) }' "$1"; }
  b=$(col "$tmp/base.txt" | median)
  t=$(col "$tmp/tree.txt" | median)
  [ -n "$b" ] && [ -n "$t" ] && awk -v u="$u" -v b="$b" -v t="$t" 'BEGIN { printf "  %-22s %10.1f / %10.1f = %.2f\n", u, t, b, (b == 0 ? 0 : t / b) }'
done

# AB_OUT=file: the figures as key: value lines, for the dated section make bench writes.
if [ -n "${AB_OUT:-}" ]; then
  col() { awk -v u="$2" '{ for (i = 4; i <= NF; i += 2) if ($i == u) print $(i-1) }' "$1"; }
  {
    echo "ab_base: $(git rev-parse --short "$rev")"
    echo "ab_tree: $(git rev-parse --short HEAD)$(git diff --quiet || echo '+changes')"
    echo "ab_pairs: $pairs"
    for u in msgs/s cpu_us/msg; do
      b=$(col "$tmp/base.txt" "$u" | median)
      t=$(col "$tmp/tree.txt" "$u" | median)
      key=${u%%/*}
      echo "ab_base_${key}: $b"
      echo "ab_tree_${key}: $t"
    done
    awk -v b="$(col "$tmp/base.txt" msgs/s | median)" -v t="$(col "$tmp/tree.txt" msgs/s | median)" 'BEGIN { printf "ab_e2e_ratio: %.2f\n", t / b }'
    awk -v b="$(col "$tmp/base.txt" cpu_us/msg | median)" -v t="$(col "$tmp/tree.txt" cpu_us/msg | median)" 'BEGIN { printf "ab_cpu_ratio: %.2f\n", t / b }'
    for u in $units; do
      case $u in *_rss_MB)
        echo "ab_tree_${u%_MB}_mb: $(col "$tmp/tree.txt" "$u" | sort -g | tail -1)"
        echo "ab_base_${u%_MB}_mb: $(col "$tmp/base.txt" "$u" | sort -g | tail -1)";;
      esac
    done
  } >"$AB_OUT"
  echo "bench-ab: figures written to $AB_OUT"
fi
