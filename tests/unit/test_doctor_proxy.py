"""`cnki-mcp doctor`'s network line: the way the browser will reach CNKI, by Chromium's own rules
(browser_route.py; each case below was observed with Chromium on Linux, docs/simulator.md
"The network path"), never showing a proxy's user name or password."""

from __future__ import annotations

import pytest

from cnki_mcp.browser_route import Route, browser_route
from cnki_mcp.cli.doctor_cmd import check_proxy
from cnki_mcp.settings import load_settings

P = "http://127.0.0.1:7890"


@pytest.mark.parametrize(
    ("environ", "args", "expected"),
    [
        ({"HTTPS_PROXY": P}, (), ("proxy", "HTTPS_PROXY", "127.0.0.1:7890")),
        ({"all_proxy": "socks5://127.0.0.1:7891"}, (), ("proxy", "all_proxy", "127.0.0.1:7891")),
        ({"https_proxy": "http://user:secret@proxy.lan:3128"}, (), ("proxy", "https_proxy", "proxy.lan:3128")),
        ({}, ("--proxy-server=http://10.0.0.1:8080",), ("proxy", "CNKI_BROWSER_ARGS --proxy-server", "10.0.0.1:8080")),
        ({"HTTPS_PROXY": "127.0.0.1:7890", "NO_PROXY": "localhost,.cnki.net"}, (), ("direct", "NO_PROXY", "")),
        ({"HTTPS_PROXY": "127.0.0.1:7890", "no_proxy": "cnki.net"}, (), ("direct", "no_proxy", "")),
        ({"HTTPS_PROXY": "127.0.0.1:7890"}, ("--no-proxy-server",), ("direct", "CNKI_BROWSER_ARGS --no-proxy-server", "")),
        ({}, (), ("direct", "", "")),
    ],
)
def test_the_proxy_the_browser_reaches_cnki_through_is_named_without_its_password(
    environ: dict[str, str], args: tuple[str, ...], expected: tuple[str, str, str]
) -> None:
    assert browser_route(environ, args, platform="linux", headless=True) == Route(*expected)


@pytest.mark.parametrize(
    ("environ", "args", "kind"),
    [
        # https pages never go through http_proxy, and then SOCKS_SERVER is not read either
        ({"HTTP_PROXY": P}, (), "direct"),
        ({"HTTP_PROXY": P, "SOCKS_SERVER": "127.0.0.1:9"}, (), "direct"),
        ({"SOCKS_SERVER": "127.0.0.1:7891"}, (), "proxy"),
        ({"HTTPS_PROXY": "http://[bad", "SOCKS_SERVER": "127.0.0.1:9"}, (), "proxy"),
        ({"HTTPS_PROXY": f"{P},http://127.0.0.1:8"}, (), "direct"),  # a list is no proxy URI: skipped
        ({"https_proxy": "", "HTTPS_PROXY": P}, (), "direct"),  # the lower-case name is read first
        ({"ALL_PROXY": P, "HTTPS_PROXY": ""}, (), "proxy"),
        ({"auto_proxy": "http://127.0.0.1:9/p.pac"}, (), "unchecked"),
        # NO_PROXY: entries split at "," or ";", each a host suffix
        ({"HTTPS_PROXY": P, "NO_PROXY": "localhost;cnki.net"}, (), "direct"),
        ({"HTTPS_PROXY": P, "NO_PROXY": "localhost, cnki.net"}, (), "direct"),
        ({"HTTPS_PROXY": P, "NO_PROXY": "*"}, (), "direct"),
        ({"HTTPS_PROXY": P, "NO_PROXY": "net"}, (), "direct"),
        ({"HTTPS_PROXY": P, "NO_PROXY": "localhost cnki.net"}, (), "proxy"),
        ({"HTTPS_PROXY": P, "NO_PROXY": "xcnki.net"}, (), "proxy"),
        ({"HTTPS_PROXY": P, "NO_PROXY": "cnki"}, (), "proxy"),
        ({"HTTPS_PROXY": P, "NO_PROXY": "kns.cnki.net"}, (), "proxy"),  # www.cnki.net still goes through it
        ({"HTTPS_PROXY": P, "no_proxy": "", "NO_PROXY": "cnki.net"}, (), "proxy"),
        # --proxy-server: per-scheme rules, its bypass list (exact hosts unless "*" or "."), later switches
        ({}, ("--proxy-server=http=127.0.0.1:9",), "direct"),
        ({}, ("--proxy-server=https=127.0.0.1:9",), "proxy"),
        ({}, ("--proxy-server=http=127.0.0.1:8;socks=127.0.0.1:9",), "proxy"),
        ({}, (f"--proxy-server={P}", "--proxy-bypass-list=*.cnki.net"), "direct"),
        ({}, (f"--proxy-server={P}", "--proxy-bypass-list=a;.cnki.net"), "direct"),
        ({}, (f"--proxy-server={P}", "--proxy-bypass-list=cnki.net"), "proxy"),
        ({"HTTPS_PROXY": P}, ("--proxy-bypass-list=*.cnki.net",), "proxy"),  # without --proxy-server: ignored
        ({}, (f"--proxy-server={P}", "--proxy-server=direct://"), "direct"),
        ({}, (f"--proxy-server={P}", "--proxy-pac-url=http://127.0.0.1:9/p.pac"), "unchecked"),
        # a desktop session: GNOME's own settings replace the variables
        ({"XDG_CURRENT_DESKTOP": "ubuntu:GNOME", "HTTPS_PROXY": P}, (), "direct"),
        ({"DESKTOP_SESSION": "gnome", "HTTPS_PROXY": P}, (), "direct"),
        ({"XDG_CURRENT_DESKTOP": "GNOME"}, (f"--proxy-server={P}",), "proxy"),
        ({"XDG_CURRENT_DESKTOP": "XFCE", "HTTPS_PROXY": P}, (), "proxy"),
        ({"XDG_CURRENT_DESKTOP": "KDE", "HTTPS_PROXY": P}, (), "proxy"),
    ],
)
def test_the_browsers_way_to_cnki_follows_chromiums_rules_on_linux(
    environ: dict[str, str], args: tuple[str, ...], kind: str
) -> None:
    assert browser_route(environ, args, platform="linux", headless=True).kind == kind


