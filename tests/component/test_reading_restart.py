"""read_online_html after a server restart (DESIGN.md "Reading"): a complete body the store keeps
(text in `library_texts`, sections and coverage in `reader_pages`) is paged from the store, not
read again through the reader (4 requests: detail, order, htmlread, reader); a body the store
cannot vouch for is read again."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from cnki_mcp import reading_service
from cnki_mcp.clock import FakeClock
from cnki_mcp.identity import Paper
from cnki_mcp.models import DetailPage, ReaderPage
from cnki_mcp.parse.reader import parse_reader
from cnki_mcp.reading_service import ReaderCapture, ReadingService
from cnki_mcp.store import Store
from cnki_mcp.store.db import to_ts
from cnki_mcp.store.library import MAX_TEXT_CHARS
from tests.library_helpers import row

TITLE = "违约金酌减规则研究"
PARA = "违约金过高时，法院依当事人请求予以适当减少。" * 12
HEADINGS = [(2, "一、引言"), (2, "二、规则"), (3, "（一）比较法"), (2, "三、结论")]


def body(headings: list[tuple[int, str]] = HEADINGS, para: str = PARA, url: str = "invoice=S&nonce=T") -> ReaderPage:
    text = "".join(f"<h{lvl}>{t}</h{lvl}><p>{t}：{para}</p>" for lvl, t in headings)
    toc = "".join(f'<span class="tit">{t}</span>' for _, t in headings)
    html = (
        f'<html><head><meta name="citation_title" content="{TITLE}"></head><body>'
        f'<div class="catalogboxs">{toc}</div><div id="paperRead">{text}</div></body></html>'
    )
    return parse_reader(html, f"https://kns.cnki.net/reader/xml?{url}")


class Reader:
    """The reader's visit, counted: each one is 4 CNKI requests on the site."""

    def __init__(self, *pages: ReaderPage) -> None:
        self.pages = list(pages)
        self.visits = 0

    async def read(self, paper: Paper, op: Any = None) -> ReaderCapture:
        page = self.pages[min(self.visits, len(self.pages) - 1)]
        self.visits += 1
        return ReaderCapture(page=page, detail=DetailPage(title=paper.title), detail_url=paper.locator or "")


def stored_paper(store: Store, clock: FakeClock) -> str:
    [paper] = store.upsert_from_grid([row(TITLE, "FXYJ202101001")], clock.now())
    return paper.record_ref


async def read_once(store: Store, clock: FakeClock, reader: Reader) -> str:
    """The stored paper, read once by this process's service (the reader's page kept)."""
    ref = stored_paper(store, clock)
    await ReadingService(store, reader, clock).read(ref)
    return ref


async def restarted(data: Path, clock: FakeClock, reader: Reader, ref: str, **kw: Any) -> str:
    """The source of a read by a new process's service on the same data directory."""
    with Store.open(data, clock) as store:
        return (await ReadingService(store, reader, clock).read(ref, **kw)).source


async def test_a_body_read_before_a_restart_is_paged_from_the_store_without_opening_the_reader(
    tmp_path: Path, clock: FakeClock
) -> None:
    data = tmp_path / "data"
    reader = Reader(body())
    with Store.open(data, clock) as store:
        ref = stored_paper(store, clock)
        first = await ReadingService(store, reader, clock).read(ref, max_characters=100)
    await clock.advance(60)
    with Store.open(data, clock) as store:
        service = ReadingService(store, reader, clock)
        again = await service.read(ref, max_characters=100)
        rest = await service.read(ref, offset=100, max_characters=100_000)
        part = await service.read(ref, section="二、规则")
    assert reader.visits == 1  # the reader was opened once, before the restart
    assert (again.source, again.text, again.sections) == ("cache", first.text, first.sections)
    assert (again.coverage, again.title, again.observed_at) == (first.coverage, first.title, first.observed_at)
    assert again.text + rest.text == body().text and rest.next_offset is None
    assert part.section is not None and "（一）比较法" in part.text and "三、结论" not in part.text


