"""Kubernetes manifests rendered from a topology: what a real cluster (and the twin) is given for an app.

The topology file is the single source; ``manifests/<app>/app.yaml`` is this module's output, committed,
and checked to be up to date. Rendering is deterministic: the same topology gives the same bytes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from orchestrator.catalog.topology import Port, Probe, Resources, Service, Sidecar, Topology

ZONE_LABEL = "topology.kubernetes.io/zone"
FLAG_FILE = "demo.flagd.json"
FLAG_DIR = "/etc/flagd"
HEADER = "# Rendered from topology.yaml by `marathon manifests render`; edit the topology, not this file.\n"

Obj = dict[str, Any]


class _Dumper(yaml.SafeDumper):
    """Writes shared values out in full: kubectl and readers of the file expect no YAML anchors."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _represent_str(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    # Multi-line values (the flag file) stay readable as literal blocks.
    style = "|" if "\n" in data else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_Dumper.add_representer(str, _represent_str)


def app_manifest_path(app: str, *, root: Path) -> Path:
    return root / "manifests" / app / "app.yaml"


def render_objects(topology: Topology) -> list[Obj]:
    """Every Kubernetes object of the app, in apply order (no side effects)."""
    objects: list[Obj] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": topology.namespace, "labels": {}}}
    ]
    objects[0]["metadata"]["labels"] = {"app.kubernetes.io/part-of": topology.app}
    if topology.feature_flag_service is not None and topology.feature_flags:
        objects.append(_flag_config_map(topology))
    for service in topology.services:
        objects.append(_workload(topology, service))
        if service.kube_service and service.all_ports:
            for name in (service.name, *service.aliases):
                objects.append(_service(topology, service, name))
            headless = service.governing_service
            if headless is not None and headless not in (service.name, *service.aliases):
                governing = _service(topology, service, headless)
                governing["spec"]["clusterIP"] = "None"
                objects.append(governing)
    return objects


def render_yaml(topology: Topology) -> str:
    """The app's manifest file text: one YAML document per object (no side effects)."""
    body = yaml.dump_all(
        render_objects(topology),
        Dumper=_Dumper,
        sort_keys=False,
        default_flow_style=False,
        width=1000,
        explicit_start=True,
    )
    return HEADER + body


def _metadata(topology: Topology, name: str, labels: dict[str, str]) -> Obj:
    return {"name": name, "namespace": topology.namespace, "labels": labels}


def _labels(topology: Topology, service: Service) -> dict[str, str]:
    return {
        "app": service.name,
        "app.kubernetes.io/name": service.name,
        "app.kubernetes.io/part-of": topology.app,
        "app.kubernetes.io/version": topology.version,
    }


def flag_config_map_name(topology: Topology) -> str:
    return f"{topology.feature_flag_service}-config"


def flag_file(topology: Topology) -> str:
    """The flagd flag-definition file for the topology's feature flags, every flag at its default."""
    flags = {
        flag.name: {
            "description": flag.description,
            "state": "ENABLED",
            "variants": dict(flag.variants),
            "defaultVariant": flag.default_variant,
        }
        for flag in topology.feature_flags
    }
    document = {"$schema": "https://flagd.dev/schema/v0/flags.json", "flags": flags}
    return json.dumps(document, indent=2, sort_keys=False) + "\n"


def _flag_config_map(topology: Topology) -> Obj:
    labels = {"app": str(topology.feature_flag_service), "app.kubernetes.io/part-of": topology.app}
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _metadata(topology, flag_config_map_name(topology), labels),
        "data": {FLAG_FILE: flag_file(topology)},
    }


