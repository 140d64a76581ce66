"""A file object whose writes the disk refuses (ENOSPC): wrap a real file with it (for example in
place of `os.fdopen`) to see what a writer does on a full disk."""

from __future__ import annotations

import errno


class FullDisk:
    """A file whose writes fail as on a full disk, closing the real one it wraps."""

    def __init__(self, inner: object) -> None:
        self.inner = inner

    def __enter__(self) -> FullDisk:
        return self

    def __exit__(self, *exc: object) -> None:
        self.inner.close()  # type: ignore[attr-defined]

    def fileno(self) -> int:
        return self.inner.fileno()  # type: ignore[attr-defined,no-any-return]

    def write(self, data: bytes) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")
