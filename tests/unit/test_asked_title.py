"""`identity.asked_title`: a title as a caller wrote it, quoted the Chinese way in 《》, is looked
up without the one pair around it; 《》 belonging to the title stay."""

from __future__ import annotations

import pytest

from cnki_mcp.errors import CnkiError
from cnki_mcp.identity import asked_title
from cnki_mcp.pipeline.models import MetadataInput


@pytest.mark.parametrize(
    ("asked", "title"),
    [
        ("《约定违约金酌减规则的法律规制研究》", "约定违约金酌减规则的法律规制研究"),
        ("  约定违约金酌减规则的法律规制研究 ", "约定违约金酌减规则的法律规制研究"),
        ("《《民法典》实施背景下违约赔偿金酌减规则研究》", "《民法典》实施背景下违约赔偿金酌减规则研究"),
        ("《〈民法典〉实施背景下违约赔偿金酌减规则研究》", "《民法典》实施背景下违约赔偿金酌减规则研究"),
        ("《民法典》实施背景下违约赔偿金酌减规则研究", "《民法典》实施背景下违约赔偿金酌减规则研究"),
        ("《民法典》第585条与《合同法》", "《民法典》第585条与《合同法》"),
        ("《》", ""),
        ("《违约金《导论》", "《违约金《导论》"),
        ("《  》", ""),
        ("   ", ""),
        # invisible characters copied around the marks (a BOM, a zero-width space) hid the pair
        ("\ufeff《约定违约金酌减规则的法律规制研究》\u200b", "约定违约金酌减规则的法律规制研究"),
        ("《\u200b》", ""),
    ],
)
def test_one_pair_of_book_title_marks_around_the_whole_title_is_taken_off(asked: str, title: str) -> None:
    assert asked_title(asked) == title


@pytest.mark.parametrize("blank", ["   ", "《》", "《 》", "\u200b"])
def test_get_metadata_refuses_a_blank_title_instead_of_answering_nothing(blank: str) -> None:
    with pytest.raises(CnkiError) as info:
        MetadataInput(titles=["约定违约金酌减规则的法律规制研究", blank])
    assert info.value.code == "INVALID_ARGUMENT"
