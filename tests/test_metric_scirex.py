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
"""The SciREX metric (training/metrics/scirex) equals a plain reading of the official ``scirex_relation_evaluate.py``
(tests/scirex_metric_reference.py) on gold, empty and perturbed prediction files, on written papers and on the real
sample; hand counts on one paper; the files and the command line."""

import json
import random

import pytest
from scirex_fixtures import SCIREX_DEV, small_document, write_jsonl
from scirex_metric_reference import ref_scirex

from gesa.training.resources import load_metric, metric_module
from gesa.training.synthetic_scirex import make_scirex_sample

scirex = metric_module("scirex")
TYPES = scirex.ENTITY_TYPES


def written_papers(count=4, seed=3):
    return [json.loads(line) for line in make_scirex_sample(count, seed, body_sentences=10).splitlines()]


def gold_predictions(docs, with_mentions=False):
    """The gold itself as the three files (the clusters file is the gold file: the official coref path); with
    ``with_mentions`` only the relations whose clusters all have a mention (the others are never gold)."""
    ner = [{"doc_id": d["doc_id"], "ner": d["ner"]} for d in docs]
    relations = []
    for d in docs:
        clusters = scirex.merged_clusters(d)
        kept = [r for r in d["n_ary_relations"] if not with_mentions or all(clusters[r[t]] for t in TYPES)]
        relations.append(
            {"doc_id": d["doc_id"], "predicted_relations": [[[r[t] for t in TYPES], 1.0, 1] for r in kept]}
        )
    return ner, docs, relations


def empty_predictions(docs):
    return ([{"doc_id": d["doc_id"], "ner": []} for d in docs], [{"doc_id": d["doc_id"], "clusters": {}} for d in docs],
            [{"doc_id": d["doc_id"], "predicted_relations": []} for d in docs])  # fmt: skip


