from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from orchestrator.catalog.apps import REPOSITORY_ROOT, app_names
from orchestrator.catalog.topologies import load_topology, request_rates
from orchestrator.catalog.topology import ServiceKind, Topology, affected_scope, parse_address
from orchestrator.errors import CatalogError


@pytest.fixture(scope="module", params=app_names())
def topology(request: pytest.FixtureRequest) -> Topology:
    return load_topology(request.param)


def _mib(quantity: str) -> float:
    units = {"Mi": 1.0, "Gi": 1024.0}
    return float(quantity[:-2]) * units[quantity[-2:]]


def _millicores(quantity: str) -> float:
    return float(quantity[:-1]) if quantity.endswith("m") else float(quantity) * 1000


def test_every_app_loads_with_its_namespace_and_version() -> None:
    expected = {
        "online-boutique": ("online-boutique", "v0.10.6", 12),
        "train-ticket": ("train-ticket", "v1.0.0", 50),
        "astronomy-shop": ("astronomy-shop", "2.2.0", 22),
    }
    for app, (namespace, version, count) in expected.items():
        loaded = load_topology(app)
        assert (loaded.app, loaded.namespace, loaded.version, len(loaded.services)) == (
            app,
            namespace,
            version,
            count,
        )


def test_upstream_deployment_names_are_kept() -> None:
    names = {app: set(load_topology(app).service_names) for app in app_names()}
    assert {"cartservice", "redis-cart", "frontend", "loadgenerator"} <= names["online-boutique"]
    train_ticket = {"ts-order-service", "ts-gateway-service", "ts-ui-dashboard", "tsdb-mysql", "nacos"}
    assert train_ticket | {"rabbitmq", "nacosdb-mysql"} <= names["train-ticket"]
    assert {"frontend-proxy", "valkey-cart", "kafka", "postgresql", "flagd"} <= names["astronomy-shop"]


def test_train_ticket_has_forty_one_java_services() -> None:
    loaded = load_topology("train-ticket")
    java = [s for s in loaded.services if s.language == "Java" and s.name.startswith("ts-")]
    assert len(java) == 41


def test_every_datastore_and_queue_names_its_kind(topology: Topology) -> None:
    for service in topology.services:
        stateful = service.kind in (ServiceKind.DATASTORE, ServiceKind.QUEUE)
        assert (service.datastore_kind is not None) == stateful, service.name


def test_loading_twice_gives_the_cached_object() -> None:
    assert load_topology("train-ticket") is load_topology("train-ticket")


def test_online_boutique_scopes_follow_the_call_graph() -> None:
    ob = load_topology("online-boutique")
    assert affected_scope(ob, "redis-cart") == {"redis-cart", "cartservice", "frontend", "checkoutservice"}
    assert affected_scope(ob, "adservice") == {"adservice", "frontend"}
    assert affected_scope(ob, "frontend") == {"frontend"}
    assert affected_scope(ob, "emailservice") == {"emailservice", "checkoutservice", "frontend"}


def test_the_load_generator_is_never_in_scope(topology: Topology) -> None:
    for name in topology.service_names:
        scope = affected_scope(topology, name)
        assert not any(topology.service(member).kind is ServiceKind.LOADGEN for member in scope)


def test_a_train_ticket_datastore_reaches_its_users_and_their_callers_up_to_the_ui() -> None:
    tt = load_topology("train-ticket")
    scope = affected_scope(tt, "tsdb-mysql")
    assert {"ts-order-service", "ts-station-service", "ts-auth-service", "ts-contacts-service"} <= scope
    assert {"ts-preserve-service", "ts-seat-service", "ts-travel-service", "ts-basic-service"} <= scope
    assert {"ts-gateway-service", "ts-ui-dashboard"} <= scope
    # Services that never touch the database nor call one that does stay out.
    assert "ts-news-service" not in scope
    assert "ts-verification-code-service" not in scope


def test_a_train_ticket_consumer_is_not_a_caller_of_the_booking_chain() -> None:
    tt = load_topology("train-ticket")
    assert affected_scope(tt, "ts-notification-service") == {"ts-notification-service"}
    assert "ts-notification-service" in affected_scope(tt, "rabbitmq")
    assert "ts-preserve-service" in affected_scope(tt, "rabbitmq")


def test_kafka_reaches_its_producer_and_consumers_but_consumers_do_not_reach_the_producer() -> None:
    shop = load_topology("astronomy-shop")
    kafka_scope = affected_scope(shop, "kafka")
    assert {"kafka", "checkout", "accounting", "fraud-detection", "frontend", "frontend-proxy"} == kafka_scope
    assert affected_scope(shop, "accounting") == {"accounting"}
    assert affected_scope(shop, "fraud-detection") == {"fraud-detection"}
    assert "accounting" not in affected_scope(shop, "checkout")


