"""What a Network.loadNetworkResource answer without a stream is (site/transport.py `unstreamed`):
an HTTP error status whose body Chromium dropped, an answer broken off, or no answer."""

from __future__ import annotations

from typing import Any

import pytest

from cnki_mcp.errors import SiteUnavailable
from cnki_mcp.site.transport import Fetched, TransportError, unstreamed

URL = "https://kns.cnki.net/kcms2/article/abstract?v=abc"


@pytest.mark.parametrize(
    "resource",
    [
        {"success": False, "httpStatusCode": 404, "netError": -379, "netErrorName": "net::ERR_HTTP_RESPONSE_CODE_FAILURE"},
        # review 7a L8: netErrorName is optional in CDP; the code alone was taken for a cut answer
        # (SITE_UNAVAILABLE, retried three times) and relocation / access-denied never applied
        {"success": False, "httpStatusCode": 404, "netError": -379},
    ],
)
def test_an_http_error_answer_is_its_status_with_the_body_lost(resource: dict[str, Any]) -> None:
    assert unstreamed(resource, URL) == Fetched(404, URL, "", final_url_known=False, body_lost=True)


def test_another_net_error_after_a_status_is_an_answer_cut_short() -> None:
    resource = {"success": False, "httpStatusCode": 200, "netError": -354, "netErrorName": "net::ERR_CONTENT_LENGTH_MISMATCH"}
    with pytest.raises(SiteUnavailable) as info:
        unstreamed(resource, URL)
    assert info.value.details["status"] == 200
    with pytest.raises(SiteUnavailable):
        unstreamed({"success": False, "httpStatusCode": 200, "netError": -354}, URL)


def test_no_status_is_no_answer() -> None:
    with pytest.raises(TransportError):
        unstreamed({"success": False, "netError": -105, "netErrorName": "net::ERR_NAME_NOT_RESOLVED"}, URL)
