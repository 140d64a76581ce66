"""Downloaded files: content checks, safe default names and archiving (site-rules.md §2.7).

Pure apart from the file system: no browser, no network. `validate_download` says whether the
bytes are really the requested format (an HTML error page under a `.pdf` name is INVALID_FILE);
`safe_file_name` builds the default `题名_编号前8位.ext`; `archive` moves a validated file under
`<data>/downloads/[subdirectory/]` atomically, never overwriting, and returns its SHA-256;
`copy_into` copies an archived file under another name. Files are 0600 and folders 0700
(DESIGN.md "Data directory")."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import sys
import unicodedata
from dataclasses import dataclass
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Literal

from cnki_mcp import datadir
from cnki_mcp.errors import FileExists, InvalidFile, InvalidInput

FileFormat = Literal["pdf", "caj"]

DOWNLOADS_DIR = datadir.DOWNLOADS_DIR
MIN_FILE_BYTES = 100
PDF_MAGIC = b"%PDF-"
PDF_EOF = b"%%EOF"
PDF_TAIL = 2048
CAJ_MAGICS = (b"CAJ", b"KDH", b"HN")
TITLE_CHARS = 75
REF_CHARS = 8
REF_PREFIX = "rec_"
_UNSAFE = re.compile(r'[/\\<>:"|?*\x00-\x1f\x7f]')
_WINDOWS_RESERVED = frozenset(
    ["CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$"]
    + [f"{dev}{i}" for dev in ("COM", "LPT") for i in (*range(1, 10), "¹", "²", "³")]
)
RESERVED_PREFIX = "论文_"
MAX_SUBDIR_PARTS = 8
MAX_NAME_BYTES = 240


def free_space(folder: Path) -> int | None:
    """The free bytes of the disk holding `folder`, None when the system cannot say."""
    try:
        return shutil.disk_usage(folder).free
    except OSError:
        return None


def _head_tail(path: Path) -> tuple[int, bytes, bytes]:
    size = path.stat().st_size
    with path.open("rb") as fh:
        head = fh.read(16)
        fh.seek(max(0, size - PDF_TAIL))
        tail = fh.read(PDF_TAIL)
    return size, head, tail


def sniff_format(path: Path) -> FileFormat | None:
    """What the bytes are: `pdf`, `caj` or None (anything else, e.g. an HTML page)."""
    size, head, tail = _head_tail(path)
    if size < MIN_FILE_BYTES:
        return None
    if head.startswith(PDF_MAGIC) and PDF_EOF in tail:
        return "pdf"
    if head.startswith(CAJ_MAGICS):
        return "caj"
    return None


def validate_download(path: Path, fmt: FileFormat) -> int:
    """Check a downloaded file against the requested format; returns its size in bytes.

    PDF: starts with `%PDF-` and the last 2048 bytes hold `%%EOF`; CAJ: starts with `CAJ`, `KDH`
    or `HN`; at least 100 bytes either way. Anything else raises INVALID_FILE."""
    try:
        size, head, tail = _head_tail(path)
    except OSError as exc:
        raise InvalidFile("无法读取下载的文件", reason=str(exc)) from exc
    if size < MIN_FILE_BYTES:
        raise InvalidFile(format=fmt, bytes=size, reason="too_small")
    if fmt == "pdf":
        if not head.startswith(PDF_MAGIC):
            raise InvalidFile(format=fmt, bytes=size, reason="no_pdf_signature", starts_with=_preview(head))
        if PDF_EOF not in tail:
            raise InvalidFile(format=fmt, bytes=size, reason="no_pdf_eof")
        return size
    if fmt == "caj":
        if not head.startswith(CAJ_MAGICS):
            raise InvalidFile(format=fmt, bytes=size, reason="no_caj_header", starts_with=_preview(head))
        return size
    raise InvalidInput("未知的文件格式", format=fmt)


def _preview(head: bytes) -> str:
    return head[:8].decode("latin-1").encode("unicode_escape").decode("ascii")


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


# Invisible format characters (Cf: bidi overrides such as U+202E that make `evil\u202efdp.exe`
# read as `evilexe.pdf`, zero-width spaces, BOM) are dropped; controls (Cc), line/paragraph
# separators and lone surrogates become `_`. A caller's name holding any of them is refused.
_DROPPED = frozenset({"Cf"})
_REPLACED = frozenset({"Cc", "Cs", "Zl", "Zp"})


def _nameable(ch: str) -> bool:
    """Whether the locale's file-name encoding holds `ch`: UTF-8 holds everything, but under a
    GBK, GB2312 or Latin-1 locale (LANG=zh_CN.GBK) `₂` (CO₂), `•`, rare characters such as 𠮷
    and emoji cannot be written in a file name at all (UnicodeEncodeError at open)."""
    try:
        ch.encode(sys.getfilesystemencoding(), "surrogateescape")
    except (UnicodeEncodeError, LookupError):
        return False
    return True


def _clean_char(ch: str) -> str:
    category = unicodedata.category(ch)
    if category in _DROPPED:
        return ""
    return "_" if category in _REPLACED or not _nameable(ch) else ch


def _clean_component(text: str) -> str:
    text = unicodedata.normalize("NFC", text)
    text = "".join(_clean_char(ch) for ch in text)
    text = _UNSAFE.sub("_", text)
    return text.strip(" .")


def _reserved(stem: str) -> bool:
    return stem.split(".")[0].strip().upper() in _WINDOWS_RESERVED


def safe_file_name(title: str, record_ref: str, ext: str) -> str:
    """`题名_编号前8位.ext` (site-rules.md §2.7): unsafe and control characters become `_`, dots and
    spaces trimmed, the title cut to 75 characters; Windows reserved names get `论文_`."""
    ext = ext.lower().lstrip(".")
    stem = _clean_component(title)[:TITLE_CHARS].strip(" .")
    ref = record_ref[len(REF_PREFIX) :] if record_ref.startswith(REF_PREFIX) else record_ref
    ref = re.sub(r"[^A-Za-z0-9]", "", ref)[:REF_CHARS]
    if not stem:
        stem = "论文"
    if _reserved(stem):
        stem = RESERVED_PREFIX + stem
    suffix = f"_{ref}.{ext}" if ref else f".{ext}"
    room = MAX_NAME_BYTES - len(suffix.encode("utf-8"))
    while len(stem.encode("utf-8")) > room:  # 4-byte characters (𝑥, 𠀀, emoji): stay under NAME_MAX
        stem = stem[:-1].rstrip(" .") or "论文"
    return stem + suffix


def file_name(filename: str | None, title: str, record_ref: str, ext: str) -> str:
    """The name a downloaded file gets: the caller's `filename`, else the default (`safe_file_name`)."""
    return filename if filename is not None else safe_file_name(title, record_ref, ext)


