"""Download file checks, default names and archiving (site-rules.md §2.7)."""

from __future__ import annotations

import errno
import os
import stat
import unicodedata
from pathlib import Path

import pytest
from full_disk import FullDisk

from cnki_mcp.errors import CnkiError
from cnki_mcp.files import (
    archive,
    check_file_name,
    free_space,
    inside_downloads,
    safe_file_name,
    sha256_of,
    target_dir,
    validate_download,
)
from cnki_mcp.sim.corpus import Corpus
from cnki_mcp.sim.pages.files import caj_bytes, pdf_bytes, render_html_as_pdf


def code_of(fn: object, *args: object) -> str:
    with pytest.raises(CnkiError) as info:
        fn(*args)  # type: ignore[operator]
    return info.value.code


@pytest.fixture(scope="module")
def record():  # type: ignore[no-untyped-def]
    return Corpus.load().by_id["r0001"]


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_simulator_pdf_and_caj_pass_their_own_format_only(tmp_path: Path, record) -> None:  # type: ignore[no-untyped-def]
    pdf = write(tmp_path, "a.pdf", pdf_bytes(record))
    caj = write(tmp_path, "a.caj", caj_bytes(record))
    assert validate_download(pdf, "pdf") == pdf.stat().st_size
    assert validate_download(caj, "caj") == caj.stat().st_size
    assert code_of(validate_download, pdf, "caj") == "INVALID_FILE"
    assert code_of(validate_download, caj, "pdf") == "INVALID_FILE"


def test_html_page_under_a_pdf_name_is_an_invalid_file(tmp_path: Path, record) -> None:  # type: ignore[no-untyped-def]
    page = write(tmp_path, "x.pdf", render_html_as_pdf(record))
    assert code_of(validate_download, page, "pdf") == "INVALID_FILE"


def test_pdf_without_eof_marker_or_too_small_is_invalid(tmp_path: Path, record) -> None:  # type: ignore[no-untyped-def]
    cut = write(tmp_path, "cut.pdf", pdf_bytes(record)[:-200])
    tiny = write(tmp_path, "tiny.pdf", b"%PDF-1.7\n%%EOF\n")
    assert code_of(validate_download, cut, "pdf") == "INVALID_FILE"
    assert code_of(validate_download, tiny, "pdf") == "INVALID_FILE"
    for magic in (b"KDH ", b"HN\x00\x00"):
        assert validate_download(write(tmp_path, "k.caj", magic + b"\x00" * 200), "caj") == 204


def test_default_name_replaces_unsafe_characters_and_adds_the_ref_prefix() -> None:
    name = safe_file_name('违约金/调整:"研究"?<一>|*\x01. ', "rec_98ec26524d0701b569fa7f8c", "pdf")
    assert name == "违约金_调整__研究___一____" + "_98ec2652.pdf"


def test_default_name_cuts_the_title_to_75_characters() -> None:
    name = safe_file_name("长" * 200, "rec_0123456789abcdef", "caj")
    assert name == "长" * 75 + "_01234567.caj"


def test_windows_reserved_names_get_a_prefix() -> None:
    assert safe_file_name("CON", "rec_abcdefgh1234", "pdf") == "论文_CON_abcdefgh.pdf"
    assert safe_file_name("...", "rec_abcdefgh1234", "pdf") == "论文_abcdefgh.pdf"


def test_caller_file_names_must_be_one_safe_component_with_the_right_extension() -> None:
    assert check_file_name("论文.pdf", "pdf") == "论文.pdf"
    for bad in ("../x.pdf", "a/b.pdf", "x.caj", "a:b.pdf", "NUL.pdf", ""):
        assert code_of(check_file_name, bad, "pdf") == "INVALID_ARGUMENT", bad


def test_subdirectory_must_stay_inside_downloads(tmp_path: Path) -> None:
    assert target_dir(tmp_path, "a/b") == tmp_path / "downloads" / "a" / "b"
    for bad in ("../x", "/etc", "a/../../x", "C:\\x", "a/<b>"):
        assert code_of(target_dir, tmp_path, bad) == "INVALID_ARGUMENT", bad
    (tmp_path / "downloads").mkdir()
    os.symlink(tmp_path, tmp_path / "downloads" / "link")
    assert code_of(target_dir, tmp_path, "link/x") == "INVALID_ARGUMENT"


