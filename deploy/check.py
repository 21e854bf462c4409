#!/usr/bin/env python3
"""Offline consistency checks of deploy/ (no cluster needed): `python3 deploy/check.py`.

Parses every manifest and checks what a schema validator cannot: that the manifests agree with
each other and with the code. Needs PyYAML. Prints one line per failure and `N passed, N failed`.
"""
import re
import sys
from pathlib import Path
from urllib.parse import urlparse

import yaml

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy"
NAMESPACE = "mailroom"

passed = 0
failed = 0


def check(ok, what):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print(f"FAIL: {what}")


def load_all(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


# Every file parses; the kustomization lists exactly the files of manifests/.
kustomization = load_all(DEPLOY / "kustomization.yaml")[0]
files = sorted(p.name for p in (DEPLOY / "manifests").glob("*.y*ml"))
listed = [r.removeprefix("manifests/") for r in kustomization["resources"]]
check(sorted(listed) == files, f"kustomization resources {listed} == manifests/ {files}")
check(listed == sorted(listed), "kustomization lists the manifests in apply order (file name order)")

objects = []
for name in files:
    for doc in load_all(DEPLOY / "manifests" / name):
        check(isinstance(doc, dict) and "apiVersion" in doc and "kind" in doc, f"{name}: a Kubernetes object")
        objects.append((name, doc))

by_kind = {}
for name, doc in objects:
    by_kind.setdefault(doc["kind"], {})[doc["metadata"]["name"]] = doc

# Namespace first, everything else in it.
check(files[0].startswith("00-") and objects[0][1]["kind"] == "Namespace", "the Namespace is applied first")
check(NAMESPACE in by_kind.get("Namespace", {}), f"Namespace {NAMESPACE}")
for name, doc in objects:
    if doc["kind"] != "Namespace":
        check(doc["metadata"].get("namespace") == NAMESPACE, f"{name}: {doc['kind']}/{doc['metadata']['name']} in namespace {NAMESPACE}")

# The image, settable through the kustomization's images:.
images = {i["name"] for i in kustomization.get("images", [])}
workloads = {**by_kind.get("Deployment", {}), **by_kind.get("StatefulSet", {})}
for wname, w in workloads.items():
    pod = w["spec"]["template"]
    labels = pod["metadata"].get("labels", {})
    selector = w["spec"]["selector"]["matchLabels"]
    check(all(labels.get(k) == v for k, v in selector.items()), f"{wname}: selector matches the pod labels")
    for c in pod["spec"]["containers"]:
        image = c["image"].split(":")[0]
        if wname.startswith("mailroom-"):
            check(image in images, f"{wname}: image {c['image']} is set by kustomization images:")
            check(c.get("imagePullPolicy") == "IfNotPresent", f"{wname}: imagePullPolicy IfNotPresent (a :latest image loaded into kind/minikube)")
    claims = {v["persistentVolumeClaim"]["claimName"] for v in pod["spec"].get("volumes", []) if "persistentVolumeClaim" in v}
    for claim in claims:
        check(claim in by_kind.get("PersistentVolumeClaim", {}), f"{wname}: PVC {claim} exists")
    for c in pod["spec"]["containers"]:
        mounts = {m["name"] for m in c.get("volumeMounts", [])}
        volumes = {v["name"] for v in pod["spec"].get("volumes", [])} | {t["metadata"]["name"] for t in w["spec"].get("volumeClaimTemplates", [])}
        check(mounts <= volumes, f"{wname}/{c['name']}: every volumeMount has a volume")


def container_env(container):
    """The container's environment as the pod sees it: envFrom in order, then env."""
    env = {}
    for source in container.get("envFrom", []):
        if "configMapRef" in source:
            ref = source["configMapRef"]["name"]
            check(ref in by_kind.get("ConfigMap", {}), f"ConfigMap {ref} exists")
            env.update(by_kind["ConfigMap"].get(ref, {}).get("data", {}))
        if "secretRef" in source:
            ref = source["secretRef"]["name"]
            check(ref in by_kind.get("Secret", {}), f"Secret {ref} exists")
            env.update(by_kind["Secret"].get(ref, {}).get("stringData", {}))
    for e in container.get("env", []):
        env[e["name"]] = e.get("value")
    return env


def container_port(container, port):
    """A probe's or Service's port (number or name) as a number, if the container declares it."""
    for p in container.get("ports", []):
        if port in (p["containerPort"], p.get("name")):
            return p["containerPort"]
    return None


# Environment names: those of the README's configuration table (plus what the code reads).
readme = (ROOT / "README.md").read_text()
table = readme.split("## Configuration", 1)[1].split("\n## ", 1)[0]
known_env = set(re.findall(r"`([A-Z][A-Z0-9_]+)`", table)) | {"NODE_ENV"}
for cname, cm in by_kind.get("ConfigMap", {}).items():
    for key in cm.get("data", {}):
        check(key in known_env, f"ConfigMap {cname}: {key} is a documented variable")
for sname, secret in by_kind.get("Secret", {}).items():
    for key in secret.get("stringData", {}):
        check(key in known_env, f"Secret {sname}: {key} is a documented variable")

# The two apps and their sidecars.
distributed_ts = (ROOT / "runtime" / "distributed.ts").read_text()
pubsub_name = re.search(r"PUBSUB_COMPONENT = '([^']+)'", distributed_ts).group(1)
apps = {"mailroom-api": "apps/api/main.ts", "mailroom-mailer": "apps/mailer/main.ts"}
configurations = by_kind.get("Configuration", {})
for app_id, entry in apps.items():
    d = by_kind.get("Deployment", {}).get(app_id)
    check(d is not None, f"Deployment {app_id}")
    if d is None:
        continue
    ann = d["spec"]["template"]["metadata"].get("annotations", {})
    check(ann.get("dapr.io/enabled") == "true", f"{app_id}: dapr.io/enabled")
    check(ann.get("dapr.io/app-id") == app_id, f"{app_id}: dapr.io/app-id {app_id}")
    check(ann.get("dapr.io/app-protocol") == "http", f"{app_id}: dapr.io/app-protocol http")
    check(ann.get("dapr.io/config") in configurations, f"{app_id}: dapr.io/config names a Configuration")
    check(all(isinstance(v, str) for v in ann.values()), f"{app_id}: annotation values are strings")
    (c,) = d["spec"]["template"]["spec"]["containers"]
    env = container_env(c)
    check(c.get("command", [])[-1:] == [entry], f"{app_id}: runs {entry}")
    check(env.get("MAILROOM_MODE") == "distributed", f"{app_id}: MAILROOM_MODE=distributed")
    port = int(env.get("PORT", 3000))
    app_port = env.get("APP_PORT", str(port + 1))
    check(ann.get("dapr.io/app-port") == app_port, f"{app_id}: dapr.io/app-port {ann.get('dapr.io/app-port')} == APP_PORT {app_port}")
    check(app_port not in ("3500", "50001", "50002", "9090"), f"{app_id}: APP_PORT {app_port} clear of the sidecar's ports")
    for key in ("REDIS_URL", "MONGODB_URL"):
        check(bool(env.get(key)), f"{app_id}: {key} set")
    if app_id == "mailroom-api":
        check(container_port(c, "http") == port, f"{app_id}: containerPort http == PORT {port}")
        for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
            get = c.get(probe, {}).get("httpGet", {})
            check(get.get("path") == "/health" and container_port(c, get.get("port")) == port, f"{app_id}: {probe} GET /health on PORT")
        svc = by_kind.get("Service", {}).get(app_id)
        check(svc is not None, f"Service {app_id}")
        if svc:
            (sp,) = svc["spec"]["ports"]
            check(sp["port"] == 80 and container_port(c, sp["targetPort"]) == port, f"Service {app_id}: 80 -> PORT {port}")
            labels = d["spec"]["template"]["metadata"]["labels"]
            check(all(labels.get(k) == v for k, v in svc["spec"]["selector"].items()), f"Service {app_id} selects the api pods")
    else:
        for probe in ("startupProbe", "livenessProbe"):
            get = c.get(probe, {}).get("httpGet", {})
            check(get.get("path") == "/health" and container_port(c, get.get("port")) == port, f"{app_id}: {probe} GET /health on PORT")

# Every Service selects some workload's pods and targets a declared port.
for sname, svc in by_kind.get("Service", {}).items():
    matches = [w for w in workloads.values() if all(w["spec"]["template"]["metadata"]["labels"].get(k) == v for k, v in svc["spec"]["selector"].items())]
    check(len(matches) == 1, f"Service {sname} selects one workload")
    for m in matches:
        c = m["spec"]["template"]["spec"]["containers"][0]
        for sp in svc["spec"]["ports"]:
            check(container_port(c, sp["targetPort"]) is not None, f"Service {sname}: targetPort {sp['targetPort']} is a container port")

# The Dapr resources equal components/ apart from the Redis address, which is the in-namespace one.
config = next(iter(by_kind.get("ConfigMap", {}).values()))["data"]
redis_url = urlparse(config["REDIS_URL"])
redis_service = by_kind.get("Service", {}).get(redis_url.hostname)
check(redis_service is not None and redis_service["spec"]["ports"][0]["port"] == redis_url.port, f"REDIS_URL {config['REDIS_URL']} is a Service")
mongo_url = urlparse(config["MONGODB_URL"])
mongo_service = by_kind.get("Service", {}).get(mongo_url.hostname)
check(mongo_service is not None and mongo_service["spec"]["ports"][0]["port"] == (mongo_url.port or 27017), f"MONGODB_URL {config['MONGODB_URL']} is a Service")
check(mongo_url.path.strip("/") != "", "MONGODB_URL names a database")

local = {}
for path in sorted((ROOT / "components").glob("*.yaml")):
    for doc in load_all(path):
        local[(doc["kind"], doc["metadata"]["name"])] = doc
deployed = {(doc["kind"], doc["metadata"]["name"]): doc for _, doc in objects if doc["apiVersion"].startswith("dapr.io/") and doc["kind"] != "Configuration"}
check(set(local) == set(deployed), f"the same Dapr resources as components/: {sorted(deployed)} == {sorted(local)}")
for key, doc in deployed.items():
    if key not in local:
        continue
    want = yaml.safe_load(yaml.safe_dump(local[key]["spec"]))
    got = yaml.safe_load(yaml.safe_dump(doc["spec"]))
    # Not a field of Dapr's Resiliency: daprd ignores it, the API server rejects it.
    for policy in want.get("policies", {}).get("retries", {}).values():
        policy.pop("initialInterval", None)
    for spec in (want, got):
        for m in spec.get("metadata", []):
            if m["name"] == "redisHost":
                m["value"] = "<redis>"
    check(want == got, f"{key[0]}/{key[1]}: spec equals components/ (Redis address aside)")
    for m in doc["spec"].get("metadata", []):
        if m["name"] == "redisHost":
            check(m["value"] == f"{redis_url.hostname}:{redis_url.port}", f"{key[1]}: redisHost {m['value']} is REDIS_URL's Redis")
components = by_kind.get("Component", {})
check(pubsub_name in components and components[pubsub_name]["spec"]["type"].startswith("pubsub."), f"pub/sub component named {pubsub_name!r} as in runtime/distributed.ts")
actor_stores = [n for n, c in components.items() if any(m["name"] == "actorStateStore" and m.get("value") == "true" for m in c["spec"].get("metadata", []))]
check(actor_stores == ["statestore"], f"one actor state store, statestore: {actor_stores}")

print(f"deploy: {passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
