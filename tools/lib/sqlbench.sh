# shellcheck shell=bash
# tools/lib/sqlbench.sh - what the plain-SQL benchmarks against a btree twin
# (bench/sql/join, bench/sql/include) share: the machine line, the build, a
# cluster with PostgreSQL's default planner and parallel settings (kept in
# BENCH_DATA_DIR between runs when asked), loading tables side by side, the
# probe tables, running a script of timed cells, writing the table.  Needs
# tools/lib/common.sh, pgcluster.sh and gibench.sh sourced; the SQL side is
# bench/sql/join.sql's schema gijoin (info, note_ms, load_slice, make_probes).
#
#   sqb_traps                 stop the cluster (and remove a temp dir) on exit
#   sqb_build                 build and install unless BENCH_NO_BUILD=1
#   sqb_open DIR KEY SQL...   start a cluster (DIR kept, or a temp dir), run the
#                             SQL files; SQB_REUSE=1 when DIR holds data set KEY
#   sqb_load_slices ROWS JOBS PAD TABLE...   fill tables from JOBS sessions each
#   sqb_side_by_side LABEL SQL ...           statements in sessions at once, timed
#   sqb_probes ROWS N...      the probe tables of the sizes still missing
#   sqb_run_cells             the psql script on stdin, in a session of its own
#   sqb_write FILE HEAD NOTE FN   the header, a note, then what function FN prints
#   sqb_finish FILE           print the table and count its MISMATCH rows

SQB_WORK=""
SQB_KEEP=0
# shellcheck disable=SC2034  # read by the scripts
SQB_REUSE=0

# Stop the cluster and remove the temp dir (a kept data directory stays).
sqb_cleanup() {
    pgc_stop
    if [[ -n "$SQB_WORK" && "$SQB_KEEP" != 1 ]]; then
        rm -rf "$SQB_WORK"
    fi
    return 0
}

sqb_traps() {
    trap sqb_cleanup EXIT
    trap 'exit 130' INT TERM HUP
}

# Print a one-paragraph description of this machine (as bench/sql/run does).
sqb_machine() {
    local cpu gpu mem
    cpu="$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)"
    mem="$(awk '/^MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo)"
    if gi_have_gpu; then
        gpu="$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | head -n 1)"
    else
        gpu="none"
    fi
    printf 'machine: %s, %s cores, %s RAM; GPU: %s\n' "${cpu:-unknown CPU}" "$(nproc)" "$mem" "$gpu"
    # shellcheck disable=SC1091  # the system's file
    printf 'os: %s; %s\n' "$(. /etc/os-release && echo "$PRETTY_NAME")" "$("$PG_CONFIG" --version)"
    # (a bench that runs both modes, bench/sql/service, names them itself)
    if [[ "${SQB_BOTH_MODES:-0}" == 1 ]]; then
        :
    elif [[ "${BENCH_SERVICE:-0}" == 1 ]]; then
        echo "image mode: gpuidx service (shared_preload_libraries = 'gpuidx')"
    else
        echo "image mode: per backend"
    fi
}

# Find PostgreSQL, set up the user, build and install (unless BENCH_NO_BUILD=1).
sqb_build() {
    local log
    gi_find_pg
    gi_setup_user
    [[ "${BENCH_NO_BUILD:-0}" == 1 ]] && return 0
    gi_stage "build and install"
    log="$(mktemp)"
    gi_build_install "$log" || { tail -n 40 "$log"; gi_die "build failed"; }
    rm -f "$log"
    echo "ok"
}

# Configure the cluster just created by pgc_init: PostgreSQL's defaults for
# the planner and parallel query; only memory, WAL and autovacuum (off: no
# visibility-map or statistics changes between cells) are set.
sqb_conf() {
    pgc_conf "shared_buffers = ${BENCH_SHARED_BUFFERS:-2GB}"
    if [[ -n "${BENCH_WORK_MEM:-}" ]]; then
        pgc_conf "work_mem = '$BENCH_WORK_MEM'"
    fi
    pgc_conf "maintenance_work_mem = 1GB"
    pgc_conf "autovacuum = off"
    pgc_conf "checkpoint_timeout = 1h"
    pgc_conf "max_wal_size = 8GB"
}

# The image mode (BENCH_SERVICE=1: the gpuidx service, images shared by all
# backends and parallel workers; else per backend) and BENCH_CONF's lines,
# written last so that they win over earlier runs' lines in a kept data
# directory.
sqb_mode_conf() {
    local line lines
    if [[ "${BENCH_SERVICE:-0}" == 1 ]]; then
        pgc_conf "shared_preload_libraries = 'gpuidx'"
    else
        pgc_conf "shared_preload_libraries = ''"
    fi
    # BENCH_CONF: extra postgresql.conf lines, ';'-separated, for diagnostic
    # runs (sqb_settings names them in the header; in a kept data directory
    # the lines stay for later runs)
    if [[ -n "${BENCH_CONF:-}" ]]; then
        IFS=';' read -ra lines <<<"$BENCH_CONF"
        for line in "${lines[@]}"; do
            pgc_conf "$line"
        done
    fi
}

# BENCH_SHM_HUGE=1: remount /dev/shm with huge=within_size (root) so that the
# service's shared images (POSIX shared memory) sit on 2 MB pages, as README
# advises; say what /dev/shm is mounted with either way.  Before the cluster
# starts: segments made earlier keep their pages.
sqb_shm_huge() {
    if [[ "${BENCH_SHM_HUGE:-0}" == 1 ]]; then
        mount -o remount,huge=within_size /dev/shm || echo "BENCH_SHM_HUGE: could not remount /dev/shm"
    fi
    echo "/dev/shm: $(grep ' /dev/shm ' /proc/mounts || echo 'not a mount')"
}

