# Sourced by .ci/run (bash): starts a throwaway PostgreSQL cluster from Debian's postgresql package
# (installed by .ci/run; nothing is installed here) and exports DATABASE_URL for the store and HTTP
# tests. Works as root (the cluster runs as the postgres user) or as an unprivileged user. It leaves
# the caller's shell options alone. Stop the cluster with: svc_postgres_stop

svc_pg_as() {
  if [ "$(id -u)" = "0" ]; then su postgres -s /bin/sh -c "$*"; else sh -c "$*"; fi
}

svc_postgres_start() {
  SVC_PG_BIN="${SVC_PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)}"
  if [ -z "$SVC_PG_BIN" ] || [ ! -x "$SVC_PG_BIN/initdb" ]; then
    echo ".ci/postgres.sh: no PostgreSQL binaries under /usr/lib/postgresql/*/bin" >&2
    return 1
  fi
  if [ -z "${SVC_PG_PORT:-}" ]; then
    # The first free port from 54329: a cluster left running by an earlier run must not stop this one.
    for candidate in $(seq 54329 54399); do
      if ! (exec 3<>"/dev/tcp/127.0.0.1/$candidate") 2>/dev/null; then
        SVC_PG_PORT=$candidate
        break
      fi
    done
  fi
  SVC_PG_DIR="$(mktemp -d /tmp/svc-pg.XXXXXX)" || return 1
  chmod 755 "$SVC_PG_DIR" && mkdir -p "$SVC_PG_DIR/data" "$SVC_PG_DIR/sock" || return 1
  if [ "$(id -u)" = "0" ]; then chown -R postgres:postgres "$SVC_PG_DIR" || return 1; fi
  svc_pg_as "'$SVC_PG_BIN/initdb' -D '$SVC_PG_DIR/data' -U svc --auth=trust -E UTF8 --no-locale" >/dev/null ||
    return 1
  # fsync off: a throwaway test cluster trades durability for speed.
  svc_pg_as "'$SVC_PG_BIN/pg_ctl' -D '$SVC_PG_DIR/data' -l '$SVC_PG_DIR/log' -w -o \"-k $SVC_PG_DIR/sock -p $SVC_PG_PORT -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200\" start" >/dev/null ||
    { cat "$SVC_PG_DIR/log" >&2; return 1; }
  svc_pg_as "'$SVC_PG_BIN/createdb' -h 127.0.0.1 -p $SVC_PG_PORT -U svc svc_test" || return 1
  export DATABASE_URL="postgres://svc@127.0.0.1:$SVC_PG_PORT/svc_test"
  export SVC_PG_DIR SVC_PG_BIN SVC_PG_PORT
  echo "PostgreSQL $("$SVC_PG_BIN/postgres" --version | awk '{print $3}') on 127.0.0.1:$SVC_PG_PORT (DATABASE_URL exported)"
}

svc_postgres_stop() {
  [ -n "${SVC_PG_DIR:-}" ] || return 0
  svc_pg_as "'$SVC_PG_BIN/pg_ctl' -D '$SVC_PG_DIR/data' -m fast stop" >/dev/null || true
  rm -rf "$SVC_PG_DIR"
}

svc_postgres_start
