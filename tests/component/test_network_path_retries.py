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
