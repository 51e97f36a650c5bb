"""deploy/install.sh run against stand-in kubectl and helm that record what they are asked: the order of the
install, the ConfigMaps it builds, and that every patch it sends is valid JSON. The readiness gate's
Prometheus queries against a stand-in Prometheus on 127.0.0.1."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest

ROOT = Path(__file__).resolve().parents[2]

KUBECTL = """#!/bin/sh
# Records each call (one JSON line: the arguments and what came on standard input) and answers the few
# questions install.sh asks.
log="$FAKE_LOG"
case "$*" in
  *"get nodes"*) printf '172.18.0.2\\n172.18.0.3\\n'; exit 0 ;;
  *"containers[0].name"*) printf 'main'; exit 0 ;;
esac
if [ -t 0 ]; then input=""; else input=$(cat); fi
python3 - "$log" "$input" "$@" <<'PY'
import json, sys
log, stdin, args = sys.argv[1], sys.argv[2], sys.argv[3:]
with open(log, "a") as out:
    out.write(json.dumps({"tool": "kubectl", "args": args, "stdin": stdin}) + "\\n")
PY
case "$*" in
  *"--dry-run=client"*) printf 'apiVersion: v1\\nkind: ConfigMap\\n' ;;
esac
"""
HELM = """#!/bin/sh
python3 -c 'import json, sys
open(sys.argv[1], "a").write(json.dumps({"tool": "helm", "args": sys.argv[2:]}) + "\\n")' "$FAKE_LOG" "$@"
"""


@pytest.fixture(scope="module")
def calls(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("install")
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    for name, text in (("kubectl", KUBECTL), ("helm", HELM)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    log = tmp / "calls.jsonl"
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "FAKE_LOG": str(log),
        "PYTHON": sys.executable,
        "SKIP_READY": "1",
        "APPS": "online-boutique astronomy-shop train-ticket",
    }
    result = subprocess.run(
        ["bash", str(ROOT / "deploy/install.sh")], env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_chaos_mesh_comes_first_from_the_pinned_chart(calls: list[dict[str, Any]]) -> None:
    helm = [c["args"] for c in calls if c["tool"] == "helm"]
    install = next(args for args in helm if args[:2] == ["upgrade", "--install"])
    assert install[install.index("--version") + 1] == "2.7.2"
    assert install[install.index("--namespace") + 1] == "chaos-mesh"
    assert calls.index(next(c for c in calls if c["tool"] == "kubectl")) > calls.index(
        next(c for c in calls if c["tool"] == "helm")
    )


def test_the_rule_configmap_holds_every_rule_file_of_the_pack(calls: list[dict[str, Any]]) -> None:
    created = next(c["args"] for c in calls if "prometheus-rules" in c["args"])
    files = {a.removeprefix("--from-file=") for a in created if a.startswith("--from-file=")}
    assert {Path(f).name for f in files} == {p.name for p in (ROOT / "alert_rules").glob("*.yaml")}
    targets = next(c["args"] for c in calls if "prometheus-targets" in c["args"])
    assert any(a.startswith("--from-file=nodes.json=") for a in targets)


def test_the_stack_is_applied_with_the_configuration_hash(calls: list[dict[str, Any]]) -> None:
    stack = next(c["stdin"] for c in calls if "name: kube-state-metrics" in c.get("stdin", ""))
    assert 'marathon.io/config-hash: ""' not in stack
    assert stack.count("marathon.io/config-hash:") == 2


def test_every_app_is_applied_after_the_stack_and_every_patch_is_json(calls: list[dict[str, Any]]) -> None:
    applies = [c["args"] for c in calls if "apply" in c["args"] and "-f" in c["args"]]
    applied = [args[args.index("-f") + 1] for args in applies]
    apps = [a for a in applied if a.endswith("/app.yaml")]
    assert [Path(a).parent.name for a in apps] == ["online-boutique", "astronomy-shop", "train-ticket"]
    patches = [c["args"][c["args"].index("--patch") + 1] for c in calls if "patch" in c["args"]]
    java = [json.loads(p) for p in patches if "javaagent" in p]
    assert len(java) == 41
    agent = java[0]["spec"]["template"]["spec"]["initContainers"][0]["image"]
    assert agent.startswith("ghcr.io/open-telemetry/opentelemetry-operator/autoinstrumentation-java:")
    rabbit = [json.loads(p) for p in patches if "enabled_plugins" in p]
    assert len(rabbit) == 1
    set_env = [c["args"] for c in calls if c["args"][:1] == ["-n"] and "set" in c["args"]]
    assert len(set_env) == 10 and all("ENABLE_TRACING=1" in args for args in set_env)


class _Prometheus(BaseHTTPRequestHandler):
    present: set[str] = set()

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        query = parse_qs(urlparse(self.path).query)["query"][0]
        result = [{"metric": {}, "value": [0, "1"]}] if query in self.present else []
        body = json.dumps({"status": "success", "data": {"resultType": "vector", "result": result}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def prometheus() -> Iterator[str]:
    server = HTTPServer(("127.0.0.1", 0), _Prometheus)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_the_gate_reports_the_families_prometheus_has_no_data_for(prometheus: str) -> None:
    from tests.deploy.test_deploy_offline import readiness

    gate = readiness()
    checks = gate.readiness_checks(["online-boutique"])
    _Prometheus.present = {c.query for c in checks if not c.family.startswith("traces_span_metrics")}
    absent = gate.missing(checks, prometheus_url=prometheus)
    assert {c.family for c in absent} == {
        "traces_span_metrics_calls_total",
        "traces_span_metrics_duration_milliseconds_bucket",
        "traces_span_metrics_duration_milliseconds_count",
    }
    _Prometheus.present = {c.query for c in checks}
    assert gate.missing(checks, prometheus_url=prometheus) == []
    assert gate.main(["--prometheus-url", prometheus, "--apps", "online-boutique", "--timeout", "0"]) == 0