# Start the cluster: the one kept in "$1" (created there when missing), or
# a new one in a temp dir when "$1" is empty; then run the SQL files
# "${@:3}".  SQB_REUSE=1 when its data set (gijoin.info 'data') is "$2".
sqb_open() {
    local dir="$1" key="$2" f
    shift 2
    sqb_shm_huge
    if [[ -n "$dir" ]]; then
        SQB_WORK="$dir"
        SQB_KEEP=1
        if [[ -f "$dir/data/PG_VERSION" ]]; then
            pgc_use "$dir"
            pgc_conf "port = $PGPORT"
            sqb_mode_conf
            pgc_start
        else
            mkdir -p "$dir"
            chmod 700 "$dir"
            if gi_is_root; then chown "$GI_PGUSER" "$dir"; fi
            pgc_init "$dir" auto
            sqb_conf
            sqb_mode_conf
            pgc_start
        fi
    else
        SQB_WORK="$(gi_mktemp)"
        pgc_init "$SQB_WORK" auto
        sqb_conf
        sqb_mode_conf
        pgc_start
    fi
    for f in "$@"; do
        pgc_psql -f "$f" >/dev/null
    done
    # shellcheck disable=SC2034  # read by the scripts
    SQB_REUSE=0
    if [[ "$(pgc_psql -At -c "SELECT value FROM gijoin.info WHERE what = 'data'")" == "$key" ]]; then
        # shellcheck disable=SC2034
        SQB_REUSE=1
        echo "reusing the tables in $dir ($key)"
    fi
}

# Fill tables "${@:4}" with rows 1.."$1" of gijoin.load_slice (pad "$3"
# bytes), each from "$2" sessions at once; the time goes to gijoin.info.
sqb_load_slices() {
    local rows="$1" jobs="$2" pad="$3" t0
    shift 3
    t0="$(pgc_psql -At -c "SELECT clock_timestamp()")"
    gib_slices "$rows" "$jobs" "SELECT gijoin.load_slice('%s', $rows, %s, %s, $pad)" "$@"
    pgc_psql -c "SELECT gijoin.note_ms('load ms ($jobs sessions a table)', '$t0')" >/dev/null
}

# Run statements side by side, each in a session of its own, and wait for
# all: arguments in pairs LABEL SQL; each one's time goes to gijoin.info as
# LABEL.  (VACUUM may be one: psql runs each -c in a transaction of its own.)
sqb_side_by_side() {
    local pids=() p
    while (($# >= 2)); do
        pgc_psql -c "SELECT set_config('gijoin.t0', clock_timestamp()::text, false)" -c "$2" \
            -c "SELECT gijoin.note_ms('$1', current_setting('gijoin.t0')::timestamptz)" >/dev/null &
        pids+=($!)
        shift 2
    done
    for p in "${pids[@]}"; do wait "$p"; done
}

# Make the probe tables (gijoin.make_probes) of every size in "${@:2}" that
# is still missing, over a table of "$1" rows, and VACUUM them: every page
# all-visible, as the indexed tables are, so that scanning them skips the
# per-row visibility checks for the btree twin and gpuidx alike.
sqb_probes() {
    local rows="$1" n
    shift
    for n in $(printf '%s\n' "$@" | sort -n -u); do
        if [[ "$(pgc_psql -At -c "SELECT to_regclass('public.p_asofs_$n') IS NOT NULL")" != t ]]; then
            pgc_psql -c "SELECT gijoin.make_probes($n, $rows)" >/dev/null
        fi
        pgc_psql -c "VACUUM public.p_eq_$n, public.p_rng_$n, public.p_asof_$n, public.p_asofs_$n" >/dev/null
    done
}

# The first lines of a script of timed cells: each cell catches its own
# errors and timeouts (statement_timeout "$1"); should one escape, the other
# cells still run (the log shows the error).
sqb_cells_preamble() {
    echo '\set ON_ERROR_STOP 0'
    echo '\pset tuples_only on'
    echo '\pset format unaligned'
    echo "SET statement_timeout = '$1';"
}

# Run the psql script on stdin in a session of its own; its output, indented, on stdout.
sqb_run_cells() {
    local script
    script="$(mktemp)"
    cat >"$script"
    chmod 644 "$script"
    pgc_psql -v ON_ERROR_STOP=0 -f "$script" 2>&1 | sed 's/^/  /'
    rm -f "$script"
}

# The settings the header reports.
sqb_settings() {
    pgc_psql -At -c "SELECT string_agg(name || '=' || setting || coalesce(unit, ''), ', ' ORDER BY name)
        FROM pg_settings WHERE name IN ('max_parallel_workers_per_gather', 'work_mem', 'shared_buffers',
                                        'random_page_cost', 'effective_cache_size', 'jit')"
    if [[ -n "${BENCH_CONF:-}" ]]; then
        echo "  BENCH_CONF (not PostgreSQL's defaults): $BENCH_CONF"
    fi
}

# Write the header "$2", then "$3" when not empty (the run is not over,
# say), then what the function "$4" prints (the tables), to the file "$1".
sqb_write() {
    mkdir -p "$(dirname "$1")"
    {
        printf '%s\n' "$2"
        if [[ -n "$3" ]]; then printf '\n%s\n' "$3"; fi
        echo
        "$4"
    } >"$1"
}

# Print the table in "$1" and how many of its rows say MISMATCH.
sqb_finish() {
    local mismatches
    gi_stage "results"
    cat "$1"
    mismatches="$(grep -c '^|.*MISMATCH' "$1" || true)"
    echo
    echo "table written to $1; rows with MISMATCH: $mismatches"
}
