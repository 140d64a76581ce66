"""The `login` tool, once someone is logged in (or an institution shows), has read_online_html forget
the trial or partial bodies it kept for continuations (`ReadingService.forget_incomplete`): read
without that access, they were paged on for up to 30 minutes after the login."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from mcp import Client

from cnki_mcp.server.app import build_server
from cnki_mcp.services import Services
from tests.contract.server_fakes import Harness, completed_data


class Reading:
    def __init__(self) -> None:
        self.forgotten = 0

    def forget_incomplete(self) -> None:
        self.forgotten += 1


def opener(h: Harness, reading: Reading) -> Callable[[], Services]:
    """The harness's services with `reading` as the reader (a read_online_html call before the
    login built it)."""

    def open_services() -> Services:
        services = Services.open(
            h.settings, clock=h.clock, backend=h.backend, pipeline_factory=lambda _s: h.pipeline,
            reading_factory=lambda _s: reading,
        )  # fmt: skip
        assert services.reading is reading
        h.services = services
        return services

    return open_services


async def test_a_login_has_the_reader_forget_the_trial_bodies_read_before_it(tmp_path: Path) -> None:
    h = Harness(tmp_path / "data", inline_wait=5.0)
    reading = Reading()

    async with Client(build_server(opener(h, reading))) as client:
        data = await completed_data(client, "login", {})  # the fake site shows an institution
    assert data["result"]["institution"] == "observed"
    assert reading.forgotten == 1


async def test_a_login_forgets_the_trial_bodies_though_session_status_had_seen_that_access(tmp_path: Path) -> None:
    """session_status saw the access, then CNKI's session expired and a read kept a trial body
    (reads report no identity): the login showed no gain over the identity kept, and the trial
    body went on being paged for up to 30 minutes."""
    h = Harness(tmp_path / "data", inline_wait=5.0)
    reading = Reading()

    async with Client(build_server(opener(h, reading))) as client:
        status = await client.call_tool("session_status", {"refresh": True})
        assert not status.is_error
        seen = reading.forgotten
        await completed_data(client, "login", {})
    assert reading.forgotten == seen + 1  # was seen: no login forgot them
