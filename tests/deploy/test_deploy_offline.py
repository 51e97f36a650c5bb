"""Offline checks of everything a real cluster gets: the Kubernetes objects of manifests/ and deploy/ against
the schemas of the pinned Kubernetes version, Prometheus' configuration under promtool, the Kind and Helm
settings, the OpenTelemetry Collector's naming against the series contract, and the cluster scripts."""

from __future__ import annotations

import copy
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from orchestrator.vocabulary.series import CADVISOR, SPAN_METRICS

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"


def versions() -> dict[str, str]:
    pairs = {}
    for line in (DEPLOY / "versions.env").read_text().splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            pairs[key] = value
    return pairs


def schema_version() -> str:
    """kubernetes-validate's schema set for the pinned minor version (it ships one per minor)."""
    major, minor, _ = versions()["KUBERNETES_VERSION"].removeprefix("v").split(".")
    return f"{major}.{minor}.0"


# YAML files that are configuration, not Kubernetes objects (no apiVersion).
CONFIG_FILES = {
    "deploy/nightly.yaml",
    "deploy/chaos-mesh/values.yaml",
    "deploy/observability/prometheus.yaml",
    "deploy/observability/otel-collector.yaml",
}
# Objects of API groups kubernetes-validate has no schema for (CRDs and tool configurations): checked for
# apiVersion, kind and, where the kind has one, metadata.name only.
SCHEMALESS = {
    "kind.x-k8s.io/v1alpha4": {"Cluster"},
    "kubeadm.k8s.io/v1beta4": {"InitConfiguration", "ClusterConfiguration"},
    "kubelet.config.k8s.io/v1beta1": {"KubeletConfiguration"},
    "chaos-mesh.org/v1alpha1": {
        "PodChaos",
        "NetworkChaos",
        "StressChaos",
        "IOChaos",
        "DNSChaos",
        "TimeChaos",
    },
    "crd.projectcalico.org/v1": {"IPPool", "FelixConfiguration"},
}
WITHOUT_METADATA = {"kind.x-k8s.io/v1alpha4", "kubeadm.k8s.io/v1beta4", "kubelet.config.k8s.io/v1beta1"}


def manifest_files() -> list[Path]:
    files = sorted(ROOT.glob("manifests/*/app.yaml")) + sorted(DEPLOY.rglob("*.yaml"))
    assert len(files) >= 12
    return files


def documents(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc is not None]


# The Grafana folder holds the control plane's dashboard and may hold its scrape configuration: its YAML
# files that are Kubernetes objects are checked, the others are its own business.
FOREIGN_CONFIG_DIRS = ("deploy/grafana/",)


def is_config(relative: str, doc: dict[str, Any]) -> bool:
    return relative in CONFIG_FILES or (relative.startswith(FOREIGN_CONFIG_DIRS) and "apiVersion" not in doc)


def kubernetes_objects() -> list[tuple[str, dict[str, Any]]]:
    objects = []
    for path in manifest_files():
        relative = str(path.relative_to(ROOT))
        if relative in CONFIG_FILES:
            assert all("apiVersion" not in doc for doc in documents(path)), relative
            continue
        objects += [(relative, doc) for doc in documents(path) if not is_config(relative, doc)]
    return objects


def test_every_yaml_under_deploy_and_manifests_is_an_object_or_a_listed_configuration() -> None:
    for path in manifest_files():
        relative = str(path.relative_to(ROOT))
        for doc in documents(path):
            assert is_config(relative, doc) or {"apiVersion", "kind"} <= doc.keys(), relative


def test_every_kubernetes_object_validates_against_the_pinned_version_schemas() -> None:
    version = schema_version()
    checked = schemaless = 0
    for relative, doc in kubernetes_objects():
        api_version, kind = doc["apiVersion"], doc["kind"]
        if api_version in SCHEMALESS:
            assert kind in SCHEMALESS[api_version], (relative, api_version, kind)
            if api_version not in WITHOUT_METADATA:
                assert doc["metadata"]["name"], relative
            schemaless += 1
            continue
        try:
            kubernetes_validate.validate(doc, version, strict=True)
        except kubernetes_validate.ValidationError as exc:
            pytest.fail(
                f"{relative}: {kind} {doc.get('metadata', {}).get('name')}: {exc.message} at {exc.path}"
            )
        checked += 1
    assert checked >= 150 and schemaless >= 4, (checked, schemaless)


def a_deployment() -> dict[str, Any]:
    for _, doc in kubernetes_objects():
        if doc["kind"] == "Deployment":
            return copy.deepcopy(doc)
    raise AssertionError("no Deployment")


