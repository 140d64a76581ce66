"""A login done anywhere (the `login` tool, another operation's login step, the shown window) has
the reader forget the trial bodies it kept for continuations: only the `login` tool's own login did,
and a login in a search's step left them paged for up to 30 minutes. The one place identity
changes are observed is `IdentityMemory`; `Services` hands it the reader's `forget_incomplete`."""

from __future__ import annotations

from pathlib import Path

import pytest

from cnki_mcp.clock import FakeClock
from cnki_mcp.models import HeaderIdentity, IdentityKind
from cnki_mcp.services import Services
from cnki_mcp.session_identity import IdentityMemory
from cnki_mcp.settings import Settings

GUEST = HeaderIdentity(ready=True, personal=IdentityKind.NOT_OBSERVED)
PERSON = HeaderIdentity(ready=True, personal=IdentityKind.AUTHENTICATED, personal_name="张三")
INSTITUTION = HeaderIdentity(ready=True, personal=IdentityKind.NOT_OBSERVED, institutions=["某大学"])


@pytest.mark.parametrize(
    ("before", "after", "gained"),
    [
        (GUEST, PERSON, True),
        (GUEST, INSTITUTION, True),
        (INSTITUTION, PERSON, True),  # a personal login where only an institution showed
        (None, PERSON, True),
        (PERSON, PERSON, False),  # the same access read again
        (INSTITUTION, INSTITUTION, False),
        (PERSON, GUEST, False),  # a logout forgets nothing
        (GUEST, GUEST, False),
    ],
)
def test_an_observation_that_gains_a_login_or_an_institution_says_so(
    before: HeaderIdentity | None, after: HeaderIdentity, gained: bool
) -> None:
    memory = IdentityMemory(FakeClock())
    if before is not None:
        memory.observed(before)
    calls: list[int] = []
    memory.on_access = lambda: calls.append(1)
    memory.observed(after)
    assert bool(calls) is gained


class Reading:
    def __init__(self) -> None:
        self.forgotten = 0

    def forget_incomplete(self) -> None:
        self.forgotten += 1


async def test_a_login_in_another_operations_step_has_the_reader_forget_its_trial_bodies(tmp_path: Path) -> None:
    reading = Reading()
    services = Services.open(Settings(data_dir=tmp_path), clock=FakeClock(), backend=object(),  # type: ignore[arg-type]
                             reading_factory=lambda _s: reading)  # fmt: skip
    try:
        assert services.reading is reading
        services.identities.observed(GUEST)
        services.identities.login_wall()  # a search met CNKI's login page
        services.identities.login_step_over(PERSON)  # the person logged in in the shown window
        assert reading.forgotten == 1  # was 0: only the login tool's own login forgot them
    finally:
        await services.close()


async def a_services(tmp_path: Path, reading: Reading) -> Services:
    services = Services.open(Settings(data_dir=tmp_path), clock=FakeClock(), backend=object(),  # type: ignore[arg-type]
                             reading_factory=lambda _s: reading)  # fmt: skip
    assert services.reading is reading
    return services


@pytest.mark.parametrize(("ended", "forgotten"), [(PERSON, 1), (INSTITUTION, 1), (GUEST, 0)])
async def test_the_login_tool_ending_logged_in_forgets_the_trial_bodies_though_the_kept_identity_said_so(
    tmp_path: Path, ended: HeaderIdentity, forgotten: int
) -> None:
    """session_status saw a login, then CNKI's session expired and a read kept a trial body (reads
    do not report identity): the `login` tool's login was no gain over the stale identity kept, and
    the trial body went on being paged for up to 30 minutes."""
    reading = Reading()
    services = await a_services(tmp_path, reading)
    try:
        services.remember_identity(PERSON.model_copy(update={"institutions": ["某大学"]}))
        reading.forgotten = 0
        services.remember_identity(ended, login=True)
        assert reading.forgotten == forgotten  # was 0 for a login
    finally:
        await services.close()


@pytest.mark.parametrize("kept", [None, PERSON])
async def test_a_login_step_that_cleared_forgets_the_trial_bodies_with_no_tab_shown_since(
    tmp_path: Path, kept: HeaderIdentity | None
) -> None:
    reading = Reading()
    services = await a_services(tmp_path, reading)
    try:
        if kept is not None:
            services.identities.observed(kept)
        services.identities.login_wall()  # a read met CNKI's login page
        reading.forgotten = 0
        services.identities.login_step_over(None)  # the person logged in; no CNKI tab loaded since
        assert reading.forgotten == 1  # was 0
    finally:
        await services.close()


async def test_a_login_step_seen_to_gain_access_forgets_once(tmp_path: Path) -> None:
    reading = Reading()
    services = await a_services(tmp_path, reading)
    try:
        services.identities.login_wall()
        services.identities.login_step_over(PERSON)
        assert reading.forgotten == 1
    finally:
        await services.close()
