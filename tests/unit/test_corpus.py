"""The bundled simulator corpus: loads with `Corpus.load()` and meets the corpus requirements."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from cnki_mcp.sim.corpus import DB_BY_TYPE, DEFAULT_CORPUS_DIR, Corpus, SimRecord

REPO = Path(__file__).resolve().parents[2]
ALL_TYPES = {"期刊", "博士", "硕士", "会议", "报纸", "年鉴", "图书", "外文期刊"}
TIER_VOCAB = {"CSSCI", "CSSCI扩展版", "北大核心", "CSCD", "CSCD扩展版", "EI", "SCI", "SSCI",
              "AMI顶级", "AMI权威", "AMI核心", "AMI扩展", "AMI入库"}
DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return Corpus.load()


@pytest.fixture(scope="module")
def questions() -> list[dict]:
    with (DEFAULT_CORPUS_DIR / "questions.jsonl").open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _text(r: SimRecord) -> str:
    return " ".join([r.title, r.abstract or "", " ".join(r.keywords)])


def test_bundled_corpus_has_at_least_600_records_with_unique_ids_and_filenames(corpus: Corpus) -> None:
    assert len(corpus.records) >= 600
    assert len({r.id for r in corpus.records}) == len(corpus.records)
    assert len({r.filename for r in corpus.records}) == len(corpus.records)
    assert all(re.fullmatch(r"r\d{4}", r.id) for r in corpus.records)


def test_every_document_type_is_present_with_its_database_code(corpus: Corpus) -> None:
    types = Counter(r.type for r in corpus.records)
    assert set(types) == ALL_TYPES
    assert types["期刊"] / len(corpus.records) > 0.5
    assert types["外文期刊"] >= 15
    for r in corpus.records:
        assert r.db == DB_BY_TYPE[r.type], r.id


def test_records_span_at_least_six_disciplines_by_field_and_by_clc_class(corpus: Corpus) -> None:
    assert len({r.extra["discipline"] for r in corpus.records}) >= 6
    clc_classes = {re.match(r"[A-Z]+", r.classification).group() for r in corpus.records if r.classification}
    assert len(clc_classes) >= 6
    assert {"D", "TP", "R", "F", "G", "X"} <= clc_classes


def test_years_run_from_2005_to_2026_and_dates_are_iso(corpus: Corpus) -> None:
    years = [r.year for r in corpus.records if r.year]
    assert min(years) == 2005 and max(years) == 2026
    for r in corpus.records:
        if r.date:
            assert DATE_RE.match(r.date) and r.date.startswith(str(r.year)), r.id


def test_at_least_forty_journals_with_real_tier_vocabulary_and_formats(corpus: Corpus) -> None:
    assert len(corpus.journals) >= 40
    assert len(corpus.journal_by_code) == len(corpus.journals)
    for j in corpus.journals:
        assert set(j.tiers) <= TIER_VOCAB, j.name
        assert j.issn and re.fullmatch(r"\d{4}-\d{3}[\dX]", j.issn), j.name
        assert j.translated_title
        if j.composite_if is not None:
            assert round(j.composite_if, 3) == j.composite_if and j.metric_year == 2025
    tiers = Counter(t for j in corpus.journals for t in j.tiers)
    assert {"CSSCI", "CSSCI扩展版", "北大核心", "CSCD", "EI", "SCI"} <= set(tiers)
    assert any(t.startswith("AMI") for t in tiers)
    assert any(not j.tiers for j in corpus.journals)
    assert sum(1 for j in corpus.journals if j.former_titles) >= 5
    assert all(re.fullmatch(r"\d{2}-\d{4}/[A-Z0-9]+", j.cn) for j in corpus.journals if j.cn)


def test_every_journal_record_source_resolves_to_a_current_or_former_title(corpus: Corpus) -> None:
    current = {j.name for j in corpus.journals}
    former = {t: j.name for j in corpus.journals for t in j.former_titles}
    by_former = Counter()
    for r in corpus.records:
        if r.type in ("期刊", "外文期刊"):
            assert r.source in current or r.source in former, (r.id, r.source)
            if r.source in former:
                by_former[former[r.source]] += 1
                assert r.year is not None and r.year <= 2020
    assert sum(by_former.values()) >= 3


def test_references_resolve_to_older_or_same_year_records_and_cited_counts_cover_citers(corpus: Corpus) -> None:
    with_refs = [r for r in corpus.records if r.references]
    journal_like = [r for r in corpus.records if r.type in ("期刊", "博士", "硕士")]
    assert len(with_refs) >= 0.6 * len(journal_like)
    for r in with_refs:
        assert len(r.references) <= 15 and len(set(r.references)) == len(r.references)
        for ref in r.references:
            assert ref in corpus.by_id, (r.id, ref)
            assert ref != r.id
            assert corpus.by_id[ref].year <= r.year, (r.id, ref)
    links = [(r, corpus.by_id[x]) for r in with_refs for x in r.references]
    same_topic = sum(a.extra["topic"] == b.extra["topic"] for a, b in links)
    assert same_topic / len(links) >= 0.7
    assert sum(1 for r in with_refs if len(r.references) >= 3) >= 0.8 * len(with_refs)
    for r in corpus.records:
        assert r.cited >= len(corpus.citing_ids.get(r.id, []))
    assert max(len(v) for v in corpus.citing_ids.values()) >= 10


def test_cited_and_downloads_are_long_tailed_with_some_over_ten_thousand(corpus: Corpus) -> None:
    cited = sorted(r.cited for r in corpus.records)
    assert any(c > 10000 for c in cited)
    assert any(r.downloads > 10000 for r in corpus.records)
    assert cited[len(cited) // 2] < 100  # median small, tail long
    assert sum(1 for c in cited if c == 0) >= 10


def test_at_least_fifty_records_carry_structured_full_text_and_one_is_long(corpus: Corpus) -> None:
    with_text = [r for r in corpus.records if r.fulltext]
    assert len(with_text) >= 50
    for r in with_text:
        body = [s for s in r.fulltext if s.heading != "参考文献"]
        assert 6 <= len(body) <= 16, r.id
        assert all(s.level in (1, 2) and s.heading and len(s.text) >= 300 for s in body), r.id
        assert any(s.level == 2 for s in body), r.id
    assert max(sum(len(s.text) for s in r.fulltext) for r in with_text) > 20000
    assert any(r.fulltext[-1].heading == "参考文献" for r in with_text)
    assert any(r.fulltext[0].heading.startswith("一、") for r in with_text)
    assert any(re.match(r"\d+\.\d+ ", s.heading) for r in with_text for s in r.fulltext)


def test_same_title_pairs_keep_distinct_records_with_different_first_authors(corpus: Corpus) -> None:
    by_title: dict[str, list[SimRecord]] = defaultdict(list)
    for r in corpus.records:
        by_title[r.title].append(r)
    pairs = [rs for rs in by_title.values() if len(rs) > 1 and len({x.authors[0].name for x in rs if x.authors}) == len(rs)]
    distinct = [rs for rs in pairs if len({(x.source, x.year) for x in rs}) == len(rs)]
    assert len(distinct) >= 10


def test_shared_keywords_connect_records_that_use_different_synonyms(corpus: Corpus) -> None:
    counts = Counter(k for r in corpus.records for k in r.keywords)
    assert sum(1 for c in counts.values() if c >= 10) >= 10
    main = [r for r in corpus.records if "自动驾驶" in _text(r)]
    synonym_only = [r for r in corpus.records if "无人驾驶" in _text(r) and "自动驾驶" not in _text(r)]
    assert synonym_only, "a search for 自动驾驶 must miss some records"
    main_keywords = {k for r in main for k in r.keywords} - {"自动驾驶汽车"}
    assert any(set(r.keywords) & main_keywords for r in synonym_only)


def test_type_specific_fields_are_filled(corpus: Corpus) -> None:
    for r in corpus.records:
        if r.type in ("博士", "硕士"):
            assert r.supervisor and r.place and r.source == r.place and r.filename.endswith(".nh"), r.id
        elif r.type == "会议":
            assert r.conference and r.source and r.db == "CPFD", r.id
        elif r.type == "报纸":
            assert r.date and DATE_RE.match(r.date) and r.abstract and len(r.abstract) < 200, r.id
        elif r.type == "图书":
            assert r.publisher and r.place, r.id
        elif r.type == "外文期刊":
            assert r.title.isascii() and r.extra.get("language") == "en", r.id
    online = [r for r in corpus.records if r.online_first]
    assert len(online) >= 5
    assert all(r.type == "期刊" and r.year == 2026 and not r.issue and not r.pages for r in online)
    assert corpus.by_id["r0001"].dbname.startswith("CJFD")
    assert online[0].dbname == "CAPJLAST"


def test_tricky_records_exercise_quoting_marks_role_suffixes_and_author_counts(corpus: Corpus) -> None:
    titles = [r.title for r in corpus.records]
    for needle in ("C++", "/", "%", "(", "-", '"', "《"):
        assert any(needle in t for t in titles), needle
    assert any('"' in t and "'" in t for t in titles)
    assert any(r.type == "报纸" and re.search(r"[(（](文|编)[)）]$", a.name) for r in corpus.records for a in r.authors)
    author_counts = Counter(len(r.authors) for r in corpus.records)
    assert {1, 3, 4} <= set(author_counts) and max(author_counts) >= 8
    assert any(r.type == "外文期刊" and len(r.authors) >= 8 for r in corpus.records)
    assert any(r.year is None and r.source is None for r in corpus.records)
    assert any(r.doi for r in corpus.records) and any(r.type == "期刊" and not r.doi for r in corpus.records)
    assert any(r.funds and "&ZD" in r.funds[0] for r in corpus.records)


def test_questions_carry_graded_labels_for_existing_records(corpus: Corpus, questions: list[dict]) -> None:
    assert len(questions) >= 20
    assert len({q["id"] for q in questions}) == len(questions)
    for q in questions:
        assert q["question"] and q["concepts"] and all(isinstance(g, list) and g for g in q["concepts"])
        rel = q["relevant"]
        assert all(i in corpus.by_id for i in rel), q["id"]
        assert set(rel.values()) <= {1, 2, 3}
        assert sum(1 for g in rel.values() if g == 3) >= 3, q["id"]
        assert len(rel) >= 10, q["id"]


def test_highly_relevant_records_mention_every_question_concept(corpus: Corpus, questions: list[dict]) -> None:
    covered = total = 0
    for q in questions:
        for rid, grade in q["relevant"].items():
            if grade == 3:
                text = _text(corpus.by_id[rid]).lower()
                total += 1
                covered += all(any(a.lower() in text for a in g) for g in q["concepts"])
    assert covered / total >= 0.8


def test_generator_reproduces_the_bundled_files_byte_for_byte(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run([sys.executable, str(REPO / "scripts" / "gen_corpus.py"), "--out", str(tmp_path)],
                         capture_output=True, text=True, env=env, check=True)
    assert "records:" in out.stdout
    for name in ("records.jsonl", "journals.jsonl", "questions.jsonl"):
        assert (tmp_path / name).read_bytes() == (DEFAULT_CORPUS_DIR / name).read_bytes(), name
    assert sum((DEFAULT_CORPUS_DIR / n).stat().st_size for n in ("records.jsonl", "journals.jsonl", "questions.jsonl")) < 4_000_000
