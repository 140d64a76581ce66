"""The PublicURL rule has one implementation (identity.public_url, used by every result item)
and Endpoints.public_url follows it: secrets in the query (the reader's invoice/nonce too), in
`;`-separated query parts, in the fragment, in path parameters or in user info are never shown."""

from __future__ import annotations

from pathlib import Path

import pytest

from cnki_mcp.identity import doi_url, public_url
from cnki_mcp.settings import Settings
from cnki_mcp.site.endpoints import Endpoints

BASE = "https://kns.cnki.net/kcms2/article/abstract"
HIDDEN = [
    f"{BASE}?v=1&invoice=a",
    f"{BASE}?v=1&Nonce=b",
    f"{BASE}?v=1;token=s",
    f"{BASE}?v=1#access_token=s",
    f"{BASE};jsessionid=ABC?v=1",
    "https://user:pw@kns.cnki.net/kcms2/article/abstract?v=1",
]


@pytest.mark.parametrize("url", HIDDEN)
def test_secret_looking_parts_hide_the_url(url: str) -> None:
    assert public_url(url) is None


@pytest.mark.parametrize("url", HIDDEN)
def test_endpoints_apply_the_same_rule(url: str, tmp_path: Path) -> None:
    assert Endpoints(Settings(data_dir=tmp_path)).public_url(url) is None


def test_plain_detail_urls_stay_shown_on_both(tmp_path: Path) -> None:
    url = f"{BASE}?v=abc&uniplatform=NZKPT#section-2"
    assert public_url(url) == url
    assert Endpoints(Settings(data_dir=tmp_path)).public_url(url) == url
    sim = "http://127.0.0.1:8765/kcms2/article/abstract?v=1"
    ends = Endpoints(Settings(data_dir=tmp_path, site_origin="http://127.0.0.1:8765"))
    assert ends.public_url(sim) == sim
    assert ends.public_url(sim + "&nonce=x") is None


@pytest.mark.parametrize(
    ("doi", "url"),
    [
        ("10.3969/j.issn.1001-2397.2014.06.08", "https://doi.org/10.3969/j.issn.1001-2397.2014.06.08"),
        ("doi:10.1000/ABC", "https://doi.org/10.1000/ABC"),
        ("https://doi.org/10.1000/x y", "https://doi.org/10.1000/x%20y"),
        (" https://dx.doi.org/10.1000/a#b ", "https://doi.org/10.1000/a%23b"),
    ],
)
def test_a_doi_gives_its_resolver_link_with_case_kept_and_unsafe_characters_escaped(doi: str, url: str) -> None:
    assert doi_url(doi) == url


@pytest.mark.parametrize("doi", [None, "", "doi:", "not a doi", "11.1000/x", "10.1000"])
def test_no_link_is_made_from_something_that_is_not_a_doi(doi: str | None) -> None:
    assert doi_url(doi) is None


# Chromium (WHATWG URL) reads a backslash in the authority as a path separator, urlsplit as host
# text: each of these opens evil.com in the browser while urlsplit names a cnki.net host.
LOOK_ALIKE = [
    "https://evil.com\\.cnki.net/kcms2/article/abstract?v=1",
    "https://evil.com\\@kns.cnki.net/kcms2/article/abstract?v=1",
    "https://kns.cnki.net@evil.com/kcms2/article/abstract?v=1",
    "https://kns.cnki.net.evil.com/kcms2/article/abstract?v=1",
    "https://evilcnki.net/kcms2/article/abstract?v=1",
    "http://kns.cnki.net/kcms2/article/abstract?v=1",
    # urlsplit raises on these (review 9 finding 5): not CNKI's, never an uncoded ValueError
    "https://evil.com\uff20kns.cnki.net/kcms2/article/abstract?v=1",
    "https://[evil/kcms2/article/abstract?v=1",
]


@pytest.mark.parametrize("url", LOOK_ALIKE)
def test_a_host_the_browser_reads_otherwise_is_neither_cnki_nor_shown(url: str, tmp_path: Path) -> None:
    ends = Endpoints(Settings(data_dir=tmp_path))
    assert not ends.is_site_url(url)
    assert public_url(url) is None and ends.public_url(url) is None


def test_cnki_hosts_stay_cnki(tmp_path: Path) -> None:
    ends = Endpoints(Settings(data_dir=tmp_path))
    for url in (f"{BASE}?v=1", "https://KNS.CNKI.NET/kns8s/AdvSearch", "https://cnki.net/", "https://kns.cnki.net:443/x"):
        assert ends.is_site_url(url), url
