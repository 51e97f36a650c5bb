#!/usr/bin/env bash
# kubeadm path, optional (as root on each worker): when the two zones share one network, delays every
# packet this host sends to the other zone's nodes by $ZONE_DELAY, as deploy/kind/netem.sh does in Kind.
# Arguments: INTERFACE OTHER_ZONE_NODE_ADDRESS... Undo: tc qdisc del dev INTERFACE root
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib.sh
. "$here/../lib.sh"
# shellcheck source=../versions.env
. "$here/../versions.env"
require_tools tc
if [ $# -lt 2 ]; then
  echo "usage: netem.sh INTERFACE OTHER_ZONE_NODE_ADDRESS..." >&2
  exit 2
fi
interface=$1
shift
tc qdisc del dev "$interface" root >/dev/null 2>&1 || true
tc qdisc add dev "$interface" root handle 1: prio bands 4
tc qdisc add dev "$interface" parent 1:4 handle 40: netem delay "$ZONE_DELAY"
for address in "$@"; do
  tc filter add dev "$interface" parent 1: protocol ip prio 1 u32 match ip dst "$address/32" flowid 1:4
done
log "$interface: $ZONE_DELAY to $*"
