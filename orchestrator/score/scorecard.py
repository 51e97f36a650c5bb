"""The scorecard of one bundle: every docs/metrics.md figure, and its byte-stable JSON form.

See the package docstring for every decision the published metric definitions leave open.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from orchestrator.bundle.reader import Bundle
from orchestrator.bundle.records import IncidentReport, Intervention, ModelCall, Price, ServiceSample
from orchestrator.errors import BundleError, ConfigError
from orchestrator.score.attribution import (
    Attribution,
    Fault,
    attribute,
    latest_alerts,
    latest_reports,
    normalise_name,
    scored_faults,
)
from orchestrator.score.collateral import Difference, collateral, is_resolved
from orchestrator.score.matching import match_faults
from orchestrator.score.stages import (
    acted_on,
    first_detection,
    first_diagnosis,
    outcome,
    repair_confirmed_at,
)


@dataclass(frozen=True)
class FaultOutcome:
    fault_id: str
    catalog_id: str
    category: str
    mechanism: str
    inject_s: float
    revert_s: float
    incident_id: str | None
    a: int
    b: int
    b_strict: int
    c: int
    outcome: str
    detected_s: float | None
    located_s: float | None
    repaired_s: float | None
    alert_ids: tuple[str, ...]  # the alerts attributable to this fault
    resolved: int | None = 0  # located, repaired, no collateral charged to its incident; None: unknown


@dataclass(frozen=True)
class Median:
    median: float | None
    n: int


@dataclass(frozen=True)
class Scorecard:
    marathon_score: float
    corr: float
    loc: float
    loc_strict: float
    rep: float
    risk: float | None
    degradation: float
    degradation_level: float | None
    mttd_s: Median
    mttl_s: Median
    mttr_s: Median
    faults: int
    forbidden_attempts: int
    interventions: int
    interventions_out_of_scope: int
    model_calls: int
    tokens_in: int
    tokens_out: int
    cost_usd: float
    outcomes: tuple[FaultOutcome, ...]
    ambiguity_share: float | None = None  # of the attributable alerts, those attributable to several faults
    resolved: int | None = 0  # faults resolved; None when some fault's depends on an unknown collateral
    resolved_share: float | None = 0.0
    collateral: tuple[Difference, ...] | None = None  # None: the bundle has no snapshots to compare
    sandboxed: bool = True  # False: the agent ran without its sandbox, and could have read the answers


def median(values: Iterable[float]) -> Median:
    """The ceil(n/2)-th smallest value, always an observed one (no side effects)."""
    ordered = sorted(values)
    if not ordered:
        return Median(None, 0)
    return Median(ordered[math.ceil(len(ordered) / 2) - 1], len(ordered))


def degradation(samples: Sequence[ServiceSample]) -> float:
    """Trapezoidal integral of min(1, e + l) * q over the recorded instants (no side effects).

    Several samples at one instant are reduced to the last one recorded.
    """
    by_time: dict[float, float] = {}
    for sample in samples:
        by_time[sample.t] = min(1.0, sample.e + sample.l) * sample.q
    points = sorted(by_time.items())
    return math.fsum(
        (t1 - t0) * (y0 + y1) / 2 for (t0, y0), (t1, y1) in zip(points, points[1:], strict=False)
    )


def cost_usd(calls: Iterable[ModelCall], prices: dict[str, Price]) -> float:
    """Dollars for the metered calls; a ``*`` entry prices models the table does not name."""
    total: list[float] = []
    for call in calls:
        price = prices.get(call.model, prices.get("*"))
        if price is None:
            raise BundleError(f"run_manifest.price_table has no entry for model {call.model!r} (nor '*')")
        total.append(
            call.tokens_in * price.input_usd_per_mtok / 1e6
            + call.tokens_out * price.output_usd_per_mtok / 1e6
        )
    return math.fsum(total)


def rolls_back_decoy(intervention: Intervention, bundle: Bundle) -> bool:
    """Whether the intervention rolls back a service whose latest change by the benchmark before it was a
    decoy of the schedule, not a code or config fault (docs/metrics.md, "Decoys"). No side effects."""
    if intervention.tool != "rollback_service":
        return False
    for target in intervention.targets:
        service = normalise_name(target)
        decoys = [d.t for d in bundle.decoys if d.target == service and d.t <= intervention.t]
        faults = [
            f.inject_s
            for f in bundle.injected
            if f.target == service and f.mechanism in ("code", "config") and f.inject_s <= intervention.t
        ]
        if decoys and max(decoys) > max(faults, default=-math.inf):
            return True
    return False


def out_of_scope(
    intervention: Intervention,
    reports: dict[str, IncidentReport],
    attribution: Attribution,
    scopes: dict[str, frozenset[str]],
) -> bool:
    """Whether an intervention's targets fall outside the scope of the incident it references."""
    report = reports.get(intervention.incident_id) if intervention.incident_id is not None else None
    if report is None or not intervention.targets:
        return True
    scope: set[str] = set()
    for fault_id in attribution.counted_in(report):
        scope |= scopes[fault_id]
    return any(normalise_name(target) not in scope for target in intervention.targets)


