"""Traditional Chinese read as CNKI's simplified index writes it (DESIGN.md §Modules).

Researchers in Taiwan, Hong Kong and Macau write questions, titles and reference lists in
traditional characters (碳中和與綠色金融, 違約金懲罰性功能的困境與出路) and with Taiwan terms
(人工智慧, 資料探勘, 網路 for 人工智能, 数据挖掘, 网络). CNKI's records are in simplified
characters, so such text found nothing. OpenCC (the `opencc` package, its dictionaries loaded on
the first conversion, never at import) converts:

- `simplified(text)`: characters only (OpenCC t2s), for a title or a name, whose words are the
  author's: 違約金懲罰性功能的困境與出路 -> 违约金惩罚性功能的困境与出路;
- `mainland(text)`: characters and Taiwan terms (OpenCC tw2sp), for a question's concepts:
  人工智慧在教育的應用 -> 人工智能在教育的应用, 資料探勘 -> 数据挖掘.

Both return a text without traditional characters unchanged: tw2sp would rewrite simplified
Chinese as if it were Taiwan usage (程序设计 -> 进程设计, 人工智慧 written in simplified stays).
"""

from __future__ import annotations

import functools
import threading
from typing import Protocol

from cnki_mcp.query.segment import HAN_CHAR

# one Han character (CJK ideographs: Ext. A, URO, compatibility, Ext. B onwards)
_HAN = HAN_CHAR


class _Converter(Protocol):
    def convert(self, text: str) -> str: ...


_LOCK = threading.Lock()
_CONVERTERS: dict[str, _Converter] = {}


def _converter(config: str) -> _Converter:
    with _LOCK:
        found = _CONVERTERS.get(config)
        if found is None:
            import opencc  # its dictionaries load here, on the first conversion

            found = _CONVERTERS[config] = opencc.OpenCC(config)
        return found


@functools.lru_cache(maxsize=8192)
def _traditional_char(char: str) -> bool:
    """A character simplified Chinese writes otherwise: t2s changes it and it is outside GB2312,
    the simplified repertoire. 乾 (乾县), 於 (a surname), 麴, 後, 徵 … are in GB2312 and standard in
    mainland names and places; t2s changes them too, and a simplified question holding one was
    taken for traditional (乾县 planned 干县, 於梨华 lost its surname)."""
    if not _HAN.match(char):
        return False
    try:
        char.encode("gb2312")
    except UnicodeEncodeError:
        return _converter("t2s").convert(char) != char
    return False


def has_traditional(text: str) -> bool:
    """Does `text` hold a character that simplified Chinese writes otherwise (`_traditional_char`)?"""
    return any(_traditional_char(c) for c in text)


@functools.lru_cache(maxsize=4096)
def simplified(text: str) -> str:
    """`text` written in traditional characters, in simplified ones (OpenCC t2s); a text without
    any (`has_traditional`) is returned unchanged."""
    if not has_traditional(text):
        return text
    return _converter("t2s").convert(text)


@functools.lru_cache(maxsize=1024)
def mainland(text: str) -> str:
    """`text` written in traditional characters, in simplified characters and mainland terms
    (OpenCC tw2sp); a text without traditional characters is returned unchanged."""
    if not has_traditional(text):
        return text
    return _converter("tw2sp").convert(text)


@functools.lru_cache(maxsize=4096)
def mainland_of_simplified(term: str) -> str:
    """The mainland term for a term written in simplified characters as a Taiwan writer's word
    (s2tw then tw2sp: 档案 -> 檔案 -> 文件, 刑事程序 -> 刑事进程, 智慧 -> 智慧): how a writer's word and
    the mainland term it was rewritten to are paired."""
    if not _HAN.search(term):
        return term
    return _converter("tw2sp").convert(_converter("s2tw").convert(term))
