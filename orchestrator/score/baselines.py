"""Finding a run's no-action baseline among the ones twin runs cache (``<runs>/.baselines/<key>/bundle``),
so that scoring a bundle again gives the degradation level the run itself printed.

A cached baseline is the run's own when its manifest records the same world: app, seed, catalog, rule pack,
code and delta, and the same schedule parameters (the schedule's hash among them), apart from the role and
the clock, which a no-action run always has its own of. Only a sealed, whole (``completed``) baseline that
verifies is used: a partial one would understate the damage of doing nothing.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from orchestrator.bundle.reader import Bundle, read_bundle
from orchestrator.bundle.records import RunManifest
from orchestrator.bundle.seal import is_sealed, read_manifest
from orchestrator.bundle.verify import verify_bundle
from orchestrator.errors import BundleError

BASELINES_DIR = ".baselines"  # where ``orchestrator.run.baseline`` caches them under a runs root
BUNDLE_DIR = "bundle"
NOOP_AGENT = "noop"
_IDENTITY = (
    "app",
    "seed",
    "catalog_version",
    "catalog_sha256",
    "rule_pack_version",
    "rule_pack_sha256",
    "code_version",
    "code_sha256",
    "delta_s",
)
_OWN_TO_A_BASELINE = frozenset({"role", "clock"})  # schedule parameters a no-action run sets for itself
CODE_FIELDS = frozenset({"code_version", "code_sha256"})


@dataclass(frozen=True)
class BaselineSearch:
    """The outcome of looking for a run's baseline: the bundle found, or why none was."""

    found: Path | None
    searched: tuple[Path, ...]
    reason: str = ""  # when nothing was found: what the nearest candidate lacked, or that there was none
    code_differs: str = ""  # when the baseline found was made by other code: how it differs


def _short(value: object) -> str:
    # A SHA-256 is named by its first 12 digits, as git names commits.
    if isinstance(value, str) and len(value) == 64:
        return repr(value[:12] + "…")
    return repr(value)


def baseline_mismatch(
    run: RunManifest, candidate: RunManifest, *, ignore: frozenset[str] = frozenset()
) -> str | None:
    """The first recorded fact that keeps ``candidate`` from being ``run``'s no-action baseline, as
    ``field = theirs (the run has ours)``; None when it is the run's baseline. Fields in ``ignore`` are
    not compared (no side effects)."""
    if candidate.schedule_params.get("role") != "baseline":
        return f"schedule_params.role = {candidate.schedule_params.get('role')!r}, not a no-action baseline"
    for field in _IDENTITY:
        ours, theirs = getattr(run, field), getattr(candidate, field)
        if ours != theirs and field not in ignore:
            return f"{field} = {_short(theirs)} (the run has {_short(ours)})"
    keys = sorted((run.schedule_params.keys() | candidate.schedule_params.keys()) - _OWN_TO_A_BASELINE)
    for key in keys:
        ours_param, theirs_param = run.schedule_params.get(key), candidate.schedule_params.get(key)
        if ours_param != theirs_param:
            return f"schedule_params.{key} = {_short(theirs_param)} (the run has {_short(ours_param)})"
    return None


def search_roots(bundle: Path, runs: Path | None) -> tuple[Path, ...]:
    """Where to look: the runs root the bundle's run directory sits in, then ``runs`` (no duplicates)."""
    roots = [Path(bundle).resolve().parent.parent]
    if runs is not None:
        roots.append(Path(runs).resolve())
    return tuple(dict.fromkeys(roots))


def _candidates(roots: Iterable[Path]) -> list[Path]:
    found: list[Path] = []
    for root in roots:
        directory = root / BASELINES_DIR
        if directory.is_dir():
            found += sorted(p / BUNDLE_DIR for p in directory.iterdir() if is_sealed(p / BUNDLE_DIR))
    return found


def on_real_cluster(manifest: RunManifest) -> bool:
    return manifest.schedule_params.get("backend") == "kube"


def find_baseline(manifest: RunManifest, *, roots: Sequence[Path]) -> BaselineSearch:
    """The cached no-action baseline of the run ``manifest`` describes, searched for under ``roots``.

    The run's own (same code too) comes first. Failing that, one that differs only in the code that made
    it is taken, and ``code_differs`` says so: the twin's world rarely changes with the code, a baseline
    made again after the code changed is better than none, and the baseline process hashes the code when it
    starts, so a source file edited while a run starts gives even the run's own baseline another hash."""
    searched = tuple(root / BASELINES_DIR for root in roots)
    if on_real_cluster(manifest):
        return BaselineSearch(None, searched, "a run on a real cluster has no no-action twin")
    candidates = _candidates(roots)
    found, nearest = _first_match(manifest, candidates, ignore=frozenset())
    if found is not None:
        return BaselineSearch(found, searched)
    other_code, _ = _first_match(manifest, candidates, ignore=CODE_FIELDS)
    if other_code is not None:
        theirs = read_manifest(other_code / "data")
        differs = (
            f"whose manifest records code {_short(theirs.code_sha256)} where the run's records "
            f"{_short(manifest.code_sha256)}"
        )
        return BaselineSearch(other_code, searched, code_differs=differs)
    return BaselineSearch(None, searched, nearest or "none of the same app and seed")


def _first_match(
    manifest: RunManifest, candidates: Sequence[Path], *, ignore: frozenset[str]
) -> tuple[Path | None, str]:
    nearest = ""
    for candidate in candidates:
        try:
            theirs = read_manifest(candidate / "data")
        except BundleError:
            continue
        mismatch = baseline_mismatch(manifest, theirs, ignore=ignore)
        if mismatch is not None:
            if not nearest and (theirs.app, theirs.seed) == (manifest.app, manifest.seed):
                nearest = f"{candidate} differs in {mismatch}"
            continue
        if not verify_bundle(candidate).ok:
            nearest = f"{candidate} does not verify"
            continue
        ended = _end_reason(candidate)
        if ended != "completed":
            nearest = f"{candidate} is not whole (run end {ended})"
            continue
        return candidate, ""
    return None, nearest


def _end_reason(bundle: Path) -> str:
    try:
        loaded: Bundle = read_bundle(bundle)
    except BundleError:
        return "unreadable"
    return loaded.ended.reason if loaded.ended is not None else "missing"


def noop_command(manifest: RunManifest, *, runs: Path) -> str:
    """The ``marathon run`` line whose no-action baseline is this run's, as far as the command line can
    say it (no side effects). It runs the noop agent and leaves its baseline under ``runs``."""
    params = manifest.schedule_params
    words = ["marathon", "run", "--app", manifest.app, "--seed", str(manifest.seed), "--agent", NOOP_AGENT]
    flags = (
        ("--faults", "fault_count"),
        ("--delta", "delta_s"),
        ("--injection-period", "injection_period_s"),
        ("--observation-period", "observation_period_s"),
        ("--max-concurrent", "max_concurrent"),
    )
    for flag, key in flags:
        value = params.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            words += [flag, f"{value:g}"]
        elif key == "max_concurrent" and key in params and value is None:
            words += [flag, "none"]  # no cap, where the command's default is the app's cap
    if params.get("exclusive_culprits") is False:
        words.append("--shared-culprits")
    words += ["--runs", str(runs)]
    return shlex.join(words)
