#!/usr/bin/env bash
# make cluster-install: installs onto the current kubectl context (Kind or kubeadm) Chaos Mesh, the
# observability stack (Prometheus with the rule pack, kube-state-metrics, the OpenTelemetry Collector,
# Jaeger, the datastore exporters) and the apps of manifests/ with their load generators, then runs the
# readiness gate (deploy/ready.sh).
# Environment: APPS (default: all three), PYTHON (default: .venv/bin/python), PROMETHEUS_URL (for the
# gate; default http://127.0.0.1:9090, Kind's port mapping), SKIP_READY=1 to skip the gate.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"
# shellcheck source=versions.env
. "$here/versions.env"
require_tools kubectl helm

APPS=${APPS:-online-boutique astronomy-shop train-ticket}
PYTHON=${PYTHON:-$root/.venv/bin/python}
[ -x "$PYTHON" ] || PYTHON=python3
"$PYTHON" -c 'import orchestrator' 2>/dev/null || {
  echo "install.sh: $PYTHON cannot import the marathon package; run make setup first or set PYTHON" >&2
  exit 2
}
read -r -a apps <<<"$APPS"

# --- Chaos Mesh ------------------------------------------------------------------------------------------
log "Chaos Mesh (chart $CHAOS_MESH_CHART_VERSION)"
helm repo add chaos-mesh https://charts.chaos-mesh.org >/dev/null 2>&1 || true
helm repo update chaos-mesh >/dev/null
helm upgrade --install chaos-mesh chaos-mesh/chaos-mesh --namespace chaos-mesh --create-namespace \
  --version "$CHAOS_MESH_CHART_VERSION" --values "$here/chaos-mesh/values.yaml" --wait --timeout 10m

# --- Observability stack ---------------------------------------------------------------------------------
log "observability stack"
kubectl apply -f - <<<"apiVersion: v1
kind: Namespace
metadata:
  name: observability"
configmap() { # NAME FILE-ARGS...: create or update a ConfigMap of namespace observability
  local name=$1
  shift
  kubectl -n observability create configmap "$name" "$@" --dry-run=client -o yaml | kubectl apply -f -
}
configmap prometheus-config --from-file=prometheus.yml="$here/observability/prometheus.yaml"
rule_args=()
for file in "$root"/alert_rules/*.yaml; do rule_args+=("--from-file=$file"); done
configmap prometheus-rules "${rule_args[@]}"
configmap otel-collector-config --from-file=config.yaml="$here/observability/otel-collector.yaml"
# The kubelets Prometheus scrapes for cAdvisor's series: every node's InternalIP, port 10250.
targets=$(mktemp)
trap 'rm -f "$targets"' EXIT
kubectl get nodes -o jsonpath='{range .items[*]}{.status.addresses[?(@.type=="InternalIP")].address}{"\n"}{end}' |
  awk 'NF { printf "%s\"%s:10250\"", (n++ ? ", " : ""), $1 } END { print "" }' |
  { read -r list; printf '[{"targets": [%s]}]\n' "$list"; } >"$targets"
configmap prometheus-targets --from-file=nodes.json="$targets"
# A changed configuration or rule pack changes the pods' annotation, so they restart with it.
config_hash=$(cat "$here/observability/prometheus.yaml" "$here/observability/otel-collector.yaml" \
  "$root"/alert_rules/*.yaml | sha256sum | cut -c1-16)
sed "s|marathon.io/config-hash: \"\"|marathon.io/config-hash: \"$config_hash\"|" \
  "$here/observability/stack.yaml" | kubectl apply -f -

# --- Apps ------------------------------------------------------------------------------------------------
for app in "${apps[@]}"; do
  log "app $app"
  kubectl apply -f "$root/manifests/$app/app.yaml"
  namespace=$("$PYTHON" "$here/workloads.py" namespace "$app")
  if [ -f "$here/apps/$app.yaml" ]; then kubectl apply -f "$here/apps/$app.yaml"; fi
  if [ -f "$here/observability/exporters/$app.yaml" ]; then
    kubectl apply -f "$here/observability/exporters/$app.yaml"
  fi
  case "$app" in
    online-boutique)
      # The services trace only when asked to (ENABLE_TRACING), to the collector they are given.
      mapfile -t traced < <("$PYTHON" "$here/workloads.py" traced "$app")
      for deployment in "${traced[@]}"; do
        kubectl -n "$namespace" set env "deployment/$deployment" ENABLE_TRACING=1 \
          COLLECTOR_SERVICE_ADDR=otel-collector.observability.svc:4317 OTEL_SERVICE_NAME="$deployment"
      done
      ;;
    train-ticket)
      # The Java services carry no OpenTelemetry SDK: an init container copies the Java agent in.
      mapfile -t java < <("$PYTHON" "$here/workloads.py" java "$app")
      for deployment in "${java[@]}"; do
        container=$(kubectl -n "$namespace" get "deployment/$deployment" -o jsonpath='{.spec.template.spec.containers[0].name}')
        kubectl -n "$namespace" patch "deployment/$deployment" --type strategic --patch "$(cat <<PATCH
{"spec": {"template": {"spec": {
  "volumes": [{"name": "otel-agent", "emptyDir": {}}],
  "initContainers": [{"name": "otel-agent", "image": "$OTEL_JAVA_AGENT_IMAGE",
    "command": ["cp", "/javaagent.jar", "/otel/javaagent.jar"],
    "volumeMounts": [{"name": "otel-agent", "mountPath": "/otel"}]}],
  "containers": [{"name": "$container",
    "volumeMounts": [{"name": "otel-agent", "mountPath": "/otel"}],
    "env": [
      {"name": "JAVA_TOOL_OPTIONS", "value": "-javaagent:/otel/javaagent.jar"},
      {"name": "OTEL_SERVICE_NAME", "value": "$deployment"},
      {"name": "OTEL_EXPORTER_OTLP_ENDPOINT", "value": "http://otel-collector.observability.svc:4318"},
      {"name": "OTEL_EXPORTER_OTLP_PROTOCOL", "value": "http/protobuf"},
      {"name": "OTEL_METRICS_EXPORTER", "value": "none"},
      {"name": "OTEL_LOGS_EXPORTER", "value": "none"}]}]}}}}
PATCH
)"
      done
      # RabbitMQ: the management plugin for the exporter, and its guest user allowed in from the exporter.
      container=$(kubectl -n "$namespace" get deployment/rabbitmq -o jsonpath='{.spec.template.spec.containers[0].name}')
      kubectl -n "$namespace" patch deployment/rabbitmq --type strategic --patch "$(cat <<PATCH
{"spec": {"template": {"spec": {
  "volumes": [{"name": "enabled-plugins", "configMap": {"name": "rabbitmq-enabled-plugins"}}],
  "containers": [{"name": "$container",
    "volumeMounts": [{"name": "enabled-plugins", "mountPath": "/etc/rabbitmq/enabled_plugins", "subPath": "enabled_plugins"}],
    "env": [{"name": "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS", "value": "-rabbit loopback_users []"}]}]}}}}
PATCH
)"
      ;;
  esac
done

if [ "${SKIP_READY:-0}" != 1 ]; then
  APPS="$APPS" PYTHON="$PYTHON" "$here/ready.sh"
fi
log "installed; run a marathon with: marathon run --backend kube --kubeconfig ~/.kube/config --prometheus-url ${PROMETHEUS_URL:-http://127.0.0.1:9090} ..."
