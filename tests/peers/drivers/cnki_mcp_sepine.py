"""Driver for PyPI `cnki-mcp` 0.2.0 (Sepine Tam's; import package `cnki_mcp`), run in its own venv:
the tool's one-box search (`core.tools.basic_search.run`, 2 pages, sorted by date), its
professional search (`core.tools.search.run` with an expression) and its metadata fetch
(`core.tools.metadata.run`). Each call starts the tool's own persistent-profile browser under
$HOME/.cnki-mcp. Argument: a JSON object {"query", "expression"}."""

from __future__ import annotations

import dataclasses
import json
import sys

import _launch


def main(args: dict) -> dict:
    from cnki_mcp.core.tools import basic_search, metadata, search

    out: dict = {}
    simple = basic_search.run(args["query"], limit=40, max_pages=2, sort_by="date")
    out["simple"] = [dataclasses.asdict(r) for r in simple]
    expert = search.run(args["expression"], limit=20)
    out["expert"] = [dataclasses.asdict(r) for r in expert]
    first = simple[0]
    url = getattr(first, "url", None) or getattr(first, "link", None)
    out["detail_url"] = url
    out["detail"] = dataclasses.asdict(metadata.run(url))
    return out


if __name__ == "__main__":
    _launch.install()
    _launch.emit(main(json.loads(sys.argv[1])))
