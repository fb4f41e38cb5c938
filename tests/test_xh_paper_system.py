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
"""Transformer-XH's HotpotQA system as the paper builds it (A.3): the question-type classifier, the supporting-fact
model (relevance on [CLS], sentences on [first; last]), the bridge/comparison supporting-fact inference, and the one
command (`run_multihop.py --system paper`) that trains and runs them and writes the official prediction file."""

from __future__ import annotations

import json

import pytest
import torch
from hotpot_fever_fixtures import hotpot_fixture_rows
from script_helpers import load_multihop_script, multihop_error_line, run_multihop_on_hotpot_rows
from tiny_luke import SHARED
from variant_inputs import xh_config

from gesa.modeling_xh_paper import (
    XhForQuestionType,
    XhForSupportingFacts,
    bridge_supporting_facts,
    comparison_supporting_facts,
)
from gesa.records_xh import hotpot_supporting_facts, read_hotpot_file
from gesa.training.resources import load_metric
from gesa.training.xh_paper import COMPONENTS

# ---------------------------------------------------------------------------------------------
# Supporting-fact inference (A.3.2)
# ---------------------------------------------------------------------------------------------

MIN = torch.finfo(torch.float32).min


def test_bridge_facts_come_from_the_answer_document_and_its_most_relevant_parent():
    # 0 -> 2 and 1 -> 2 link to the answer document 2, which reads them; 3 is the most relevant overall but not a
    # parent (2 links to 3: 3 reads 2)
    adjacency = torch.zeros(4, 4, dtype=torch.long)
    adjacency[2, 0] = adjacency[2, 1] = adjacency[3, 2] = 1
    relevance = torch.tensor([0.5, 2.0, 0.0, 9.0])
    sentences = torch.tensor([[3.0, -3.0], [-1.0, -2.0], [-3.0, 4.0], [5.0, MIN]])
    # answer document: its sentence above 0.5; parent 1: no sentence above 0.5, so its best one
    assert bridge_supporting_facts(2, adjacency, relevance, sentences) == [(2, 1), (1, 0)]


def test_bridge_without_parent_chooses_from_every_other_document():
    adjacency = torch.zeros(3, 3, dtype=torch.long)
    adjacency[1, 0] = 1  # the answer document 0 links out (1 reads it), nothing links to it
    relevance = torch.tensor([0.0, 1.0, 3.0])
    sentences = torch.tensor([[2.0], [2.0], [2.0]])
    assert bridge_supporting_facts(0, adjacency, relevance, sentences) == [(0, 0), (2, 0)]


def test_comparison_facts_come_from_the_top_two_documents():
    relevance = torch.tensor([1.0, -2.0, 3.0])
    sentences = torch.tensor([[1.0, 2.0, MIN], [9.0, 9.0, 9.0], [-1.0, MIN, MIN]])
    assert comparison_supporting_facts(relevance, sentences) == [(2, 0), (0, 0), (0, 1)]


# ---------------------------------------------------------------------------------------------
# The two models, against plain computations
# ---------------------------------------------------------------------------------------------


def _graphs(nodes: int, length: int, seed: int) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    input_ids = torch.randint(5, 60, (1, nodes, length), generator=g)
    input_ids[..., 0] = 0
    return {"input_ids": input_ids, "attention_mask": torch.ones_like(input_ids),
            "node_adjacency": torch.zeros(1, nodes, nodes, dtype=torch.long)}  # fmt: skip


