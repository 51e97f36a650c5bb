from __future__ import annotations

import argparse
import subprocess
import sys

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
        " 'kubernetes', 'fastapi') if m in sys.modules]\n"
        "print('HEAVY', heavy)\n"
    )
    for argv in (["--help"], ["score", "--help"], ["bundle", "--help"]):
        command = [sys.executable, "-c", probe, *argv]
        done = subprocess.run(command, capture_output=True, text=True, check=True)
        assert "HEAVY []" in done.stdout, (argv, done.stdout[-300:])
