from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.bundle.commandline import run_command
from tests.score.scenario import act, alert, build, fault, probes, report

RIGHT = {"culprits": ["cartservice"], "artifact": "config:cartservice/env/REDIS_ADDR"}


def _bundle(tmp_path: Path) -> Path:
    return build(
        tmp_path,
        [
            *fault("f1", inject=0, revert=600),
            alert("a1", start=60),
            report(120, "INC-1", ["a1"], **RIGHT),
            act(130, "cartservice"),
            *probes("f1", [(120, False), (240, True)]),
            *fault("f2", inject=200, revert=800),
        ],
    ).path


def test_scoring_the_same_bundle_twice_prints_byte_identical_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bundle = _bundle(tmp_path)
    assert run_command("orchestrator.score.commands", ["score", str(bundle), "--json"]) == 0
    first = capsys.readouterr().out
    assert run_command("orchestrator.score.commands", ["score", str(bundle), "--json"]) == 0
    assert capsys.readouterr().out == first
    document = json.loads(first)
    # f1 handled (credit 1), f2 missed (0): Score = 100 * 1 / 2.
    assert (document["marathon_score"], document["corr"], document["faults"]) == (50.0, 0.5, 2)


def test_the_table_names_every_fault(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_command("orchestrator.score.commands", ["score", str(_bundle(tmp_path))]) == 0
    out = capsys.readouterr().out
    assert "Marathon-Score" in out and "handled_end_to_end" in out and "missed" in out


def test_scoring_opens_no_socket(tmp_path: Path) -> None:
    bundle = _bundle(tmp_path)
    # An audit hook sees every socket the interpreter creates, resolves or connects; scoring must cause none.
    script = textwrap.dedent(
        f"""
        import sys
        events = []
        sys.addaudithook(lambda event, args: events.append(event) if event.startswith("socket.") else None)
        from tests.bundle.commandline import run_command
        module = "orchestrator.score.commands"
        run_command(module, ["score", {str(bundle)!r}, "--json"])
        run_command(module, ["report", {str(bundle)!r}, "-o", {str(tmp_path / "r.html")!r}])
        scoring_events = list(events)
        import socket
        socket.socket().close()  # proves the hook is live
        probe = [e for e in events if e not in scoring_events][:1]
        print("EVENTS", scoring_events, "PROBE", probe, file=sys.stderr)
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        cwd=Path(__file__).parents[2],
        check=True,
    )
    assert "EVENTS [] PROBE ['socket.__new__']" in result.stderr
    assert json.loads(result.stdout.split("\nwrote ")[0])["faults"] == 2


def test_a_bundle_that_does_not_verify_is_not_scored_and_says_so_in_one_line(tmp_path: Path) -> None:
    bundle = _bundle(tmp_path)
    journal = bundle / "data" / "agent.jsonl"
    journal.write_bytes(journal.read_bytes()[:-7])  # the last record cut short
    for command in (["score", str(bundle)], ["report", str(bundle), "-o", str(tmp_path / "r.html")]):
        done = subprocess.run(
            [sys.executable, "-m", "orchestrator.cli", *command], capture_output=True, text=True, check=False
        )
        assert done.returncode == 1 and done.stdout == ""
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1
        assert lines[0].startswith(f"marathon: error: {bundle}: not scored, the bundle does not verify")
    assert not (tmp_path / "r.html").exists()
