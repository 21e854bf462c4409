#!/usr/bin/env bash
# Make mailroom's local runtime available: redis-server, Postfix, Chromium and PostgreSQL (apt),
# Dapr's daprd, placement and scheduler, and FerretDB (both built from the Go
# module proxy).
#
#   scripts/runtime/ensure.sh            # idempotent; silent when all is cached
#   scripts/runtime/ensure.sh --force    # rebuild Dapr and FerretDB
#
# Built binaries are cached outside the repo, under
# ${MAILROOM_CACHE_DIR:-~/.cache/mailroom}/dapr-<version>/ and
# .../ferretdb-<version>/ (see scripts/runtime/paths.sh for the exact paths).
# A cache entry is reused while the wrapper module's go.mod/go.sum (and
# main.go) and the build flags are unchanged; otherwise it is rebuilt.
#
# Environment:
#   MAILROOM_CACHE_DIR    cache root (default ${XDG_CACHE_HOME:-~/.cache}/mailroom)
#   MAILROOM_BUILD_JOBS   go build -p value (default 1, to leave a core free)
#
# Needs: Go >= the go directive of tools/dapr/go.mod, apt-get (root or
# passwordless sudo) if redis-server or PostgreSQL is missing, network access to the
# Go module proxy and Debian's package mirror on first run.
set -euo pipefail

prog="scripts/runtime/ensure.sh"
die() {
	echo "$prog: error: $*" >&2
	exit 1
}
note() { echo "$prog: $*" >&2; }

force=0
for arg in "$@"; do
	case "$arg" in
	--force) force=1 ;;
	-h | --help)
		sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'
		exit 0
		;;
	*) die "unknown argument: $arg (try --help)" ;;
	esac
done

# shellcheck source=scripts/runtime/paths.sh
source "$(dirname "${BASH_SOURCE[0]}")/paths.sh"

[[ -n "$MAILROOM_DAPR_VERSION" ]] || die "cannot read the github.com/dapr/dapr version from tools/dapr/go.mod"
[[ -n "$MAILROOM_FERRETDB_VERSION" ]] || die "cannot read the github.com/FerretDB/FerretDB version from tools/ferretdb/go.mod"

jobs="${MAILROOM_BUILD_JOBS:-1}"
[[ "$jobs" =~ ^[1-9][0-9]*$ ]] || die "MAILROOM_BUILD_JOBS must be a positive integer, got '$jobs'"

mkdir -p "$MAILROOM_CACHE_DIR" || die "cannot create cache dir $MAILROOM_CACHE_DIR"

# Serialise concurrent runs (e.g. parallel test workers) so they do not build twice.
if command -v flock >/dev/null 2>&1; then
	exec 9>"$MAILROOM_CACHE_DIR/.ensure.lock"
	flock 9
fi

# ------------------------------------------------------ Debian packages ----
# apt_install PACKAGE WHAT: installs a Debian package (WHAT names it in errors).
apt_install() {
	local package="$1" what="$2"
	command -v apt-get >/dev/null 2>&1 || die "$what is missing and apt-get is not available; install $package by hand"
	local sudo=()
	if [[ "$(id -u)" != 0 ]]; then
		command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null ||
			die "$what is missing; run as root or with passwordless sudo so apt-get can install $package"
		sudo=(sudo -n)
	fi
	note "installing $package with apt-get"
	local log="$MAILROOM_CACHE_DIR/apt-$package.log"
	if ! { "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
		"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$package"; } >"$log" 2>&1; then
		tail -n 20 "$log" >&2
		die "apt-get install $package failed (full log: $log)"
	fi
}

ensure_redis() {
	command -v redis-server >/dev/null 2>&1 && return 0
	apt_install redis-server "redis-server (>= 6)"
	command -v redis-server >/dev/null 2>&1 || die "redis-server still not on PATH after apt-get install (is /usr/bin on PATH?)"
}

# Chromium for the dashboard's browser tests (playwright-core drives Debian's build: Playwright's
# own browser download cannot work here).
ensure_chromium() {
	command -v chromium >/dev/null 2>&1 && return 0
	apt_install chromium "chromium (the dashboard's browser tests)"
	command -v chromium >/dev/null 2>&1 || die "chromium still not on PATH after apt-get install (is /usr/bin on PATH?)"
}

# Postfix for the relay in the mail-loop tests (test/harness/postfix.ts starts private instances).
# Preseeded "No configuration": no /etc/postfix/main.cf, so no system Postfix starts or takes port 25.
ensure_postfix() {
	[[ -x /usr/sbin/postfix ]] && return 0
	local sudo=()
	[[ "$(id -u)" == 0 ]] || sudo=(sudo -n)
	echo "postfix postfix/main_mailer_type select No configuration" | "${sudo[@]}" debconf-set-selections 2>/dev/null || true
	apt_install postfix "Postfix (the tests' relay)"
	[[ -x /usr/sbin/postfix ]] || die "no /usr/sbin/postfix after apt-get install postfix"
}

