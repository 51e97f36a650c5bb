#!/usr/bin/env bash
# kubeadm path, step 2 (as root on each of the four workers): joins the cluster. Arguments: what
# control-plane.sh printed, i.e. ENDPOINT --token TOKEN --discovery-token-ca-cert-hash sha256:HASH.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib.sh
. "$here/../lib.sh"
require_tools kubeadm kubelet containerd
if [ $# -lt 5 ]; then
  echo "usage: worker.sh ENDPOINT --token TOKEN --discovery-token-ca-cert-hash sha256:HASH" >&2
  exit 2
fi
kubeadm join "$@" --cri-socket unix:///run/containerd/containerd.sock
