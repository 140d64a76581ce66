"""Services built without `environ` (test stacks, a stdio capture): the browser launched with this
process's environment, while `diagnostics` judged the route from an empty one and said `direct`
for a browser that went through the proxy. The fallback is applied once, in `Services.open`."""

from __future__ import annotations

from pathlib import Path

import pytest

from cnki_mcp.clock import FakeClock
from cnki_mcp.server.tools_session import _network
from cnki_mcp.services import Services
from cnki_mcp.settings import Settings


async def test_diagnostics_judges_the_route_from_the_environment_the_browser_gets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:7890")
    services = Services.open(Settings(data_dir=tmp_path), clock=FakeClock(), backend=object())  # type: ignore[arg-type]
    try:
        assert services.host._launch_env(headless=True)["HTTPS_PROXY"] == "http://127.0.0.1:7890"
        network = _network(services, headless=True)
        assert (network.route, network.proxy) == ("proxy", "127.0.0.1:7890")  # was ("direct", "")
    finally:
        await services.close()
