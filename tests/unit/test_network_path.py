"""The network path between the browser and CNKI (docs/simulator.md "The network path"): CNKI's
overseas site is recognised as such, and a failure to reach CNKI is told by its cause (the proxy
down, TLS under a captive portal, DNS, no network), with the same SITE_UNAVAILABLE code."""

from __future__ import annotations

import pytest
from playwright.async_api import Error as PlaywrightError

from cnki_mcp.parse.gate import error_page
from cnki_mcp.site.endpoints import network_cause, overseas_host
from cnki_mcp.site.search_page import navigation_failure
from cnki_mcp.site.transport import TransportError, transport_unavailable


@pytest.mark.parametrize(
    ("url", "host"),
    [
        ("https://oversea.cnki.net/index/", "oversea.cnki.net"),
        ("https://chn.oversea.cnki.net/kns/AdvSearch?dbcode=CFLS", "chn.oversea.cnki.net"),
        ("https://kns.cnki.net/kns8s/AdvSearch", None),
        ("https://www.cnki.net/", None),
        ("https://oversea.example.com/", None),  # not CNKI's
        ("https://oversea.cnki.net.evil.com/", None),
        ("https://[broken/", None),
        (None, None),
    ],
)
def test_cnkis_overseas_site_is_told_apart_from_the_domestic_one(url: str | None, host: str | None) -> None:
    # identity.is_cnki_host takes oversea.cnki.net for CNKI: its pages were read as the domestic site's
    assert overseas_host(url) == host


@pytest.mark.parametrize(
    ("failure", "cause"),
    [
        ("net::ERR_PROXY_CONNECTION_FAILED", "proxy_down"),
        ("net::ERR_TUNNEL_CONNECTION_FAILED", "proxy_upstream"),
        ("net::ERR_CERT_AUTHORITY_INVALID", "tls"),  # a captive portal answering for kns.cnki.net
        ("net::ERR_CERT_COMMON_NAME_INVALID", "tls"),
        ("net::ERR_NAME_NOT_RESOLVED", "dns"),
        ("net::ERR_INTERNET_DISCONNECTED", "offline"),
        ("net::ERR_CONNECTION_RESET", "connection"),
        ("net::ERR_CONNECTION_REFUSED", "connection"),
    ],
)
def test_a_failure_to_reach_cnki_names_its_cause(failure: str, cause: str) -> None:
    text = f"Page.goto: {failure} at https://kns.cnki.net/kns8s/AdvSearch"
    for error in (navigation_failure(PlaywrightError(text)), transport_unavailable(TransportError(text))):
        assert error.code == "SITE_UNAVAILABLE"
        assert error.details["network_cause"] == cause


def test_a_net_error_that_is_no_failure_to_reach_cnki_names_no_cause() -> None:
    error = transport_unavailable(TransportError("net::ERR_ABORTED (https://kns.cnki.net/x)"))
    assert error.code == "SITE_UNAVAILABLE" and "network_cause" not in error.details


def test_the_cdns_418_on_a_reader_or_order_page_is_site_unavailable_naming_it() -> None:
    error = error_page(418, "阅读页", "稍后重试")
    assert error is not None
    assert (error.code, error.details["reason"]) == ("SITE_UNAVAILABLE", "cdn_refused")


@pytest.mark.parametrize(
    ("failure", "cause"),
    [
        ("net::ERR_NETWORK_CHANGED", "network_changed"),  # Wi-Fi or VPN switched: a retry succeeds; not "offline"
        ("net::ERR_NETWORK_IO_SUSPENDED", "network_changed"),
        ("net::ERR_NETWORK_ACCESS_DENIED", "blocked"),  # a firewall or the OS: not "offline"
        ("net::ERR_PROXY_AUTH_REQUESTED", "proxy_auth"),  # the proxy is up and wants a login: not "proxy_down"
        ("net::ERR_PROXY_AUTH_UNSUPPORTED", "proxy_auth"),
        ("net::ERR_CERT_DATE_INVALID", "clock"),  # usually this computer's clock, not a captive portal
        ("net::ERR_CERT_AUTHORITY_INVALID", "tls"),
        ("net::ERR_PROXY_CONNECTION_FAILED", "proxy_down"),
        ("net::ERR_ADDRESS_UNREACHABLE", "offline"),
    ],
)
def test_a_net_error_sharing_a_prefix_with_another_cause_names_its_own(failure: str, cause: str) -> None:
    found = network_cause(f"Page.goto: {failure} at https://kns.cnki.net/kns8s/AdvSearch")
    assert found is not None and found[:2] == (failure, cause)


def test_the_advice_to_bypass_the_proxy_works_off_linux_too() -> None:
    # NO_PROXY reaches Chromium only on Linux: elsewhere the proxy app's direct rule is what works
    from cnki_mcp.parse.gate import CDN_ADVICE

    proxy_down = network_cause("net::ERR_PROXY_CONNECTION_FAILED")
    assert proxy_down is not None
    for advice in (CDN_ADVICE, proxy_down[2]):
        assert "在代理软件中把 cnki.net 设为直连" in advice and "Linux 上" in advice
