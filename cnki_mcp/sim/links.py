"""What page renderers need from the server: URL builders and the visitor's state.

The server owns tokens (detail `v` tokens expire) and host layout (one origin, or the real
host names in hosts mode); renderers only ask for links through this protocol."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol


class Links(Protocol):
    def detail(self, record_id: str) -> str:
        """Absolute kcms2 abstract URL with a fresh `v` token."""
        ...

    def journal(self, journal_name: str) -> str:
        """Absolute navi journal page URL (`/knavi/detail?p=...`)."""
        ...

    def author(self, name: str, institution: str | None = None) -> str:
        """An author page link: one person's (CNKI's links carry the author's code, so two
        co-authors sharing a name have links of their own)."""
        ...

    def reader(self, record_id: str) -> str:
        """Where the grid's and the detail page's HTML阅读 entry points: a bar.cnki.net order URL,
        as on the real pages, which redirects to the htmlread entry (`reader_entry`)."""
        ...

    def reader_entry(self, record_id: str) -> str:
        """The bar.cnki.net htmlread entry (`/bar/htmlread.html?lang=CHS&cacheID=…`)."""
        ...

    def download(self, record_id: str, fmt: Literal["pdf", "caj"]) -> str: ...

    def file(self, record_id: str, fmt: str, fault: str = "") -> str:
        """The file-host URL a download order redirects to (`docdown.cnki.net/docdown/…`)."""
        ...

    def login(self, return_url: str) -> str: ...

    def verify(self, return_url: str) -> str: ...

    def kns(self, path: str) -> str:
        """Absolute URL of `path` on the kns host."""
        ...

    def www(self, path: str) -> str: ...


@dataclass(frozen=True, slots=True)
class Visitor:
    """Who the browser is, as the header shows it."""

    personal_name: str | None = None  # logged-in personal account
    institution: str | None = None  # institution (IP or CARSI) identity
    verified: bool = False  # solved the verification recently