def refuse_taken(dest: Path) -> None:
    """FILE_EXISTS when `dest` is taken (a file, or a symlink, dangling or not): nothing is replaced."""
    if dest.exists() or dest.is_symlink():
        raise FileExists(path=str(dest))


def _refuse_unencodable(text: str, what: str, field: str) -> None:
    """INVALID_ARGUMENT naming the characters of a caller's name the locale's file-name encoding
    cannot hold (`₂` under LANG=zh_CN.GBK), and the encoding (writing it was an INTERNAL error)."""
    odd = list(dict.fromkeys(ch for ch in text if unicodedata.category(ch) not in _REPLACED and not _nameable(ch)))
    if odd:
        raise InvalidInput(
            f"{what}含有当前语言环境的文件名编码（{sys.getfilesystemencoding()}）无法表示的字符：{' '.join(odd)}；"
            "换用其他字符，或在 UTF-8 语言环境（如 LANG=zh_CN.UTF-8）下运行 cnki-mcp",
            **{field: text}, characters=[f"U+{ord(ch):04X}" for ch in odd], encoding=sys.getfilesystemencoding(),
        )  # fmt: skip


def check_file_name(name: str, fmt: FileFormat) -> str:
    """A caller-chosen file name: one safe component whose extension matches the format."""
    if not name or "/" in name or "\\" in name:
        raise InvalidInput("文件名不能包含路径", filename=name)
    _refuse_unencodable(name, "文件名", "filename")
    cleaned = _clean_component(name)
    # a decomposed name (macOS writes `Café.pdf` as e + U+0301) is the same name composed
    if cleaned != unicodedata.normalize("NFC", name) or name in (".", ".."):
        # name what is wrong: a half-width colon (论文:副标题.pdf) was told it held "control or
        # invisible characters such as U+202E"
        bad = list(dict.fromkeys(ch for ch in name if _clean_char(ch) != ch or _UNSAFE.match(ch)))
        if bad:
            shown = " ".join(ch if ch.isprintable() else f"U+{ord(ch):04X}" for ch in bad)
            raise InvalidInput(
                f"文件名含有不允许的字符：{shown}（Windows/macOS 不允许 \\ / : * ? \" < > |，也不允许控制字符与"
                "不可见的格式字符如 U+202E）；可用全角字符（：？＊）代替",
                filename=name, characters=[f"U+{ord(ch):04X}" for ch in bad],
            )  # fmt: skip
        raise InvalidInput("文件名不能以点或空格开头或结尾", filename=name)
    if not name.lower().endswith("." + fmt):
        raise InvalidInput("文件扩展名须与格式一致", filename=name, format=fmt)
    if _reserved(name):
        raise InvalidInput("文件名是 Windows 保留名", filename=name)
    if len(name.encode("utf-8")) > MAX_NAME_BYTES:
        raise InvalidInput("文件名过长", filename=name)
    return name