def test_supporting_fact_model_scores_cls_and_first_last_tokens_of_each_document_alone():
    torch.manual_seed(0)
    model = XhForSupportingFacts(xh_config(xh_num_hop_layers=0)).eval()
    inputs = _graphs(3, 12, seed=1)
    starts = torch.tensor([[[3, 7], [4, -1], [2, 8]]])
    ends = torch.tensor([[[6, 10], [9, -1], [5, 11]]])
    with torch.no_grad():
        out = model(**inputs, sentence_starts=starts, sentence_ends=ends)
        words = model.gesa(**inputs).last_hidden_state
        changed = {**inputs, "input_ids": inputs["input_ids"].clone()}
        changed["input_ids"][0, 2, 3:] = 7  # another document: the others' scores do not move
        moved = model(**changed, sentence_starts=starts, sentence_ends=ends)
    for n in range(3):
        torch.testing.assert_close(out.relevance_logits[0, n], model.relevance(words[0, n, 0])[0])
        for s in range(2):
            if starts[0, n, s] < 0:
                assert out.supporting_logits[0, n, s] == MIN
                continue
            pair = torch.cat([words[0, n, starts[0, n, s]], words[0, n, ends[0, n, s]]])
            torch.testing.assert_close(out.supporting_logits[0, n, s], model.supporting(pair)[0])
    torch.testing.assert_close(moved.relevance_logits[0, :2], out.relevance_logits[0, :2])
    labels = torch.tensor([[1, 0, 1]])
    sentence_labels = torch.tensor([[[1, 0], [0, -100], [0, 1]]])
    with torch.no_grad():
        out = model(**inputs, sentence_starts=starts, sentence_ends=ends, node_labels=labels,
                    sentence_labels=sentence_labels)  # fmt: skip
    expected = torch.nn.functional.binary_cross_entropy_with_logits(out.relevance_logits[0], labels[0].float())
    torch.testing.assert_close(out.relevance_loss, expected)
    keep = sentence_labels >= 0
    expected = torch.nn.functional.binary_cross_entropy_with_logits(
        out.supporting_logits[keep], sentence_labels[keep].float()
    )
    torch.testing.assert_close(out.supporting_loss, expected)


def test_question_type_classifier_reads_the_cls_of_the_question():
    torch.manual_seed(0)
    config = xh_config(xh_num_hop_layers=0, id2label={0: "bridge", 1: "comparison"})
    model = XhForQuestionType(config).eval()
    inputs = _graphs(1, 9, seed=2)
    with torch.no_grad():
        out = model(**inputs, labels=torch.tensor([1]))
        hub = model.gesa(**inputs).hub_states[0, 0]
    torch.testing.assert_close(out.logits[0], model.classifier(hub))
    torch.testing.assert_close(out.loss, torch.nn.functional.cross_entropy(out.logits, torch.tensor([1])))


# ---------------------------------------------------------------------------------------------
# One command: classifier -> XH per type -> supporting-fact model -> official file
# ---------------------------------------------------------------------------------------------

ARGS = ["--variant", "xh", "--system", "paper", "--per_device_train_batch_size", "4", "--learning_rate", "3e-3",
        "--logging_steps", "2", "--save_strategy", "no", "--report_to", "none", "--seed", "0", "--use_cpu", "true",
        "--dataloader_pin_memory", "false", "--max_seq_length", "64", "--max_query_length", "24"]  # fmt: skip
KEYS = {"em", "f1", "prec", "recall", "sp_em", "sp_f1", "sp_prec", "sp_recall", "joint_em", "joint_f1", "joint_prec",
        "joint_recall"}  # fmt: skip


def _official_scores(prediction_file, data_file) -> dict[str, float]:
    """The official file, scored again by `training/metrics/hotpotqa` from the file alone against the data file's gold."""
    payload = json.loads(prediction_file.read_text())
    rows = read_hotpot_file(data_file)
    predictions = [{"id": r["id"], "answer": payload["answer"][r["id"]], "sp": payload["sp"][r["id"]]} for r in rows]
    references = [{"id": r["id"], "answer": r["answer"], "supporting_facts": hotpot_supporting_facts(r)} for r in rows]
    return load_metric("hotpotqa").compute(predictions=predictions, references=references)


