"""Decoded papers for repeated rankings of one candidate set (DESIGN.md "Ranking cost").

A research search ranks every candidate at each enrichment step; at 3,000 candidates, decoding
every stored paper again took most of a step's CPU, during which the event loop served nothing.
`PaperMemo` reads the stored JSON texts in bulk and decodes only the texts that changed since it
last saw them. The papers it returns are shared between calls: callers only read them (updates go
through the store, which writes a new text)."""

from __future__ import annotations

from collections.abc import Iterable

from cnki_mcp.identity import Paper
from cnki_mcp.store import Store
from cnki_mcp.stored import load


class PaperMemo:
    def __init__(self, store: Store) -> None:
        self._store = store
        self._decoded: dict[str, tuple[str, Paper]] = {}

    def papers(self, refs: Iterable[str]) -> dict[str, Paper]:
        """As `Store.papers_by_refs`: papers keyed by the ref asked for, aliases followed. Only the
        papers of this call are kept for the next (memory: one candidate set, never more)."""
        texts = self._store.paper_texts(refs)
        kept: dict[str, tuple[str, Paper]] = {}
        out: dict[str, Paper] = {}
        for ref, (target, text) in texts.items():
            held = kept.get(target) or self._decoded.get(target)
            if held is None or held[0] != text:
                held = (text, load(Paper, text))
            kept[target] = held
            out[ref] = held[1]
        self._decoded = kept
        return out
