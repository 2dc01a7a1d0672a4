#!/usr/bin/env bash
# Runs one msgxctl command in the cluster, in a throw-away pod from the release image, with the
# shared msgx-config and a PostgreSQL role of pkg/roles: status and show run as the read-only
# role (Secret msgx-pg-reader, msgx_reader), every other command as the operators' role (Secret
# msgx-pg-admin, msgx_admin). The image has no shell, so every command is its own pod.
#
#   deploy/k8s/msgxctl.sh -n msgx status
#   deploy/k8s/msgxctl.sh -n msgx replay --class INFRA --dry-run
set -euo pipefail
ns=msgx
if [ "${1:-}" = "-n" ]; then ns=$2; shift 2; fi
[ $# -gt 0 ] || { echo "usage: msgxctl.sh [-n namespace] <command> [flags]" >&2; exit 2; }
image=$(kubectl -n "$ns" get deploy msgx-jobs -o jsonpath='{.spec.template.spec.containers[0].image}')
config=$(kubectl -n "$ns" get deploy msgx-jobs -o jsonpath='{.spec.template.spec.containers[0].envFrom[0].configMapRef.name}')
case "$1" in
  status|show) want=msgx-pg-reader ;;
  *) want=msgx-pg-admin ;;
esac
admin=$(kubectl -n "$ns" get secret -o name | sed -n "s|^secret/\\($want.*\\)|\\1|p" | head -1)
args=$(printf '%s\n' "$@" | python3 -c 'import json,sys; print(json.dumps(sys.stdin.read().splitlines()))')
overrides=$(cat <<JSON
{"apiVersion": "v1", "spec": {
  "automountServiceAccountToken": false,
  "securityContext": {"runAsNonRoot": true, "runAsUser": 65532, "runAsGroup": 65532, "seccompProfile": {"type": "RuntimeDefault"}},
  "containers": [{
    "name": "msgxctl", "image": "$image", "command": ["/usr/local/bin/msgxctl"], "args": $args,
    "stdin": true, "tty": false,
    "envFrom": [{"configMapRef": {"name": "$config"}}],
    "env": [{"name": "MSGX_PG_URL", "valueFrom": {"secretKeyRef": {"name": "${admin:-$want}", "key": "url"}}}],
    "securityContext": {"readOnlyRootFilesystem": true, "allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}}
  }]}}
JSON
)
exec kubectl -n "$ns" run "msgxctl-$(date +%s)" --rm -i --quiet --restart=Never \
  --labels=app.kubernetes.io/name=msgx,app.kubernetes.io/component=msgxctl \
  --image="$image" --overrides="$overrides"
