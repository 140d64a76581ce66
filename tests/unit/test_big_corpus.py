"""The generated labelled corpora (`scripts/gen_big_corpus.py`): deterministic, labels that follow
content rather than titles, sources of every quality among the relevant, loadable by the simulator.

Checked on a tenth-scale corpus (~1,100 records) so the module stays cheap; the full-scale figures
(records, matches per channel) are in docs/simulator.md "Large labelled corpora"."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from cnki_mcp.sim.corpus import Corpus
from cnki_mcp.sim.query import Sort, parse_query_json, search
from tests.generated_corpus import GENERATOR, corpus_generator

SCALE = 0.1
# sha256 over records/journals/questions of `generate(out, "main", 0.1)`; changes only with the
# generator (then bump GENERATOR_VERSION there and update this pin).
PINNED_MAIN_X01 = "ccb68a63230216b16ae518c986848f99e50fb26b726be86ca1db7561af22bc14"


@pytest.fixture(scope="module")
def gen() -> Any:
    return corpus_generator()


@pytest.fixture(scope="module")
def main_dir(gen: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("big-main")
    gen.generate(out, "main", SCALE)
    return out


@pytest.fixture(scope="module")
def records(main_dir: Path) -> dict[str, dict[str, Any]]:
    rows = [json.loads(x) for x in (main_dir / "records.jsonl").read_text(encoding="utf-8").splitlines()]
    return {r["id"]: r for r in rows}


@pytest.fixture(scope="module")
def questions(main_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (main_dir / "questions.jsonl").read_text(encoding="utf-8").splitlines()]


def test_generation_is_deterministic_across_processes_and_hash_seeds(gen: Any, main_dir: Path, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONHASHSEED": "4242"}
    subprocess.run([sys.executable, str(GENERATOR), "--variant", "main", "--scale", str(SCALE), "--out", str(tmp_path)],
                   capture_output=True, text=True, env=env, check=True)
    assert gen.checksum(tmp_path) == gen.checksum(main_dir) == PINNED_MAIN_X01
    manifest = json.loads((tmp_path / "MANIFEST.json").read_text(encoding="utf-8"))
    assert manifest["sha256"] == PINNED_MAIN_X01 and manifest["generator"] == gen.GENERATOR_VERSION


def test_ensure_corpus_reuses_a_valid_cache_and_regenerates_a_tampered_one(gen: Any, tmp_path: Path) -> None:
    out = gen.ensure_corpus("main", SCALE, root=tmp_path)
    first = (out / "records.jsonl").stat().st_mtime_ns
    assert gen.ensure_corpus("main", SCALE, root=tmp_path) == out
    assert (out / "records.jsonl").stat().st_mtime_ns == first  # not written again
    with (out / "records.jsonl").open("a", encoding="utf-8") as fh:
        fh.write("\n")
    gen.ensure_corpus("main", SCALE, root=tmp_path)
    assert gen.checksum(out) == PINNED_MAIN_X01


def test_questions_have_explicit_concepts_and_graded_labels(questions: list[dict[str, Any]], records: dict) -> None:
    assert len(questions) >= 20
    for q in questions:
        assert len(q["concepts"]) == 2 and all(q["concepts"]), q["id"]
        assert set(q["relevant"].values()) <= {1, 2, 3} and set(q["relevant"]) <= set(records)
        assert Counter(q["relevant"].values())[3] >= 3, q["id"]  # ~90 at full scale


def _names(title: str, group: list[str]) -> bool:
    return any(t.casefold() in title.casefold() for t in group)


def test_titles_alone_do_not_decide_relevance(questions: list[dict[str, Any]], records: dict) -> None:
    generic_best = decoys = 0
    for q in questions:
        topic, facet = q["concepts"]
        for rid, r in records.items():
            g = q["relevant"].get(rid, 0)
            text = r.get("abstract", "") + " ".join(r.get("keywords", []))
            if g == 3 and not _names(r["title"], topic) and not _names(r["title"], facet):
                generic_best += 1
                assert _names(text, topic) and _names(text, facet), rid  # the concepts are in abstract/keywords
            if g == 0 and _names(r["title"], topic) and _names(r["title"], facet):
                decoys += 1
    assert generic_best >= len(questions)  # on average one per question even at a tenth of the size
    assert decoys >= len(questions) // 2


def test_relevant_sets_span_source_tiers_and_document_types(
    questions: list[dict[str, Any]], records: dict, main_dir: Path
) -> None:
    tiers = {j.name: j.tiers for j in Corpus.load(main_dir).journals}

    def kind(r: dict[str, Any]) -> str:
        if r["type"] != "期刊":
            return r["type"]
        t = tiers.get(r["source"], ())
        return "CSSCI" if "CSSCI" in t else "core" if t else "ordinary"

    spread: Counter[str] = Counter()
    for q in questions:
        spread.update({kind(records[rid]) for rid, g in q["relevant"].items() if g >= 2})
    # questions (of 24, at a tenth of the size) whose grade >= 2 papers include each kind of source
    assert spread["ordinary"] >= 20 and spread["硕士"] >= 18 and spread["core"] >= 12 and spread["CSSCI"] >= 8
    assert spread["会议"] >= 8 and spread["博士"] >= 6


def test_simulator_loads_the_corpus_and_its_subject_search_mixes_relevant_and_not(
    main_dir: Path, questions: list[dict[str, Any]]
) -> None:
    corpus = Corpus.load(main_dir)
    q = questions[0]
    row = lambda terms: {"Field": "SU", "Operator": "DEFAULT", "Value": " + ".join(f"'{t}'" for t in terms)}  # noqa: E731
    query = {"QNode": {"QGroup": [{"Key": "Subject", "Items": [row(q["concepts"][0]), row(q["concepts"][1])]}]}}
    hits = search(corpus, parse_query_json(json.dumps(query, ensure_ascii=False)), Sort.FFD)
    grades = Counter(q["relevant"].get(r.id, 0) for r in hits)
    assert grades[3] >= 3 and grades[1] + grades[2] >= 10 and grades[0] >= 5, grades


def test_heldout_variant_has_other_questions_and_other_records(gen: Any, tmp_path: Path, questions: list, records: dict) -> None:
    gen.generate(tmp_path, "heldout", SCALE)
    held = [json.loads(x) for x in (tmp_path / "questions.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(held) >= 20
    pairs = lambda qs: {(q["topic"], a) for q in qs for a in q["aspects"]}  # noqa: E731
    assert not pairs(held) & pairs(questions)
    first = json.loads((tmp_path / "records.jsonl").read_text(encoding="utf-8").splitlines()[0])
    assert first["title"] != records["r00001"]["title"]


# fields a journal paper takes from its journal: the only ones `diverse` may change
JOURNAL_FIELDS = {"source", "filename", "volume", "issue", "doi", "date"}


def _sources_per_20(out: Path) -> float:
    """Mean distinct sources among 20 relevant records (each question's, by id, in runs of 20)."""
    recs = {r["id"]: r for r in map(json.loads, (out / "records.jsonl").read_text(encoding="utf-8").splitlines())}
    qs = [json.loads(x) for x in (out / "questions.jsonl").read_text(encoding="utf-8").splitlines()]
    runs = []
    for q in qs:
        rel = sorted(q["relevant"])
        runs += [len({recs[i]["source"] for i in rel[k : k + 20]}) for k in range(0, len(rel) - 19, 20)]
    return sum(runs) / len(runs)


def test_the_diverse_variant_is_main_with_its_journal_papers_spread_over_many_journals(
    gen: Any, main_dir: Path, records: dict[str, dict[str, Any]], questions: list[dict[str, Any]], tmp_path: Path
) -> None:
    gen.generate(tmp_path, "diverse", SCALE)
    spread = {r["id"]: r for r in map(json.loads, (tmp_path / "records.jsonl").read_text(encoding="utf-8").splitlines())}
    assert spread.keys() == records.keys()
    moved = 0
    for ref, rec in records.items():
        changed = {k for k in rec.keys() | spread[ref].keys() if rec.get(k) != spread[ref].get(k)}
        assert not changed or (rec["type"] == "期刊" and changed <= JOURNAL_FIELDS), (ref, changed)
        moved += "source" in changed
    assert moved > 0.5 * sum(r["type"] == "期刊" for r in records.values())
    asked = [json.loads(x) for x in (tmp_path / "questions.jsonl").read_text(encoding="utf-8").splitlines()]
    keep = ("question", "concepts", "relevant")
    assert [{k: q[k] for k in keep} for q in asked] == [{k: q[k] for k in keep} for q in questions]
    # the saved real result pages list 16 and 18 distinct sources in 20 rows (docs/simulator.md
    # "Source diversity"); `main` concentrates its papers in a few journals per topic
    diverse, concentrated = _sources_per_20(tmp_path), _sources_per_20(main_dir)
    assert diverse >= 15 and concentrated <= diverse - 4
    corpus = Corpus.load(tmp_path)
    names = {j.name for j in corpus.journals} | {t for j in corpus.journals for t in j.former_titles}
    assert all(r.source in names for r in corpus.records if r.type == "期刊")
    tiered = {j.name for j in corpus.journals if j.tiers}
    relevant = {i for q in asked for i in q["relevant"]}
    kinds = Counter(spread[i]["source"] in tiered for i in relevant if spread[i]["type"] == "期刊")
    assert kinds[True] > 0 and kinds[False] > 0  # source quality still varies among the relevant
