"""Personal names: Chinese vs Latin script, family/given split, initials, pinyin.

Conventions (shared by every format):
- A name containing Han characters is Chinese: the family name is a known compound
  surname (欧阳, 司马 ...) or else the first character; it is always written whole.
- `"Smith, John"` is family, given. `"John Smith"` is given-first (last word = family).
- A single Latin word is kept as a literal (an organisation or a mononym), and so is a Latin
  name that is an organisation (`World Health Organization`, `GBD 2019 … Collaborators`,
  `Department of Medicine, Peking University`): a word of `ORGANISATION_WORDS`, or `and` / `&`.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass

from cnki_mcp.script import simplified

from .model import HAN

COMPOUND_SURNAMES: frozenset[str] = frozenset({
    "欧阳", "司马", "诸葛", "上官", "东方", "皇甫", "尉迟", "公孙", "慕容", "令狐", "长孙", "宇文",
    "司徒", "夏侯", "轩辕", "端木", "独孤", "南宫", "西门", "百里", "呼延", "万俟", "澹台", "公羊",
    "申屠", "太史", "闻人", "东郭", "钟离", "宗政", "濮阳", "淳于", "单于", "太叔", "仲孙", "鲜于",
})

# Heteronym surnames whose reading as a surname differs from the common reading.
_SURNAME_PINYIN: dict[str, str] = {
    "单": "shan", "解": "xie", "曾": "zeng", "仇": "qiu", "区": "ou", "查": "zha", "朴": "piao",
    "盖": "ge", "缪": "miao", "翟": "zhai", "尉迟": "yuchi", "万俟": "moqi", "单于": "chanyu",
    "乐": "yue", "覃": "qin", "种": "chong", "召": "shao", "长孙": "zhangsun", "藏": "zang",
}


@dataclass(frozen=True, slots=True)
class Name:
    family: str
    given: str = ""
    cjk: bool = False
    literal: bool = False

    @property
    def full(self) -> str:
        """As written in Chinese order (CJK) or `Given Family` (Latin)."""
        if self.cjk or self.literal:
            return self.family + self.given
        return f"{self.given} {self.family}".strip()

    @property
    def static(self) -> str:
        """Family first, no comma: 张三, `Li Wei`."""
        if self.cjk or self.literal:
            return self.family + self.given
        return f"{self.family} {self.given}".strip()

    @property
    def inverted(self) -> str:
        """`Smith, John` (CJK names unchanged)."""
        if self.cjk or self.literal or not self.given:
            return self.static
        return f"{self.family}, {self.given}"

    def initials(self, sep: str, *, with_period: bool) -> str:
        """Initials of the given names: `Christopher D.` -> `C. D.` / `CD` / `C D`."""
        out: list[str] = []
        for part in self.given.replace(".", ". ").split():
            pieces = [p for p in part.split("-") if p]
            inits = [p[0].upper() + ("." if with_period else "") for p in pieces if p[0].isalpha()]
            if inits:
                out.append(("-" if with_period else "").join(inits))
        return sep.join(out)


# Words that make a Latin-script author an organisation (CNKI's foreign papers list group
# authors): no personal name has them as a word, and none has `and` or `&` between words.
ORGANISATION_WORDS: frozenset[str] = frozenset({
    "academy", "administration", "agency", "alliance", "association", "authority", "bureau",
    "center", "centre", "collaboration", "collaborative", "collaborators", "college", "commission",
    "committee", "company", "consortium", "corporation", "council", "department", "federation",
    "foundation", "group", "hospital", "inc", "initiative", "institute", "institution",
    "investigators", "laboratory", "ltd", "ministry", "network", "office", "organisation",
    "organization", "programme", "project", "school", "society", "team", "university",
})


# lowercase words a family name may hold (`Van Der Berg`, `de la Cruz`); `of`, `for`, `the` are
# an organisation's (`Ministry of Health, China`)
_PARTICLES = frozenset({
    "al", "bin", "da", "das", "de", "del", "della", "den", "der", "di", "do", "dos", "du", "el", "ibn",
    "la", "le", "ten", "ter", "van", "von", "y", "zu",
})  # fmt: skip
_WORD = re.compile(r"[^\W\d_]+(?:['’-][^\W\d_]+)*")


def _initials(token: str) -> bool:
    """`J.`, `J.-P.`, `JP`, `J.P.`: at most three capitals, with dots or hyphens."""
    letters = re.sub(r"[.\-]", "", token)
    return bool(re.fullmatch(r"[^\W\d_.\-]+[.\-]*(?:[^\W\d_.\-]+[.\-]*)*", token)) and (
        0 < len(letters) <= 3 and letters.isupper()
    )


def _given_name(token: str) -> bool:
    return (
        bool(_WORD.fullmatch(token.rstrip(".")))
        and token[0].isupper()
        and token.rstrip(".").lower() not in ORGANISATION_WORDS | {"and", "of"}
    )


def person_inverted(name: str) -> bool:
    """`Family, Given` naming a person: one comma; a family name of at most four words,
    capitalised or particles; given names or initials after it (`Bureau, Jean`, `Hospital, Pedro`,
    `O'Neil-Center, Mary`, `Van Der Berg, A.`), none of them an organisation word. The family
    part alone may hold one: surnames such as Bureau, Hospital or Center are real."""
    if name.count(",") != 1 or "&" in name:
        return False
    family, given = (part.split() for part in name.split(","))
    if not 1 <= len(family) <= 4 or not 1 <= len(given) <= 3:
        return False
    if not all(_WORD.fullmatch(w) and (w[0].isupper() or w in _PARTICLES) for w in family):
        return False
    return family[-1][0].isupper() and all(_initials(t) or _given_name(t) for t in given)


def joined_persons(name: str) -> list[str]:
    """`Smith, J. and Jones, K.` (an author list written as one author): the persons it joins,
    each in `Family, Given` form; [name] when it is not such a list."""
    parts = [p.strip() for p in re.split(r"\s*(?:,\s*)?(?:\band\b|&)\s*", name) if p.strip()]
    if len(parts) >= 2 and all(person_inverted(p) for p in parts):
        return parts
    return [name]


def is_organisation(name: str) -> bool:
    """A Latin-script author of several words that names an organisation, not a person. A
    person written `Family, Given` never is (`person_inverted`), nor persons joined by and/&."""
    words = re.findall(r"[^\W\d_]+", name)
    if len(words) < 2 or person_inverted(name) or len(joined_persons(name)) > 1:
        return False
    return "&" in name or any(w.lower() == "and" or w.lower() in ORGANISATION_WORDS for w in words)


_CAPITALS = re.compile(r"[A-Z]+(?:[-'][A-Z]+)*")


def _capital_family(word: str) -> bool:
    """A family name in capitals: two letters or more with a vowel (`LI`, `XUE`, `O'NEIL`);
    `MJ` is initials."""
    letters = re.sub(r"[^A-Z]", "", word)
    return bool(_CAPITALS.fullmatch(word)) and len(letters) >= 2 and bool(re.search(r"[AEIOUY]", letters))


def parse_name(raw: str) -> Name:
    name = re.sub(r"\s+", " ", raw).strip()
    if HAN.search(name):
        compact = name.replace(" ", "").replace("·", "·")
        fam = compact[:2] if compact[:2] in COMPOUND_SURNAMES else compact[:1]
        return Name(fam, compact[len(fam):], cjk=True)
    if is_organisation(name):
        return Name(name, literal=True)
    if "," in name:
        fam, given = (p.strip() for p in name.split(",", 1))
        if fam and given:
            return Name(fam, given)
        return Name(fam or given, literal=True)
    parts = name.split(" ")
    if len(parts) == 1:
        return Name(name, literal=True)
    # CNKI prints a Latin name given-first (`Yi-feng Wang`) or marks the family name in capitals,
    # wherever it stands (`Chengpeng XUE`, `GARDNER Leroy`; docs/citations.md)
    capitals = [i for i, p in enumerate(parts) if _capital_family(p)]
    if len(capitals) == 1 and len(parts) > 1:
        i = capitals[0]
        # the capitals only mark it: `XUE` is the family name Xue (GB/T writes it in capitals anyway)
        family = re.sub(r"[A-Z]+", lambda m: m.group().capitalize(), parts[i])
        return Name(family, " ".join(parts[:i] + parts[i + 1 :]))
    if re.fullmatch(r"[A-Z]\.?", parts[-1]) and not any(re.fullmatch(r"[A-Z]\.?", p) for p in parts[:-1]):
        # `Smith J`, `Xia L.`: family name, then an initial (no family name is one letter)
        return Name(" ".join(parts[:-1]), parts[-1])
    return Name(parts[-1], " ".join(parts[:-1]))


def parse_names(raw: list[str]) -> list[Name]:
    return [parse_name(a) for a in raw if a.strip()]


def is_cjk_text(text: str) -> bool:
    return bool(HAN.search(text))


def ascii_fold(text: str) -> str:
    """`Schütze` -> `Schutze`; drops anything not ASCII letters/digits."""
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    return re.sub(r"[^A-Za-z0-9]", "", folded)


def pinyin(text: str) -> str:
    """Toneless pinyin of a name, no separators: 张 -> zhang, 欧阳 -> ouyang, a surname read as
    one (曾 -> zeng, 单 -> shan)."""
    if text in _SURNAME_PINYIN:
        return _SURNAME_PINYIN[text]
    return plain_pinyin(text)


def plain_pinyin(text: str) -> str:
    """Toneless pinyin of any text, no separators, characters without a reading left out
    (法学研究（哲学社会科学版） -> faxueyanjiuzhexueshehuikexueban, 绿 -> lv)."""
    # pypinyin loads its phrase dictionary (~0.5 s) on import: only when a text needs it.
    from pypinyin import Style, lazy_pinyin

    return "".join(lazy_pinyin(text, style=Style.NORMAL, errors="ignore"))


@functools.cache
def _syllables() -> frozenset[str]:
    """Every toneless pinyin syllable (`zhuang`, `lv` ...)."""
    from pypinyin.contrib.tone_convert import to_normal
    from pypinyin.pinyin_dict import pinyin_dict

    toned = {p for v in pinyin_dict.values() for p in v.split(",")}
    return frozenset(to_normal(p) for p in toned)


def _syllable_count(word: str) -> int | None:
    """How many pinyin syllables spell `word` (fewest), None when it is not pinyin."""
    best: list[int | None] = [0] + [None] * len(word)
    for end in range(1, len(word) + 1):
        counts = [
            c + 1
            for start in range(max(0, end - 6), end)
            if (c := best[start]) is not None and word[start:end] in _syllables()
        ]
        best[end] = min(counts) if counts else None
    return best[-1]


_EDITION = re.compile(r"[(（][^)）]*[)）]")


def spelt_in_pinyin(latin: str, han: str) -> bool | None:
    """Is a Latin-script name (a journal's) the pinyin of a Han one? `Faxue Yanjiu` is
    法学研究 (True) and not 法商研究 (False); None when the Latin text is not pinyin at all
    (`Studies in Law and Business`, an English title no table translates) or too short to tell
    (one word: `Nature` reads na-tu-re). An edition in brackets may be left out on either side."""
    if not HAN.search(han) or HAN.search(latin):
        return None
    mine = {ascii_fold(latin).lower(), ascii_fold(_EDITION.sub("", latin)).lower()}
    theirs = {plain_pinyin(han), plain_pinyin(_EDITION.sub("", han))}  # a title, not a surname
    if mine & theirs or mine & {t.replace("v", "u") for t in theirs}:
        return True
    words = _latin_words(_EDITION.sub("", latin))
    counts = [_syllable_count(w) for w in words]
    if len(words) < 2 or any(c is None for c in counts) or sum(c or 0 for c in counts) < 3:
        return None
    return False


def key_family(name: str) -> str:
    """The family name as ASCII for citation keys: pinyin for Chinese names."""
    parsed = parse_name(name)
    if parsed.cjk:
        return pinyin(parsed.family)
    return ascii_fold(parsed.family).lower()


def _latin_words(text: str) -> list[str]:
    return [w for w in (ascii_fold(p).lower() for p in re.split(r"[\s.\-‐]+", text)) if w]


def _readings(raw: str, *, entry: bool) -> list[tuple[str, list[str]]]:
    """(family, given words) readings of a Latin-script name as written.

    `Family, Given` has one reading. Without a comma the order is unknown (GB/T and Vancouver
    write `SMITH J`, MLA's later names `John Smith`, CNKI pinyin `Chen Jie`): every split into
    a leading or trailing family part is a reading. In an entry, a short all-capitals word after
    the family part (`SMITH JD`, `KIM MJ`) may be run-together initials."""
    name = unicodedata.normalize("NFKC", raw).strip()
    if "," in name:
        fam, given = name.split(",", 1)
        splits = [(_latin_words(fam), given)]
    else:
        words = name.split()
        splits = [(_latin_words(" ".join(words[:k])), " ".join(words[k:])) for k in range(1, len(words) + 1)]
        splits += [(_latin_words(" ".join(words[k:])), " ".join(words[:k])) for k in range(1, len(words))]
    out: list[tuple[str, list[str]]] = []
    for fam_words, given in splits:
        if not fam_words:
            continue
        given_words = _latin_words(given)
        out.append(("".join(fam_words), given_words))
        if entry:
            letters: list[str] = []
            for word in re.split(r"[\s.\-‐]+", given):
                if word.isupper() and len(word) <= 3:
                    letters.extend(ch.lower() for ch in word)
                elif word:
                    letters.append(ascii_fold(word).lower())
            if letters != given_words:
                out.append(("".join(fam_words), letters))
    return out


def _given_agree(mine: list[str], theirs: list[str]) -> bool:
    """Given names agree word by word, an initial agreeing with any name it begins; a side
    that gives fewer words (initials of the first name only) is not held against it."""
    for a, b in zip(mine, theirs, strict=False):
        if len(a) == 1 or len(b) == 1:
            if a[0] != b[0]:
                return False
        elif a != b:
            return False
    return True


def _syllable_spellings(syllable: str) -> set[str]:
    """ü is written v by pypinyin, u with the accent dropped (Lü, Lu) and yu officially (Lyu)."""
    return {syllable, syllable.replace("v", "u"), syllable.replace("v", "yu")} if "v" in syllable else {syllable}


def _readings_of(han: str) -> list[set[str]]:
    """Every toneless reading of each Han character (重 is zhong or chong, 乐 le or yue)."""
    from pypinyin import Style
    from pypinyin import pinyin as heteronyms

    out: list[set[str]] = []
    for ch in han:
        if not HAN.match(ch):
            continue
        readings = heteronyms(ch, style=Style.NORMAL, heteronym=True, errors="ignore")
        spellings: set[str] = set()
        for reading in readings[0] if readings else []:
            spellings |= _syllable_spellings(reading)
        if spellings:
            out.append(spellings)
    return out


def _han_name(name: str) -> tuple[set[str], list[set[str]]] | None:
    """The family name's pinyin spellings and each given-name character's spellings of a Han
    name, as an English-language list romanises it; traditional characters read as simplified."""
    parsed = parse_name(simplified(unicodedata.normalize("NFKC", name)))
    per_char = _readings_of(parsed.family)
    if not per_char:
        return None
    families = {""}
    for spellings in per_char:
        families = {f + s for f in families for s in spellings}
    if parsed.family in _SURNAME_PINYIN:
        families |= _syllable_spellings(_SURNAME_PINYIN[parsed.family])
    return families, _readings_of(parsed.given)


def _pinyin_given_agrees(words: list[str], syllables: list[set[str]]) -> bool:
    """Latin given-name words romanise a Han given name syllable by syllable: every character
    is spelt in full (`Yuxin`, `Yu-xin`, `Yu Xin` for 雨欣) or by its initial (`Y X`), in order
    and none left over; or one initial stands for the whole given name, as APA writes it
    (`Jiang, Y.` for 姜雨欣). A shorter given name (`Jiang Yu`, `Zhang W H` for 张伟明) is
    a different person."""
    if not words or not syllables:
        return not words and not syllables
    if len(words) == 1 and len(words[0]) == 1 and any(s[0] == words[0] for s in syllables[0]):
        return True

    def spelt(word: str, k: int) -> list[int]:
        """Where the syllables `word` spells in full, from syllable k on, can end."""
        if not word:
            return [k]
        if k == len(syllables):
            return []
        return [j for s in syllables[k] if word.startswith(s) for j in spelt(word[len(s) :], k + 1)]

    def fits(w: int, k: int) -> bool:
        if w == len(words):
            return k == len(syllables)
        word = words[w]
        if len(word) == 1:
            return k < len(syllables) and any(s[0] == word for s in syllables[k]) and fits(w + 1, k + 1)
        return any(j > k and fits(w + 1, j) for j in spelt(word, k))

    return fits(0, 0)


# GB/T 7714-2015 §8.1.1 and Chinese lists put a translated author's country, or an old author's
# dynasty, in brackets before the name (`[美]波斯纳`, `（英）哈特`, `〔清〕纪昀`): not part of the name.
_ORIGIN_MARK = re.compile(r"^\s*[\[［(（〔【]\s*[\u4e00-\u9fff]{1,3}\s*[\]］)）〕】]\s*")


def without_origin(name: str) -> str:
    """A name without the bracketed country or dynasty before it (`[美]波斯纳` -> `波斯纳`)."""
    return _ORIGIN_MARK.sub("", name)


def names_agree(entry: str, record: str) -> bool:
    """Does a name as a reference writes it denote the record's name?

    Han names must be equal (spaces and dots aside, in simplified characters: 謝國思 is 谢国思).
    Latin-script names agree on the same family name with compatible given names: `Tanaka, Y.`,
    `TANAKA Y`, `Tanaka Y` and `Yuki Tanaka` all name `Tanaka, Yuki`; pinyin `CHEN J` names
    `Chen Jie`. A Han name and a Latin one agree when the Latin one is the Han name's pinyin
    (`Jiang Yuxin`, `JIANG Y X` and `Jiang, Y.` name 姜雨欣; 周静 names `Jing ZHOU`): an
    English-language list romanises the Chinese authors of a Chinese paper. Every given-name
    character must be spelt or initialled (`Jiang Yu`, `Jiang, Y. T.` do not name 姜雨欣)."""
    entry, record = without_origin(entry), without_origin(record)
    han_entry, han_record = bool(HAN.search(entry)), bool(HAN.search(record))
    if han_entry and han_record:

        def fold(s: str) -> str:
            return re.sub(r"[\s.,·・•‧∙⋅\-]+", "", simplified(unicodedata.normalize("NFKC", s))).lower()

        return fold(entry) == fold(record)
    if not han_entry and not han_record:
        return any(
            fam == their_fam and _given_agree(given, their_given)
            for fam, given in _readings(entry, entry=True)
            for their_fam, their_given in _readings(record, entry=False)
        )
    han = _han_name(entry if han_entry else record)
    if han is None:
        return False
    families, syllables = han
    latin = _readings(record, entry=False) if han_entry else _readings(entry, entry=True)
    return any(fam in families and _pinyin_given_agrees(given, syllables) for fam, given in latin)
