"""The identity this run last observed (site-rules.md §2.6): what `session_status` answers from
without visiting CNKI. An observation is dated when the page showing it was loaded, not when an
old page was read again; a login wall met by any request is an observation too: nobody is logged
in personally (what the header said about an institution is kept)."""

from __future__ import annotations

import datetime as _dt
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


class IdentityMemory:
    """The last observation, shared by the tools and the site layer (which reports login walls)."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self.last: ObservedIdentity | None = None

    def observed(self, identity: HeaderIdentity, at: _dt.datetime | None = None) -> ObservedIdentity:
        """`identity` as a page showed it; `at`: when that page was loaded (default now). An
        observation older than the one kept does not replace it."""
        seen = ObservedIdentity(identity, at or self._clock.now())
        if self.last is not None and seen.observed_at < self.last.observed_at:
            return self.last
        self.last = seen
        return seen

    def login_wall(self) -> ObservedIdentity:
        """CNKI answered a request with its login page: not logged in personally, as of now."""
        before = self.last.identity if self.last is not None else HeaderIdentity(ready=True)
        identity = before.model_copy(update={"personal": IdentityKind.NOT_OBSERVED, "personal_name": None})
        self.last = ObservedIdentity(identity, self._clock.now(), "login_wall")
        return self.last
