"""Error details that reach the client carry no URL query: a detail locator (`v=`), the reader's
invoice/nonce or a login ticket inside a Playwright message or a too-large response stays internal."""

from __future__ import annotations

import pytest

from cnki_mcp.errors import CnkiError
from cnki_mcp.site.cnki import CnkiSite
from cnki_mcp.site.deadline import BrowserStalled
from cnki_mcp.site.endpoints import REASON_CHARS, error_reason, without_query
from cnki_mcp.site.transport import TransportError, transport_unavailable

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


def test_an_error_reason_is_the_text_without_queries_cut_to_its_length() -> None:
    text = f"Page.goto: net::ERR_TIMED_OUT at {LOCATOR}\ncall log:\n  - navigating to {LOCATOR} " + "x" * 400
    whole, first = error_reason(RuntimeError(text)), error_reason(RuntimeError(text), first_line=True)
    assert "SECRETLOCATOR" not in whole and len(whole) == REASON_CHARS and "call log" in whole
    assert first == "Page.goto: net::ERR_TIMED_OUT at https://kns.cnki.net/kcms2/article/abstract"
    # an exception without text is named by its class, with or without its first line asked for
    assert error_reason(TransportError()) == error_reason(TransportError(), first_line=True) == "TransportError"


@pytest.mark.parametrize("exc", [TransportError(f"fetch failed ({LOCATOR})"), BrowserStalled("page content", 5)])
def test_a_request_the_browser_did_not_carry_is_site_unavailable_with_its_reason(exc: Exception) -> None:
    error = transport_unavailable(exc)
    assert error.code == "SITE_UNAVAILABLE" and error.details["reason"] == error_reason(exc)
    assert "SECRETLOCATOR" not in repr(error.details)
