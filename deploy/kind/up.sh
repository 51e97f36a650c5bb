#!/usr/bin/env bash
# make cluster: creates the marathon's Kind cluster (deploy/kind/cluster.yaml), installs Calico, delays
# traffic between the zones with netem and preloads the images the install step deploys.
# Environment: PRELOAD=0 skips the image preload (the nodes then pull what they need themselves).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=../lib.sh
. "$here/../lib.sh"
# shellcheck source=../versions.env
. "$here/../versions.env"

require_tools docker kind kubectl

if kind get clusters 2>/dev/null | grep -qx "$CLUSTER_NAME"; then
  log "Kind cluster $CLUSTER_NAME exists already; reusing it"
else
  log "creating Kind cluster $CLUSTER_NAME ($KIND_NODE_IMAGE, made for Kind $KIND_VERSION)"
  kind create cluster --config "$here/cluster.yaml" --name "$CLUSTER_NAME"
fi
kubectl config use-context "kind-$CLUSTER_NAME" >/dev/null

log "installing Calico $CALICO_VERSION"
kubectl apply -f "https://raw.githubusercontent.com/projectcalico/calico/$CALICO_VERSION/manifests/calico.yaml"
kubectl -n kube-system rollout status daemonset/calico-node --timeout=600s
kubectl wait --for=condition=Ready node --all --timeout=600s

"$here/netem.sh"

if [ "${PRELOAD:-1}" != 0 ]; then
  log "preloading images into the nodes"
  "$root/deploy/images.sh" | while read -r image; do
    if docker image inspect "$image" >/dev/null 2>&1 || docker pull --quiet "$image" >/dev/null; then
      kind load docker-image --name "$CLUSTER_NAME" "$image" >/dev/null || log "could not load $image; the nodes will pull it"
    else
      log "could not pull $image; the nodes will try themselves"
    fi
  done
fi
log "cluster $CLUSTER_NAME is up; next: make cluster-install"
