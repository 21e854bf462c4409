#!/usr/bin/env bash
# Where mailroom's local runtime binaries live (Dapr, FerretDB, Redis).
#
#   source scripts/runtime/paths.sh     # exports the variables below
#   bash scripts/runtime/paths.sh       # prints them as KEY=VALUE lines
#
# Versions are read from the pinning wrapper modules, the single source of
# truth: tools/dapr/go.mod (github.com/dapr/dapr) and tools/ferretdb/go.mod
# (github.com/FerretDB/FerretDB). Run scripts/runtime/ensure.sh first so the
# binaries exist; this file only computes paths and never builds anything.
#
# Exports:
#   MAILROOM_DAPR_VERSION, MAILROOM_FERRETDB_VERSION   e.g. v1.17.5, v1.24.2
#   MAILROOM_CACHE_DIR     default ${XDG_CACHE_HOME:-$HOME/.cache}/mailroom
#   MAILROOM_DAPR_DIR, MAILROOM_FERRETDB_DIR
#   MAILROOM_DAPRD, MAILROOM_PLACEMENT, MAILROOM_SCHEDULER,
#   MAILROOM_FERRETDB, MAILROOM_REDIS_SERVER          absolute paths
#   MAILROOM_POSTGRES_BIN  PostgreSQL's bin directory (initdb, postgres, pg_isready)

_mailroom_runtime_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
MAILROOM_REPO_ROOT="$(cd "$_mailroom_runtime_dir/../.." && pwd)"

# _mailroom_modver GO_MOD MODULE_PATH: print the version MODULE_PATH is required at.
_mailroom_modver() {
	awk -v mod="$2" '
		$1 == "require" && $2 == mod { print $3; exit }
		$1 == mod && $2 ~ /^v/      { print $2; exit }
	' "$1"
}

MAILROOM_DAPR_VERSION="$(_mailroom_modver "$MAILROOM_REPO_ROOT/tools/dapr/go.mod" github.com/dapr/dapr)"
MAILROOM_FERRETDB_VERSION="$(_mailroom_modver "$MAILROOM_REPO_ROOT/tools/ferretdb/go.mod" github.com/FerretDB/FerretDB)"

MAILROOM_CACHE_DIR="${MAILROOM_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/mailroom}"
MAILROOM_DAPR_DIR="$MAILROOM_CACHE_DIR/dapr-$MAILROOM_DAPR_VERSION"
MAILROOM_FERRETDB_DIR="$MAILROOM_CACHE_DIR/ferretdb-$MAILROOM_FERRETDB_VERSION"

MAILROOM_DAPRD="$MAILROOM_DAPR_DIR/daprd"
MAILROOM_PLACEMENT="$MAILROOM_DAPR_DIR/placement"
MAILROOM_SCHEDULER="$MAILROOM_DAPR_DIR/scheduler"
MAILROOM_FERRETDB="$MAILROOM_FERRETDB_DIR/ferretdb"
# Debian installs it in /usr/bin; fall back to that path if it is not (yet) on PATH.
MAILROOM_REDIS_SERVER="$(command -v redis-server 2>/dev/null || echo /usr/bin/redis-server)"

# mailroom_postgres_bin: the bin directory of the newest Debian PostgreSQL server installed
# (/usr/lib/postgresql/<major>/bin, holding initdb, postgres and pg_isready), or nothing.
mailroom_postgres_bin() {
	local dir
	dir="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)"
	[[ -n "$dir" && -x "$dir/postgres" && -x "$dir/initdb" ]] && echo "$dir"
	return 0
}
MAILROOM_POSTGRES_BIN="$(mailroom_postgres_bin)"

export MAILROOM_REPO_ROOT MAILROOM_DAPR_VERSION MAILROOM_FERRETDB_VERSION \
	MAILROOM_CACHE_DIR MAILROOM_DAPR_DIR MAILROOM_FERRETDB_DIR \
	MAILROOM_DAPRD MAILROOM_PLACEMENT MAILROOM_SCHEDULER \
	MAILROOM_FERRETDB MAILROOM_REDIS_SERVER MAILROOM_POSTGRES_BIN
unset _mailroom_runtime_dir
unset -f _mailroom_modver

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
	for _v in MAILROOM_DAPR_VERSION MAILROOM_FERRETDB_VERSION MAILROOM_CACHE_DIR \
		MAILROOM_DAPRD MAILROOM_PLACEMENT MAILROOM_SCHEDULER MAILROOM_FERRETDB MAILROOM_REDIS_SERVER \
		MAILROOM_POSTGRES_BIN; do
		printf '%s=%s\n' "$_v" "${!_v}"
	done
fi
