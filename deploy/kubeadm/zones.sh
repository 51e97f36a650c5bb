#!/usr/bin/env bash
# kubeadm path, step 3 (with the admin kubeconfig): labels the workers with their zone, two per zone,
# and marks them workers. Arguments: NODE=ZONE for each worker, ZONE being zone-a or zone-b.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib.sh
. "$here/../lib.sh"
require_tools kubectl
if [ $# -ne 4 ]; then
  echo "usage: zones.sh NODE=zone-a NODE=zone-a NODE=zone-b NODE=zone-b" >&2
  exit 2
fi
for pair in "$@"; do
  node=${pair%%=*}
  zone=${pair#*=}
  case "$zone" in
    zone-a | zone-b) ;;
    *) echo "zones.sh: $pair: the zone must be zone-a or zone-b" >&2; exit 2 ;;
  esac
  kubectl label node "$node" "topology.kubernetes.io/zone=$zone" node-role.kubernetes.io/worker= --overwrite
done
kubectl wait --for=condition=Ready node --all --timeout=600s
