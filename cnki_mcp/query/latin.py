"""English words and Latin runs of a raw research question (DESIGN.md §Modules, `query/`): which
English words split a Latin run into terms, which are study words, and when a stop word in capitals
is an acronym. `query/segment.py` cuts the question and calls these on each Latin run."""

from __future__ import annotations

import re
from collections.abc import Sequence


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


ENGLISH_STOP = _words(
    """
    a an the of in on for to and or with by from
    at as into about how what which why when where
    who is are be can does do using based via vs
    versus its their this that these those
    research study review
    did has have had was were will would should could may might
    i we you me my our your please find show give list
    paper papers article articles literature studies
    affect affects affected affecting help helps helped
    improve improves improved improving
    between among across during within through toward towards than
    published publish
    """
)

# English study-type words: like SOFT_WORDS, dropped when one stands alone and another concept
# remains (the impact of ESG disclosure on firm value), kept inside a term (impact factor).
ENGLISH_SOFT = _words(
    """
    impact impacts effect effects role roles relationship relationships relation
    analysis method methods approach approaches progress advances challenges trends
    factors determinants mechanism mechanisms application applications recent evidence
    """
)


# English stop words that, written as a capital after another word, are a name's letter
_NAMING_LETTERS = frozenset({"A", "I"})
# Words a letter names a kind or grade of (hepatitis A, type I diabetes, Class A shares): after any
# other word, a capital A or I followed by more words starts a clause (`green finance I need`,
# `carbon tax A systematic review`) and is the pronoun or article
_NAMED_BY_LETTER = frozenset(
    {
        "hepatitis", "vitamin", "type", "class", "phase", "grade", "stage", "group", "category",
        "schedule", "level", "tier", "series", "plan", "war", "title", "article", "part", "section",
        "chapter", "appendix", "figure", "table", "model", "form", "option", "scheme", "division",
        "league", "zone", "block", "lot", "track", "round", "star",
    }
)

# `papers` / `articles` name a kind after these words and stay in the term (quality of conference
# papers, working papers, white papers); elsewhere they are request boilerplate (papers on ESG)
_PAPER_WORDS = frozenset({"paper", "papers", "article", "articles"})
_PAPER_KINDS = frozenset({"conference", "journal", "newspaper", "working", "white", "position"})


# Search operators, never acronyms (`query/written.py` reads them as syntax)
_OPERATORS = frozenset({"AND", "OR", "NOT"})


# Connectives in capitals compare the terms either side (中医 VS 西医, 中医VS西医): never a name
_CONNECTIVES = frozenset({"VS", "VERSUS"})

# What stands beside a word: nothing or punctuation (the edge), Han text written against it, a term
# across a space (Han text, or a Latin word not in lower case), or a lower-case English word
_EDGE, _TIGHT, _TERM, _LOWER = "edge", "tight", "term", "lower"


def _side(word: str | None) -> str:
    """What a neighbouring word across a space is (None: no word there)."""
    if word is None:
        return _EDGE
    return _LOWER if word.isascii() and word.isalpha() and word.islower() else _TERM


def _acronym(word: str, words: Sequence[str], k: int, left: str = _EDGE, right: str = _EDGE) -> bool:
    """Whether `word` (words[k]), a stop word in capitals, is an acronym, no English word: written
    against Han text or at an edge (DID双重差分法, 基于DID模型, CAN总线, WHO 指南, DO浓度) or between
    lower-case English words (`the effect of DO on ...`). Between two terms across spaces (A股 VS 港股,
    深度学习 FOR 图像识别, BERT FOR text) it is the English word, and a run wholly in capitals (WHAT
    IS ESG) is shouted English. `left`/`right`: what stands beside the run of `words`."""
    if len(word) < 2 or not (word.isascii() and word.isalpha() and word.isupper()):
        return False
    if word in _OPERATORS or word in _CONNECTIVES:
        return False
    if len(words) > 1 and all(w.isupper() for w in words):
        return False
    sides = (
        _side(words[k - 1]) if k > 0 else left,
        _side(words[k + 1]) if k + 1 < len(words) else right,
    )
    return _TIGHT in sides or _EDGE in sides or sides == (_LOWER, _LOWER)


def _latin_words(run: str, left: str = _EDGE, right: str = _EDGE) -> list[str]:
    """A Latin run -> terms: English stop words split it, a lone number joins the word before.
    A capital A or I written after a word names the thing (hepatitis A, vitamin A, type I diabetes,
    Class A shares) when it ends the run or follows a word it names a kind of (`_NAMED_BY_LETTER`):
    it is no article or pronoun there and stays in the term. A stop word in capitals is an acronym
    (`_acronym`)."""
    out: list[str] = []
    current: list[str] = []
    words = run.split()
    for k, word in enumerate(words):
        if (
            word in _NAMING_LETTERS
            and current
            and (k + 1 == len(words) or current[-1].casefold() in _NAMED_BY_LETTER)
        ):
            current.append(word)
            continue
        if word.casefold() in _PAPER_WORDS and current and current[-1].casefold() in _PAPER_KINDS:
            current.append(word)
            continue
        if word.casefold() in ENGLISH_STOP and not _acronym(word, words, k, left, right):
            if current:
                out.append(" ".join(current))
            current = []
            continue
        current.append(word)
    if current:
        out.append(" ".join(current))
    return out


def _run_side(beside: str, gap: bool) -> str:
    """What stands beside a Latin run (`beside`: the text from the run outwards): Han text written
    against it, a word across spaces, or nothing or punctuation."""
    if not gap:
        return _TIGHT
    return _TERM if re.match(r"\s+\w", beside) else _EDGE
