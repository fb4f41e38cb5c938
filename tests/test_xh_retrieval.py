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
against BM25 scores computed from the formula; and `run_multihop.py --task fever --fever_retrieval bm25` from blind
claims to the official scorer's fields."""

from __future__ import annotations

import json
import math
import re

import pytest
from bm25s.stopwords import STOPWORDS_EN
from hotpot_fever_fixtures import FEVER_PAGES, fever_fixture_claims
from script_helpers import load_multihop_script

from gesa.processing_retrieval_xh import Bm25Index, retrieve_fever_evidence
from gesa.resources_gesa import load_metric

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


@pytest.mark.slow
def test_run_multihop_fever_from_blind_claims_with_bm25_retrieval(tiny_luke_dir, tmp_path):
    claims = fever_fixture_claims()
    (tmp_path / "train.jsonl").write_text("\n".join(json.dumps(c) for c in claims))
    blind = [{"id": c["id"], "claim": c["claim"]} for c in claims]  # no label, evidence or candidates
    (tmp_path / "test.jsonl").write_text("\n".join(json.dumps(c) for c in blind))
    pages = [{"id": p, "text": "", "lines": "\n".join(f"{n}\t{s}" for n, s in lines.items())}
             for p, lines in FEVER_PAGES.items()]  # fmt: skip
    (tmp_path / "wiki-001.jsonl").write_text("\n".join(json.dumps(p) for p in pages))
    output_dir = tmp_path / "out"
    argv = ["--task", "fever", "--variant", "xh", "--model_name_or_path", str(tiny_luke_dir),
            "--output_dir", str(output_dir), "--train_file", str(tmp_path / "train.jsonl"),
            "--test_file", str(tmp_path / "test.jsonl"), "--wiki_pages", str(tmp_path / "wiki-001.jsonl"),
            "--fever_retrieval", "bm25", "--do_train", "--do_predict", "--num_train_epochs", "2",
            "--per_device_train_batch_size", "4", "--per_device_eval_batch_size", "16", "--save_strategy", "no",
            "--report_to", "none", "--seed", "0", "--use_cpu", "true", "--dataloader_pin_memory", "false",
            "--max_seq_length", "64", "--max_query_length", "24"]  # fmt: skip
    load_multihop_script().main(argv)
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