def test_the_validator_rejects_an_unknown_field_and_a_wrong_type() -> None:
    version = schema_version()
    kubernetes_validate.validate(a_deployment(), version, strict=True)
    unknown = a_deployment()
    unknown["spec"]["replicaz"] = 2
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(unknown, version, strict=True)
    wrong_type = a_deployment()
    wrong_type["spec"]["replicas"] = "two"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(wrong_type, version, strict=True)


# --- Prometheus -------------------------------------------------------------------------------------------


def promtool() -> str:
    path = shutil.which("promtool")
    assert path, "promtool is missing: make prometheus"
    return path


def prometheus_dir(tmp_path: Path, config: str) -> Path:
    """The layout Prometheus has in the cluster (/etc/prometheus): the config, rules/ (here: the repo's
    alert_rules) and targets/nodes.json; the service account files live in the test's directory."""
    account = tmp_path / "serviceaccount"
    account.mkdir()
    (account / "token").write_text("token")
    (account / "ca.crt").write_text("")
    config = config.replace("/var/run/secrets/kubernetes.io/serviceaccount", str(account))
    (tmp_path / "prometheus.yml").write_text(config)
    (tmp_path / "rules").symlink_to(ROOT / "alert_rules")
    (tmp_path / "targets").mkdir()
    (tmp_path / "targets" / "nodes.json").write_text('[{"targets": ["172.18.0.2:10250"]}]\n')
    return tmp_path / "prometheus.yml"


def check_config(config: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [promtool(), "check", "config", str(config)], capture_output=True, text=True, timeout=120
    )


def test_promtool_accepts_the_prometheus_config_with_the_rule_pack(tmp_path: Path) -> None:
    config = prometheus_dir(tmp_path, (DEPLOY / "observability/prometheus.yaml").read_text())
    result = check_config(config)
    assert result.returncode == 0, result.stdout + result.stderr
    rule_files = len(list((ROOT / "alert_rules").glob("*.yaml")))
    assert f"SUCCESS: {rule_files} rule files found" in result.stdout + result.stderr


def test_promtool_rejects_a_broken_prometheus_config(tmp_path: Path) -> None:
    text = (
        (DEPLOY / "observability/prometheus.yaml")
        .read_text()
        .replace("scrape_interval: 15s", "scrape_interval: often")
    )
    result = check_config(prometheus_dir(tmp_path, text))
    assert result.returncode != 0


def prometheus_config() -> dict[str, Any]:
    config: dict[str, Any] = yaml.safe_load((DEPLOY / "observability/prometheus.yaml").read_text())
    return config


def job(name: str) -> dict[str, Any]:
    jobs = {job["job_name"]: job for job in prometheus_config()["scrape_configs"]}
    return jobs[name]


def test_prometheus_keeps_every_cadvisor_series_of_the_contract() -> None:
    cadvisor = job("cadvisor")
    assert cadvisor["metrics_path"] == "/metrics/cadvisor"
    keep = next(rule for rule in cadvisor["metric_relabel_configs"] if rule.get("action") == "keep")
    pattern = re.compile(keep["regex"])
    assert all(pattern.fullmatch(series.name) for series in CADVISOR)
    assert not pattern.fullmatch("container_network_receive_bytes_total")


def test_prometheus_runs_with_the_remote_write_receiver_and_the_rule_pack_mounted() -> None:
    stack = {(d["kind"], d["metadata"]["name"]): d for d in documents(DEPLOY / "observability/stack.yaml")}
    pod = stack[("Deployment", "prometheus")]["spec"]["template"]["spec"]
    assert "--web.enable-remote-write-receiver" in pod["containers"][0]["args"]
    mounts = {m["mountPath"] for m in pod["containers"][0]["volumeMounts"]}
    assert {"/etc/prometheus/rules", "/etc/prometheus/targets"} <= mounts
    assert prometheus_config()["rule_files"] == ["rules/*.yaml"]
    assert "prometheus-rules" in (DEPLOY / "install.sh").read_text()


def test_every_datastore_of_every_app_has_an_exporter_scraped_with_its_namespace_and_service() -> None:
    from orchestrator.catalog.topologies import load_topology
    from orchestrator.vocabulary.series import EXPORTERS

    scraped = {
        (group["labels"]["namespace"], group["labels"]["service"]): group["targets"][0]
        for group in job("datastore-exporters")["static_configs"]
    }
    for app in ("online-boutique", "astronomy-shop", "train-ticket"):
        topology = load_topology(app)
        services = {
            d["metadata"]["name"]
            for d in documents(ROOT / "manifests" / app / "app.yaml")
            if d["kind"] == "Service"
        }
        exporters = {
            (d["kind"], d["metadata"]["name"]): d
            for d in documents(DEPLOY / "observability/exporters" / f"{app}.yaml")
        }
        for service in topology.services:
            if service.datastore_kind is None or str(service.datastore_kind) not in EXPORTERS:
                continue
            assert service.name in services
            target = scraped[(topology.namespace, service.name)]
            host, port = target.split(":")
            name = host.removesuffix(".observability.svc")
            exported = exporters[("Service", name)]["spec"]["ports"][0]["port"]
            assert int(port) == exported, target
            assert ("Deployment", name) in exporters


