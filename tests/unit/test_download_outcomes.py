"""What a download click's tabs show, read as the charge it means (site/download_outcomes.py,
docs/site-rules.md §2.7): the pure rules, without a browser."""

from __future__ import annotations

import pytest

from cnki_mcp.site.download_outcomes import (
    LOW_DISK_BYTES,
    ErrorPage,
    NetFailed,
    OrderFailed,
    failed_download,
    order_error,
    refusal_text,
    unsent_order,
)

ORDER = "https://bar.cnki.net/bar/download/order?id=abc"
FILE = "https://docdown.cnki.net/docdown/fulltext/download?q=abc"


@pytest.mark.parametrize("status", [429, 404, 410])
def test_an_error_page_of_the_order_url_itself_is_the_order_not_handled(status: int) -> None:
    got = order_error(status, ORDER, "Not Found")
    assert isinstance(got, ErrorPage) and got.status == status and got.error.retryable


@pytest.mark.parametrize(("status", "url"), [(503, ORDER), (500, ORDER), (403, ORDER), (404, FILE), (429, FILE)])
def test_a_server_error_or_an_error_past_the_order_url_leaves_the_charge_unknown(status: int, url: str) -> None:
    got = order_error(status, url, "  Service\n  Unavailable ")
    assert isinstance(got, OrderFailed) and (got.status, got.url, got.text) == (status, url, "Service Unavailable")


def test_refusal_words_count_only_in_the_pages_first_300_characters() -> None:
    assert refusal_text("对不起，您的账户余额不足，请充值后下载") is not None
    assert refusal_text("正文" * 200 + "余额不足") is None  # a word deep in a page is not its verdict


@pytest.mark.parametrize(
    ("url", "error", "unsent"),
    [
        (ORDER, "net::ERR_NAME_NOT_RESOLVED", True),
        (ORDER, "net::ERR_CONNECTION_REFUSED", True),
        (ORDER, "net::ERR_CONNECTION_RESET", False),  # may come after CNKI took the order
        (FILE, "net::ERR_CONNECTION_REFUSED", False),  # the order was taken before the file host
        # the proxy or the TLS handshake failed: the order never left (was 是否已计费未知)
        (ORDER, "net::ERR_CERT_AUTHORITY_INVALID", True),
        (ORDER, "net::ERR_SSL_VERSION_OR_CIPHER_MISMATCH", True),
        (ORDER, "net::ERR_TUNNEL_CONNECTION_FAILED", True),
        (ORDER, "net::ERR_PROXY_AUTH_REQUESTED", True),
        (ORDER, "net::ERR_NO_SUPPORTED_PROXIES", True),
        (ORDER, "net::ERR_NETWORK_ACCESS_DENIED", True),
        # also a TLS read error after the order was written (a reused keep-alive connection to the
        # order host, TLS False Start): was 订单没有发出 and clicked again, a double charge possible
        (ORDER, "net::ERR_SSL_PROTOCOL_ERROR", False),
        (ORDER, "net::ERR_SSL_BAD_RECORD_MAC_ALERT", False),
        (FILE, "net::ERR_CERT_AUTHORITY_INVALID", False),
    ],
)
def test_only_an_order_url_never_reached_is_an_unsent_order(url: str, error: str, unsent: bool) -> None:
    assert NetFailed(url, error).unsent is unsent


@pytest.mark.parametrize(
    ("error", "cause", "retryable"),
    [
        ("net::ERR_PROXY_CONNECTION_FAILED", "proxy_down", False),  # was retryable, no cause, 稍后再调用
        ("net::ERR_CERT_AUTHORITY_INVALID", "tls", False),
        ("net::ERR_NAME_NOT_RESOLVED", "dns", True),
    ],
)
def test_an_unsent_order_names_its_network_cause_as_any_page_does(error: str, cause: str, retryable: bool) -> None:
    got = unsent_order(NetFailed(ORDER, error), "rec_x", "pdf")
    assert (got.code, got.details.get("network_cause"), got.retryable, got.details["net_error"]) == (
        "SITE_UNAVAILABLE", cause, retryable, error
    )


@pytest.mark.parametrize(
    ("free", "no_space"),
    [(1 << 20, True), (LOW_DISK_BYTES - 1, True), (LOW_DISK_BYTES, False), (1 << 40, False), (None, False)],
)
def test_a_failed_download_puts_itself_down_to_the_disk_only_when_it_is_nearly_full(
    free: int | None, no_space: bool
) -> None:
    # the rule alone: the free space is what the caller read (None: the system could not say)
    error = failed_download("canceled", "rec_x", "pdf", free)
    assert error.code == "SIDE_EFFECT_UNCERTAIN"
    assert error.details["free_bytes"] == free and error.details["no_space"] is no_space
    assert error.details["browser_failure"] == "canceled" and error.details["record_ref"] == "rec_x"