def test_archive_moves_hashes_and_never_overwrites(tmp_path: Path, record) -> None:  # type: ignore[no-untyped-def]
    src = write(tmp_path, "incoming.pdf", pdf_bytes(record))
    digest = sha256_of(src)
    done = archive(src, tmp_path / "data", "sub", "论文.pdf")
    assert done.path == tmp_path / "data" / "downloads" / "sub" / "论文.pdf"
    assert done.sha256 == digest and done.bytes == done.path.stat().st_size
    assert not src.exists()
    again = write(tmp_path, "incoming2.pdf", b"%PDF-other")
    assert code_of(archive, again, tmp_path / "data", "sub", "论文.pdf") == "FILE_EXISTS"
    assert sha256_of(done.path) == digest and again.exists()


def test_default_name_stays_under_the_file_name_byte_limit_with_four_byte_characters(tmp_path: Path) -> None:
    # 75 four-byte characters (math letters, CJK Extension B, emoji) are 300 bytes: over NAME_MAX (255)
    for title in ("𝑥" * 100, "𠀀" * 100, "😀" * 100):
        name = safe_file_name(title, "rec_0123456789abcdef", "pdf")
        assert len(name.encode("utf-8")) <= 240 and name.endswith("_01234567.pdf")
        assert check_file_name(name, "pdf") == name
        (tmp_path / name).write_bytes(b"x")  # the file system takes it


def test_windows_reserved_names_include_console_and_superscript_devices() -> None:
    for bad in ("COM¹.pdf", "LPT³.pdf", "CONIN$.pdf", "conout$.pdf"):
        assert code_of(check_file_name, bad, "pdf") == "INVALID_ARGUMENT", bad
    assert safe_file_name("COM²", "rec_abcdefgh1234", "pdf") == "论文_COM²_abcdefgh.pdf"


def test_overlong_subdirectory_component_is_an_invalid_argument(tmp_path: Path) -> None:
    assert code_of(target_dir, tmp_path, "a" * 300) == "INVALID_ARGUMENT"
    assert code_of(target_dir, tmp_path, "x/" + "论" * 90) == "INVALID_ARGUMENT"  # 270 bytes


def test_inside_downloads_rejects_a_nul_byte_as_an_invalid_argument(tmp_path: Path) -> None:
    assert code_of(inside_downloads, Path("a\x00b.pdf"), tmp_path) == "INVALID_ARGUMENT"


def test_a_symlinked_downloads_directory_is_refused_before_use_and_nothing_lands_outside(
    tmp_path: Path,
    record,  # type: ignore[no-untyped-def]
) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    data = tmp_path / "data"
    data.mkdir()
    (data / "downloads").symlink_to(outside)
    src = write(tmp_path, "in.pdf", pdf_bytes(record))
    assert code_of(target_dir, data, None) == "DATA_PATH_SYMLINK"
    assert code_of(target_dir, data, "sub") == "DATA_PATH_SYMLINK"
    assert code_of(archive, src, data, "sub", "论文.pdf") == "DATA_PATH_SYMLINK"
    assert code_of(inside_downloads, Path("x.pdf"), data) == "DATA_PATH_SYMLINK"
    assert list(outside.iterdir()) == [] and src.exists()


def test_archived_files_are_0600_and_new_folders_0700_whatever_the_umask(
    tmp_path: Path,
    record,  # type: ignore[no-untyped-def]
) -> None:
    src = write(tmp_path, "in.pdf", pdf_bytes(record))
    os.chmod(src, 0o644)  # the browser's file
    old = os.umask(0)
    try:
        done = archive(src, tmp_path / "data", "a/b", "论文.pdf")
    finally:
        os.umask(old)
    assert stat.S_IMODE(done.path.stat().st_mode) == 0o600
    for folder in ("", "downloads", "downloads/a", "downloads/a/b"):
        assert stat.S_IMODE((tmp_path / "data" / folder).stat().st_mode) == 0o700, folder


