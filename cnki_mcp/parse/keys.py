"""Normalised comparison keys for titles and source names.

`title_key` is the one rule every identity check uses (detail, journal, reader), so two
spellings of the same title compare equal while different titles never do."""

from __future__ import annotations

import unicodedata


def title_key(text: str | None) -> str:
    """NFKC, lower-case, keep only letters and digits (Unicode categories L* and N*).

    Drops whitespace, punctuation, 《》 and every kind of quote, so `《法学评论》` and
    `法学 评论` give the same key; full-width Latin folds to ASCII under NFKC.
    Empty or None input gives "" (callers treat "" as "no key", never as a match)."""
    if not text:
        return ""
    norm = unicodedata.normalize("NFKC", text).lower()
    return "".join(ch for ch in norm if unicodedata.category(ch)[0] in "LN")
