#!/usr/bin/env bash
# Runs one msgxctl command in the cluster, in a throw-away pod from the release image, with the
# shared msgx-config, the jobs Deployment's mounted files (the servers' CAs in production) and a
# PostgreSQL role of pkg/roles: status and show run as the read-only role (Secret
# msgx-pg-reader, msgx_reader), every other command as the operators' role (Secret msgx-pg-admin,
# msgx_admin). The kafka commands (kafka verify) read the topics as the read-only Kafka principal
# of Secret msgx-kafka-reader, with the dispatcher's SASL mechanism. The image has no shell, so
# every command is its own pod. make rehearse runs msgxctl with exactly this environment
# (deploy/k8s/rehearse).
#
#   deploy/k8s/msgxctl.sh -n msgx status
#   deploy/k8s/msgxctl.sh -n msgx replay --class INFRA --dry-run
set -euo pipefail
ns=msgx
if [ "${1:-}" = "-n" ]; then ns=$2; shift 2; fi
[ $# -gt 0 ] || { echo "usage: msgxctl.sh [-n namespace] <command> [flags]" >&2; exit 2; }
jobs=$(kubectl -n "$ns" get deploy msgx-jobs -o json)
mechanism=$(kubectl -n "$ns" get deploy msgx-dispatcher -o json |
  python3 -c 'import json,sys; c=json.load(sys.stdin)["spec"]["template"]["spec"]["containers"][0]; print(next((e.get("value","") for e in c.get("env",[]) if e["name"]=="MSGX_KAFKA_SASL_MECHANISM"), ""))')
# The command is the first argument that is not msgxctl's global flag --json.
cmd=$1
for a in "$@"; do case "$a" in --json|-json|--json=*|-json=*) ;; *) cmd=$a; break ;; esac; done
case "$cmd" in
  status|show) want=msgx-pg-reader ;;
  *) want=msgx-pg-admin ;;
esac
admin=$(kubectl -n "$ns" get secret -o name | sed -n "s|^secret/\\($want.*\\)|\\1|p" | head -1)
overrides=$(JOBS="$jobs" SECRET="${admin:-$want}" MECHANISM="$mechanism" COMMAND="$cmd" python3 - "$@" <<'PY'
import json, os, sys
args = sys.argv[1:]
pod = json.loads(os.environ["JOBS"])["spec"]["template"]["spec"]
jobs = pod["containers"][0]
env = [{"name": "MSGX_PG_URL", "valueFrom": {"secretKeyRef": {"name": os.environ["SECRET"], "key": "url"}}}]
if os.environ["COMMAND"] == "kafka" and os.environ["MECHANISM"]:
    env.append({"name": "MSGX_KAFKA_SASL_MECHANISM", "value": os.environ["MECHANISM"]})
    for var, key in (("MSGX_KAFKA_SASL_USER", "sasl-user"), ("MSGX_KAFKA_SASL_PASSWORD", "sasl-password")):
        env.append({"name": var, "valueFrom": {"secretKeyRef": {"name": "msgx-kafka-reader", "key": key}}})
print(json.dumps({"apiVersion": "v1", "spec": {
    "automountServiceAccountToken": False,
    "securityContext": {"runAsNonRoot": True, "runAsUser": 65532, "runAsGroup": 65532, "seccompProfile": {"type": "RuntimeDefault"}},
    "volumes": pod.get("volumes", []),
    "containers": [{
        "name": "msgxctl", "image": jobs["image"], "command": ["/usr/local/bin/msgxctl"], "args": args,
        "stdin": True, "tty": False,
        "envFrom": jobs["envFrom"], "env": env, "volumeMounts": jobs.get("volumeMounts", []),
        "securityContext": {"readOnlyRootFilesystem": True, "allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
    }]}}))
PY
)
image=$(JOBS="$jobs" python3 -c 'import json,os; print(json.loads(os.environ["JOBS"])["spec"]["template"]["spec"]["containers"][0]["image"])')
exec kubectl -n "$ns" run "msgxctl-$(date +%s)" --rm -i --quiet --restart=Never \
  --labels=app.kubernetes.io/name=msgx,app.kubernetes.io/component=msgxctl \
  --image="$image" --overrides="$overrides"
