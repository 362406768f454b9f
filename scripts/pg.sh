# Sourced by scripts/test and scripts/demo: start a throwaway PostgreSQL cluster on 127.0.0.1.
# Sets PAYCHARGE_TEST_PG_HOST/PORT/USER/NAME and PG_DATA_DIR; stop it with pg_stop.

pg_bin_dir() {
  if command -v initdb >/dev/null 2>&1; then dirname "$(command -v initdb)"; return; fi
  local d
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  [ -n "$d" ] && echo "$d"
}

ensure_postgres_installed() {
  [ -n "$(pg_bin_dir)" ] && return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "Installing PostgreSQL from Debian's packages..." >&2
    apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
  fi
  [ -n "$(pg_bin_dir)" ] || { echo "PostgreSQL is not installed (need initdb and pg_ctl)." >&2; return 1; }
}

pg_start() {
  ensure_postgres_installed || return 1
  local bin port run
  bin=$(pg_bin_dir)
  PG_DATA_DIR=$(mktemp -d /tmp/paycharge-pg.XXXXXX)
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  run=()
  if [ "$(id -u)" = 0 ]; then
    # PostgreSQL refuses to run as root; Debian's package creates the postgres user.
    id postgres >/dev/null 2>&1 || useradd --system --home "$PG_DATA_DIR" postgres
    chown postgres "$PG_DATA_DIR"
    run=(runuser -u postgres --)
  fi
  "${run[@]}" "$bin/initdb" -D "$PG_DATA_DIR/data" -A trust -U postgres -E UTF8 >/dev/null
  "${run[@]}" "$bin/pg_ctl" -D "$PG_DATA_DIR/data" -l "$PG_DATA_DIR/log" -w \
    -o "-p $port -k $PG_DATA_DIR -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200" \
    start >/dev/null
  export PAYCHARGE_TEST_PG_HOST=127.0.0.1 PAYCHARGE_TEST_PG_PORT=$port PAYCHARGE_TEST_PG_USER=postgres
  export PAYCHARGE_TEST_PG_NAME=paycharge PG_DATA_DIR PG_RUN_AS="${run[*]}" PG_BIN_DIR=$bin
  echo "PostgreSQL running on 127.0.0.1:$port (data in $PG_DATA_DIR)" >&2
}

pg_stop() {
  [ -n "${PG_DATA_DIR:-}" ] || return 0
  # shellcheck disable=SC2086
  $PG_RUN_AS "$PG_BIN_DIR/pg_ctl" -D "$PG_DATA_DIR/data" -m fast -w stop >/dev/null 2>&1 || true
  rm -rf "$PG_DATA_DIR"
  PG_DATA_DIR=
}
