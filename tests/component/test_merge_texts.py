"""Two records of one paper merged (`store/papers.py` `_absorb`, `library.absorb_texts`): the full
texts and the reader page follow the complete body, whichever record read it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from cnki_mcp.clock import FakeClock
from cnki_mcp.models import NativeId
from cnki_mcp.parse import PARSER_VERSION
from cnki_mcp.store import Store
from tests.component.test_reading_restart import body
from tests.paper_samples import sample_detail


@pytest.fixture
def store(tmp_path: Path, clock: FakeClock) -> Iterator[Store]:
    with Store.open(tmp_path / "data", clock) as s:
        yield s


def two_records(store: Store, clock: FakeClock) -> tuple[str, str]:
    """The primary (found by its CNKI file name) and the other (by its DOI), not yet known as one."""
    primary = store.upsert_from_detail(sample_detail(doi=None, source=None), None, clock.now())
    other = store.upsert_from_detail(sample_detail(native=NativeId(), source="软件学报", title="Other"), None, clock.now())
    assert primary.record_ref != other.record_ref
    return primary.record_ref, other.record_ref


def merge(store: Store, clock: FakeClock, primary: str) -> None:
    assert store.upsert_from_detail(sample_detail(), None, clock.now()).record_ref == primary


@pytest.mark.parametrize("primary_read", ["trial", "nothing"])
def test_a_complete_body_of_the_absorbed_record_wins_over_the_primarys_trial_and_keeps_its_page(
    store: Store, clock: FakeClock, primary_read: str
) -> None:
    primary, other = two_records(store, clock)
    if primary_read == "trial":
        store.save_fulltext(primary, "html", "试读的前几段。", clock.now(), complete=False)
    page = body()
    store.save_fulltext(other, "html", page.text, clock.now())
    store.save_reader_page(other, page, clock.now(), parser_version=PARSER_VERSION)
    merge(store, clock, primary)
    assert store.fulltexts([primary])[primary]["html"] == page.text
    stored = store.reader_page(primary, clock.now(), parser_version=PARSER_VERSION)
    assert stored is not None and stored.page == page


def test_the_primarys_complete_body_and_page_stay_over_the_absorbed_records_trial(store: Store, clock: FakeClock) -> None:
    primary, other = two_records(store, clock)
    page = body()
    store.save_fulltext(primary, "html", page.text, clock.now())
    store.save_reader_page(primary, page, clock.now(), parser_version=PARSER_VERSION)
    store.save_fulltext(other, "html", "试读的前几段。", clock.now(), complete=False)
    merge(store, clock, primary)
    assert store.fulltexts([primary])[primary]["html"] == page.text
    stored = store.reader_page(primary, clock.now(), parser_version=PARSER_VERSION)
    assert stored is not None and stored.page == page
