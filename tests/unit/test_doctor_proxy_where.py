"""Where the proxy verdict comes from (DESIGN.md "The network path"): `cnki-mcp doctor` reads its
own shell's environment, while an AI client starts the server with another (its config's env, or
a desktop launcher's), so doctor says so and the server's diagnostics tool names the route it
sees; and the advice to let CNKI through directly fits the desktop whose settings decide it."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from cnki_mcp.cli.doctor_cmd import check_proxy
from cnki_mcp.server.tools_session import _network
from cnki_mcp.settings import load_settings

P = "http://user:pw@127.0.0.1:7890"


@pytest.mark.parametrize("environ", [{}, {"HTTPS_PROXY": P}, {"XDG_CURRENT_DESKTOP": "GNOME", "CNKI_HEADLESS": "0"}])
def test_doctor_says_its_network_verdict_is_its_own_environments_and_where_the_servers_is(
    environ: dict[str, str], tmp_path: Path
) -> None:
    environ = {"CNKI_DATA_DIR": str(tmp_path), **environ}
    check = check_proxy(environ, load_settings(environ), platform="linux")
    assert "browser.network" in check.hint  # "直接连接" said of this shell, with no word of the client's


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({}, ("direct", "", "")),
        ({"HTTPS_PROXY": P}, ("proxy", "HTTPS_PROXY", "127.0.0.1:7890")),
        ({"XDG_CURRENT_DESKTOP": "GNOME", "CNKI_HEADLESS": "0"}, ("unchecked", "GNOME 桌面的代理设置", "")),
    ],
)
def test_the_servers_diagnostics_name_the_route_its_own_environment_gives(
    environ: dict[str, str], expected: tuple[str, str, str], tmp_path: Path
) -> None:
    environ = {"CNKI_DATA_DIR": str(tmp_path), **environ}
    services = SimpleNamespace(settings=load_settings(environ), environ=environ)
    network = _network(services, None)  # type: ignore[arg-type]
    assert (network.route, network.via, network.proxy) == expected


@pytest.mark.parametrize(
    ("environ", "desktop"),
    [({"XDG_CURRENT_DESKTOP": "GNOME"}, "GNOME"), ({"XDG_CURRENT_DESKTOP": "KDE"}, "KDE")],
)
def test_a_desktop_sessions_advice_names_its_proxy_settings_not_no_proxy_alone(
    environ: dict[str, str], desktop: str, tmp_path: Path
) -> None:
    """A headed browser in a GNOME session reads GNOME's proxy settings; NO_PROXY in the client's env
    does nothing there (it was the advice)."""
    environ = {"CNKI_DATA_DIR": str(tmp_path), "CNKI_HEADLESS": "0", **environ}
    check = check_proxy(environ, load_settings(environ), platform="linux")
    assert check.detail.startswith("浏览器按") and desktop in check.detail
    advice = check.hint.split("：", 1)[1]
    assert desktop in advice and ("NO_PROXY=" not in advice)
