"""The options each built-in agent accepts, and how a set of options travels to an invocation.

Options are a flat mapping of names to plain values (a string, a number or true/false). The runner passes
them to every invocation as one JSON object in ``MARATHON_AGENT_OPTIONS``; a built-in agent accepts only
the options it declares here, a command given with ``--agent-cmd`` receives whatever it was given.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

OPTIONS_ENV = "MARATHON_AGENT_OPTIONS"

OptionValue = str | int | float | bool


@dataclass(frozen=True)
class OptionSpec:
    """One option an agent accepts: its name, the kind of value, a lower bound and any words allowed."""

    name: str
    kind: Literal["string", "integer", "number"]
    help: str
    minimum: float | None = None
    words: tuple[str, ...] = ()  # strings accepted besides a number, such as "none"

    def read(self, value: object) -> OptionValue:
        """``value`` as this option holds it (an integer is a number too); ``ValueError`` saying what is
        wrong with it (no side effects)."""
        if isinstance(value, str) and value.lower() in self.words:
            return value.lower()
        if self.kind == "string":
            if not isinstance(value, str) or not value:
                raise ValueError("must be a non-empty string")
            return value
        wanted = "an integer" if self.kind == "integer" else "a number"
        if self.words:
            wanted += " or " + " or ".join(self.words)
        number_types = (int,) if self.kind == "integer" else (int, float)
        if isinstance(value, bool) or not isinstance(value, number_types) or not math.isfinite(value):
            raise ValueError(f"must be {wanted}")
        if self.minimum is not None and value < self.minimum:
            raise ValueError(f"must be at least {self.minimum:g}")
        return value if self.kind == "integer" else float(value)


# The defaults are the agent's own (orchestrator.agents.react); an option left out keeps its default.
REACT_OPTIONS = (
    OptionSpec("model", "string", "the model asked of the endpoint"),
    OptionSpec("temperature", "number", "sampling temperature, or none to send none (for models that refuse "
               "one)", minimum=0.0, words=("none",)),  # fmt: skip
    OptionSpec("max_steps", "integer", "model turns per invocation", minimum=1),
    OptionSpec("max_tokens", "integer", "model tokens per invocation", minimum=1),
    OptionSpec("margin_s", "number", "seconds before the deadline at which to stop", minimum=0.0),
)

# orchestrator.agents.rag: the ReAct options, and how many passages to retrieve.
RAG_OPTIONS = (*REACT_OPTIONS, OptionSpec("top_k", "integer", "passages retrieved per invocation", minimum=0))

# orchestrator.agents.correlation
CORRELATION_OPTIONS = (
    OptionSpec("window_s", "number", "seconds within which related alerts join one incident", minimum=0.0),
)

# orchestrator.agents.cli: the CLI to run (unless given after -- on the adapter's command line).
CLI_OPTIONS = (
    OptionSpec("command", "string", "the coding-agent CLI's command line, with {prompt}, {prompt_file}, "
               "{mcp_config}, {mcp_url}, {mcp_token}, {openai_base_url} or {workspace} where it wants "
               "them"),  # fmt: skip
    OptionSpec("margin_s", "number", "seconds before the deadline at which the CLI is ended", minimum=0.0),
)

OPTIONS: dict[str, tuple[OptionSpec, ...]] = {
    "noop": (),
    "runbook": (),
    "correlation": CORRELATION_OPTIONS,
    "oracle": (),
    "react": REACT_OPTIONS,
    "rag": RAG_OPTIONS,
    "cli": CLI_OPTIONS,
}
"""The options of each built-in agent; an agent not named here accepts any option."""


def option_problems(agent: str, options: Mapping[str, object]) -> dict[str, str]:
    """What is wrong with each option ``agent`` is given, by option name (no side effects)."""
    if agent not in OPTIONS:
        return {}
    specs = {spec.name: spec for spec in OPTIONS[agent]}
    accepted = f"it accepts {', '.join(specs)}" if specs else "it accepts none"
    problems: dict[str, str] = {}
    for name, value in options.items():
        spec = specs.get(name)
        if spec is None:
            problems[name] = f"not an option of the {agent} agent ({accepted})"
            continue
        try:
            spec.read(value)
        except ValueError as exc:
            problems[name] = str(exc)
    return problems


def read_options(agent: str, options: Mapping[str, object]) -> dict[str, OptionValue]:
    """The options as ``agent`` holds them; ``ValueError`` naming every bad one (no side effects)."""
    problems = option_problems(agent, options)
    if problems:
        raise ValueError("; ".join(f"{name} = {options[name]!r}: {why}" for name, why in problems.items()))
    specs = {spec.name: spec for spec in OPTIONS.get(agent, ())}
    return {name: specs[name].read(value) if name in specs else plain_value(value)
            for name, value in options.items()}  # fmt: skip


def plain_value(value: object) -> OptionValue:
    """``value`` when it is a string, a finite number or a boolean; ``ValueError`` otherwise."""
    if isinstance(value, str | bool | int) or (isinstance(value, float) and math.isfinite(value)):
        return value
    raise ValueError("must be a string, a finite number or true/false")


def encode_options(options: Mapping[str, OptionValue]) -> str:
    """The value of ``MARATHON_AGENT_OPTIONS`` for ``options`` (no side effects)."""
    return json.dumps(dict(options), sort_keys=True, separators=(",", ":"))


def options_help() -> str:
    """Which options each built-in agent accepts, for the command line's help (no side effects)."""
    parts = []
    for agent, specs in OPTIONS.items():
        if specs:
            parts.append(f"{agent}: " + "; ".join(f"{spec.name}: {spec.help}" for spec in specs))
    none = [agent for agent, specs in OPTIONS.items() if not specs]
    if none:
        parts.append(f"{', '.join(none)}: none")
    return ". ".join(parts)
