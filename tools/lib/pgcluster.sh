# tools/lib/pgcluster.sh - a throwaway PostgreSQL cluster in a temp dir, run by
# the unprivileged user.  Used by tools/test, tools/demo and bench/sql/run.
# Needs tools/lib/common.sh sourced first (gi_as_user, GI_PGUSER, PG_BINDIR).
#
#   pgc_init DIR [ENGINE]   initdb in DIR/data, socket in DIR, free port
#   pgc_reattach DIR        start the cluster pgc_init made in DIR (kept) again
#   pgc_conf 'line'         append a line to postgresql.conf (before start)
#   pgc_start / pgc_stop    start / stop (fast, then immediate); stop is idempotent
#   pgc_psql ARGS...        psql -X as the user against the cluster
#
# Sets PGC_DIR, PGC_DATA, PGC_LOG and exports PGHOST, PGPORT, PGUSER,
# PGDATABASE for the clients.

PGC_DIR=""
PGC_DATA=""
PGC_LOG=""
PGC_RUNNING=0

# Print a TCP port on localhost that nothing listens on.
pgc_free_port() {
    local port tries=0
    while ((tries < 100)); do
        port=$((20000 + RANDOM % 40000))
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
            printf '%s\n' "$port"
            return 0
        fi
        tries=$((tries + 1))
    done
    gi_die "no free port found"
}

# Point this shell at the cluster in "$1" (data in "$1"/data, socket in
# "$1", a free port): PGC_* and the clients' PG* variables.
pgc_use() {
    local dir="$1"
    PGC_DIR="$dir"
    PGC_DATA="$dir/data"
    PGC_LOG="$dir/server.log"
    export PGHOST="$dir" PGPORT
    PGPORT="$(pgc_free_port)"
    export PGUSER="$GI_PGUSER" PGDATABASE=postgres
    unset PGSERVICE PGPASSWORD PGHOSTADDR || true
}

# Start the cluster an earlier pgc_init made in "$1" (kept, stopped) on a free port.
pgc_reattach() {
    pgc_use "$1"
    pgc_conf "port = $PGPORT"
    pgc_start
}

# Create a cluster in "$1"/data (owned by the user); engine "$2" goes into gpuidx.engine.
pgc_init() {
    local dir="$1" engine="${2:-auto}"
    pgc_use "$dir"
    gi_as_user "$PG_BINDIR/initdb" -D "$PGC_DATA" -U "$GI_PGUSER" --auth=trust \
        -E UTF8 --no-locale --no-sync >"$dir/initdb.log" 2>&1 \
        || { cat "$dir/initdb.log" >&2; gi_die "initdb failed"; }
    pgc_conf "port = $PGPORT"
    pgc_conf "listen_addresses = ''"
    pgc_conf "unix_socket_directories = '$dir'"
    pgc_conf "jit = off"
    pgc_conf "fsync = off"
    pgc_conf "log_min_messages = warning"
    pgc_conf "gpuidx.engine = '$engine'"
}

# Append a line to the cluster's postgresql.conf.
pgc_conf() {
    printf '%s\n' "$1" | gi_as_user tee -a "$PGC_DATA/postgresql.conf" >/dev/null
}

# Start the server and wait for it.
pgc_start() {
    if ! gi_as_user "$PG_BINDIR/pg_ctl" -D "$PGC_DATA" -l "$PGC_LOG" -w -t 60 start >/dev/null; then
        tail -n 30 "$PGC_LOG" >&2 || true
        gi_die "server did not start (log: $PGC_LOG)"
    fi
    PGC_RUNNING=1
}

# Stop the server if it runs (fast shutdown, immediate as a fallback); never fails.
pgc_stop() {
    [[ -n "$PGC_DATA" && -f "$PGC_DATA/postmaster.pid" ]] || { PGC_RUNNING=0; return 0; }
    gi_as_user "$PG_BINDIR/pg_ctl" -D "$PGC_DATA" -w -t 60 -m fast stop >/dev/null 2>&1 \
        || gi_as_user "$PG_BINDIR/pg_ctl" -D "$PGC_DATA" -w -t 30 -m immediate stop >/dev/null 2>&1 \
        || true
    PGC_RUNNING=0
}

# Run psql (no psqlrc, stop on error) as the user against the cluster.
pgc_psql() {
    gi_as_user "$PG_BINDIR/psql" -X -v ON_ERROR_STOP=1 -q "$@"
}
