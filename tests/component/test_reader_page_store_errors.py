"""A stored reader page judged a miss (`store/reader_pages.py` `reader_page`) is deleted when it
is asked for; that delete failing (a read-only or full disk, a database locked) made the read
DATA_DIRECTORY_UNUSABLE / DATABASE_UNUSABLE instead of the miss it is."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from cnki_mcp.clock import FakeClock
from cnki_mcp.errors import DatabaseUnusable, DataDirectoryUnusable
from cnki_mcp.parse import PARSER_VERSION
from cnki_mcp.store import Store
from tests.component.test_reading_restart import body
from tests.paper_samples import sample_detail


@pytest.fixture
def store(tmp_path: Path, clock: FakeClock) -> Iterator[Store]:
    with Store.open(tmp_path / "data", clock) as s:
        yield s


def a_stored_page(store: Store, clock: FakeClock) -> str:
    ref = store.upsert_from_detail(sample_detail(), None, clock.now()).record_ref
    page = body()
    store.save_fulltext(ref, "html", page.text, clock.now())
    store.save_reader_page(ref, page, clock.now(), parser_version=PARSER_VERSION)
    return ref


@pytest.mark.parametrize(
    "refusal",
    [DataDirectoryUnusable("磁盘已满", reason="disk_full"), DatabaseUnusable("数据库被锁定", reason="locked")],
)
def test_a_stale_reader_page_the_store_cannot_delete_is_a_miss(
    store: Store, clock: FakeClock, monkeypatch: pytest.MonkeyPatch, refusal: Exception
) -> None:
    ref = a_stored_page(store, clock)

    @contextmanager
    def refused() -> Iterator[None]:
        raise refusal
        yield

    monkeypatch.setattr(store, "_write", refused)
    assert store.reader_page(ref, clock.now(), parser_version=PARSER_VERSION + 1) is None  # was the refusal


def test_a_reader_page_whose_version_is_not_a_number_is_a_miss(store: Store, clock: FakeClock) -> None:
    ref = a_stored_page(store, clock)
    with store._write() as conn:
        conn.execute("UPDATE reader_pages SET parser_version = 'v2'")
    assert store.reader_page(ref, clock.now(), parser_version=PARSER_VERSION) is None  # was ValueError
    with store._read() as conn:
        assert conn.execute("SELECT count(*) FROM reader_pages").fetchone()[0] == 0
