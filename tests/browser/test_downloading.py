"""download_paper against the simulator in a real headless Chromium: PDF and CAJ downloads through
the new tab CNKI opens, refusal pages, an HTML page served as a PDF, a login solved by a "person",
an uncertain outcome that is never replayed without `retry`, no overwrite, the cache and the text
of the downloaded PDF."""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from cnki_mcp.clock import SystemClock
from cnki_mcp.errors import BudgetExhausted
from cnki_mcp.files import safe_file_name
from cnki_mcp.pdf_text import read_pdf_text
from cnki_mcp.sim.pages.files import caj_bytes, pdf_bytes
from cnki_mcp.sim.server import SimServer
from cnki_mcp.site.browser import BrowserHost
from cnki_mcp.site.cnki import CnkiSite
from cnki_mcp.site.downloading import Downloader
from cnki_mcp.site.human import HumanGate
from cnki_mcp.site.reading import DetailTabs
from cnki_mcp.store import Store, file_sha256
from tests.site_stack import (
    STEP_TIMEOUT,
    FakeOp,
    expect_code,
    log_in,
    sim_settings,
    site_stack,
    tab_with,
)

pytestmark = pytest.mark.browser

ORDER = "/bar/download/order"


@dataclass
class Env:
    sim: SimServer
    host: BrowserHost
    site: CnkiSite
    gate: HumanGate
    tabs: DetailTabs
    clock: SystemClock
    root: Path


@pytest.fixture(scope="module")
async def env_module(
    _sim_server_session: SimServer, tmp_path_factory: pytest.TempPathFactory, browser_executable: str
) -> AsyncIterator[Env]:
    sim = _sim_server_session
    root = tmp_path_factory.mktemp("dl")
    async with site_stack(sim_settings(root / "browser-data", sim.origin, browser_executable)) as stack:
        yield Env(sim, stack.host, stack.site, stack.gate, stack.detail_tabs(), stack.clock, root)


@dataclass
class Case:
    env: Env
    store: Store
    downloader: Downloader
    data_dir: Path

    async def ref(self, record_id: str) -> str:
        locator = self.env.sim.links.detail(record_id)
        detail = await self.env.site.detail(locator)
        return self.store.upsert_from_detail(detail, locator, self.env.clock.now()).record_ref


@pytest.fixture
async def case(env_module: Env, sim_server: SimServer, tmp_path: Path) -> AsyncIterator[Case]:
    data_dir = tmp_path / "data"
    with Store.open(data_dir, env_module.clock) as store:
        downloader = Downloader(env_module.tabs, store, env_module.clock, data_dir)
        yield Case(env_module, store, downloader, data_dir)
        await downloader.close()


async def test_auto_downloads_the_pdf_and_a_repeat_is_served_from_the_cache(case: Case) -> None:
    sim = case.env.sim
    rec = sim.corpus.by_id["r0001"]
    ref = await case.ref("r0001")
    async with asyncio.timeout(STEP_TIMEOUT):
        first = await case.downloader.download(ref, op=FakeOp())
    path = Path(first.path)
    assert first.source == "download" and first.format == "pdf"
    assert path == case.data_dir / "downloads" / safe_file_name(rec.title, ref, "pdf")
    assert path.read_bytes() == pdf_bytes(rec)
    assert first.sha256 == file_sha256(path) and first.bytes == path.stat().st_size
    assert [e.params.get("type") for e in sim.requests_for(ORDER, "GET")] == ["pdf"]
    assert [c.outcome for c in case.store.clicks_for(ref)] == ["downloaded"]

    again = await case.downloader.download(ref, op=FakeOp())
    assert again.source == "cache" and again.path == first.path
    assert len(sim.requests_for(ORDER, "GET")) == 1  # nothing clicked again

    text = read_pdf_text(path, case.data_dir, pages="1", max_characters=5_000)
    assert text.pages_returned == [1] and rec.title in text.text.replace("\n", "")


