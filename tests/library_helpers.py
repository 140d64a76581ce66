"""Grid rows and calls the library search's component tests share (`pipeline/library.py`)."""

from __future__ import annotations

from cnki_mcp.clock import FakeClock
from cnki_mcp.models import GridRow, NativeId
from cnki_mcp.pipeline.library import LibraryInput, LibraryPage, search_library
from cnki_mcp.store import Store


def row(title: str, filename: str, **kw: object) -> GridRow:
    """A journal paper's list row by 王明 in 法学研究, 2021, unless `kw` says otherwise."""
    base: dict[str, object] = {
        "title": title,
        "authors": ["王明"],
        "source": "法学研究",
        "year": 2021,
        "doc_type": "期刊",
        "native": NativeId(dbname="CJFDLAST2021", filename=filename),
        "detail_url": f"https://kns.cnki.net/kcms2/article/abstract?v={filename}",
    }
    base.update(kw)
    return GridRow.model_validate(base)


def find(store: Store, query: str, clock: FakeClock, **kw: object) -> LibraryPage:
    """search_library(query, **kw) on `store`."""
    return search_library(store, LibraryInput(query=query, **kw), store.data_dir, clock)  # type: ignore[arg-type]
