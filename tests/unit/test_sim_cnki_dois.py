"""CNKI mints DOIs for theses, proceedings papers and newspaper articles, not only for journal
papers (tests/fixtures/cnki-real/dataset/kcms2_2025_doi_by_kind.txt: 102 of 103 master's theses,
all doctoral theses, proceedings papers and newspaper articles of a 2025 crawl carry one). The
simulator's corpus gives its recent records of those kinds one of the same shape, so the path from
the detail page's DOI row and the export's `%R` to a paper's DOI is exercised beyond journals."""

from __future__ import annotations

import re

import pytest
from sim_pages_fixtures import BASE, FakeLinks

from cnki_mcp.parse.detail import parse_detail
from cnki_mcp.parse.export import parse_export
from cnki_mcp.sim.corpus import Corpus, SimRecord
from cnki_mcp.sim.export import render_show_export
from cnki_mcp.sim.links import Visitor
from cnki_mcp.sim.pages.detail import render_detail
from tests.conftest import read_real

KIND_ROW = {"硕士": "硕士", "博士": "博士", "会议": "会议(论文集)", "报纸": "报纸"}


def _shape(doi: str) -> str:
    """A DOI with its digits and letters generalised: `10.26990/d.cnki.gsltc.2025.000255` ->
    `99.99999/a.aaaa.aaaaa.9999.999999`."""
    return re.sub(r"[a-z]", "a", re.sub(r"\d", "9", doi.lower()))


def _real() -> dict[str, tuple[int, int, set[str]]]:
    out: dict[str, tuple[int, int, set[str]]] = {}
    for line in read_real("dataset/kcms2_2025_doi_by_kind.txt").splitlines():
        if line.startswith("#"):
            continue
        kind, with_doi, without, *examples = line.split("\t")
        out[kind] = (int(with_doi), int(without), {_shape(d) for d in " ".join(examples).split()})
    return out


def _recent(corpus: Corpus, kind: str) -> list[SimRecord]:
    return [r for r in corpus.by_id.values() if r.type == kind and (r.year or 0) >= 2020]


@pytest.mark.parametrize("kind", list(KIND_ROW))
def test_recent_theses_proceedings_and_newspaper_articles_have_a_cnki_doi_of_the_real_shape(kind: str) -> None:
    with_doi, without, shapes = _real()[KIND_ROW[kind]]
    assert with_doi > without  # the real site: most records of this kind have one
    corpus = Corpus.load()
    recent = _recent(corpus, kind)
    assert recent
    for record in recent:
        assert record.doi is not None, record.id
        assert _shape(record.doi) in shapes, record.doi


@pytest.mark.parametrize("kind", list(KIND_ROW))
def test_the_detail_page_and_the_export_of_such_a_record_give_its_doi(kind: str) -> None:
    corpus = Corpus.load()
    record = _recent(corpus, kind)[0]
    page = parse_detail(render_detail(record, corpus, FakeLinks(), Visitor()), url=f"{BASE}/kcms2/article/abstract")
    assert record.doi and page.doi == record.doi
    (exported,) = parse_export(render_show_export([record]))
    assert exported.doi == record.doi
