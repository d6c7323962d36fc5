# tools/lib/gibench.sh - the batch-lookup benchmark driver shared by tools/demo
# and bench/sql/run.  Needs tools/lib/common.sh and tools/lib/pgcluster.sh
# sourced, a running cluster (pgc_start) and the extension installed.

# Start a throwaway cluster in "$1" tuned for benchmarks (shared_buffers "$2").
gib_cluster() {
    local dir="$1" sb="${2:-1GB}"
    pgc_init "$dir" auto
    pgc_conf "shared_buffers = $sb"
    pgc_conf "maintenance_work_mem = 1GB"
    pgc_conf "work_mem = 256MB"
    pgc_conf "max_parallel_workers_per_gather = 0"
    pgc_conf "max_parallel_maintenance_workers = 0"
    pgc_conf "autovacuum = off"
    pgc_conf "checkpoint_timeout = 1h"
    pgc_conf "max_wal_size = 8GB"
    pgc_start
}

# Load the harness and "$1" rows; probe sets for the batch sizes "${@:2}".
gib_load() {
    local rows="$1"
    shift
    pgc_psql -f "$GI_ROOT/tools/lib/gibench.sql" >/dev/null
    echo "loading $rows rows into t_bt (btree) and t_gi (gpuidx) ..."
    pgc_psql -c "SELECT gibench.load($rows)" >/dev/null
    pgc_psql -c "VACUUM ANALYZE t_bt" -c "VACUUM ANALYZE t_gi" -c "CHECKPOINT"
    local n
    for n in "$@"; do
        pgc_psql -c "SELECT gibench.make_probes($n, $rows)" >/dev/null
    done
    gib_load_report
}

# Print what the load recorded (times) and the relation sizes.
gib_load_report() {
    pgc_psql -At -F': ' -c "SELECT what, value FROM gibench.info" | sed 's/^/  /'
    pgc_psql -At -c "SELECT '  table sizes: t_bt ' || pg_size_pretty(pg_relation_size('t_bt'))
        || ', btree ' || pg_size_pretty(pg_relation_size('t_bt_k'))
        || ', gpuidx ' || pg_size_pretty(pg_relation_size('t_gi_k'))"
}

# Load "$1" rows from "$2" sessions at once (big tables): both tables filled
# in slices side by side, the two indexes built side by side (btree with
# parallel workers), then VACUUM ANALYZE of both side by side; probe sets for
# the batch sizes "${@:3}".
gib_load_parallel() {
    local rows="$1" jobs="$2" j t0 pids=()
    shift 2
    pgc_psql -f "$GI_ROOT/tools/lib/gibench.sql" >/dev/null
    echo "loading $rows rows into t_bt (btree) and t_gi (gpuidx), $jobs sessions a table ..."
    pgc_psql -c "DROP TABLE IF EXISTS t_bt, t_gi" \
        -c "CREATE TABLE t_bt (k int8 NOT NULL, v int4 NOT NULL)" \
        -c "CREATE TABLE t_gi (k int8 NOT NULL, v int4 NOT NULL)" >/dev/null
    t0="$(pgc_psql -At -c "SELECT clock_timestamp()")"
    gib_slices "$rows" "$jobs" "SELECT gibench.load_slice('%s', $rows, %s, %s)" t_bt t_gi
    pgc_psql -c "SELECT gibench.note_ms('load ms (parallel)', '$t0')" >/dev/null
    pgc_psql -c "SET max_parallel_maintenance_workers = 8" \
        -c "SELECT set_config('gibench.t0', clock_timestamp()::text, false)" \
        -c "CREATE INDEX t_bt_k ON t_bt USING btree (k)" \
        -c "SELECT gibench.note_ms('btree build ms (8 workers)', current_setting('gibench.t0')::timestamptz)" >/dev/null &
    pids+=($!)
    pgc_psql -c "SELECT set_config('gibench.t0', clock_timestamp()::text, false)" \
        -c "CREATE INDEX t_gi_k ON t_gi USING gpuidx (k)" \
        -c "SELECT gibench.note_ms('gpuidx build ms', current_setting('gibench.t0')::timestamptz)" >/dev/null &
    pids+=($!)
    for j in "${pids[@]}"; do wait "$j"; done
    pids=()
    pgc_psql -c "VACUUM ANALYZE t_bt" >/dev/null &
    pids+=($!)
    pgc_psql -c "VACUUM ANALYZE t_gi" >/dev/null &
    pids+=($!)
    for j in "${pids[@]}"; do wait "$j"; done
    pgc_psql -c "CHECKPOINT" >/dev/null
    for j in "$@"; do
        pgc_psql -c "SELECT gibench.make_probes($j, $rows)" >/dev/null
    done
    gib_load_report
}

