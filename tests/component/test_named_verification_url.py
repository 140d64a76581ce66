"""A grid answer's -403 JSON names the verification page the person is shown. A page may name
anything; a URL urlsplit cannot even read (`https://[evil/…`, a host NFKC-folding to `@`) is not
CNKI's: VERIFICATION_CONTEXT_UNAVAILABLE, as any URL outside CNKI is. It raised an uncoded
ValueError, which the server answered INTERNAL (review 9 finding 5)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cnki_mcp.clock import FakeClock
from cnki_mcp.errors import VerificationContextUnavailable
from cnki_mcp.parse.gate import challenge_url
from cnki_mcp.settings import Settings
from cnki_mcp.site.cnki import CnkiSite
from cnki_mcp.site.grid_template import GridTemplate
from cnki_mcp.site.human import HumanGate
from cnki_mcp.site.limiter import Limiter
from cnki_mcp.site.transport import Fetched


class Host:
    generation = 1


@pytest.mark.parametrize(
    "named",
    [
        "https://evil.com\uff20kns.cnki.net/verify/home?ident=1",
        "https://[evil/verify/home?ident=1",
        "https://evil.com/verify/home?ident=1",  # the case that was already refused
    ],
)
async def test_a_verification_url_outside_cnki_or_unreadable_is_refused_with_its_code(
    named: str, tmp_path: Path
) -> None:
    clock = FakeClock()
    limiter = Limiter(clock, 0.5, 6)
    site = CnkiSite(Settings(data_dir=tmp_path), clock, Host(), limiter, HumanGate(clock, limiter))  # type: ignore[arg-type]
    answer = json.dumps({"code": -403, "message": named}, ensure_ascii=False)
    assert challenge_url(answer) == named  # the URL the answer names reaches the check
    template = GridTemplate(url="https://kns.cnki.net/kns8s/brief/grid", fields=(), query_json={})
    with pytest.raises(VerificationContextUnavailable) as info:
        await site._grid_challenge(None, template, Fetched(403, template.url + "/answered", answer), "{}", None)  # type: ignore[arg-type]
    assert info.value.code == "VERIFICATION_CONTEXT_UNAVAILABLE"
