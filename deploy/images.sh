#!/usr/bin/env bash
# Prints every container image the install step deploys, one per line: the apps, the observability
# stack, the datastore exporters, Chaos Mesh and the Java agent image (deploy/kind/up.sh preloads them).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=versions.env
. "$root/deploy/versions.env"
{
  grep -hE '^[[:space:]]*image:' "$root"/manifests/*/app.yaml "$root"/deploy/observability/*.yaml \
    "$root"/deploy/observability/exporters/*.yaml | awk '{print $2}' | tr -d "'\""
  for component in chaos-mesh chaos-daemon chaos-dashboard; do
    echo "ghcr.io/chaos-mesh/$component:v$CHAOS_MESH_CHART_VERSION"
  done
  echo "$OTEL_JAVA_AGENT_IMAGE"
} | sort -u