# Fill tables "${@:4}" from "$2" sessions each, all at once: rows 1.."$1"
# in "$2" slices, the statement "$3" a printf format of the table, the
# slice's first and last row (say "SELECT x.load_slice('%s', 1000, %s, %s)").
gib_slices() {
    local rows="$1" jobs="$2" fmt="$3" j lo hi tbl pids=()
    shift 3
    for ((j = 0; j < jobs; j++)); do
        lo=$((rows * j / jobs + 1))
        hi=$((rows * (j + 1) / jobs))
        for tbl in "$@"; do
            # shellcheck disable=SC2059  # the format is the caller's
            pgc_psql -c "$(printf "$fmt" "$tbl" "$lo" "$hi")" >/dev/null &
            pids+=($!)
        done
    done
    for j in "${pids[@]}"; do wait "$j"; done
}

# Print the engines to measure: $BENCH_ENGINES, else cpu plus gpu when it
# answers (a lookup through the gpuidx index "$1", default t_gi_k).
gib_engines() {
    local index="${1:-t_gi_k}"
    if [[ -n "${BENCH_ENGINES:-}" ]]; then
        printf '%s\n' "$BENCH_ENGINES"
        return 0
    fi
    local out
    if out="$(pgc_psql -At -c "SET gpuidx.engine = gpu" \
        -c "SELECT count(*) FROM gpuidx_lookup('$index'::regclass, ARRAY[0]::bigint[])" 2>&1)"; then
        printf 'cpu gpu\n'
    else
        gi_log "gpu engine not measured: $(printf '%s' "$out" | head -n 1)"
        printf 'cpu\n'
    fi
}

# Measure workloads "$1" x batches "$2" x engines "$3" (space-separated), reps "$4".
gib_measure() {
    local workloads="$1" batches="$2" engines="$3" reps="$4" w n e base script
    local -A done_bt=()
    script="$(mktemp)"
    {
        echo '\set ON_ERROR_STOP 1'
        for n in $batches; do
            for w in $workloads; do
                base="$w"
                case "$w" in any | anyscan | lookup) base=point ;; esac
                echo "\\echo '  $w, batch $n'"
                # one btree baseline per (base workload, batch)
                if [[ -z "${done_bt[$base/$n]:-}" ]]; then
                    done_bt[$base/$n]=1
                    echo "SELECT gibench.measure('$base', $n, 'btree', '-', $reps) \\g /dev/null"
                fi
                for e in $engines; do
                    echo "SELECT gibench.measure('$w', $n, 'gpuidx', '$e', $reps) \\g /dev/null"
                done
            done
        done
    } >"$script"
    chmod 644 "$script"
    pgc_psql -f "$script"
    rm -f "$script"
}

# Print the results table: workload, batch, btree ms, ms and ratio per engine, rows.
gib_table() {
    local engines="$1"
    pgc_psql -At -F'|' -c "
        SELECT g.workload, g.batch, round(b.ms::numeric, 2), g.engine, round(g.ms::numeric, 2),
               b.nrows, g.nrows, coalesce(g.plan, '?')
          FROM gibench.results g
          JOIN gibench.results b ON b.method = 'btree' AND b.batch = g.batch
               AND b.workload = CASE WHEN g.workload IN ('any', 'anyscan', 'lookup') THEN 'point' ELSE g.workload END
         WHERE g.method = 'gpuidx' AND g.workload NOT LIKE 'or%'
         ORDER BY array_position(ARRAY['any','anyscan','lookup','pred','rcount'], g.workload), g.batch, g.engine" |
    awk -F'|' -v engines="$engines" '
        BEGIN {
            ne = split(engines, E, " ")
            name["any"] = "k = ANY(array)"; name["anyscan"] = "= ANY forced"; name["lookup"] = "gpuidx_lookup"
            name["pred"] = "predecessor"; name["rcount"] = "range_count"
            base["any"] = "= ANY"; base["anyscan"] = "= ANY"; base["lookup"] = "= ANY"
            base["pred"] = "LATERAL"; base["rcount"] = "LATERAL count"
            hdr = sprintf("%-15s %8s %-14s %11s", "workload", "batch", "btree form", "btree ms")
            for (i = 1; i <= ne; i++) hdr = hdr sprintf(" %11s %9s", E[i] " ms", "x " E[i])
            hdr = hdr sprintf(" %11s %11s  %s", "rows btree", "rows gpuidx", "gpuidx plan")
            print hdr
        }
        {
            key = $1 SUBSEP $2
            if (!(key in seen)) { seen[key] = 1; order[++nk] = key; W[key] = $1; B[key] = $2; BT[key] = $3; RB[key] = $6 }
            MS[key, $4] = $5; RG[key] = $7
            if (!(key in PL)) PL[key] = $8
            else if (index(PL[key], $8) == 0) PL[key] = PL[key] " / " $8
        }
        END {
            for (k = 1; k <= nk; k++) {
                key = order[k]
                line = sprintf("%-15s %8d %-14s %11.2f", name[W[key]], B[key], base[W[key]], BT[key])
                for (i = 1; i <= ne; i++) {
                    if ((key, E[i]) in MS) {
                        ms = MS[key, E[i]]
                        line = line sprintf(" %11.2f %8.1fx", ms, (ms > 0 ? BT[key] / ms : 0))
                    } else line = line sprintf(" %11s %9s", "-", "-")
                }
                line = line sprintf(" %11d %11d  %s", RB[key], RG[key], PL[key])
                print line
            }
        }'
}