async def test_caj_goes_into_a_subdirectory_under_its_own_name(case: Case) -> None:
    rec = case.env.sim.corpus.by_id["r0002"]
    ref = await case.ref("r0002")
    async with asyncio.timeout(STEP_TIMEOUT):
        got = await case.downloader.download(
            ref, format="caj", filename="第二篇.caj", subdirectory="合同/违约金"
        )
    assert Path(got.path) == case.data_dir / "downloads" / "合同" / "违约金" / "第二篇.caj"
    assert Path(got.path).read_bytes() == caj_bytes(rec) and got.format == "caj"
    await expect_code(
        case.downloader.download(ref, format="caj", subdirectory="../x", retry=True), "INVALID_ARGUMENT"
    )
    await expect_code(read_pdf_text_async(got.path, case.data_dir), "INVALID_FILE")


async def read_pdf_text_async(path: str, data_dir: Path) -> None:
    read_pdf_text(path, data_dir)


async def test_auto_falls_back_to_caj_when_there_is_no_pdf_entry(case: Case) -> None:
    ref = await case.ref("r0031")  # a CAJ-only record
    async with asyncio.timeout(STEP_TIMEOUT):
        got = await case.downloader.download(ref)
    assert got.format == "caj" and Path(got.path).suffix == ".caj"


async def test_refusal_page_in_the_new_tab_is_download_refused_with_its_words(case: Case) -> None:
    sim = case.env.sim
    ref = await case.ref("r0001")
    sim.set_scenario(
        {"faults": [{"path": "/bar/download", "kind": "download_refused", "reason": "余额不足"}]}
    )
    error = await expect_code(case.downloader.download(ref, op=FakeOp()), "DOWNLOAD_REFUSED")
    assert "余额不足" in error.details["text"]
    assert [c.outcome for c in case.store.clicks_for(ref)] == ["refused"]
    assert not list((case.data_dir / "downloads").glob("**/*.pdf"))


async def test_html_page_served_as_pdf_is_an_invalid_file(case: Case) -> None:
    sim = case.env.sim
    ref = await case.ref("r0001")
    sim.set_scenario({"faults": [{"path": "/bar/download", "kind": "html_as_pdf"}]})
    await expect_code(case.downloader.download(ref, format="pdf"), "INVALID_FILE")
    assert [c.outcome for c in case.store.clicks_for(ref)] == ["invalid_file"]
    assert case.store.download_for(ref, "pdf") is None


async def test_an_invalid_file_is_not_clicked_for_again_without_retry(case: Case) -> None:
    # CNKI handled the order and sent a page under a PDF name: whether it charged is unknown, so
    # the next call clicks nothing (it clicked again at once); retry=true clicks again
    sim = case.env.sim
    ref = await case.ref("r0003")
    sim.set_scenario({"faults": [{"path": "/bar/download", "kind": "html_as_pdf", "at": [1]}]})
    await expect_code(case.downloader.download(ref, format="pdf"), "INVALID_FILE")
    again = await expect_code(case.downloader.download(ref, format="pdf"), "SIDE_EFFECT_UNCERTAIN")
    assert again.details["last_outcome"] == "invalid_file"
    assert len(sim.requests_for(ORDER, "GET")) == 1  # nothing clicked
    async with asyncio.timeout(STEP_TIMEOUT):
        done = await case.downloader.download(ref, format="pdf", retry=True)
    assert done.source == "download" and Path(done.path).read_bytes() == pdf_bytes(sim.corpus.by_id["r0003"])
    assert [c.outcome for c in case.store.clicks_for(ref)] == ["invalid_file", "downloaded"]
    assert len(sim.requests_for(ORDER, "GET")) == 2


