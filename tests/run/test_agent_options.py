"""Agent options of a run: given on the command line or in a file, refused before anything starts when bad,
and part of the run's identity and manifest."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrator.bundle.building import sample_manifest
from orchestrator.cli import build_parser, main
from orchestrator.errors import ConfigError
from orchestrator.run.baseline import baseline_config
from orchestrator.run.commands import config_from_args
from orchestrator.run.config import RunConfig, Versions, make_config, run_identity
from orchestrator.run.plan import make_plan
from orchestrator.run.setup import manifest_of

VERSIONS = Versions("c1", "0" * 64, "r1", "1" * 64, "0.1.0", "2" * 64, "none")
RUN = ["run", "--app", "online-boutique", "--seed", "3", "--quiet", "--no-baseline"]


def _config(**overrides: object) -> RunConfig:
    fields: dict[str, object] = {"app": "online-boutique", "seed": 3, "agent": "react"}
    fields.update(overrides)
    return make_config(**fields)


def _from_args(*argv: str) -> RunConfig:
    return config_from_args(build_parser().parse_args([*RUN, *argv]))


def _refused(tmp_path: Path, capsys: pytest.CaptureFixture[str], *argv: str) -> list[str]:
    """The error lines of a ``marathon run`` that must be refused before anything starts."""
    runs = tmp_path / "runs"
    code = main([*RUN, "--runs", str(runs), *argv])
    err = capsys.readouterr().err
    assert code == 2
    assert "Traceback" not in err
    assert not runs.exists()  # nothing started
    return err.strip().splitlines()


def test_options_on_the_command_line_are_read_as_numbers_booleans_or_strings() -> None:
    config = _from_args(
        "--agent-cmd", "true", "--agent-option", "model=gpt-4o", "--agent-option", "temperature=0.2",
        "--agent-option", "steps=12", "--agent-option", "fast=true", "--agent-option", "tag=v=1",
        "--agent-option", "limit=NaN",
    )  # fmt: skip
    assert config.agent_options == {
        "model": "gpt-4o", "temperature": 0.2, "steps": 12, "fast": True, "tag": "v=1", "limit": "NaN",
    }  # fmt: skip


def test_options_on_the_command_line_override_those_of_the_file(tmp_path: Path) -> None:
    path = tmp_path / "agent.yaml"
    path.write_text("model: from-file\ntemperature: 0.5\nmax_steps: 4\n")
    config = _from_args("--agent", "react", "--agent-config", str(path), "--agent-option", "model=from-flag")
    assert config.agent_options == {"model": "from-flag", "temperature": 0.5, "max_steps": 4}


def test_an_agent_configuration_may_be_json(tmp_path: Path) -> None:
    path = tmp_path / "agent.json"
    path.write_text(json.dumps({"model": "m", "temperature": 1e-1}))
    assert _from_args("--agent", "react", "--agent-config", str(path)).agent_options == {
        "model": "m", "temperature": 0.1,
    }  # fmt: skip


def test_an_unknown_option_for_a_built_in_agent_is_refused_with_one_line_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = _refused(tmp_path, capsys, "--agent", "react", "--agent-option", "modle=gpt-4o")
    assert len(lines) == 1
    assert lines[0].startswith(
        "marathon: error: invalid run configuration: --agent-option: modle = 'gpt-4o': not an option"
    )


def test_an_unknown_option_in_the_file_is_refused_naming_the_file_and_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "agent.yaml"
    path.write_text("model: m\nmax_stepz: 3\n")
    lines = _refused(tmp_path, capsys, "--agent", "react", "--agent-config", str(path))
    assert len(lines) == 1
    assert f": {path}:2: max_stepz = 3: not an option of the react agent" in lines[0]


def test_a_value_that_is_not_a_plain_string_number_or_boolean_is_refused_at_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "agent.yaml"
    path.write_text("depth: 2\nlayers: [1, 2]\n")
    lines = _refused(tmp_path, capsys, "--agent-cmd", "true", "--agent-config", str(path))
    assert len(lines) == 1
    assert lines[0].endswith(f": {path}:2: layers = [1, 2]: must be a string, a finite number or true/false")


def test_a_value_of_the_wrong_kind_for_a_built_in_option_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = _refused(tmp_path, capsys, "--agent", "react", "--agent-option", "max_steps=many")
    assert len(lines) == 1 and lines[0].endswith(": --agent-option: max_steps = 'many': must be an integer")


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("- model\n- m\n", "holds a list; expected a mapping of option names to values"),
        ("", "holds nothing; expected a mapping of option names to values"),
        ("model: [unclosed\n", "not valid YAML"),
        ("1: one\n", "1: an option name must be a string"),
    ],
)
def test_an_agent_configuration_that_is_not_a_mapping_of_names_is_refused_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, expected: str
) -> None:
    path = tmp_path / "agent.yaml"
    path.write_text(content)
    lines = _refused(tmp_path, capsys, "--agent", "react", "--agent-config", str(path))
    assert len(lines) == 1
    assert f": {path}" in lines[0] and expected in lines[0]


def test_an_unreadable_agent_configuration_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "missing.yaml"
    lines = _refused(tmp_path, capsys, "--agent", "react", "--agent-config", str(missing))
    reason = "cannot read the agent configuration: No such file or directory"
    assert lines == [f"marathon: error: {missing}: {reason}"]


def test_an_option_without_a_value_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = _refused(tmp_path, capsys, "--agent", "react", "--agent-option", "model")
    assert len(lines) == 1 and lines[0].endswith(": --agent-option: model: expected KEY=VALUE")


def test_an_option_name_must_be_a_plain_word() -> None:
    with pytest.raises(ConfigError, match="an option name is a letter or _"):
        _config(agent=None, agent_cmd="true", agent_options={"two words": 1})


def test_a_baseline_run_gives_its_agent_no_options() -> None:
    config = _config(agent_options={"model": "m"})
    assert config.options_for_agent == {"model": "m"}
    baseline = RunConfig.model_validate_json(baseline_config(config, out=Path("b")).model_dump_json())
    assert baseline.options_for_agent == {}


def test_different_options_give_different_run_ids() -> None:
    def run_id(**options: object) -> str:
        config = _config(agent_options=options)
        return run_identity(config, versions=VERSIONS, command=["true"], schedule_hash="s1")

    assert run_id(model="a") == run_id(model="a")
    assert len({run_id(), run_id(model="a"), run_id(model="b"), run_id(model="a", temperature=0.5)}) == 4


def test_the_manifest_records_the_options_the_agent_was_given() -> None:
    config = _config(agent_options={"model": "m-3", "temperature": 0.25, "max_steps": 7})
    manifest = manifest_of(config, make_plan(config), run_id="r", command=["react"])
    assert manifest.agent_options == {"model": "m-3", "temperature": 0.25, "max_steps": 7}
    assert json.loads(manifest.model_dump_json())["agent_options"] == manifest.agent_options


def test_a_manifest_without_options_is_written_as_before_options_existed() -> None:
    assert "agent_options" not in sample_manifest().model_dump(mode="json")
    given = sample_manifest(agent_options={"depth": 2, "fast": True})
    assert given.model_dump(mode="json")["agent_options"] == {"depth": 2, "fast": True}
    assert type(given.agent_options["fast"]) is bool