# Print the plan of each workload through gpuidx and btree at batch "$2" (workloads "$1").
gib_plans() {
    local workloads="$1" n="$2" w m
    for w in $workloads; do
        for m in btree gpuidx; do
            [[ "$w/$m" == lookup/btree ]] && continue
            echo "  $w via $m:"
            # sed, not head: head would exit after four lines and psql, still
            # writing a long plan, would die of SIGPIPE ("Broken pipe").
            pgc_psql -At -c "SELECT gibench.plan('$w', '$m', $n)" | sed -n '1,4p' | cut -c1-110 | sed "s/^/    /" || true
        done
    done
}

# Print the multi-range OR table: selectivity, btree ms, then per engine the
# planner's gpuidx plan and GpuIndexScan forced (ms and ratio), rows, plans.
gib_or_table() {
    local engines="$1"
    pgc_psql -At -F'|' -c "
        SELECT g.workload, round(b.ms::numeric, 2), g.method || ' ' || g.engine, round(g.ms::numeric, 2),
               b.nrows, g.nrows, coalesce(g.plan, '?')
          FROM gibench.results g
          JOIN gibench.results b ON b.method = 'btree' AND b.workload = g.workload
         WHERE g.method IN ('gpuidx', 'gpuscan') AND g.workload LIKE 'or%'
         ORDER BY (regexp_replace(g.workload, '^or([0-9.]+)%.*', '\\1'))::numeric, g.engine, g.method" |
    awk -F'|' -v engines="$engines" '
        BEGIN {
            ne = split(engines, E, " ")
            hdr = sprintf("%-9s %10s", "selected", "btree ms")
            for (i = 1; i <= ne; i++)
                hdr = hdr sprintf(" %10s %6s %12s %6s", E[i] " ms", "x", E[i] " scan ms", "x")
            print hdr sprintf(" %10s %10s  %s", "rows btree", "rows gi", "gpuidx plan (planner)")
        }
        {
            key = $1
            if (!(key in seen)) { seen[key] = 1; order[++nk] = key; BT[key] = $2; RB[key] = $5 }
            MS[key, $3] = $4; RG[key] = $6
            if ($3 ~ /^gpuidx /) {
                if (!(key in PL)) PL[key] = $7
                else if (index(PL[key], $7) == 0) PL[key] = PL[key] " / " $7
            }
        }
        END {
            for (k = 1; k <= nk; k++) {
                key = order[k]; w = key; sub(/^or/, "", w)
                line = sprintf("%-9s %10.2f", w, BT[key])
                for (i = 1; i <= ne; i++) {
                    split("gpuidx gpuscan", M, " ")
                    for (j = 1; j <= 2; j++) {
                        mk = M[j] " " E[i]
                        wd = (j == 1 ? 10 : 12)
                        if ((key, mk) in MS) {
                            ms = MS[key, mk]
                            line = line sprintf(" %*.2f %5.1fx", wd, ms, (ms > 0 ? BT[key] / ms : 0))
                        } else line = line sprintf(" %*s %6s", wd, "-", "-")
                    }
                }
                print line sprintf(" %10d %10d  %s", RB[key], RG[key], PL[key])
            }
        }'
}