async def test_an_invalid_file_click_no_longer_stops_calls_once_a_retried_click_settled_unsent(case: Case) -> None:
    # invalid_file, then a retry=true click whose order CNKI answered 429 (not handled: settled
    # site_error, "the next call clicks again without retry"): the next call without retry was
    # SIDE_EFFECT_UNCERTAIN (last_outcome invalid_file), naming the click whose risk the caller
    # had already taken with retry=true (site-rules.md §2.7)
    sim = case.env.sim
    ref = await case.ref("r0005")
    sim.set_scenario({"faults": [
        {"path": "/bar/download", "kind": "html_as_pdf", "at": [1]}, {"path": ORDER, "kind": "429", "at": [2]},
    ]})  # fmt: skip
    await expect_code(case.downloader.download(ref, format="pdf"), "INVALID_FILE")
    await expect_code(case.downloader.download(ref, format="pdf", retry=True), "RATE_LIMITED")
    assert [c.outcome for c in case.store.clicks_for(ref)] == ["invalid_file", "site_error"]
    async with asyncio.timeout(STEP_TIMEOUT):
        done = await case.downloader.download(ref, format="pdf")  # no retry, as the 429 said
    assert done.source == "download" and Path(done.path).read_bytes() == pdf_bytes(sim.corpus.by_id["r0005"])
    assert [c.outcome for c in case.store.clicks_for(ref)] == ["invalid_file", "site_error", "downloaded"]
    assert len(sim.requests_for(ORDER, "GET")) == 3


async def test_a_late_file_of_a_click_a_retried_click_settled_over_is_still_reconciled(case: Case) -> None:
    # The first click's order answers after the call stopped waiting; a retry=true click then
    # meets a 429 (settled site_error). The first click no longer stops a call without retry,
    # but its file, arriving late in the tab kept open for it, is archived, not ordered again.
    sim = case.env.sim
    ref = await case.ref("r0006")
    sim.set_scenario({
        "latency": [{"path": ORDER, "ms": 6000, "at": [1]}], "faults": [{"path": ORDER, "kind": "429", "at": [2]}],
    })  # fmt: skip
    await expect_code(case.downloader.download(ref, wait_seconds=1, op=FakeOp()), "SIDE_EFFECT_UNCERTAIN")
    await expect_code(case.downloader.download(ref, retry=True, op=FakeOp(operation_id="op-b")), "RATE_LIMITED")
    async with asyncio.timeout(STEP_TIMEOUT):
        await case.downloader.wait_late_saves()  # the first click's file lands meanwhile
    got = await case.downloader.download(ref, op=FakeOp(operation_id="op-c"))
    assert got.reconciled and got.source == "download"
    assert len(sim.requests_for(ORDER, "GET")) == 2  # nothing ordered a third time
    assert [c.outcome for c in case.store.clicks_for(ref)] == ["downloaded", "site_error"]


async def download_with_order_aborted(case: Case, ref: str, error_code: str) -> object:
    """download_paper while every order request of the browser fails in the network (Playwright
    aborts it with `error_code`: the tab shows Chromium's own error page); its error."""
    ctx = await case.env.host.ensure()
    pattern = "**" + ORDER + "*"
    await ctx.route(pattern, lambda route: route.abort(error_code))
    try:
        return await expect_code(case.downloader.download(ref, wait_seconds=600), ERRORS_OF[error_code])
    finally:
        await ctx.unroute(pattern)


ERRORS_OF = {"connectionreset": "SIDE_EFFECT_UNCERTAIN", "connectionrefused": "SITE_UNAVAILABLE"}


async def test_an_order_request_broken_in_the_network_is_uncertain_at_once_naming_the_error(case: Case) -> None:
    # It waited the whole wait_seconds (120 s by default, 600 here: longer than STEP_TIMEOUT) and
    # said the download might still be in progress: no file follows the browser's error page
    ref = await case.ref("r0004")
    error = await download_with_order_aborted(case, ref, "connectionreset")
    assert error.details["net_error"] == "net::ERR_CONNECTION_RESET", error.details  # type: ignore[attr-defined]
    assert ORDER in error.details["page_url"] and "waited_seconds" not in error.details  # type: ignore[attr-defined]
    assert case.store.uncertain_click(ref) is not None  # CNKI may have taken the order: retry=true


async def test_an_order_url_the_browser_cannot_reach_is_site_unavailable_and_clicked_again(case: Case) -> None:
    ref = await case.ref("r0004")
    error = await download_with_order_aborted(case, ref, "connectionrefused")
    assert error.details["net_error"] == "net::ERR_CONNECTION_REFUSED", error.details  # type: ignore[attr-defined]
    # nothing reached CNKI: the click is settled and the next call clicks again without retry
    assert [c.outcome for c in case.store.clicks_for(ref)] == ["site_error"]
    async with asyncio.timeout(STEP_TIMEOUT):
        done = await case.downloader.download(ref)
    assert done.source == "download" and [c.outcome for c in case.store.clicks_for(ref)] == ["site_error", "downloaded"]


