#!/usr/bin/env bash
# Delays every packet a Kind node sends to a node of the other zone by $ZONE_DELAY (deploy/versions.env),
# so a call across zones costs that much more each way. Rerunnable: it replaces what it set before.
#
# How: each node is a Docker container whose eth0 carries all traffic to the other nodes, including the
# pods' traffic (Calico encapsulates pod-to-pod traffic across nodes in IP-in-IP, whose outer destination
# is the other node's address). On each worker, eth0's root qdisc becomes a 4-band prio qdisc; bands 1-3
# keep the default priority map, band 4 holds a netem qdisc, and one u32 filter per node of the other zone
# sends the packets addressed to that node into band 4. The control plane has no zone and is not delayed.
# Check it: docker exec marathon-worker tc qdisc show dev eth0; docker exec marathon-worker tc filter show dev eth0
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib.sh
. "$here/../lib.sh"
# shellcheck source=../versions.env
. "$here/../versions.env"
require_tools docker kubectl

zone_of() { kubectl get node "$1" -o jsonpath='{.metadata.labels.topology\.kubernetes\.io/zone}'; }
address_of() { docker inspect -f '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}' "$1"; }

mapfile -t nodes < <(kubectl get nodes -l topology.kubernetes.io/zone -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}')
if [ ${#nodes[@]} -eq 0 ]; then
  echo "netem.sh: no node carries topology.kubernetes.io/zone; is this the marathon cluster?" >&2
  exit 1
fi
declare -A zone address
for node in "${nodes[@]}"; do
  zone[$node]=$(zone_of "$node")
  address[$node]=$(address_of "$node")
done
for node in "${nodes[@]}"; do
  docker exec "$node" tc qdisc del dev eth0 root >/dev/null 2>&1 || true
  docker exec "$node" tc qdisc add dev eth0 root handle 1: prio bands 4
  docker exec "$node" tc qdisc add dev eth0 parent 1:4 handle 40: netem delay "$ZONE_DELAY"
  for other in "${nodes[@]}"; do
    if [ "${zone[$other]}" != "${zone[$node]}" ]; then
      docker exec "$node" tc filter add dev eth0 parent 1: protocol ip prio 1 u32 \
        match ip dst "${address[$other]}/32" flowid 1:4
    fi
  done
  log "$node (${zone[$node]}): $ZONE_DELAY to the other zone"
done
