"""One work under several records (DESIGN.md §Modules): the same-work rule, the records a search
lists once (`duplicate_works`) and the final record a title names (`final_of`).

PURE: no I/O, no clock."""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Sequence
from collections.abc import Set as AbstractSet

from cnki_mcp.identity import Paper, author_key, listed_online_first, source_key, visible
from cnki_mcp.script import simplified

# --- one work in several records --------------------------------------------------
# CNKI lists one work under several records that no key joins (different filenames): the
# online-first (网络首发) record and the final one in its issue, a reprint (新华文摘, 中国社会科学
# 文摘), the conference version of a journal article, the thesis an article came from. A search
# lists the work once (`duplicate_works`); the store keeps every record.


# Marks the records of one work spell differently (`：`/`:`, `——`/`—`, `（）`/`()`, `〈〉`/`《》`,
# curly and straight quotes, a trailing `。` or `.`, CNKI's `_` before a subscript in `CO_2`):
# punctuation, cut out as a space. Kept: marks that name things (`C#`, `C++`, `100%`, `5‰`, `R&D`,
# `Wnt/β-catenin`, the primes of `3′-UTR`), a point between digits (`1.2` is not `12`), a minus
# starting a number (`-20℃` is not `20℃`; `_NUMBER_MINUS`) and a charge's sign (`Cl⁻`, `O^(2-)` are not `Cl`, `O_2`).
_NAMING_MARKS = frozenset("#%&*/@\\‰′″")
_DECIMAL_POINT = re.compile(r"(?<=\d)\.(?=\d)")
_POINT = "\x00"
_MINUS = "\x01"
# A minus starts a number where no word stands before it (the title's start, a space, `(`, `~`) or
# before a temperature (`温度-20℃`); after a Han character a hyphen before a number is a dash as
# often (`疫情-2020年回顾`, spelt `疫情——2020年回顾` in the other record)
_NUMBER_MINUS = re.compile(r"(?<![0-9a-z\u3400-\u9fff])-(?=\d)|-(?=\d+(?:\.\d+)?\s*(?:℃|°))")
# CNKI's plain-text sub- and superscripts (`CO_2`, `Fe^(3+)`, `SO_4^(2-)`): the script's text
# alone, as `CO₂` and `Fe³⁺` read after NFKC
_SCRIPT_MARK = re.compile(r"[_^][({]?([0-9a-z+\-]{1,6})[)}]?")
_SPACE = re.compile(r" +")
# a space only separates two Latin words or numbers (`Windows 10`, `A B` is not `AB`)
_LOOSE_SPACE = re.compile(r"(?<![0-9a-z]) | (?![0-9a-z])")


def _script(mark: re.Match[str]) -> str:
    return mark.group(1).replace("-", _MINUS)


@functools.lru_cache(maxsize=8192)
def work_title_key(title: str | None) -> str:
    """A title as the records of one work spell it whatever the record ("" = no title): NFKC
    (full-width letters and digits, `CO₂` -> `CO2`), simplified characters (`script.simplified`),
    lower case, CNKI's script marks cut out (`CO_2`, `Fe^(3+)`), punctuation cut out, spaces kept
    only between Latin words and numbers. Used only to tell that two records are one work (`same_work`), never in a
    stored key (`identity.title_key`, record refs and bibliography keys stay as they were)."""
    text = visible(title or "").replace("\u207b", _MINUS)  # superscript minus: a charge (`Cl⁻`)
    text = simplified(unicodedata.normalize("NFKC", text)).lower().replace("\u2212", "-")
    text = _DECIMAL_POINT.sub(_POINT, _SCRIPT_MARK.sub(_script, text))
    text = _NUMBER_MINUS.sub(_MINUS, text)
    kept = "".join(
        " " if ch.isspace() or (unicodedata.category(ch)[0] == "P" and ch not in _NAMING_MARKS) else ch
        for ch in text
    )
    return _LOOSE_SPACE.sub("", _SPACE.sub(" ", kept).strip()).replace(_POINT, ".").replace(_MINUS, "-")