async def test_login_page_is_handed_to_the_person_and_the_same_download_arrives(case: Case) -> None:
    sim = case.env.sim
    ref = await case.ref("r0002")
    sim.set_scenario({"faults": [{"path": "/bar/download", "kind": "login_required", "at": [1]}]})
    op = FakeOp()
    ctx = await case.env.host.ensure()

    async def person() -> None:
        await op.waiting.wait()
        assert case.env.gate.active_kind == "login"
        await log_in(tab_with(ctx, "/login"), "reader01", "secret")

    solver = asyncio.create_task(person())
    async with asyncio.timeout(STEP_TIMEOUT):
        got = await case.downloader.download(ref, op=op)
    await solver
    assert got.source == "download" and got.format == "pdf"
    assert op.transitions == ["awaiting_user", "running"]
    assert len(case.store.clicks_for(ref)) == 1  # one click; the person's login led to the file


async def test_uncertain_outcome_is_not_clicked_again_until_retry(case: Case) -> None:
    sim = case.env.sim
    ref = await case.ref("r0001")
    # the first order answers long after the call stopped waiting: no file, no page in time
    sim.set_scenario({"latency": [{"path": "/bar/download", "ms": 30_000, "at": [1]}]})
    await expect_code(case.downloader.download(ref, wait_seconds=1, op=FakeOp()), "SIDE_EFFECT_UNCERTAIN")
    assert case.store.uncertain_click(ref, "pdf") is not None

    second = await expect_code(case.downloader.download(ref, op=FakeOp()), "SIDE_EFFECT_UNCERTAIN")
    assert len(case.store.clicks_for(ref)) == 1  # the second call clicked nothing
    # and says the first click's tab still waits for CNKI's answer: retry=true now may be a
    # second order for a file still to come
    assert second.details["order_tab_open"] is True, second.details

    async with asyncio.timeout(STEP_TIMEOUT):
        got = await case.downloader.download(ref, retry=True, op=FakeOp())
    assert got.source == "download" and len(case.store.clicks_for(ref)) == 2
    assert case.store.uncertain_click(ref) is None


@pytest.mark.parametrize(("kind", "code"), [("not_found", "SITE_UNAVAILABLE"), ("429", "RATE_LIMITED")])
async def test_an_error_page_for_the_order_is_its_site_error_at_once_and_the_next_call_clicks_again(
    case: Case, kind: str, code: str
) -> None:
    # It waited the whole wait_seconds (120 s) for a file, then said SIDE_EFFECT_UNCERTAIN "未见拒绝
    # 页面", and the next call asked for retry=true: a 404 or 429 page is CNKI not handling the
    # order, no file came and nothing was charged. (A 5xx page is SIDE_EFFECT_UNCERTAIN at once:
    # test_server_read_download_faults.py, test_an_order_page_answering_a_server_error_….)
    sim = case.env.sim
    ref = await case.ref("r0001")
    sim.set_scenario({"faults": [{"path": "/bar/download", "kind": kind, "at": [1]}]})
    error = await expect_code(case.downloader.download(ref, op=FakeOp()), code)
    assert error.retryable and error.details["record_ref"] == ref
    assert [c.outcome for c in case.store.clicks_for(ref)] == ["site_error"]
    assert case.store.uncertain_click(ref) is None

    async with asyncio.timeout(STEP_TIMEOUT):
        got = await case.downloader.download(ref, op=FakeOp())  # no retry needed
    assert got.source == "download" and len(sim.requests_for(ORDER, "GET")) == 2


