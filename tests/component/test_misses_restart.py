"""Lookups CNKI answered with nothing are reused for 24 hours across a server restart
(DESIGN.md §References, `store/misses.py`): kept only in the process before, a restart asked CNKI
again for every invented reference (2 grid requests each, plus the search template's capture in a
new process) and every title link_references had not found."""

from __future__ import annotations

from pathlib import Path

from corpus_backend import CorpusBackend

from cnki_mcp.clock import FakeClock
from cnki_mcp.links import LinkInput
from cnki_mcp.pipeline.links import RECENT_MISS_WARNING
from cnki_mcp.pipeline.verify import VerifyInput
from cnki_mcp.store import Store
from tests.component.test_links_lookup import FakeSite, row, run_links
from tests.component.test_verify_shapes import INVENTED, TITLE, run


async def test_an_invented_reference_is_not_searched_again_after_a_restart_within_a_day(
    tmp_path: Path, clock: FakeClock
) -> None:
    data = tmp_path / "data"
    first = CorpusBackend()
    with Store.open(data, clock) as store:
        result = await run(clock, store, first, VerifyInput(references=[INVENTED, f"《{TITLE}》"]))
    assert first.requests["grid"] == 2 and [e.verdict for e in result.entries] == ["not_found", "verified"]

    await clock.advance(3600)
    again = CorpusBackend()
    with Store.open(data, clock) as store:
        reused = await run(clock, store, again, VerifyInput(references=[INVENTED]))
    assert sum(again.requests.values()) == 0 and reused.entries[0].verdict == "not_found"
    assert reused.entries[0].searches == result.entries[0].searches

    await clock.advance(24 * 3600)
    later = CorpusBackend()
    with Store.open(data, clock) as store:
        await run(clock, store, later, VerifyInput(references=[INVENTED]))
    assert later.requests["grid"] == 2


async def test_a_title_cnki_listed_nothing_for_is_not_asked_again_after_a_restart(tmp_path: Path, clock: FakeClock) -> None:
    data = tmp_path / "data"
    site = FakeSite({"有的论文": [row("有的论文", "1")]})
    text = "《有的论文》与《没有的论文》"
    with Store.open(data, clock) as store:
        await run_links(clock, store, site, LinkInput(text=text, lookup_missing=True))
    assert len(site.requests) == 1
    with Store.open(data, clock) as store:
        _, again = await run_links(clock, store, site, LinkInput(text=text, lookup_missing=True))
    assert again is not None and len(site.requests) == 1 and again.requests == 0
    assert RECENT_MISS_WARNING.format(n=1) in again.warnings

    site.catalogue["没有的论文"] = [row("没有的论文", "2")]  # listed meanwhile: asked with fresh lookups next day
    await clock.advance(24 * 3600)
    with Store.open(data, clock) as store:
        _, later = await run_links(clock, store, site, LinkInput(text=text, lookup_missing=True))
        assert later is not None and [r.status for r in later.references] == ["linked", "linked"]
        assert store_keys(store) == []  # a title found is no longer a miss


def store_keys(store: Store) -> list[str]:
    with store._read() as conn:
        return [k for (k,) in conn.execute("SELECT key FROM lookup_misses")]
