"""`cnki-mcp parse {grid,detail,journal,reader,gate} FILE`: parse a saved CNKI page and print JSON.

`survey_page` / `survey_folder` (used by `cnki-mcp doctor --pages DIR`) detect each saved page's
kind, run its parser and report which fields it read, so a page saved from the live site shows at
once whether the site changed.

FILE `-` reads stdin. Bytes are decoded as UTF-8, falling back to GB18030 (a GBK superset) when
that fails, unless `--encoding` is given. A `CnkiError` propagates: main prints `错误 CODE: …`."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cnki_mcp.errors import InvalidInput

KINDS = ("grid", "detail", "journal", "reader", "gate")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("kind", choices=KINDS, help="页面类型 / page type")
    parser.add_argument("file", help="保存的 HTML 文件，- 表示标准输入 / saved HTML file, - for stdin")
    parser.add_argument("--url", default=None, help="页面原始地址，用于解析相对链接 / the page URL")
    parser.add_argument(
        "--encoding",
        type=text_encoding,
        default=None,
        help="强制编码（默认 UTF-8，失败时 GBK）/ force an encoding (default UTF-8, else GBK)",
    )
    parser.add_argument(
        "--expect",
        default=None,
        help="journal: 期望的来源名称；reader: 期望的题名 / expected source (journal) or title (reader)",
    )
    parser.add_argument("--status", type=int, default=None, help="gate: HTTP 状态码 / HTTP status")


def text_encoding(name: str) -> str:
    """argparse type: a text encoding Python knows (`gbk`, `big5`, ...). An unknown name, or a
    bytes-to-bytes codec such as `base64`, ended `parse` in a LookupError traceback (exit 1)."""
    import codecs

    try:
        info = codecs.lookup(name)
    except LookupError:
        raise argparse.ArgumentTypeError(f"未知的编码：{name}") from None
    if not getattr(info, "_is_text_encoding", True):
        raise argparse.ArgumentTypeError(f"不是文本编码：{name}")
    return name


def decode(data: bytes, encoding: str | None = None) -> str:
    """UTF-8 (BOM tolerated), else GB18030; an explicit encoding wins."""
    if encoding:
        return data.decode(encoding, errors="replace")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("gb18030", errors="replace")


def read_input(file: str, encoding: str | None = None) -> str:
    """The page's text from `file` ("-": standard input); INVALID_ARGUMENT when it cannot be read."""
    try:
        data = sys.stdin.buffer.read() if file == "-" else Path(file).read_bytes()
    except OSError as exc:
        raise InvalidInput(f"无法读取 {file}：{exc.strerror or exc}", field="file") from exc
    return decode(data, encoding)


def parse_kind(kind: str, html: str, url: str | None, expect: str | None, status: int | None) -> Any:
    """Run one parser; detail/journal/reader are imported lazily (they live in their own modules)."""
    if kind == "grid":
        from cnki_mcp.parse.grid import parse_grid

        return parse_grid(html, url)
    if kind == "detail":
        from cnki_mcp.parse.detail import parse_detail

        return parse_detail(html, url)
    if kind == "journal":
        from cnki_mcp.parse.journal import parse_journal

        return parse_journal(html, url, expected_source=expect)
    if kind == "reader":
        from cnki_mcp.parse.reader import parse_reader

        return parse_reader(html, url, expected_title=expect)
    from cnki_mcp.parse.gate import classify_page, read_header_identity

    return {
        "verdict": classify_page(html, url, status).model_dump(mode="json"),
        "identity": read_header_identity(html).model_dump(mode="json"),
    }


# which kinds use --expect and --status; given to another kind they were silently ignored, and
# `parse detail F --expect 题名` looked like a title check that had passed
EXPECT_KINDS = ("journal", "reader")
STATUS_KINDS = ("gate",)


def check_options(kind: str, expect: str | None, status: int | None) -> None:
    """INVALID_ARGUMENT for an option the page type does not use."""
    if expect is not None and kind not in EXPECT_KINDS:
        raise InvalidInput(f"--expect 只用于 {' / '.join(EXPECT_KINDS)}，不用于 {kind}", field="expect")
    if status is not None and kind not in STATUS_KINDS:
        raise InvalidInput(f"--status 只用于 {' / '.join(STATUS_KINDS)}，不用于 {kind}", field="status")


def run(args: argparse.Namespace) -> int:
    check_options(args.kind, args.expect, args.status)
    html = read_input(args.file, args.encoding)
    result = parse_kind(args.kind, html, args.url, args.expect, args.status)
    payload = result.model_dump(mode="json") if hasattr(result, "model_dump") else result
    print(json.dumps(payload, ensure_ascii=False, indent=2))
    return 0


# --- survey: which fields each parser reads from saved pages (`doctor --pages DIR`) ----------

# Markers that say which parser a saved page is for (checked in this order).
_KIND_MARKERS = (
    ("grid", "table.result-table-list, table.GridTableContent, p.no-content, .pagerTitleCell"),
    ("journal", "h3.titbox, .journalInfo .infobox, p.journalType2, #JournalBaseInfo"),
    ("journal-list", "dl.result, #searchResult"),
    ("detail", ".wx-tit, .wxTitle, #ChDivSummary, #catalog_ABSTRACT, .summary #ChDivKeyWord"),
    ("reader", "#XMLContent, .reader-content, .html-content"),
)
PAGE_SUFFIXES = (".html", ".htm", ".mhtml", ".txt", "")