async def test_a_404_after_the_order_moved_on_to_the_file_host_keeps_the_click_uncertain(case: Case) -> None:
    # The order URL took the order and redirected to a file URL that answered 404 (the file host
    # lost the file). The tab's status is the final response's, so it read as "the order URL
    # answered 404": settled site_error, and the next call clicked the paid entry again without
    # retry. Only an error page on the order URL itself says the order was not handled.
    sim = case.env.sim
    ref = await case.ref("r0001")
    sim.set_scenario({"faults": [{"path": ORDER, "kind": "file_gone", "at": [1]}]})
    error = await expect_code(case.downloader.download(ref, op=FakeOp()), "SIDE_EFFECT_UNCERTAIN")
    assert error.details["order_status"] == 404 and "/bar/download/file" in error.details["page_url"]
    assert "waited_seconds" not in error.details  # an answer: it did not wait out wait_seconds
    assert case.store.uncertain_click(ref, "pdf") is not None

    await expect_code(case.downloader.download(ref, op=FakeOp()), "SIDE_EFFECT_UNCERTAIN")
    assert len(sim.requests_for(ORDER, "GET")) == 1  # the second call clicked nothing


async def test_a_download_cancelled_while_its_click_waits_for_its_slot_is_settled_not_clicked(case: Case) -> None:
    # A download cancelled while its click waited in the limiter (behind a human step's hold, or
    # other operations' requests) left the recorded click without an outcome: the next call
    # answered SIDE_EFFECT_UNCERTAIN, asking for retry=true, for a click that never happened.
    sim = case.env.sim
    limiter = case.env.tabs.limiter
    ref = await case.ref("r0001")
    details = len(sim.requests_for("/kcms2/article"))
    at_the_click = asyncio.Event()

    @dataclass
    class HeldAtTheClick(FakeOp):
        def charge(self) -> None:
            super().charge()
            if len(sim.requests_for("/kcms2/article")) > details and not at_the_click.is_set():
                limiter.hold()  # the click's slot now waits for the hold to go
                at_the_click.set()

    task = asyncio.ensure_future(case.downloader.download(ref, op=HeldAtTheClick()))
    try:
        async with asyncio.timeout(STEP_TIMEOUT):
            await at_the_click.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    finally:
        limiter.release()
    assert [c.outcome for c in case.store.clicks_for(ref)] == ["not_clicked"]
    assert not sim.requests_for(ORDER, "GET") and case.store.uncertain_click(ref) is None
    async with asyncio.timeout(STEP_TIMEOUT):
        got = await case.downloader.download(ref, op=FakeOp())  # no retry needed
    assert got.source == "download"


@pytest.mark.parametrize("inside", [False, True], ids=["after_the_click", "inside_the_click"])
async def test_a_download_cancelled_once_clicked_keeps_waiting_and_the_next_call_gets_the_file(
    case: Case, monkeypatch: pytest.MonkeyPatch, inside: bool
) -> None:
    # A download cancelled while CNKI was still answering its order closed the order's tabs: the
    # file (perhaps charged) never came, and the next call answered SIDE_EFFECT_UNCERTAIN, so the
    # only way to the paper was retry=true, a second order. The tabs now stay open for the file
    # as after an uncertain end, and the next call reconciles it without clicking. `inside`: the
    # cancel lands inside the click itself (the mouse pressed, the CDP call not yet back), where
    # the tabs were still closed as if nothing had been clicked.
    sim = case.env.sim
    ref = await case.ref("r0001")
    sim.set_scenario({"latency": [{"path": ORDER, "ms": 5000, "at": [1]}]})
    clicked = asyncio.Event()
    click = case.env.tabs.click

    async def click_and_say_so(*args: Any, **kwargs: Any) -> None:
        await click(*args, **kwargs)
        clicked.set()
        if inside:
            await asyncio.Event().wait()  # the click's call has not returned when the cancel comes

    monkeypatch.setattr(case.env.tabs, "click", click_and_say_so)
    task = asyncio.ensure_future(case.downloader.download(ref, op=FakeOp()))
    try:
        async with asyncio.timeout(STEP_TIMEOUT):
            await clicked.wait()
        assert not sim.requests_for(ORDER, "GET")  # CNKI has not answered the order yet
    finally:
        task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    monkeypatch.setattr(case.env.tabs, "click", click)
    async with asyncio.timeout(STEP_TIMEOUT):
        while not list((case.data_dir / "incoming").glob("*/*.pdf")):  # the late file, saved whole
            await asyncio.sleep(0.05)  # polling for the file, not waiting for time to pass
        got = await case.downloader.download(ref, op=FakeOp())  # no retry needed
    assert got.format == "pdf" and len(case.store.clicks_for(ref)) == 1
    assert len(sim.requests_for(ORDER, "GET")) == 1


