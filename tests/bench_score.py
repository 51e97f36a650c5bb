"""Scoring speed on a full-size marathon: 60 faults, 2,000 alerts, 500 tool calls (target: under 1 s)."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from orchestrator.bundle.building import sample_manifest, write_bundle
from orchestrator.bundle.reader import bundle_from_records, read_bundle
from orchestrator.bundle.records import (
    AlertRecord,
    FaultInjected,
    FaultReverted,
    IncidentReport,
    Intervention,
    ModelCall,
    ProbeSample,
    Record,
    RunEnded,
    ServiceSample,
    ToolCall,
)
from orchestrator.bundle.verify import verify_bundle
from orchestrator.rng import derive
from orchestrator.score.scorecard import score_bundle, scorecard_json
from tests.benchkit import Figure

SERVICES = [
    "frontend",
    "cartservice",
    "checkoutservice",
    "paymentservice",
    "currencyservice",
    "shippingservice",
    "emailservice",
    "recommendationservice",
    "productcatalogservice",
    "adservice",
    "redis-cart",
]


def marathon_records(
    *, faults: int = 60, alerts: int = 2000, tool_calls: int = 500, seed: int = 7
) -> list[Record]:
    """A synthetic but dense marathon: overlapping faults, alert storms, many incidents and actions."""
    rng = derive(seed, "bench-score")
    records: list[Record] = [sample_manifest()]
    for index in range(faults):
        inject = rng.uniform(0, 3600)
        revert = inject + rng.uniform(240, 720)
        scope = rng.sample(SERVICES, rng.randint(2, 5))
        records.append(
            FaultInjected(
                fault_id=f"f{index:03d}",
                catalog_id=f"ob-{index:03d}",
                category="configuration",
                mechanism="config",
                namespace="boutique",
                target=scope[0],
                culprits=[scope[0]],
                artifact=f"config:{scope[0]}/env/X",
                scope=scope,
                inject_s=inject,
                planned_revert_s=revert,
                pre_value="a",
                injected_value="b",
            )
        )
        records.append(FaultReverted(fault_id=f"f{index:03d}", t=revert, outcome="reverted"))
        records += [
            ProbeSample(fault_id=f"f{index:03d}", t=inject + 120 * k, value=1.0, healthy=rng.random() < 0.6)
            for k in range(1, 7)
        ]
    for index in range(alerts):
        labels = {"namespace": "boutique", "service": rng.choice(SERVICES)}
        records.append(
            AlertRecord(
                alert_id=f"a{index:04d}", rule="HighErrorRate", labels=labels, starts_at=rng.uniform(0, 5400)
            )
        )
    for index in range(300):
        grouped = [f"a{rng.randrange(alerts):04d}" for _ in range(rng.randint(1, 15))]
        culprit = rng.choice(SERVICES)
        records.append(
            IncidentReport(
                t=rng.uniform(0, 5400),
                incident_id=f"INC-{index % 150}",
                alert_ids=grouped,
                culprits=[culprit],
                artifact=f"config:{culprit}",
            )
        )
    for index in range(tool_calls):
        mutate = index % 5 == 0
        t = rng.uniform(0, 5400)
        records.append(
            ToolCall(
                invocation=int(t // 120),
                t=t,
                tool="rollback" if mutate else "get_alerts",
                args={},
                effect="mutate" if mutate else "read",
                decision="allowed",
            )
        )
        if mutate:
            records.append(
                Intervention(
                    t=t,
                    tool="rollback",
                    targets=[rng.choice(SERVICES)],
                    incident_id=f"INC-{rng.randrange(150)}",
                    result="ok",
                )
            )
    records += [ServiceSample(t=5.0 * k, q=20.0, e=rng.random() * 0.2, l=0.05) for k in range(1080)]
    records += [ModelCall(t=120.0 * k, model="m", tokens_in=20_000, tokens_out=800) for k in range(45)]
    records.append(RunEnded(t=5400.0))
    return records


def _best_of(runs: int, action: object) -> float:
    assert callable(action)
    best = float("inf")
    for _ in range(runs):
        started = time.perf_counter()
        action()
        best = min(best, time.perf_counter() - started)
    return best


def bench() -> list[object]:
    records = marathon_records()
    in_memory = bundle_from_records(records, path=Path("memory"))
    card = score_bundle(in_memory)
    scored = _best_of(3, lambda: scorecard_json(score_bundle(in_memory)))
    name = "score 60 faults, 2,000 alerts, 500 tool calls (best of 3)"
    rows: list[object] = [Figure(name, scored, "s", 1.0)]
    with tempfile.TemporaryDirectory() as scratch:
        bundle = write_bundle(Path(scratch) / "bundle", records)
        read = _best_of(3, lambda: score_bundle(read_bundle(bundle)))
        rows.append(Figure("read + score, sealed bundle (best of 3)", read, "s", 1.0))
        verified = _best_of(3, lambda: verify_bundle(bundle))
        rows.append(Figure("verify, sealed bundle (best of 3)", verified, "s"))
    rows.append(("faults matched (sanity)", f"{sum(o.a for o in card.outcomes)} / 60", "-"))
    return rows


if __name__ == "__main__":
    for row in bench():
        print(row)
