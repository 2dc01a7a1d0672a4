#!/usr/bin/env bash
# Makes sure PostgreSQL and MariaDB are installed, running and accepting TCP connections on
# 127.0.0.1 (5432 trust auth, 3306 root with an empty password), as on this kind of machine.
# Used by .ci/run and the local stack; safe to run when both are already up.
set -euo pipefail

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

pg_ok() { psql -h 127.0.0.1 -U postgres -d postgres -Atqc 'select 1' >/dev/null 2>&1; }
my_ok() { mariadb -h 127.0.0.1 -uroot -e 'select 1' >/dev/null 2>&1; }
# The server answers at all (a fresh install lets root in only over the socket).
my_up() { as_root mariadb-admin --silent ping >/dev/null 2>&1; }

wait_for() { # name, check-function
  for _ in $(seq 1 60); do "$2" && return 0; sleep 1; done
  echo "ensure-db: $1 did not accept connections within 60s" >&2; return 1
}

# trust auth on loopback, as on the developer machines: set whether the package was installed
# here or came with the machine (Debian's default is scram/peer, which the tests cannot use).
pg_trust() {
  local hba="/etc/postgresql/$1/main/pg_hba.conf"
  sed -i -E 's/^(host\s+all\s+all\s+127\.0\.0\.1\/32\s+)\S+/\1trust/; s/^(host\s+all\s+all\s+::1\/128\s+)\S+/\1trust/; s/^(local\s+all\s+all\s+)\S+/\1trust/; s/^(local\s+all\s+postgres\s+)\S+/\1trust/; s/^(host\s+replication\s+all\s+127\.0\.0\.1\/32\s+)\S+/\1trust/; s/^(local\s+replication\s+all\s+)\S+/\1trust/' "$hba"
}

if ! pg_ok; then
  if ! ls /etc/postgresql/*/main >/dev/null 2>&1; then
    echo "ensure-db: installing PostgreSQL from Debian packages" >&2
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql postgresql-client >/dev/null
  fi
  v=$(ls /etc/postgresql | head -1)
  pg_trust "$v"
  echo "ensure-db: starting PostgreSQL $v" >&2
  as_root pg_ctlcluster --skip-systemctl-redirect "$v" main start 2>/dev/null \
    || as_root pg_ctlcluster --skip-systemctl-redirect "$v" main reload
  wait_for PostgreSQL pg_ok
fi
psql -h 127.0.0.1 -U postgres -d postgres -Atqc "select 1 from pg_database where datname='test'" | grep -q 1 \
  || psql -h 127.0.0.1 -U postgres -d postgres -qc 'CREATE DATABASE test'

if ! my_ok; then
  if ! command -v mariadbd >/dev/null 2>&1 && [ ! -x /usr/sbin/mariadbd ]; then
    echo "ensure-db: installing MariaDB from Debian packages" >&2
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mariadb-server mariadb-client >/dev/null
  fi
  echo "ensure-db: starting MariaDB" >&2
  as_root mkdir -p /run/mysqld && as_root chown mysql:mysql /run/mysqld 2>/dev/null || true
  as_root start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd -- --user=mysql
  wait_for MariaDB my_up
fi
# root over TCP with an empty password (fresh Debian installs use unix_socket auth for root).
mariadb -h 127.0.0.1 -uroot -e 'select 1' >/dev/null 2>&1 || \
  as_root mariadb -e "ALTER USER 'root'@'localhost' IDENTIFIED VIA mysql_native_password USING PASSWORD(''); FLUSH PRIVILEGES;"
echo "ensure-db: PostgreSQL and MariaDB are up"