@dataclass(frozen=True, slots=True)
class PageSurvey:
    """What the parsers made of one saved page."""

    file: str
    kind: str  # grid / detail / journal / journal-list / reader / gate (unreadable: not read)
    ok: bool
    error: str | None = None  # the error code when the parser refused the page
    items: int | None = None  # rows (grid) or journals (journal-list)
    read: dict[str, int] = field(default_factory=dict)  # field -> how many items carry it
    empty: list[str] = field(default_factory=list)  # fields no item carries


def _filled(value: Any) -> bool:
    if value is None or value is False or value == "" or value == [] or value == {}:
        return False
    if isinstance(value, dict):
        return any(_filled(v) for v in value.values())
    return True


def _coverage(items: list[dict[str, Any]], skip: tuple[str, ...] = ()) -> tuple[dict[str, int], list[str]]:
    keys = [k for k in (items[0] if items else {}) if k not in skip]
    read = {k: sum(1 for it in items if _filled(it.get(k))) for k in keys}
    return {k: n for k, n in read.items() if n}, [k for k, n in read.items() if not n]


def detect_kind(html: str) -> str:
    from cnki_mcp.parse._html import parse_html

    tree = parse_html(html)
    for kind, selector in _KIND_MARKERS:
        if tree.css_first(selector) is not None:
            return kind
    return "gate"


def survey_page(html: str, name: str, url: str | None = None) -> PageSurvey:
    """Detect the page kind, run its parser and list the fields it read (never raises CnkiError)."""
    from cnki_mcp.errors import CnkiError

    kind = detect_kind(html)
    try:
        if kind == "grid":
            from cnki_mcp.parse.grid import parse_grid

            page = parse_grid(html, url)
            rows = [r.model_dump(mode="json") for r in page.rows]
            read, empty = _coverage(rows)
            head = page.model_dump(mode="json", include={"total", "page", "page_count", "zero_results"})
            read.update({k: 1 for k, v in head.items() if _filled(v)})
            return PageSurvey(name, kind, True, items=len(rows), read=read, empty=empty)
        if kind == "journal-list":
            from cnki_mcp.parse.journal import parse_journal_search

            journals = [j.model_dump(mode="json") for j in parse_journal_search(html, url)]
            read, empty = _coverage(journals, skip=("identity_basis", "state"))
            return PageSurvey(name, kind, True, items=len(journals), read=read, empty=empty)
        if kind in ("detail", "journal", "reader"):
            result = parse_kind(kind, html, url, None, None)
            read, empty = _coverage([result.model_dump(mode="json")], skip=("identity_basis", "state"))
            return PageSurvey(name, kind, True, read=read, empty=empty)
        verdict = parse_kind("gate", html, url, None, None)
        read = {"verdict:" + verdict["verdict"]["kind"]: 1}
        read.update({f"identity.{k}": 1 for k, v in verdict["identity"].items() if _filled(v) and v != "not_observed"})
        return PageSurvey(name, kind, True, read=read)
    except CnkiError as exc:
        return PageSurvey(name, kind, False, error=exc.code)


def survey_folder(folder: Path, encoding: str | None = None) -> list[PageSurvey]:
    """Every saved page under `folder` (recursively; .html/.htm/.txt or no suffix), by name."""
    files = sorted(
        p for p in folder.rglob("*") if p.is_file() and p.suffix.lower() in PAGE_SUFFIXES and not p.name.startswith(".")
    )
    return [_survey_file(p, str(p.relative_to(folder)), encoding) for p in files]


def _survey_file(path: Path, name: str, encoding: str | None) -> PageSurvey:
    """One page's survey; a file that cannot be read (no permission, an I/O error) is a FAIL line
    of its own, not a traceback that ends the survey of the whole folder."""
    try:
        data = path.read_bytes()
    except OSError:
        return PageSurvey(name, "unreadable", False, error=InvalidInput.code)
    return survey_page(decode(data, encoding), name)


def format_survey(report: PageSurvey) -> str:
    """Two or three lines per page: verdict, the fields read (with counts for lists), the empty ones."""
    status = "OK  " if report.ok else "FAIL"
    head = f"{status}  {report.file}  [{report.kind}]"
    if report.items is not None:
        head += f"  {report.items} 条"
    if not report.ok:
        return f"{head}  错误 {report.error}"

    def show(k: str, n: int) -> str:
        return f"{k} {n}/{report.items}" if report.items is not None and n > 1 else k

    lines = [head, "      读到 / read: " + (", ".join(show(k, n) for k, n in report.read.items()) or "—")]
    if report.empty:
        lines.append("      为空 / empty: " + ", ".join(report.empty))
    if report.kind == "gate" and "verdict:clear" in report.read:
        lines.append("      " + UNRECOGNISED_NOTE)
    return "\n".join(lines)


# A page no content parser claims and no gate explains: a home or export page has nothing to read,
# but a result list, detail, journal or reader page surveyed so has a layout the parsers no longer
# know (the exit code stays 0: the survey cannot tell which the person saved).
UNRECOGNISED_NOTE = (
    "没有解析器认出这个页面：若它是检索结果、详情、期刊或阅读页，说明知网改版了 / "
    "no parser recognised this page: a result, detail, journal or reader page here means CNKI changed its layout"
)