def test_astronomy_shop_postgresql_reaches_readers_and_the_accounting_writer() -> None:
    shop = load_topology("astronomy-shop")
    scope = affected_scope(shop, "postgresql")
    assert {"product-catalog", "product-reviews", "accounting", "recommendation", "checkout"} <= scope
    assert "cart" not in scope


def test_an_unknown_target_raises_key_error(topology: Topology) -> None:
    with pytest.raises(KeyError):
        affected_scope(topology, "no-such-service")


def test_astronomy_shop_flags_name_existing_services_and_default_to_off() -> None:
    shop = load_topology("astronomy-shop")
    assert shop.feature_flag_service == "flagd"
    flags = {flag.name: flag for flag in shop.feature_flags}
    assert {"adFailure", "cartFailure", "paymentFailure", "kafkaQueueProblems"} <= set(flags)
    assert len(flags) == 15
    assert flags["paymentFailure"].service == "payment"
    assert flags["paymentFailure"].variants["90%"] == 0.95
    assert all(flag.default_variant == "off" for flag in shop.feature_flags)


def test_astronomy_shop_runs_in_its_active_site() -> None:
    shop = load_topology("astronomy-shop")
    roles = {site.name: (site.zone, site.role) for site in shop.sites}
    assert roles == {"primary": ("zone-a", "active"), "standby": ("zone-b", "standby")}
    assert {service.site for service in shop.services} == {"primary"}


def test_four_workers_span_two_zones(topology: Topology) -> None:
    zones = sorted(node.zone for node in topology.nodes)
    assert zones == ["zone-a", "zone-a", "zone-b", "zone-b"]
    assert topology.nodes[0].name == "marathon-worker"


def test_address_env_points_at_services_of_the_app(topology: Topology) -> None:
    ob = load_topology("online-boutique")
    assert ob.address_targets("cartservice") == {"REDIS_ADDR": "redis-cart"}
    for service in topology.services:
        assert set(topology.address_targets(service.name)) == set(service.address_env)


def test_train_ticket_services_carry_their_database_credentials() -> None:
    tt = load_topology("train-ticket")
    order = tt.service("ts-order-service")
    assert order.credential_env == {"ORDER_MYSQL_USER": "ts", "ORDER_MYSQL_PASSWORD": "Ts_123456"}
    assert tt.address_targets("ts-order-service")["ORDER_MYSQL_HOST"] == "tsdb-mysql"
    assert tt.service("tsdb-mysql").credential_env == {"MYSQL_USER": "ts", "MYSQL_PASSWORD": "Ts_123456"}


def test_addresses_of_every_written_form_are_parsed() -> None:
    assert parse_address("redis-cart:6379") == parse_address("redis-cart:6379")
    cases = {
        "redis-cart:6379": ("redis-cart", 6379),
        "flagd": ("flagd", None),
        "http://shipping:8080": ("shipping", 8080),
        "postgres://otelu:otelp@postgresql/otel?sslmode=disable": ("postgresql", None),
        "host=postgresql user=otelu password=otelp dbname=otel": ("postgresql", None),
        "Host=postgresql;Username=otelu;Password=otelp;Database=otel": ("postgresql", None),
        "nacos-0.nacos-headless.train-ticket.svc.cluster.local:8848": ("nacos-0", 8848),
    }
    for value, (host, port) in cases.items():
        address = parse_address(value)
        assert address is not None and (address.host, address.port) == (host, port), value
    assert parse_address("http://$(OTEL_COLLECTOR_NAME):4317") is None
    assert parse_address(":8080") is None


def test_steady_memory_stays_below_every_limit(topology: Topology) -> None:
    rates = request_rates(topology)
    for service in topology.services:
        limit = service.resources.limits.memory
        if limit is None:
            continue
        steady = service.model.memory_base_mib + service.model.memory_per_rps_mib * rates[service.name]
        assert steady < 0.9 * _mib(limit), service.name


def test_steady_cpu_stays_below_every_limit(topology: Topology) -> None:
    rates = request_rates(topology)
    for service in topology.services:
        limit = service.resources.limits.cpu
        if limit is None:
            continue
        assert service.model.cpu_ms_per_request * rates[service.name] < 0.5 * _millicores(limit), service.name


def test_request_rates_split_the_entry_rate_over_the_routes() -> None:
    ob = load_topology("online-boutique")
    rates = request_rates(ob)
    assert rates["frontend"] == pytest.approx(13.0)
    # Only POST /cart/checkout (weight 1 of 28) reaches the checkout service, once per request.
    assert rates["checkoutservice"] == pytest.approx(13.0 / 28)
    assert rates["loadgenerator"] == 0.0


def test_jvm_services_are_modelled_heavier_than_go_services() -> None:
    ob = load_topology("online-boutique")
    java, go = ob.service("adservice").model, ob.service("productcatalogservice").model
    assert java.memory_base_mib > go.memory_base_mib
    assert java.startup_s > go.startup_s


