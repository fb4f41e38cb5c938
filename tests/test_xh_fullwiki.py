# Copyright 2026 The gesa authors. All rights reserved.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.
"""HotpotQA FullWiki (paper A.1): the abstracts corpus read (bz2 or plain JSON lines, hyperlinks resolved, one error
per bad line), the retrieval (BM25 + title-named articles re-ranked, expansion along hyperlinks for bridge questions,
training graphs with their supporting paragraphs), hyperlink edges and anchor text in the nodes, the re-ranker's
features, and one command (`run_multihop.py --hotpot_setting fullwiki --corpus_dir DIR`) from a corpus folder to the
official prediction file, scored by the official script on the shared sample."""

from __future__ import annotations

import ast
import bz2
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hotpot_fever_fixtures import hotpot_fixture_rows
from script_helpers import load_multihop_script, multihop_error_line
from tiny_luke import SHARED
from transformers import AutoTokenizer

from gesa.inputs_gesa import InputError
from gesa.processing_xh_tasks import XhTaskProcessor
from gesa.records_xh import hotpot_supporting_facts, read_hotpot_file, to_hotpot_row
from gesa.training.abstracts import abstracts_line, read_abstracts_corpus
from gesa.training.fullwiki_graphs import FullWikiRetriever
from gesa.training.resources import load_metric
from gesa.training.xh_fullwiki import (
    RANKER,
    Reranker,
    abstracts_from_paragraphs,
    hotpot_paragraphs,
    write_abstracts_corpus,
)
from gesa.training.xh_paper import COMPONENTS

# ---------------------------------------------------------------------------------------------
# The corpus
# ---------------------------------------------------------------------------------------------


def _line(title: str, text: list[str], linked: list[str] | None = None, index: int = 0) -> dict:
    return {"id": str(index), "url": f"https://en.wikipedia.org/wiki?curid={index}", "title": title, "text": text,
            "text_with_links": linked if linked is not None else list(text), "charoffset": []}  # fmt: skip


def _write(path: Path, rows: list, compress: bool) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows)
    if compress:
        path.write_bytes(bz2.compress(text.encode("utf-8")))
    else:
        path.write_text(text, encoding="utf-8")
    return path


def test_abstracts_corpus_reads_bz2_and_plain_files_and_resolves_hyperlinks(tmp_path):
    _write(tmp_path / "AA" / "wiki_00.bz2", [
        _line("Facebook", ["Facebook was founded at Harvard.", " It is in Menlo Park."],
              ['Facebook was founded at <a href="harvard%20University">Harvard</a>.',
               ' It is in <a href="Menlo_Park">Menlo Park</a> and <a href="Nowhere%20Page">nowhere</a>.']),
        _line("Harvard University", ["Harvard University is in Cambridge."],
              ['Harvard University is in <a href="Cambridge%2C%20Massachusetts">Cambridge</a>.'], 1),
    ], compress=True)  # fmt: skip
    _write(tmp_path / "AB" / "wiki_00", [
        _line("Cambridge, Massachusetts", ["Cambridge is a city."], index=2),
        _line("Menlo Park", ["Menlo Park is a city in <California>."], ["Menlo Park is a city in <California>."], 3),
        _line("Empty page", [], [], 4),
    ], compress=False)  # fmt: skip
    _write(tmp_path / "AB" / "wiki_01", [_line("Red Dwarf", ["A sitcom."], ['A <a href="red%20dwarf">dwarf</a>.'], 5),
                                          _line("Red dwarf", ["A star."], index=6)], compress=False)  # fmt: skip
    (tmp_path / ".hidden").write_text("not read")
    corpus = read_abstracts_corpus(tmp_path)
    assert list(corpus.articles) == [
        "Facebook",
        "Harvard University",
        "Cambridge, Massachusetts",
        "Menlo Park",
        "Red Dwarf",
        "Red dwarf",
    ]  # titles differing in case are two articles
    assert corpus.articles["Red Dwarf"].links == [("Red dwarf", "dwarf", 0)]  # first letter up, the rest as written
    # hrefs are URL-quoted titles (first letter or case may differ); a page outside the corpus is left out
    assert corpus.articles["Facebook"].links == [("Harvard University", "Harvard", 0), ("Menlo Park", "Menlo Park", 1)]
    assert corpus.articles["Harvard University"].links == [("Cambridge, Massachusetts", "Cambridge", 0)]
    assert corpus.articles["Facebook"].sentences == ["Facebook was founded at Harvard.", " It is in Menlo Park."]
    assert corpus.neighbours("Harvard University") == ["Cambridge, Massachusetts", "Facebook"]  # out, then in
    assert corpus.anchors("Facebook", "Harvard University") == ["Harvard"]


