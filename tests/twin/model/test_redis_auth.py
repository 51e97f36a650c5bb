"""A Redis server's own authentication settings against what its client presents (Online Boutique's cart)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from orchestrator.catalog.topologies import load_topology
from orchestrator.twin.model import chaos as chaos_effects
from orchestrator.twin.model import messages, redis_auth
from orchestrator.twin.model.symptoms import Reach, TopologyIndex, reach
from tests.twin.model.worlds import container, manifests, model, pod_of, run, running_pods, set_env, world

OB = "online-boutique"
TOPOLOGY = load_topology(OB)
INDEX = TopologyIndex(TOPOLOGY)
CART_SPAN = "HGET"


def _redis_args(pods: list[dict[str, Any]], args: list[str] | None) -> None:
    spec = container(pod_of(pods, "redis-cart"))
    if args is None:
        spec.pop("args", None)
    else:
        spec["args"] = args


def _reach(pods: list[dict[str, Any]]) -> Reach:
    shot = world(TOPOLOGY, manifests(OB), now=10.0, pods=pods)
    return reach(
        index=INDEX,
        shot=shot,
        effects=chaos_effects.effects(shot),
        caller=TOPOLOGY.service("cartservice"),
        caller_pod=shot.pods["cartservice"][0],
        callee="redis-cart",
    )


@pytest.mark.parametrize(
    ("args", "address", "cause", "reply"),
    [
        (None, "redis-cart:6379", None, None),
        (["--requirepass", "cart-7Hq2"], "redis-cart:6379", "auth_failed", "redis-noauth"),
        (["--requirepass", "cart-7Hq2"], "redis-cart:6379,password=cart-7Hq2", None, None),
        (["--requirepass", "cart-7Hq2"], "redis-cart:6379,password=other", "auth_failed", "redis"),
        (["--requirepass", ""], "redis-cart:6379", None, None),
        (["--user", "default", "off"], "redis-cart:6379", "auth_failed", "redis-noauth"),
        (
            ["--user", "default", "off", "--user", "cartservice", "on", ">cart-7Hq2", "~*", "+@all"],
            "redis-cart:6379,user=cartservice,password=cart-7Hq2",
            None,
            None,
        ),
        (
            ["--user", "cartservice", "on", ">cart-7Hq2"],
            "redis-cart:6379,user=cartservice,password=x",
            "auth_failed",
            "redis",
        ),
        (["--requirepass", "cart-7Hq2", "--user", "default", "on", "nopass"], "redis-cart:6379", None, None),
        # The twin's client-side cases keep their replies: the server requires nothing.
        (None, "redis-cart:6379,password=cart-7Hq2", "auth_failed", "redis-password"),
        (None, "redis-cart:6379,user=cartservice,password=cart-7Hq2", "auth_failed", "redis"),
    ],
)
def test_the_servers_settings_decide_whether_the_client_logs_in(
    args: list[str] | None, address: str, cause: str | None, reply: str | None
) -> None:
    pods = running_pods(manifests(OB))
    _redis_args(pods, args)
    set_env(pod_of(pods, "cartservice"), "REDIS_ADDR", address)
    found = _reach(pods)
    assert (found.cause, found.auth_reply) == (cause, reply)


def test_the_command_line_is_read_the_way_the_server_reads_it() -> None:
    argv = ("redis-server", "/etc/redis.conf", "--requirepass", "a", "--save", "", "--requirepass", "b")
    assert redis_auth.directives(argv) == [("requirepass", ("a",)), ("save", ("",)), ("requirepass", ("b",))]
    users = redis_auth.server_users(argv)
    assert users["default"] == redis_auth.User(enabled=True, nopass=False, passwords=frozenset({"b"}))


def test_valkey_appends_its_extra_flags_from_the_environment() -> None:
    shot = world(load_topology("astronomy-shop"), manifests("astronomy-shop"), now=10.0)
    spec = shot.pods["valkey-cart"][0].containers[0]
    assert redis_auth.server_argv(spec, "valkey") == (*spec.command, *spec.args)
    flagged = dataclasses.replace(spec, env={**spec.env, "VALKEY_EXTRA_FLAGS": "--requirepass x"})
    assert redis_auth.server_argv(flagged, "valkey")[-2:] == ("--requirepass", "x")
    assert redis_auth.server_argv(flagged, "redis") == (*spec.command, *spec.args)


def test_the_cart_client_logs_the_noauth_reply_in_its_own_words() -> None:
    fill = messages.Fill(addr="redis-cart:6379")
    dotnet = messages.render(
        "dotnet", "auth_failed", fill, datastore_kind="redis", auth_variant="redis-noauth"
    )
    assert dotnet.endswith("(RedisServerException) NOAUTH Returned - connection has not yet authenticated")
    go = messages.render(
        "go", "auth_failed", messages.Fill(datastore="redis-cart"), auth_variant="redis-noauth"
    )
    assert go == "failed to authenticate to redis-cart: NOAUTH Authentication required."


def _cart_client_errors(built: Any) -> tuple[float, float]:
    ok = error = 0.0
    for (svc, name, kind, status), count, _total, _buckets in built.spans.export():
        if svc == "cartservice" and name == CART_SPAN and kind == "SPAN_KIND_CLIENT":
            if status == "STATUS_CODE_ERROR":
                error += count
            else:
                ok += count
    return ok, error


def test_a_password_required_by_redis_fails_the_cart_until_it_is_taken_back() -> None:
    docs = manifests(OB)
    pods = running_pods(docs)
    cart_pod = pod_of(pods, "cartservice")["metadata"]["name"]
    built, book = model(OB)
    now = run(built, TOPOLOGY, docs, start=0.0, seconds=60.0, pods=pods)
    ok0, err0 = _cart_client_errors(built)
    assert ok0 > 0 and err0 == 0

    _redis_args(pods, ["--requirepass", "cart-7Hq2"])
    now = run(built, TOPOLOGY, docs, start=now, seconds=120.0, pods=pods)
    ok1, err1 = _cart_client_errors(built)
    assert ok1 == ok0 and err1 > 0
    lines = [line for _t, line in book.lines(namespace=OB, pod=cart_pod, container="server") or []]
    assert any("NOAUTH Returned - connection has not yet authenticated" in line for line in lines)

    _redis_args(pods, None)
    run(built, TOPOLOGY, docs, start=now, seconds=120.0, pods=pods)
    ok2, err2 = _cart_client_errors(built)
    assert ok2 > ok1 and err2 == err1
