"""Sub/superscripts and MathML as plain text, so a reader's `10<sup>-3</sup>` does not read `10-3`.

* `<sup>`/`<sub>` whose text has Unicode script forms become them (`x²`, `10⁻³`, `H₂O`, `Vₙ₊₁`),
  otherwise `^(…)`/`_(…)` (`P_(实际)`); a one-character text needs no parentheses (`x^a`).
* A superscript that is a reference marker stays a marker: `[1,2]` as written; bare digits after
  a character that is not a letter or digit (`如此<sup>3</sup>`) read `[3]`; `*`, `†`, `‡` (significance
  or note marks) and circled note numbers (`①`, `⑴`, `❶`) stay as written.
* MathML: its TeX annotation when it has one, else its `alttext`, else the tree linearised:
  `msup` `x^2`, `msub` `x_i`, `mfrac` `(a+b)/(c+d)`, `msqrt` `√(x)`, `munderover` `∑_(i=1)^(n)`.

Pure; no I/O."""

from __future__ import annotations

import re

from selectolax.lexbor import LexborNode

_SUP = str.maketrans("0123456789+-−=()ni", "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁻⁼⁽⁾ⁿⁱ")
_SUB = str.maketrans("0123456789+-−=()aehijklmnoprstuvx", "₀₁₂₃₄₅₆₇₈₉₊₋₋₌₍₎ₐₑₕᵢⱼₖₗₘₙₒₚᵣₛₜᵤᵥₓ")
_SUP_CHARS = frozenset("0123456789+-−=()ni")
_SUB_CHARS = frozenset("0123456789+-−=()aehijklmnoprstuvx")
_MARKER = re.compile(r"\[\s*\d+(?:\s*[-–—~,，、]\s*\d+)*\s*\]")
_BARE_MARKER = re.compile(r"\d+(?:\s*[-–—~,，、]\s*\d+)*")
# significance/note marks and circled note numbers (①, ⑴, ⒈, ❶, ㉑), as Chinese papers mark notes
_NOTE_MARKS = re.compile(r"[*†‡§#\u2460-\u24ff\u2776-\u2793\u3251-\u325f\u32b1-\u32bf]+")
_TEX = ("application/x-tex", "tex", "latex", "application/x-latex")


def _group(text: str) -> str:
    """`text` as one operand: itself when it is one character or one bracketed group (`(a+b)`,
    not `(a)+(b)`), else in parentheses."""
    if len(text) <= 1 or _one_group(text):
        return text
    return f"({text})"


def _one_group(text: str) -> bool:
    """Whether `text` is a single bracket pair around everything in it."""
    pairs = {"(": ")", "[": "]", "{": "}"}
    close = pairs.get(text[0])
    if close is None or text[-1] != close:
        return False
    depth = 0
    for i, ch in enumerate(text):
        depth += (ch == text[0]) - (ch == close)
        if depth == 0 and i < len(text) - 1:
            return False
    return depth == 0


def _operand_end(ch: str) -> bool:
    """Whether a superscript after `ch` is an exponent (x², 10⁻³, (a+b)²), not a note marker:
    Latin, Greek or Cyrillic letters, digits and closing brackets end an operand; a Chinese
    character or punctuation does not (如此<sup>3</sup> is note 3)."""
    return (ch.isalnum() and ord(ch) < 0x0530) or ch in ")]}）"


def script(text: str, kind: str, before: str = "") -> str:
    """The text of a `sup` (kind "sup") or `sub` element; `before` is the text just before it."""
    text = " ".join(text.split())
    if not text:
        return ""
    if kind == "sup":
        if _MARKER.fullmatch(text) or _NOTE_MARKS.fullmatch(text):
            return text
        prev = before.rstrip()[-1:]
        if _BARE_MARKER.fullmatch(text) and prev and not _operand_end(prev):
            return f"[{text.replace(' ', '')}]"
        return _sup_of(text)
    return _sub_of(text)


def _kids(node: LexborNode) -> list[LexborNode]:
    return [c for c in node.iter() if c.tag not in ("-text", "-comment", None)]


def _linear(node: LexborNode) -> str:
    tag = (node.tag or "").lower()
    kids = _kids(node)
    if tag in ("mi", "mn", "mo", "mtext", "ms", "mglyph"):
        return " ".join((node.text(deep=True) or "").split())
    if tag in ("annotation", "annotation-xml", "mphantom", "none", "mprescripts"):
        return ""
    if tag == "semantics":
        return _linear(kids[0]) if kids else ""
    parts = [_linear(k) for k in kids]
    if tag == "msup" and len(parts) >= 2:
        return parts[0] + _sup_of(parts[1])
    if tag == "msub" and len(parts) >= 2:
        return parts[0] + _sub_of(parts[1])
    if tag == "msubsup" and len(parts) >= 3:
        return parts[0] + _sub_of(parts[1]) + _sup_of(parts[2])
    if tag == "munder" and len(parts) >= 2:
        return parts[0] + "_" + _group(parts[1])
    if tag == "mover" and len(parts) >= 2:
        return parts[0] + "^" + _group(parts[1])
    if tag == "munderover" and len(parts) >= 3:
        return parts[0] + "_" + _group(parts[1]) + "^" + _group(parts[2])
    if tag == "mfrac" and len(parts) >= 2:
        return _group(parts[0]) + "/" + _group(parts[1])
    if tag == "msqrt":
        return "√" + _group("".join(parts))
    if tag == "mroot" and len(parts) >= 2:
        return "√[" + parts[1] + "]" + _group(parts[0])
    if tag == "mfenced":
        attrs = node.attributes
        sep = attrs.get("separators")
        return (attrs.get("open") or "(") + (sep[0] if sep else ",").join(parts) + (attrs.get("close") or ")")
    if tag == "mtr":
        return ", ".join(p for p in parts if p)
    if tag == "mtable":
        return "[" + "; ".join(p for p in parts if p) + "]"
    return "".join(parts)


def _sup_of(text: str) -> str:
    return text.translate(_SUP) if text and set(text) <= _SUP_CHARS else "^" + _group(text)


def _sub_of(text: str) -> str:
    return text.translate(_SUB) if text and set(text) <= _SUB_CHARS else "_" + _group(text)


def math_text(node: LexborNode) -> str:
    """A MathML `<math>` element as one line of text (see the module notes)."""
    for ann in node.css("annotation"):
        if (ann.attributes.get("encoding") or "").lower() in _TEX:
            tex = " ".join((ann.text(deep=True) or "").split())
            if tex:
                return f"${tex}$"
    alt = " ".join((node.attributes.get("alttext") or "").split())
    if alt:
        return alt
    return _linear(node)