def _copy_app(tmp_path: Path, app: str) -> Path:
    target = tmp_path / "manifests" / app
    target.mkdir(parents=True)
    shutil.copy(REPOSITORY_ROOT / "manifests" / app / "topology.yaml", target / "topology.yaml")
    return target / "topology.yaml"


def test_an_unknown_app_names_the_known_apps() -> None:
    with pytest.raises(CatalogError) as caught:
        load_topology("sock-shop")
    assert "sock-shop" in str(caught.value)
    assert "online-boutique" in str(caught.value) and "train-ticket" in str(caught.value)


def test_a_route_calling_an_unknown_service_names_file_line_and_value(tmp_path: Path) -> None:
    path = _copy_app(tmp_path, "online-boutique")
    lines = path.read_text().splitlines()
    index = next(i for i, line in enumerate(lines) if "to: emailservice" in line)
    lines[index] = lines[index].replace("to: emailservice", "to: mailservice")
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(CatalogError) as caught:
        load_topology("online-boutique", root=tmp_path)
    [problem] = caught.value.problems
    assert problem.file == str(path)
    assert problem.line == index + 1
    assert problem.value == "'mailservice'"
    assert problem.field.startswith("routes.") and problem.field.endswith(".to")


def test_a_call_context_for_a_call_the_service_never_makes_names_its_line(tmp_path: Path) -> None:
    path = _copy_app(tmp_path, "online-boutique")
    lines = path.read_text().splitlines()
    index = next(i for i, line in enumerate(lines) if "hipstershop.PaymentService/Charge: " in line)
    lines[index] = lines[index].replace("PaymentService/Charge", "PaymentService/Refund")
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(CatalogError) as caught:
        load_topology("online-boutique", root=tmp_path)
    [problem] = caught.value.problems
    assert problem.line == index + 1
    assert problem.field.endswith(".call_context.hipstershop.PaymentService/Refund")
    assert problem.message == "checkoutservice makes no call 'hipstershop.PaymentService/Refund'"


def test_shape_problems_are_reported_before_reference_problems(tmp_path: Path) -> None:
    path = _copy_app(tmp_path, "online-boutique")
    text = path.read_text().replace('REDIS_ADDR: "redis-cart:6379"', 'REDIS_ADDR: "redis-cart:6380"')
    text = text.replace("requests_per_second: 13", "requests_per_second: -1")
    text = text.replace("replicas: 1\n", "replicas: many\n")
    path.write_text(text)
    with pytest.raises(CatalogError) as caught:
        load_topology("online-boutique", root=tmp_path)
    fields = {problem.field: problem for problem in caught.value.problems}
    assert set(fields) == {"requests_per_second", "services.11.replicas"}
    assert fields["services.11.replicas"].value == "'many'"


def test_an_address_with_a_port_the_service_lacks_names_its_line(tmp_path: Path) -> None:
    path = _copy_app(tmp_path, "online-boutique")
    text = path.read_text().replace('REDIS_ADDR: "redis-cart:6379"', 'REDIS_ADDR: "redis-cart:6380"')
    path.write_text(text)
    with pytest.raises(CatalogError) as caught:
        load_topology("online-boutique", root=tmp_path)
    [problem] = caught.value.problems
    assert problem.field.endswith("address_env.REDIS_ADDR")
    assert problem.value == "'redis-cart:6380'"
    assert "port 6380" in problem.message
    assert problem.line is not None and "6380" in text.splitlines()[problem.line - 1]


def test_an_edited_file_is_read_again(tmp_path: Path) -> None:
    path = _copy_app(tmp_path, "online-boutique")
    assert load_topology("online-boutique", root=tmp_path).requests_per_second == 13
    path.write_text(path.read_text().replace("requests_per_second: 13", "requests_per_second: 7"))
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    assert load_topology("online-boutique", root=tmp_path).requests_per_second == 7


def test_every_probe_checks_a_port_the_container_opens(topology: Topology) -> None:
    for service in topology.services:
        opened = {port.container_port for port in service.ports}
        for probe in (service.readiness, service.liveness):
            if probe is not None and probe.type != "exec":
                assert probe.port in opened, service.name


def test_a_flag_affecting_an_unknown_service_is_located(tmp_path: Path) -> None:
    path = _copy_app(tmp_path, "astronomy-shop")
    text = path.read_text().replace("also_affects: [kafka, fraud-detection]", "also_affects: [kafka, fraud]")
    path.write_text(text)
    with pytest.raises(CatalogError) as caught:
        load_topology("astronomy-shop", root=tmp_path)
    [problem] = caught.value.problems
    assert problem.field.startswith("feature_flags.") and problem.field.endswith(".also_affects.1")
    assert problem.value == "'fraud'"
    assert problem.line is not None and "fraud]" in text.splitlines()[problem.line - 1]


def test_a_topology_built_in_code_checks_its_references_too() -> None:
    data = load_topology("online-boutique").model_dump(mode="json")
    data["entry_point"] = "storefront"
    with pytest.raises(ValueError, match="entry_point 'storefront' is not a service"):
        Topology.model_validate(data)
