"""Small text helpers shared by the formatted styles (pure)."""

from __future__ import annotations

import re
from typing import Literal

from .model import split_pages

RangeFormat = Literal["expanded", "minimal", "minimal-two", "chicago-16"]

MONTHS_LONG = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
               "October", "November", "December")
MONTHS_MLA = ("Jan.", "Feb.", "Mar.", "Apr.", "May", "June", "July", "Aug.", "Sept.", "Oct.", "Nov.", "Dec.")
MONTHS_NLM = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")

# The CSL processor's "skip words" for title case (articles, conjunctions, prepositions).
_SKIP_WORDS = frozenset(
    ["about", "above", "across", "afore", "after", "against", "al", "along", "alongside", "amid", "amidst", "among", "amongst", "anenst", "apropos", "apud", "around", "as", "aside", "astride", "at", "athwart", "atop", "barring", "before", "behind", "below", "beneath", "beside", "besides", "between", "beyond", "but", "by", "circa", "despite", "down", "during", "et", "except", "for", "forenenst", "from", "given", "in", "inside", "into", "lest", "like", "modulo", "near", "next", "notwithstanding", "of", "off", "on", "onto", "out", "over", "per", "plus", "pro", "qua", "sans", "since", "than", "through", "thru", "throughout", "thruout", "till", "to", "toward", "towards", "under", "underneath", "until", "unto", "up", "upon", "versus", "vs.", "v.", "vs", "v", "via", "vis-à-vis", "with", "within", "without", "or", "yet", "so", "and", "nor", "a", "an", "the", "de", "d'", "von", "van", "c", "ca"]
)


_PAGE = re.compile(r"[A-Za-z]*\d+")


def _shorten(start: str, end: str, keep: int) -> str:
    """Drop the leading digits `end` shares with `start`, keeping at least `keep` digits."""
    if len(start) != len(end):
        return end
    i = 0
    while i < len(end) - keep and start[i] == end[i]:
        i += 1
    return end[i:]


def page_range(pages: str | None, fmt: RangeFormat, dash: str) -> str:
    """Format a page range the way CSL's page-range-format does."""
    if not pages:
        return ""
    start, end = split_pages(pages)
    if not start:
        return ""
    if not end:
        return start
    if not _PAGE.fullmatch(end):
        return clean_spaces(pages)  # `12-15+20`, `12-15, 20`: not one range, written as given
    prefix = re.sub(r"\d.*", "", start)
    if prefix and fmt != "expanded" and end.startswith(prefix) and start[len(prefix):].isdigit():
        # `S12-S15`: the numbers are the range, the letter is written once (`S12–15`)
        return prefix + page_range(f"{start[len(prefix):]}-{end[len(prefix):]}", fmt, dash)
    if not (start.isdigit() and end.isdigit()) or int(end) <= int(start):
        return f"{start}{dash}{end}"
    if fmt == "minimal":
        end = _shorten(start, end, 1)
    elif fmt == "minimal-two":
        end = _shorten(start, end, 2) if len(end) > 1 else end
    elif fmt == "chicago-16":
        s = int(start)
        if s < 100 or s % 100 == 0:
            pass
        elif s % 100 < 10:
            end = _shorten(start, end, 1)
        else:
            short = _shorten(start, end, 2)
            # four-digit numbers: when three digits change, give all of them
            end = end if len(start) == 4 and len(short) >= 3 else short
    return f"{start}{dash}{end}"


def title_case(title: str) -> str:
    """CSL title case for English titles: capitalise words that are entirely lower case,
    except skip words that are not first (or first after a colon)."""
    words = title.split(" ")
    out: list[str] = []
    start = True
    for word in words:
        core = word.strip("“”\"'‘’()[]")
        if core and core == core.lower() and core[:1].isalpha() and (start or core.lower() not in _SKIP_WORDS):
            idx = word.index(core[0])
            word = word[:idx] + word[idx].upper() + word[idx + 1:]
        out.append(word)
        start = word.endswith(":") or word.endswith("?") or word.endswith("!")
    return " ".join(out)


def nest_quotes(text: str) -> str:
    """Inside a quoted title, double quotes become single ones (“a” -> ‘a’)."""
    return text.replace("“", "‘").replace("”", "’").replace('"', "'")


def join_parts(parts: list[str], sep: str) -> str:
    return sep.join(p for p in parts if p)


def end_with(text: str, mark: str = ".") -> str:
    """Append `mark` unless the text already ends with it (CSL punctuation collapsing)."""
    if not text:
        return text
    if text.endswith(mark) or (mark == "." and text[-1] in ".?!。？！"):
        return text
    return text + mark


def clean_spaces(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _date_text(parts: list[int], months: tuple[str, ...], day_first: bool) -> str:
    year = str(parts[0])
    month = months[parts[1] - 1] if len(parts) > 1 else ""
    day = str(parts[2]) if len(parts) > 2 else ""
    if day_first:
        return " ".join(p for p in (day, month, year) if p)
    if day:
        return f"{month} {day}, {year}"
    return " ".join(p for p in (month, year) if p)


def date_text(dates: list[list[int]], months: tuple[str, ...], *, day_first: bool = False) -> str:
    """A date or a date range in words, as CSL's `<date form="text">` writes it:
    `July 13, 2016`, `July 13–15, 2016` (or `13–15 July 2016` day first), `July 2016`, `2016`."""
    if not dates:
        return ""
    start = dates[0]
    if len(dates) < 2 or dates[1] == start:
        return _date_text(start, months, day_first)
    end = dates[1]
    if len(start) == len(end) == 3 and start[0] == end[0]:
        same_month = start[1] == end[1]
        year = str(start[0])
        if day_first:
            head = str(start[2]) if same_month else f"{start[2]} {months[start[1] - 1]}"
            return f"{head}–{end[2]} {months[end[1] - 1]} {year}"
        tail = str(end[2]) if same_month else f"{months[end[1] - 1]} {end[2]}"
        return f"{months[start[1] - 1]} {start[2]}–{tail}, {year}"
    return f"{_date_text(start, months, day_first)}–{_date_text(end, months, day_first)}"