# PostgreSQL under FerretDB in the distributed stack (Debian's server, in /usr/lib/postgresql/<v>/bin).
ensure_postgresql() {
	[[ -n "$(mailroom_postgres_bin)" ]] && return 0
	apt_install postgresql "PostgreSQL (>= 13)"
	[[ -n "$(mailroom_postgres_bin)" ]] || die "no /usr/lib/postgresql/<version>/bin/postgres after apt-get install postgresql"
}

# ------------------------------------------------------------ go builds ----
ensure_go() {
	if ! command -v go >/dev/null 2>&1 && [[ -x /usr/local/go/bin/go ]]; then
		PATH="/usr/local/go/bin:$PATH"
	fi
	command -v go >/dev/null 2>&1 || die "go is not on PATH; Go >= $(awk '$1=="go"{print $2; exit}' "$MAILROOM_REPO_ROOT/tools/dapr/go.mod") is needed to build Dapr and FerretDB"
}

# stamp FLAGS FILE...: a digest of the inputs that decide what a build produces.
stamp() {
	local flags="$1"
	shift
	{
		echo "$flags"
		cat "$@"
	} | sha256sum | cut -d' ' -f1
}

# up_to_date DIR STAMP BIN...: true if DIR holds every BIN and was built from STAMP.
up_to_date() {
	local dir="$1" want="$2"
	shift 2
	[[ "$force" == 0 ]] || return 1
	[[ -f "$dir/.stamp" && "$(cat "$dir/.stamp")" == "$want" ]] || return 1
	local b
	for b in "$@"; do [[ -x "$dir/$b" ]] || return 1; done
}

# build_into NAME DIR STAMP MODDIR HINT GO_BUILD_COMMANDS...
# Runs the build in a temp dir under the cache ($OUT), then swaps it into DIR.
build_into() {
	local name="$1" dir="$2" want="$3" moddir="$4" hint="$5"
	shift 5
	local out log start
	out="$(mktemp -d "$MAILROOM_CACHE_DIR/.build-$name.XXXXXX")"
	log="$out/build.log"
	start=$SECONDS
	note "building $name into $dir (go build -p $jobs; $hint)"
	if ! (cd "$moddir" && OUT="$out" "$@") >"$log" 2>&1; then
		cp "$log" "$MAILROOM_CACHE_DIR/build-$name.failed.log" 2>/dev/null || true
		tail -n 40 "$log" >&2
		rm -rf "$out"
		die "building $name failed (full log: $MAILROOM_CACHE_DIR/build-$name.failed.log)"
	fi
	rm -f "$log"
	chmod 755 "$out"
	echo "$want" >"$out/.stamp"
	rm -rf "$dir"
	mv "$out" "$dir"
	note "built $name in $((SECONDS - start))s"
}

dapr_ldflags="-s -w -X github.com/dapr/dapr/pkg/buildinfo.version=${MAILROOM_DAPR_VERSION#v}"
go_common=(-p "$jobs" -trimpath -buildvcs=false)

build_dapr_cmds() {
	go build "${go_common[@]}" -tags stablecomponents -ldflags "$dapr_ldflags" \
		-o "$OUT/daprd" github.com/dapr/dapr/cmd/daprd &&
		go build "${go_common[@]}" -ldflags "$dapr_ldflags" \
			-o "$OUT/" github.com/dapr/dapr/cmd/placement github.com/dapr/dapr/cmd/scheduler &&
		"$OUT/daprd" --version
}

build_ferretdb_cmds() {
	go build "${go_common[@]}" -ldflags "-s -w" -o "$OUT/ferretdb" .
}

ensure_dapr() {
	local moddir="$MAILROOM_REPO_ROOT/tools/dapr" want
	want="$(stamp "go build ${go_common[*]:2} -tags stablecomponents -ldflags $dapr_ldflags" \
		"$moddir/go.mod" "$moddir/go.sum")"
	up_to_date "$MAILROOM_DAPR_DIR" "$want" daprd placement scheduler && return 0
	ensure_go
	build_into "dapr-$MAILROOM_DAPR_VERSION" "$MAILROOM_DAPR_DIR" "$want" "$moddir" \
		"a cold build takes ~10 min on 2 cores" build_dapr_cmds
}

ensure_ferretdb() {
	local moddir="$MAILROOM_REPO_ROOT/tools/ferretdb" want
	want="$(stamp "go build ${go_common[*]:2} -ldflags -s -w" \
		"$moddir/go.mod" "$moddir/go.sum" "$moddir/main.go")"
	up_to_date "$MAILROOM_FERRETDB_DIR" "$want" ferretdb && return 0
	ensure_go
	build_into "ferretdb-$MAILROOM_FERRETDB_VERSION" "$MAILROOM_FERRETDB_DIR" "$want" "$moddir" \
		"a cold build takes ~3 min on 2 cores" build_ferretdb_cmds
}

ensure_redis
ensure_chromium
ensure_postfix
ensure_postgresql
ensure_ferretdb
ensure_dapr
