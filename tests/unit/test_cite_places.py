"""Thesis places (GB/T 7714-2015 `出版地: 出版者`): the institution -> city table and its use."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from cnki_mcp.cite import export, from_paper
from cnki_mcp.cite.places import fold, institution_city, parse_table, table_size

DATA = Path(__file__).resolve().parents[2] / "cnki_mcp" / "cite" / "data"
GENERATOR = Path(__file__).resolve().parents[2] / "scripts" / "gen_institution_places.py"


def _generator():  # scripts/ is not a package: load the generator module from its file
    spec = importlib.util.spec_from_file_location("gen_institution_places", GENERATOR)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_table_covers_the_degree_granting_universities_and_academies() -> None:
    assert table_size() >= 1279 + 10
    for name, city in [("北京大学", "北京"), ("华北电力大学", "北京"), ("河北大学", "保定"),
                       ("中国科学院大学", "北京"), ("中国社会科学院大学", "北京"), ("国防科技大学", "长沙"),
                       ("中国石油大学（华东）", "青岛"), ("中国农业科学院", "北京")]:
        assert institution_city(name) == city, name


@pytest.mark.parametrize(
    ("name", "city"),
    [
        ("华北电力大学(保定)", "保定"),  # campus named in parentheses
        ("华北电力大学（保定）", "保定"),
        ("中国地质大学(武汉)", "武汉"),  # a listed name, half-width parentheses
        ("中国科学院大学(中国科学院物理研究所)", "北京"),  # the institute trains, the university grants
        ("中国科学院研究生院（物理研究所）", "北京"),  # former name, hand-maintained row
        (" 云南 大学 ", "昆明"),
        ("某某职业大学", None),
        ("某某大学(某某研究所)", None),
        ("", None),
        (None, None),
    ],
)
def test_an_institution_name_is_looked_up_to_its_city(name: str | None, city: str | None) -> None:
    assert institution_city(name) == city


def test_packaged_tables_are_well_formed() -> None:
    generated = (DATA / "institution_places.tsv").read_text(encoding="utf-8")
    lines = [ln for ln in generated.splitlines() if not ln.startswith("#")]
    names = [ln.split("\t")[0] for ln in lines]
    assert names == sorted(names) and len(names) == len(set(names)) == 1279
    assert all(len(ln.split("\t")) == 2 and ln.split("\t")[1] for ln in lines)
    extra = parse_table((DATA / "institution_places_extra.tsv").read_text(encoding="utf-8"))
    assert extra and not set(extra) & {fold(n) for n in names}  # extras only add what the list lacks


def test_generator_keeps_degree_granting_rows_and_refuses_conflicts() -> None:
    gen = _generator()
    csv_text = ("学校,省份,城市,层次,性质,985,211,双一流\n"
                "乙大学,河北,保定,本科,公办,否,否,否\n甲学院,河北,石家庄,专科,公办,否,否,否\n"
                "丙大学,湖南,长沙,本科,公办,否,否,否\n").encode()
    rows = gen.rows_from_csv(csv_text)
    assert rows == [("丙大学", "长沙"), ("乙大学", "保定")]
    assert gen.render(rows).endswith("丙大学\t长沙\n乙大学\t保定\n")
    with pytest.raises(SystemExit):
        gen.rows_from_csv(csv_text + "乙大学,河北,唐山,本科,公办,否,否,否\n".encode())


def _thesis(source: str, title: str = "某问题研究", **extra: object) -> dict[str, object]:
    return {"record_ref": "t", "doc_type": "博士", "title": title, "authors": ["任若涛"], "source": source,
            "year": 2015, **extra}


@pytest.mark.parametrize("missing", ["mark", "omit"])
def test_gbt_thesis_gets_the_city_of_its_institution(missing: str) -> None:
    text = export([from_paper(_thesis("华北电力大学(保定)"))], "gbt7714", missing=missing).text  # type: ignore[arg-type]
    assert text == "[1] 任若涛. 某问题研究[D]. 保定: 华北电力大学(保定), 2015."


@pytest.mark.parametrize("missing", ["mark", "omit"])
def test_gbt_unknown_place_follows_the_standard_instead_of_dropping_it(missing: str) -> None:
    zh = export([from_paper(_thesis("某某职业大学"))], "gbt7714", missing=missing).text  # type: ignore[arg-type]
    en = export([from_paper(_thesis("Unknown University", title="A study"))], "gbt7714",
                missing=missing).text  # type: ignore[arg-type]
    book = export([from_paper({"doc_type": "图书", "title": "某书", "authors": ["王五"], "publisher": "某出版社",
                               "year": 2010})], "gbt7714", missing=missing).text  # type: ignore[arg-type]
    assert "[D]. [出版地不详]: 某某职业大学, 2015." in zh
    assert "[D]. [S.l.]: Unknown University, 2015." in en
    assert "[M]. [出版地不详]: 某出版社, 2010." in book


def test_a_given_place_wins_over_the_table_and_other_formats_carry_the_city() -> None:
    rec = from_paper(_thesis("河北大学"))
    assert rec.place == "保定"
    assert from_paper(_thesis("河北大学", place="北京")).place == "北京"
    assert "address = {保定}" in export([rec], "bibtex").text
    assert "CY  - 保定" in export([rec], "ris").text
    assert "[保定]: 河北大学; 2015." in export([rec], "vancouver").text
    assert from_paper({"doc_type": "期刊", "title": "期刊论文", "source": "河北大学学报"}).place is None

