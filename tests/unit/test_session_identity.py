"""The identity a run remembers (`session_identity`): dated when its page was loaded, never
replaced by an older page, and turned to "not logged in" by a login wall."""

from __future__ import annotations

import datetime as dt

from cnki_mcp.clock import FakeClock
from cnki_mcp.models import HeaderIdentity, IdentityKind
from cnki_mcp.session_identity import IdentityMemory

PERSON = HeaderIdentity(ready=True, personal=IdentityKind.AUTHENTICATED, personal_name="reader01",
                        institutions=["某某大学"])  # fmt: skip


async def test_an_identity_read_from_an_older_page_does_not_replace_a_newer_observation() -> None:
    clock = FakeClock()
    memory = IdentityMemory(clock)
    loaded = clock.now()
    await clock.advance(5)
    wall = memory.login_wall()
    assert memory.observed(PERSON, loaded) is wall  # the old page still shows the person
    assert memory.last is wall and wall.observed_at == clock.now()
    fresh = memory.observed(PERSON)
    assert memory.last is fresh and fresh.evidence == "kns_header"


def test_a_login_wall_drops_the_person_and_keeps_the_institution_the_header_showed() -> None:
    clock = FakeClock()
    memory = IdentityMemory(clock)
    memory.observed(PERSON, clock.now() - dt.timedelta(seconds=30))
    wall = memory.login_wall()
    assert wall.evidence == "login_wall"
    assert wall.identity.personal is IdentityKind.NOT_OBSERVED and wall.identity.personal_name is None
    assert wall.identity.institutions == ["某某大学"]
    assert IdentityMemory(clock).login_wall().identity.personal is IdentityKind.NOT_OBSERVED


class _SetBackClock(FakeClock):
    """A fake clock whose wall time can be put back (NTP after a resume, a dual-boot machine's
    clock read as local time): monotonic time goes on."""

    def __init__(self) -> None:
        super().__init__()
        self.offset = dt.timedelta(0)

    def now(self) -> dt.datetime:
        return super().now() + self.offset


async def test_a_new_observation_replaces_the_last_after_the_wall_clock_was_put_back() -> None:
    """Logged in while the wall clock ran 8 hours fast; the clock is put right; a minute later a
    refresh reads the header saying nobody is logged in. It was dropped as "older than the one
    kept" (compared on wall time), so session_status went on naming the person for 8 hours."""
    clock = _SetBackClock()
    memory = IdentityMemory(clock)
    clock.offset = dt.timedelta(hours=8)
    memory.observed(PERSON)
    clock.offset = dt.timedelta(0)
    await clock.advance(60)
    logged_out = PERSON.model_copy(update={"personal": IdentityKind.NOT_OBSERVED, "personal_name": None})
    fresh = memory.observed(logged_out, clock.now() - dt.timedelta(seconds=2))  # a page loaded 2 s ago
    assert memory.last is fresh and fresh.identity.personal is IdentityKind.NOT_OBSERVED
    # an old page read again is still older than what is kept, whatever the wall clock did
    assert memory.observed(PERSON, clock.now() - dt.timedelta(seconds=120)) is fresh


def test_a_login_step_over_replaces_the_login_wall_with_what_a_tab_showed_since_or_with_nothing() -> None:
    clock = FakeClock()
    memory = IdentityMemory(clock)
    memory.observed(PERSON, clock.now())
    memory.login_wall()
    memory.login_step_over(None)  # the person logged in; no tab loaded since shows a header
    assert memory.last is None  # not "not logged in" any more: unknown until the next observation

    memory.login_wall()
    memory.login_step_over(PERSON.model_copy(update={"observed_at": clock.now()}))
    assert memory.last is not None and memory.last.evidence == "kns_header"
    assert memory.last.identity.personal is IdentityKind.AUTHENTICATED

    memory.login_step_over(None)  # a header observation is kept: only a login wall goes stale
    assert memory.last is not None and memory.last.evidence == "kns_header"
