from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator.cli import COMMANDS, build_parser, main


def test_marathon_without_a_command_prints_help_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "usage: marathon" in capsys.readouterr().out


def test_the_console_script_reports_its_version() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "orchestrator.cli", "--version"], capture_output=True, text=True, check=True
    )
    assert result.stdout.startswith("marathon ")


# ``entry`` as the executable runs it, with a main that prints, registers an exit handler, may leave a thread
# running, and returns 3.
_ENTRY = """
import atexit, sys, threading
import orchestrator.cli as cli

def fake_main():
    print("printed, not yet flushed", end="")
    atexit.register(lambda: sys.stderr.write("exit handler ran\\n"))
    if sys.argv[1:] == ["thread"]:
        main = threading.main_thread()  # the thread prints once the main thread is done: after entry's check
        threading.Thread(target=lambda: (main.join(), print(" - the thread finished"))).start()
    return 3

cli.main = fake_main
cli.entry()
"""


@pytest.mark.parametrize("leftover", [[], ["thread"]])
def test_the_executable_ends_with_mains_code_after_its_output_and_exit_handlers(leftover: list[str]) -> None:
    done = subprocess.run([sys.executable, "-c", _ENTRY, *leftover], capture_output=True, text=True)
    assert done.returncode == 3, done.stderr
    assert done.stderr == "exit handler ran\n"
    finished = " - the thread finished\n" if leftover else ""
    assert done.stdout == "printed, not yet flushed" + finished  # a thread still running is waited for


def test_an_unknown_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["no-such-command"])
    assert exited.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, str]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {choice.dest: str(choice.help) for choice in action._choices_actions}


def test_the_overview_lists_every_command_with_the_help_its_module_registers() -> None:
    assert _subcommands(build_parser("-")) == _subcommands(build_parser())
    for command in COMMANDS:
        assert command in _subcommands(build_parser(command))


def test_help_and_light_commands_import_nothing_of_the_twin_the_runner_or_the_control_plane() -> None:
    probe = (
        "import sys; from orchestrator.cli import main\n"
        "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
        "heavy = [m for m in ('orchestrator.twin.boot', 'orchestrator.run.runner', 'orchestrator.api.app',"
        " 'kubernetes', 'kubernetes_validate', 'fastapi') if m in sys.modules]\n"
        "print('HEAVY', heavy)\n"
    )
    for argv in (["--help"], ["score", "--help"], ["bundle", "--help"]):
        command = [sys.executable, "-c", probe, *argv]
        done = subprocess.run(command, capture_output=True, text=True, check=True)
        assert "HEAVY []" in done.stdout, (argv, done.stdout[-300:])


def _options(parser: argparse.ArgumentParser, path: str) -> Iterator[tuple[str, argparse.Action]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _options(sub, f"{path} {name}")
        elif action.option_strings:
            yield path, action


def _parsers(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _parsers(sub)


def test_every_option_of_every_command_has_help_that_shows_its_default() -> None:
    options = list(_options(build_parser(), "marathon"))
    assert len(options) > 100
    silent = [(path, action.option_strings) for path, action in options if not action.help]
    assert silent == []
    text = next(p for p in _parsers(build_parser("run")) if p.prog == "marathon run").format_help()
    assert "seconds between invocations (default: 120)" in text
    default = "fault arrivals to draw (default: the app's published_schedule; 60 for an app without one)"
    assert default in " ".join(text.split())
    assert "(default: None)" not in text and "(default: False)" not in text


def test_a_mistyped_agent_is_one_line_before_any_progress(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "orchestrator.cli", "run", "--app", "online-boutique", "--seed", "1",
         "--agent", "nope", "--runs", str(tmp_path / "runs"), "--data", str(tmp_path / "control")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "marathon: error: unknown agent: run configuration: agent = 'nope': not a known agent "
        "(cli, correlation, noop, oracle, rag, react, runbook)"
    ]
    assert not (tmp_path / "runs").exists() and not (tmp_path / "control").exists()