def downloads_root(data_dir: Path) -> Path:
    """`<data>/downloads`, never a symlink (DATA_PATH_SYMLINK, checked on every call)."""
    return datadir.checked_dir(Path(data_dir), DOWNLOADS_DIR)


def check_download_arguments(
    data_dir: Path, format: str, filename: str | None, subdirectory: str | None
) -> None:
    """A download's file name and folder, checked before any site work: the name one safe
    component whose extension fits `format` (`auto`: .pdf or .caj), the folder under downloads/."""
    if filename is not None:
        ext = filename.rsplit(".", 1)[-1].lower() if "." in filename else ""
        if format == "auto" and ext not in ("pdf", "caj"):
            raise InvalidInput("文件扩展名须为 .pdf 或 .caj", field="filename")
        check_file_name(filename, ext if format == "auto" else format)  # type: ignore[arg-type]
    target_dir(data_dir, subdirectory)


def target_dir(data_dir: Path, subdirectory: str | None) -> Path:
    """`<data>/downloads/<subdirectory>`; the subdirectory must stay inside downloads/: no
    absolute path, no `..`, no drive, no symlink along the way (INVALID_ARGUMENT). A symlinked
    downloads/ itself is DATA_PATH_SYMLINK."""
    root = downloads_root(data_dir)
    if not subdirectory:
        return root
    if "\x00" in subdirectory or PureWindowsPath(subdirectory).drive or PureWindowsPath(subdirectory).root:
        raise InvalidInput("子目录必须是 downloads/ 下的相对路径", subdirectory=subdirectory)
    parts = [p for p in PurePosixPath(subdirectory.replace("\\", "/")).parts if p not in ("", ".")]
    if subdirectory.startswith("/") or any(p in ("..", "/") for p in parts):
        raise InvalidInput("子目录必须是 downloads/ 下的相对路径", subdirectory=subdirectory)
    if not parts or len(parts) > MAX_SUBDIR_PARTS:
        raise InvalidInput("子目录无效", subdirectory=subdirectory)
    _refuse_unencodable(subdirectory, "子目录", "subdirectory")
    for part in parts:
        if _clean_component(part) != part or _reserved(part):
            raise InvalidInput("子目录含有不允许的字符", subdirectory=subdirectory)
        if len(part.encode("utf-8")) > MAX_NAME_BYTES:
            raise InvalidInput("子目录名过长", subdirectory=subdirectory)
    here = root
    for part in parts:
        here = here / part
        if here.is_symlink():
            raise InvalidInput("子目录不能是符号链接", subdirectory=subdirectory)
    return here


@dataclass(frozen=True, slots=True)
class Archived:
    path: Path
    bytes: int
    sha256: str


