"""Saving a browser download (`Downloader._finish`) over a fake Playwright download: the browser's
own copy is deleted once saved, and a save stopped midway (shutdown) leaves no half file."""

from __future__ import annotations

import asyncio
import errno
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest

from cnki_mcp.clock import FakeClock
from cnki_mcp.errors import CnkiError
from cnki_mcp.files import free_space
from cnki_mcp.site.downloading import Downloader, DownloadFailed, failed_download
from cnki_mcp.store import Store
from tests.paper_samples import sample_detail


class FakeDownload:
    """Writes part of the file, then (with `hang`) waits for ever, as a slow save does."""

    def __init__(self, hang: bool) -> None:
        self.hang = hang
        self.writing = asyncio.Event()
        self.deleted = False

    async def failure(self) -> str | None:
        return None

    async def save_as(self, path: Path) -> None:
        Path(path).write_bytes(b"%PDF-1.4 half")
        self.writing.set()
        if self.hang:
            await asyncio.Event().wait()
        Path(path).write_bytes(b"%PDF-1.4 whole")

    async def delete(self) -> None:
        self.deleted = True


async def test_a_saved_download_is_moved_in_place_and_the_browsers_copy_deleted(tmp_path: Path) -> None:
    download = FakeDownload(hang=False)
    dest = tmp_path / "f.pdf"
    assert await Downloader._finish(download, dest) == dest  # type: ignore[arg-type]
    assert dest.read_bytes() == b"%PDF-1.4 whole" and download.deleted
    assert [p.name for p in tmp_path.iterdir()] == ["f.pdf"]


async def test_a_save_stopped_midway_leaves_no_half_file(tmp_path: Path) -> None:
    download = FakeDownload(hang=True)
    task = asyncio.create_task(Downloader._finish(download, tmp_path / "f.pdf"))  # type: ignore[arg-type]
    await download.writing.wait()
    assert [p.name for p in tmp_path.iterdir()] == [".f.pdf.part"]
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert list(tmp_path.iterdir()) == []


class FailedDownload(FakeDownload):
    """A download the browser ended without a file (Chromium says `canceled` when the disk is full)."""

    def __init__(self, failure: str) -> None:
        super().__init__(hang=False)
        self.reason = failure

    async def failure(self) -> str | None:
        return self.reason


class FullDiskDownload(FakeDownload):
    async def save_as(self, path: Path) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")


async def test_a_download_the_browser_failed_is_a_failure_not_a_file_still_to_come(tmp_path: Path) -> None:
    # It was the same None as "not finished yet", so the call said the download might still be in
    # progress (SIDE_EFFECT_UNCERTAIN "下载可能仍在进行") after the browser had given it up.
    download = FailedDownload("canceled")
    with pytest.raises(DownloadFailed) as info:
        await Downloader._finish(download, tmp_path / "f.pdf")  # type: ignore[arg-type]
    assert info.value.reason == "canceled" and download.deleted
    full = FullDiskDownload(hang=False)
    with pytest.raises(DownloadFailed) as info:
        await Downloader._finish(full, tmp_path / "g.pdf")  # type: ignore[arg-type]
    assert full.deleted and list(tmp_path.iterdir()) == []  # no half file
    error = failed_download(info.value.reason, "rec_x", "pdf", free_space(tmp_path))
    assert error.code == "SIDE_EFFECT_UNCERTAIN"  # whether CNKI charged stays unknown
    assert error.details["browser_failure"] == info.value.reason
    assert isinstance(error.details["free_bytes"], int)


class NoTabs:
    """DetailTabs that fail the test when the downloader would open a page (and click)."""

    async def open(self, *_args: object) -> None:
        raise AssertionError("the downloader opened the detail page to click again")


async def test_a_file_kept_after_its_name_was_taken_is_archived_by_the_next_call_without_a_click(
    tmp_path: Path,
) -> None:
    # The file CNKI sent came after the name it was to get was taken (a FILE_EXISTS raised after
    # the click: another call with the same filename archived first); it was kept in
    # incoming/<op_id>/, and a next call under another name clicked, and paid, again.
    clock = FakeClock(wall=datetime(2026, 1, 1, tzinfo=UTC))
    data = tmp_path / "data"
    with Store.open(data, clock) as store:
        ref = store.upsert_from_detail(sample_detail(), "https://kns.cnki.net/kcms2/article/abstract?v=T", clock.now()).record_ref
        op_id = uuid.uuid4().hex
        kept = data / "incoming" / op_id / f"{uuid.uuid4().hex}.pdf"
        kept.parent.mkdir(parents=True)
        body = b"%PDF-1.4\n" + b"x" * 200 + b"\n%%EOF\n"
        kept.write_bytes(body)
        click = store.record_click(ref, "pdf", op_id, clock.now())
        store.click_outcome(click, "file_exists", clock.now(), {"incoming": str(kept)})
        downloader = Downloader(NoTabs(), store, clock, data)  # type: ignore[arg-type]
        (data / "downloads").mkdir()
        (data / "downloads" / "taken.pdf").write_bytes(b"someone else's")
        with pytest.raises(CnkiError) as taken:  # that name is still taken: refused, nothing clicked
            await downloader.download(ref, filename="taken.pdf")
        assert taken.value.code == "FILE_EXISTS"

        got = await downloader.download(ref, filename="另一个名字.pdf")
        assert got.reconciled and got.source == "download" and Path(got.path) == data / "downloads" / "另一个名字.pdf"
        assert Path(got.path).read_bytes() == body and not kept.parent.exists()
        assert (await downloader.download(ref)).source == "cache"  # archived: the store has it


class HeldDownload(FakeDownload):
    """A download CNKI is still sending: its file is complete once the test releases it."""

    def __init__(self, body: bytes) -> None:
        super().__init__(hang=False)
        self.body = body
        self.release = asyncio.Event()

    async def save_as(self, path: Path) -> None:
        await self.release.wait()
        Path(path).write_bytes(self.body)


async def test_a_file_still_arriving_is_never_clicked_for_again_not_even_with_retry(tmp_path: Path) -> None:
    # The call's wait ended while CNKI was still sending the file (a large thesis on a slow
    # link): SIDE_EFFECT_UNCERTAIN said "未收到文件…下载可能仍在进行" and the next step offered
    # retry=true, whose click was a second order for a file already on its way.
    clock = FakeClock(wall=datetime(2026, 1, 1, tzinfo=UTC))
    data = tmp_path / "data"
    with Store.open(data, clock) as store:
        ref = store.upsert_from_detail(sample_detail(), "https://kns.cnki.net/kcms2/article/abstract?v=T", clock.now()).record_ref
        op_id = uuid.uuid4().hex
        store.record_click(ref, "pdf", op_id, clock.now())  # no outcome: the call ended waiting
        downloader = Downloader(NoTabs(), store, clock, data)  # type: ignore[arg-type]
        body = b"%PDF-1.4\n" + b"x" * 200 + b"\n%%EOF\n"
        arriving = HeldDownload(body)
        folder = downloader.make_incoming(op_id)
        assert await downloader._save(arriving, folder, "pdf", clock.monotonic()) is None  # type: ignore[arg-type]

        with pytest.raises(CnkiError) as still:
            await downloader.download(ref, retry=True)
        assert still.value.code == "SIDE_EFFECT_UNCERTAIN" and still.value.details["downloading"] is True

        arriving.release.set()
        await downloader.wait_late_saves()
        got = await downloader.download(ref)  # the file it was sending, without a click
        assert got.reconciled and Path(got.path).read_bytes() == body
