"""What agents are told about artifact kinds is the vocabulary itself, never a list written out by hand."""

from __future__ import annotations

from orchestrator.agents.react import SYSTEM_PROMPT
from orchestrator.interface.tools import TOOLS
from orchestrator.vocabulary.artifacts import ARTIFACT_KIND_LIST, ARTIFACT_KINDS


def test_the_incident_report_tool_names_every_artifact_kind_in_the_vocabulary_order() -> None:
    assert f"kinds: {ARTIFACT_KIND_LIST};" in TOOLS["incident_report"].description
    assert ARTIFACT_KIND_LIST.split(", ") == list(ARTIFACT_KINDS)


def test_the_react_prompt_names_every_artifact_kind_in_the_vocabulary_order() -> None:
    prompt = SYSTEM_PROMPT.format(app="online-boutique", namespace="ob")
    assert f"KIND one of {ARTIFACT_KIND_LIST} (e.g." in prompt