@pytest.mark.parametrize("char", ["\u202e", "\u2066", "\u200b", "\u200e", "\ufeff", "\u00ad", "\u2029"])
def test_bidi_controls_and_other_format_characters_are_refused_in_names(tmp_path: Path, char: str) -> None:
    # `论文\u202efdp.exe` displays as `论文exe.pdf`: a caller's name must be what it looks like
    assert code_of(check_file_name, f"论文{char}fdp.pdf", "pdf") == "INVALID_ARGUMENT"
    assert code_of(target_dir, tmp_path, f"合同{char}") == "INVALID_ARGUMENT"
    default = safe_file_name(f"违约金{char}调整", "rec_abcdefgh1234", "pdf")
    assert char not in default and check_file_name(default, "pdf") == default


def test_a_full_disk_is_a_coded_error_leaves_no_temporary_file_and_the_next_try_works(
    tmp_path: Path, record, monkeypatch: pytest.MonkeyPatch  # type: ignore[no-untyped-def]
) -> None:
    # downloads/ on another file system (no hard link) and full: the copy failed with a bare
    # OSError (INTERNAL), left .<name>.part-<pid> behind, and every later try in the process failed
    # on that name (FileExistsError, INTERNAL) although the disk had room again.
    src = write(tmp_path, "incoming.pdf", pdf_bytes(record))
    real_link, real_fdopen = os.link, os.fdopen

    def cross_device(a: object, b: object) -> None:
        if Path(str(a)) == src:
            raise OSError(errno.EXDEV, "Invalid cross-device link")
        real_link(a, b)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "link", cross_device)
    monkeypatch.setattr(os, "fdopen", lambda fd, mode: FullDisk(real_fdopen(fd, mode)))
    with pytest.raises(CnkiError) as info:
        archive(src, tmp_path / "data", None, "论文.pdf")
    # the reason README and the store give a full disk (it was no_space here alone)
    assert info.value.code == "DATA_DIRECTORY_UNUSABLE" and info.value.details["reason"] == "disk_full"
    folder = tmp_path / "data" / "downloads"
    assert list(folder.iterdir()) == []  # no temporary file, no partial file
    assert src.exists()  # the delivered file stays where it was, for the next try
    monkeypatch.setattr(os, "fdopen", real_fdopen)  # room again
    done = archive(src, tmp_path / "data", None, "论文.pdf")
    assert done.path == folder / "论文.pdf" and done.bytes == len(pdf_bytes(record))


@pytest.mark.parametrize(
    ("name", "characters"),
    [("论文:副标题.pdf", ["U+003A"]), ("论文*?.pdf", ["U+002A", "U+003F"]), ("a\u202eb.pdf", ["U+202E"])],
)
def test_a_refused_name_says_which_characters(name: str, characters: list[str]) -> None:
    # A half-width colon was told the name held "control or invisible characters such as U+202E".
    with pytest.raises(CnkiError) as info:
        check_file_name(name, "pdf")
    assert info.value.code == "INVALID_ARGUMENT"
    assert info.value.details["characters"] == characters


@pytest.mark.parametrize("name", [" a.pdf", "a.pdf ", ".pdf", "a.pdf."])
def test_a_name_with_edge_spaces_or_dots_is_refused_without_characters(name: str) -> None:
    with pytest.raises(CnkiError) as info:
        check_file_name(name, "pdf")
    assert info.value.code == "INVALID_ARGUMENT" and "characters" not in info.value.details


def test_a_decomposed_name_is_the_same_name_and_accepted() -> None:
    # macOS hands over `Café.pdf` decomposed (e + U+0301); it was refused for edge dots or spaces
    decomposed = unicodedata.normalize("NFD", "Café 论文.pdf")
    assert decomposed != "Café 论文.pdf"
    assert check_file_name(decomposed, "pdf") == decomposed


