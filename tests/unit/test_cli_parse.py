"""`cnki-mcp parse`: JSON output, stdin, GBK fallback, exit code 2 on typed errors."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from cnki_mcp.cli import main as main_mod
from tests.conftest import write_real

ROW = (
    "<table class='result-table-list'><tbody><tr><td class='seq'>1</td>"
    "<td class='name'><a class='fz14' href='/kcms2/article/abstract?v=x'>数字文物保护</a></td>"
    "<td class='author'><a class='KnowledgeNetLink'>张三</a></td><td class='source'><a>文物</a></td>"
    "<td class='date'>2025-01-02</td><td class='data'>期刊</td><td class='quote'></td>"
    "<td class='download'>1.5万</td></tr></tbody></table>"
)


@pytest.fixture(autouse=True)
def only_parse_command(monkeypatch: pytest.MonkeyPatch) -> None:
    # Test the parse command alone: other command modules are built in parallel and may be absent.
    monkeypatch.setattr(main_mod, "COMMANDS", {"parse": main_mod.COMMANDS["parse"]})


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main_mod.main(["parse", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_parse_grid_real_capture_prints_json(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = write_real("kns8s-grid/kaffu_waam_p1.html", tmp_path)
    code, out, _ = _run(capsys, "grid", str(path), "--url", "https://kns.cnki.net/kns8s/defaultresult/index")
    assert code == 0
    data = json.loads(out)
    assert (data["total"], data["page"], data["page_count"], len(data["rows"])) == (661, 1, 34, 20)
    assert data["rows"][0]["title"] == "Al-Mg合金电弧-搅拌摩擦加工复合增材制造组织性能研究"
    assert "焊接学报" in out  # ensure_ascii=False keeps Chinese readable
    assert out.startswith("{\n  ")  # indent 2


def test_parse_grid_prints_the_rows_of_a_saved_page_as_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    page = tmp_path / "grid.html"
    page.write_text(f"<html><body>{ROW}</body></html>", encoding="utf-8")
    code, out, _ = _run(capsys, "grid", str(page), "--url", "https://kns.cnki.net/kns8s/x")
    assert code == 0
    row = json.loads(out)["rows"][0]
    assert (row["title"], row["authors"], row["downloads"]) == ("数字文物保护", ["张三"], 15000)
    assert row["detail_url"] == "https://kns.cnki.net/kcms2/article/abstract?v=x"


def test_gbk_file_is_decoded_automatically(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    page = tmp_path / "gbk.html"
    page.write_bytes(f"<html><body>{ROW}</body></html>".encode("gbk"))
    code, out, _ = _run(capsys, "grid", str(page))
    assert code == 0 and json.loads(out)["rows"][0]["title"] == "数字文物保护"


def test_explicit_encoding_is_used(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    page = tmp_path / "gbk.html"
    page.write_bytes(f"<html><body>{ROW}</body></html>".encode("gbk"))
    code, out, _ = _run(capsys, "grid", str(page), "--encoding", "gbk")
    assert code == 0 and "数字文物保护" in out


def test_parse_grid_reads_the_page_from_stdin_when_the_file_is_a_dash(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    stdin = io.TextIOWrapper(io.BytesIO(f"<html><body>{ROW}</body></html>".encode()))
    monkeypatch.setattr(sys, "stdin", stdin)
    code, out, _ = _run(capsys, "grid", "-")
    assert code == 0 and json.loads(out)["rows"][0]["authors"] == ["张三"]


def test_unsupported_page_exits_2_with_code(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    page = tmp_path / "odd.html"
    page.write_text("<html><body>changed login page</body></html>", encoding="utf-8")
    code, out, err = _run(capsys, "grid", str(page))
    assert code == 2 and out == ""
    assert err.startswith("错误 PARSER_UNSUPPORTED:")


def test_real_shell_page_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = _run(capsys, "grid", str(write_real("kns8s-grid/kaffu_search_shell_raw.html", tmp_path)))
    assert code == 2 and "PARSER_UNSUPPORTED" in err


def test_gate_prints_verdict_and_identity(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, _ = _run(capsys, "gate", str(write_real("home-login/pluginsx_www_home_saved_2026.html", tmp_path)))
    data = json.loads(out)
    assert code == 0
    assert data["verdict"]["kind"] == "clear"
    assert data["identity"]["personal"] == "authenticated" and data["identity"]["personal_name"] == "PLUGINS"


def test_parse_gate_with_status_429_is_rate_limited_whatever_the_page(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    page = tmp_path / "p.html"
    page.write_text("<html><body>x</body></html>", encoding="utf-8")
    code, out, _ = _run(capsys, "gate", str(page), "--status", "429")
    assert code == 0 and json.loads(out)["verdict"]["kind"] == "rate_limited"


def test_journal_and_reader_receive_expect(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from cnki_mcp.cli import parse_cmd

    seen: dict[str, object] = {}

    def fake_journal(html: str, url: str | None = None, expected_source: str | None = None) -> dict[str, str]:
        seen["journal"] = (url, expected_source)
        return {"name": "x"}

    def fake_reader(html: str, url: str | None = None, expected_title: str | None = None) -> dict[str, str]:
        seen["reader"] = (url, expected_title)
        return {"text": "x"}

    journal = pytest.importorskip("cnki_mcp.parse.journal")
    monkeypatch.setattr(journal, "parse_journal", fake_journal)
    parse_cmd.parse_kind("journal", "<html></html>", "u", "管理世界", None)
    assert seen["journal"] == ("u", "管理世界")
    reader = pytest.importorskip("cnki_mcp.parse.reader")
    monkeypatch.setattr(reader, "parse_reader", fake_reader)
    parse_cmd.parse_kind("reader", "<html></html>", None, "题名", None)
    assert seen["reader"] == (None, "题名")



def test_a_file_that_cannot_be_read_is_a_typed_error_without_a_traceback(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    for missing in (tmp_path / "missing.html", tmp_path):  # absent, and a folder
        code, out, err = _run(capsys, "grid", str(missing))
        assert code == 2 and out == "" and err.startswith("错误 INVALID_ARGUMENT") and "Traceback" not in err


@pytest.mark.parametrize("encoding", ["no-such-codec", "base64"])
def test_an_encoding_that_is_not_a_text_encoding_is_a_usage_error(
    encoding: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """It was a LookupError traceback and exit 1 once the file was read."""
    page = tmp_path / "page.html"
    page.write_text("<html>页面</html>", encoding="utf-8")
    with pytest.raises(SystemExit) as stop:
        main_mod.main(["parse", "grid", str(page), "--encoding", encoding])
    assert stop.value.code == 2
    assert "Traceback" not in capsys.readouterr().err


def test_a_named_text_encoding_is_used(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    page = tmp_path / "page.html"
    page.write_bytes("<html>頁面</html>".encode("big5"))
    code, _, err = _run(capsys, "gate", str(page), "--encoding", "big5")
    assert code == 0, err


@pytest.mark.parametrize(
    ("kind", "option"),
    [("grid", ("--expect", "数字文物保护")), ("detail", ("--expect", "题名")), ("gate", ("--expect", "文物")),
     ("grid", ("--status", "429")), ("reader", ("--status", "200"))],
)  # fmt: skip
def test_an_option_the_page_type_does_not_use_is_a_usage_error(
    kind: str, option: tuple[str, str], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """`parse grid F --expect …` printed the rows and exit 0, the expectation never checked: it
    looked like a check that had passed."""
    page = tmp_path / "page.html"
    page.write_text(ROW, encoding="utf-8")
    code, out, err = _run(capsys, kind, str(page), *option)
    assert (code, out) == (2, "")
    assert err.startswith("错误 INVALID_ARGUMENT")