def archive(src: Path, data_dir: Path, subdirectory: str | None, name: str) -> Archived:
    """Move `src` to `<data>/downloads/[subdirectory/]name` without ever overwriting
    (FILE_EXISTS). The move is a hard link + unlink on the same file system (atomic and
    exclusive), else an exclusive copy to a temporary name then a link."""
    if Path(name).name != name or name in ("", ".", ".."):
        raise InvalidInput("文件名不能包含路径", filename=name)
    folder = make_target_dir(data_dir, subdirectory)
    root = downloads_root(data_dir)
    if root.resolve() not in (folder.resolve(), *folder.resolve().parents):
        raise InvalidInput("子目录必须在 downloads/ 之内", subdirectory=subdirectory)
    dest = folder / name
    refuse_taken(dest)
    digest = sha256_of(src)
    size = src.stat().st_size
    try:
        os.link(src, dest)
    except FileExistsError as exc:
        raise FileExists(path=str(dest)) from exc
    except OSError:
        _copy_exclusive(src, dest)
    datadir.make_private(dest)  # a hard link shares the browser's mode: 0600 whatever it was
    src.unlink(missing_ok=True)
    return Archived(dest, size, digest)


def copy_into(src: Path, data_dir: Path, subdirectory: str | None, name: str) -> Archived:
    """Copy an archived file to `<data>/downloads/[subdirectory/]name` (0600, exclusive: an
    existing file is never replaced, FILE_EXISTS); `src` stays where it is."""
    if Path(name).name != name or name in ("", ".", ".."):
        raise InvalidInput("文件名不能包含路径", filename=name)
    dest = make_target_dir(data_dir, subdirectory) / name
    refuse_taken(dest)
    _copy_exclusive(src, dest)
    return Archived(dest, dest.stat().st_size, sha256_of(dest))


def make_target_dir(data_dir: Path, subdirectory: str | None) -> Path:
    """`target_dir`, created: downloads/ and each missing folder below it 0700."""
    folder = target_dir(data_dir, subdirectory)
    here = datadir.ensure_dir(datadir.ensure_root(Path(data_dir)), DOWNLOADS_DIR)
    for part in folder.relative_to(here).parts:
        here = datadir.private_subdir(here, part)
    return here


def _copy_exclusive(src: Path, dest: Path) -> None:
    """Copy `src` to `dest` through a temporary name, never leaving it behind: a failed write (a
    full disk) left `.<name>.part-<pid>`, and every later copy to that name in the same process
    failed on it (INTERNAL) until a restart. A file system that refuses the copy is
    DATA_DIRECTORY_UNUSABLE (`src` is left where it was)."""
    tmp = dest.with_name(f".{dest.name}.part-{os.getpid()}")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, datadir.FILE_MODE)
        try:
            with src.open("rb") as fin, os.fdopen(fd, "wb") as fout:
                os.fchmod(fout.fileno(), datadir.FILE_MODE)
                for chunk in iter(lambda: fin.read(1 << 20), b""):
                    fout.write(chunk)
                fout.flush()
                os.fsync(fout.fileno())
            os.link(tmp, dest)
        finally:
            tmp.unlink(missing_ok=True)
    except FileExistsError as exc:
        raise FileExists(path=str(dest)) from exc
    except OSError as exc:
        # the store's and the exports' reasons (disk_full / read_only / io_error, README): it was
        # no_space, or the OS's own text as the reason
        raise datadir.write_refused(exc, "downloads", str(dest)) from exc


def inside_downloads(path: Path, data_dir: Path) -> Path:
    """`path` resolved, which must lie inside `<data>/downloads` (INVALID_ARGUMENT otherwise).
    The root is checked not to be a symlink before it is resolved (DATA_PATH_SYMLINK): resolving
    a symlinked downloads/ first would make its target the directory files are confined to."""
    root = downloads_root(data_dir).resolve()
    if "\x00" in str(path):
        raise InvalidInput("路径含有不允许的字符", path=str(path).replace("\x00", "\\0"))
    candidate = Path(path)
    if not candidate.is_absolute():
        candidate = root / candidate
    try:
        resolved = candidate.resolve()
    except (OSError, RuntimeError) as exc:  # too long, symlink loop
        raise InvalidInput("路径无效", path=str(path), reason=type(exc).__name__) from exc
    except UnicodeEncodeError as exc:  # a character the locale's file names cannot hold: no such file
        raise InvalidInput(
            f"路径含有当前语言环境的文件名编码（{sys.getfilesystemencoding()}）无法表示的字符，不会有这样的文件",
            path=str(path), characters=[f"U+{ord(ch):04X}" for ch in str(path) if not _nameable(ch)],
        ) from exc  # fmt: skip
    if root != resolved and root not in resolved.parents:
        raise InvalidInput("只能读取 downloads/ 目录中的文件", path=str(path))
    return resolved
