"""The production configuration, unchanged, against the simulator in hosts mode: no `site_origin`
(every URL is https://kns.cnki.net/..., https://navi.cnki.net/...), Chromium told by
`--host-resolver-rules` to send *.cnki.net to the simulator. Every request must therefore go through
Chromium: the request-API fallback (Playwright's own network stack, which ignores the resolver rules
and would reach the real site) is made to fail the test, and the simulator's log must show each
expected request under the real host names."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from cnki_mcp.clock import SystemClock
from cnki_mcp.identity import title_key
from cnki_mcp.models import IdentityKind
from cnki_mcp.settings import Settings
from cnki_mcp.sim.pages.files import pdf_bytes
from cnki_mcp.sim.server import SimServer
from cnki_mcp.site.backend import GridRequest
from cnki_mcp.site.browser import BrowserHost
from cnki_mcp.site.cnki import CnkiSite
from cnki_mcp.site.downloading import Downloader
from cnki_mcp.site.human import HumanGate
from cnki_mcp.site.limiter import Limiter
from cnki_mcp.site.reading import DetailTabs
from cnki_mcp.store import Store
from tests.site_stack import page_form_logged

pytestmark = pytest.mark.browser

DETAIL = "/kcms2/article/abstract"
JOURNAL = "/knavi/detail"
STEP_TIMEOUT = 60.0  # bounds a test that would otherwise hang; never a timing assertion
TERM = "违约金"


@dataclass
class HostsEnv:
    sim: SimServer
    site: CnkiSite
    host: BrowserHost
    gate: HumanGate
    limiter: Limiter


@dataclass
class FakeOp:
    operation_id: str = "op-hosts"
    on_verification: str = "wait"
    transitions: list[str] = field(default_factory=list)
    waiting: asyncio.Event = field(default_factory=asyncio.Event)

    def charge(self) -> None:
        pass

    def awaiting_user(self, message: str) -> None:
        self.transitions.append("awaiting_user")
        self.waiting.set()

    def running(self) -> None:
        self.transitions.append("running")


def settings_for(sim: SimServer, data_dir: Any, browser: str) -> Settings:
    """Production Settings (no site_origin) plus the two flags the simulator asks for."""
    args = sim.chromium_args()
    rules = next(a.split("=", 1)[1] for a in args if a.startswith("--host-resolver-rules="))
    settings = Settings(
        data_dir=data_dir,
        browser_path=browser,
        headless=True,
        request_interval_ms=20,
        host_resolver_rules=rules,
        ignore_certificate_errors="--ignore-certificate-errors" in args,
    )
    assert settings.site_origin is None and settings.ignore_certificate_errors
    assert all(a in settings.browser_args for a in args)
    return settings


@pytest.fixture(scope="module")
def hosts_sim() -> Iterator[SimServer]:
    with SimServer(hosts_mode=True) as sim:
        yield sim


@pytest.fixture(scope="module")
async def hosts_env_module(
    hosts_sim: SimServer, tmp_path_factory: pytest.TempPathFactory, browser_executable: str
) -> AsyncIterator[HostsEnv]:
    settings = settings_for(hosts_sim, tmp_path_factory.mktemp("hosts-data"), browser_executable)
    clock = SystemClock()
    host = BrowserHost(settings, clock)
    limiter = Limiter(clock, settings.request_interval_ms / 1000, settings.max_inflight)
    gate = HumanGate(clock, limiter, poll_interval=0.05, timeout=STEP_TIMEOUT, headless=True)
    site = CnkiSite(settings, clock, host, limiter, gate, retry_waits=(0.01, 0.02))
    assert site.endpoints.adv_search == "https://kns.cnki.net/kns8s/AdvSearch"
    yield HostsEnv(hosts_sim, site, host, gate, limiter)
    await site.close()
    await host.close()


@pytest.fixture
async def hosts_env(hosts_env_module: HostsEnv, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[HostsEnv]:
    async def outside_chromium(*_a: Any, **_k: Any) -> Any:
        raise AssertionError("a request left Chromium (request-API fallback) in hosts mode")

    # Were it used, the fallback would resolve kns.cnki.net itself: it must never run here.
    monkeypatch.setattr(hosts_env_module.site, "_request_get", outside_chromium)
    hosts_env_module.sim.set_scenario(None)
    hosts_env_module.sim.reset()
    hosts_env_module.site.cursors.clear()
    yield hosts_env_module
    hosts_env_module.sim.set_scenario(None)


def title_request(term: str) -> GridRequest:
    item = {
        "Key": "t",
        "Title": "篇名",
        "Logic": 0,
        "Field": "TI",
        "Operator": "FUZZY",
        "Value": term,
        "Value2": "",
    }
    branch = {"Key": "t", "Title": "", "Logic": 0, "Items": [item], "ChildItems": []}
    subject = {"Key": "Subject", "Title": "", "Logic": 0, "Items": [], "ChildItems": [branch]}
    return GridRequest(subject=subject, anchor=term)


def arrivals(sim: SimServer, path: str, method: str = "GET") -> list[tuple[str, int]]:
    return [(e.host, e.status) for e in sim.requests_for(path, method)]


async def test_search_detail_journal_and_identity_reach_the_real_host_names_through_chromium(
    hosts_env: HostsEnv,
) -> None:
    sim, site = hosts_env.sim, hosts_env.site
    site.drop_template()  # captured here, whichever of the module's tests ran before
    result = await site.grid(title_request(TERM))
    expected = [r for r in sim.corpus.records if TERM in r.title]
    assert expected and result.rows
    assert {title_key(r.title) for r in result.rows} <= {title_key(r.title) for r in expected}
    assert site.template is not None and site.template.url == "https://kns.cnki.net/kns8s/brief/grid"

    row = result.rows[0]
    assert (row.detail_url or "").startswith("https://kns.cnki.net/kcms2/article/abstract?v=")
    assert (row.source_url or "").startswith("https://navi.cnki.net/knavi/detail?")
    record = next(r for r in expected if title_key(r.title) == title_key(row.title))

    detail = await site.detail(row.detail_url or "")
    assert detail.title == record.title == row.title
    assert detail.abstract and detail.authors and detail.source == row.source

    journal = await site.journal(row.source_url or "", expected_source=row.source)
    assert journal.name == row.source

    await page_form_logged(sim)  # before identity() navigates the tab that sent it
    identity = await site.identity(refresh=True)
    assert identity.ready and identity.personal is IdentityKind.NOT_OBSERVED

    assert arrivals(sim, "/kns8s/AdvSearch") == [("kns.cnki.net", 200)] * 2  # capture + identity
    # the page's own search POST when the template is captured, then the replayed one
    assert arrivals(sim, "/kns8s/brief/grid", "POST") == [("kns.cnki.net", 200)] * 2
    assert arrivals(sim, DETAIL) == [("kns.cnki.net", 200)]
    assert arrivals(sim, JOURNAL) == [("navi.cnki.net", 200)]
    assert all(e.host.endswith("cnki.net") for e in sim.requests)


async def test_detail_redirected_to_login_sends_the_person_to_login_cnki_net(hosts_env: HostsEnv) -> None:
    sim, site = hosts_env.sim, hosts_env.site
    row = (await site.grid(title_request(TERM))).rows[1]
    sim.set_scenario({"faults": [{"path": DETAIL, "kind": "login_required", "at": [1]}]})
    op = FakeOp()
    ctx = await hosts_env.host.ensure()

    async def person() -> None:
        await op.waiting.wait()
        assert hosts_env.gate.active_kind == "login"
        tab = next(p for p in ctx.pages if p.url.startswith("https://login.cnki.net/login/"))
        await tab.fill("input[name=username]", "reader03")
        await tab.fill("input[name=password]", "pw")
        await tab.locator(
            "form.ecp_loginAccountBox [type=submit], form.ecp_loginAccountBox button"
        ).first.click()

    solver = asyncio.create_task(person())
    async with asyncio.timeout(STEP_TIMEOUT):
        detail = await site.detail(row.detail_url or "", op)
    await solver
    assert detail.title == row.title
    assert op.transitions == ["awaiting_user", "running"]
    assert arrivals(sim, DETAIL)[0] == ("kns.cnki.net", 302)
    assert arrivals(sim, DETAIL)[-1] == ("kns.cnki.net", 200)
    assert [e.host for e in sim.requests_for("/login/", "GET")][:1] == ["login.cnki.net"]
    assert [e.params.get("ok") for e in sim.requests_for("/login/submit", "POST")] == [True]
    assert all(e.host.endswith("cnki.net") for e in sim.requests)


async def test_a_download_orders_at_bar_cnki_net_and_takes_the_file_from_docdown_cnki_net(
    hosts_env: HostsEnv, tmp_path: Path
) -> None:
    # The real order URL answers a 302 to docdown.cnki.net, which sends the file
    # (docs/site-behaviour.md "The order URL leads to the file host"): one order per click
    sim = hosts_env.sim
    clock = SystemClock()
    tabs = DetailTabs(hosts_env.site, hosts_env.host, hosts_env.limiter, hosts_env.gate, clock, settle_quiet=0.3)
    record = sim.corpus.by_id["r0001"]
    locator = sim.links.detail("r0001")
    with Store.open(tmp_path / "data", clock) as store:
        ref = store.upsert_from_detail(await hosts_env.site.detail(locator), locator, clock.now()).record_ref
        downloader = Downloader(tabs, store, clock, tmp_path / "data")
        async with asyncio.timeout(STEP_TIMEOUT):
            got = await downloader.download(ref, op=FakeOp())
        await downloader.close()
    assert Path(got.path).read_bytes() == pdf_bytes(record)
    assert arrivals(sim, "/bar/download/order") == [("bar.cnki.net", 302)]
    assert arrivals(sim, "/docdown/fulltext/download") == [("docdown.cnki.net", 200)]
