"""`diagnostics`' memory figures (server/tools_session.py `memory_from`): resident memory now and
the peak since start, each read where the platform keeps it."""

from __future__ import annotations

from cnki_mcp.server.tools_session import memory_from


def test_resident_memory_now_is_statm_second_field_in_pages_and_the_peak_is_maxrss_in_kib() -> None:
    assert memory_from("52000 31000 4000 900 0 30000 0\n", 250_000, darwin=False, page_size=4096) == (
        31000 * 4096,
        250_000 * 1024,
    )


def test_macos_gives_its_peak_in_bytes_and_no_current_figure() -> None:
    assert memory_from(None, 180_000_000, darwin=True, page_size=16384) == (None, 180_000_000)


def test_an_unreadable_statm_or_no_getrusage_leaves_that_figure_empty() -> None:
    assert memory_from("garbage", None, darwin=False, page_size=4096) == (None, None)


def test_the_peak_is_never_below_the_resident_memory_now() -> None:
    # the kernel's high-water mark (ru_maxrss) is updated lazily and can lag behind statm
    assert memory_from("50000 30000 0 0 0 0 0", 100_000, darwin=False, page_size=4096) == (30000 * 4096,) * 2
