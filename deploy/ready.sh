#!/usr/bin/env bash
# The readiness gate: every Deployment of Chaos Mesh, the observability stack and the apps is Available,
# then Prometheus returns data for every series family the rule pack reads (deploy/readiness.py).
# Environment: APPS, PYTHON, PROMETHEUS_URL (default http://127.0.0.1:9090), READY_TIMEOUT (s, default 900).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"
require_tools kubectl

APPS=${APPS:-online-boutique astronomy-shop train-ticket}
PYTHON=${PYTHON:-$root/.venv/bin/python}
[ -x "$PYTHON" ] || PYTHON=python3
PROMETHEUS_URL=${PROMETHEUS_URL:-http://127.0.0.1:9090}
READY_TIMEOUT=${READY_TIMEOUT:-900}
read -r -a apps <<<"$APPS"

namespaces=(chaos-mesh observability)
for app in "${apps[@]}"; do namespaces+=("$("$PYTHON" "$here/workloads.py" namespace "$app")"); done
for namespace in "${namespaces[@]}"; do
  log "waiting for the Deployments of $namespace to be Available"
  kubectl -n "$namespace" wait --for=condition=Available deployment --all --timeout="${READY_TIMEOUT}s"
done
log "waiting for Prometheus at $PROMETHEUS_URL to return every series family the rule pack reads"
"$PYTHON" "$here/readiness.py" --prometheus-url "$PROMETHEUS_URL" --apps "${apps[@]}" --timeout "$READY_TIMEOUT"