async def test_a_click_the_limiter_refuses_is_settled_not_clicked_and_never_left_uncertain(case: Case) -> None:
    # The click's request slot can be refused before the mouse moves (the budget spent, or another
    # operation's human step under on_verification skip); the click was recorded and stayed
    # uncertain, so the next call asked for retry=true for a click that never happened.
    sim = case.env.sim
    ref = await case.ref("r0001")
    details = len(sim.requests_for("/kcms2/article"))

    @dataclass
    class SpentAtTheClick(FakeOp):
        def charge(self) -> None:
            super().charge()
            if len(sim.requests_for("/kcms2/article")) > details:  # its detail tab is open: the click
                raise BudgetExhausted(reason="max_requests")

    await expect_code(case.downloader.download(ref, op=SpentAtTheClick()), "BUDGET_EXHAUSTED")
    assert [c.outcome for c in case.store.clicks_for(ref)] == ["not_clicked"]
    assert not sim.requests_for(ORDER, "GET") and case.store.uncertain_click(ref) is None
    async with asyncio.timeout(STEP_TIMEOUT):
        got = await case.downloader.download(ref, op=FakeOp())  # no retry needed
    assert got.source == "download"


async def test_late_file_of_an_uncertain_click_is_reconciled_without_a_click(case: Case) -> None:
    sim = case.env.sim
    ref = await case.ref("r0002")
    sim.set_scenario({"latency": [{"path": "/bar/download", "ms": 2500}]})
    await expect_code(case.downloader.download(ref, wait_seconds=1, op=FakeOp()), "SIDE_EFFECT_UNCERTAIN")
    late_folder = case.data_dir / "incoming" / "op-test"
    assert stat.S_IMODE(late_folder.stat().st_mode) == 0o700  # where the late file will land
    async with asyncio.timeout(STEP_TIMEOUT):
        await case.downloader.wait_late_saves()  # the browser finishes the download meanwhile
    got = await case.downloader.download(ref, op=FakeOp())
    assert got.reconciled and got.source == "download"
    assert len(sim.requests_for(ORDER, "GET")) == 1
    assert [c.outcome for c in case.store.clicks_for(ref)] == ["downloaded"]
    assert not late_folder.exists()  # emptied by the reconciliation, then removed


async def test_two_calls_for_one_paper_at_once_click_once(case: Case) -> None:
    # two clients asking for the same paper at the same moment: one click (one charge), one file
    sim = case.env.sim
    ref = await case.ref("r0001")
    async with asyncio.timeout(STEP_TIMEOUT):
        first, second = await asyncio.gather(
            case.downloader.download(ref, op=FakeOp(operation_id="op-a")),
            case.downloader.download(ref, op=FakeOp(operation_id="op-b")),
        )
    assert sorted([first.source, second.source]) == ["cache", "download"]
    assert first.path == second.path and first.sha256 == second.sha256
    assert len(sim.requests_for(ORDER, "GET")) == 1
    assert [c.outcome for c in case.store.clicks_for(ref)] == ["downloaded"]
    assert not case.downloader.papers.busy(ref)


async def test_a_download_leaves_nothing_behind_in_the_incoming_folders(case: Case) -> None:
    # Playwright keeps a copy of every download in the browser's download folder until the
    # browser closes; a server that runs for days must not hold each file twice
    artifacts = case.env.host.downloads_dir
    before = set(artifacts.iterdir()) if artifacts.exists() else set()
    ref = await case.ref("r0001")
    async with asyncio.timeout(STEP_TIMEOUT):
        got = await case.downloader.download(ref, op=FakeOp())
    assert got.source == "download" and Path(got.path).is_file()
    assert set(artifacts.iterdir()) - before == set()
    assert list((case.data_dir / "incoming").iterdir()) == []


