"""A detail tab that fails to open is closed whatever the failure (site/reading.py
`DetailTabs._open_once`). Measured against the simulator with a 5xx on every sixth detail page:
each failed download_paper left its tab open, 20 tabs after 40 papers, until the browser
restarted."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from cnki_mcp.errors import CnkiError, ContentNotReady, IdentityConflict, SiteUnavailable
from cnki_mcp.identity import Paper
from cnki_mcp.site import reading
from cnki_mcp.site.reading import DetailTabs


class _Tab:
    def __init__(self) -> None:
        self.closed = False

    def is_closed(self) -> bool:
        return self.closed

    async def close(self) -> None:
        self.closed = True


class _Host:
    def __init__(self) -> None:
        self.tabs: list[_Tab] = []

    async def new_page(self) -> _Tab:
        self.tabs.append(_Tab())
        return self.tabs[-1]

    async def check_alive(self) -> bool:
        return True


@pytest.mark.parametrize(
    "failure",
    [
        SiteUnavailable(reason="HTTP 502"),
        ContentNotReady("详情页没有加载完成"),
        IdentityConflict(record_ref="rec_x", expected="甲", found="乙"),
    ],
    ids=lambda exc: exc.code,
)
async def test_a_detail_tab_that_fails_to_open_is_closed(monkeypatch: pytest.MonkeyPatch, failure: CnkiError) -> None:
    async def no_block(host: Any, page: Any) -> None:
        return None

    async def load(page: Any, url: str, op: Any) -> Any:
        raise failure

    monkeypatch.setattr(reading, "block_page_apis", no_block)
    host = _Host()
    tabs = DetailTabs(SimpleNamespace(endpoints=None), host, None, None, None)  # type: ignore[arg-type]
    monkeypatch.setattr(tabs, "_load", load)
    paper = Paper(record_ref="rec_x", title="甲", authors=[], locator="https://kns.cnki.net/kcms2/article/abstract?v=1")
    with pytest.raises(CnkiError) as info:
        await tabs._open_once(paper, None)
    assert info.value.code == failure.code
    assert [tab.closed for tab in host.tabs] == [True]


class _ReturnedTab:
    """A tab a person's step brought back to the detail page, in some load state."""

    url = "https://kns.cnki.net/kcms2/article/abstract?v=abc&uniplatform=NZKPT"

    def __init__(self, state: dict[str, bool]) -> None:
        self.state = state

    async def evaluate(self, script: str) -> dict[str, bool]:
        return self.state

    async def content(self) -> str:
        from tests.conftest import read_real

        return read_real("detail-kcms2/pluginsx_detail_kcms2_2026.html")


@pytest.mark.parametrize(
    ("state", "read"),
    [
        ({"complete": False, "pending": False}, False),
        ({"complete": True, "pending": True}, False),
        ({"complete": True, "pending": False}, True),
    ],
)
async def test_a_detail_page_a_step_returned_to_is_read_only_once_loaded(state: dict[str, bool], read: bool) -> None:
    # read while still loading or fetching its lazy parts, its missing keywords or funds were stored
    # as CNKI's answer (the reader's detail page counts as fresh for get_metadata)
    tabs = DetailTabs(SimpleNamespace(endpoints=None), _Host(), None, None, None)  # type: ignore[arg-type]
    detail = await tabs._returned_detail(_ReturnedTab(state))  # type: ignore[arg-type]
    assert (detail is not None) == read
