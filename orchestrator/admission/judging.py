"""The admission verdict: which of the twin's measurements of an entry admit it, and why (no side effects).

An entry is admitted when its message appears only after injection, the app keeps serving, at least one rule
of the pack fires an alert attributable to it (detectability), one published screening criterion holds (an
attributable alert is one of them), its mechanism's own checks pass, and the revert restores everything.
"""

from __future__ import annotations

from orchestrator.catalog.admissions import Measurements
from orchestrator.catalog.faults import CodeFault, ConfigFault, Entry

# The published screening thresholds: one of them must hold in the window after injection.
SERVER_ERRORS_PER_MIN = 4.0
NEW_ERROR_LOGS_PER_MIN = 10.0
# After the revert, the entry point counts as serving again below this failed fraction.
RECOVERED_FAILED_FRACTION = 0.05
# Detectability: without an alert attributable to it, an entry cannot be scored on detection.
NO_ALERT = "no rule of the pack fired an alert attributable to it"


def breaks_startup(entry: Entry) -> bool:
    """Whether a config fault means to keep its workload from starting or becoming ready (no side effects):
    a missing image, no replicas, a broken probe, an unschedulable request or a required value cleared."""
    if not isinstance(entry, ConfigFault):
        return False
    field = entry.inject.field
    return (
        field in ("image", "replicas")
        or field.startswith(("probe/", "resources/requests/"))
        or (field.startswith("env/") and entry.inject.value is None)
    )


def introduced_lines(entry: CodeFault) -> tuple[str, ...]:
    """Lines of the fault build's source that the earlier build does not have, indentation included, so a
    statement moved into a loop counts as introduced (no side effects)."""
    earlier = {line.rstrip() for line in entry.inject.source.before.splitlines()}
    return tuple(
        line.rstrip()
        for line in entry.inject.source.after.splitlines()
        if line.strip() and line.rstrip() not in earlier
    )


def judge(
    entry: Entry, found: Measurements, *, direct: bool, alerts: tuple[str, ...]
) -> tuple[bool, tuple[str, ...]]:
    """The admission verdict and its reasons (no side effects).

    ``direct`` says whether ``entry.log.service`` is the target or calls it directly; ``alerts`` names the
    rules that fired an alert attributable to the entry. When admitted, the reasons name the screening
    criteria that held; otherwise every check that failed.
    """
    failed: list[str] = []
    message = f"log message {entry.log.message!r} in {entry.log.service}"
    if not direct:
        failed.append(f"{entry.log.service} is neither {entry.target} nor a direct caller of it")
    if found.message_before:
        failed.append(f"{message} already present before injection")
    if not found.message_after:
        failed.append(f"{message} absent after injection")
    if found.entry_rate_after <= 0 or found.entry_failed_fraction_after >= 1.0:
        failed.append(
            f"the app stopped serving: entry rate {found.entry_rate_after}/s, "
            f"failed fraction {found.entry_failed_fraction_after}"
        )
    screening = _screening(found, alerts)
    if not screening:
        failed.append(
            f"no screening criterion: server errors {found.server_errors_per_min}/min < "
            f"{SERVER_ERRORS_PER_MIN:g}, new error logs {found.new_error_logs_per_min}/min < "
            f"{NEW_ERROR_LOGS_PER_MIN:g}, no restart, no alert"
        )
    if not alerts:
        failed.append(NO_ALERT)
    failed.extend(mechanism_failures(entry, found))
    if not found.restored:
        failed.append("the revert did not restore the original image, setting or object")
    if not found.ready_after_revert:
        failed.append("not every workload was ready after the revert")
    if not found.serving_after_revert:
        failed.append(
            f"requests did not recover after the revert (failed fraction >= {RECOVERED_FAILED_FRACTION})"
        )
    if found.message_after_revert:
        failed.append(f"{message} still printed after the revert")
    if failed:
        return False, tuple(failed)
    return True, tuple(screening)


def mechanism_failures(entry: Entry, found: Measurements) -> list[str]:
    """The checks only one mechanism has, each that failed (no side effects): a code fault's build must add
    source text; a config fault's value must read back, and its workload must become ready with it unless
    the fault means to keep it from starting. A chaos fault has none."""
    failed: list[str] = []
    if isinstance(entry, CodeFault) and not introduced_lines(entry):
        failed.append(f"the build {entry.inject.image_tag} introduces no source text the earlier build lacks")
    if isinstance(entry, ConfigFault):
        if found.deployed_value_ok is not True:
            failed.append(f"the deployed {entry.inject.field} does not read back as {entry.inject.value!r}")
        if not breaks_startup(entry) and found.became_ready is not True:
            failed.append(f"{entry.inject.name or entry.target} never became ready with the change")
    return failed


def _screening(found: Measurements, alerts: tuple[str, ...]) -> list[str]:
    held: list[str] = []
    if found.server_errors_per_min >= SERVER_ERRORS_PER_MIN:
        held.append(f"server errors {found.server_errors_per_min}/min >= {SERVER_ERRORS_PER_MIN:g}")
    if found.new_error_logs_per_min >= NEW_ERROR_LOGS_PER_MIN:
        held.append(f"new error logs {found.new_error_logs_per_min}/min >= {NEW_ERROR_LOGS_PER_MIN:g}")
    if found.restarts > 0:
        held.append(f"{found.restarts} container restart(s)")
    if alerts:
        held.append(f"attributable alert(s): {', '.join(sorted(set(alerts)))}")
    return held
