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
"""`examples/run_multihop.py --task hotpotqa|fever --variant xh`: trains (loss falls), evaluates with the official
metrics into `all_results.json` and writes the predictions in the official formats."""

from __future__ import annotations

import json

import pytest
from hotpot_fever_fixtures import fever_fixture_claims, hotpot_fixture_rows, write_fever_pages
from script_helpers import load_multihop_script, logged_losses, multihop_error_line, run_multihop_on_hotpot_rows

COMMON = ["--variant", "xh", "--do_train", "--do_eval", "--per_device_train_batch_size", "4",
          "--learning_rate", "3e-3", "--logging_steps", "2", "--save_strategy", "no", "--report_to", "none",
          "--seed", "0", "--use_cpu", "true", "--dataloader_pin_memory", "false", "--max_seq_length", "64",
          "--max_query_length", "24", "--num_train_epochs", "12"]  # fmt: skip


@pytest.mark.slow
def test_run_multihop_trains_xh_on_hotpotqa_and_writes_the_official_file(tiny_luke_dir, tmp_path):
    rows = hotpot_fixture_rows()
    output_dir = tmp_path / "out-hotpot"
    results = run_multihop_on_hotpot_rows(tiny_luke_dir, tmp_path, output_dir, rows, *COMMON)
    losses = logged_losses(output_dir)
    assert len(losses) >= 4 and sum(losses[-2:]) < sum(losses[:2]), losses
    keys = {"em", "f1", "prec", "recall", "sp_em", "sp_f1", "sp_prec", "sp_recall", "joint_em", "joint_f1"}
    all_results = json.loads((output_dir / "all_results.json").read_text())
    assert {f"eval_{k}" for k in keys} <= set(all_results) and all_results["eval_f1"] == results["eval_f1"]
    predictions = json.loads((output_dir / "eval_predictions.json").read_text())
    assert set(predictions) == {"answer", "sp"} and set(predictions["answer"]) == {r["_id"] for r in rows}
    import transformers

    import gesa.pipeline_xh_tasks  # noqa: F401  (registers xh-hotpot-qa)

    qa = transformers.pipeline("xh-hotpot-qa", model=str(output_dir), trust_remote_code=True)
    assert qa.xh_processor.max_node_length == 64  # the training settings, from processor_config.json
    answer = qa(rows[0])
    assert answer["id"] == rows[0]["_id"] and set(answer) == {"id", "answer", "score", "supporting_facts"}


@pytest.mark.slow
def test_run_multihop_trains_xh_on_fever_and_writes_the_shared_task_file(tiny_luke_dir, tmp_path):
    claims = fever_fixture_claims()
    (tmp_path / "train.jsonl").write_text("\n".join(json.dumps(c) for c in claims))
    write_fever_pages(tmp_path)
    output_dir = tmp_path / "out-fever"
    argv = ["--task", "fever", "--model_name_or_path", str(tiny_luke_dir), "--output_dir", str(output_dir),
            "--train_file", str(tmp_path / "train.jsonl"), "--validation_file", str(tmp_path / "train.jsonl"),
            "--wiki_pages", str(tmp_path / "wiki-001.jsonl"), *COMMON]  # fmt: skip
    blind = [{"id": c["id"], "claim": c["claim"]} for c in claims[:3]]  # a blind test file: no label, no evidence
    (tmp_path / "test.jsonl").write_text("\n".join(json.dumps(c) for c in blind))
    argv += ["--do_predict", "--test_file", str(tmp_path / "test.jsonl")]
    load_multihop_script().main(argv)
    submitted = [json.loads(line) for line in (output_dir / "predict_predictions.jsonl").read_text().splitlines()]
    assert [s["id"] for s in submitted] == [c["id"] for c in blind]
    losses = logged_losses(output_dir)
    assert len(losses) >= 4 and sum(losses[-2:]) < sum(losses[:2]), losses
    all_results = json.loads((output_dir / "all_results.json").read_text())
    assert {"eval_label_accuracy", "eval_fever_score", "eval_evidence_f1"} <= set(all_results)
    lines = [json.loads(line) for line in (output_dir / "eval_predictions.jsonl").read_text().splitlines()]
    assert [line["id"] for line in lines] == [c["id"] for c in claims]
    assert all(set(line) == {"id", "predicted_label", "predicted_evidence"} for line in lines)


def test_fever_without_wiki_pages_is_one_clear_error(tiny_luke_dir, tmp_path, capsys):
    (tmp_path / "train.jsonl").write_text(json.dumps(fever_fixture_claims()[0]))
    argv = ["--task", "fever", "--model_name_or_path", str(tiny_luke_dir), "--output_dir", str(tmp_path / "o"),
            "--train_file", str(tmp_path / "train.jsonl"), *COMMON[:-4]]  # fmt: skip
    argv.remove("--do_eval")
    assert "--task fever needs --wiki_pages" in multihop_error_line(capsys, argv)
