"""The composition root: every long-lived object of a server (or CLI command) built from one
Settings. Nothing here runs at import time; `Services.open` builds, `close()` tears down
(the browser above all, then the operations, then the store).

The browser is lazy: building Services never launches it (`host.started` stays False until a
tool makes a CNKI request). Tests inject a fake SiteBackend through `backend=`; the real one is
`site.cnki.CnkiSite` on the shared BrowserHost, Limiter and HumanGate."""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Mapping
from typing import Any

from cnki_mcp.clock import Clock, SystemClock, local_year
from cnki_mcp.jobs import JobManager, StoreSink
from cnki_mcp.keyed_lock import KeyedLocks
from cnki_mcp.models import HeaderIdentity
from cnki_mcp.session_identity import IdentityMemory, ObservedIdentity
from cnki_mcp.settings import Settings
from cnki_mcp.site.backend import SiteBackend
from cnki_mcp.site.browser import BrowserHost
from cnki_mcp.site.human import HumanGate
from cnki_mcp.site.limiter import Limiter
from cnki_mcp.store import Store

log = logging.getLogger(__name__)

PipelineFactory = Callable[["Services"], Any]
ReadingFactory = Callable[["Services"], Any]  # -> reading_service.ReadingService (or a fake)
DownloaderFactory = Callable[["Services"], Any]  # -> site.downloading.Downloader (or a fake)


def _cnki_site(
    settings: Settings, clock: Clock, host: BrowserHost, limiter: Limiter, gate: HumanGate, seen: IdentityMemory
) -> Any:
    from cnki_mcp.site.cnki import CnkiSite

    return CnkiSite(settings, clock, host, limiter, gate, identities=seen)


class LazySite:
    """The Playwright backend, built on first use: a server start answers `tools/list` without
    importing Playwright (docs/benchmarks.md §Start-up). Every attribute is the real site's."""

    def __init__(self, make: Callable[[], Any]) -> None:
        self._make = make
        self._site: Any = None

    @property
    def built(self) -> bool:
        return self._site is not None

    @property
    def site(self) -> Any:
        if self._site is None:
            self._site = self._make()
        return self._site

    def __getattr__(self, name: str) -> Any:
        return getattr(self.site, name)

    async def close(self) -> None:
        if self._site is not None:
            await self._site.close()