async def test_a_stored_body_is_reused_for_30_days_by_the_same_parser_version(
    tmp_path: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    reader = Reader(body())
    with Store.open(data, clock) as store:
        ref = await read_once(store, clock, reader)
    await clock.advance(29 * 24 * 3600)
    assert await restarted(data, clock, reader, ref) == "cache"
    with monkeypatch.context() as patch:  # a parser that extracts otherwise now
        patch.setattr(reading_service, "PARSER_VERSION", reading_service.PARSER_VERSION + 1)
        assert await restarted(data, clock, reader, ref) == "reader"
    assert reader.visits == 1 + 1
    await clock.advance(30 * 24 * 3600)
    assert await restarted(data, clock, reader, ref) == "reader"
    assert reader.visits == 1 + 2


@pytest.mark.parametrize(
    "kept",
    [
        pytest.param(body(url="invoice=S&loginType=trialRead"), id="trial"),
        pytest.param(body(para="段落。" * (MAX_TEXT_CHARS // 8)), id="text cut by the store's bound"),
    ],
)
async def test_a_body_the_store_cannot_give_back_whole_is_read_again_after_a_restart(
    tmp_path: Path, clock: FakeClock, kept: ReaderPage
) -> None:
    data = tmp_path / "data"
    reader = Reader(kept)
    with Store.open(data, clock) as store:
        ref = await read_once(store, clock, reader)
    assert await restarted(data, clock, reader, ref) == "reader"
    assert reader.visits == 2


async def test_a_stored_page_whose_text_was_replaced_is_not_paged_over_the_new_text(
    tmp_path: Path, clock: FakeClock
) -> None:
    # the sections' offsets belong to the text they were read with
    data = tmp_path / "data"
    reader = Reader(body())
    with Store.open(data, clock) as store:
        ref = await read_once(store, clock, reader)
        store.save_fulltext(ref, "html", "另一版本的正文。" * 50, clock.now())
    assert await restarted(data, clock, reader, ref) == "reader"
    assert reader.visits == 2


def _rewrite_page(store: Store, ref: str, data: str, version: int) -> None:
    """The row as another release (other models, another parser version) would have kept it."""
    with store._write() as conn:
        conn.execute("UPDATE reader_pages SET data = ?, parser_version = ? WHERE record_ref = ?", (data, version, ref))


@pytest.mark.parametrize(
    ("kept", "versions_back"),
    [
        pytest.param(lambda d: {**d, "coverage": {**d["coverage"], "old_field": 1}}, 1, id="older parser, unknown key"),
        pytest.param(lambda d: {**d, "sections": "不是列表"}, 0, id="this parser, a field of another type"),
        pytest.param(lambda d: [d], 0, id="this parser, not a page"),
    ],
)
async def test_a_stored_page_this_release_cannot_read_is_a_miss_and_is_replaced(
    tmp_path: Path, clock: FakeClock, kept: Callable[[dict[str, Any]], Any], versions_back: int
) -> None:
    data = tmp_path / "data"
    reader = Reader(body())
    with Store.open(data, clock) as store:
        ref = await read_once(store, clock, reader)
        with store._read() as conn:
            [(stored,)] = conn.execute("SELECT data FROM reader_pages").fetchall()
        _rewrite_page(store, ref, json.dumps(kept(json.loads(stored))), reading_service.PARSER_VERSION - versions_back)
    assert await restarted(data, clock, reader, ref) == "reader"
    assert await restarted(data, clock, reader, ref) == "cache"  # the row read again replaced it
    assert reader.visits == 2


async def test_a_page_stamped_by_a_clock_that_was_ahead_is_not_reused_once_the_clock_is_put_right(
    tmp_path: Path, clock: FakeClock
) -> None:
    data = tmp_path / "data"
    reader = Reader(body())
    ahead = FakeClock(wall=clock.now() + timedelta(days=20))
    with Store.open(data, ahead) as store:
        ref = await read_once(store, ahead, reader)
    assert await restarted(data, clock, reader, ref) == "reader"
    assert await restarted(data, clock, reader, ref) == "cache"  # kept again with the right time
    with Store.open(data, clock) as store, store._read() as conn:
        assert conn.execute("SELECT observed_at FROM reader_pages").fetchall() == [(to_ts(clock.now()),)]
    assert reader.visits == 2
