"""`cnki-mcp doctor`'s network line: the proxy the browser will reach CNKI through (Chromium on
Linux reads the proxy variables of the environment the server passes it), never its password."""

from __future__ import annotations

import pytest

from cnki_mcp.cli.doctor_cmd import browser_proxy, check_proxy
from cnki_mcp.settings import load_settings


@pytest.mark.parametrize(
    ("environ", "args", "expected"),
    [
        ({"HTTPS_PROXY": "http://127.0.0.1:7890"}, (), ("HTTPS_PROXY", "127.0.0.1:7890")),
        ({"all_proxy": "socks5://127.0.0.1:7891"}, (), ("ALL_PROXY", "127.0.0.1:7891")),
        ({"http_proxy": "http://user:secret@proxy.lan:3128"}, (), ("HTTP_PROXY", "proxy.lan:3128")),
        ({}, ("--proxy-server=http://10.0.0.1:8080",), ("CNKI_BROWSER_ARGS --proxy-server", "10.0.0.1:8080")),
        ({"HTTPS_PROXY": "127.0.0.1:7890", "NO_PROXY": "localhost,.cnki.net"}, (), None),
        ({"HTTPS_PROXY": "127.0.0.1:7890", "no_proxy": "cnki.net"}, (), None),
        ({"HTTPS_PROXY": "127.0.0.1:7890"}, ("--no-proxy-server",), None),
        ({}, (), None),
    ],
)
def test_the_proxy_the_browser_reaches_cnki_through_is_named_without_its_password(
    environ: dict[str, str], args: tuple[str, ...], expected: tuple[str, str] | None
) -> None:
    assert browser_proxy(environ, args, platform="linux") == expected


def test_a_proxy_variable_is_not_the_browsers_proxy_outside_linux() -> None:
    # Chromium on Windows and macOS uses the system's proxy settings, not the environment
    assert browser_proxy({"HTTPS_PROXY": "http://127.0.0.1:7890"}, (), platform="win32") is None


def test_doctor_warns_of_a_proxy_and_says_how_to_let_cnki_through_directly(tmp_path: object) -> None:
    environ = {"CNKI_DATA_DIR": str(tmp_path), "HTTPS_PROXY": "http://u:pw@127.0.0.1:7890"}
    check = check_proxy(environ, load_settings(environ), platform="linux")
    assert check.ok and check.warning
    assert "NO_PROXY" in check.hint and "pw" not in check.detail


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
