"""The admission verdict: every failed check named, the screening criteria that held, and each mechanism's
own checks."""

from __future__ import annotations

import functools

import pytest

from orchestrator.admission.judging import (
    NO_ALERT,
    breaks_startup,
    introduced_lines,
    judge,
    mechanism_failures,
)
from orchestrator.catalog.faults import CodeFault, ConfigFault, ConfigInject, Entry
from orchestrator.catalog.loading import Catalog, load_catalog
from tests.catalog.admission_support import measured as _measured

OB = "online-boutique"
FIRED = ("OnlineBoutiqueCartErrors",)


@functools.cache
def _catalog(app: str = OB) -> Catalog:
    return load_catalog(app)


def _entry(catalog_id: str = "ob-cart-redis-port") -> Entry:
    return _catalog().by_id[catalog_id]


def test_an_entry_whose_message_appears_with_server_errors_is_admitted_for_that_reason() -> None:
    admitted, reasons = judge(_entry(), _measured(), direct=True, alerts=FIRED)
    assert admitted
    assert reasons == ("server errors 12.0/min >= 4", "attributable alert(s): OnlineBoutiqueCartErrors")


def test_new_error_logs_count_only_above_the_before_window() -> None:
    found = _measured(server_errors_per_min=0.0, error_logs_per_min_before=5.0, error_logs_per_min_after=14.0)
    admitted, reasons = judge(_entry(), found, direct=True, alerts=())
    assert not admitted
    assert any("no screening criterion" in reason and "9.0/min" in reason for reason in reasons)
    more = found.model_copy(update={"error_logs_per_min_after": 15.0})
    admitted, reasons = judge(_entry(), more, direct=True, alerts=FIRED)
    assert admitted
    assert reasons == ("new error logs 10.0/min >= 10", "attributable alert(s): OnlineBoutiqueCartErrors")


def test_a_restart_alone_is_a_screening_criterion() -> None:
    admitted, reasons = judge(
        _entry(), _measured(server_errors_per_min=0.0, restarts=2), direct=True, alerts=()
    )
    assert not admitted and reasons == (NO_ALERT,)
    admitted, reasons = judge(
        _entry(),
        _measured(server_errors_per_min=0.0, restarts=2),
        direct=True,
        alerts=("KubePodCrashLooping",),
    )
    assert admitted and reasons == ("2 container restart(s)", "attributable alert(s): KubePodCrashLooping")


def test_an_entry_whose_symptom_shows_but_raises_no_alert_is_rejected() -> None:
    admitted, reasons = judge(_entry(), _measured(), direct=True, alerts=())
    assert not admitted
    assert reasons == ("no rule of the pack fired an alert attributable to it",)


def test_an_attributable_alert_alone_is_a_screening_criterion() -> None:
    quiet = _measured(server_errors_per_min=0.0, error_logs_per_min_after=0.0, restarts=0)
    admitted, reasons = judge(
        _entry(), quiet, direct=True, alerts=("ServiceLatencyP99High", "KubePodPending")
    )
    assert admitted
    assert reasons == ("attributable alert(s): KubePodPending, ServiceLatencyP99High",)


def test_an_entry_without_its_symptom_is_rejected_with_every_failed_check() -> None:
    nothing = _measured(message_after=False, message_source=None, server_errors_per_min=0.0)
    admitted, reasons = judge(_entry(), nothing, direct=True, alerts=())
    assert not admitted
    assert reasons[0].startswith("log message 'StackExchange.Redis.RedisConnectionException")
    assert reasons[0].endswith("in cartservice absent after injection")
    assert reasons[1].startswith("no screening criterion")
    assert reasons[2] == NO_ALERT


@pytest.mark.parametrize(
    ("change", "phrase"),
    [
        ({"message_before": True}, "already present before injection"),
        ({"entry_rate_after": 0.0}, "the app stopped serving"),
        ({"entry_failed_fraction_after": 1.0}, "the app stopped serving"),
        ({"deployed_value_ok": False}, "does not read back"),
        ({"became_ready": False}, "never became ready"),
        ({"restored": False}, "did not restore"),
        ({"ready_after_revert": False}, "ready after the revert"),
        ({"serving_after_revert": False}, "did not recover"),
        ({"message_after_revert": True}, "still printed after the revert"),
    ],
)
def test_each_failed_check_rejects_and_is_named(change: dict[str, object], phrase: str) -> None:
    admitted, reasons = judge(_entry(), _measured(**change), direct=True, alerts=FIRED)
    assert not admitted
    assert any(phrase in reason for reason in reasons), reasons


def test_a_message_of_a_service_that_does_not_call_the_target_directly_is_rejected() -> None:
    admitted, reasons = judge(_entry(), _measured(), direct=False, alerts=FIRED)
    assert not admitted and "direct caller" in reasons[0]


def test_readiness_is_not_asked_of_config_faults_that_mean_to_break_startup() -> None:
    catalog = _catalog()
    replicas = catalog.by_id["ob-checkout-replicas-zero"]
    assert isinstance(replicas, ConfigFault)
    missing_image = replicas.model_copy(
        update={"inject": ConfigInject(field="image", value="checkoutservice:v0.10.7")}
    )
    assert breaks_startup(missing_image)
    assert breaks_startup(replicas)
    assert breaks_startup(catalog.by_id["ob-recommendation-catalog-addr-cleared"])
    assert breaks_startup(catalog.by_id["ob-shipping-liveness-port"])
    assert not breaks_startup(catalog.by_id["ob-cart-redis-port"])
    assert not breaks_startup(catalog.by_id["ob-cart-redis-latency"])
    admitted, _ = judge(missing_image, _measured(became_ready=False), direct=True, alerts=FIRED)
    assert admitted


def test_a_code_fault_whose_build_adds_no_source_text_is_rejected() -> None:
    entry = _entry("ob-frontend-cart-divide-by-zero")
    assert isinstance(entry, CodeFault) and introduced_lines(entry)
    assert judge(entry, _measured(deployed_value_ok=None, became_ready=None), direct=True, alerts=FIRED)[0]
    source = entry.inject.source.model_copy(update={"after": entry.inject.source.before})
    same = entry.model_copy(update={"inject": entry.inject.model_copy(update={"source": source})})
    admitted, reasons = judge(
        same, _measured(deployed_value_ok=None, became_ready=None), direct=True, alerts=FIRED
    )
    assert not admitted
    assert reasons == ("the build v0.10.6-1 introduces no source text the earlier build lacks",)


def test_a_chaos_fault_has_no_checks_of_its_own_and_a_config_faults_come_before_the_revert_checks() -> None:
    chaos = _entry("ob-cart-redis-latency")
    assert mechanism_failures(chaos, _measured(deployed_value_ok=None, became_ready=None)) == []
    config = _entry("ob-cart-redis-port")
    found = _measured(deployed_value_ok=None, restored=False)
    own = mechanism_failures(config, found)
    assert len(own) == 1 and "does not read back" in own[0]
    admitted, reasons = judge(config, found, direct=True, alerts=FIRED)
    assert not admitted
    assert reasons == (own[0], "the revert did not restore the original image, setting or object")