def test_a_headed_browser_in_a_gnome_session_uses_gnomes_proxy_settings_which_are_not_checked() -> None:
    route = browser_route({"XDG_CURRENT_DESKTOP": "GNOME"}, (), platform="linux", headless=False)
    assert route.kind == "unchecked" and "GNOME" in route.via


@pytest.mark.parametrize("platform", ["darwin", "win32"])
def test_doctor_does_not_claim_a_direct_connection_where_the_system_proxy_decides(platform: str, tmp_path: object) -> None:
    environ = {"CNKI_DATA_DIR": str(tmp_path), "HTTPS_PROXY": P}
    check = check_proxy(environ, load_settings(environ), platform=platform)
    assert check.ok and "未检查" in check.detail and "直接连接" not in check.detail
    assert "直连" in check.hint


def test_doctor_warns_of_a_proxy_and_says_how_to_let_cnki_through_directly(tmp_path: object) -> None:
    environ = {"CNKI_DATA_DIR": str(tmp_path), "HTTPS_PROXY": "http://u:pw@127.0.0.1:7890"}
    check = check_proxy(environ, load_settings(environ), platform="linux")
    assert check.ok and check.warning
    assert "NO_PROXY" in check.hint and "pw" not in check.detail


def test_doctor_does_not_warn_of_a_proxy_only_for_http_pages(tmp_path: object) -> None:
    environ = {"CNKI_DATA_DIR": str(tmp_path), "HTTP_PROXY": P}
    check = check_proxy(environ, load_settings(environ), platform="linux")
    assert check.ok and not check.warning


@pytest.mark.parametrize(
    "value",
    [
        "http://alice:2024,Xyz@proxy.corp:3128",  # a "," in the password
        "http://alice:2024;Xyz@proxy.corp:3128",
        "http://alice:2024/Xyz@proxy.corp:3128",  # an unencoded "/"
        "http://alice:2024@Xyz@proxy.corp:3128",  # an unencoded "@"
        "alice:2024,Xyz@proxy.corp:3128",  # no scheme
    ],
)
def test_doctor_never_shows_any_part_of_a_proxys_user_name_or_password(value: str, tmp_path: object) -> None:
    environ = {"CNKI_DATA_DIR": str(tmp_path), "HTTPS_PROXY": value}
    check = check_proxy(environ, load_settings(environ), platform="linux")
    assert "proxy.corp:3128" in check.detail
    assert not any(secret in check.detail + check.hint for secret in ("alice", "2024", "Xyz"))


def test_doctor_never_shows_a_password_given_in_the_browsers_proxy_switch(tmp_path: object) -> None:
    environ = {"CNKI_DATA_DIR": str(tmp_path), "CNKI_BROWSER_ARGS": "--proxy-server=http://alice:2024,Xyz@proxy.corp:3128"}
    check = check_proxy(environ, load_settings(environ), platform="linux")
    assert "alice" not in check.detail and "2024" not in check.detail


@pytest.mark.parametrize(
    ("environ", "warned"),
    [
        ({"HTTP_PROXY": P}, False),
        ({"HTTPS_PROXY": P, "NO_PROXY": "localhost;cnki.net"}, False),
        ({"SOCKS_SERVER": "127.0.0.1:7891"}, True),
        ({"CNKI_BROWSER_ARGS": f"--proxy-server={P} --proxy-bypass-list=*.cnki.net"}, False),
        ({"HTTPS_PROXY": P}, True),
    ],
)
def test_doctors_network_line_warns_exactly_when_chromium_would_use_a_proxy(
    environ: dict[str, str], warned: bool, tmp_path: object
) -> None:
    environ = {"CNKI_DATA_DIR": str(tmp_path), **environ}
    assert check_proxy(environ, load_settings(environ), platform="linux").warning is warned


def test_a_proxy_server_switch_names_the_https_proxy_it_uses_and_its_credentials_as_a_failure() -> None:
    # per-scheme rules with a password in the http entry named that entry's host (https goes through b:2);
    # a user:password in --proxy-server makes Chromium fail every page; an upper-case switch is ignored
    route = browser_route({}, ("--proxy-server=http=user:pw@a:1;https=b:2",), platform="linux", headless=True)
    assert (route.kind, route.address) == ("proxy", "b:2")
    route = browser_route({}, ("--proxy-server=https=user:pw@b:2",), platform="linux", headless=True)
    assert route.address == "b:2" and "ERR_NO_SUPPORTED_PROXIES" in route.via
    assert browser_route({}, ("--PROXY-SERVER=http://p:1",), platform="linux", headless=True).kind == "direct"
