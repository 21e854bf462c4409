#!/usr/bin/env bash
# End-to-end smoke test of the local runtime built by ensure.sh: starts
# redis-server, Dapr placement + scheduler, FerretDB and a daprd sidecar (no
# app) on loopback, checks them through their real APIs, then stops them all.
#
#   scripts/runtime/ensure.sh && scripts/runtime/smoke.sh
#
# Environment:
#   MAILROOM_SMOKE_BASE_PORT  first of 15 consecutive loopback ports (default 21500;
#                             keep it below 32768, Linux's ephemeral port range
#                             32768-60999 is handed out to outgoing connections)
#   MAILROOM_SMOKE_KEEP=1     keep the temp dir (logs, component files) afterwards
#   MAILROOM_SMOKE_PAUSE=N    sleep N seconds with everything up before stopping
#
# The start commands below are the reference for test harnesses; they are
# also written down in docs/runtime.md.
set -euo pipefail

prog="scripts/runtime/smoke.sh"
# shellcheck source=scripts/runtime/paths.sh
source "$(dirname "${BASH_SOURCE[0]}")/paths.sh"

die() {
	echo "$prog: error: $*" >&2
	exit 1
}

for b in "$MAILROOM_DAPRD" "$MAILROOM_PLACEMENT" "$MAILROOM_SCHEDULER" "$MAILROOM_FERRETDB" "$MAILROOM_REDIS_SERVER"; do
	[[ -x "$b" ]] || die "$b is missing; run scripts/runtime/ensure.sh first"
done
command -v curl >/dev/null || die "curl is required"
command -v node >/dev/null || die "node is required (for the MongoDB ping through the mongodb driver)"

base="${MAILROOM_SMOKE_BASE_PORT:-21500}"
REDIS_PORT=$((base + 0))
PLACEMENT_PORT=$((base + 1)) PLACEMENT_HEALTHZ_PORT=$((base + 2)) PLACEMENT_METRICS_PORT=$((base + 3)) PLACEMENT_RAFT_PORT=$((base + 4))
SCHEDULER_PORT=$((base + 5)) SCHEDULER_HEALTHZ_PORT=$((base + 6)) SCHEDULER_METRICS_PORT=$((base + 7))
SCHEDULER_ETCD_CLIENT_PORT=$((base + 8)) SCHEDULER_ETCD_PEER_PORT=$((base + 9))
FERRETDB_PORT=$((base + 10))
DAPR_HTTP_PORT=$((base + 11)) DAPR_GRPC_PORT=$((base + 12)) DAPR_INTERNAL_GRPC_PORT=$((base + 13)) DAPR_METRICS_PORT=$((base + 14))

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
for p in $(seq "$base" $((base + 14))); do
	port_busy "$p" && die "port $p on 127.0.0.1 is already in use; set MAILROOM_SMOKE_BASE_PORT"
done

