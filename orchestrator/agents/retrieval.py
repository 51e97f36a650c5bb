"""Retrieval for the retrieval-augmented agent: passages from the shipped runbooks and the agent's own notes,
ranked by cosine similarity of static embeddings.

The embedding model is WordLlama's ``l2_supercat`` (256 dimensions), whose weights and tokenizer ship inside
the ``wordllama`` wheel: it is loaded from the installed package and never downloaded, so it works inside
the sandbox, where there is no network.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.errors import AgentError

RUNBOOKS = Path(__file__).resolve().parent / "runbooks"
NOTES_DIR = "notes"
PASSAGE_CHARS = 1500
_HEADING = re.compile(r"^##\s+(.*)$", re.MULTILINE)

Embed = Callable[[Sequence[str]], Any]  # texts -> an (n, d) array of unit vectors


@dataclass(frozen=True)
class Passage:
    source: str  # "runbook:<app>" or "note:<file name>"
    title: str
    text: str


def split_markdown(text: str, *, source: str) -> list[Passage]:
    """One passage per ``##`` section (the text before the first one is a passage too), each cut to
    ``PASSAGE_CHARS`` (no side effects)."""
    passages = []
    starts = [m.start() for m in _HEADING.finditer(text)]
    for begin, end in zip([0, *starts], [*starts, len(text)], strict=True):
        section = text[begin:end].strip()
        if not section:
            continue
        heading = _HEADING.match(section)
        title = heading.group(1).strip() if heading else section.splitlines()[0].lstrip("# ").strip()
        passages.append(Passage(source=source, title=title, text=section[:PASSAGE_CHARS]))
    return passages


def runbook_passages(app: str, *, root: Path = RUNBOOKS) -> list[Passage]:
    """The passages of the runbook written for ``app``; none when there is no runbook for it."""
    path = root / f"{app}.md"
    if not path.is_file():
        return []
    return split_markdown(path.read_text(encoding="utf-8"), source=f"runbook:{app}")


def note_passages(workspace: Path) -> list[Passage]:
    """The agent's own incident notes from earlier invocations, oldest first."""
    folder = workspace / NOTES_DIR
    if not folder.is_dir():
        return []
    notes = []
    for path in sorted(folder.glob("*.md")):
        text = path.read_text(encoding="utf-8")[:PASSAGE_CHARS]
        notes.append(Passage(source=f"note:{path.name}", title=path.stem, text=text))
    return notes


def top_passages(query: str, passages: Sequence[Passage], *, embed: Embed, k: int) -> list[Passage]:
    """The ``k`` passages most similar to ``query``, best first; ties keep corpus order (no side effects
    beyond calling ``embed``)."""
    if not passages or k <= 0 or not query.strip():
        return []
    vectors = embed([query, *(f"{p.title}\n{p.text}" for p in passages)])
    scores = [float(score) for score in vectors[1:] @ vectors[0]]
    order = sorted(range(len(passages)), key=lambda i: (-round(scores[i], 6), i))
    return [passages[i] for i in order[:k]]


def wordllama_embedder() -> Embed:
    """The packaged WordLlama model as an ``Embed`` function; ``AgentError`` when it is not installed."""
    try:
        import wordllama  # type: ignore[import-untyped]
        from wordllama import WordLlama
    except ImportError as exc:
        raise AgentError("the retrieval-augmented agent needs the wordllama package") from exc
    # The wheel ships the tokenizer under tokenizers/, which the loader finds when it is named the cache.
    package = Path(wordllama.__file__).resolve().parent
    try:
        model = WordLlama.load(config="l2_supercat", dim=256, cache_dir=package, disable_download=True)
    except (FileNotFoundError, ValueError) as exc:
        raise AgentError(f"the packaged WordLlama model cannot be loaded: {exc}") from exc

    def embed(texts: Sequence[str]) -> Any:
        return model.embed(list(texts), norm=True)

    return embed