def test_abstracts_line_round_trips_through_the_reader(tmp_path):
    line = abstracts_line(7, "Lyon", ["Lyon lies on the Rhone.", " It is in France."], {1: [(10, 16, "France")]})
    assert line["text_with_links"][1] == ' It is in <a href="France">France</a>.'
    _write(tmp_path / "AA" / "wiki_00.bz2", [line, _line("France", ["France is a country."], index=8)], True)
    corpus = read_abstracts_corpus(tmp_path)
    assert corpus.articles["Lyon"].links == [("France", "France", 1)]
    assert corpus.linked_from == {"France": ["Lyon"]}


@pytest.mark.parametrize(
    ("row", "problem"),
    [
        ("{not json", "not valid JSON"),
        ('["a list"]', "must be a JSON object"),
        (json.dumps({"id": "9", "text": ["x"]}), "'title' must be a non-empty string"),
        (json.dumps({"title": "T", "text": "one string"}), "'text' must be the list"),
        (json.dumps({"title": "T", "text": ["a", "b"], "text_with_links": ["a"]}), "'text_with_links' must be a list"),
        (json.dumps(_line("Lyon", ["again"])), "also the title of the article at"),
    ],
)  # fmt: skip
def test_a_bad_corpus_line_is_one_error_naming_its_file_and_line(tmp_path, row, problem):
    path = _write(tmp_path / "AA" / "wiki_01.bz2", [_line("Lyon", ["Lyon is a city."]), row], compress=True)
    with pytest.raises(InputError) as raised:
        read_abstracts_corpus(tmp_path, "--corpus_dir")
    message = str(raised.value)
    assert message.startswith(f"--corpus_dir {path}, line 2: ") and problem in message, message