# --- OpenTelemetry Collector ------------------------------------------------------------------------------


def collector() -> dict[str, Any]:
    config: dict[str, Any] = yaml.safe_load((DEPLOY / "observability/otel-collector.yaml").read_text())
    return config


def series_md_buckets() -> list[float]:
    text = (ROOT / "alert_rules/SERIES.md").read_text()
    match = re.search(r"buckets \(ms\): ([0-9, ]+), \+Inf", text)
    assert match, "SERIES.md names no bucket list"
    return [float(b) for b in match.group(1).split(",")]


def milliseconds(duration: str) -> float:
    match = re.fullmatch(r"([0-9.]+)(ms|s)", duration)
    assert match, duration
    return float(match.group(1)) * (1000 if match.group(2) == "s" else 1)


def test_span_metrics_carry_the_names_buckets_and_namespace_label_the_rules_read() -> None:
    config = collector()
    spanmetrics = config["connectors"]["spanmetrics"]
    prefix = spanmetrics["namespace"].replace(".", "_")
    unit = {"ms": "milliseconds", "s": "seconds"}[spanmetrics["histogram"]["unit"]]
    produced = {f"{prefix}_calls_total"} | {
        f"{prefix}_duration_{unit}_{end}" for end in ("sum", "count", "bucket")
    }
    assert produced == {series.name for series in SPAN_METRICS}
    buckets = [milliseconds(b) for b in spanmetrics["histogram"]["explicit"]["buckets"]]
    assert buckets == series_md_buckets()
    assert {"name": "k8s.namespace.name"} in spanmetrics["dimensions"]
    relabel = job("span-metrics")["metric_relabel_configs"]
    assert {"source_labels": ["k8s_namespace_name"], "regex": "(.+)", "target_label": "namespace"} in relabel


def test_the_collector_pipes_traces_through_spanmetrics_to_the_port_prometheus_scrapes() -> None:
    pipelines = collector()["service"]["pipelines"]
    assert "spanmetrics" in pipelines["traces"]["exporters"]
    assert "k8sattributes" in pipelines["traces"]["processors"]
    metrics = [
        p for name, p in pipelines.items() if name.startswith("metrics") and "spanmetrics" in p["receivers"]
    ]
    assert metrics and "prometheus" in metrics[0]["exporters"]
    port = collector()["exporters"]["prometheus"]["endpoint"].rsplit(":", 1)[1]
    assert job("span-metrics")["static_configs"][0]["targets"] == [f"otel-collector.observability.svc:{port}"]


# --- Kind, Helm, versions ---------------------------------------------------------------------------------


def test_kind_cluster_has_a_control_plane_and_two_workers_in_each_of_two_zones() -> None:
    cluster = documents(DEPLOY / "kind/cluster.yaml")[0]
    roles = [node["role"] for node in cluster["nodes"]]
    assert roles.count("control-plane") == 1 and roles.count("worker") == 4
    zones = []
    for node in cluster["nodes"]:
        if node["role"] == "worker":
            (patch,) = [yaml.safe_load(p) for p in node["kubeadmConfigPatches"]]
            assert patch["kind"] == "JoinConfiguration"
            labels = patch["nodeRegistration"]["kubeletExtraArgs"]["node-labels"]
            key, _, zone = labels.partition("=")
            assert key == "topology.kubernetes.io/zone", labels
            zones.append(zone)
    assert sorted(zones) == ["zone-a", "zone-a", "zone-b", "zone-b"]
    assert cluster["networking"]["disableDefaultCNI"] is True
    assert {node["image"] for node in cluster["nodes"]} == {versions()["KIND_NODE_IMAGE"]}
    patch = yaml.safe_load(cluster["kubeadmConfigPatches"][0])
    assert patch["etcd"]["local"]["dataDir"].startswith("/tmp/")  # Kind mounts the node's /tmp as tmpfs
    kind_version = versions()["KIND_VERSION"]
    assert f"Kind {kind_version}" in (DEPLOY / "kind/cluster.yaml").read_text()


