"""What the runner hands the agents: the inbox's alert history and the oracle's truth, in the forms the
baseline agents read; and evaluated alerts turned into schedule time."""

from __future__ import annotations

import json
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

from orchestrator.agents.inputs import load_alerts
from orchestrator.agents.oracle import Truth
from orchestrator.bundle.records import AlertRecord, Record
from orchestrator.catalog.faults import Healthy, SymptomProbe
from orchestrator.catalog.loading import load_catalog
from orchestrator.mechanisms.handles import Handle
from orchestrator.run.events import Ignore
from orchestrator.run.faults import LiveFault
from orchestrator.run.observing import (
    Observation,
    Recorder,
    bundle_alert,
    compact_json,
    inbox_entry,
    oracle_truth,
    probe_of,
    write_json_atomically,
)
from orchestrator.schedule import Activation
from orchestrator.telemetry.alerts import EvaluatedAlert

ORIGIN = 1_767_225_600.0


def _evaluated(alert_id: str, *, starts: float, ends: float | None) -> EvaluatedAlert:
    return EvaluatedAlert(
        id=alert_id, rule="ServiceErrorRatioCritical", state="firing" if ends is None else "resolved",
        labels={"alertname": "ServiceErrorRatioCritical", "namespace": "online-boutique",
                "service": "cartservice"},
        annotations={"summary": "cartservice fails"}, active_at=ORIGIN + starts - 60,
        starts_at=ORIGIN + starts, ends_at=None if ends is None else ORIGIN + ends, value=0.5,
    )  # fmt: skip


def test_evaluated_alerts_are_kept_in_schedule_time() -> None:
    record = bundle_alert(_evaluated("a1", starts=300.0, ends=540.0), origin_epoch_s=ORIGIN)
    assert (record.alert_id, record.starts_at, record.ends_at) == ("a1", 300.0, 540.0)
    assert record.labels["service"] == "cartservice"


def test_the_inbox_history_reads_back_through_the_agents_parser_latest_state_winning(tmp_path: Path) -> None:
    states = [
        bundle_alert(_evaluated("a1", starts=300.0, ends=None), origin_epoch_s=ORIGIN),
        bundle_alert(_evaluated("a2", starts=420.0, ends=None), origin_epoch_s=ORIGIN),
        bundle_alert(_evaluated("a1", starts=300.0, ends=540.0), origin_epoch_s=ORIGIN),
    ]
    path = tmp_path / "inbox" / "alerts.json"
    write_json_atomically(path, [inbox_entry(state) for state in states])
    assert not list(path.parent.glob("*.tmp"))
    alerts = load_alerts(path)
    assert [(a.alert_id, a.firing) for a in alerts] == [("a1", False), ("a2", True)]
    assert json.loads(path.read_text())[0]["rule"] == "ServiceErrorRatioCritical"


def _done(value: Any) -> Future[Any]:
    future: Future[Any] = Future()
    future.set_result(value)
    return future


def test_the_inbox_text_is_the_whole_history_encoded_as_one_document_after_every_commit() -> None:
    records: list[Record] = []
    observer = SimpleNamespace(evaluator=SimpleNamespace(failures=[]), origin_epoch_s=ORIGIN)
    recorder = Recorder(observer=cast(Any, observer), client=cast(Any, None), record=records.append,
                        events=Ignore())  # fmt: skip
    assert recorder.inbox_text() == compact_json([]) == "[]"
    batches: list[list[AlertRecord]] = [
        [bundle_alert(_evaluated("a1", starts=300.0, ends=None), origin_epoch_s=ORIGIN)],
        [],
        [
            bundle_alert(_evaluated("a2", starts=420.0, ends=None), origin_epoch_s=ORIGIN),
            bundle_alert(_evaluated("a1", starts=300.0, ends=540.0), origin_epoch_s=ORIGIN),
        ],
    ]
    for until, batch in zip((360.0, 480.0, 600.0), batches, strict=True):
        pool = ThreadPoolExecutor(max_workers=1)
        recorder.commit(Observation(until=until, pool=pool, probes=_done([]), alerts=_done(batch),
                                    service=_done([])))  # fmt: skip
        assert recorder.inbox_text() == compact_json([inbox_entry(alert) for alert in recorder.history])
    assert [entry["alert_id"] for entry in json.loads(recorder.inbox_text())] == ["a1", "a2", "a1"]
    assert records == [alert for batch in batches for alert in batch]


def test_the_oracle_truth_is_what_the_oracle_reads() -> None:
    catalog = load_catalog("online-boutique")
    entry = catalog.entries[0]
    handle = Handle(fault_id="f004", catalog_id=entry.id, mechanism=entry.mechanism, kind="Deployment",
                    namespace="online-boutique", name=entry.target)  # fmt: skip
    activation = Activation(
        index=4, arrival=4, at_s=240, duration_s=360, catalog_id=entry.id, category=entry.category,
        mechanism=str(entry.mechanism), target=entry.target,
    )  # fmt: skip
    fault = LiveFault("f004", activation, entry, handle, 245.0, tuple(sorted(catalog.scope(entry))))
    truth = Truth.model_validate(
        oracle_truth([fault], now_s=245.0, grace_s=120.0, namespace="online-boutique")
    )
    (seen,) = truth.faults
    assert (seen.fault_id, seen.catalog_id, seen.target) == ("f004", entry.id, entry.target)
    assert seen.culprits == sorted(entry.culprits)
    assert seen.artifact == entry.artifact
    assert seen.inject_s == 245.0
    assert seen.remedy.action == entry.remedy.action
    assert (truth.now_s, truth.grace_s, truth.namespace) == (245.0, 120.0, "online-boutique")
    assert seen.one_shot is False


def test_only_a_fault_that_heals_by_itself_is_one_shot_for_the_oracle() -> None:
    catalog = load_catalog("online-boutique")
    kinds = {}
    for catalog_id in ("ob-cart-container-kill", "ob-cart-redis-partition"):
        entry = catalog.by_id[catalog_id]
        handle = Handle(fault_id="f1", catalog_id=entry.id, mechanism=entry.mechanism, kind="PodChaos",
                        namespace="chaos-mesh", name="f1")  # fmt: skip
        activation = Activation(
            index=1, arrival=1, at_s=120, duration_s=240, catalog_id=entry.id, category=entry.category,
            mechanism=str(entry.mechanism), target=entry.target,
        )  # fmt: skip
        fault = LiveFault("f1", activation, entry, handle, 120.0, tuple(sorted(catalog.scope(entry))))
        (seen,) = Truth.model_validate(
            oracle_truth([fault], now_s=120.0, grace_s=120.0, namespace="ob")
        ).faults
        kinds[catalog_id] = seen.one_shot
    assert kinds == {"ob-cart-container-kill": True, "ob-cart-redis-partition": False}


def test_a_catalog_probe_is_queried_with_the_run_namespace_substituted() -> None:
    probe = probe_of(
        SymptomProbe(query='rate(x{namespace="$namespace"}[2m])', healthy=Healthy(op="<", value=0.5)), "shop"
    )
    assert probe.query == 'rate(x{namespace="shop"}[2m])'
    assert (probe.healthy.op, probe.healthy.value) == ("<", 0.5)