def _check_baseline(bundle: Bundle, baseline: Bundle) -> None:
    ours, theirs = bundle.manifest, baseline.manifest
    for field in ("app", "seed"):
        if getattr(ours, field) != getattr(theirs, field):
            raise ConfigError(
                f"{baseline.path}: run_manifest.{field} = {getattr(theirs, field)!r}, but the scored run has "
                f"{getattr(ours, field)!r}; the no-action baseline must share app and schedule seed"
            )


def score_bundle(bundle: Bundle, baseline: Bundle | None = None) -> Scorecard:
    """Every docs/metrics.md figure for ``bundle``; ``baseline`` is a no-action run of the same setup."""
    faults = scored_faults(bundle)
    attribution = attribute(latest_alerts(bundle.alerts), faults)
    final = latest_reports(bundle.incident_reports)
    history: dict[str, list[IncidentReport]] = {}
    for report in sorted(bundle.incident_reports, key=lambda r: r.t):
        history.setdefault(report.incident_id, []).append(report)
    repaired = {
        fault.fault_id: repair_confirmed_at(
            fault, interventions=bundle.interventions, probes=bundle.probes, artifacts=bundle.artifacts
        )
        for fault in faults
    }
    edges: dict[tuple[str, str], int] = {}
    by_id = {fault.fault_id: fault for fault in faults}
    for incident_id, report in final.items():
        for fault_id in sorted(attribution.counted_in(report)):
            b = int(first_diagnosis(history[incident_id], by_id[fault_id], strict=False) is not None)
            edges[fault_id, incident_id] = 1 + b + b * int(repaired[fault_id] is not None)
    matching = match_faults([fault.fault_id for fault in faults], edges)
    differences = collateral(bundle, faults)
    outcomes = tuple(
        _fault_outcome(
            fault,
            matching.get(fault.fault_id),
            bundle,
            history,
            attribution,
            repaired[fault.fault_id],
            differences,
        )
        for fault in faults
    )
    return _assemble(bundle, baseline, faults, outcomes, final, attribution, differences)


def _fault_outcome(
    fault: Fault,
    incident_id: str | None,
    bundle: Bundle,
    history: dict[str, list[IncidentReport]],
    attribution: Attribution,
    repaired_at: float | None,
    differences: Sequence[Difference] | None,
) -> FaultOutcome:
    reports = history.get(incident_id, []) if incident_id is not None else []
    detected = first_detection(reports, fault, attribution)
    located = first_diagnosis(reports, fault, strict=False)
    strict = first_diagnosis(reports, fault, strict=True)
    a, b, c = int(incident_id is not None), int(located is not None), int(repaired_at is not None)
    return FaultOutcome(
        fault_id=fault.fault_id,
        catalog_id=fault.catalog_id,
        category=fault.category,
        mechanism=fault.mechanism,
        inject_s=fault.inject_s,
        revert_s=fault.revert_s,
        incident_id=incident_id,
        a=a,
        b=b,
        b_strict=int(strict is not None),
        c=c,
        outcome=outcome(a=a, b=b, c=c, acted=acted_on(bundle.interventions, fault)),
        detected_s=None if detected is None else detected - fault.inject_s,
        located_s=None if located is None else located - fault.inject_s,
        repaired_s=None if repaired_at is None else repaired_at - fault.inject_s,
        alert_ids=attribution.alerts_of(fault.fault_id),
        resolved=is_resolved(b=b, c=c, incident_id=incident_id, differences=differences),
    )


