"""The identity this run last observed (site-rules.md §2.6): what `session_status` answers from
without visiting CNKI. An observation is dated when the page showing it was loaded, not when an
old page was read again; a login wall met by any request is an observation too: nobody is logged
in personally (what the header said about an institution is kept).

Which observation is newer is decided on the monotonic clock (`ObservedIdentity.seen`), not on
the wall time shown: a wall clock put back (NTP after a resume, a dual-boot machine reading the
hardware clock as local time) made every later observation look older than the one kept, and a
refreshed session_status went on naming a person who had logged out."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from cnki_mcp.clock import Clock
from cnki_mcp.models import HeaderIdentity, IdentityKind

Evidence = Literal["kns_header", "login_wall"]


@dataclass(frozen=True, slots=True)
class ObservedIdentity:
    """The last identity read this run (session_status without refresh answers from it)."""

    identity: HeaderIdentity
    observed_at: _dt.datetime
    evidence: Evidence = "kns_header"
    seen: float = 0.0  # the observation on the clock's monotonic scale: what orders observations


class IdentityMemory:
    """The last observation, shared by the tools and the site layer (which reports login walls)."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self.last: ObservedIdentity | None = None
        # called when an observation shows access the one before did not (someone logged in, an
        # institution showed), wherever the login happened: the `login` tool, another operation's
        # login step, the shown window (Services: the reader forgets its trial bodies)
        self.on_access: Callable[[], None] | None = None

    def observed(self, identity: HeaderIdentity, at: _dt.datetime | None = None) -> ObservedIdentity:
        """`identity` as a page showed it; `at`: when that page was loaded (default now). An
        observation older than the one kept does not replace it."""
        return self._observe(identity, at)[0]

    def _observe(self, identity: HeaderIdentity, at: _dt.datetime | None) -> tuple[ObservedIdentity, bool]:
        """`observed`, and whether `on_access` was called."""
        now = self._clock.now()
        at = at or now
        age = max(0.0, (now - at).total_seconds())  # how long ago the page was loaded
        seen = ObservedIdentity(identity, at, seen=self._clock.monotonic() - age)
        if self.last is not None and seen.seen < self.last.seen:
            return self.last, False
        gained = _gains_access(self.last.identity if self.last is not None else None, identity)
        self.last = seen
        return seen, gained and self._access()

    def _access(self) -> bool:
        if self.on_access is None:
            return False
        self.on_access()
        return True

    def logged_in(self, identity: HeaderIdentity, at: _dt.datetime | None = None) -> ObservedIdentity:
        """`observed` for what the `login` tool ended with: a login or an institution in it is a
        login, even when the identity kept already showed that access (it can be stale: CNKI's
        session expired since, and reads do not report identity), so `on_access` is called."""
        seen, called = self._observe(identity, at)
        if not called and (identity.personal is IdentityKind.AUTHENTICATED or identity.institutions):
            self._access()
        return seen

    def login_wall(self) -> ObservedIdentity:
        """CNKI answered a request with its login page: not logged in personally, as of now."""
        before = self.last.identity if self.last is not None else HeaderIdentity(ready=True)
        identity = before.model_copy(update={"personal": IdentityKind.NOT_OBSERVED, "personal_name": None})
        self.last = ObservedIdentity(identity, self._clock.now(), "login_wall", self._clock.monotonic())
        return self.last

    def login_step_over(self, identity: HeaderIdentity | None) -> None:
        """A person got past a login page some operation met (the step cleared): the login wall
        noted when it opened no longer says who is logged in. `identity`: what a tab loaded since
        showed, else nothing is known until the next observation (session_status said "not
        logged in" after the person had logged in for a download). The person logged in, so
        `on_access` is called even when no tab showed it or the identity kept already said so."""
        called = False
        if identity is not None:
            called = self._observe(identity, identity.observed_at)[1]
        elif self.last is not None and self.last.evidence == "login_wall":
            self.last = None
        if not called:
            self._access()


def _gains_access(before: HeaderIdentity | None, after: HeaderIdentity) -> bool:
    """`after` shows a personal login `before` did not, or an institution `before` did not name."""
    personal = after.personal is IdentityKind.AUTHENTICATED
    if before is None:
        return personal or bool(after.institutions)
    return (personal and before.personal is not IdentityKind.AUTHENTICATED) or not set(after.institutions) <= set(
        before.institutions
    )
