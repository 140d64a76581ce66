"""The file host a download order leads to (docs/site-behaviour.md "The order URL leads to the file
host"): `bar.cnki.net/bar/download/order?id=…` answers a 302 to
`docdown.cnki.net/docdown/fulltext/download?q=…`, which sends the PDF or CAJ.

A browser that resumes a download cut short asks the file URL again, never the order: on CNKI one
click is one order however often Chromium resumes. A fault the order's rule fired for the file
(`truncated`, `html_as_pdf`) travels in the file token; each further request of the same file (a
resumption) meets the order's `truncated` rules again, as it did when the simulator sent the file
from the order URL itself (a rule with `at: [1]` cuts once and the resumption recovers)."""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import quote

from cnki_mcp.sim.scenario import FaultKind

if TYPE_CHECKING:
    from cnki_mcp.sim.corpus import SimRecord
    from cnki_mcp.sim.routes import App, Request, Response

FILE_PATH = "/docdown/fulltext/download"
ORDER_PATH = "/bar/download/order"
CARRIED = frozenset({FaultKind.TRUNCATED, FaultKind.HTML_AS_PDF})  # faults the file answer shows
_RESUMED = frozenset({FaultKind.TRUNCATED})


def carried_fault(kind: FaultKind | None) -> str:
    """What the order's fired rule asks of the file answer ("" for a whole file)."""
    return kind.value if kind in CARRIED else ""


def serve_file(app: App, req: Request, client: str) -> Response:
    """GET /docdown/fulltext/download?q=<token>: the file of the order that issued the token."""

    token = req.query.get("q", "")
    grant = app.state.tokens.lookup("file", token)
    record = app.corpus.by_id.get(grant.value) if grant else None
    if record is None or grant is None:
        return app.not_found()
    fmt, _, carried = grant.extra.partition(":")
    with app.state.lock:
        fetches = app.state.file_fetches.get(token, 0) + 1
        app.state.file_fetches[token] = fetches
    kind: FaultKind | None = FaultKind(carried) if carried else None
    if fetches > 1:  # a resumption: the connection may break again
        rule = app.state.schedule.fault_for("GET", ORDER_PATH, _RESUMED)
        kind = rule.kind if rule is not None else None
    if kind == FaultKind.TRUNCATED:
        req.truncate = True  # App.handle cuts the answer halfway
    resp = file_answer(record, fmt, kind)
    resp.params = {"id": record.id, "type": fmt, "fetch": fetches}
    return resp


def file_answer(record: SimRecord, fmt: str, kind: FaultKind | None) -> Response:
    """The file itself (an HTML page under a PDF name for `html_as_pdf`)."""
    from cnki_mcp.sim.pages import files
    from cnki_mcp.sim.routes import Response

    disposition = [("Content-Disposition", attachment(record, fmt))]
    if kind == FaultKind.HTML_AS_PDF:
        return Response(200, files.render_html_as_pdf(record), "application/pdf", disposition, fault=kind.value)
    if fmt == "caj":
        return Response(200, files.caj_bytes(record), "application/octet-stream", disposition)
    return Response(200, files.pdf_bytes(record), "application/pdf", disposition)


def attachment(record: SimRecord, fmt: str) -> str:
    name = f"{record.title}.{fmt}"
    ascii_name = f"{record.native_filename}.{fmt}"
    return f"attachment; filename=\"{ascii_name}\"; filename*=UTF-8''{quote(name)}"