def _assemble(
    bundle: Bundle,
    baseline: Bundle | None,
    faults: Sequence[Fault],
    outcomes: Sequence[FaultOutcome],
    final: dict[str, IncidentReport],
    attribution: Attribution,
    differences: tuple[Difference, ...] | None,
) -> Scorecard:
    count = len(faults)
    scopes = {fault.fault_id: fault.scope for fault in faults}
    n_forb = len(bundle.forbidden)
    n_exec = len(bundle.interventions)
    n_out = sum(
        out_of_scope(i, final, attribution, scopes) or rolls_back_decoy(i, bundle)
        for i in bundle.interventions
    )
    units = sum(o.a + o.a * o.b + o.a * o.b * o.c for o in outcomes)
    penalty = 0.5 if n_forb else 1.0
    d_agent = degradation(bundle.service)
    level: float | None = None
    if baseline is not None:
        _check_baseline(bundle, baseline)
        d_none = degradation(baseline.service)
        level = 100.0 * d_agent / d_none if d_none > 0 else None

    def share(values: Iterable[int]) -> float:
        return sum(values) / count if count else 0.0

    resolved = [o.resolved for o in outcomes]
    known = [r for r in resolved if r is not None]
    resolved_n = sum(known) if len(known) == len(resolved) else None

    return Scorecard(
        marathon_score=100.0 * penalty * units / (3 * count) if count else 0.0,
        corr=share(o.a for o in outcomes),
        loc=share(o.b for o in outcomes),
        loc_strict=share(o.b_strict for o in outcomes),
        rep=share(o.c for o in outcomes),
        risk=(n_out + n_forb) / (n_exec + n_forb) if n_exec + n_forb else None,
        degradation=d_agent,
        degradation_level=level,
        mttd_s=median(o.detected_s for o in outcomes if o.detected_s is not None),
        mttl_s=median(o.located_s for o in outcomes if o.located_s is not None),
        mttr_s=median(o.repaired_s for o in outcomes if o.repaired_s is not None),
        faults=count,
        forbidden_attempts=n_forb,
        interventions=n_exec,
        interventions_out_of_scope=n_out,
        model_calls=len(bundle.model_calls),
        tokens_in=sum(call.tokens_in for call in bundle.model_calls),
        tokens_out=sum(call.tokens_out for call in bundle.model_calls),
        cost_usd=cost_usd(bundle.model_calls, bundle.manifest.price_table),
        outcomes=tuple(outcomes),
        ambiguity_share=attribution.ambiguity_share(),
        resolved=resolved_n,
        resolved_share=None if resolved_n is None else share(known),
        collateral=differences,
        sandboxed=bundle.manifest.sandboxed,
    )


def _r3(value: float | None) -> float | None:
    return None if value is None else round(value, 3) + 0.0  # + 0.0 turns -0.0 into 0.0


def scorecard_json(card: Scorecard) -> str:
    """The docs/metrics.md ``--json`` document: exactly its keys, 3-decimal floats, the score to 1 decimal."""
    document: dict[str, Any] = {
        "marathon_score": round(card.marathon_score, 1) + 0.0,
        "corr": _r3(card.corr),
        "loc": _r3(card.loc),
        "loc_strict": _r3(card.loc_strict),
        "rep": _r3(card.rep),
        "risk": _r3(card.risk),
        "degradation_level": _r3(card.degradation_level),
    }
    for key in ("mttd_s", "mttl_s", "mttr_s"):
        value: Median = getattr(card, key)
        document[key] = {"median": _r3(value.median), "n": value.n}
    for key in ("faults", "forbidden_attempts", "interventions"):
        document[key] = getattr(card, key)
    document["ambiguity_share"] = _r3(card.ambiguity_share)
    document["resolved"] = {"n": card.resolved, "share": _r3(card.resolved_share)}
    document["collateral"] = (
        None
        if card.collateral is None
        else [
            {
                "workload": d.workload,
                "field": d.field,
                "start": d.start,
                "end": d.end,
                "incidents": list(d.incidents),
            }
            for d in card.collateral
        ]
    )
    for key in ("model_calls", "tokens_in", "tokens_out"):
        document[key] = getattr(card, key)
    document["cost_usd"] = _r3(card.cost_usd)
    if not card.sandboxed:
        document["sandboxed"] = False  # only said when false, so a sandboxed run's document is unchanged
    document["outcomes"] = [
        {
            "id": o.fault_id,
            "catalog_id": o.catalog_id,
            "category": o.category,
            "mechanism": o.mechanism,
            "a": o.a,
            "b": o.b,
            "c": o.c,
            "resolved": o.resolved,
            "outcome": o.outcome,
        }
        for o in card.outcomes
    ]
    return json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
