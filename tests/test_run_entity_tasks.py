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
"""``examples/run_entity_tasks.py`` end to end: each entity task trains a tiny GESA converted from a tiny LUKE on the
project's fixtures (Open Entity, TACRED, CoNLL-2003 formats), its loss falls, its metrics equal a hand count on the
predictions file, and the saved checkpoint reloads with ``trust_remote_code``; bad flags give one error line."""

from __future__ import annotations

import json

import pytest
import torch
import transformers
from script_helpers import ENTITY_TASK_FILES, load_entity_script, logged_losses, run_entity_task

from gesa.processing_entity import EntityTaskProcessor
from gesa.records_entity import read_task_file


def hand_prf(correct, predicted, gold):
    precision = correct / predicted if predicted else 0.0
    recall = correct / gold if gold else 0.0
    return precision, recall, (2 * precision * recall / (precision + recall) if precision + recall else 0.0)


def hand_count(task, rows):
    """(correct, predicted, gold) counted by hand from the predictions file, as each paper's scorer counts."""
    correct = predicted = gold = 0
    for row in rows:
        if task == "relation_classification":  # TACRED: no_relation is never a prediction nor a gold relation
            predicted += row["prediction"] != "no_relation"
            gold += row["reference"] != "no_relation"
            correct += row["prediction"] == row["reference"] != "no_relation"
        else:  # a type of an example, a typed span of a sentence: each counts once
            mine = {tuple(x) if isinstance(x, list) else x for x in row["prediction"]}
            theirs = {tuple(x) if isinstance(x, list) else x for x in row["reference"]}
            predicted, gold, correct = predicted + len(mine), gold + len(theirs), correct + len(mine & theirs)
    return correct, predicted, gold


@pytest.mark.slow
@pytest.mark.parametrize(
    "task, auto_class",
    [
        ("entity_typing", "AutoModelForSequenceClassification"),
        ("relation_classification", "AutoModelForSequenceClassification"),
        ("ner", "AutoModelForTokenClassification"),
    ],
)
def test_entity_task_trains_scores_by_hand_count_and_reloads(tiny_luke_dir, tmp_path, task, auto_class):
    output_dir = tmp_path / task
    results = run_entity_task(tiny_luke_dir, output_dir, task)
    losses = logged_losses(output_dir)
    assert len(losses) >= 3 and losses[-1] < 0.7 * losses[0]

    saved = json.loads((output_dir / "all_results.json").read_text())
    rows = json.loads((output_dir / "eval_predictions.json").read_text())
    examples = read_task_file(task, ENTITY_TASK_FILES[task])
    assert [row["id"] for row in rows] == [example.id for example in examples]
    correct, predicted, gold = hand_count(task, rows)
    assert gold > 0 and predicted > 0
    for name, value in zip(("precision", "recall", "f1"), hand_prf(correct, predicted, gold), strict=True):
        assert saved[f"eval_{name}"] == pytest.approx(100 * value)  # percent, like every script
        assert results[f"eval_{name}"] == pytest.approx(100 * value)

    model = getattr(transformers, auto_class).from_pretrained(output_dir, trust_remote_code=True)
    assert type(model).__module__.startswith("transformers_modules")  # the checkpoint's own code
    tokenizer = transformers.AutoTokenizer.from_pretrained(output_dir)
    labels = [model.config.id2label[i] for i in range(model.config.num_labels)]
    processor = EntityTaskProcessor(tokenizer, task, labels, max_length=256, max_span_length=16, max_entities=128)
    first = processor.encode(examples[0])
    batch = {k: v for k, v in processor(first).items() if k != "labels"}
    with torch.no_grad():
        logits = model.eval()(**batch).logits
    if task == "relation_classification":
        assert labels[int(logits[0].argmax())] == rows[0]["prediction"]
    elif task == "entity_typing":
        assert sorted(labels[i] for i in (logits[0] > 0).nonzero().flatten().tolist()) == rows[0]["prediction"]
    else:
        from gesa.processing_entity import decode_ner

        spans = decode_ner(first, logits.numpy(), labels, 1)[0]
        assert [list(span) for span in spans] == rows[0]["prediction"]


