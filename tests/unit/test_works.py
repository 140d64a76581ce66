"""One work under several records (works.py): the title key that tells two records are one work."""

from __future__ import annotations

import pytest

from cnki_mcp.identity import Paper
from cnki_mcp.models import Author, NativeId
from cnki_mcp.works import duplicate_works, final_of, same_work, work_title_key

ONE_WORK_SPELLINGS = [
    ("碳达峰目标下CO₂排放的影响因素研究：以长三角为例", "碳达峰目标下CO2排放的影响因素研究:以长三角为例"),
    ("碳达峰目标下CO_2排放的影响因素研究", "碳达峰目标下ＣＯ２排放的影响因素研究"),
    ("Fe^(3+)掺杂TiO_2的光催化性能", "Fe³⁺掺杂TiO₂的光催化性能"),
    ("〈民法典〉第585条的适用", "《民法典》第585条的适用"),
    ("違約金酌減規則研究", "违约金酌减规则研究"),
    ("“双碳”目标下的绿色金融。", '"双碳"目标下的绿色金融'),
    ("图像识别研究——以X为例", "图像识别研究—以X为例"),
    ("α-突触核蛋白研究（英文）", "α－突触核蛋白研究(英文)"),
    ("数字经济 与 就业", "数字经济与就业"),
    ("−18℃贮藏下猪肉品质变化", "-18℃贮藏下猪肉品质变化"),
    ("Cl^-对钢筋腐蚀的影响", "Cl⁻对钢筋腐蚀的影响"),
    ("O^(2-)对催化剂活性的影响", "O²⁻对催化剂活性的影响"),
    # a hyphen after a Han character before a number is a dash as often as a minus
    ("新冠疫情-2020年回顾", "新冠疫情——2020年回顾"),
]


@pytest.mark.parametrize(("a", "b"), ONE_WORK_SPELLINGS)
def test_two_records_spelling_one_title_differently_are_one_work(a: str, b: str) -> None:
    assert work_title_key(a) == work_title_key(b)
    online = _paper("online", a, NativeId(dbname="CAPJLAST", filename="HJKX20250301001"))
    final = _paper("final", b, NativeId(dbcode="CJFD", filename="HJKX202503001"), issue="3", pages="1-9")
    assert same_work(online, final)
    assert duplicate_works([online, final]) == {"online": "final"}
    assert final_of([online, final]) is final


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("C++程序设计教学研究", "C#程序设计教学研究"),
        ("标准1.2版的实施", "标准12版的实施"),
        ("违约金研究（一）", "违约金研究（二）"),
        ("A B testing", "AB testing"),
        ("CO排放研究", "CO2排放研究"),
        # a sign or a naming mark is part of the name, not punctuation
        ("-20℃冻藏对草鱼肌肉品质的影响", "20℃冻藏对草鱼肌肉品质的影响"),
        ("−18℃贮藏下猪肉品质变化", "18℃贮藏下猪肉品质变化"),
        ("O^(2-)对催化剂活性的影响", "O_2对催化剂活性的影响"),
        ("Cl⁻对钢筋腐蚀的影响", "Cl对钢筋腐蚀的影响"),
        ("5‰盐水浸泡对种子萌发的影响", "5盐水浸泡对种子萌发的影响"),
        ("3′-UTR区域研究", "3-UTR区域研究"),
    ],
)
def test_titles_that_differ_in_more_than_punctuation_are_two_works(a: str, b: str) -> None:
    assert work_title_key(a) != work_title_key(b)
    assert not same_work(_paper("a", a), _paper("b", b))


def _paper(ref: str, title: str, native: NativeId | None = None, **kw: str) -> Paper:
    extra: dict[str, object] = {"native": native} if native else {}
    return Paper(
        record_ref=ref, title=title, authors=[Author(name="贾楠"), Author(name="夏思萍")],
        source="环境科学", year=2025, **extra, **kw,  # type: ignore[arg-type]
    )  # fmt: skip
