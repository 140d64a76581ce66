"""download_paper in a real tab (site-rules.md §1.1, §2.7, §11).

Order of work: the archived file (cache) if it is still intact; a file an earlier click kept in
`incoming/<op_id>/` because its name was taken meanwhile (`file_exists`), or a late file of an
earlier click whose outcome was never known (both reconciled from `<data>/incoming/<op_id>/`,
without a click); an uncertain click
without `retry` stops here (SIDE_EFFECT_UNCERTAIN, nothing clicked). Otherwise: the detail page in
its own tab, settled; the format chosen from the visible entries (auto: PDF, else CAJ, else
DOWNLOAD_ENTRY_NOT_FOUND without clicking); the click recorded in the store BEFORE it happens;
one real click; then every tab CNKI opens is watched: a refusal text in its first 300 characters
is DOWNLOAD_REFUSED with the page's words, an HTTP error page 429 or 404/410 RATE_LIMITED or
SITE_UNAVAILABLE at once (the order was not handled: the click is settled `site_error` and the next
call clicks again), a 5xx error page SIDE_EFFECT_UNCERTAIN at once (`details.order_status`: whether
CNKI charged before it failed is unknown, so a new click needs `retry`), a verification or login
page goes to the human gate, a tab showing the browser's own error page (its request failed in the
network) ends the wait at once (SITE_UNAVAILABLE, settled `site_error`, when the order URL itself
could not be reached, e.g. DNS or a refused connection; otherwise SIDE_EFFECT_UNCERTAIN with
`details.net_error`: CNKI may have taken the order before the connection broke),
and the same download is awaited again (skipped: the click is settled `skipped` and its tabs
closed, so the next call clicks again), and the browser's download event on any page is saved
to `<data>/incoming/<op_id>/`, validated, archived under `downloads/` and recorded with SHA-256.
A file that is not valid (INVALID_FILE: an HTML page under a PDF name, a PDF without its end) was
sent for a handled order: its click is settled `invalid_file`, whose charge is as unknown, so the
next call answers SIDE_EFFECT_UNCERTAIN until `retry=true` too. Either kind of click stops calls
without retry only until a later (retry=true) click of its format settles; its late file is still
reconciled (store `uncertain_click`, `open_clicks`).
No file, no refusal within `wait_seconds` (the person's time not counted): the click stays
uncertain and the call ends with SIDE_EFFECT_UNCERTAIN; the download may still land, and the
next call reconciles it. Nothing is ever clicked twice without `retry=true`, not even by two calls
at once: one call per paper runs at a time (`papers`), the next finds the file or the click.
The browser's own copy of each download is deleted once saved, and `incoming/<op_id>/` once
emptied, so a long-running server keeps every file once."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import uuid
from pathlib import Path
from typing import Any, Literal

from playwright.async_api import Download, Page, Request
from playwright.async_api import Error as PlaywrightError

from cnki_mcp import datadir
from cnki_mcp.clock import Clock
from cnki_mcp.errors import (
    BudgetExhausted,
    DocumentNotFound,
    DownloadEntryNotFound,
    DownloadRefused,
    FileExists,
    InvalidFile,
    InvalidInput,
    SideEffectUncertain,
    VerificationNotFound,
    VerificationRepeated,
    VerificationSkipped,
)
from cnki_mcp.files import (
    FileFormat,
    archive,
    check_download_arguments,
    check_file_name,
    copy_into,
    file_name,
    free_space,
    refuse_taken,
    sniff_format,
    target_dir,
    validate_download,
)
from cnki_mcp.identity import Paper
from cnki_mcp.keyed_lock import KeyedLocks
from cnki_mcp.site.backend import SiteOp
from cnki_mcp.site.deadline import CLOSE_SECONDS, BrowserStalled, bounded
from cnki_mcp.site.download_outcomes import (
    BODY_TEXT_JS,
    BROWSER_ERROR_URL,
    INVALID_AGAIN,
    ORDER_TAB_OPEN,
    STILL_DOWNLOADING,
    DownloadFailed,
    ErrorPage,
    NetFailed,
    OrderFailed,
    Refused,
    error_name,
    failed_download,
    order_error,
    refusal_text,
    unsent_order,
)
from cnki_mcp.site.download_result import DEFAULT_WAIT_SECONDS, MAX_WAIT_SECONDS, DownloadResult
from cnki_mcp.site.human import PageKind, StepKind
from cnki_mcp.site.pages import document_status
from cnki_mcp.site.reading import FILE_ENTRIES, DetailTabs, close_quietly
from cnki_mcp.store import INVALID_FILE, Store, StoredDownload, file_sha256

log = logging.getLogger(__name__)

INCOMING_DIR = datadir.INCOMING_DIR
POLL_SECONDS = 0.2
LINGER_SECONDS = 600.0  # how long an uncertain click's tabs keep waiting for a late file
MAX_HUMAN_STEPS = 4
_GUID = re.compile(r"^[A-Za-z0-9-]+$")
FORMATS: tuple[FileFormat, ...] = ("pdf", "caj")
FILE_EXISTS = "file_exists"  # a click's outcome: the file came, its name was taken; kept in incoming/
ERROR_EVENT_SECONDS = 1.0  # how long a tab on the error page waits for its failed request's event

Format = Literal["auto", "pdf", "caj"]




def remove_if_empty(folder: Path) -> None:
    """Remove an `incoming/<op_id>/` folder that holds nothing any more (a file still in it, such
    as one kept for a FILE_EXISTS click, keeps it)."""
    with contextlib.suppress(OSError):
        folder.rmdir()


class Downloader:
    """download_paper over a live browser and the store; see the module docstring."""

    def __init__(self, tabs: DetailTabs, store: Store, clock: Clock, data_dir: Path) -> None:
        self.tabs = tabs
        self.store = store
        self.clock = clock
        self.data_dir = Path(data_dir)
        self.late_saves: set[asyncio.Task[Path | None]] = set()  # downloads still finishing
        self.linger_seconds = LINGER_SECONDS
        self.papers = KeyedLocks()  # one call per paper at a time: two clients never click twice
        self.saving: dict[Path, asyncio.Task[Path | None]] = {}  # incoming/<op_id> -> its file still arriving
        self.lingering: set[Path] = set()  # incoming/<op_id> of clicks whose tabs still wait for a file

    def incoming(self, op_id: str) -> Path:
        """`<data>/incoming/<op_id>` (not created); incoming/ itself is checked not to be a
        symlink on every call (DATA_PATH_SYMLINK), so no download passes outside the data dir."""
        return datadir.checked_dir(self.data_dir, INCOMING_DIR) / op_id

    def make_incoming(self, op_id: str) -> Path:
        """`incoming/<op_id>/` created 0700 (incoming/ too), neither of them a symlink."""
        return datadir.private_subdir(datadir.ensure_dir(self.data_dir, INCOMING_DIR), op_id)

    # --- the call ---------------------------------------------------------------------

    async def download(
        self,
        record_ref: str,
        *,
        format: Format = "auto",
        filename: str | None = None,
        subdirectory: str | None = None,
        wait_seconds: float = DEFAULT_WAIT_SECONDS,
        retry: bool = False,
        op: SiteOp | None = None,
    ) -> DownloadResult:
        if format not in ("auto", "pdf", "caj"):
            raise InvalidInput("format 只能是 auto、pdf 或 caj", format=format)
        if not 1 <= wait_seconds <= MAX_WAIT_SECONDS:
            raise InvalidInput("wait_seconds 须在 1 到 900 之间", wait_seconds=wait_seconds)
        check_download_arguments(self.data_dir, format, filename, subdirectory)  # before any site work
        datadir.checked_dir(self.data_dir, INCOMING_DIR)  # DATA_PATH_SYMLINK before any click
        ref = self.store.resolve_ref(record_ref)
        paper = self.store.get(ref)
        if paper is None:
            raise DocumentNotFound.unknown_ref(record_ref)
        formats: tuple[FileFormat, ...] = ("pdf", "caj") if format == "auto" else (format,)
        # A second call for the same paper (another client, a retry sent while the first waits)
        # waits for the first one and then finds its file in the cache, or its uncertain click.
        async with self.papers.hold(ref):
            return await self._download_paper(
                paper, format, formats, filename, subdirectory, wait_seconds, retry, op
            )

    async def _download_paper(
        self,
        paper: Paper,
        format: Format,
        formats: tuple[FileFormat, ...],
        filename: str | None,
        subdirectory: str | None,
        wait_seconds: float,
        retry: bool,
        op: SiteOp | None,
    ) -> DownloadResult:
        ref = paper.record_ref
        for fmt in formats:
            if filename is not None and not filename.lower().endswith("." + fmt):
                continue  # auto with `x.caj`: only a CAJ can be that file
            stored = self.store.download_for(ref, fmt)
            if stored is not None and stored.intact():
                return self._from_cache(stored, paper, fmt, filename, subdirectory)
            if stored is not None and stored.path.is_file():
                self._refuse_changed(stored, paper, fmt, filename, subdirectory)
        for fmt in formats:
            if filename is not None and not filename.lower().endswith("." + fmt):
                continue
            kept = self._kept_file(ref, fmt)
            if kept is not None:  # paid for, then refused a name that was taken meanwhile
                result = self._archive(kept, paper, fmt, filename, subdirectory)
                remove_if_empty(kept.parent)
                return result.model_copy(update={"reconciled": True})
        for fmt in formats:
            # every click whose file may still come, also one a later retry=true click settled over
            for click in self.store.open_clicks(ref, fmt):
                late = self._late_file(click.op_id, fmt)
                if late is not None:
                    result = self._archive(late, paper, fmt, filename, subdirectory)
                    remove_if_empty(late.parent)
                    return result.model_copy(update={"reconciled": True})
                if click.op_id and _GUID.match(click.op_id) and self.incoming(click.op_id) in self.saving:
                    # CNKI is sending that click's file right now: a new click would be a second order
                    raise SideEffectUncertain(
                        STILL_DOWNLOADING, record_ref=ref, format=fmt, clicked_at=click.clicked_at.isoformat(),
                        downloading=True,
                    )  # fmt: skip
            click = self.store.uncertain_click(ref, fmt)
            if click is not None and not retry:
                if click.outcome == INVALID_FILE:
                    raise SideEffectUncertain(
                        INVALID_AGAIN, record_ref=ref, format=fmt, clicked_at=click.clicked_at.isoformat(),
                        last_outcome=INVALID_FILE,
                    )  # fmt: skip
                if click.op_id and _GUID.match(click.op_id) and self.incoming(click.op_id) in self.lingering:
                    raise SideEffectUncertain(ORDER_TAB_OPEN, record_ref=ref, format=fmt,
                                              clicked_at=click.clicked_at.isoformat(), order_tab_open=True)  # fmt: skip
                raise SideEffectUncertain(record_ref=ref, format=fmt, clicked_at=click.clicked_at.isoformat())
        self._refuse_taken_names(paper, formats, filename, subdirectory)
        return await self._download_once(paper, format, filename, subdirectory, wait_seconds, op)

    def _refuse_changed(
        self, stored: StoredDownload, paper: Paper, fmt: FileFormat, filename: str | None, subdirectory: str | None
    ) -> None:
        """FILE_EXISTS, before anything is asked of CNKI, when this call's file would be the archived
        one and that file no longer matches what was downloaded (truncated, damaged, edited): it is
        never overwritten, and the person is told why and how to get a fresh copy (it was a bare
        FILE_EXISTS after the detail page had been loaded)."""
        name = file_name(filename, paper.title, paper.record_ref, fmt)
        if target_dir(self.data_dir, subdirectory) / name != stored.path:
            return
        raise FileExists(
            f"已下载的文件 {stored.path} 与下载时不同（被改动或已损坏），不会覆盖：要重新下载，"
            "用 filename 另起一个文件名，或先移走该文件后再调用",
            path=str(stored.path),
            record_ref=paper.record_ref,
            changed_since_download=True,
        )

    def _refuse_taken_names(
        self, paper: Paper, formats: tuple[FileFormat, ...], filename: str | None, subdirectory: str | None
    ) -> None:
        """FILE_EXISTS before anything is asked of CNKI when every name the file could get is
        taken: the detail page was loaded first, one request for a file that could not be kept."""
        folder = target_dir(self.data_dir, subdirectory)
        names = [
            file_name(filename, paper.title, paper.record_ref, fmt)
            for fmt in formats
            if filename is None or filename.lower().endswith("." + fmt)
        ]
        if names and all((folder / name).exists() or (folder / name).is_symlink() for name in names):
            refuse_taken(folder / names[0])

    def _from_cache(
        self,
        stored: StoredDownload,
        paper: Paper,
        fmt: FileFormat,
        filename: str | None,
        subdirectory: str | None,
    ) -> DownloadResult:
        """The archived file, without visiting CNKI. Asked for under another name or folder
        (`filename` / `subdirectory`), it is copied there (`copied_from` says from where) and the
        store keeps the first file; a file already there with the same content is returned, any
        other is FILE_EXISTS (never overwritten)."""
        cached = DownloadResult(record_ref=paper.record_ref, format=fmt, path=str(stored.path), bytes=stored.size,
                                sha256=stored.sha256, source="cache", observed_at=stored.observed_at)  # fmt: skip
        if filename is None and subdirectory is None:
            return cached
        name = file_name(filename, paper.title, paper.record_ref, fmt)
        check_file_name(name, fmt)
        dest = target_dir(self.data_dir, subdirectory) / name
        if dest == stored.path:
            return cached
        if dest.is_file() and not dest.is_symlink() and file_sha256(dest) == stored.sha256:
            return cached.model_copy(update={"path": str(dest), "copied_from": str(stored.path)})
        done = copy_into(stored.path, self.data_dir, subdirectory, name)
        if done.sha256 != stored.sha256:  # changed between the check and the copy
            done.path.unlink(missing_ok=True)
            raise InvalidFile("已下载的文件在复制时发生变化", path=str(stored.path))
        return cached.model_copy(update={"path": str(done.path), "copied_from": str(stored.path)})

    # --- reconciliation ---------------------------------------------------------------

    def _late_file(self, op_id: str | None, fmt: FileFormat) -> Path | None:
        """A complete file of the requested format left in incoming/<op_id>/ by an earlier click."""
        if not op_id or not _GUID.match(op_id):
            return None
        folder = self.incoming(op_id)
        if folder.is_symlink() or not folder.is_dir():
            return None
        for path in sorted(folder.iterdir()):
            if not path.is_file() or path.name.startswith(".") or path.suffix == ".crdownload":
                continue
            with contextlib.suppress(OSError):
                if sniff_format(path) == fmt:
                    return path
        return None

    def _kept_file(self, ref: str, fmt: FileFormat) -> Path | None:
        """The valid file a click settled `file_exists` left in `incoming/<op_id>/` (its name was
        taken while it was on its way): the next call archives it under the name it asks for
        instead of clicking, and paying, again."""
        for click in reversed(self.store.clicks_for(ref)):
            if click.format != fmt or click.outcome != FILE_EXISTS or not click.op_id:
                continue
            name = Path(str((click.detail or {}).get("incoming") or "")).name
            if not name or not _GUID.match(click.op_id):
                continue
            path = self.incoming(click.op_id) / name
            with contextlib.suppress(OSError):
                if not path.is_symlink() and path.is_file() and sniff_format(path) == fmt:
                    return path
        return None

    def _archive(
        self, src: Path, paper: Paper, fmt: FileFormat, filename: str | None, subdirectory: str | None
    ) -> DownloadResult:
        name = file_name(filename, paper.title, paper.record_ref, fmt)
        check_file_name(name, fmt)
        done = archive(src, self.data_dir, subdirectory, name)
        now = self.clock.now()
        self.store.record_download(paper.record_ref, fmt, done.path, done.sha256, done.bytes, now)
        return DownloadResult(record_ref=paper.record_ref, format=fmt, path=str(done.path), bytes=done.bytes,
                              sha256=done.sha256, source="download", observed_at=now)  # fmt: skip

    # --- one click --------------------------------------------------------------------

    async def _download_once(
        self,
        paper: Paper,
        format: Format,
        filename: str | None,
        subdirectory: str | None,
        wait_seconds: float,
        op: SiteOp | None,
    ) -> DownloadResult:
        tabs = self.tabs
        opened = await tabs.open(paper, op)
        detail_page = opened.page
        ctx = await tabs.host.ensure()
        downloads: asyncio.Queue[Download] = asyncio.Queue()

        def ours(download: Download) -> None:
            # only downloads of the detail tab or of the tabs it opened (other operations share the context)
            if download.page is detail_page or download.page in self._opened_by(detail_page):
                downloads.put_nowait(download)

        failed: dict[Page, tuple[str, str]] = {}  # tab -> (URL, net error) of its failed navigation

        def navigation_failed(request: Request) -> None:
            with contextlib.suppress(PlaywrightError):  # a service worker's request has no frame
                frame = request.frame
                if request.is_navigation_request() and frame.parent_frame is None:
                    failed[frame.page] = (request.url, request.failure or "")

        def watch(page: Page) -> None:
            page.on("download", ours)
            page.on("requestfailed", navigation_failed)

        watch(detail_page)
        ctx.on("page", watch)  # registered at creation: no download event of a new tab is missed
        linger: Path | None = None  # set when the outcome is uncertain: keep watching in the background
        folder: Path | None = None
        try:
            fmt, entry = await self._choose(detail_page, format)
            if filename is not None:
                check_file_name(filename, fmt)
            name = file_name(filename, paper.title, paper.record_ref, fmt)
            dest = target_dir(self.data_dir, subdirectory) / name
            refuse_taken(dest)  # nothing clicked: no charge for a file we cannot keep
            op_id = op.operation_id if op is not None and _GUID.match(op.operation_id) else uuid.uuid4().hex
            folder = self.make_incoming(op_id)
            click_id = self.store.record_click(paper.record_ref, fmt, op_id, self.clock.now())
            since = len(tabs.host.popups_of(detail_page))  # the click's order tab comes after these
            pressed: list[bool] = []
            try:
                await tabs.click(detail_page, entry, op, pressing=lambda: pressed.append(True))
            except (BudgetExhausted, VerificationSkipped) as exc:
                # the limiter refused the click's slot before the mouse moved: nothing was clicked,
                # so the click must not stay uncertain (the next call would ask for retry)
                self.store.click_outcome(click_id, "not_clicked", self.clock.now(), {"code": exc.code})
                raise
            except asyncio.CancelledError:
                # cancelled while the click waited for its slot (behind other requests, or a human
                # step's hold): the mouse never moved, so the next call clicks without retry
                if not pressed:
                    self.store.click_outcome(click_id, "not_clicked", self.clock.now(), {"code": "CANCELLED"})
                else:  # cancelled inside the click: its order may be on the way, as below
                    linger = folder
                raise
            try:
                saved = await self._await_file(detail_page, since, downloads, folder, fmt, wait_seconds, op, failed)
            except asyncio.CancelledError:
                # cancelled after the click: the order may be charged and its file on the way, so
                # the tabs stay open for it as after an uncertain end (closing them lost it and
                # the next call could only ask for retry=true); the next call reconciles it
                linger = folder
                raise
            except Refused as refused:
                self.store.click_outcome(click_id, "refused", self.clock.now(), {"text": refused.text})
                raise DownloadRefused(text=refused.text, record_ref=paper.record_ref, format=fmt) from None
            except ErrorPage as answered:
                # CNKI answered the order with an error page: nothing delivered, the outcome known
                self.store.click_outcome(click_id, "site_error", self.clock.now(), {"status": answered.status})
                answered.error.details.update(record_ref=paper.record_ref, format=fmt)
                raise answered.error from None
            except VerificationSkipped as skipped:
                # The click was answered by a login or verification page and no file came: its
                # outcome is known (nothing delivered, nothing charged); the tabs close below.
                self.store.click_outcome(click_id, "skipped", self.clock.now(), dict(skipped.details))
                raise
            except DownloadFailed as broken:
                raise failed_download(broken.reason, paper.record_ref, fmt, free_space(folder)) from None
            except NetFailed as lost:
                raise self._net_failure(lost, click_id, paper.record_ref, fmt) from None
            except OrderFailed as answered_error:
                # The order page answered an HTTP error: no file is on its way (it waited the whole
                # wait_seconds, then said the download might still be in progress, and kept the tabs
                # open for a file that could not come). Whether CNKI charged stays unknown.
                raise SideEffectUncertain(
                    f"点击下载后知网的下载页返回 HTTP {answered_error.status}（{answered_error.text[:60]}），"
                    "没有文件；知网是否已计费未知，确认后传 retry=true 再试",
                    record_ref=paper.record_ref, format=fmt, order_status=answered_error.status,
                    page_url=answered_error.url,
                ) from None  # fmt: skip
            if saved is None:
                # the click stays without an outcome: uncertain until a file turns up
                linger = folder
                if folder in self.saving:  # the file is arriving: it was "未收到文件"
                    raise SideEffectUncertain(STILL_DOWNLOADING, record_ref=paper.record_ref, format=fmt,
                                              waited_seconds=wait_seconds, downloading=True)  # fmt: skip
                raise SideEffectUncertain(
                    "点击下载后未收到文件也未见拒绝页面；下载可能仍在进行，稍后用相同参数再调用一次",
                    record_ref=paper.record_ref, format=fmt, waited_seconds=wait_seconds,
                )  # fmt: skip
            try:
                validate_download(saved, fmt)
            except InvalidFile as exc:
                # CNKI handled the order and sent this: whether it charged is unknown, so the next
                # call does not click again without retry (store.uncertain_click)
                self.store.click_outcome(click_id, INVALID_FILE, self.clock.now(), exc.details)
                saved.unlink(missing_ok=True)
                raise
            try:
                return self._archive(saved, paper, fmt, filename, subdirectory)
            except FileExists:
                self.store.click_outcome(click_id, FILE_EXISTS, self.clock.now(), {"incoming": str(saved)})
                raise
        finally:
            if linger is not None:
                self.lingering.add(linger)  # now: the next call may come before the task starts
                self._keep(self._linger(ctx, watch, detail_page, downloads, linger, fmt))
            else:
                ctx.remove_listener("page", watch)
                await self._close_family(detail_page)
                if folder is not None:
                    remove_if_empty(folder)  # the file moved to downloads/ (or was rejected)

    def _net_failure(self, lost: NetFailed, click_id: int, record_ref: str, fmt: FileFormat) -> Exception:
        """The error for a click whose tab failed in the network: no file can follow it (it waited
        the whole wait_seconds and said the download might still be in progress). Unsent (the
        order URL itself unreachable): settled `site_error`, the next call clicks again without
        retry. Otherwise CNKI may have taken the order before the connection broke: uncertain."""
        if lost.unsent:
            self.store.click_outcome(click_id, "site_error", self.clock.now(), {"net_error": lost.error})
            return unsent_order(lost, record_ref, fmt)
        return SideEffectUncertain(
            f"点击下载后浏览器的请求在网络中失败（{lost.error or '浏览器错误页'}），没有文件；"
            "知网是否已计费未知，确认后传 retry=true 再试",
            record_ref=record_ref, format=fmt, net_error=lost.error or None, page_url=lost.url,
        )  # fmt: skip

    def _saved(self, folder: Path, task: asyncio.Task[Any] | None) -> None:
        """`task` no longer brings a file into `folder` (another one that took over stays)."""
        if self.saving.get(folder) is task:
            del self.saving[folder]

    def _keep(self, coro: Any) -> None:
        task: asyncio.Task[Path | None] = asyncio.create_task(coro)
        self.late_saves.add(task)
        task.add_done_callback(self.late_saves.discard)

    async def _close_family(self, detail_page: Page) -> None:
        for page in self._opened_by(detail_page):
            await close_quietly(page)
        await close_quietly(detail_page)

    async def _linger(
        self,
        ctx: Any,
        watch: Any,
        detail_page: Page,
        downloads: asyncio.Queue[Download],
        folder: Path,
        fmt: FileFormat,
    ) -> Path | None:
        """After an uncertain end: the tabs stay open (closing them would abort a slow order) and
        a download that still starts is saved to incoming/<op>/ for the next call to reconcile
        (while it arrives, no call clicks again: `saving`)."""
        try:
            try:
                download = await asyncio.wait_for(downloads.get(), timeout=self.linger_seconds)
            except TimeoutError:
                remove_if_empty(folder)  # no late file: nothing for the next call to reconcile
                return None
            finally:
                ctx.remove_listener("page", watch)
            task = asyncio.current_task()
            if task is not None:
                self.saving[folder] = task
            try:
                return await self._finish(download, folder / f"{uuid.uuid4().hex}.{fmt}")
            except DownloadFailed:
                remove_if_empty(folder)
                return None
        finally:
            self._saved(folder, asyncio.current_task())
            self.lingering.discard(folder)
            await self._close_family(detail_page)

    def _opened_by(self, opener: Page) -> list[Page]:
        """Tabs `opener` opened, and the tabs those opened (order pages, then login/verify)."""
        out: list[Page] = []
        queue = [opener]
        while queue:
            for popup in self.tabs.host.popups_of(queue.pop(0)):
                if popup not in out:
                    out.append(popup)
                    queue.append(popup)
        return out

    async def _choose(self, page: Page, format: Format) -> tuple[FileFormat, Any]:
        order: tuple[FileFormat, ...] = ("pdf", "caj") if format == "auto" else (format,)
        for fmt in order:
            entry = await self.tabs.find_entry(page, FILE_ENTRIES[fmt])
            if entry is not None:
                return fmt, entry
        # A CAJ-only paper (a yearbook) asked for as PDF was "详情页没有下载入口": it has one, in
        # another format; the caller learns which (the page is open: no request)
        available: list[FileFormat] = [
            fmt for fmt in FORMATS if fmt not in order and await self.tabs.find_entry(page, FILE_ENTRIES[fmt])
        ]
        if available:
            names = "、".join(f.upper() for f in available)
            raise DownloadEntryNotFound(f"详情页没有 {format.upper()} 下载入口，只有 {names} 下载",
                                        format=format, available=available)  # fmt: skip
        raise DownloadEntryNotFound(format=format, available=[])

    def _order_tabs(self, detail_page: Page, since: int) -> list[Page]:
        """The tab the click opened (the order page, `since`: the detail page's popups before the
        click) and the tabs it opened (login, verification): the pages whose refusal or error
        status is the order's. Another tab the detail page opens is not."""
        opened = self.tabs.host.popups_of(detail_page)[since:]
        return [opened[0], *self._opened_by(opened[0])] if opened else []

    async def _await_file(
        self,
        detail_page: Page,
        since: int,
        downloads: asyncio.Queue[Download],
        folder: Path,
        fmt: FileFormat,
        wait_seconds: float,
        op: SiteOp | None,
        failed: dict[Page, tuple[str, str]],
    ) -> Path | None:
        """The saved file, None when nothing conclusive happened in time; Refused on refusal,
        NetFailed when a tab shows the browser's error page (`failed`: its request and error)."""
        tabs = self.tabs
        deadline = self.clock.monotonic() + wait_seconds
        steps = 0
        error_seen: dict[Page, float] = {}  # tab -> when it was first seen on the browser's error page
        while True:
            if not downloads.empty():
                return await self._save(downloads.get_nowait(), folder, fmt, deadline)
            for page in reversed(self._opened_by(detail_page)):
                if page.is_closed():
                    continue
                epoch = tabs.gate.epoch
                state = await tabs.inspect(page, "login")
                if state.kind in (PageKind.CHALLENGE, PageKind.LOGIN):
                    steps += 1
                    if steps > MAX_HUMAN_STEPS:
                        raise VerificationRepeated(page="download")
                    kind: StepKind = "challenge" if state.kind is PageKind.CHALLENGE else "login"
                    await self._human_step_or_file(kind, page, op, epoch, downloads)
                    deadline = self.clock.monotonic() + wait_seconds  # the person's time is free
                    break
                if page not in self._order_tabs(detail_page, since):
                    continue  # not the order's tab: its refusal or error page is not the order's
                if page.url.startswith(BROWSER_ERROR_URL) and downloads.empty():
                    # the failed request's event may come a moment after the tab shows the page
                    first = error_seen.setdefault(page, self.clock.monotonic())
                    if page in failed or self.clock.monotonic() - first >= ERROR_EVENT_SECONDS:
                        raise NetFailed(*failed.get(page, (page.url, await error_name(page))))
                    continue
                try:
                    text = await page.evaluate(BODY_TEXT_JS)
                except PlaywrightError:
                    continue
                refused = refusal_text(str(text or ""))
                if refused is not None and downloads.empty():
                    raise Refused(refused)
                status = await document_status(page)
                if status >= 400 and downloads.empty():
                    raise order_error(status, page.url, str(text or ""))
            remaining = deadline - self.clock.monotonic()
            if remaining <= 0:
                return None
            with contextlib.suppress(TimeoutError):
                download = await asyncio.wait_for(downloads.get(), timeout=min(POLL_SECONDS, remaining))
                return await self._save(download, folder, fmt, deadline)

    async def _human_step_or_file(
        self, kind: StepKind, page: Page, op: SiteOp | None, epoch: int, downloads: asyncio.Queue[Download]
    ) -> None:
        """The human step, ended early when the download starts: after a login CNKI sends the file
        from the login tab itself, which then still shows the login form."""
        step = asyncio.create_task(self.tabs.human_step(kind, page, op, epoch))
        getter = asyncio.create_task(downloads.get())
        try:
            await asyncio.wait({step, getter}, return_when=asyncio.FIRST_COMPLETED)
            if getter.done() and not step.done():
                with contextlib.suppress(VerificationNotFound):
                    self.tabs.gate.resume()
            await step
        finally:
            if not getter.done():
                getter.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await getter
            if getter.done() and not getter.cancelled():
                downloads.put_nowait(getter.result())
            if not step.done():
                step.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await step

    async def _save(self, download: Download, folder: Path, fmt: FileFormat, deadline: float) -> Path | None:
        """Wait for the download to finish (until `deadline`) and save it as incoming/<op>/<guid>.<fmt>.
        If it is still running at the deadline it keeps going in the background (late file)."""
        guid = uuid.uuid4().hex  # Chrome's own GUID name only exists once the file is complete
        dest = folder / f"{guid}.{fmt}"
        task: asyncio.Task[Path | None] = asyncio.create_task(self._finish(download, dest))
        self.late_saves.add(task)
        task.add_done_callback(self.late_saves.discard)  # outlives the call if it is slow
        self.saving[folder] = task  # a file on its way: no new click for it, not even with retry
        task.add_done_callback(lambda done: self._saved(folder, done))
        task.add_done_callback(_retrieved)  # a late failure is logged, never "never retrieved"
        remaining = max(0.0, deadline - self.clock.monotonic())
        try:
            return await asyncio.wait_for(asyncio.shield(task), timeout=remaining)
        except TimeoutError:
            return None

    @staticmethod
    async def _finish(download: Download, dest: Path) -> Path | None:
        """Save the browser's download to `dest`, then delete the browser's own copy: Playwright
        keeps every download's artifact in incoming/ until the browser closes, so a server that
        downloads for days would hold each file twice."""
        try:
            return await Downloader._save_as(download, dest)
        finally:
            with contextlib.suppress(PlaywrightError, BrowserStalled):
                await bounded(download.delete(), CLOSE_SECONDS, "download artifact delete")

    @staticmethod
    async def _save_as(download: Download, dest: Path) -> Path | None:
        tmp = dest.with_name("." + dest.name + ".part")
        try:
            failure = await download.failure()
            if failure is not None:
                log.warning("download failed in the browser: %s", failure)
                raise DownloadFailed(str(failure))
            await download.save_as(tmp)
            datadir.make_private(tmp)
            tmp.replace(dest)  # a complete file appears under its final name only
            return dest
        except OSError as exc:  # no room in incoming/, a file system error
            log.warning("saving a download failed: %s", exc)
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)
            raise DownloadFailed(exc.strerror or type(exc).__name__) from exc
        except PlaywrightError as exc:
            log.warning("saving a download failed: %s", exc)
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)
            return None
        except BaseException:  # stopped mid-save (shutdown): no half file is left behind
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)
            raise

    async def close(self) -> None:
        """Stop waiting for late files (shutdown); their tabs are closed."""
        tasks = list(self.late_saves)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def wait_late_saves(self) -> None:
        """Let downloads that outlived their call finish (tests, shutdown)."""
        if self.late_saves:
            await asyncio.gather(*list(self.late_saves), return_exceptions=True)


def _retrieved(task: asyncio.Task[Path | None]) -> None:
    """Done callback of a save that may end after its call gave up on it: its failure is logged."""
    if not task.cancelled() and task.exception() is not None:
        log.info("a late download ended without a file: %s", task.exception())