def perturbed_predictions(docs, seed):
    """Mentions dropped, shifted, retyped and invented; clusters renamed, thinned, merged and split, one invented;
    relations renamed, some with label 0, some invented, one with a missing type."""
    rng = random.Random(seed)
    ner_rows, cluster_rows, relation_rows = [], [], []
    for doc in docs:
        length = len(doc["words"])
        spans, nearest = {}, {}  # predicted span -> type; gold span -> the predicted span it became
        for start, end, kind in doc["ner"]:
            roll, gold_span = rng.random(), (start, end)
            if roll < 0.15:
                continue
            if roll < 0.3 and end - start > 1:
                start += 1  # IoU > 0.5 on 3+ word spans, below on 2-word ones
            elif roll < 0.4:
                end = min(end + 1, length)
            if rng.random() < 0.1:
                kind = rng.choice(TYPES)
            spans[(start, end)] = kind
            nearest[gold_span] = (start, end)
        invented = [(s, s + 1) for s in rng.sample(range(length - 1), 5)]
        spans.update({span: rng.choice(TYPES) for span in invented if span not in spans})
        ner_rows.append({"doc_id": doc["doc_id"], "ner": [[s, e, k] for (s, e), k in spans.items()]})
        gold = scirex.merged_clusters(doc)
        clusters, names = {}, {}
        for index, (name, members) in enumerate(gold.items()):
            kept = sorted({nearest[tuple(s)] for s in members if tuple(s) in nearest and rng.random() < 0.8})
            if not kept:
                continue
            if len(kept) > 3 and rng.random() < 0.3:  # split in two
                clusters[f"c{index}b"] = kept[len(kept) // 2 :]
                kept = kept[: len(kept) // 2]
            clusters[f"c{index}"] = kept
            names[name] = f"c{index}"
        keys = list(clusters)
        if len(keys) > 2 and rng.random() < 0.5:  # merge two
            first, second = rng.sample(keys, 2)
            clusters[first] = sorted(set(clusters[first]) | set(clusters.pop(second)))
        clusters["invented"] = invented[:2]
        cluster_rows.append(
            {"doc_id": doc["doc_id"], "clusters": {k: [list(s) for s in v] for k, v in clusters.items()}}
        )
        relations = []
        for relation in doc["n_ary_relations"]:
            tuple_ = [names.get(relation[t], relation[t]) for t in TYPES]
            relations.append([tuple_, round(rng.random(), 4), int(rng.random() < 0.75)])
        for _ in range(3):
            relations.append([[rng.choice(list(clusters)) for _ in TYPES], 0.9, 1])
        relations.append([[None, *[rng.choice(list(clusters)) for _ in TYPES[1:]]], 0.6, 1])
        relation_rows.append({"doc_id": doc["doc_id"], "predicted_relations": relations})
    return ner_rows, cluster_rows, relation_rows


def assert_equal_to_reference(docs, predictions):
    ours = scirex.scirex_scores(docs, *predictions)
    reference = ref_scirex(docs, *predictions)
    for key, value in reference.items():
        assert ours[key] == pytest.approx(value, abs=1e-9), key
    return ours


def test_gold_predictions_score_one_where_the_official_script_gives_one():
    docs = written_papers()
    scores = assert_equal_to_reference(docs, gold_predictions(docs))
    assert scores["mention_f1"] == pytest.approx(1.0) and scores["cluster_precision"] == pytest.approx(1.0)
    # a gold relation whose metric is never mentioned is no gold relation, but predicting it counts against P
    # (SciREX's README: "this artificially reduces the precision")
    assert scores["relation_n4_precision"] < 1
    scores = assert_equal_to_reference(docs, gold_predictions(docs, with_mentions=True))
    assert scores["relation_n4_f1"] == pytest.approx(1.0) and scores["relation_n2_f1"] == pytest.approx(1.0)
    assert scores["relation_n2_count"] > scores["relation_n4_count"] > 0


def test_empty_predictions_score_zero():
    docs = written_papers()
    scores = assert_equal_to_reference(docs, empty_predictions(docs))
    assert all(value == 0 for key, value in scores.items() if not key.endswith("_count"))


@pytest.mark.parametrize("seed", range(6))
def test_perturbed_predictions_equal_the_official_reading(seed):
    docs = written_papers(seed=seed)
    scores = assert_equal_to_reference(docs, perturbed_predictions(docs, seed))
    assert 0 < scores["cluster_f1"] < 1 and 0 < scores["mention_f1"] < 1


def test_one_paper_by_hand():
    doc = small_document()
    ner = [[2, 4, "Method"], [10, 12, "Method"], [14, 16, "Method"], [17, 18, "Material"], [23, 24, "Task"],
           [26, 28, "Material"], [30, 31, "Method"]]  # fmt: skip
    clusters = {"a": [[2, 4], [10, 12], [30, 31]], "b": [[17, 18]], "c": [[26, 28]], "d": [[23, 24]]}
    relations = [[["b", "d", "x", "a"], 0.9, 1], [["c", "d", "x", "a"], 0.2, 0]]
    rows = ([{"doc_id": "paper-1", "ner": ner}], [{"doc_id": "paper-1", "clusters": clusters}],
            [{"doc_id": "paper-1", "predicted_relations": relations}])  # fmt: skip
    scores = assert_equal_to_reference([doc], rows)
    # mentions: 5 exact of 7 predicted (PSNR typed Task, [26, 28] is not Fog-2's [27, 28]), 11 gold
    assert scores["mention_precision"] == pytest.approx(5 / 7) and scores["mention_recall"] == pytest.approx(5 / 11)
    # clusters: a -> Zorn_Net (2 of 3 spans), b -> Hazy-5, c -> Fog-2 ([26, 28] has IoU 0.5 with it: not > 0.5, no
    # match), d -> PSNR: 3 of 4 predicted match, 3 of the 6 gold clusters (Sharpness, without mentions, counts)
    assert scores["cluster_precision"] == pytest.approx(3 / 4, abs=1e-6)
    assert scores["cluster_recall"] == pytest.approx(3 / 6, abs=1e-6)
    # relations n=2: (Material, Metric) pairs: gold {(Hazy-5, PSNR)} (Fog-2/Sharpness has no Sharpness mention)
    # predicted {(Hazy-5, PSNR)}: P = R = 1 on that pair; ...; n=4: predicted task 'x' matches nothing
    assert scores["relation_n4_f1"] == pytest.approx(0.0, abs=1e-6)


def test_the_three_files_and_the_command_line_give_the_same_numbers(tmp_path, capsys):
    docs = written_papers(2)
    ner, clusters, relations = perturbed_predictions(docs, 1)
    paths = [write_jsonl(tmp_path / f"{name}.jsonl", rows) for name, rows in
             (("gold", docs), ("ner", ner), ("clusters", clusters), ("relations", relations))]  # fmt: skip
    expected = scirex.scirex_scores(docs, ner, clusters, relations)
    assert scirex.evaluate_files(*paths) == expected
    printed = scirex.main(["--gold-file", str(paths[0]), "--ner-file", str(paths[1]), "--clusters-file",
                           str(paths[2]), "--relations-file", str(paths[3])])  # fmt: skip
    out = capsys.readouterr().out
    assert printed == expected
    assert "Mention identification: P" in out and "Salient clusters: P" in out and "Relations n=4: P" in out
    metric = load_metric("scirex").compute(
        predictions=[{"doc_id": d["doc_id"], "ner": json.dumps(n), "clusters": json.dumps(c),
                      "relations": json.dumps(r)} for d, n, c, r in zip(docs, ner, clusters, relations, strict=True)],
        references=[{"doc_id": d["doc_id"], "document": json.dumps(d)} for d in docs],
    )  # fmt: skip
    assert metric == pytest.approx(expected)


def test_files_the_official_script_would_stop_on_are_one_clear_error():
    docs = written_papers(1)
    ner, clusters, relations = gold_predictions(docs)
    with pytest.raises(ValueError, match=r"the ner file has no line for gold document 'paper-3-0'"):
        scirex.scirex_scores(docs, [], clusters, relations)
    bad = [{"doc_id": "paper-3-0", "clusters": {"x": [[0, 1]]}}]
    with pytest.raises(ValueError, match=r"cluster 'x' holds \[0, 1\], which the ner file does not predict"):
        scirex.scirex_scores(docs, ner, bad, relations)


@pytest.mark.needs_shared
def test_the_real_sample_equals_the_official_reading_gold_and_perturbed():
    docs = [json.loads(line) for line in SCIREX_DEV.read_text(encoding="utf-8").splitlines()]
    scores = assert_equal_to_reference(docs, gold_predictions(docs, with_mentions=True))
    assert scores["relation_n4_f1"] == pytest.approx(1.0) and scores["cluster_recall"] < 1  # empty gold clusters
    assert_equal_to_reference(docs, perturbed_predictions(docs, 7))