async def test_existing_file_is_never_overwritten_and_nothing_is_clicked(case: Case) -> None:
    sim = case.env.sim
    ref = await case.ref("r0001")
    folder = case.data_dir / "downloads"
    folder.mkdir(parents=True)
    (folder / "mine.pdf").write_bytes(b"keep me")
    await expect_code(case.downloader.download(ref, filename="mine.pdf"), "FILE_EXISTS")
    assert (folder / "mine.pdf").read_bytes() == b"keep me"
    assert not sim.requests_for(ORDER, "GET") and case.store.clicks_for(ref) == []


async def test_a_symlinked_incoming_directory_is_refused_before_anything_is_clicked(
    case: Case, tmp_path: Path
) -> None:
    # the browser's download folder must not send files (or an empty op folder) outside the data dir
    sim = case.env.sim
    ref = await case.ref("r0001")
    outside = tmp_path / "outside"
    outside.mkdir()
    (case.data_dir / "incoming").symlink_to(outside)
    await expect_code(case.downloader.download(ref, op=FakeOp()), "DATA_PATH_SYMLINK")
    assert list(outside.iterdir()) == []
    assert not sim.requests_for(ORDER, "GET") and case.store.clicks_for(ref) == []


async def test_downloaded_file_is_owner_only_and_its_folders_0700(case: Case) -> None:
    ref = await case.ref("r0001")
    old = os.umask(0)
    try:
        async with asyncio.timeout(STEP_TIMEOUT):
            got = await case.downloader.download(ref, subdirectory="合同", op=FakeOp())
    finally:
        os.umask(old)
    assert stat.S_IMODE(Path(got.path).stat().st_mode) == 0o600
    for folder in ("downloads", "downloads/合同", "incoming"):
        assert stat.S_IMODE((case.data_dir / folder).stat().st_mode) == 0o700, folder
    # incoming/<op>/ (0700 too, see the late-file test) is removed once its file moved out


async def test_a_new_filename_for_a_downloaded_paper_gets_a_copy_without_a_click(case: Case) -> None:
    sim = case.env.sim
    ref = await case.ref("r0001")
    async with asyncio.timeout(STEP_TIMEOUT):
        first = await case.downloader.download(ref, op=FakeOp())
    renamed = await case.downloader.download(ref, filename="我的副本.pdf", subdirectory="合同")
    path = case.data_dir / "downloads" / "合同" / "我的副本.pdf"
    assert renamed.path == str(path) and renamed.source == "cache"
    assert renamed.copied_from == first.path and renamed.sha256 == first.sha256
    assert path.read_bytes() == Path(first.path).read_bytes() and Path(first.path).exists()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    again = await case.downloader.download(ref, filename="我的副本.pdf", subdirectory="合同")
    assert again.path == str(path)  # the same copy, not FILE_EXISTS
    plain = await case.downloader.download(ref)
    assert plain.path == first.path and plain.copied_from is None
    (case.data_dir / "downloads" / "other.pdf").write_bytes(b"someone else's file")
    await expect_code(case.downloader.download(ref, filename="other.pdf"), "FILE_EXISTS")
    assert (case.data_dir / "downloads" / "other.pdf").read_bytes() == b"someone else's file"
    assert len(sim.requests_for(ORDER, "GET")) == 1  # one click in all


@pytest.mark.parametrize(("fmt", "filename"), [("auto", "mine.pdf"), ("pdf", None), ("caj", None)])
async def test_a_taken_file_name_is_file_exists_before_the_detail_page_is_asked(
    case: Case, fmt: str, filename: str | None
) -> None:
    # The name the file would get is known before the tab opens (the caller's, or the default of
    # an explicit format): FILE_EXISTS came only after the detail page was loaded, one request
    # for a file that could not be kept.
    sim = case.env.sim
    ref = await case.ref("r0001")
    paper = case.store.get(ref)
    assert paper is not None
    folder = case.data_dir / "downloads"
    folder.mkdir(parents=True)
    taken = filename or safe_file_name(paper.title, ref, fmt)
    (folder / taken).write_bytes(b"keep me")
    details = len(sim.requests_for("/kcms2/article/abstract"))
    await expect_code(case.downloader.download(ref, format=fmt, filename=filename), "FILE_EXISTS")  # type: ignore[arg-type]
    assert (folder / taken).read_bytes() == b"keep me"
    assert len(sim.requests_for("/kcms2/article/abstract")) == details
    assert not sim.requests_for(ORDER, "GET") and case.store.clicks_for(ref) == []


