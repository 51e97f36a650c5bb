"""The retrieval-augmented agent: the ReAct agent, with passages retrieved for the current alerts from the
runbook written for the app (shipped in ``orchestrator/agents/runbooks``) and from its own incident notes.

Each invocation embeds the alert lines as the query, adds the ``top_k`` most similar passages to the opening
conversation, runs the ReAct loop, and then writes a note in the workspace (``notes/``) of what it reported
and did, which later invocations retrieve like the runbook. Retrieval is by the WordLlama static embeddings
packaged in the ``wordllama`` wheel (``orchestrator.agents.retrieval``); nothing is downloaded.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from orchestrator.agents.chat import ChatModel
from orchestrator.agents.inputs import AgentEnv, agent_options, load_alerts, read_state, run_main
from orchestrator.agents.mcpclient import ToolClient
from orchestrator.agents.options import OptionValue
from orchestrator.agents.react import (
    MEMORY_FILE,
    Limits,
    LoopResult,
    alert_lines,
    first_messages,
    loop_remembering,
    model_from_env,
    settings_of,
)
from orchestrator.agents.retrieval import (
    NOTES_DIR,
    Embed,
    Passage,
    note_passages,
    runbook_passages,
    top_passages,
    wordllama_embedder,
)

log = logging.getLogger("orchestrator.agents.rag")
NAME = "rag"
DEFAULT_TOP_K = 4


def query_of(lines: list[str]) -> str:
    """The retrieval query: the firing alerts' lines, else every line (no side effects)."""
    firing = [line for line in lines if "[firing" in line]
    return "\n".join(firing or lines)


def with_passages(messages: list[dict[str, Any]], passages: list[Passage]) -> list[dict[str, Any]]:
    """The opening conversation with the retrieved passages added to its user turn (no side effects)."""
    if not passages:
        return messages
    shown = "\n\n".join(f"[{p.source}] {p.text}" for p in passages)
    user = dict(messages[1])
    user["content"] = (f"{user['content']}\n\nRetrieved from the runbook and your earlier incident notes "
                       f"(may or may not apply):\n{shown}")  # fmt: skip
    return [messages[0], user, *messages[2:]]


def note_of(invocation: int, before: Mapping[str, Any], after: Mapping[str, Any], result: LoopResult) -> str:
    """A note of what this invocation reported and did, or "" when it did neither (no side effects)."""
    old = before.get("incidents", {})
    incidents = {i: v for i, v in after.get("incidents", {}).items() if old.get(i) != v}
    actions = after.get("actions", [])[len(before.get("actions", [])):]
    if not incidents and not actions:
        return ""
    lines = [f"# Invocation {invocation}"]
    for incident_id, incident in sorted(incidents.items()):
        lines.append(f"- incident {incident_id}: culprits {incident.get('culprit_services')}, artifact "
                     f"{incident.get('artifact')}, alerts {incident.get('alert_ids')}")  # fmt: skip
    lines += [f"- action {a['tool']} {json.dumps(a['args'], sort_keys=True)}" for a in actions]
    if result.answer:
        lines.append(f"- conclusion: {result.answer[:500]}")
    return "\n".join(lines) + "\n"


def run(env: AgentEnv, client: ToolClient, model: ChatModel, *, limits: Limits, top_k: int, embed: Embed,
        wall: Callable[[], float]) -> LoopResult:  # fmt: skip
    workspace = Path(env.workspace)
    path = workspace / MEMORY_FILE
    memory = read_state(path)
    before = json.loads(json.dumps(memory))
    alerts = load_alerts(env.alerts_path)
    messages = first_messages(env, alerts, memory)
    corpus = [*runbook_passages(env.app), *note_passages(workspace)]
    passages = top_passages(query_of(alert_lines(alerts, set())), corpus, embed=embed, k=top_k)
    log.info("retrieved %s", [f"{p.source}/{p.title}" for p in passages])
    messages = with_passages(messages, passages)
    result = loop_remembering(env, client, model, messages, memory, path, limits=limits, wall=wall)
    note = note_of(env.invocation, before, memory, result)
    if note:
        (workspace / NOTES_DIR).mkdir(exist_ok=True)
        (workspace / NOTES_DIR / f"invocation-{env.invocation:05d}.md").write_text(note, encoding="utf-8")
    log.info("stopped after %d steps, %d tokens: %s", result.steps, result.tokens, result.stop_reason)
    return result


def top_k_of(options: Mapping[str, OptionValue]) -> int:
    return int(options.get("top_k", DEFAULT_TOP_K))


def main() -> int:
    return run_main(_main)


def _main() -> int:
    env = AgentEnv.from_env()
    options = agent_options(NAME)
    settings = settings_of(options)
    model = model_from_env(settings, agent="retrieval-augmented agent")
    embed = wordllama_embedder()
    try:
        with ToolClient.from_env() as client:
            run(env, client, model, limits=settings.limits, top_k=top_k_of(options), embed=embed,
                wall=time.time)
    finally:
        model.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