# --- a locale whose file names cannot hold every character (LANG=zh_CN.GBK) ------------


@pytest.fixture
def gbk_file_names(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setattr(sys, "getfilesystemencoding", lambda: "gbk")


def test_a_title_with_characters_the_locale_cannot_name_gets_a_file_name_it_can(gbk_file_names: None) -> None:
    """Under a GBK locale a title with CO₂, • or 𠮷 made a name open() could not encode: the
    download was clicked and then crashed INTERNAL (UnicodeEncodeError)."""
    name = safe_file_name("CO₂排放与𠮷•研究", "rec_abcdef1234", "pdf")
    assert name == "CO_排放与__研究_abcdef12.pdf"
    name.encode("gbk")


@pytest.mark.parametrize("name", ["论文𠮷.pdf", "参考文献😀.pdf", "CO₂.pdf"])
def test_a_caller_name_the_locale_cannot_hold_is_refused_naming_the_characters(
    gbk_file_names: None, name: str
) -> None:
    with pytest.raises(CnkiError) as info:
        check_file_name(name, "pdf")
    assert info.value.code == "INVALID_ARGUMENT"
    assert info.value.details["characters"] and info.value.details["encoding"] == "gbk"


@pytest.mark.parametrize(("subdirectory", "characters"), [("专题•一", ["U+2022"]), ("CO₂研究/2024", ["U+2082"])])
def test_a_subdirectory_the_locale_cannot_hold_is_refused_naming_the_characters(
    gbk_file_names: None, tmp_path: Path, subdirectory: str, characters: list[str]
) -> None:
    # As a file name is (site-rules §2.7): it was the generic "子目录含有不允许的字符" naming
    # neither the character nor the encoding, so nothing hinted at a UTF-8 locale.
    with pytest.raises(CnkiError) as info:
        target_dir(tmp_path, subdirectory)
    assert info.value.code == "INVALID_ARGUMENT"
    assert info.value.details["characters"] == characters and info.value.details["encoding"] == "gbk"


def test_a_utf8_locale_keeps_every_character() -> None:
    assert safe_file_name("CO₂排放", "rec_abcdef1234", "pdf") == "CO₂排放_abcdef12.pdf"
    assert check_file_name("论文𠮷.pdf", "pdf") == "论文𠮷.pdf"


_LEGACY_LOCALE_SCRIPT = """
import sys
from pathlib import Path
from cnki_mcp.errors import CnkiError
from cnki_mcp.files import inside_downloads
data = Path(sys.argv[1])
(data / "downloads").mkdir(parents=True)
for path in ("\\u8bba\\u6587.pdf", str(data / "downloads" / "\\u8bba\\u6587.pdf")):
    try:
        inside_downloads(Path(path), data)
    except CnkiError as exc:
        print(sys.getfilesystemencoding(), exc.code, exc.details["characters"])
"""


def test_a_path_the_locale_cannot_hold_is_invalid_argument_not_internal(tmp_path: Path) -> None:
    """read_pdf_text's `path` with characters the locale's file names cannot hold (a GBK locale
    and an emoji; here Python's ASCII file names in the C locale without UTF-8 mode): INTERNAL
    (UnicodeEncodeError from resolving it) before; no such file can exist."""
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith(("LC_", "LANG", "PYTHONUTF8"))}
    env.update(LC_ALL="C", PYTHONUTF8="0", PYTHONCOERCECLOCALE="0")
    done = subprocess.run(
        [sys.executable, "-c", _LEGACY_LOCALE_SCRIPT, str(tmp_path / "data")],
        cwd=Path(__file__).resolve().parents[2], env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-600:]
    assert done.stdout.splitlines() == ["ascii INVALID_ARGUMENT ['U+8BBA', 'U+6587']"] * 2


def test_the_free_space_of_a_folder_is_read_from_its_disk_and_unknown_for_a_missing_one(tmp_path: Path) -> None:
    free = free_space(tmp_path)
    assert isinstance(free, int) and free >= 0
    assert free_space(tmp_path / "gone" / "deeper") is None
