"""Soft blocks of the research search's retrieval (DESIGN.md "Soft blocks"): an empty page the
search itself contradicts is asked once more after a pause, and one that stays empty stops the
search with SITE_UNAVAILABLE instead of being stored as exhausted. A mixin of `SearchEngine`, which
owns the state, the backend and the page log."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from cnki_mcp.clock import Clock
from cnki_mcp.errors import SiteUnavailable
from cnki_mcp.jobs import OperationContext
from cnki_mcp.models import GridPage
from cnki_mcp.pipeline.searchlog import PageLog
from cnki_mcp.pipeline.state import SearchState
from cnki_mcp.pipeline.units import Unit
from cnki_mcp.site.backend import GridRequest, SiteBackend

# A zero the search itself contradicts is asked once more after this pause; still zero, the
# search stops with SITE_UNAVAILABLE instead of storing it.
SOFT_BLOCK_PAUSE = 20.0
# A subject (主题) search covers titles and keywords: when either of those siblings found rows,
# the subject channel of the same concepts cannot have none.
_CONTAINS: dict[str, frozenset[str]] = {"subject": frozenset({"title", "keywords"})}


async def ask_again(
    backend: SiteBackend, clock: Clock, ctx: OperationContext, request: GridRequest, pause: float, stage: str
) -> GridPage:
    """The soft-block rule's second ask (DESIGN.md "Soft blocks"): after `pause`, the same page
    again. The caller judges the answer: still a zero it contradicts is SITE_UNAVAILABLE."""
    ctx.set_stage(stage, "知网返回了可疑的空结果，稍后复查一次")
    await clock.sleep(pause)
    return await backend.grid(request, op=ctx)


class SoftBlocks:
    """Mixed into `SearchEngine`, whose backend, clock and page log it uses."""

    backend: SiteBackend
    clock: Clock
    page_log: PageLog
    soft_block_pause: float

    def _suspect_zero(
        self, st: SearchState, unit: Unit, page: int, grid: GridPage, *, feedback: bool
    ) -> bool:
        """A page without rows the search itself contradicts: a later page (the page before it
        promised more), or a subject channel whose title/keywords siblings of the same concepts
        found rows. A throttled client is answered exactly so. One query of a split channel covers
        only part of it: its first page may be empty."""
        channel = unit.channel
        if grid.rows or (channel.queries > 1 and page == 1):
            return False
        if page > 1:
            return True
        if feedback or st.structured:
            return False
        narrower = _CONTAINS.get(channel.field, frozenset())
        return any(
            other.field in narrower and st.coverage_of(other.id).rows > 0
            for other in st.channels
            if other.id != channel.id
        )

    def _siblings_answered(self, st: SearchState, unit: Unit) -> bool:
        """Every narrower sibling of the unit's channel answered its first page (or failed)."""
        narrower = _CONTAINS.get(unit.channel.field, frozenset())
        return all(
            st.coverage_of(other.id).pages > 0 or st.coverage_of(other.id).failed
            for other in st.channels
            if other.id != unit.channel.id and other.field in narrower
        )

    async def _confirm_zero(
        self,
        st: SearchState,
        ctx: OperationContext,
        unit: Unit,
        request: GridRequest,
        grid: GridPage,
        wait: Callable[[], Awaitable[bool]],
        *,
        feedback: bool,
    ) -> GridPage | None:
        """Soft-block rule (DESIGN.md "Soft blocks"): a suspect zero is asked once more after a
        pause; a zero that stays suspect is SITE_UNAVAILABLE (fatal: the checkpoint keeps the channel
        open and its cursor, so `continue` asks for the same page). Never stored as exhausted. An
        empty first subject page is judged once its narrower siblings answered their first page, so
        the verdict does not depend on which page arrived first. None: the search stopped first."""
        if grid.rows:
            return grid
        if request.page == 1 and not feedback and not st.structured:
            while not self._siblings_answered(st, unit):
                if not await wait():
                    return None
        if not self._suspect_zero(st, unit, request.page, grid, feedback=feedback):
            return grid
        # the empty answer is logged as observed (not merged); the page is asked once more
        self.page_log.write(st, unit.channel, unit.lane, request.page, grid, 0, merged=False)
        again = await ask_again(self.backend, self.clock, ctx, request, self.soft_block_pause, "retrieval")
        if self._suspect_zero(st, unit, request.page, again, feedback=feedback):
            raise SiteUnavailable(
                "知网对本应有结果的检索连续返回空结果（疑似限流软封），已暂停；稍后可继续任务",
                reason="soft_block",
                channel=unit.channel.id,
                page=request.page,
            )
        return again
