"""One sample paper as a grid row and as a detail page (the identity and store tests build on it)."""

from __future__ import annotations

from cnki_mcp.models import Author, DetailPage, GridRow, NativeId


def sample_row(**kw: object) -> GridRow:
    """The sample paper's grid row (without a detail link); `kw` overrides or adds fields."""
    base: dict[str, object] = {
        "title": "深度学习在医学影像中的应用",
        "authors": ["张三", "李四"],
        "source": "计算机学报",
        "year": 2024,
        "date": "2024-03-01",
        "native": NativeId(dbname="CJFDLAST2024", filename="JSJX202403001"),
        "cited": 3,
        "downloads": 100,
    }
    base.update(kw)
    return GridRow.model_validate(base)


def sample_detail(**kw: object) -> DetailPage:
    """The sample paper's detail page; `kw` overrides or adds fields."""
    base: dict[str, object] = {
        "title": "深度学习在医学影像中的应用",
        "authors": [Author(name="张三", institutions=["北京大学"]), Author(name="李四")],
        "source": "计算机学报",
        "year": 2024,
        "date": "2024-03-15",
        "native": NativeId(dbcode="CJFD", filename="JSJX202403001"),
        "doi": "10.1234/jsjx.2024.001",
        "abstract": "本文研究……",
        "cited": 5,
        "downloads": 120,
    }
    base.update(kw)
    return DetailPage.model_validate(base)
