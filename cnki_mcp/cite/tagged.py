"""Reference-manager formats: BibTeX, RIS and EndNote (Refer `%` tags, as CNKI exports).

BibTeX keys are readable and unique: first author's family name (pinyin for Chinese
names) + year + first title word (pinyin of the first two Han characters for Chinese
titles), all lower-case ASCII; keys that would clash all get `a`, `b`, ... suffixes, over the whole
scope when the records are one part of it (`scoped_keys`).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping

from .model import HAN, CiteRecord, DocKind, split_pages
from .names import ascii_fold, key_family, parse_name, pinyin

_THESES = (DocKind.PHD_THESIS, DocKind.MASTERS_THESIS, DocKind.THESIS)

# --- BibTeX ---------------------------------------------------------------------------

BIBTEX_TYPES: dict[DocKind, str] = {
    DocKind.JOURNAL: "article",
    DocKind.NEWSPAPER: "article",
    DocKind.CONFERENCE: "inproceedings",
    DocKind.PHD_THESIS: "phdthesis",
    DocKind.MASTERS_THESIS: "mastersthesis",
    DocKind.BOOK: "book",
    DocKind.YEARBOOK: "incollection",  # an article in the yearbook: the yearbook is its booktitle
}

_BIB_SPECIAL = {
    "\\": r"\textbackslash{}",
    "{": r"\{",
    "}": r"\}",
    "%": r"\%",
    "&": r"\&",
    "#": r"\#",
    "_": r"\_",
    "$": r"\$",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}
_BIB_RE = re.compile("|".join(re.escape(k) for k in _BIB_SPECIAL))
_SKIP_FIRST = frozenset(["a", "an", "the", "on", "of", "in", "for", "to", "and", "at", "by", "with", "from"])


# BibTeX counts every brace of a field, escaped or not: a lone `\{` (an abstract cut inside `{1,2,…}`)
# leaves the field open, so biber, pybtex and bibtexparser 1 read on into the next entries (two
# records merged into one, the rest lost). A brace without its partner is written with an invisible
# partner, as Zotero's BibTeX export writes it (tex.stackexchange.com/q/230750; LaTeX, biber,
# pylatexenc and Zotero's import read `{`).
_LONE_BRACE = {"{": r"\{\vphantom{\}}", "}": r"\vphantom{\{}\}"}


def _lone_braces(text: str) -> set[int]:
    """Where the braces without a partner are."""
    opened: list[int] = []
    lone: set[int] = set()
    for i, ch in enumerate(text):
        if ch == "{":
            opened.append(i)
        elif ch == "}":
            if opened:
                opened.pop()
            else:
                lone.add(i)
    return lone | set(opened)


def bibtex_escape(text: str) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    lone = _lone_braces(text)
    if not lone:
        return _BIB_RE.sub(lambda m: _BIB_SPECIAL[m.group()], text)
    return "".join(_LONE_BRACE[ch] if i in lone else _BIB_SPECIAL.get(ch, ch) for i, ch in enumerate(text))


# A word with a capital after its first character (COVID-19, ESG, mRNA, 基于ESG的…): BibTeX styles
# write titles in sentence case (plain.bst: `Covid-19 and esg disclosure`), so such words are braced
# to keep their case, as Zotero's BibTeX export does (hyphens, `(` and `[` start a new word).
_CASED_WORD = re.compile(r"([^\s\-}(\[]+[A-Z][^\s,]*)")


def bibtex_title(title: str) -> str:
    """The escaped title with its case-bearing words braced."""
    return _CASED_WORD.sub(r"{\1}", bibtex_escape(title))


def _bib_url(text: str) -> str:
    return re.sub(r"\s+", "", text).replace("{", "%7B").replace("}", "%7D")


def bibtex_type(rec: CiteRecord) -> str:
    return BIBTEX_TYPES.get(rec.kind, "misc")


def _title_word(title: str) -> str:
    han = "".join(HAN.findall(title))
    if han and HAN.match(title.lstrip("“《〈(（[【\"' ")):
        return pinyin(han[:2])
    for word in re.findall(r"[^\W_]+", title):
        folded = ascii_fold(word).lower()
        if folded and folded not in _SKIP_FIRST:
            return folded
    return pinyin(han[:2]) if han else ""


def base_key(rec: CiteRecord) -> str:
    family = key_family(rec.authors[0]) if rec.authors else "anon"
    year = str(rec.effective_year) if rec.effective_year is not None else "nd"
    return f"{family or 'anon'}{year}{_title_word(rec.title)}"


def bibtex_keys(records: list[CiteRecord]) -> list[str]:
    return keys_of_bases([base_key(r) for r in records])


def keys_of_bases(bases: list[str]) -> list[str]:
    """Unique keys for records of these `base_key`s, in order: a base two records share gets
    `a`, `b`, … (never a key another record has as its own)."""
    counts = Counter(bases)
    taken: set[str] = {b for b in bases if counts[b] == 1}
    keys: list[str] = []
    seen: Counter[str] = Counter()
    for base in bases:
        if counts[base] == 1:
            keys.append(base)
            continue
        while True:
            n = seen[base]
            seen[base] += 1
            suffix = ""
            n += 1
            while n:
                n, rem = divmod(n - 1, 26)
                suffix = chr(97 + rem) + suffix
            key = base + suffix
            if key not in taken:
                break
        taken.add(key)
        keys.append(key)
    return keys


def bibtex_name(raw: str) -> str:
    name = parse_name(raw)
    if name.cjk:
        return bibtex_escape(name.static)
    if name.literal:
        return "{" + bibtex_escape(name.family) + "}"
    return bibtex_escape(f"{name.family}, {name.given}")


def bibtex_entry(rec: CiteRecord, key: str) -> str:
    kind = rec.kind
    fields: list[tuple[str, str]] = []
    if rec.authors:
        fields.append(("author", " and ".join(bibtex_name(a) for a in rec.authors)))
    fields.append(("title", bibtex_title(rec.title)))
    source = bibtex_escape(rec.source or "")
    if kind in (DocKind.JOURNAL, DocKind.NEWSPAPER):
        fields.append(("journal", source))
    elif kind is DocKind.CONFERENCE:
        fields.append(("booktitle", source))
        if rec.conference and rec.conference != rec.source:
            fields.append(("eventtitle", bibtex_escape(rec.conference)))
        # biblatex's meeting fields: where and when the conference met (会议地点, 会议时间).
        if rec.event_place:
            fields.append(("venue", bibtex_escape(rec.event_place)))
        if rec.event_date_parts:
            fields.append(("eventdate", "/".join(
                "-".join([str(d[0])] + [f"{x:02d}" for x in d[1:]]) for d in rec.event_date_parts)))
    elif kind in _THESES:
        fields.append(("school", source))
        if kind is DocKind.THESIS:
            fields.append(("type", "学位论文" if rec.lang == "zh" else "Thesis"))
    elif kind is DocKind.BOOK:
        fields.append(("publisher", bibtex_escape(rec.publisher or rec.source or "")))
    elif kind is DocKind.YEARBOOK:
        fields.append(("booktitle", source))
    else:
        fields.append(("howpublished", source))
    if rec.publisher and kind is not DocKind.BOOK:
        fields.append(("publisher", bibtex_escape(rec.publisher)))
    if rec.place:
        fields.append(("address", bibtex_escape(rec.place)))
    year = rec.effective_year
    fields.append(("year", str(year) if year is not None else ""))
    parts = rec.date_parts
    if kind is DocKind.NEWSPAPER and len(parts) > 1:
        fields.append(("date", "-".join([str(parts[0])] + [f"{p:02d}" for p in parts[1:]])))
    fields.append(("volume", bibtex_escape(rec.volume or "")))
    fields.append(("number", bibtex_escape(rec.issue or "")))
    start, end = split_pages(rec.pages)
    fields.append(("pages", bibtex_escape(f"{start}--{end}" if start and end else (start or ""))))
    fields.append(("doi", _bib_url(rec.doi or "")))
    fields.append(("url", _bib_url(rec.url or "")))
    fields.append(("keywords", bibtex_escape(", ".join(rec.keywords))))
    fields.append(("abstract", bibtex_escape(rec.abstract or "")))
    fields.append(("language", "chinese" if rec.lang == "zh" else "english"))
    body = ",\n".join(f"  {name} = {{{value}}}" for name, value in fields if value)
    return f"@{bibtex_type(rec)}{{{key},\n{body}\n}}"


def scoped_keys(records: list[CiteRecord], scope: list[CiteRecord] | None) -> list[str]:
    """Keys of `records` made unique over `scope` too (the whole export `records` is a part of):
    the same paper gets the same key in every part, and two parts never share one."""
    if not scope or not all(r.record_ref for r in records):
        return bibtex_keys(records)
    by_ref = scope_key_map(scope, records)
    return [by_ref[r.record_ref] for r in records]  # type: ignore[index]


def scope_key_map(scope: list[CiteRecord], extra: list[CiteRecord] | None = None) -> dict[str | None, str]:
    """The key of every paper of `scope` (and of the `extra` ones it does not hold) by record_ref.
    A paper the scope lists twice (two result rows whose refs resolve to one merged paper) counts
    once, as the one-call export renders it once: counted twice, its key got a suffix only in the
    parts."""
    known: set[str | None] = set()
    once: list[CiteRecord] = []
    for r in scope:
        if not r.record_ref or r.record_ref not in known:
            known.add(r.record_ref)
            once.append(r)
    every = [*once, *(r for r in extra or [] if r.record_ref not in known)]
    return dict(zip((r.record_ref for r in every), bibtex_keys(every), strict=True))


def bibtex(
    records: list[CiteRecord], scope: list[CiteRecord] | None = None, keys: Mapping[str | None, str] | None = None
) -> str:
    """`keys`: a `scope_key_map` made before (a search's scope exported page by page), used when
    it holds every record."""
    if keys is not None and all(r.record_ref and r.record_ref in keys for r in records):
        listed = [keys[r.record_ref] for r in records]
    else:
        listed = scoped_keys(records, scope)
    return "\n\n".join(bibtex_entry(r, k) for r, k in zip(records, listed, strict=True)) + ("\n" if records else "")


# --- RIS ------------------------------------------------------------------------------

RIS_TYPES: dict[DocKind, str] = {
    DocKind.JOURNAL: "JOUR",
    DocKind.CONFERENCE: "CONF",
    DocKind.PHD_THESIS: "THES",
    DocKind.MASTERS_THESIS: "THES",
    DocKind.THESIS: "THES",
    DocKind.NEWSPAPER: "NEWS",
    DocKind.BOOK: "BOOK",
    DocKind.YEARBOOK: "CHAP",
    DocKind.STANDARD: "STAND",
    DocKind.PATENT: "PAT",
    DocKind.REPORT: "RPRT",
}


def _one_line(text: str | None) -> str:
    return re.sub(r"\s+", " ", text or "").strip()


def _thesis_label(rec: CiteRecord) -> str:
    if rec.kind is DocKind.PHD_THESIS:
        return "博士" if rec.lang == "zh" else "Doctoral dissertation"
    if rec.kind is DocKind.MASTERS_THESIS:
        return "硕士" if rec.lang == "zh" else "Master's thesis"
    return ""


def ris_entry(rec: CiteRecord) -> str:
    kind = rec.kind
    start, end = split_pages(rec.pages)
    tags: list[tuple[str, str]] = [("TY", RIS_TYPES.get(kind, "GEN"))]
    tags += [("AU", parse_name(a).inverted if not parse_name(a).cjk else a) for a in rec.authors]
    tags.append(("TI", rec.title))
    if kind in _THESES:
        tags.append(("PB", rec.source or ""))
        tags.append(("M3", _thesis_label(rec)))
    elif kind is DocKind.BOOK:
        tags.append(("PB", rec.publisher or rec.source or ""))
    else:  # a yearbook article too: T2 is the yearbook
        tags.append(("T2", rec.source or ""))
        if kind is DocKind.CONFERENCE:
            # the RIS spec's (and Zotero's, EndNote's) proceedings title; they read a CONF's T2 as the
            # conference name, so without C3 Zotero had no proceedings title (no container in its APA).
            # T2 stays the proceedings too: JabRef and Mendeley read it as the booktitle / source.
            tags.append(("C3", rec.source or ""))
        tags.append(("PB", rec.publisher or ""))
    tags.append(("CY", rec.place or ""))
    year = rec.effective_year
    tags.append(("PY", str(year) if year is not None else ""))
    parts = rec.date_parts
    if len(parts) > 1:
        tags.append(("DA", "/".join([str(parts[0])] + [f"{p:02d}" for p in parts[1:]])))
    tags += [("VL", rec.volume or ""), ("IS", rec.issue or ""), ("SP", start or ""), ("EP", end or "")]
    tags += [("DO", rec.doi or ""), ("UR", rec.url or "")]
    tags += [("KW", k) for k in rec.keywords]
    tags += [("AB", rec.abstract or ""), ("ID", rec.record_ref), ("LA", "chi" if rec.lang == "zh" else "eng")]
    lines = [f"{tag}  - {_one_line(value)}" for tag, value in tags if _one_line(value)]
    lines.append("ER  - ")
    return "\n".join(lines)


def ris(records: list[CiteRecord]) -> str:
    return "\n\n".join(ris_entry(r) for r in records) + ("\n" if records else "")


# --- EndNote (Refer) ------------------------------------------------------------------

ENDNOTE_TYPES: dict[DocKind, str] = {
    DocKind.JOURNAL: "Journal Article",
    DocKind.CONFERENCE: "Conference Paper",
    DocKind.PHD_THESIS: "Thesis",
    DocKind.MASTERS_THESIS: "Thesis",
    DocKind.THESIS: "Thesis",
    DocKind.NEWSPAPER: "Newspaper Article",
    DocKind.BOOK: "Book",
    DocKind.YEARBOOK: "Book Section",
    DocKind.STANDARD: "Standard",
    DocKind.PATENT: "Patent",
    DocKind.REPORT: "Report",
}


def endnote_name(raw: str) -> str:
    """A name as EndNote reads it: an organisation ends with a comma and doubles its own commas
    (`World Health Organization,`, `Department of Medicine,, Peking University,`), EndNote's mark
    of a corporate author; without it EndNote inverts it into `Organization, World Health`."""
    name = parse_name(raw)
    if name.literal and " " in name.family:
        return name.family.replace(",", ",,") + ","
    return raw


def endnote_entry(rec: CiteRecord) -> str:
    """Tag order and conventions of CNKI's own EndNote export: `%A` per author, `%T`,
    `%J` (journal/newspaper) or `%B` (proceedings), `%I` (school/publisher), `%9` degree,
    `%D` year, `%V`, `%N`, `%K` (keywords joined with `;`), `%X`, `%P`, `%W CNKI`."""
    kind = rec.kind
    tags: list[tuple[str, str]] = [("%0", ENDNOTE_TYPES.get(kind, "Generic"))]
    tags += [("%A", endnote_name(a)) for a in rec.authors]
    tags.append(("%T", rec.title))
    if kind in (DocKind.JOURNAL, DocKind.NEWSPAPER):
        tags.append(("%J", rec.source or ""))
    elif kind is DocKind.CONFERENCE:
        tags.append(("%B", rec.source or rec.conference or ""))
        tags.append(("%I", rec.publisher or ""))
    elif kind is DocKind.YEARBOOK:
        tags.append(("%B", rec.source or ""))
        tags.append(("%I", rec.publisher or ""))
    elif kind in _THESES:
        tags.append(("%I", rec.source or ""))
        tags.append(("%9", _thesis_label(rec)))
    else:
        tags.append(("%I", rec.publisher or rec.source or ""))
    tags.append(("%C", rec.place or ""))
    year = rec.effective_year
    tags.append(("%D", str(year) if year is not None else ""))
    parts = rec.date_parts
    if kind is DocKind.NEWSPAPER and len(parts) > 1:
        tags.append(("%8", "-".join([str(parts[0])] + [f"{p:02d}" for p in parts[1:]])))
    tags += [("%V", rec.volume or ""), ("%N", rec.issue or "")]
    tags.append(("%K", ";".join(rec.keywords)))
    tags.append(("%X", rec.abstract or ""))
    tags.append(("%P", rec.pages or ""))
    tags += [("%R", rec.doi or ""), ("%U", rec.url or ""), ("%W", "CNKI")]
    return "\n".join(f"{tag} {_one_line(v)}" for tag, v in tags if _one_line(v))


def endnote(records: list[CiteRecord]) -> str:
    return "\n\n".join(endnote_entry(r) for r in records) + ("\n" if records else "")


RENDERERS: dict[str, Callable[[list[CiteRecord]], str]] = {"bibtex": bibtex, "ris": ris, "endnote": endnote}
