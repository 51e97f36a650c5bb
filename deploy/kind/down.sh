#!/usr/bin/env bash
# make cluster-down: deletes the marathon's Kind cluster and everything in it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib.sh
. "$here/../lib.sh"
# shellcheck source=../versions.env
. "$here/../versions.env"
require_tools docker kind
kind delete cluster --name "$CLUSTER_NAME"