async def test_a_downloaded_file_damaged_since_is_file_exists_saying_so_before_the_detail_page(
    case: Case,
) -> None:
    """The archived PDF truncated (or edited) after its download: it is never overwritten, and the
    answer says the file changed (details.changed_since_download) before any CNKI request; it was a
    bare FILE_EXISTS after the detail page had been loaded, with nothing said about why."""
    sim = case.env.sim
    ref = await case.ref("r0001")
    async with asyncio.timeout(STEP_TIMEOUT):
        first = await case.downloader.download(ref, op=FakeOp())
    path = Path(first.path)
    damaged = path.read_bytes()[: first.bytes // 3]
    path.write_bytes(damaged)
    details = len(sim.requests_for("/kcms2/article/abstract"))
    error = await expect_code(case.downloader.download(ref, op=FakeOp()), "FILE_EXISTS")
    assert error.details["changed_since_download"] is True and error.details["path"] == str(path)
    assert path.read_bytes() == damaged
    assert len(sim.requests_for("/kcms2/article/abstract")) == details
    assert len(sim.requests_for(ORDER, "GET")) == 1  # the first download's click only
    fresh = await case.downloader.download(ref, filename="重新下载.pdf", op=FakeOp())
    assert fresh.sha256 == first.sha256 and Path(fresh.path).name == "重新下载.pdf"


async def test_a_file_name_with_a_path_is_refused_whatever_the_format_even_where_that_file_exists(case: Case) -> None:
    # `auto` used to check only the extension, so `../outside.pdf` reached the taken-name check
    # and answered FILE_EXISTS, with its path, for a file outside downloads/
    sim = case.env.sim
    ref = await case.ref("r0001")
    (case.data_dir / "downloads").mkdir(parents=True)
    (case.data_dir / "outside.pdf").write_bytes(b"not ours")
    details = len(sim.requests_for("/kcms2/article/abstract"))
    for fmt in ("auto", "pdf"):
        await expect_code(case.downloader.download(ref, format=fmt, filename="../outside.pdf"), "INVALID_ARGUMENT")  # type: ignore[arg-type]
    assert len(sim.requests_for("/kcms2/article/abstract")) == details
    assert (case.data_dir / "outside.pdf").read_bytes() == b"not ours"


async def test_another_tab_the_detail_page_opens_answering_an_error_is_not_the_order(case: Case) -> None:
    # review 7a L9: every tab the detail page opened was checked for an error status and a refusal,
    # so a window the detail page opened itself, answering 404, ended the download
    # SIDE_EFFECT_UNCERTAIN while the order was under way; only the tab the click opened (the order
    # page) and the tabs it opens are the order's
    sim = case.env.sim
    ref = await case.ref("r0001")
    sim.set_scenario({"latency": [{"path": ORDER, "ms": 2500}]})
    ctx = await case.env.host.ensure()
    strays: list[object] = []

    async def stray(page: Any) -> None:
        if not strays:  # the detail tab (the first this download opens) opens a window of its own
            strays.append(page)
            await page.wait_for_load_state("domcontentloaded")
            await page.evaluate("url => { window.open(url, '_blank') }", sim.origin + "/kcms2/no-such-page")

    pending: list[asyncio.Future[None]] = []
    handler = lambda page: pending.append(asyncio.ensure_future(stray(page)))  # noqa: E731
    ctx.on("page", handler)
    try:
        async with asyncio.timeout(STEP_TIMEOUT):
            got = await case.downloader.download(ref, op=FakeOp())
    finally:
        ctx.remove_listener("page", handler)
        await asyncio.gather(*pending, return_exceptions=True)
    assert strays and got.source == "download"
    assert sim.requests_for("/kcms2/no-such-page", "GET")  # the stray tab was there, answering 404
    assert [c.outcome for c in case.store.clicks_for(ref)] == ["downloaded"]
