"""What `download_paper` returns, and its wait bounds, without the Playwright downloader: the MCP
tool module imports this at server start (docs/benchmarks.md §Start-up)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel

from cnki_mcp.files import FileFormat

DEFAULT_WAIT_SECONDS = 120
MAX_WAIT_SECONDS = 900

class DownloadResult(BaseModel):
    state: Literal["completed"] = "completed"
    record_ref: str
    format: FileFormat
    path: str
    bytes: int
    sha256: str
    source: Literal["download", "cache"]
    reconciled: bool = False  # a file of an earlier uncertain click, found on this call
    # source=cache under a new filename/subdirectory: the downloaded file this copy was made from
    copied_from: str | None = None
    observed_at: datetime
