#!/usr/bin/env bash
# Rolls out an overlay in the required order: configuration, Secrets (dev) and the migration Job
# first; the Deployments only after `msgxctl migrate` and `msgxctl roles apply` completed
# (docs/deploy.md).
#
#   deploy/k8s/rollout.sh overlays/production                  # namespace from the overlay
#   deploy/k8s/rollout.sh overlays/production --migrate-only   # steps 1-3 only (restore)
#
# 1. delete the previous migration Job (its pod template is immutable; a new image needs a new Job)
# 2. apply the objects labelled msgx.io/rollout=pre: msgx-config, Secrets (dev), the Job's
#    ServiceAccount and NetworkPolicy, the Job
# 3. wait for the Job to complete (5 min); on failure show its logs and stop: nothing else changes
# 4. apply everything (the Deployments get the overlay's replica counts back): they roll one pod
#    at a time (maxUnavailable 0); a new pod starts as a standby and the leader hands over on
#    SIGTERM
# 5. wait for every Deployment of the overlay to finish its rollout
set -euo pipefail
overlay=${1:?usage: rollout.sh overlays/<name> [--migrate-only]}
migrate_only=false
case "${2:-}" in
  "") ;;
  --migrate-only) migrate_only=true ;;
  *) echo "usage: rollout.sh overlays/<name> [--migrate-only]" >&2; exit 2 ;;
esac
here=$(cd "$(dirname "$0")" && pwd)
manifests=$(kubectl kustomize "$here/$overlay")
ns=$(printf '%s\n' "$manifests" | awk '/^  namespace: /{print $2; exit}')
ns=${ns:-default}

kubectl -n "$ns" delete job msgx-migrate --ignore-not-found --wait=true
printf '%s\n' "$manifests" | kubectl apply -l msgx.io/rollout=pre -f -
if ! kubectl -n "$ns" wait --for=condition=complete --timeout=5m job/msgx-migrate; then
  kubectl -n "$ns" logs job/msgx-migrate --all-containers --tail=50 || true
  echo "rollout: migration failed; Deployments not changed" >&2
  exit 1
fi
if $migrate_only; then
  exit 0
fi
printf '%s\n' "$manifests" | kubectl apply -f -
for d in $(printf '%s\n' "$manifests" | awk '/^kind: /{k=$2} /^  name: /{if (k == "Deployment") print $2; k=""}'); do
  kubectl -n "$ns" rollout status "deploy/$d" --timeout=5m
done