def test_kubeadm_reaches_the_same_kubernetes_version_and_pod_range_as_kind() -> None:
    kubeadm = {d["kind"]: d for d in documents(DEPLOY / "kubeadm/kubeadm-config.yaml")}
    cluster = documents(DEPLOY / "kind/cluster.yaml")[0]
    assert kubeadm["ClusterConfiguration"]["kubernetesVersion"] == versions()["KUBERNETES_VERSION"]
    assert versions()["KIND_NODE_IMAGE"].endswith(":" + versions()["KUBERNETES_VERSION"])
    assert kubeadm["ClusterConfiguration"]["networking"]["podSubnet"] == cluster["networking"]["podSubnet"]
    zones = (DEPLOY / "kubeadm/zones.sh").read_text()
    assert "topology.kubernetes.io/zone=$zone" in zones


def test_the_zones_are_25_ms_apart_and_the_scripts_use_that_value() -> None:
    assert versions()["ZONE_DELAY"] == "25ms"
    for script in ("kind/netem.sh", "kubeadm/netem.sh"):
        assert 'netem delay "$ZONE_DELAY"' in (DEPLOY / script).read_text()


def test_chaos_mesh_is_installed_by_helm_at_the_pinned_chart_with_its_values() -> None:
    values = documents(DEPLOY / "chaos-mesh/values.yaml")[0]
    assert values["chaosDaemon"]["runtime"] == "containerd"
    assert values["chaosDaemon"]["socketPath"] == "/run/containerd/containerd.sock"
    assert re.fullmatch(r"\d+\.\d+\.\d+", versions()["CHAOS_MESH_CHART_VERSION"])
    install = (DEPLOY / "install.sh").read_text()
    assert '--version "$CHAOS_MESH_CHART_VERSION"' in install
    assert "--namespace chaos-mesh" in install and '--values "$here/chaos-mesh/values.yaml"' in install


def images_in(path: Path) -> list[str]:
    return re.findall(r"^\s*image:\s*['\"]?([^\s'\"]+)", path.read_text(), flags=re.M)


def test_every_image_is_pinned_to_a_tag_and_none_is_latest() -> None:
    pinned = {key: value for key, value in versions().items() if key.endswith("_IMAGE")}
    images = [image for path in manifest_files() for image in images_in(path)] + list(pinned.values())
    assert len(images) > 90
    for image in images:
        name, _, tag = image.rpartition(":")
        assert name and "/" not in tag, f"{image} has no tag"
        assert tag != "latest", image
    for key, value in versions().items():
        assert value != "latest" and "latest" not in value, key


def test_the_stack_runs_the_images_versions_env_pins() -> None:
    pinned = {
        value for key, value in versions().items() if key.endswith("_IMAGE") and key != "KIND_NODE_IMAGE"
    }
    used = set(images_in(DEPLOY / "observability/stack.yaml"))
    assert used <= pinned and len(used) == 4
    assert "$OTEL_JAVA_AGENT_IMAGE" in (DEPLOY / "install.sh").read_text()


# --- Readiness gate ---------------------------------------------------------------------------------------


def readiness() -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location("deploy_readiness", DEPLOY / "readiness.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    # Its dataclasses resolve their annotations through sys.modules.
    sys.modules.setdefault(spec.name, module)
    spec.loader.exec_module(sys.modules[spec.name])
    return sys.modules[spec.name]


def test_the_readiness_gate_waits_for_every_family_the_rules_read() -> None:
    gate = readiness()
    from orchestrator.telemetry.rules import load_rule_pack

    apps = ["online-boutique", "astronomy-shop", "train-ticket"]
    read = {name for rule in load_rule_pack().rules for name in gate.metrics_in(rule.expr)}
    awaited = {check.family for check in gate.readiness_checks(apps)}
    assert awaited == read - gate.EVENT_ONLY
    examples = {"traces_span_metrics_calls_total", "kube_pod_status_ready", "redis_up", "pg_up",
                "rabbitmq_up"}  # fmt: skip
    assert examples <= awaited


def test_the_readiness_gate_follows_the_rules_and_the_installed_apps(tmp_path: Path) -> None:
    gate = readiness()
    only_boutique = {check.family for check in gate.readiness_checks(["online-boutique"])}
    assert "redis_up" in only_boutique and "mysql_up" not in only_boutique and "pg_up" not in only_boutique
    pack = tmp_path / "rules"
    pack.mkdir()
    (pack / "VERSION").write_text("0.0.1\n")
    rule = {
        "alert": "Made",
        "expr": 'rate(made_up_total{namespace="online-boutique"}[5m]) > 0 and on() kube_node_labels',
        "for": "1m",
        "labels": {"severity": "warning", "signal": "errors"},
        "annotations": {"summary": "s", "description": "d"},
    }
    (pack / "x.yaml").write_text(yaml.safe_dump({"groups": [{"name": "g", "rules": [rule]}]}))
    checks = gate.readiness_checks(["online-boutique"], pack)
    assert {c.query for c in checks} == {
        'count(made_up_total{namespace="online-boutique"})',
        "count(kube_node_labels)",
    }
