# tools/lib/common.sh - shared helpers for tools/test, tools/demo, bench/sql/run
# and tools/gpu-check.  Source it from bash with `set -euo pipefail` in effect.
#
# Environment read here:
#   PG_CONFIG       pg_config to build against (default: PostgreSQL 15's)
#   GPUIDX_NO_APT   1 = never call apt-get (the GPU machine has no registry)
#   GPUIDX_PGUSER   unprivileged user that runs the server (default: postgres)

# Repository root (the parent of tools/).
GI_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
export GI_ROOT

# Print a stage banner.
gi_stage() {
    printf '\n=== %s ===\n' "$*"
}

# Print a message on stderr.
gi_log() {
    printf '%s\n' "$*" >&2
}

# Print a message and exit non-zero.
gi_die() {
    printf 'error: %s\n' "$*" >&2
    exit 1
}

# True when running as root.
gi_is_root() {
    [[ "$(id -u)" -eq 0 ]]
}

# Install the Debian packages named in "$@" that are missing (apt-get, root only).
gi_apt_install() {
    local missing=() p
    for p in "$@"; do
        if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
            missing+=("$p")
        fi
    done
    if [[ ${#missing[@]} -eq 0 ]]; then
        echo "packages: all present ($*)"
        return 0
    fi
    if [[ "${GPUIDX_NO_APT:-0}" == 1 ]]; then
        gi_log "packages missing but GPUIDX_NO_APT=1: ${missing[*]}"
        return 0
    fi
    gi_is_root || gi_die "packages missing (${missing[*]}); run as root or install them"
    command -v apt-get >/dev/null || gi_die "no apt-get; install by hand: ${missing[*]}"
    echo "packages: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q --no-install-recommends "${missing[@]}" </dev/null
}

# Install everything build, tests, demo and benchmarks need (unless GPUIDX_NO_APT=1).
gi_install_deps() {
    if [[ "${GPUIDX_NO_APT:-0}" == 1 ]]; then
        echo "packages: skipped (GPUIDX_NO_APT=1)"
        return 0
    fi
    if ! command -v dpkg-query >/dev/null; then
        echo "packages: not a Debian system; assuming PostgreSQL 15 and tools are installed"
        return 0
    fi
    gi_apt_install postgresql-15 postgresql-server-dev-15 build-essential \
        libipc-run-perl perl
}

# Find pg_config and export PG_CONFIG, PG_BINDIR, PG_PGXS_DIR; put the bindir first on PATH.
gi_find_pg() {
    if [[ -z "${PG_CONFIG:-}" ]]; then
        if [[ -x /usr/lib/postgresql/15/bin/pg_config ]]; then
            PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config
        elif command -v pg_config >/dev/null; then
            PG_CONFIG="$(command -v pg_config)"
        else
            gi_die "pg_config not found (install postgresql-server-dev-15 or set PG_CONFIG)"
        fi
    fi
    export PG_CONFIG
    PG_BINDIR="$("$PG_CONFIG" --bindir)"
    PG_PGXS_DIR="$(dirname "$(dirname "$(dirname "$("$PG_CONFIG" --pgxs)")")")"
    export PG_BINDIR PG_PGXS_DIR
    export PATH="$PG_BINDIR:$PATH"
    local ver
    ver="$("$PG_CONFIG" --version)"
    case "$ver" in
        "PostgreSQL 15"*) ;;
        *) gi_log "warning: expected PostgreSQL 15, found $ver" ;;
    esac
}

# Set GI_PGUSER (the user that runs the server); create it if root and missing.
gi_setup_user() {
    if ! gi_is_root; then
        GI_PGUSER="$(id -un)"
        export GI_PGUSER
        return 0
    fi
    GI_PGUSER="${GPUIDX_PGUSER:-postgres}"
    export GI_PGUSER
    if ! id "$GI_PGUSER" >/dev/null 2>&1; then
        echo "creating user $GI_PGUSER"
        useradd -m -s /bin/bash "$GI_PGUSER"
    fi
}

# Run "$@" as the unprivileged user (keeps the environment; cwd must be readable by it).
gi_as_user() {
    if gi_is_root; then
        local home
        home="$(getent passwd "$GI_PGUSER" | cut -d: -f6)"
        runuser -u "$GI_PGUSER" -m -- env HOME="${home:-/tmp}" USER="$GI_PGUSER" "$@"
    else
        "$@"
    fi
}

# Build (make) and install (make install) the extension; output to "$1" (a log file).
gi_build_install() {
    local log="$1" jobs
    jobs="$(nproc 2>/dev/null || echo 2)"
    (
        cd "$GI_ROOT"
        make -j"$jobs" PG_CONFIG="$PG_CONFIG" && make install PG_CONFIG="$PG_CONFIG"
    ) >"$log" 2>&1
}

# Copy the source tree (without .git and .gpu) into dir "$1", owned by the server user.
gi_copy_tree() {
    local dest="$1"
    mkdir -p "$dest"
    tar -C "$GI_ROOT" --exclude=./.git --exclude=./.gpu --exclude=./tmp_check \
        --exclude=./results -cf - . | tar -C "$dest" -xf -
    if gi_is_root; then
        chown -R "$GI_PGUSER" "$dest"
    fi
}

# Make a private temp dir owned by the server user; print its path.
gi_mktemp() {
    local d
    d="$(mktemp -d "${TMPDIR:-/tmp}/gpuidx.XXXXXX")"
    chmod 700 "$d"
    if gi_is_root; then
        chown "$GI_PGUSER" "$d"
    fi
    printf '%s\n' "$d"
}

# True when an NVIDIA GPU is visible (nvidia-smi lists one).
gi_have_gpu() {
    command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU'
}
