"""A step keeps the reach answers of the step before that nothing they are worked out from has changed for: at
every step of a history of restarts, readiness, labels, addresses and deletions, every answer the model holds
is the one worked out afresh."""

from __future__ import annotations

import copy
from collections.abc import Callable

from orchestrator.catalog.topologies import load_topology
from orchestrator.twin.model.engine import LOADGEN_CALLER
from orchestrator.twin.model.state import Obj
from orchestrator.twin.model.traffic import PodCtx
from tests.twin.model.worlds import container, manifests, model, pod_of, running_pods, set_env, world

OB = "online-boutique"
TOPOLOGY = load_topology(OB)


def _restart(pod: Obj, at: str) -> None:
    for status in pod["status"]["containerStatuses"]:
        status["state"] = {"running": {"startedAt": at}}
        status["restartCount"] = status.get("restartCount", 0) + 1


def _ready(pod: Obj, ready: bool) -> None:
    pod["status"]["conditions"] = [{"type": "Ready", "status": "True" if ready else "False"}]


def test_reach_answers_kept_from_step_to_step_are_those_worked_out_afresh() -> None:
    built, _book = model(OB)
    docs = manifests(OB)
    pods = running_pods(docs)
    names = ("cartservice", "redis-cart", "checkoutservice", "currencyservice")
    cart, redis, checkout, currency = (pod_of(pods, name) for name in names)
    # The cart's Service selects one label more than its Deployment: a pod without it is owned but not served.
    front = next(d for d in docs if d["kind"] == "Service" and d["metadata"]["name"] == "cartservice")
    front["spec"]["selector"] = {**front["spec"]["selector"], "track": "stable"}
    cart["metadata"]["labels"]["track"] = "stable"
    changes: list[Callable[[], None]] = [
        lambda: None,
        lambda: _restart(cart, "2026-01-01T00:01:00Z"),  # a new status, still ready
        lambda: _ready(cart, False),
        lambda: _restart(cart, "2026-01-01T00:02:00Z"),  # a new status, still unready
        lambda: _ready(cart, True),
        lambda: redis["metadata"]["labels"].update(app="elsewhere"),
        lambda: redis["metadata"]["labels"].update(app="redis-cart"),
        lambda: cart["metadata"]["labels"].update(track="canary"),
        lambda: cart["metadata"]["labels"].update(track="stable"),
        lambda: set_env(checkout, "CART_SERVICE_ADDR", "nowhere:7070"),
        lambda: set_env(checkout, "CART_SERVICE_ADDR", "currencyservice:7000"),  # another Service's address
        lambda: _ready(currency, False),
        lambda: _ready(currency, True),
        lambda: set_env(checkout, "CART_SERVICE_ADDR", "cartservice:7070"),
        lambda: container(redis)["ports"].clear(),
        lambda: cart["metadata"].update(deletionTimestamp="2026-01-01T00:05:00Z"),
        lambda: None,
    ]
    now = 60.0
    checked = 0
    for change in changes:
        change()
        now += built.step_seconds
        shot = world(TOPOLOGY, docs, now=now, pods=copy.deepcopy(pods))
        built.step(now, shot)
        views = {view.name: view for view in shot.all_pods()}
        fresh = built._reach_fn(shot)
        for (caller, pod, callee), kept in built._reach_memo.items():
            service = built.services.get(caller, LOADGEN_CALLER)
            ctx = PodCtx(view=views[pod], service=service, build=None) if pod else None
            assert kept == fresh(service, ctx, callee), (now, caller, pod, callee)
            checked += 1
    assert checked > 50
