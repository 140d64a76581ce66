"""The word segmenter the server uses (DESIGN.md §Modules, `query/segment.py`): jieba's dictionary,
loaded on the first cut and never at import, and its warm-up in a worker thread after the handshake.

Its log lines go to the logger of `query/segment.py`, where it was defined first."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any, TypeGuard

_LOG = logging.getLogger("cnki_mcp.query.segment")


class JiebaSegmenter:
    """jieba's dictionary segmenter, loaded on the first call (never at import), HMM off.

    The prefix dictionary is built in memory from the dictionary jieba ships; jieba's own cache
    file in the temporary directory is neither read nor written."""

    def __init__(self) -> None:
        self._tokenizer: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._tokenizer is None:
                import jieba

                logging.getLogger("jieba").setLevel(logging.WARNING)
                tokenizer = jieba.Tokenizer()
                with tokenizer.get_dict_file() as f:
                    tokenizer.FREQ, tokenizer.total = tokenizer.gen_pfdict(f)
                tokenizer.initialized = True
                self._tokenizer = tokenizer
            return self._tokenizer

    @property
    def loaded(self) -> bool:
        return self._tokenizer is not None

    def warm(self) -> None:
        """Load the dictionary now (about 1.4 s of CPU; meant for a worker thread). A cut that
        comes while it loads waits for it (the lock) instead of loading it a second time."""
        self._load()

    def __call__(self, text: str) -> list[str]:
        tokenizer = self._tokenizer or self._load()
        return [w for w in tokenizer.cut(text, HMM=False) if w]


_DEFAULT: list[JiebaSegmenter] = []


def default_segmenter() -> JiebaSegmenter:
    """The process-wide segmenter (created on first use; its dictionary on its first cut)."""
    if not _DEFAULT:
        _DEFAULT.append(JiebaSegmenter())
    return _DEFAULT[0]


WARM_DELAY_SECONDS = 2.0


def dictionary_pending(segmenter: Callable[[str], list[str]]) -> TypeGuard[JiebaSegmenter]:
    """A cut by `segmenter` would first load its dictionary (about 1 s of CPU): a `JiebaSegmenter`
    whose dictionary is not loaded yet (any other cut function loads nothing)."""
    return isinstance(segmenter, JiebaSegmenter) and not segmenter.loaded


def warm_quietly(segmenter: JiebaSegmenter) -> bool:
    """Load `segmenter`'s dictionary now (meant for a worker thread; a load under way is waited for
    through its lock). A failure is logged at debug level and left to the cut, which loads it again
    and reports what fails. True when it loaded."""
    try:
        segmenter.warm()
    except Exception:
        _LOG.debug("segmenter warm-up failed", exc_info=True)
        return False
    return True


def warm_in_background(delay: float = WARM_DELAY_SECONDS) -> threading.Timer:
    """Load the process-wide segmenter's dictionary in a daemon thread `delay` seconds from now
    (`serve`: a server usually waits for its first search, which then finds the dictionary loaded;
    the delay keeps the load off the client's handshake and first calls). A search that comes
    first loads it itself and this one waits on the same lock."""

    def load() -> None:
        if warm_quietly(default_segmenter()):
            _LOG.debug(
                "segmenter dictionary loaded in the background (%s)", threading.current_thread().name
            )

    timer = threading.Timer(delay, load)
    timer.daemon = True
    timer.start()
    return timer