@pytest.mark.slow
def test_paper_system_trains_each_component_and_writes_the_official_file(tiny_luke_dir, tmp_path):
    output_dir = tmp_path / "out"
    results = run_multihop_on_hotpot_rows(tiny_luke_dir, tmp_path, output_dir, hotpot_fixture_rows(), "--do_train",
                                          "--do_eval", "--num_train_epochs", "12", *ARGS)  # fmt: skip
    assert {f"eval_{k}" for k in KEYS} | {"eval_question_type_accuracy"} <= set(results)
    assert json.loads((output_dir / "all_results.json").read_text()) == results
    assert all((output_dir / name / "config.json").is_file() for name in COMPONENTS)
    # the XH models are per type on their own graph; the others read each sequence alone
    configs = {name: json.loads((output_dir / name / "config.json").read_text()) for name in COMPONENTS}
    assert configs["xh_bridge"]["xh_num_hop_layers"] == 2 and configs["supporting_bridge"]["xh_num_hop_layers"] == 0
    assert configs["question_type"]["id2label"] == {"0": "bridge", "1": "comparison"}
    assert all(config["backbone"] == "luke" for config in configs.values())
    scores = _official_scores(output_dir / "eval_predictions.json", tmp_path / "train.json")
    # the official script's fractions, reported in percent like every script
    assert {k: pytest.approx(100 * v) for k, v in scores.items()} == {
        k[5:]: v for k, v in results.items() if k[5:] in KEYS
    }
    assert results["eval_question_type_accuracy"] == 100.0  # six questions seen twelve times: learnt
    assert results["eval_sp_f1"] > 50.0
    # the saved run evaluates again without training: same file
    first = (output_dir / "eval_predictions.json").read_text()
    again = tmp_path / "again"
    argv = ["--task", "hotpotqa", "--model_name_or_path", str(output_dir), "--output_dir", str(again),
            "--validation_file", str(tmp_path / "train.json"), "--do_eval", *ARGS]  # fmt: skip
    load_multihop_script().main(argv)
    assert (again / "eval_predictions.json").read_text() == first


def test_paper_system_refuses_training_questions_without_a_type(tiny_luke_dir, tmp_path, capsys):
    rows = hotpot_fixture_rows()
    del rows[2]["type"]
    (tmp_path / "train.json").write_text(json.dumps(rows))
    argv = ["--task", "hotpotqa", "--model_name_or_path", str(tiny_luke_dir), "--output_dir", str(tmp_path / "o"),
            "--train_file", str(tmp_path / "train.json"), "--do_train", *ARGS]  # fmt: skip
    line = multihop_error_line(capsys, argv)
    assert "--train_file" in line and "no type" in line and rows[2]["_id"] in line and "--system joint" in line


def test_paper_system_is_for_hotpotqa_only(tiny_luke_dir, tmp_path, capsys):
    argv = ["--task", "fever", "--model_name_or_path", str(tiny_luke_dir), "--output_dir", str(tmp_path / "o"),
            "--do_eval", *ARGS]  # fmt: skip
    assert "--task fever does not read --system" in multihop_error_line(capsys, argv)


@pytest.mark.slow
@pytest.mark.needs_shared
def test_paper_system_on_the_shared_hotpotqa_sample(roberta_luke_dir, tmp_path):
    """The 100 shared dev questions (distractor): train on 80, score the other 20 with the official metric."""
    sample = SHARED / "data" / "hotpotqa" / "hotpot_dev_distractor_first100.json"
    rows = json.loads(sample.read_text())
    (tmp_path / "train.json").write_text(json.dumps(rows[:80]))
    (tmp_path / "dev.json").write_text(json.dumps(rows[80:]))
    output_dir = tmp_path / "out"
    argv = ["--task", "hotpotqa", "--model_name_or_path", str(roberta_luke_dir), "--output_dir", str(output_dir),
            "--train_file", str(tmp_path / "train.json"), "--validation_file", str(tmp_path / "dev.json"),
            "--do_train", "--do_eval", "--num_train_epochs", "1", *ARGS]  # fmt: skip
    results = load_multihop_script().main(argv)
    payload = json.loads((output_dir / "eval_predictions.json").read_text())
    assert set(payload["answer"]) == set(payload["sp"]) == {f"dev-{i}" for i in range(20)}  # ids from the file name
    scores = _official_scores(output_dir / "eval_predictions.json", tmp_path / "dev.json")
    assert 100 * scores["joint_f1"] == pytest.approx(results["eval_joint_f1"])
    assert 0.0 <= results["eval_question_type_accuracy"] <= 100.0