@pytest.mark.slow
def test_luke_variant_trains_and_evaluates_a_trained_checkpoint(tiny_luke_dir, tmp_path, capsys):
    output_dir = tmp_path / "luke-tacred"
    run_entity_task(
        tiny_luke_dir, output_dir, "relation_classification", extra=["--variant", "luke", "--max_steps", "6"]
    )
    assert json.loads((output_dir / "config.json").read_text())["ablation"] == "luke"
    with pytest.raises(SystemExit):  # a relation head is no typing head
        load_entity_script().main(["--task", "entity_typing", "--model_name_or_path", str(output_dir),
                                   "--variant", "luke", "--validation_file", str(ENTITY_TASK_FILES["entity_typing"]),
                                   "--do_eval", "--output_dir", str(tmp_path / "wrong"),
                                   "--report_to", "none"])  # fmt: skip
    refused = capsys.readouterr().err
    assert "needs a LUKE checkpoint to convert or a 'gesa' GesaForEntityClassification" in refused
    assert "the task differs (its head)" in refused
    again = tmp_path / "again"
    data = str(ENTITY_TASK_FILES["relation_classification"])
    argv = ["--task", "relation_classification", "--model_name_or_path", str(output_dir), "--variant", "luke",
            "--validation_file", data, "--test_file", data, "--do_eval", "--do_predict", "--output_dir", str(again),
            "--report_to", "none", "--use_cpu", "true"]  # fmt: skip
    results = load_entity_script().main(argv)
    first = json.loads((output_dir / "eval_results.json").read_text())
    assert results["eval_f1"] == pytest.approx(first["eval_f1"])
    trained = json.loads((output_dir / "eval_predictions.json").read_text())
    assert json.loads((again / "eval_predictions.json").read_text()) == trained
    assert json.loads((again / "predict_predictions.json").read_text()) == trained  # the same file as test data


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--task", "coref"], "argument --task: invalid choice: 'coref'"),
        (["--task", "ner", "--variant", "xh"], "--task ner has no head for --variant xh; choose one of"),
        (["--task", "ner", "--do_eval"], "--do_eval needs --validation_file"),
        (["--task", "pretrain", "--do_predict", "--test_file", "x"], "--task pretrain has nothing to predict"),
        (["--task", "ner", "--do_train", "--train_file", "x", "--max_span_length", "0"], "--max_span_length must be"),
        (
            [
                "--task",
                "ner",
                "--do_train",
                "--train_file",
                str(ENTITY_TASK_FILES["ner"]),
                "--model_name_or_path",
                "/nonexistent/m",
            ],
            "--model_name_or_path /nonexistent/m: ",
        ),
    ],
)
def test_bad_flags_end_with_one_error_line(tiny_luke_dir, tmp_path, capsys, extra, message):
    argv = ["--model_name_or_path", str(tiny_luke_dir), "--output_dir", str(tmp_path / "out"), *extra]
    with pytest.raises(SystemExit) as stop:
        load_entity_script().main(argv)
    assert stop.value.code == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and error[0].startswith("run_entity_tasks.py: error: ") and message in error[0]
    assert not (tmp_path / "out").exists()


def test_bad_record_names_flag_file_and_line(tiny_luke_dir, tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"left_context_token": [], "mention_span": "x", "right_context_token": [], "y_str": []}))
    argv = ["--task", "entity_typing", "--model_name_or_path", str(tiny_luke_dir), "--output_dir",
            str(tmp_path / "out"), "--train_file", str(bad), "--do_train", "--report_to", "none"]  # fmt: skip
    with pytest.raises(SystemExit):
        load_entity_script().main(argv)
    error = capsys.readouterr().err.strip()
    assert error.startswith(f"run_entity_tasks.py: error: --train_file: {bad}, line 1") and "y_str" in error