def test_a_missing_or_empty_corpus_folder_or_a_damaged_bz2_file_is_one_error(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        read_abstracts_corpus(tmp_path / "nowhere")
    with pytest.raises(InputError, match="holds no file"):
        read_abstracts_corpus(tmp_path)
    good = bz2.compress(("\n".join(json.dumps(_line(f"T{i}", ["x"], index=i)) for i in range(400)) + "\n").encode())
    (tmp_path / "AA").mkdir()
    (tmp_path / "AA" / "wiki_00.bz2").write_bytes(good[: len(good) // 2])
    with pytest.raises(InputError, match=r"wiki_00\.bz2, line \d+: the bzip2 data stops being readable"):
        read_abstracts_corpus(tmp_path)


# ---------------------------------------------------------------------------------------------
# Retrieval
# ---------------------------------------------------------------------------------------------

ARTICLES = [
    ("Facebook", ["Facebook is a social network founded by Mark Zuckerberg.", " It started at Harvard University."]),
    ("Harvard University", ["Harvard University is a university in Cambridge."]),
    ("Cambridge", ["Cambridge is a city in Massachusetts."]),
    ("Mark Zuckerberg", ["Mark Zuckerberg is a programmer."]),
    ("Twitter", ["Twitter is a social network."]),
    ("Myspace", ["Myspace was a social network."]),
    ("The", ["The is an article of English."]),
]
QUESTION = "In which city is the university where the founder of the social network Facebook studied?"


def _corpus(tmp_path: Path):
    write_abstracts_corpus(tmp_path / "corpus", abstracts_from_paragraphs(ARTICLES), per_file=3)
    return read_abstracts_corpus(tmp_path / "corpus")


def _scores(order: list[str]):
    """A re-ranker double: the articles in ``order`` score highest first, the others 0."""
    calls = []

    def score(questions: list[str], candidates: list[list[str]]) -> list[list[float]]:
        calls.extend(list(titles) for titles in candidates)
        return [[float(len(order) - order.index(t)) if t in order else 0.0 for t in titles] for titles in candidates]

    return score, calls


def test_corpus_written_from_paragraphs_links_where_a_paragraph_names_another_title(tmp_path):
    corpus = _corpus(tmp_path)
    assert [t for t, _, _ in corpus.articles["Facebook"].links] == ["Mark Zuckerberg", "Harvard University"]
    assert corpus.articles["Harvard University"].links == [("Cambridge", "Cambridge", 0)]
    assert corpus.articles["Twitter"].links == []


def test_first_stage_keeps_the_top_reranked_bm25_and_title_named_articles_then_expands_along_hyperlinks(tmp_path):
    corpus = _corpus(tmp_path)
    score, calls = _scores(["Facebook", "Harvard University", "Cambridge", "Twitter", "Myspace"])
    retriever = FullWikiRetriever(corpus, score, candidates=3, keep=1, expand=1)
    row = {"id": "q", "question": QUESTION, "answer": "Cambridge", "supporting_facts": {"title": [], "sent_id": []}}
    assert retriever.linked_entities(QUESTION) == {"facebook": ["Facebook"]}  # "The" names nothing: a stop word
    [graph] = retriever.retrieve([row], expand=True)
    bm25 = [retriever.titles[i] for i, _ in retriever.index.search([QUESTION], 3)[0]]
    assert calls[0] == list(dict.fromkeys(bm25 + ["Facebook"]))  # D_ir and D_el re-ranked together
    # first stage: the best BM25 article and the best one per title named, then the best neighbour of those
    first = sorted(bm25, key=lambda t: -dict(zip(calls[0], score([QUESTION], [calls[0]])[0], strict=True))[t])[0]
    assert graph["context"]["title"][: len({first, "Facebook"})] == list(dict.fromkeys(["Facebook", first]))
    assert set(calls[1]) == {t for f in {first, "Facebook"} for t in corpus.neighbours(f)} - {first, "Facebook"}
    assert len(graph["context"]["title"]) == len({first, "Facebook"}) + 1
    assert graph["context"]["sentences"] == [corpus.articles[t].sentences for t in graph["context"]["title"]]
    # edges are the corpus's links among the nodes; anchors the texts of the links into each node
    titles = graph["context"]["title"]
    assert graph["hyperlinks"] == [[a, b] for a in titles for b, _, _ in corpus.articles[a].links if b in titles]
    for title, anchors in zip(titles, graph["anchors"], strict=True):
        assert anchors == [x for a in titles for x in corpus.anchors(a, title)]
    # comparison questions are not expanded (A.1)
    [plain] = retriever.retrieve([row], expand=False)
    assert plain["context"]["title"] == titles[: len({first, "Facebook"})]
    assert plain["answer"] == "Cambridge" and plain["id"] == "q"


def test_training_graphs_hold_their_supporting_paragraphs(tmp_path):
    corpus = _corpus(tmp_path)
    score, _ = _scores(["Twitter"])
    retriever = FullWikiRetriever(corpus, score, candidates=2, keep=1, expand=0, link_entities=False)
    row = {"id": "q", "question": "Which social network?", "answer": "x",
           "supporting_facts": {"title": ["Cambridge", "Facebook"], "sent_id": [0, 0]}}  # fmt: skip
    [graph] = retriever.retrieve([row], include_gold=True)
    assert graph["context"]["title"][:2] == ["Cambridge", "Facebook"] and "Twitter" in graph["context"]["title"]
    [evaluated] = retriever.retrieve([row], include_gold=False)
    assert "Cambridge" not in evaluated["context"]["title"]
    missing = {**row, "supporting_facts": {"title": ["Not In Corpus"], "sent_id": [0]}, "location": "f.json, item 3"}
    with pytest.raises(InputError, match=r"f\.json, item 3: HotpotQA question 'q': supporting paragraph 'Not In Corp"):
        retriever.retrieve([missing], include_gold=True)


def test_retrieved_graph_edges_follow_hyperlinks_and_nodes_read_question_anchor_text_paragraph(tiny_luke_dir):
    tokenizer = AutoTokenizer.from_pretrained(tiny_luke_dir)
    processor = XhTaskProcessor(tokenizer, max_node_length=96, max_query_length=40)
    item = {"_id": "q", "question": "Where is it?", "answer": "Cambridge", "supporting_facts": [["B", 0]],
            "context": [["A", ["A links to B."]], ["B", ["B is in Cambridge."]], ["C", ["C names B too."]]],
            "hyperlinks": [["A", "B"]], "anchors": [[], ["the B", "B"], []]}  # fmt: skip
    row = to_hotpot_row(item, "f.json, item 1", "x")
    feature = processor.encode_hotpot_rows([row])[0]
    # A links to B: B reads A (C mentions B, but links to nothing)
    assert feature["node_adjacency"] == [[0, 0, 0], [1, 0, 0], [0, 0, 0]]
    question = processor._tokens("Where is it?", leading_space=False)
    anchors = processor._tokens("the B; B", leading_space=False)
    paragraph = processor._tokens("B: B is in Cambridge.", False)
    expected, _, _ = processor._node(question + [tokenizer.sep_token_id] + anchors, paragraph)
    assert feature["input_ids"][1] == expected
    plain, _, _ = processor._node(question, processor._tokens("A: A links to B.", False))
    assert feature["input_ids"][0] == plain
    # the answer span and the sentence boundaries still point into the paragraph
    span = feature["input_ids"][1][feature["start_positions"] : feature["end_positions"] + 1]
    assert tokenizer.decode(span).strip() == "Cambridge"
    with pytest.raises(InputError, match="'hyperlinks' must be"):
        to_hotpot_row({**item, "hyperlinks": [["A", "Z"]]}, "f.json, item 1", "x")
    with pytest.raises(InputError, match="'anchors' must hold one list"):
        to_hotpot_row({**item, "anchors": [[]]}, "f.json, item 1", "x")


def test_reranker_features_train_only_the_relevance_of_each_article_read_alone(tmp_path, tiny_luke_dir):
    corpus = _corpus(tmp_path)
    processor = XhTaskProcessor(AutoTokenizer.from_pretrained(tiny_luke_dir), max_node_length=64, max_query_length=24)
    reranker = Reranker(model=None, processor=processor, corpus=corpus, chunk=2)
    row = {"id": "q", "question": QUESTION, "supporting_facts": {"title": ["Cambridge"], "sent_id": [0]}}
    features = reranker.features([row], [["Facebook", "Cambridge", "Twitter"]], labelled=True)
    assert [f["titles"] for f in features] == [["Facebook", "Cambridge"], ["Twitter"]]
    assert [f["node_labels"] for f in features] == [[0, 1], [0]]
    assert all(label == -100 for f in features for sentence in f["sentence_labels"] for label in sentence)
    assert not {"relevant_node", "start_positions", "answer_type"} & set(features[0])
    alone = processor._node(processor._tokens(QUESTION, False)[:24], processor._tokens(
        "Cambridge: Cambridge is a city in Massachusetts.", False))[0]  # fmt: skip
    assert features[0]["input_ids"][1] == alone


# ---------------------------------------------------------------------------------------------
# One command
# ---------------------------------------------------------------------------------------------

ARGS = ["--variant", "xh", "--per_device_train_batch_size", "4", "--learning_rate", "3e-3", "--logging_steps", "2",
        "--save_strategy", "no", "--report_to", "none", "--seed", "0", "--use_cpu", "true",
        "--dataloader_pin_memory", "false", "--max_seq_length", "64", "--max_query_length", "24"]  # fmt: skip
KEYS = {"em", "f1", "prec", "recall", "sp_em", "sp_f1", "sp_prec", "sp_recall", "joint_em", "joint_f1", "joint_prec",
        "joint_recall"}  # fmt: skip


def _fixture_corpus(tmp_path: Path) -> tuple[Path, Path]:
    rows = hotpot_fixture_rows()
    (tmp_path / "train.json").write_text(json.dumps(rows))
    corpus = write_abstracts_corpus(tmp_path / "corpus", abstracts_from_paragraphs(hotpot_paragraphs(rows)), 3)
    return tmp_path / "train.json", corpus


def test_fullwiki_flags_are_checked_before_anything_loads(tiny_luke_dir, tmp_path, capsys):
    train, corpus = _fixture_corpus(tmp_path)
    base = ["--task", "hotpotqa", "--model_name_or_path", str(tiny_luke_dir), "--output_dir", str(tmp_path / "o"),
            "--validation_file", str(train), "--do_eval", *ARGS]  # fmt: skip
    assert "needs --corpus_dir" in multihop_error_line(capsys, [*base, "--hotpot_setting", "fullwiki"])
    line = multihop_error_line(capsys, [*base, "--corpus_dir", str(tmp_path)])
    assert "--hotpot_setting distractor does not read --corpus_dir (FullWiki's Wikipedia abstracts; only" in line
    line = multihop_error_line(capsys, [*base, "--hotpot_setting", "fullwiki", "--corpus_dir", str(tmp_path / "no")])
    assert line.endswith(f"error: --corpus_dir {tmp_path / 'no'}: does not exist; give the folder of the abstracts "
                         "(enwiki-...-abstracts: AA/wiki_00.bz2, ...)")  # fmt: skip
    line = multihop_error_line(capsys, [*base, "--hotpot_setting", "fullwiki", "--corpus_dir", str(corpus)])
    assert "needs a trained re-ranker" in line and "--do_train" in line
    fever = ["--task", "fever", *base[2:], "--hotpot_setting", "fullwiki", "--corpus_dir", str(corpus)]
    assert "--task fever does not read --corpus_dir" in multihop_error_line(capsys, fever)


def _official_scores(prediction_file: Path, rows: list[dict]) -> dict[str, float]:
    payload = json.loads(prediction_file.read_text())
    predictions = [{"id": r["id"], "answer": payload["answer"][r["id"]], "sp": payload["sp"][r["id"]]} for r in rows]
    references = [{"id": r["id"], "answer": r["answer"], "supporting_facts": hotpot_supporting_facts(r)} for r in rows]
    return load_metric("hotpotqa").compute(predictions=predictions, references=references)


@pytest.mark.slow
@pytest.mark.parametrize("system", ["paper", "joint"])
def test_fullwiki_run_from_a_corpus_folder_writes_the_official_file(tiny_luke_dir, tmp_path, system):
    train, corpus = _fixture_corpus(tmp_path)
    output_dir = tmp_path / "out"
    argv = ["--task", "hotpotqa", "--model_name_or_path", str(tiny_luke_dir), "--output_dir", str(output_dir),
            "--train_file", str(train), "--validation_file", str(train), "--do_train", "--do_eval",
            "--num_train_epochs", "6", "--system", system, "--hotpot_setting", "fullwiki", "--corpus_dir", str(corpus),
            "--retrieval_candidates", "4", "--retrieval_keep", "1", "--retrieval_expand", "2", *ARGS]  # fmt: skip
    if system == "joint":  # the joint model evaluates during training; the re-ranker trains without
        argv += ["--eval_strategy", "steps", "--eval_steps", "3"]
    results = load_multihop_script().main(argv)
    assert {f"eval_{k}" for k in KEYS} <= set(results)
    assert (output_dir / RANKER / "config.json").is_file() and not (output_dir / RANKER / "training_args.bin").exists()
    ranker = json.loads((output_dir / RANKER / "config.json").read_text())
    assert ranker["xh_num_hop_layers"] == 0 and ranker["architectures"] == ["XhForSupportingFacts"]
    if system == "paper":
        assert all((output_dir / name / "config.json").is_file() for name in COMPONENTS)
    rows = read_hotpot_file(train)
    scores = _official_scores(output_dir / "eval_predictions.json", rows)  # fractions; the script reports percent
    assert {k: pytest.approx(100 * v) for k, v in scores.items()} == {
        k[5:]: v for k, v in results.items() if k[5:] in KEYS
    }
    # every predicted supporting fact is a sentence of an article of the corpus
    corpus_articles = read_abstracts_corpus(corpus).articles
    payload = json.loads((output_dir / "eval_predictions.json").read_text())
    assert all(t in corpus_articles and s < len(corpus_articles[t].sentences) for facts in payload["sp"].values()
               for t, s in facts)  # fmt: skip
    if system == "paper":  # the saved run (its ranker included) evaluates again without training: same file
        again = tmp_path / "again"
        argv = ["--task", "hotpotqa", "--model_name_or_path", str(output_dir), "--output_dir", str(again),
                "--validation_file", str(train), "--do_eval", "--system", "paper", "--hotpot_setting", "fullwiki",
                "--corpus_dir", str(corpus), "--retrieval_candidates", "4", "--retrieval_keep", "1",
                "--retrieval_expand", "2", *ARGS]  # fmt: skip
        load_multihop_script().main(argv)
        assert (again / "eval_predictions.json").read_text() == (output_dir / "eval_predictions.json").read_text()


@pytest.mark.slow
@pytest.mark.needs_shared
def test_fullwiki_paper_system_on_the_shared_sample_scored_by_the_official_script(roberta_luke_dir, tmp_path):
    """The shared 100 dev questions' paragraphs (gold and distractors) as the abstracts corpus, hyperlinks where a
    paragraph names another's title; train on 80, retrieve and answer the other 20, score with hotpot_evaluate_v1."""
    official = Path(os.environ.get("GESA_OFFICIAL_SCORERS", "")) / "hotpot_evaluate_v1.py"
    if not os.environ.get("GESA_OFFICIAL_SCORERS") or not official.is_file():
        pytest.skip("GESA_OFFICIAL_SCORERS names no folder with hotpot_evaluate_v1.py (docs/multihop.md)")
    rows = json.loads((SHARED / "data" / "hotpotqa" / "hotpot_dev_distractor_first100.json").read_text())
    corpus = write_abstracts_corpus(tmp_path / "corpus", abstracts_from_paragraphs(hotpot_paragraphs(rows)))
    (tmp_path / "train.json").write_text(json.dumps(rows[:80]))
    (tmp_path / "dev.json").write_text(json.dumps(rows[80:]))
    output_dir = tmp_path / "out"
    argv = ["--task", "hotpotqa", "--model_name_or_path", str(roberta_luke_dir), "--output_dir", str(output_dir),
            "--train_file", str(tmp_path / "train.json"), "--validation_file", str(tmp_path / "dev.json"),
            "--do_train", "--do_eval", "--num_train_epochs", "1", "--system", "paper", "--hotpot_setting", "fullwiki",
            "--corpus_dir", str(corpus), "--retrieval_candidates", "10", "--retrieval_expand", "4",
            "--ranker_negatives", "4", *ARGS]  # fmt: skip
    results = load_multihop_script().main(argv)
    dev = read_hotpot_file(tmp_path / "dev.json")
    gold = [{"_id": r["id"], "answer": r["answer"], "supporting_facts": hotpot_supporting_facts(r)} for r in dev]
    (tmp_path / "gold.json").write_text(json.dumps(gold))
    run = subprocess.run([sys.executable, str(official), str(output_dir / "eval_predictions.json"),
                          str(tmp_path / "gold.json")], capture_output=True, text=True)  # fmt: skip
    assert run.returncode == 0, run.stderr
    scores = ast.literal_eval(run.stdout.strip().splitlines()[-1])
    assert set(scores) == KEYS
    for key, value in scores.items():
        assert results[f"eval_{key}"] == pytest.approx(100 * value, abs=1e-7), key  # reported in percent
