"""Body cache (30 min / 16, never trial or partial), paging by offset and section, complete_article,
and the service's cache-first flow over a fake reader backend."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from cnki_mcp.clock import FakeClock
from cnki_mcp.errors import CnkiError, HtmlEntryNotFound
from cnki_mcp.identity import Paper
from cnki_mcp.models import DetailPage, ReaderPage
from cnki_mcp.parse.reader import parse_reader
from cnki_mcp.reading_service import BodyCache, ReaderCapture, ReadingService, complete_article, page_body

WHEN = datetime(2026, 1, 1, tzinfo=UTC)
PARA = "这是正文段落，包含足够多的文字用于测试分页与章节切分。" * 4


def reader_html(headings: list[tuple[int, str]], catalog: list[str] | None = None) -> str:
    body = "".join(f"<h{lvl}>{t}</h{lvl}><p>{t}：{PARA}</p>" for lvl, t in headings)
    toc = "".join(f'<span class="tit">{c}</span>' for c in (catalog or [t for _, t in headings]))
    return (
        '<html><head><meta name="citation_title" content="测试论文"></head><body>'
        f'<div class="catalogboxs">{toc}</div><div id="paperRead">{body}</div></body></html>'
    )


HEADINGS = [(2, "一、引言"), (2, "二、理论"), (3, "（一）历史"), (3, "（二）现状"), (2, "三、结论")]


def complete() -> ReaderPage:
    return parse_reader(reader_html(HEADINGS), "https://kns.cnki.net/reader/xml?invoice=S&nonce=T")


def trial() -> ReaderPage:
    return parse_reader(
        reader_html(HEADINGS[:2]), "https://kns.cnki.net/reader/xml?invoice=S&loginType=trialRead"
    )


def partial() -> ReaderPage:
    return parse_reader(reader_html(HEADINGS[:2], [t for _, t in HEADINGS]), None)


def code_of(fn: Any, *args: Any, **kwargs: Any) -> str:
    with pytest.raises(CnkiError) as info:
        fn(*args, **kwargs)
    return info.value.code


def test_complete_article_is_false_for_trial_and_partial_and_null_otherwise() -> None:
    assert complete_article(trial()) is False
    assert complete_article(partial()) is False
    assert complete_article(complete()) is None


def test_offset_paging_walks_the_whole_text() -> None:
    page = complete()
    seen, offset = "", 0
    while offset is not None:
        chunk = page_body(page, "rec_a", observed_at=WHEN, source="reader", offset=offset, max_characters=97)
        assert len(chunk.text) <= 97 and chunk.total_characters == len(page.text)
        seen += chunk.text
        offset = chunk.next_offset
    assert seen == page.text


def test_section_by_title_includes_its_subsections_and_ignores_case_and_spaces() -> None:
    page = complete()
    got = page_body(page, "rec_a", observed_at=WHEN, source="reader", section="  二、理论 ")
    assert got.section is not None and got.section.title == "二、理论"
    assert "（一）历史" in got.text and "（二）现状" in got.text and "三、结论" not in got.text
    assert got.total_characters == got.section.length and got.next_offset is None
    by_index = page_body(page, "rec_a", observed_at=WHEN, source="reader", section=2)
    assert by_index.section is not None and by_index.section.title == "（一）历史"
    assert "（二）现状" not in by_index.text


def test_unknown_section_and_bad_paging_arguments_are_invalid() -> None:
    page = complete()
    assert (
        code_of(page_body, page, "r", observed_at=WHEN, source="reader", section="不存在")
        == "INVALID_ARGUMENT"
    )
    assert code_of(page_body, page, "r", observed_at=WHEN, source="reader", section=99) == "INVALID_ARGUMENT"
    assert (
        code_of(page_body, page, "r", observed_at=WHEN, source="reader", max_characters=200_001)
        == "INVALID_ARGUMENT"
    )
    assert (
        code_of(page_body, page, "r", observed_at=WHEN, source="reader", offset=10**6) == "INVALID_ARGUMENT"
    )


def test_a_name_several_sections_contain_lists_them_with_their_indexes_instead_of_not_found() -> None:
    page = complete()
    with pytest.raises(CnkiError) as info:
        page_body(page, "r", observed_at=WHEN, source="reader", section="、")
    assert info.value.code == "INVALID_ARGUMENT"
    matches = info.value.details["matches"]
    assert [m["title"] for m in matches] == ["一、引言", "二、理论", "三、结论"]
    picked = page_body(page, "r", observed_at=WHEN, source="reader", section=matches[1]["index"])
    assert picked.section is not None and picked.section.title == "二、理论"


def test_result_never_carries_the_reader_url() -> None:
    dumped = page_body(complete(), "rec_a", observed_at=WHEN, source="reader").model_dump_json()
    assert "invoice" not in dumped and "nonce" not in dumped and "reader/xml" not in dumped


def test_partial_result_warns_content_partial() -> None:
    got = page_body(partial(), "rec_a", observed_at=WHEN, source="reader")
    assert got.warnings == ["CONTENT_PARTIAL"] and got.coverage.missing_catalog_headings


async def test_cache_keeps_complete_bodies_30_minutes_and_at_most_16() -> None:
    clock = FakeClock()
    cache = BodyCache(clock)
    assert cache.put("rec_a", complete(), WHEN)
    assert not cache.put("rec_t", trial(), WHEN) and not cache.put("rec_p", partial(), WHEN)
    assert "rec_t" not in cache and "rec_p" not in cache
    for i in range(16):
        cache.put(f"rec_{i}", complete(), WHEN)
    assert len(cache) == 16 and "rec_a" not in cache  # the oldest went first
    await clock.advance(30 * 60)
    assert len(cache) == 0


class FakeStore:
    def __init__(self) -> None:
        self.paper = Paper(
            record_ref="rec_a", title="测试论文", locator="https://kns.cnki.net/kcms2/article/abstract?v=x"
        )
        self.upserts = 0
        self.texts: list[tuple[str, str, str, bool]] = []

    def get(self, record_ref: str) -> Paper | None:
        return self.paper if record_ref == "rec_a" else None

    def resolve_ref(self, record_ref: str) -> str:
        return record_ref

    def upsert_from_detail(self, detail: DetailPage, locator: str | None, observed_at: datetime,
                           expected_ref: str | None = None, **kwargs: Any) -> Paper:  # fmt: skip
        assert expected_ref == "rec_a"
        self.upserts += 1
        return self.paper

    def save_fulltext(self, record_ref: str, kind: str, text: str, observed_at: datetime, *,
                      complete: bool = True) -> bool:  # fmt: skip
        self.texts.append((record_ref, kind, text, complete))
        return True

    def save_reader_page(self, record_ref: str, page: ReaderPage, observed_at: datetime, *,
                         parser_version: int) -> None:  # fmt: skip
        pass

    def reader_page(self, record_ref: str, now: datetime, *, parser_version: int) -> None:
        return None  # a process that stores nothing: every restart reads again


class FakeBackend:
    def __init__(self, pages: list[ReaderPage]) -> None:
        self.pages = pages
        self.calls = 0

    async def read(self, paper: Paper, op: Any = None) -> ReaderCapture:
        page = self.pages[min(self.calls, len(self.pages) - 1)]
        self.calls += 1
        return ReaderCapture(page=page, detail=DetailPage(title=paper.title), detail_url=paper.locator or "")


async def test_service_reads_once_then_pages_from_the_cache_until_it_expires() -> None:
    clock = FakeClock()
    backend = FakeBackend([complete()])
    service = ReadingService(FakeStore(), backend, clock)
    first = await service.read("rec_a", max_characters=50)
    second = await service.read("rec_a", offset=50, max_characters=50)
    assert (first.source, second.source, backend.calls) == ("reader", "cache", 1)
    assert first.text + second.text == complete().text[:100]
    await clock.advance(30 * 60)
    assert (await service.read("rec_a")).source == "reader" and backend.calls == 2


async def test_service_reads_a_trial_body_again_on_every_call() -> None:
    backend = FakeBackend([trial(), complete()])
    service = ReadingService(FakeStore(), backend, FakeClock())
    assert (await service.read("rec_a")).trial
    again = await service.read("rec_a")
    assert again.source == "reader" and not again.trial and backend.calls == 2


async def test_paging_on_through_a_trial_or_partial_body_does_not_open_the_reader_for_every_page() -> None:
    # Each page of a trial or partial body opened the reader again (the HTML阅读 entry goes
    # through the order URL) and was cut from another capture; a continuation pages the body the
    # call before it read, and a read from the start still asks again (a complete body may come)
    for incomplete in (trial(), partial()):
        backend = FakeBackend([incomplete, complete()])
        service = ReadingService(FakeStore(), backend, FakeClock())
        first = await service.read("rec_a", max_characters=40)
        assert first.complete_article is False and first.next_offset == 40
        second = await service.read("rec_a", offset=40, max_characters=40)
        assert (second.source, backend.calls) == ("cache", 1)
        assert first.text + second.text == incomplete.text[:80] and second.complete_article is False
        again = await service.read("rec_a")
        assert again.source == "reader" and again.complete_article is not False and backend.calls == 2
        assert (await service.read("rec_a", offset=40, max_characters=40)).text == complete().text[40:80]


async def test_service_unknown_record_is_document_not_found() -> None:
    service = ReadingService(FakeStore(), FakeBackend([complete()]), FakeClock())
    with pytest.raises(CnkiError) as info:
        await service.read("rec_zz")
    assert info.value.code == "DOCUMENT_NOT_FOUND"


async def test_service_stores_every_body_read_whole_and_marks_a_trial_incomplete() -> None:
    store = FakeStore()
    service = ReadingService(store, FakeBackend([trial(), complete()]), FakeClock())
    await service.read("rec_a", max_characters=10)
    await service.read("rec_a", max_characters=10)
    await service.read("rec_a")  # from the cache: nothing new to store
    assert store.texts == [("rec_a", "html", trial().text, False), ("rec_a", "html", complete().text, True)]


class GatedBackend(FakeBackend):
    """A reader that answers only when the test lets it (two calls are then both in flight)."""

    def __init__(self, pages: list[ReaderPage]) -> None:
        super().__init__(pages)
        self.entered = asyncio.Event()
        self.release = asyncio.Event()

    async def read(self, paper: Paper, op: Any = None) -> ReaderCapture:
        self.entered.set()
        await self.release.wait()
        return await super().read(paper, op)


async def test_two_reads_of_one_paper_at_once_open_the_reader_once() -> None:
    # two clients asking for the same paper at the same moment: one reader visit, the second
    # call pages the body the first one cached
    store = FakeStore()
    backend = GatedBackend([complete()])
    service = ReadingService(store, backend, FakeClock())
    first = asyncio.create_task(service.read("rec_a", max_characters=50))
    await backend.entered.wait()
    second = asyncio.create_task(service.read("rec_a", offset=50, max_characters=50))
    await asyncio.sleep(0)
    backend.release.set()
    one, two = await asyncio.gather(first, second)
    assert (one.source, two.source, backend.calls) == ("reader", "cache", 1)
    assert one.text + two.text == complete().text[:100]
    assert len(store.texts) == 1


async def test_a_trial_body_read_by_one_call_does_not_stop_the_next_from_reading_again() -> None:
    # only a cached (complete) body is shared; a trial one is read again by the call that waited
    backend = GatedBackend([trial(), complete()])
    service = ReadingService(FakeStore(), backend, FakeClock())
    first = asyncio.create_task(service.read("rec_a"))
    await backend.entered.wait()
    second = asyncio.create_task(service.read("rec_a"))
    backend.release.set()
    one, two = await asyncio.gather(first, second)
    assert one.trial and not two.trial and two.source == "reader" and backend.calls == 2


class NoEntryBackend:
    """A paper whose detail page has no HTML reader entry."""

    def __init__(self) -> None:
        self.calls = 0

    async def read(self, paper: Paper, op: Any = None) -> ReaderCapture:
        self.calls += 1
        raise HtmlEntryNotFound(record_ref=paper.record_ref, available=["caj"])


async def test_a_paper_without_an_html_entry_is_not_asked_again_until_the_cache_time_passed() -> None:
    clock = FakeClock()
    backend = NoEntryBackend()
    service = ReadingService(FakeStore(), backend, clock)
    for _ in range(3):
        with pytest.raises(CnkiError) as info:
            await service.read("rec_a")
        assert info.value.code == "HTML_ENTRY_NOT_FOUND"
    assert backend.calls == 1  # the detail page (1-3 requests) was asked once
    assert info.value.details.get("remembered") is True
    assert info.value.details.get("available") == ["caj"]  # the files the page offered, said again
    await clock.advance(30 * 60)
    with pytest.raises(CnkiError) as again:
        await service.read("rec_a")
    assert again.value.code == "HTML_ENTRY_NOT_FOUND" and "remembered" not in again.value.details
    assert backend.calls == 2


def test_a_section_name_typed_with_half_width_marks_or_plain_digits_finds_the_section() -> None:
    # The headings carry full-width （一） and script forms (CO₂); a client types (一) and CO2.
    from cnki_mcp.models import Section
    from cnki_mcp.reading_service import find_section

    sections = [Section(level=1, title="（一）酌减规则的影响机制", offset=0, length=10),
                Section(level=1, title="二、CO₂排放的测算", offset=10, length=10)]  # fmt: skip
    assert find_section(sections, "(一)酌减规则的影响机制")[0] == 0
    assert find_section(sections, "CO2排放")[0] == 1


class SleepingClock(FakeClock):
    """A laptop's clocks across a sleep: the monotonic clock stands still (Linux CLOCK_MONOTONIC,
    macOS), the wall clock jumps."""

    def __init__(self) -> None:
        super().__init__()
        self.slept = timedelta(0)

    def now(self) -> datetime:
        return super().now() + self.slept


async def test_the_30_minutes_of_the_reading_memory_count_the_time_the_laptop_slept() -> None:
    """Remembered at night, asked again in the morning: it was still 'remembered' (no request)
    and served from the body cache, for the part of 30 monotonic minutes that was left."""
    clock = SleepingClock()
    no_entry = NoEntryBackend()
    service = ReadingService(FakeStore(), no_entry, clock)
    with pytest.raises(CnkiError) as first:
        await service.read("rec_a")
    assert first.value.code == "HTML_ENTRY_NOT_FOUND" and "remembered" not in first.value.details
    backend = FakeBackend([complete()])
    bodies = ReadingService(FakeStore(), backend, clock)
    assert (await bodies.read("rec_a")).source == "reader"
    await clock.advance(60)
    clock.slept = timedelta(hours=9)  # the lid closed overnight
    with pytest.raises(CnkiError) as info:
        await service.read("rec_a")
    assert no_entry.calls == 2 and info.value.details.get("remembered") is not True
    assert (await bodies.read("rec_a")).source == "reader" and backend.calls == 2


async def test_after_a_login_a_continuation_reads_the_reader_again_not_the_trial_body() -> None:
    """A trial body is kept for the continuations that page through it (30 minutes); after a login
    they paged that trial body on although the whole article may come now (accounts #8)."""
    backend = FakeBackend([trial(), complete()])
    service = ReadingService(FakeStore(), backend, FakeClock())
    assert (await service.read("rec_a", max_characters=40)).trial
    service.forget_incomplete()
    after = await service.read("rec_a", offset=40, max_characters=40)
    assert (after.source, after.trial, backend.calls) == ("reader", False, 2)
