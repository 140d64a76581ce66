"""Reference lists never carry CNKI's expiring detail tokens."""

from __future__ import annotations

from cnki_mcp.cite.sources import stable_url


def test_kcms2_token_urls_are_dropped_from_citations() -> None:
    token = "https://kns.cnki.net/kcms2/article/abstract?v=O8oqlCvNF0Q76tec&uniplatform=NZKPT&language=CHS"
    assert stable_url(token) is None
    assert stable_url(None) is None


def test_stable_urls_are_kept() -> None:
    url = "https://kns.cnki.net/kcms/detail/13.1222.R.20230130.1628.016.html"
    assert stable_url(url) == url
    assert stable_url("https://doi.org/10.1000/xyz") == "https://doi.org/10.1000/xyz"
