"""Agent options: what each built-in agent accepts, and how an invocation reads the options it was given."""

from __future__ import annotations

import pytest

from orchestrator.agents import AGENT_NAMES
from orchestrator.agents.inputs import agent_options
from orchestrator.agents.options import OPTIONS, OPTIONS_ENV, encode_options, option_problems, read_options
from orchestrator.agents.react import Limits, settings_of
from orchestrator.errors import ConfigError


def test_every_built_in_agent_declares_the_options_it_accepts() -> None:
    assert set(OPTIONS) == set(AGENT_NAMES)
    assert [spec.name for spec in OPTIONS["react"]] == [
        "model", "temperature", "max_steps", "max_tokens", "margin_s",
    ]  # fmt: skip


def test_an_option_a_built_in_agent_does_not_declare_is_named_with_the_ones_it_accepts() -> None:
    problems = option_problems("react", {"modle": "gpt-4o", "model": "gpt-4o"})
    assert list(problems) == ["modle"]
    assert "not an option of the react agent" in problems["modle"]
    assert "model, temperature, max_steps" in problems["modle"]
    refused = {"model": "not an option of the noop agent (it accepts none)"}
    assert option_problems("noop", {"model": "x"}) == refused


def test_option_values_must_be_of_their_kind_and_within_bounds() -> None:
    problems = option_problems(
        "react", {"max_steps": 2.5, "max_tokens": True, "temperature": "warm", "margin_s": -1, "model": ""}
    )
    assert problems == {
        "max_steps": "must be an integer",
        "max_tokens": "must be an integer",
        "temperature": "must be a number or none",
        "margin_s": "must be at least 0",
        "model": "must be a non-empty string",
    }
    assert option_problems("react", {"max_steps": 0}) == {"max_steps": "must be at least 1"}


def test_an_integer_is_read_as_a_number_and_none_as_a_word() -> None:
    read = read_options("react", {"temperature": 1, "max_steps": 3})
    assert read == {"temperature": 1.0, "max_steps": 3}
    assert isinstance(read["temperature"], float)
    assert read_options("react", {"temperature": "None"}) == {"temperature": "none"}


def test_a_command_agent_accepts_any_option_with_a_plain_value() -> None:
    options = {"depth": 3, "mode": "fast", "verbose": True, "ratio": 0.5}
    assert option_problems("my-agent", options) == {}
    assert read_options("my-agent", options) == options
    with pytest.raises(ValueError, match="must be a string, a finite number or true/false"):
        read_options("my-agent", {"nested": {"a": 1}})


def test_an_invocation_reads_its_options_from_the_protocol_variable() -> None:
    given = {"model": "m-2", "temperature": 0.3}
    assert agent_options("react", {OPTIONS_ENV: encode_options(given)}) == given
    assert agent_options("react", {}) == {}


def test_options_an_invocation_cannot_use_end_it_with_a_message_naming_them() -> None:
    with pytest.raises(ConfigError, match="modle = 'x': not an option of the react agent"):
        agent_options("react", {OPTIONS_ENV: '{"modle": "x"}'})
    with pytest.raises(ConfigError, match=f"environment {OPTIONS_ENV} = '\\[1\\]': not a JSON object"):
        agent_options("react", {OPTIONS_ENV: "[1]"})
    with pytest.raises(ConfigError, match="not JSON"):
        agent_options("react", {OPTIONS_ENV: "{model"})


def test_the_react_agent_keeps_its_defaults_for_options_it_was_not_given() -> None:
    settings = settings_of({})
    assert (settings.model, settings.temperature, settings.limits) == ("gpt-4o-mini", 0.0, Limits())


def test_the_react_agent_takes_its_model_temperature_and_limits_from_its_options() -> None:
    options = read_options(
        "react", {"model": "m-2", "temperature": 0.7, "max_steps": 5, "max_tokens": 900, "margin_s": 2}
    )
    settings = settings_of(options)
    assert (settings.model, settings.temperature) == ("m-2", 0.7)
    assert settings.limits == Limits(max_steps=5, max_tokens=900, margin_s=2.0)
    assert settings_of({"temperature": "none"}).temperature is None
