from __future__ import annotations

import subprocess
import sys

import pytest

from orchestrator.cli import main


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
