"""The retrieval-augmented agent: the packaged embedding model ranks runbook passages and the agent's own
notes, and the ReAct loop gets them, through the metering proxy and an MCP tools server."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from orchestrator.agents import AGENTS
from orchestrator.agents.retrieval import (
    RUNBOOKS,
    Passage,
    note_passages,
    runbook_passages,
    split_markdown,
    top_passages,
    wordllama_embedder,
)
from orchestrator.bundle.records import ModelCall
from orchestrator.run.metering import MeteringProxy
from tests.agents.fakeopenai import UPSTREAM_KEY, Turn, fake_openai
from tests.agents.toolserver import tools_server

TOKEN = "invocation-token"
NS = "online-boutique"
APPS = ("online-boutique", "astronomy-shop", "train-ticket")


def test_every_app_has_a_runbook_in_the_package_with_a_section_per_service() -> None:
    for app in APPS:
        passages = runbook_passages(app)
        assert (RUNBOOKS / f"{app}.md").is_file() and len(passages) > 5, app
        assert any(p.title.startswith("Service ") for p in passages)
        assert all(len(p.text) <= 1500 for p in passages)


def test_markdown_is_split_into_one_passage_per_section() -> None:
    text = "# Title\nintro\n\n## One\nfirst\n\n## Two\nsecond\n"
    assert [(p.title, p.text) for p in split_markdown(text, source="s")] == [
        ("Title", "# Title\nintro"), ("One", "## One\nfirst"), ("Two", "## Two\nsecond")
    ]  # fmt: skip


def test_the_packaged_embedding_model_ranks_the_passage_about_the_query_first() -> None:
    embed = wordllama_embedder()
    passages = [
        Passage("runbook:x", "Feature flags", "A feature flag switched to a failure variant: set it back."),
        Passage("runbook:x", "Memory", "Container OOM killed: the memory limit is too low; restart it."),
        Passage("runbook:x", "DNS", "A service name that does not resolve: name resolution is broken."),
    ]
    query = "cartservice container was OOMKilled, memory near its limit"
    ranked = top_passages(query, passages, embed=embed, k=2)
    assert ranked[0].title == "Memory"
    assert len(ranked) == 2
    assert top_passages("", passages, embed=embed, k=2) == []


def test_the_agents_own_notes_are_read_oldest_first(tmp_path: Path) -> None:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "invocation-00002.md").write_text("# Invocation 2\n- b")
    (tmp_path / "notes" / "invocation-00001.md").write_text("# Invocation 1\n- a")
    sources = [p.source for p in note_passages(tmp_path)]
    assert sources == ["note:invocation-00001.md", "note:invocation-00002.md"]
    assert note_passages(tmp_path / "nowhere") == []


@pytest.mark.slow
def test_the_rag_agent_sends_retrieved_passages_and_retrieves_its_own_note_next_time(tmp_path: Path) -> None:
    alerts = [{"alert_id": "a1", "rule": "KubeContainerOOMKilled", "starts_at": 130.0,
               "labels": {"namespace": NS, "service": "cartservice"}}]  # fmt: skip
    (tmp_path / "alerts.json").write_text(json.dumps(alerts))
    script = [
        Turn(tool_calls=(("incident_report", {"incident_id": "cart-oom", "alert_ids": ["a1"],
                                              "culprit_services": ["cartservice"], "artifact": "memory"}),
                         ("restart_service", {"incident_id": "cart-oom", "service": "cartservice"})),
             prompt_tokens=700, completion_tokens=40),
        Turn(content="Restarted cartservice after an OOM kill.", prompt_tokens=800, completion_tokens=9),
        Turn(content="Nothing new.", prompt_tokens=650, completion_tokens=4),
    ]  # fmt: skip
    records: list[ModelCall] = []
    with fake_openai(script) as (upstream, fake), tools_server(TOKEN) as (mcp_url, log):
        proxy = MeteringProxy(upstream, UPSTREAM_KEY, records.append, lambda: 240.0)
        base = proxy.start()
        try:
            for n in (1, 2):
                env = {
                    **os.environ, "MARATHON_MCP_URL": mcp_url, "MARATHON_TOKEN": TOKEN,
                    "MARATHON_INVOCATION": str(n), "MARATHON_ALERTS": str(tmp_path / "alerts.json"),
                    "MARATHON_APP": NS, "MARATHON_NAMESPACE": NS, "OPENAI_BASE_URL": base,
                    "OPENAI_API_KEY": proxy.open_invocation(n, None), "MARATHON_DEADLINE": "9999999999",
                    "PYTHONPATH": os.getcwd(),
                }  # fmt: skip
                done = subprocess.run(AGENTS["rag"], env=env, cwd=tmp_path, capture_output=True, text=True,
                                      timeout=90)  # fmt: skip
                assert done.returncode == 0, done.stderr
        finally:
            proxy.stop()
    first, second = (request["messages"][1]["content"] for request in (fake.requests[0], fake.requests[2]))
    assert "[runbook:online-boutique]" in first and "## Service cartservice" in first
    assert "[note:" not in first
    assert "[note:invocation-00001.md]" in second and "incident cart-oom" in second
    note = (tmp_path / "notes" / "invocation-00001.md").read_text()
    assert "culprits ['cartservice'], artifact memory" in note and "action restart_service" in note
    assert not (tmp_path / "notes" / "invocation-00002.md").exists()  # it reported and did nothing new
    assert [name for name, _ in log.calls] == ["incident_report", "restart_service"]
    assert [(r.tokens_in, r.tokens_out) for r in records] == [(700, 40), (800, 9), (650, 4)]
