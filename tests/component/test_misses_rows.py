"""The rows of `lookup_misses` (store/misses.py): answered only within a day after they were kept
(not when stamped later than now: the clock was ahead), never handed on when this release cannot
read them, and gone a day later whichever tool runs next, or when the store opens."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from corpus_backend import CorpusBackend

from cnki_mcp.clock import FakeClock
from cnki_mcp.links import LinkInput
from cnki_mcp.pipeline.verify import VerifyInput
from cnki_mcp.store import Store
from tests.component.test_links_lookup import FakeSite, run_links
from tests.component.test_verify_shapes import INVENTED, run


def kept(store: Store) -> list[tuple[str, str]]:
    with store._read() as conn:
        return sorted(conn.execute("SELECT kind, key FROM lookup_misses").fetchall())


async def test_a_miss_kept_while_the_clock_was_ahead_is_searched_again_once_it_is_put_right(
    tmp_path: Path, clock: FakeClock
) -> None:
    data = tmp_path / "data"
    ahead = FakeClock(wall=clock.now() + timedelta(days=3))
    with Store.open(data, ahead) as store:
        await run(ahead, store, CorpusBackend(), VerifyInput(references=[INVENTED]))
        assert [kind for kind, _ in kept(store)] == ["reference"]
    again = CorpusBackend()
    with Store.open(data, clock) as store:
        result = await run(clock, store, again, VerifyInput(references=[INVENTED]))
    assert again.requests["grid"] == 2 and result.entries[0].verdict == "not_found"


@pytest.mark.parametrize("data_kept", ["{not json", "null", '{"title": 1}', "[1, 2]"])
async def test_a_miss_row_this_release_cannot_read_is_searched_again(
    tmp_path: Path, clock: FakeClock, data_kept: str
) -> None:
    data = tmp_path / "data"
    with Store.open(data, clock) as store:
        await run(clock, store, CorpusBackend(), VerifyInput(references=[INVENTED]))
        with store._write() as conn:
            conn.execute("UPDATE lookup_misses SET data = ?", (data_kept,))
        again = CorpusBackend()
        result = await run(clock, store, again, VerifyInput(references=[INVENTED]))
    assert again.requests["grid"] == 2 and result.entries[0].verdict == "not_found"


async def test_misses_of_either_kind_leave_a_day_later_with_any_miss_kept_or_when_the_store_opens(
    tmp_path: Path, clock: FakeClock
) -> None:
    data = tmp_path / "data"
    with Store.open(data, clock) as store:
        await run(clock, store, CorpusBackend(), VerifyInput(references=[INVENTED]))
        await clock.advance(25 * 3600)
        await run_links(clock, store, FakeSite(), LinkInput(text="《没有的论文》", lookup_missing=True))
        assert [kind for kind, _ in kept(store)] == ["link"]  # the reference's row left with the link's write
    await clock.advance(25 * 3600)
    with Store.open(data, clock) as store:
        assert kept(store) == []
    ahead = FakeClock(wall=clock.now() + timedelta(days=3))
    with Store.open(data, ahead) as store:
        await run_links(ahead, store, FakeSite(), LinkInput(text="《没有的论文》", lookup_missing=True))
    with Store.open(data, clock) as store:
        assert kept(store) == []  # stamped later than now: never answered, so not kept either
