"""The real CNKI pages in tests/fixtures/cnki-real are the exact blobs their PROVENANCE names."""

from __future__ import annotations

import hashlib
import re

import pytest

from tests.conftest import REAL_PAGES, real_bytes

_ROW = re.compile(r"^\| `([^`]+)` \| ([\d,]+) \| [^|]+ \| `[^`]+` \| `[0-9a-f]{40}`[^|]*\| `([0-9a-f]{40})` \|", re.M)
ENTRIES = _ROW.findall((REAL_PAGES / "PROVENANCE.md").read_text(encoding="utf-8"))


def test_provenance_lists_every_stored_page_and_only_those() -> None:
    stored = {str(p.relative_to(REAL_PAGES))[: -len(".gz")] for p in REAL_PAGES.rglob("*.gz")}
    assert len(ENTRIES) >= 30
    assert {rel for rel, _, _ in ENTRIES} == stored


@pytest.mark.parametrize(("relative", "size", "blob"), ENTRIES, ids=[e[0] for e in ENTRIES])
def test_stored_page_is_the_source_blob_byte_for_byte(relative: str, size: str, blob: str) -> None:
    data = real_bytes(relative)
    assert len(data) == int(size.replace(",", ""))
    assert hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest() == blob
