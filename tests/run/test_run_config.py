"""Run configuration: bad input is refused before anything starts, and run ids are reproducible."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from orchestrator.errors import ConfigError
from orchestrator.run.config import RunConfig, Versions, agent_command, code_digest, make_config, run_identity
from orchestrator.run.runner import run_dir_for

VERSIONS = Versions("c1", "0" * 64, "r1", "1" * 64, "0.1.0", "2" * 64, "none")


def _config(**overrides: object) -> RunConfig:
    fields: dict[str, object] = {"app": "online-boutique", "seed": 3, "agent_cmd": "true"}
    fields.update(overrides)
    return make_config(**fields)


def _fields_of(error: ConfigError) -> set[str]:
    return {problem.field for problem in error.problems}


def test_an_unknown_app_is_refused_naming_the_field() -> None:
    with pytest.raises(ConfigError) as caught:
        _config(app="bookinfo")
    assert "app" in _fields_of(caught.value)
    assert "bookinfo" in str(caught.value)


def test_a_negative_seed_is_refused() -> None:
    with pytest.raises(ConfigError) as caught:
        _config(seed=-1)
    assert "seed" in _fields_of(caught.value)


def test_exactly_one_of_agent_and_agent_command_is_required() -> None:
    with pytest.raises(ConfigError):
        _config(agent_cmd=None)
    with pytest.raises(ConfigError):
        _config(agent="runbook")


def test_a_budget_as_long_as_the_invocation_interval_is_refused() -> None:
    with pytest.raises(ConfigError) as caught:
        _config(delta_s=60, budget_s=60, injection_period_s=600, observation_period_s=300)
    assert "budget_s" in _fields_of(caught.value)


def test_periods_must_be_whole_invocation_intervals() -> None:
    with pytest.raises(ConfigError) as caught:
        _config(delta_s=120, budget_s=10, injection_period_s=650)
    assert "injection_period_s" in _fields_of(caught.value)


def test_the_kube_backend_needs_a_kubeconfig_and_a_prometheus(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        _config(backend="kube", clock="realtime")
    assert {"kubeconfig", "prometheus_url"} <= _fields_of(caught.value)
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\n")
    config = _config(backend="kube", clock="realtime", kubeconfig=kubeconfig, prometheus_url="http://x:9090")
    assert config.backend == "kube"


def test_an_agent_program_that_does_not_exist_is_refused_before_the_run() -> None:
    with pytest.raises(ConfigError) as caught:
        agent_command(_config(agent_cmd="no-such-agent-program --flag"))
    assert "no-such-agent-program" in str(caught.value)


def test_an_agent_command_line_is_split_like_a_shell_would() -> None:
    command = agent_command(_config(agent_cmd=f"{sys.executable} -c 'print(1)'"))
    assert command == [sys.executable, "-c", "print(1)"]


def test_an_unknown_agent_name_lists_the_known_ones() -> None:
    with pytest.raises(ConfigError) as caught:
        agent_command(_config(agent_cmd=None, agent="clairvoyant"))
    assert "clairvoyant" in str(caught.value)


def test_the_run_id_depends_only_on_what_the_data_depend_on() -> None:
    config = _config()
    first = run_identity(config, versions=VERSIONS, command=["true"], schedule_hash="s1")
    assert first == run_identity(config, versions=VERSIONS, command=["true"], schedule_hash="s1")
    assert first.startswith("online-boutique-s3-true-")
    assert first != run_identity(_config(seed=4), versions=VERSIONS, command=["true"], schedule_hash="s1")
    assert first != run_identity(config, versions=VERSIONS, command=["true"], schedule_hash="s2")


def test_a_kept_run_directory_is_never_reused(tmp_path: Path) -> None:
    config = _config(runs_root=tmp_path)
    first = run_dir_for(config, "run-a")
    assert first == tmp_path / "run-a"
    first.mkdir()
    assert run_dir_for(config, "run-a") == tmp_path / "run-a-2"
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "file").write_text("x")
    with pytest.raises(ConfigError):
        run_dir_for(_config(out=busy), "run-a")


def test_the_code_digest_changes_with_any_source_byte(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    before = code_digest.__wrapped__(tmp_path)
    (tmp_path / "a.py").write_text("x = 2\n")
    assert code_digest.__wrapped__(tmp_path) != before


def test_the_clock_and_the_budget_default_from_the_backend_and_delta(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\n")
    twin = _config(clock=None, budget_s=None)
    assert (twin.clock, twin.budget_s, twin.reproducible) == ("stepped", 110.0, True)
    kube = _config(backend="kube", kubeconfig=kubeconfig, prometheus_url="http://127.0.0.1:9", clock=None)
    assert (kube.clock, kube.reproducible, kube.against_baseline) == ("realtime", False, False)
    assert _config(delta_s=60).budget_s == 50.0
    assert _config(delta_s=5).budget_s == 1.0
    assert _config(delta_s=60, budget_s=20.0).budget_s == 20.0
    assert not _config(clock="realtime").reproducible
