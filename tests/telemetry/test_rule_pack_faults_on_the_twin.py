"""Five faults, each alone on a fresh Online Boutique twin, put in place by the real injectors: within two
schedule boundaries (2 x 120 s after the fault is in place) the rule pack fires an alert naming the faulty
service.

The evaluation starts after a warm-up, as a run's does, and nothing may name the service before the fault:
an alert left over from the cold start would otherwise pass for a detection.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from orchestrator.catalog.faults import Entry
from orchestrator.catalog.loading import load_catalog
from orchestrator.cluster.client import KubeClient
from orchestrator.mechanisms.applying import Applied, Applier
from orchestrator.mechanisms.handles import Context
from orchestrator.mechanisms.ledger import Ledger, Target
from orchestrator.telemetry.evaluating import AlertEvaluator
from orchestrator.telemetry.querying import PrometheusQuerier
from orchestrator.telemetry.rules import load_rule_pack
from orchestrator.telemetry.server import start_prometheus
from orchestrator.twin.launch import RunningTwin, start_twin
from orchestrator.twin.timefmt import EPOCH
from tests.telemetry.telemetry_support import need_binary

OB = "online-boutique"
CHAOS_NS = "chaos-mesh"
WARM_UP = 300.0
BOUNDARY = 120.0
SETTLE = 5.0


@dataclass(frozen=True)
class Fault:
    """A catalog entry, re-aimed where the catalog has the mechanism but not this target or value."""

    base: str
    service: str
    changes: dict[str, Any]


def _redis_address() -> Fault:
    return Fault("ob-cart-redis-port", "cartservice", {})


def _oom() -> Fault:
    # 64Mi is the container's request: the API refuses a limit below it.
    inject = {"field": "resources/limits/memory", "value": "64Mi"}
    return Fault("ob-currency-memory-limit", "currencyservice", {"inject": inject})


def _pod_kill() -> Fault:
    inject = {"kind": "PodChaos", "spec": {"action": "pod-kill", "mode": "all"}}
    return Fault("ob-redis-cart-pod-kill", "productcatalogservice", {"inject": inject})


def _delay() -> Fault:
    spec = {
        "action": "delay",
        "mode": "all",
        "delay": {"latency": "500ms", "jitter": "0ms", "correlation": "0"},
    }
    return Fault(
        "ob-cart-redis-latency", "checkoutservice", {"inject": {"kind": "NetworkChaos", "spec": spec}}
    )


def _replicas_zero() -> Fault:
    return Fault("ob-checkout-replicas-zero", "shippingservice", {})


FAULTS = {
    "cart-redis-address": _redis_address(),
    "currency-oom": _oom(),
    "productcatalog-pod-kill": _pod_kill(),
    "checkout-delay-500ms": _delay(),
    "shipping-replicas-zero": _replicas_zero(),
}


def _entry(fault: Fault) -> Entry:
    base = load_catalog(OB).by_id[fault.base]
    data = base.model_dump(mode="json")
    data.update(fault.changes)
    data["target"] = fault.service
    data["culprits"] = [fault.service]
    return type(base).model_validate(data)


def _inject(twin: RunningTwin, entry: Entry, ledger_path: Path) -> tuple[Applier, KubeClient]:
    def settle() -> None:
        twin.advance(SETTLE)

    client = KubeClient.from_kubeconfig(twin.kubeconfig)
    ctx = Context(client=client, namespace=OB, chaos_namespace=CHAOS_NS, settle=settle)
    book = Ledger(ledger_path)
    book.open(Target(kubeconfig=str(twin.kubeconfig), namespace=OB, chaos_namespace=CHAOS_NS))
    applier = Applier(ctx=ctx, ledger=book)
    result = applier.inject(entry, fault_id="f000")
    assert isinstance(result, Applied), result
    return applier, client


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", list(FAULTS))
def test_each_fault_alone_fires_an_alert_naming_its_service_within_two_boundaries(
    name: str, tmp_path: Path
) -> None:
    need_binary("prometheus")
    fault = FAULTS[name]
    entry = _entry(fault)
    origin = EPOCH.timestamp()
    with (
        start_prometheus(tmp_path) as prometheus,
        start_twin(
            OB, seed=5, kubeconfig=tmp_path / "kubeconfig", remote_write_url=prometheus.remote_write_url
        ) as twin,
    ):
        twin.advance(WARM_UP)
        querier = PrometheusQuerier(prometheus.url)
        evaluator = AlertEvaluator(load_rule_pack(), querier, start=origin + WARM_UP)
        applier, client = _inject(twin, entry, tmp_path / "faults.ledger.jsonl")
        try:
            in_place = twin.twin.now  # a config fault's apply waits for its rollout
            evaluator.evaluate(until=origin + in_place)
            before = [r.rule for r in evaluator.history if dict(r.labels).get("service") == fault.service]
            before += [
                rule for rule, a in evaluator.active() if dict(a.labels).get("service") == fault.service
            ]
            detected: list[tuple[int, str]] = []
            for boundary in (1, 2):
                now = twin.advance(BOUNDARY)
                # An alert that fired and resolved between two boundaries counts as much as a held one.
                started = evaluator.evaluate(until=origin + now)
                detected += [
                    (boundary, r.rule)
                    for r in started
                    if r.state == "firing" and dict(r.labels).get("service") == fault.service
                ]
                detected += [
                    (boundary, rule)
                    for rule, alert in evaluator.active()
                    if alert.state == "firing" and dict(alert.labels).get("service") == fault.service
                ]
            outcomes = applier.revert_all()
        finally:
            applier.revert_all()
            applier.ledger.close()
            client.close()
            querier.close()
    print(f"{name}: in place at {in_place:.0f}s, fired {sorted(set(detected))}")
    assert before == []
    assert evaluator.failures == []
    assert detected, f"no firing alert named {fault.service} within two boundaries of {name}"
    assert set(outcomes.values()) <= {"reverted", "already_restored"}, outcomes
