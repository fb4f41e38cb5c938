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
"""FEVER evidence retrieval for claims without candidates: BM25 (bm25s) document retrieval, then sentence selection,
against BM25 scores computed from the formula, or by the backbone's sentence re-ranker; and `run_multihop.py --task
fever --fever_retrieval bm25|bm25_rerank` from blind claims to the official scorer's fields."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import re
from pathlib import Path

import pytest
from bm25s.stopwords import STOPWORDS_EN
from hotpot_fever_fixtures import FEVER_PAGES, fever_fixture_claims, write_fever_pages
from script_helpers import load_multihop_script
from transformers import AutoTokenizer

from gesa.processing_xh_tasks import XhTaskProcessor
from gesa.training.fever_bm25 import Bm25Index, retrieve_fever_evidence
from gesa.training.fever_retrieval import SENTENCE_RANKER, SentenceReranker, training_sentences
from gesa.training.resources import load_metric

STOP = set(STOPWORDS_EN)  # the English stop words the index drops


def plain_bm25(texts: list[str], query: str, k1: float = 1.5, b: float = 0.75) -> list[float]:
    """Lucene's BM25 (since Lucene 8, without the constant `k1 + 1` factor): `sum_t idf(t) * tf / (tf + k1 (1 - b +
    b |d| / avgdl))`,
    `idf = log(1 + (N - df + 0.5) / (df + 0.5))`, over lower-cased words of two or more characters."""

    def words(text: str) -> list[str]:
        return [w for w in re.findall(r"\b\w\w+\b", text.lower()) if w not in STOP]

    docs = [words(t) for t in texts]
    average = sum(map(len, docs)) / len(docs)
    scores = []
    for doc in docs:
        score = 0.0
        for term in set(words(query)):
            df = sum(term in d for d in docs)
            tf = doc.count(term)
            if tf:
                idf = math.log(1 + (len(docs) - df + 0.5) / (df + 0.5))
                score += idf * tf / (tf + k1 * (1 - b + b * len(doc) / average))
        scores.append(score)
    return scores


def test_bm25_index_ranks_as_the_formula():
    texts = ["Lyon is a city in France", "Lyon has two rivers and Lyon has bridges", "Turin makes cars", "Porto wine"]
    query = "Which rivers does Lyon have"
    expected = plain_bm25(texts, query)
    found = Bm25Index(texts).search([query], k=4)[0]
    order = sorted((i for i in range(4) if expected[i] > 0), key=lambda i: -expected[i])
    assert [i for i, _ in found] == order
    assert [s for _, s in found] == pytest.approx([expected[i] for i in order], rel=1e-4)


def test_claims_without_candidates_get_retrieved_pages_and_sentences():
    claims = [{"id": 1, "claim": "Turin makes cars."}, {"id": 2, "claim": "x", "predicted_pages": ["Lyon"]}]
    retrieved = retrieve_fever_evidence(claims, FEVER_PAGES, max_pages=2, max_sentences=3)
    assert retrieved[1] == claims[1]  # carried candidates: unchanged
    assert retrieved[0]["predicted_pages"][0] == "Turin"
    assert retrieved[0]["predicted_sentences"][0] == ["Turin", 1]  # "Turin makes cars."
    assert len(retrieved[0]["predicted_sentences"]) <= 3
    assert "predicted_pages" not in claims[0]  # the input is not modified


def run_fever_xh(luke_dir, tmp_path, files: dict[str, list[dict]], *flags: str) -> tuple:
    """``run_multihop.py --task fever --variant xh`` from `luke_dir` training on the ``--train_file`` of `files`
    (each flag's claims written as JSON lines under `tmp_path`), the fixture's wiki pages beside them, small CPU
    settings, then `flags`; returns the output folder and the run's results."""
    output_dir = tmp_path / "out"
    argv = ["--task", "fever", "--variant", "xh", "--model_name_or_path", str(luke_dir),
            "--output_dir", str(output_dir), "--wiki_pages", str(write_fever_pages(tmp_path)), "--do_train",
            "--per_device_train_batch_size", "4", "--per_device_eval_batch_size", "16",
            "--report_to", "none", "--seed", "0", "--use_cpu", "true", "--dataloader_pin_memory", "false",
            "--max_seq_length", "64", "--max_query_length", "24", *flags]  # fmt: skip
    for flag, claims in files.items():
        path = tmp_path / f"{flag.removeprefix('--').removesuffix('_file')}.jsonl"
        path.write_text("\n".join(json.dumps(c) for c in claims))
        argv += [flag, str(path)]
    return output_dir, load_multihop_script().main(argv)


@pytest.mark.slow
def test_run_multihop_fever_from_blind_claims_with_bm25_retrieval(tiny_luke_dir, tmp_path):
    claims = fever_fixture_claims()
    blind = [{"id": c["id"], "claim": c["claim"]} for c in claims]  # no label, evidence or candidates
    output_dir, _ = run_fever_xh(tiny_luke_dir, tmp_path, {"--train_file": claims, "--test_file": blind},
                                 "--fever_retrieval", "bm25", "--do_predict", "--num_train_epochs", "2",
                                 "--save_strategy", "no")  # fmt: skip
    submitted = [json.loads(line) for line in (output_dir / "predict_predictions.jsonl").read_text().splitlines()]
    assert [s["id"] for s in submitted] == [c["id"] for c in claims]
    # every predicted evidence sentence is one BM25 retrieved from the wiki pages (the claims name none)
    allowed = {(page, line) for page, lines in FEVER_PAGES.items() for line in lines}
    assert all((page, line) in allowed for s in submitted for page, line in s["predicted_evidence"])
    assert any(s["predicted_evidence"] for s in submitted)
    predictions = [{**s, "id": str(s["id"])} for s in submitted]
    references = [{"id": str(c["id"]), "label": c["label"], "evidence": c["evidence"]} for c in claims]
    scores = load_metric("fever").compute(predictions=predictions, references=references)
    assert {"label_accuracy", "fever_score", "evidence_precision", "evidence_recall", "evidence_f1"} <= set(scores)


# ---------------------------------------------------------------------------------------------
# Sentence selection re-ranked by the backbone (--fever_retrieval bm25_rerank)
# ---------------------------------------------------------------------------------------------


def test_sentence_selection_follows_the_rerankers_order_over_the_bm25_pages():
    seen = []

    def score(claim: str, sentences: list) -> list[float]:
        seen.append(list(sentences))
        return [1.0 if sentence == ("Turin", 0) else 0.5 if sentence[0] == "Turin" else 0.0 for sentence in sentences]

    [claim] = retrieve_fever_evidence([{"id": 1, "claim": "Turin makes cars."}], FEVER_PAGES, 2, 2, score=score)
    pages = claim["predicted_pages"]
    assert seen == [[(p, line) for p in pages for line in sorted(FEVER_PAGES[p])]]  # every sentence of the pages
    assert claim["predicted_sentences"] == [["Turin", 0], ["Turin", 1]]  # the re-ranker's order, not BM25's


def test_sentence_reranker_reads_each_sentence_alone_with_its_claim(tiny_luke_dir):
    tokenizer = AutoTokenizer.from_pretrained(tiny_luke_dir)
    processor = XhTaskProcessor(tokenizer, max_node_length=48, max_query_length=16, task="fever", pages=FEVER_PAGES)
    reranker = SentenceReranker(model=None, processor=processor, pages=FEVER_PAGES, chunk=2)
    claims = fever_fixture_claims()[:3]
    kept, candidates = training_sentences(claims, FEVER_PAGES, negatives=2)
    assert [c["id"] for c in kept] == [0, 1]  # NOT ENOUGH INFO has no evidence to learn from
    assert candidates[0] == [("Lyon", 0), ("Lyon", 1)]  # the evidence, then the other sentences of its pages
    features = reranker.features(kept[:1], [[("Lyon", 0), ("Lyon", 1), ("Turin", 1)]])
    assert [f["node_labels"] for f in features] == [[1, 0], [0]]  # two sentences a graph
    claim_ids = processor._tokens("Lyon is in France.", False)
    sentence = processor._tokens("Lyon: Lyon is a city in France.", False)
    assert features[0]["input_ids"][0] == processor._node(claim_ids, sentence)[0]
    assert all(starts == [-1] for f in features for starts in f["sentence_starts"])  # relevance only
    assert "node_labels" not in reranker.features([{"claim": "x"}], [[("Lyon", 1)]])[0]


@pytest.mark.slow
def test_run_multihop_fever_from_blind_claims_with_backbone_reranked_sentences(tiny_luke_dir, tmp_path):
    claims = fever_fixture_claims()  # the dev claims too: no predicted pages/sentences
    output_dir, results = run_fever_xh(tiny_luke_dir, tmp_path, {"--train_file": claims, "--validation_file": claims},
                                       "--fever_retrieval", "bm25_rerank", "--do_eval", "--num_train_epochs", "4",
                                       "--eval_strategy", "steps", "--eval_steps", "4",
                                       "--save_steps", "2",  # the re-ranker evaluates nothing
                                       "--max_nodes", "2")  # fmt: skip
    ranker = json.loads((output_dir / SENTENCE_RANKER / "config.json").read_text())
    assert ranker["xh_num_hop_layers"] == 0 and ranker["architectures"] == ["XhForSupportingFacts"]
    # the component folder keeps its model only: its checkpoints and Trainer files are removed once it is saved
    assert not list((output_dir / SENTENCE_RANKER).glob("checkpoint-*"))
    assert not (output_dir / SENTENCE_RANKER / "training_args.bin").exists()
    submitted = [json.loads(line) for line in (output_dir / "eval_predictions.jsonl").read_text().splitlines()]
    assert [s["id"] for s in submitted] == [c["id"] for c in claims]
    allowed = {(page, line) for page, lines in FEVER_PAGES.items() for line in lines}
    assert all((page, line) in allowed for s in submitted for page, line in s["predicted_evidence"])
    keys = {"label_accuracy", "fever_score", "evidence_precision", "evidence_recall", "evidence_f1"}
    assert {f"eval_{k}" for k in keys} <= set(results)
    official = os.environ.get("GESA_OFFICIAL_SCORERS")
    scorer_path = Path(official or "") / "fever" / "src" / "fever" / "scorer.py"
    if official and scorer_path.is_file():  # the shared task's scorer on the submission file: the same figures
        spec = importlib.util.spec_from_file_location("official_fever_scorer_for_rerank", scorer_path)
        scorer = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(scorer)
        actual = [{"label": c["label"], "evidence": c["evidence"]} for c in claims]
        strict, accuracy, precision, recall, _ = scorer.fever_score(submitted, actual)
        assert results["eval_fever_score"] == pytest.approx(100 * strict, abs=1e-7)
        assert results["eval_label_accuracy"] == pytest.approx(100 * accuracy, abs=1e-7)
        assert results["eval_evidence_precision"] == pytest.approx(100 * precision, abs=1e-7)
        assert results["eval_evidence_recall"] == pytest.approx(100 * recall, abs=1e-7)
