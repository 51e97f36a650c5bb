"""Admission by detectability, as committed: every admitted entry raised an alert of the pack attributable to
it, and every rule of the pack was raised by some admitted entry (a rule no fault raises is retired, see
alert_rules/README.md, "Retired rules")."""

from __future__ import annotations

import functools

import pytest

from orchestrator.catalog.admissions import AdmissionFile, load_admission
from orchestrator.catalog.loading import load_catalog
from orchestrator.telemetry.rules import load_rule_pack

APPS = ("online-boutique", "train-ticket", "astronomy-shop")


@functools.cache
def _admission(app: str) -> AdmissionFile:
    found = load_admission(app)
    assert found is not None, f"{app} has no admission.json"
    return found


@pytest.mark.parametrize("app", APPS)
def test_no_admitted_entry_raises_no_alert(app: str) -> None:
    silent = [record.id for record in _admission(app).entries if record.admitted and not record.rules_fired]
    assert silent == []


@pytest.mark.parametrize("app", APPS)
def test_every_rule_of_an_app_is_a_rule_its_pack_evaluates(app: str) -> None:
    names = set(load_rule_pack().for_app(app).names())
    unknown = {rule for record in _admission(app).entries for rule in record.rules_fired} - names
    assert unknown == set()


@pytest.mark.parametrize("app", APPS)
def test_the_admitted_entries_are_the_catalogs_current_entries(app: str) -> None:
    catalog = load_catalog(app)
    for record in _admission(app).entries:
        if record.admitted:
            assert record.content_hash == catalog.by_id[record.id].content_hash(), record.id


def test_every_rule_of_the_pack_is_raised_by_some_admitted_entry() -> None:
    raised = {
        rule
        for app in APPS
        for record in _admission(app).entries
        if record.admitted
        for rule in record.rules_fired
    }
    never = sorted(set(load_rule_pack().names()) - raised)
    assert never == [], f"rules no admitted entry raises (exercise or retire them): {never}"