tmp="$(mktemp -d "${TMPDIR:-/tmp}/mailroom-smoke.XXXXXX")"
pids=()
cleanup() {
	local rc=$? p
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for _ in $(seq 50); do
		local alive=0
		for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
		[[ $alive == 0 ]] && break
		sleep 0.2
	done
	for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	if [[ $rc != 0 ]]; then
		echo "--- logs (last lines) from $tmp ---" >&2
		for f in "$tmp"/*.log; do
			[[ -f "$f" ]] || continue
			echo "== $(basename "$f")" >&2
			tail -n 15 "$f" >&2
		done
	fi
	if [[ "${MAILROOM_SMOKE_KEEP:-0}" == 1 ]]; then echo "$prog: kept $tmp" >&2; else rm -rf "$tmp"; fi
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

passed=0
ok() {
	passed=$((passed + 1))
	echo "ok - $*"
}

# wait_for DESC TIMEOUT_S CMD...: retry CMD until it succeeds.
wait_for() {
	local desc="$1" timeout="$2" i
	shift 2
	for ((i = 0; i < timeout * 5; i++)); do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.2
	done
	die "timed out after ${timeout}s waiting for $desc"
}
http_code() { curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$@"; }
http_is() {
	local want="$1"
	shift
	[[ "$(http_code "$@")" == "$want" ]]
}

# ---------------------------------------------------------------- redis ----
mkdir -p "$tmp/redis"
"$MAILROOM_REDIS_SERVER" --port "$REDIS_PORT" --bind 127.0.0.1 --daemonize no \
	--save '' --appendonly no --dir "$tmp/redis" >"$tmp/redis.log" 2>&1 &
pids+=($!)
wait_for "redis-server" 20 port_busy "$REDIS_PORT"
ok "redis-server listening on 127.0.0.1:$REDIS_PORT"

# ------------------------------------------------------------ placement ----
DAPR_HOST_IP=127.0.0.1 "$MAILROOM_PLACEMENT" \
	--listen-address 127.0.0.1 --port "$PLACEMENT_PORT" \
	--healthz-listen-address 127.0.0.1 --healthz-port "$PLACEMENT_HEALTHZ_PORT" \
	--metrics-listen-address 127.0.0.1 --metrics-port "$PLACEMENT_METRICS_PORT" \
	--initial-cluster "dapr-placement-0=127.0.0.1:$PLACEMENT_RAFT_PORT" \
	--log-level warn >"$tmp/placement.log" 2>&1 &
pids+=($!)

# ------------------------------------------------------------ scheduler ----
DAPR_HOST_IP=127.0.0.1 "$MAILROOM_SCHEDULER" \
	--listen-address 127.0.0.1 --port "$SCHEDULER_PORT" \
	--healthz-listen-address 127.0.0.1 --healthz-port "$SCHEDULER_HEALTHZ_PORT" \
	--metrics-listen-address 127.0.0.1 --metrics-port "$SCHEDULER_METRICS_PORT" \
	--etcd-data-dir "$tmp/scheduler-etcd" \
	--etcd-client-listen-address 127.0.0.1 --etcd-client-port "$SCHEDULER_ETCD_CLIENT_PORT" \
	--etcd-initial-cluster "dapr-scheduler-server-0=http://127.0.0.1:$SCHEDULER_ETCD_PEER_PORT" \
	--override-broadcast-host-port "127.0.0.1:$SCHEDULER_PORT" \
	--log-level warn >"$tmp/scheduler.log" 2>&1 &
pids+=($!)

# ------------------------------------------------------------- ferretdb ----
"$MAILROOM_FERRETDB" --listen "127.0.0.1:$FERRETDB_PORT" --state-dir "$tmp/ferretdb" \
	>"$tmp/ferretdb.log" 2>&1 &
pids+=($!)

wait_for "placement healthz" 60 http_is 200 "http://127.0.0.1:$PLACEMENT_HEALTHZ_PORT/healthz"
ok "placement healthy (grpc 127.0.0.1:$PLACEMENT_PORT)"
wait_for "scheduler healthz" 60 http_is 200 "http://127.0.0.1:$SCHEDULER_HEALTHZ_PORT/healthz"
ok "scheduler healthy (grpc 127.0.0.1:$SCHEDULER_PORT)"
wait_for "ferretdb" 30 grep -q '^ferretdb ready' "$tmp/ferretdb.log"

# ---------------------------------------------------------------- daprd ----
# The project's own components (components/*.yaml), pointed at this Redis.
mkdir -p "$tmp/components"
for f in "$(dirname "${BASH_SOURCE[0]}")"/../../components/*.yaml; do
	sed "s/localhost:6379/127.0.0.1:$REDIS_PORT/" "$f" >"$tmp/components/$(basename "$f")"
done

# Name resolution: standalone daprd defaults to mDNS, which binds UDP *:5353 and
# multicasts to 224.0.0.251 on every interface. The "kubernetes" resolver with a
# template maps app ids to loopback addresses instead (no network traffic); a
# harness lists each app id with its --dapr-internal-grpc-port.
cat >"$tmp/config.yaml" <<EOF
apiVersion: dapr.io/v1alpha1
kind: Configuration
metadata:
  name: mailroom-local
spec:
  nameResolution:
    component: kubernetes
    configuration:
      template: '{{if eq .ID "probe"}}127.0.0.1:$DAPR_INTERNAL_GRPC_PORT{{end}}'
EOF

DAPR_HOST_IP=127.0.0.1 "$MAILROOM_DAPRD" \
	--app-id probe --mode standalone --config "$tmp/config.yaml" \
	--dapr-listen-addresses 127.0.0.1 \
	--dapr-http-port "$DAPR_HTTP_PORT" --dapr-grpc-port "$DAPR_GRPC_PORT" \
	--dapr-internal-grpc-listen-address 127.0.0.1 --dapr-internal-grpc-port "$DAPR_INTERNAL_GRPC_PORT" \
	--metrics-listen-address 127.0.0.1 --metrics-port "$DAPR_METRICS_PORT" \
	--placement-host-address "127.0.0.1:$PLACEMENT_PORT" \
	--scheduler-host-address "127.0.0.1:$SCHEDULER_PORT" \
	--resources-path "$tmp/components" \
	--log-level info >"$tmp/daprd.log" 2>&1 &
pids+=($!)

dapr="http://127.0.0.1:$DAPR_HTTP_PORT"
wait_for "daprd /v1.0/healthz" 90 http_is 204 "$dapr/v1.0/healthz"
ok "daprd GET /v1.0/healthz -> 204"
wait_for "daprd /v1.0/healthz/outbound" 30 http_is 204 "$dapr/v1.0/healthz/outbound"
ok "daprd GET /v1.0/healthz/outbound -> 204"

# State round trip through the sidecar, then check the key really is in Redis.
# daprd may hand the JSON back re-encoded (key order changed), so compare parsed values.
json_eq() { node -e 'const a=JSON.parse(process.argv[1]),b=JSON.parse(process.argv[2]);process.exit(require("node:util").isDeepStrictEqual(a,b)?0:1)' "$1" "$2" 2>/dev/null; }
value="{\"probe\":\"smoke-$$\",\"n\":42}"
code="$(http_code -X POST -H 'Content-Type: application/json' \
	-d "[{\"key\":\"smoke\",\"value\":$value}]" "$dapr/v1.0/state/statestore")"
[[ "$code" == 204 ]] || die "state save returned HTTP $code"
got="$(curl -sf --max-time 5 "$dapr/v1.0/state/statestore/smoke")" || die "state get failed"
json_eq "$got" "$value" || die "state get returned '$got', want '$value'"
if command -v redis-cli >/dev/null; then
	inredis="$(redis-cli -p "$REDIS_PORT" hget 'probe||smoke' data)"
	json_eq "$inredis" "$value" || die "redis key 'probe||smoke' data is '$inredis', want '$value'"
	ok "state save/get round-trips via Redis (key 'probe||smoke')"
else
	ok "state save/get round-trips through daprd"
fi

code="$(http_code -X POST -H 'Content-Type: application/json' -d '{"hello":"smoke"}' "$dapr/v1.0/publish/pubsub/smoke-topic")"
[[ "$code" == 204 ]] || die "publish returned HTTP $code"
if command -v redis-cli >/dev/null; then
	n="$(redis-cli -p "$REDIS_PORT" xlen smoke-topic)"
	[[ "$n" -ge 1 ]] || die "redis stream smoke-topic has $n entries after publish"
fi
ok "publish to pubsub.redis -> 204 (stream smoke-topic in Redis)"

# The sidecar reports its placement (actors) and scheduler connections in /v1.0/metadata.
meta_ok() {
	local m
	m="$(curl -sf --max-time 5 "$dapr/v1.0/metadata")" || return 1
	grep -q '"placement":"placement: connected"' <<<"$m" &&
		grep -q "\"connected_addresses\":\[\"127.0.0.1:$SCHEDULER_PORT\"\]" <<<"$m"
}
wait_for "daprd metadata to show placement and scheduler connected" 30 meta_ok
ok "daprd metadata: actor runtime connected to placement, scheduler connected"

# Jobs API goes through the scheduler (fails if daprd is not connected to it).
# A job needs "data": GET of a data-less job fails in daprd 1.17 with HTTP 500
# "proto: google.protobuf.Value: none of the oneof fields is set".
job_ok() { http_is 204 -X POST -H 'Content-Type: application/json' -d '{"dueTime":"1h","data":{"smoke":true}}' "$dapr/v1.0-alpha1/jobs/smoke-job"; }
wait_for "job scheduling through the scheduler" 30 job_ok
http_is 200 "$dapr/v1.0-alpha1/jobs/smoke-job" || die "GET job returned HTTP $(http_code "$dapr/v1.0-alpha1/jobs/smoke-job")"
http_is 204 -X DELETE "$dapr/v1.0-alpha1/jobs/smoke-job" || die "DELETE job failed"
ok "jobs API schedule/get/delete through the scheduler"

# ---------------------------------------------------- ferretdb via driver ----
nodedir="$MAILROOM_CACHE_DIR/node-mongodb"
mongodb_pkg="mongodb@6.22.0"
if [[ ! -f "$nodedir/.installed-$mongodb_pkg" ]]; then
	mkdir -p "$nodedir"
	(cd "$nodedir" && npm install --silent --no-audit --no-fund --no-save --prefix "$nodedir" "$mongodb_pkg") >"$tmp/npm.log" 2>&1 ||
		die "npm install $mongodb_pkg failed (see $tmp/npm.log)"
	touch "$nodedir/.installed-$mongodb_pkg"
fi
NODE_PATH="$nodedir/node_modules" MONGO_URL="mongodb://127.0.0.1:$FERRETDB_PORT/" node -e '
const { MongoClient } = require("mongodb");
(async () => {
  const c = new MongoClient(process.env.MONGO_URL, { serverSelectionTimeoutMS: 10000 });
  await c.connect();
  const ping = await c.db("admin").command({ ping: 1 });
  if (ping.ok !== 1) throw new Error("ping: " + JSON.stringify(ping));
  const col = c.db("smoke").collection("docs");
  await col.insertOne({ _id: "a", n: 1 });
  const doc = await col.findOne({ _id: "a" });
  if (!doc || doc.n !== 1) throw new Error("findOne: " + JSON.stringify(doc));
  const bi = await c.db("admin").command({ buildInfo: 1 });
  console.log("MongoDB " + bi.version + " compatible, FerretDB " + bi.ferretdbVersion);
  await c.close();
})().catch((e) => { console.error(e); process.exit(1); });
' >"$tmp/mongo.out" 2>&1 || {
	cat "$tmp/mongo.out" >&2
	die "MongoDB ping/insert/find against FerretDB failed"
}
ok "FerretDB answers ping, insert and find via the mongodb driver: $(cat "$tmp/mongo.out")"

[[ -n "${MAILROOM_SMOKE_PAUSE:-}" ]] && sleep "$MAILROOM_SMOKE_PAUSE"
echo "smoke: $passed passed, 0 failed"
