"""The quiet time a detail page must keep before a click (site-rules.md §11.3) and how often a human
step's page is looked at come from Settings: the site's 1.5 s and once a second by default, and
what the simulator's test stacks set (DESIGN.md §Test suite)."""

from __future__ import annotations

from pathlib import Path

from cnki_mcp.services import Services
from cnki_mcp.settings import Settings, load_settings
from cnki_mcp.site.reading import SETTLE_QUIET_SECONDS


async def test_the_detail_tabs_and_the_gate_wait_what_the_settings_name_and_the_sites_by_default(
    tmp_path: Path,
) -> None:
    from_env = load_settings({"CNKI_DATA_DIR": str(tmp_path / "env")})
    assert (from_env.settle_quiet_seconds, from_env.human_poll_seconds) == (SETTLE_QUIET_SECONDS, 1.0) == (1.5, 1.0)
    for settings, quiet, poll in (
        (Settings(data_dir=tmp_path / "default"), SETTLE_QUIET_SECONDS, 1.0),
        (Settings(data_dir=tmp_path / "quick", settle_quiet_seconds=0.3, human_poll_seconds=0.05), 0.3, 0.05),
    ):
        services = Services.open(settings, environ={})
        try:
            assert services.tabs.settle_quiet == quiet
            assert services.gate.poll_interval == poll
            assert not services.host.started  # building the tabs starts no browser
        finally:
            await services.close()