# A journal's or newspaper's own byline (本刊编辑部, 本报评论员, 本刊记者): the same title under it in two
# periodicals is two notices or columns, not one work
_HOUSE_BYLINES = ("编辑部", "编委会", "本刊", "本报", "评论员", "记者")


def _work_authors(paper: Paper) -> tuple[str, ...]:
    """The persons who wrote a paper, as `author_key` compares them; a house byline is no one."""
    keys = [author_key(simplified(name)) for name in paper.author_names()]
    return tuple(k for k in keys if k and not any(mark in k for mark in _HOUSE_BYLINES))


def _published(paper: Paper) -> bool:
    """In an issue: it has an issue or pages and is not listed as online-first."""
    return bool(paper.issue or paper.pages) and not listed_online_first(paper.native)


# Years between two records of one work at most: a reprint, the conference version or the thesis
# an article came from is published within about three years of it; generic titles by common names
# (浅谈小学数学课堂教学 by 王丽) recur over decades in other periodicals and are other works.
_WORK_YEARS_APART = 3


def same_work(a: Paper, b: Paper) -> bool:
    """Two records of one work: equal title keys (`work_title_key`) and the same authors, in order,
    where one list may stop early (a thesis names its student alone, the article adds the supervisor; a list row
    shows the first authors only), never without authors (notices, yearbook entries, a house byline
    such as 本刊编辑部); at most 3 years apart; and in one periodical, not two records both in an
    issue (a column's recurring title by the same writer) nor issues more than a year apart."""
    title = work_title_key(a.title)
    if not title or title != work_title_key(b.title):
        return False
    shorter, longer = sorted((_work_authors(a), _work_authors(b)), key=len)
    if not shorter or longer[: len(shorter)] != shorter:
        return False
    gap = abs(a.year - b.year) if a.year and b.year else 0
    if gap > _WORK_YEARS_APART:
        return False
    source = source_key(a.source)
    if source and source == source_key(b.source):
        # one periodical lists a work twice only as its online-first record and its final one
        return gap <= 1 and not (_published(a) and _published(b))
    return True


def duplicate_works(
    papers: Sequence[Paper], keep: AbstractSet[str] = frozenset(), unread: AbstractSet[str] = frozenset()
) -> dict[str, str]:
    """For `papers` in rank order: the record_ref of each record that repeats a work already
    listed -> the record_ref kept for that work. The first record of a work is kept, except that
    the final record of a paper in its issue is kept over its online-first record in the same
    source (it has the volume, issue and pages a citation needs), unless that online-first record
    is in `keep` (`rank.select_works`: the final record would not have been selected). A record in
    `unread` (its detail not read yet, so its issue and pages unknown) and not listed online-first
    is taken for the final record it may be."""
    kept: dict[str, list[Paper]] = {}
    out: dict[str, str] = {}
    for paper in papers:
        group = kept.setdefault(work_title_key(paper.title), [])
        for i, first in enumerate(group):
            if not same_work(paper, first):
                continue
            same_source = source_key(paper.source) == source_key(first.source)
            maybe = paper.record_ref in unread and not listed_online_first(paper.native)
            final = same_source and (maybe or _published(paper)) and not _published(first)
            if final and first.record_ref not in keep:  # the final record takes its place
                group[i] = paper
                out = {ref: paper.record_ref if to == first.record_ref else to for ref, to in out.items()}
                out[first.record_ref] = paper.record_ref
            else:
                out[paper.record_ref] = first.record_ref
            break
        else:
            group.append(paper)
    return out


def final_of(papers: Sequence[Paper]) -> Paper | None:
    """The record a title names when `papers`, the distinct records CNKI lists under it, are one
    work's online-first record(s) and its final record in the same periodical (`same_work`): the
    final one, whose volume, issue and pages a citation needs. None for anything else (two papers
    in print, a reprint, a conference version, other authors): the caller still has to choose."""
    first = [p for p in papers if listed_online_first(p.native)]
    final = [p for p in papers if not listed_online_first(p.native)]
    if not first or len(final) != 1 or not source_key(final[0].source):
        return None
    same = all(source_key(p.source) == source_key(final[0].source) and same_work(p, final[0]) for p in first)
    return final[0] if same else None
