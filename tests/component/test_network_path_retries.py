"""The network path's refusals are not asked again (DESIGN.md "The network path"): the CDN's 418 and
a redirect to the overseas site answer the same from the same address, so the loader's retries
(site-rules.md §1.3: three slow answers, 2 s and 4 s apart) only spent two more requests and ~6 s
before the same SITE_UNAVAILABLE. The code stays SITE_UNAVAILABLE; `retryable` is false."""

from __future__ import annotations

from pathlib import Path

import pytest

from cnki_mcp.clock import FakeClock
from cnki_mcp.errors import CnkiError, SiteUnavailable
from cnki_mcp.settings import Settings
from cnki_mcp.site.backend import SiteOp
from cnki_mcp.site.cnki import CnkiSite
from cnki_mcp.site.endpoints import overseas_refusal
from cnki_mcp.site.human import HumanGate
from cnki_mcp.site.limiter import Limiter
from cnki_mcp.site.transport import Fetched

DETAIL = "https://kns.cnki.net/kcms2/article/abstract?v=token"


class Host:
    generation = 1
    started = True


def site_answering(tmp_path: Path, answer: Fetched | CnkiError) -> tuple[CnkiSite, list[str], FakeClock]:
    """A CnkiSite whose loader gives `answer` to every load, and the URLs it was asked for."""
    clock = FakeClock()
    limiter = Limiter(clock, 0.5, 6)
    site = CnkiSite(Settings(data_dir=tmp_path), clock, Host(), limiter, HumanGate(clock, limiter))  # type: ignore[arg-type]
    asked: list[str] = []

    async def load(url: str, op: SiteOp | None) -> Fetched:
        asked.append(url)
        if isinstance(answer, CnkiError):
            raise answer
        return answer

    site._load = load  # type: ignore[method-assign]
    return site, asked, clock


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        (Fetched(418, DETAIL, "", final_url_known=False, body_lost=True), "cdn_refused"),
        (Fetched(200, DETAIL, "<html><head></head><body></body></html>", final_url_known=False), "cdn_refused"),
        (overseas_refusal("chn.oversea.cnki.net"), "overseas_site"),
    ],
    ids=["418", "empty-page", "overseas"],
)
async def test_a_refusal_of_the_network_path_is_asked_once_and_not_retryable(
    answer: Fetched | CnkiError, reason: str, tmp_path: Path
) -> None:
    site, asked, clock = site_answering(tmp_path, answer)
    with pytest.raises(SiteUnavailable) as info:
        await clock.run_until_complete(site.detail(DETAIL))
    error = info.value.to_dict()
    assert (error["code"], error["details"]["reason"], error["retryable"]) == ("SITE_UNAVAILABLE", reason, False)
    assert len(asked) == 1  # it was asked three times (the slow-answer retries), ~6 s apart


async def test_a_failing_site_is_still_asked_again(tmp_path: Path) -> None:
    """The rule above keeps the retries of a site that fails (a 5xx): SITE_UNAVAILABLE, retryable."""
    site, asked, clock = site_answering(tmp_path, Fetched(503, DETAIL, "<html><body>Service Unavailable</body></html>"))
    with pytest.raises(SiteUnavailable) as info:
        await clock.run_until_complete(site.detail(DETAIL))
    assert (info.value.code, info.value.retryable) == ("SITE_UNAVAILABLE", True)
    assert len(asked) == 3


# --- a background load the site sent to its overseas host ---------------------------------------
# Network.loadNetworkResource follows redirects without saying where they ended (Fetched.final_url_known
# false); the request API (its fallback) says where they ended.

OVERSEAS_HOME = "https://chn.oversea.cnki.net/index/"
OVERSEAS_PAGE = "<html><head><title>CNKI</title></head><body>" + "海外版首页 " * 60 + "</body></html>"


async def test_a_load_whose_known_final_url_is_the_overseas_site_is_site_unavailable_overseas_site(
    tmp_path: Path,
) -> None:
    site, asked, clock = site_answering(tmp_path, Fetched(200, OVERSEAS_HOME, OVERSEAS_PAGE))
    with pytest.raises(SiteUnavailable) as info:
        await clock.run_until_complete(site.detail(DETAIL))
    assert (info.value.details["reason"], info.value.details["host"]) == ("overseas_site", "chn.oversea.cnki.net")
    assert len(asked) == 1  # it was PARSER_UNSUPPORTED: the overseas page read as a detail page


async def test_an_unreadable_page_from_a_load_that_hides_its_redirects_is_opened_in_a_tab_that_tells(
    tmp_path: Path,
) -> None:
    """The overseas site's page (any page no parser reads) from the loader: the tab's navigation
    sees the redirect (`goto_or_cut` raises `overseas_site`); it was PARSER_UNSUPPORTED, the agent
    told CNKI had changed its pages."""
    site, asked, clock = site_answering(
        tmp_path, Fetched(200, DETAIL, OVERSEAS_PAGE, final_url_known=False)
    )
    opened: list[str] = []

    async def open_in_tab(url: str, op: SiteOp | None) -> object:
        opened.append(url)
        raise overseas_refusal("chn.oversea.cnki.net")

    site._open_in_tab = open_in_tab  # type: ignore[method-assign,assignment]
    with pytest.raises(SiteUnavailable) as info:
        await clock.run_until_complete(site.detail(DETAIL))
    assert info.value.details["reason"] == "overseas_site"
    assert (asked, opened) == ([DETAIL], [DETAIL])


async def test_an_unreadable_citation_api_answer_is_not_opened_in_a_tab_that_blocks_it(tmp_path: Path) -> None:
    """The product's tabs block the citation API (site/page_apis.py): such a tab would fail
    net::ERR_BLOCKED_BY_CLIENT, turning PARSER_UNSUPPORTED into SITE_UNAVAILABLE."""
    from cnki_mcp.errors import ParserUnsupported
    from cnki_mcp.parse.citations import parse_citation_metrics

    api = "https://kns.cnki.net/restapi/citation-api/v1/literature/quotations/metrics?v=token"
    site, asked, clock = site_answering(tmp_path, Fetched(200, api, OVERSEAS_PAGE, final_url_known=False))
    opened: list[str] = []

    async def open_in_tab(url: str, op: SiteOp | None) -> object:
        opened.append(url)
        raise AssertionError("opened in a tab")

    site._open_in_tab = open_in_tab  # type: ignore[method-assign,assignment]
    with pytest.raises(ParserUnsupported):
        await clock.run_until_complete(site._fetch_parsed(api, None, lambda text, _u: parse_citation_metrics(text)))
    assert (asked, opened) == ([api], [])
