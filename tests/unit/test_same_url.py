"""`site.endpoints.same_url`: the page a solved slider or a login sends a tab back to is the one
asked for, however the site writes its URL; another page is not."""

from __future__ import annotations

import pytest

from cnki_mcp.site.endpoints import same_url

ASKED = "https://kns.cnki.net/kcms2/article/abstract?v=ABC%2Bdef&uniplatform=NZKPT&language=CHS"


@pytest.mark.parametrize(
    "returned",
    [
        ASKED,
        "https://KNS.cnki.net/kcms2/article/abstract?v=ABC%2Bdef&uniplatform=NZKPT&language=CHS",  # host case
        "https://kns.cnki.net/kcms2/article/abstract?language=CHS&v=ABC%2Bdef&uniplatform=NZKPT",  # query order
        ASKED + "#anchor",  # fragment
    ],
)
def test_the_same_page_written_another_way_is_the_same_url(returned: str) -> None:
    assert same_url(returned, ASKED)


def test_a_percent_encoded_path_is_its_text() -> None:
    assert same_url("https://navi.cnki.net/knavi/%E6%B3%95%E5%AD%A6", "https://navi.cnki.net/knavi/法学")


@pytest.mark.parametrize(
    "returned",
    [
        "https://kns.cnki.net/kcms2/article/abstract?v=OTHER&uniplatform=NZKPT&language=CHS",  # another paper
        "https://kns.cnki.net/verify/home?returnUrl=x",  # still the verification page
        "http://kns.cnki.net/kcms2/article/abstract?v=ABC%2Bdef&uniplatform=NZKPT&language=CHS",  # scheme
    ],
)
def test_another_page_is_not_the_same_url(returned: str) -> None:
    assert not same_url(returned, ASKED)