def test_a_finished_model_is_not_overwritten(tiny_luke_dir, tmp_path, capsys):
    output_dir = tmp_path / "done"
    output_dir.mkdir()
    (output_dir / "config.json").write_text("{}")
    (output_dir / "model.safetensors").write_bytes(b"")
    argv = ["--task", "ner", "--model_name_or_path", str(tiny_luke_dir), "--output_dir", str(output_dir),
            "--train_file", str(ENTITY_TASK_FILES["ner"]), "--do_train", "--report_to", "none"]  # fmt: skip
    with pytest.raises(SystemExit):
        load_entity_script().main(argv)
    assert "--overwrite_output_dir" in capsys.readouterr().err


@pytest.mark.slow
def test_training_resumes_from_the_newest_complete_checkpoint(tiny_luke_dir, tmp_path):
    output_dir = tmp_path / "resumed"
    steps = ["--save_strategy", "steps", "--save_steps", "2", "--logging_steps", "1", "--num_train_epochs", "1"]
    run_entity_task(tiny_luke_dir, output_dir, "relation_classification", extra=[*steps, "--max_steps", "4"])
    state = json.loads((output_dir / "checkpoint-2" / "trainer_state.json").read_text())["log_history"]
    (output_dir / "checkpoint-4" / "trainer_state.json").unlink()  # a save cut short: not resumable
    for name in ("config.json", "model.safetensors"):
        (output_dir / name).unlink()  # the finished model of the first run
    # another seed: a fresh start would shuffle differently; the resumed run keeps checkpoint-2's first two steps
    run_entity_task(
        tiny_luke_dir, output_dir, "relation_classification", extra=[*steps, "--max_steps", "6", "--seed", "1"]
    )
    history = json.loads((output_dir / "trainer_state.json").read_text())["log_history"]
    losses = {entry["step"]: entry["loss"] for entry in history if "loss" in entry}
    assert sorted(losses) == [1, 2, 3, 4, 5, 6]
    assert [losses[1], losses[2]] == [entry["loss"] for entry in state if "loss" in entry]


@pytest.mark.slow
def test_a_diverged_run_stops_with_one_error_line_and_saves_no_model(tiny_luke_dir, tmp_path, capsys):
    output_dir = tmp_path / "diverged"
    with pytest.raises(SystemExit) as stop:
        run_entity_task(tiny_luke_dir, output_dir, "entity_typing",
                        extra=["--learning_rate", "1e8", "--max_steps", "3", "--logging_steps", "1"])  # fmt: skip
    assert stop.value.code == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error.startswith("run_entity_tasks.py: error: training diverged")
    assert not (output_dir / "model.safetensors").exists()


@pytest.mark.slow
def test_ner_trains_from_a_dataset_in_the_hub_layout(tiny_luke_dir, tmp_path):
    dataset = tmp_path / "conll-hub"
    dataset.mkdir()
    rows = [
        {"id": str(i), "tokens": e.tokens, "ner_tags": e.tags}
        for i, e in enumerate(read_task_file("ner", ENTITY_TASK_FILES["ner"]))
    ]
    for split in ("train", "validation"):
        (dataset / f"{split}.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    argv = ["--task", "ner", "--model_name_or_path", str(tiny_luke_dir), "--dataset_name", str(dataset),
            "--output_dir", str(tmp_path / "out"), "--do_train", "--do_eval", "--max_steps", "4",
            "--report_to", "none", "--use_cpu", "true", "--save_strategy", "no"]  # fmt: skip
    results = load_entity_script().main(argv)
    assert results["eval_samples"] == len(rows) == 3
    predicted = json.loads((tmp_path / "out" / "eval_predictions.json").read_text())
    assert [row["reference"] for row in predicted][1] == [[0, 2, "PER"], [3, 4, "LOC"]]


def test_push_to_hub_is_checked_before_any_data_loads(tiny_luke_dir, tmp_path, capsys, monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    argv = ["--task", "ner", "--model_name_or_path", str(tiny_luke_dir), "--output_dir", str(tmp_path / "out"),
            "--train_file", str(tmp_path / "missing.txt"), "--do_train", "--push_to_hub", "--report_to", "none"]  # fmt: skip
    with pytest.raises(SystemExit):
        load_entity_script().main(argv)
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and error[0].startswith("run_entity_tasks.py: error: --push_to_hub: HF_HUB_OFFLINE is set")
