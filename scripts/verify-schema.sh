#!/usr/bin/env bash
# Applies db/migrations to two fresh PostgreSQL databases — one with dbmate (tools/dbmate-pg: the pinned dbmate library, PostgreSQL driver only), one with
# msgxctl migrate (the path production uses) — dumps both with dbmate and fails if either differs
# from the committed db/schema.sql. With --write it regenerates db/schema.sql instead.
set -euo pipefail
cd "$(dirname "$0")/.."

base=${MSGX_TEST_PG_SERVER:-postgres://postgres@127.0.0.1:5432}
suffix="$$_$RANDOM"
db_a="msgx_verify_dbmate_$suffix"
db_b="msgx_verify_msgxctl_$suffix"
tmp=$(mktemp -d)
cleanup() {
  psql -q "$base/postgres" -c "DROP DATABASE IF EXISTS $db_a" -c "DROP DATABASE IF EXISTS $db_b" >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT

psql -q "$base/postgres" -c "CREATE DATABASE $db_a" -c "CREATE DATABASE $db_b" >/dev/null

dbmate() { go tool dbmate-pg "$@"; }
# pg_dump ≥ 15.14 writes a random \restrict key per dump, and every dump names the server's and
# pg_dump's minor versions (a fresh machine gets whatever Debian ships); neither carries schema
# information.
normalize() { sed -i -E '/^\\(un)?restrict /d; /^-- Dumped (from database|by pg_dump) version /d' "$1"; }

dbmate -url "$base/$db_a?sslmode=disable" up >/dev/null
dbmate -url "$base/$db_a?sslmode=disable" -schema-file "$tmp/dbmate.sql" dump >/dev/null
normalize "$tmp/dbmate.sql"

if [ "${1:-}" = "--write" ]; then
  cp "$tmp/dbmate.sql" db/schema.sql
  echo "db/schema.sql regenerated"
  exit 0
fi

# -race: make test's lint (go vet -race) has compiled msgxctl's packages that way already, so a
# cold build cache does not compile them a second time for this one run.
MSGX_PG_URL="$base/$db_b?sslmode=disable" go run -race ./cmd/msgxctl migrate >/dev/null
dbmate -url "$base/$db_b?sslmode=disable" -schema-file "$tmp/msgxctl.sql" dump >/dev/null
normalize "$tmp/msgxctl.sql"

status=0
if ! diff -u db/schema.sql "$tmp/dbmate.sql" >"$tmp/diff"; then
  echo "verify: db/schema.sql differs from what db/migrations produce (run 'make schema' and commit):" >&2
  head -50 "$tmp/diff" >&2
  status=1
fi
if ! diff -u "$tmp/dbmate.sql" "$tmp/msgxctl.sql" >"$tmp/diff2"; then
  echo "verify: msgxctl migrate and dbmate produce different schemas:" >&2
  head -50 "$tmp/diff2" >&2
  status=1
fi
[ $status = 0 ] && echo "verify: db/schema.sql matches db/migrations (dbmate and msgxctl migrate)"
exit $status
