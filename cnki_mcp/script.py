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
import re
import threading
from typing import Protocol

# one Han character (CJK ideographs: Ext. A, URO, compatibility, Ext. B onwards)
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ffff]")


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


@functools.lru_cache(maxsize=4096)
def simplified(text: str) -> str:
    """`text` with traditional characters in simplified ones (OpenCC t2s); unchanged without any."""
    if not _HAN.search(text):
        return text
    return _converter("t2s").convert(text)


@functools.lru_cache(maxsize=1024)
def mainland(text: str) -> str:
    """`text` written in traditional characters, in simplified characters and mainland terms
    (OpenCC tw2sp); a text without traditional characters is returned unchanged."""
    if simplified(text) == text:
        return text
    return _converter("tw2sp").convert(text)


def has_traditional(text: str) -> bool:
    """Does `text` hold a character that simplified Chinese writes otherwise?"""
    return simplified(text) != text