def _workload(topology: Topology, service: Service) -> Obj:
    labels = _labels(topology, service)
    pod_spec: Obj = {"containers": [_main_container(service)]}
    pod_spec["containers"].extend(_sidecar_container(sidecar) for sidecar in service.sidecars)
    zone = _site_zone(topology, service)
    if zone is not None:
        # A site pins its services to its zone; failing over means moving them to the standby's zone.
        pod_spec["nodeSelector"] = {ZONE_LABEL: zone}
    if service.name == topology.feature_flag_service and topology.feature_flags:
        pod_spec["containers"][0]["volumeMounts"] = [{"name": "flag-config", "mountPath": FLAG_DIR}]
        pod_spec["volumes"] = [{"name": "flag-config", "configMap": {"name": flag_config_map_name(topology)}}]
    spec: Obj = {"replicas": service.replicas}
    if service.workload == "StatefulSet":
        spec["serviceName"] = service.governing_service or service.name
    spec.update(
        {
            "revisionHistoryLimit": 10,
            "selector": {"matchLabels": {"app": service.name}},
            "template": {"metadata": {"labels": labels}, "spec": pod_spec},
        }
    )
    return {
        "apiVersion": "apps/v1",
        "kind": service.workload,
        "metadata": _metadata(topology, service.name, labels),
        "spec": spec,
    }


def _site_zone(topology: Topology, service: Service) -> str | None:
    for site in topology.sites:
        if site.name == service.site:
            return site.zone
    return None


def _main_container(service: Service) -> Obj:
    container: Obj = {"name": service.container_name, "image": service.image}
    container["imagePullPolicy"] = "IfNotPresent"
    if service.command:
        container["command"] = list(service.command)
    if service.ports:
        container["ports"] = [_container_port(port) for port in service.ports]
    env: list[Obj] = [
        {"name": name, "valueFrom": {"fieldRef": {"fieldPath": path}}}
        for name, path in service.field_env.items()
    ]
    # Address and credential values come first so plain env values may refer to them as $(NAME).
    for group in (service.address_env, service.credential_env, service.env):
        env.extend({"name": name, "value": value} for name, value in group.items())
    if env:
        container["env"] = env
    resources = _resources(service.resources)
    if resources:
        container["resources"] = resources
    if service.readiness is not None:
        container["readinessProbe"] = _probe(service.readiness)
    if service.liveness is not None:
        container["livenessProbe"] = _probe(service.liveness)
    return container


def _sidecar_container(sidecar: Sidecar) -> Obj:
    container: Obj = {"name": sidecar.name, "image": sidecar.image, "imagePullPolicy": "IfNotPresent"}
    if sidecar.ports:
        container["ports"] = [_container_port(port) for port in sidecar.ports]
    if sidecar.env:
        container["env"] = [{"name": name, "value": value} for name, value in sidecar.env.items()]
    resources = _resources(sidecar.resources)
    if resources:
        container["resources"] = resources
    return container


def _container_port(port: Port) -> Obj:
    return {"name": port.name, "containerPort": port.container_port, "protocol": "TCP"}


def _resources(resources: Resources) -> Obj:
    found: Obj = {}
    for side in ("requests", "limits"):
        quantities = getattr(resources, side)
        pairs = (("cpu", quantities.cpu), ("memory", quantities.memory))
        values = {key: value for key, value in pairs if value}
        if values:
            found[side] = values
    return found


def _probe(probe: Probe) -> Obj:
    rendered: Obj
    if probe.type == "httpGet":
        rendered = {"httpGet": {"path": probe.path, "port": probe.port}}
        if probe.headers:
            headers = [{"name": name, "value": value} for name, value in probe.headers.items()]
            rendered["httpGet"]["httpHeaders"] = headers
    elif probe.type == "grpc":
        rendered = {"grpc": {"port": probe.port}}
    elif probe.type == "tcpSocket":
        rendered = {"tcpSocket": {"port": probe.port}}
    else:
        rendered = {"exec": {"command": list(probe.command)}}
    rendered.update(
        {
            "initialDelaySeconds": probe.initial_delay_s,
            "periodSeconds": probe.period_s,
            "timeoutSeconds": probe.timeout_s,
            "failureThreshold": probe.failure_threshold,
        }
    )
    return rendered


def _service(topology: Topology, service: Service, name: str) -> Obj:
    ports = []
    for port in service.all_ports:
        rendered: Obj = {
            "name": port.name,
            "port": port.exposed_port,
            "targetPort": port.container_port,
            "protocol": "TCP",
        }
        if port.node_port is not None and service.service_type == "NodePort":
            rendered["nodePort"] = port.node_port
        ports.append(rendered)
    labels = {"app": service.name, "app.kubernetes.io/part-of": topology.app}
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _metadata(topology, name, labels),
        "spec": {"type": service.service_type, "selector": {"app": service.name}, "ports": ports},
    }
