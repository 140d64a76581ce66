"""Error details that reach the client carry no URL query: a detail locator (`v=`), the reader's
invoice/nonce or a login ticket inside a Playwright message or a too-large response stays internal."""

from __future__ import annotations

import pytest

from cnki_mcp.errors import CnkiError
from cnki_mcp.site.cnki import CnkiSite
from cnki_mcp.site.endpoints import without_query

LOCATOR = "https://kns.cnki.net/kcms2/article/abstract?v=SECRETLOCATOR&uniplatform=NZKPT"


def test_without_query_keeps_scheme_host_and_path_only() -> None:
    text = (
        f"Page.goto: net::ERR_TIMED_OUT at {LOCATOR}\n"
        'call log: navigating to "https://kns.cnki.net/reader/xml?invoice=INV&nonce=NON"'
        " (https://login.cnki.net/login#ticket=TCK)"
    )
    shown = without_query(text)
    for secret in ("SECRETLOCATOR", "INV", "NON", "TCK"):
        assert secret not in shown
    assert "https://kns.cnki.net/kcms2/article/abstract" in shown and "https://login.cnki.net/login" in shown


class _Session:
    async def send(self, method: str, params: dict[str, object] | None = None) -> dict[str, object]:
        return {}


async def test_response_too_large_detail_has_no_locator_query() -> None:
    with pytest.raises(CnkiError) as info:
        await CnkiSite._read_stream(_Session(), "h", LOCATOR, {"Content-Length": str(64 << 20)})  # type: ignore[arg-type]
    assert info.value.code == "RESPONSE_TOO_LARGE"
    assert "SECRETLOCATOR" not in repr(info.value.details)