class Services:
    """Store, limiter, human gate, browser host, site backend, operations and the pipeline."""

    def __init__(
        self,
        settings: Settings,
        store: Store,
        *,
        clock: Clock,
        limiter: Limiter,
        gate: HumanGate,
        host: BrowserHost,
        backend: SiteBackend,
        jobs: JobManager,
        pipeline_factory: PipelineFactory | None = None,
        interrupted: list[str] | None = None,
        environ: Mapping[str, str] | None = None,
        reading_factory: ReadingFactory | None = None,
        downloader_factory: DownloaderFactory | None = None,
        identities: IdentityMemory | None = None,
    ) -> None:
        self.settings = settings
        self.store = store
        self.clock = clock
        self.limiter = limiter
        self.gate = gate
        self.host = host
        self.backend = backend
        self.jobs = jobs
        self.interrupted_at_start = list(interrupted or [])
        self.environ: Mapping[str, str] = environ or {}
        self.identities = identities or IdentityMemory(clock)
        self.identities.on_access = self.logged_in
        self._pipeline_factory = pipeline_factory or _default_pipeline
        self._pipeline: Any = None
        self._reading_factory = reading_factory or _default_reading
        self._downloader_factory = downloader_factory or _default_downloader
        self._tabs: Any = None
        self._reading: Any = None
        self._downloader: Any = None
        self._closed = False
        # one citation-API request per list page and per paper's counts at a time among this
        # server's operations (pipeline/citations.py CitationReader); another server has its own
        self.citation_flights = KeyedLocks()

    # --- building ---------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        settings: Settings,
        *,
        clock: Clock | None = None,
        backend: SiteBackend | None = None,
        environ: Mapping[str, str] | None = None,
        pipeline_factory: PipelineFactory | None = None,
        heartbeat_interval: float = 10.0,
        reading_factory: ReadingFactory | None = None,
        downloader_factory: DownloaderFactory | None = None,
    ) -> Services:
        """Build everything; raises DATA_DIRECTORY_IN_USE when another process holds the data
        directory. `backend` replaces CnkiSite (tests); the browser host is built either way
        and never started here."""
        clock = clock or SystemClock()
        # the one fallback: the browser launched with this environment and diagnostics' route
        # judged from it (diagnostics read an empty one while the browser had the proxy variables)
        environ = os.environ if environ is None else environ
        store = Store.open(settings.data_dir, clock)
        try:
            limiter = Limiter(clock, settings.request_interval_ms / 1000.0, settings.max_inflight)
            host = BrowserHost(settings, clock, environ=environ)

            def headless() -> bool | None:
                return host.headless if host.headless is not None else settings.headless

            gate = HumanGate(
                clock, limiter, poll_interval=settings.human_poll_seconds,
                timeout=settings.human_timeout_seconds, headless=headless,
            )  # fmt: skip
            seen = IdentityMemory(clock)
            if backend is None:
                backend = LazySite(lambda: _cnki_site(settings, clock, host, limiter, gate, seen))
            jobs = JobManager(
                clock,
                StoreSink(store),
                human=gate,
                inline_wait=settings.inline_wait_seconds,
                heartbeat_interval=heartbeat_interval,
            )
            interrupted = jobs.recover_interrupted()
        except BaseException:
            store.close()
            raise
        if interrupted:
            log.info("operations interrupted by the last exit: %s", ", ".join(interrupted))
        return cls(
            settings,
            store,
            clock=clock,
            limiter=limiter,
            gate=gate,
            host=host,
            backend=backend,
            jobs=jobs,
            pipeline_factory=pipeline_factory,
            interrupted=interrupted,
            environ=environ,
            reading_factory=reading_factory,
            downloader_factory=downloader_factory,
            identities=seen,
        )

    @property
    def pipeline(self) -> Any:
        """The research pipeline (built on first use; it only talks to the backend)."""
        if self._pipeline is None:
            self._pipeline = self._pipeline_factory(self)
        return self._pipeline

    @property
    def tabs(self) -> Any:
        """The detail-page tabs of the reader and the downloader (site.reading.DetailTabs, built on
        first use over the real CnkiSite; building it starts no browser)."""
        if self._tabs is None:
            from cnki_mcp.site.cnki import CnkiSite
            from cnki_mcp.site.reading import DetailTabs

            site = self.backend.site if isinstance(self.backend, LazySite) else self.backend
            if not isinstance(site, CnkiSite):
                raise RuntimeError("detail tabs need the real CnkiSite backend")
            self._tabs = DetailTabs(
                site, self.host, self.limiter, self.gate, self.clock,
                settle_quiet=self.settings.settle_quiet_seconds,
            )  # fmt: skip
        return self._tabs

    @property
    def reading(self) -> Any:
        """read_online_html's service (body cache + HTML reader), built on first use."""
        if self._reading is None:
            self._reading = self._reading_factory(self)
        return self._reading

    @property
    def downloader(self) -> Any:
        """download_paper's downloader, built on first use; closed by `close()`."""
        if self._downloader is None:
            self._downloader = self._downloader_factory(self)
        return self._downloader

    @property
    def identity(self) -> ObservedIdentity | None:
        """The last identity observed this run (a header read or a login wall)."""
        return self.identities.last

    def logged_in(self) -> None:
        """An observed identity gained a login or an institution, the `login` tool ended with one,
        or a login step cleared (`IdentityMemory.on_access`): the bodies read before it without
        that access are not paged on (`ReadingService.forget_incomplete`)."""
        forget = getattr(self._reading, "forget_incomplete", None)  # not built yet, or a test's fake
        if forget is not None:
            forget()

    def remember_identity(self, identity: HeaderIdentity, *, login: bool = False) -> ObservedIdentity:
        """`identity` dated by `identity.observed_at` (when its page was loaded), else now; `login`:
        what the `login` tool ended with (`IdentityMemory.logged_in`)."""
        if login:
            return self.identities.logged_in(identity, identity.observed_at)
        return self.identities.observed(identity, identity.observed_at)

    # --- teardown ---------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self._closed

    async def close(self) -> None:
        """Cancel running operations, close the site and the browser, then the store."""
        if self._closed:
            return
        self._closed = True
        try:
            with contextlib.suppress(Exception):
                await self.jobs.shutdown()
            close_pipeline = getattr(self._pipeline, "close", None)  # test pipelines may have none
            if close_pipeline is not None:
                try:
                    await close_pipeline()
                except Exception:
                    log.warning("closing the research pipeline failed", exc_info=True)
            if self._downloader is not None:
                try:
                    await self._downloader.close()
                except Exception:
                    log.warning("closing the downloader failed", exc_info=True)
            try:
                await self.backend.close()
            except Exception:
                log.warning("closing the site backend failed", exc_info=True)
            try:
                await self.host.close()
            except Exception:
                log.warning("closing the browser failed", exc_info=True)
        finally:
            self.store.close()


def _default_pipeline(services: Services) -> Any:
    from cnki_mcp.pipeline.research import ResearchPipeline

    clock = services.clock
    origin = services.settings.site_origin
    return ResearchPipeline(
        services.backend,
        services.store,
        clock,
        workers=services.settings.workers,
        now_year=lambda: local_year(clock.now()),  # 今年 is the person's year, not UTC's
        public_origins=(origin,) if origin else (),
        pacing=services.limiter.pacing,  # the snapshot's depth (DESIGN.md "Overlap depth")
    )


def _default_reading(services: Services) -> Any:
    from cnki_mcp.reading_service import ReadingService
    from cnki_mcp.site.reading import HtmlReader

    return ReadingService(services.store, HtmlReader(services.tabs), services.clock)


def _default_downloader(services: Services) -> Any:
    from cnki_mcp.site.downloading import Downloader

    return Downloader(services.tabs, services.store, services.clock, services.settings.data_dir)
