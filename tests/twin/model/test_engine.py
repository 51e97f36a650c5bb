"""The application model stepping over hand-built cluster states: traffic, propagation, logs, flags."""

from __future__ import annotations

import json

from orchestrator.catalog.faults import CodeFault
from orchestrator.catalog.loading import load_catalog
from orchestrator.catalog.topologies import load_topology
from orchestrator.twin.model.registry import ImageRegistry
from tests.twin.model.worlds import (
    chaos,
    container,
    manifests,
    model,
    pod_of,
    run,
    running_pods,
    server_counts,
    set_env,
)

OB = "online-boutique"
TOPOLOGY = load_topology(OB)
CHECKOUT = "POST /cart/checkout"


def _mean_ms(built: object, service: str, span: str) -> float:
    total = count = 0.0
    for (svc, name, kind, _status), n, ms, _b in built.spans.export():  # type: ignore[attr-defined]
        if svc == service and name == span and kind == "SPAN_KIND_SERVER":
            total, count = total + ms, count + n
    return total / count


def test_a_healthy_shop_serves_its_request_rate_without_errors() -> None:
    built, _book = model(OB)
    start = run(built, TOPOLOGY, manifests(OB), start=0.0, seconds=60.0)  # past every service's startup
    ok_before, errors_before = server_counts(built, "frontend")
    run(built, TOPOLOGY, manifests(OB), start=start, seconds=300.0)
    ok, errors = server_counts(built, "frontend")
    assert errors == errors_before
    assert 0.6 * 13 * 300 < ok - ok_before < 1.4 * 13 * 300


def test_a_wrong_redis_port_fails_checkout_and_the_cart_logs_the_redis_client_error() -> None:
    docs = manifests(OB)
    pods = running_pods(docs)
    set_env(pod_of(pods, "cartservice"), "REDIS_ADDR", "redis-cart:6380")
    built, book = model(OB)
    run(built, TOPOLOGY, docs, start=0.0, seconds=300.0, pods=pods)
    ok, errors = server_counts(built, "frontend", CHECKOUT)
    assert errors / (ok + errors) > 0.9
    lines = book.lines(namespace=OB, pod=pod_of(pods, "cartservice")["metadata"]["name"], container="server")
    assert lines and any(
        "It was not possible to connect to the redis server(s)" in line for _t, line in lines
    )
    frontend = book.lines(namespace=OB, pod=pod_of(pods, "frontend")["metadata"]["name"], container="server")
    assert frontend and any("could not retrieve cart: rpc error: code = " in line for _t, line in frontend)


def test_a_network_delay_on_the_catalog_slows_the_home_page_by_the_delay() -> None:
    docs = manifests(OB)
    calm, _ = model(OB)
    run(calm, TOPOLOGY, docs, start=0.0, seconds=120.0)
    delayed, _ = model(OB)
    spec = {
        "action": "delay",
        "mode": "all",
        "delay": {"latency": "500ms"},
        "selector": {"labelSelectors": {"app": "productcatalogservice"}},
    }
    run(delayed, TOPOLOGY, docs, start=0.0, seconds=120.0, chaos_objects=[chaos("NetworkChaos", "d", spec)])
    assert _mean_ms(delayed, "frontend", "GET /") - _mean_ms(calm, "frontend", "GET /") > 400


def test_a_cpu_limit_far_too_low_makes_the_service_slow() -> None:
    docs = manifests(OB)
    pods = running_pods(docs)
    container(pod_of(pods, "productcatalogservice"))["resources"]["limits"]["cpu"] = "5m"
    slow, _ = model(OB)
    run(slow, TOPOLOGY, docs, start=0.0, seconds=120.0, pods=pods)
    calm, _ = model(OB)
    run(calm, TOPOLOGY, docs, start=0.0, seconds=120.0)
    assert _mean_ms(slow, "frontend", "GET /") > 2 * _mean_ms(calm, "frontend", "GET /")


def test_a_code_fault_build_fails_its_ops_and_logs_its_catalog_message() -> None:
    faults = [
        e for e in load_catalog(OB).entries if isinstance(e, CodeFault) and e.inject.behaviour.error_ratio
    ]
    fault = next(f for f in faults if f.target == "paymentservice")
    docs = manifests(OB)
    pods = running_pods(docs)
    pod = pod_of(pods, "paymentservice")
    container(pod)["image"] = container(pod)["image"].rsplit(":", 1)[0] + ":" + fault.inject.image_tag
    built, book = model(OB, registry=ImageRegistry(TOPOLOGY, faults))
    run(built, TOPOLOGY, docs, start=0.0, seconds=300.0, pods=pods)
    ok, errors = server_counts(built, "paymentservice")
    assert abs(errors / (ok + errors) - fault.inject.behaviour.error_ratio) < 0.2
    lines = book.lines(namespace=OB, pod=pod["metadata"]["name"], container="server") or []
    assert any(fault.log.message in line for _t, line in lines)


def test_the_same_seed_gives_the_same_spans_and_another_seed_other_ones() -> None:
    exports = []
    for seed in (5, 5, 6):
        built, _ = model(OB, seed=seed)
        run(built, TOPOLOGY, manifests(OB), start=0.0, seconds=120.0)
        exports.append(built.spans.export())
    assert exports[0] == exports[1]
    assert exports[0] != exports[2]


def test_a_feature_flag_turned_on_in_the_flag_configmap_fails_payments() -> None:
    app = "astronomy-shop"
    topology = load_topology(app)
    docs = manifests(app)
    healthy, _ = model(app)
    run(healthy, topology, docs, start=0.0, seconds=120.0)
    assert server_counts(healthy, "payment")[1] == 0
    flags = next(d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"].endswith("-config"))
    key = next(iter(flags["data"]))
    document = json.loads(flags["data"][key])
    document["flags"]["paymentFailure"]["defaultVariant"] = "100%"
    flags["data"][key] = json.dumps(document)
    failing, _ = model(app)
    run(failing, topology, docs, start=0.0, seconds=120.0)
    ok, errors = server_counts(failing, "payment")
    assert errors > 0 and ok == 0
