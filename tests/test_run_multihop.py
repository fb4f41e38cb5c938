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
"""``examples/run_multihop.py --task wikihop`` end to end for GESA, LUKE and LUKE-Graph from a tiny LUKE, a record of
more than 2,000 words under windowed attention, and the saved checkpoint's pipeline from a fresh process."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from script_helpers import (
    RECORD_SAMPLE_TRAIN,
    check_multihop_eval_predictions,
    load_multihop_script,
    logged_losses,
    multihop_error_line,
    multihop_pipeline_elsewhere,
    record_script,
)

from gesa.training.machinery import OutputDirLock
from gesa.training.wikihop import make_wikihop_sample, write_wikihop_file


def run_script(luke_dir, tmp_path, variant, train, evaluation, test=None, extra=()):
    files = {
        "--train_file": write_wikihop_file(tmp_path / "train.json", train),
        "--validation_file": write_wikihop_file(tmp_path / "dev.jsonl", evaluation, json_lines=True),
    }
    if test is not None:
        files["--test_file"] = write_wikihop_file(tmp_path / "test.json", test)
    output_dir = tmp_path / f"out-{variant}"
    argv = ["--task", "wikihop", "--model_name_or_path", str(luke_dir), "--variant", variant,
            "--output_dir", str(output_dir), "--do_train", "--do_eval", *(["--do_predict"] if test else []),
            "--per_device_train_batch_size", "4", "--learning_rate", "3e-3", "--logging_steps", "2",
            "--save_strategy", "no", "--report_to", "none", "--seed", "0", "--use_cpu", "true",
            "--dataloader_pin_memory", "false", *extra]  # fmt: skip
    for flag, path in files.items():
        argv += [flag, str(path)]
    results = load_multihop_script().main(argv)
    return output_dir, results


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["gesa", "luke", "luke_graph"])
def test_each_variant_trains_and_evaluates_on_its_own_candidates(tiny_luke_dir, tmp_path, variant):
    train = make_wikihop_sample(12, seed=1)
    evaluation = make_wikihop_sample(6, seed=2)
    output_dir, results = run_script(tiny_luke_dir, tmp_path, variant, train, evaluation,
                                     extra=["--num_train_epochs", "8", "--max_seq_length", "512",
                                            "--attention_window", "32"])  # fmt: skip
    losses = logged_losses(output_dir)
    assert len(losses) >= 4 and sum(losses[-2:]) / 2 < sum(losses[:2]) / 2, losses
    all_results = check_multihop_eval_predictions(output_dir, evaluation)
    assert results["eval_accuracy"] == all_results["eval_accuracy"]
    config = json.loads((output_dir / "config.json").read_text())
    assert config["attention_window"] == 32
    assert config.get("ablation") == (None if variant == "gesa" else "luke")
    # GESA reads the thesis's context graph; every head scores with eq. 2.62
    assert (config["entity_graph"], config["choice_head"]) == ("context" if variant == "gesa" else "merged", "hde")
    processor = json.loads((output_dir / "processor_config.json").read_text())
    assert processor["entity_graph"] == config["entity_graph"]


@pytest.mark.slow
def test_the_merged_graph_and_the_query_candidate_head_are_run_flags_a_checkpoint_keeps(
    tiny_luke_dir, tmp_path, capsys
):
    train, evaluation = make_wikihop_sample(4, seed=1), make_wikihop_sample(3, seed=2)
    output_dir, first = run_script(tiny_luke_dir, tmp_path, "gesa", train, evaluation,
                                   extra=["--num_train_epochs", "1", "--max_seq_length", "512",
                                          "--ablation", "merged_graph", "--choice_head", "query_candidate"])  # fmt: skip
    config = json.loads((output_dir / "config.json").read_text())
    assert (config["entity_graph"], config["choice_head"], config["ablation"]) == (
        "merged",
        "query_candidate",
        "merged_graph",
    )
    dev = write_wikihop_file(tmp_path / "dev2.json", evaluation)
    common = ["--task", "wikihop", "--model_name_or_path", str(output_dir), "--validation_file", str(dev),
              "--do_eval", "--max_seq_length", "512", "--report_to", "none", "--use_cpu", "true"]  # fmt: skip
    again = load_multihop_script().main([*common, "--output_dir", str(tmp_path / "again")])
    assert again["eval_accuracy"] == first["eval_accuracy"]
    refused = multihop_error_line(capsys, [*common, "--choice_head", "hde", "--output_dir", str(tmp_path / "x")])
    assert "whose head is 'query_candidate'; it keeps it" in refused


@pytest.mark.slow
def test_gesa_takes_the_context_graphs_rules_and_its_checkpoint_keeps_them(tiny_luke_dir, tmp_path, capsys):
    train, evaluation = make_wikihop_sample(4, seed=1), make_wikihop_sample(3, seed=2)
    rules = '{"sentence_nodes": "all", "complement_edges": true}'
    output_dir, first = run_script(tiny_luke_dir, tmp_path, "gesa", train, evaluation,
                                   extra=["--num_train_epochs", "1", "--max_seq_length", "512",
                                          "--graph_config", rules])  # fmt: skip
    processor = json.loads((output_dir / "processor_config.json").read_text())
    assert (processor["entity_graph"], processor["sentence_nodes"], processor["complement_edges"]) == (
        "context",
        "all",
        True,
    )
    dev = write_wikihop_file(tmp_path / "dev2.json", evaluation)
    common = ["--task", "wikihop", "--model_name_or_path", str(output_dir), "--validation_file", str(dev),
              "--do_eval", "--max_seq_length", "512", "--report_to", "none", "--use_cpu", "true"]  # fmt: skip
    again = load_multihop_script().main([*common, "--output_dir", str(tmp_path / "again")])
    assert again["eval_accuracy"] == first["eval_accuracy"]
    assert json.loads((tmp_path / "again" / "eval_predictions.json").read_text()) == json.loads(
        (output_dir / "eval_predictions.json").read_text()
    )
    refused = multihop_error_line(capsys, [*common, "--graph_config", rules, "--output_dir", str(tmp_path / "x")])
    assert "is a trained checkpoint; its graph rules are fixed" in refused


def test_a_model_off_the_context_graph_refuses_its_rules(tiny_luke_dir, tmp_path, capsys):
    evaluation = write_wikihop_file(tmp_path / "dev.json", make_wikihop_sample(2, seed=2))
    for extra in (["--variant", "luke"], ["--variant", "gesa", "--ablation", "merged_graph"]):
        refused = multihop_error_line(capsys, ["--task", "wikihop", "--model_name_or_path", str(tiny_luke_dir),
                                               "--validation_file", str(evaluation), "--do_eval", "--report_to",
                                               "none", "--use_cpu", "true", "--output_dir", str(tmp_path / "out"),
                                               "--graph_config", '{"sentence_nodes": "all"}', *extra])  # fmt: skip
        # --variant luke: refused with the flags (it reads no context graph); GESA off that graph: when it loads
        assert (
            "does not read --graph_config" in refused or "e2e labels do not read them. Drop --graph_config" in refused
        )


def test_the_context_graph_variant_refuses_a_choice_head(capsys):
    refused = multihop_error_line(capsys, ["--task", "wikihop", "--variant", "context_graph", "--choice_head", "hde",
                                           "--do_eval", "--output_dir", "x", "--model_name_or_path", "y"])  # fmt: skip
    assert "--task wikihop --variant context_graph does not read --choice_head" in refused
    assert "--variant context_graph always scores with eq. 2.62" in refused


@pytest.mark.slow
def test_a_record_past_2000_words_trains_and_predicts_with_windowed_attention(tiny_luke_dir, tmp_path):
    long_record = make_wikihop_sample(1, seed=11, filler_sentences=60)[0]
    assert sum(len(text.split()) for text in long_record["supports"]) > 2000
    test = [dict(long_record, id="long-test", answer=None)]
    test[0].pop("answer")
    output_dir, _ = run_script(tiny_luke_dir, tmp_path, "gesa", [long_record], [long_record], test=test,
                               extra=["--num_train_epochs", "2", "--max_seq_length", "8192",
                                      "--attention_window", "64"])  # fmt: skip
    ranked = json.loads((output_dir / "predict_predictions.json").read_text())["long-test"]
    assert sorted(entry["answer"] for entry in ranked) == sorted(long_record["candidates"])
    assert sum(entry["score"] for entry in ranked) == pytest.approx(1.0)
    assert [entry["score"] for entry in ranked] == sorted((entry["score"] for entry in ranked), reverse=True)
    config = json.loads((output_dir / "config.json").read_text())
    assert config["attention_window"] == 64
    processor_config = json.loads((output_dir / "processor_config.json").read_text())
    assert processor_config["max_seq_length"] == 8192


@pytest.mark.slow
def test_pipeline_from_a_fresh_process_elsewhere_agrees_with_do_eval(tiny_luke_dir, tmp_path):
    train, evaluation = make_wikihop_sample(8, seed=1), make_wikihop_sample(4, seed=2)
    output_dir, _ = run_script(tiny_luke_dir, tmp_path, "gesa", train, evaluation,
                               extra=["--num_train_epochs", "3", "--max_seq_length", "512"])  # fmt: skip
    outputs = multihop_pipeline_elsewhere(
        output_dir,
        evaluation,
        tmp_path / "elsewhere",
        "from transformers import AutoProcessor\n"
        f"processor = AutoProcessor.from_pretrained({str(output_dir)!r}, trust_remote_code=True)\n"
        "assert type(processor).__name__ == 'WikihopProcessor' and processor.max_seq_length == 512\n"
        "print(json.dumps([answer(r) for r in records] + [answer(records)]))\n",
    )
    singles, batched = outputs[:-1], outputs[-1]
    assert batched == singles
    predictions = json.loads((output_dir / "eval_predictions.json").read_text())
    for record, ranked in zip(evaluation, singles, strict=True):
        assert sorted(entry["answer"] for entry in ranked) == sorted(record["candidates"])
        assert sum(entry["score"] for entry in ranked) == pytest.approx(1.0)
        assert ranked[0]["answer"] == predictions[record["id"]]


def test_unknown_task_and_headless_variant_are_refused(capsys):
    assert "argument --task: invalid choice: 'nope'" in multihop_error_line(
        capsys, ["--task", "nope", "--output_dir", "x", "--model_name_or_path", "y"]
    )
    assert "--task wikihop has no head for --variant xh" in multihop_error_line(
        capsys, ["--task", "wikihop", "--variant", "xh", "--output_dir", "x", "--model_name_or_path", "y"]
    )


def test_training_on_records_without_answers_is_refused(tiny_luke_dir, tmp_path, capsys):
    records = make_wikihop_sample(2, seed=1, labelled=False)
    with pytest.raises(SystemExit):
        run_script(tiny_luke_dir, tmp_path, "gesa", records, records)
    assert "has no gold answer: it cannot be trained on" in capsys.readouterr().err
    assert not (tmp_path / "out-gesa").exists()  # refused before anything was written


@pytest.mark.slow
def test_a_checkpoint_evaluates_again_and_refuses_another_variant(tiny_luke_dir, tmp_path, capsys):
    train, evaluation = make_wikihop_sample(4, seed=1), make_wikihop_sample(3, seed=2)
    output_dir, first = run_script(tiny_luke_dir, tmp_path, "luke_graph", train, evaluation,
                                   extra=["--num_train_epochs", "1", "--max_seq_length", "512"])  # fmt: skip
    dev = write_wikihop_file(tmp_path / "dev2.json", evaluation)
    common = ["--task", "wikihop", "--model_name_or_path", str(output_dir), "--validation_file", str(dev),
              "--do_eval", "--max_seq_length", "512", "--report_to", "none", "--use_cpu", "true"]  # fmt: skip
    again = load_multihop_script().main([*common, "--variant", "luke_graph", "--output_dir", str(tmp_path / "again")])
    assert again["eval_accuracy"] == first["eval_accuracy"]
    refused = multihop_error_line(capsys, [*common, "--variant", "gesa", "--output_dir", str(tmp_path / "other")])
    assert "a 'gesa' GesaForEntityMultipleChoice" in refused
    assert "the variant differs: pass --variant luke_graph, or give a LUKE checkpoint to convert" in refused


@pytest.mark.slow
def test_training_resumed_from_a_checkpoint_ends_where_an_uninterrupted_run_ends(tiny_luke_dir, tmp_path):
    from safetensors.torch import load_file

    train, evaluation = make_wikihop_sample(8, seed=1), make_wikihop_sample(2, seed=2)
    steps = ["--max_steps", "4", "--save_strategy", "steps", "--save_steps", "2", "--max_seq_length", "512",
             "--data_seed", "0"]  # fmt: skip
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    straight, _ = run_script(tiny_luke_dir, tmp_path / "a", "gesa", train, evaluation, extra=steps)
    resumed, _ = run_script(tiny_luke_dir, tmp_path / "b", "gesa", train, evaluation,
                            extra=[*steps, "--seed", "1", "--resume_from_checkpoint", str(straight / "checkpoint-2")])  # fmt: skip
    # another seed starts another head: only the checkpoint's weights make the two runs end alike
    assert json.loads((resumed / "trainer_state.json").read_text())["global_step"] == 4
    # as run_record.py does, a folder holding the interrupted run's checkpoint resumes it without being told
    (tmp_path / "c").mkdir()
    shutil.copytree(straight / "checkpoint-2", tmp_path / "c" / "out-gesa" / "checkpoint-2")
    automatic, _ = run_script(tiny_luke_dir, tmp_path / "c", "gesa", train, evaluation, extra=[*steps, "--seed", "1"])
    assert json.loads((automatic / "trainer_state.json").read_text())["global_step"] == 4
    first = load_file(straight / "model.safetensors")
    for other in (load_file(resumed / "model.safetensors"), load_file(automatic / "model.safetensors")):
        assert first.keys() == other.keys()
        for name in first:
            assert (first[name] == other[name]).all(), name


# ----------------------------------------------------------------------------------------------- shared machinery
# run_multihop.py and run_record.py refuse an unsafe output folder or checkpoint with the same check
# (gesa.training.machinery) and the same message, before any weight is loaded.


def _refused_by_both(capsys, tmp_path, output_dir: Path, extra: list[str]) -> str:
    """The error of run_multihop.py and of run_record.py for the same folder flags; asserts they say the same."""
    run_record = record_script()

    wikihop = write_wikihop_file(tmp_path / "wikihop-train.json", make_wikihop_sample(2, seed=1))
    multihop = multihop_error_line(capsys, ["--task", "wikihop", "--model_name_or_path", "not-loaded", "--do_train",
                                   "--train_file", str(wikihop), "--output_dir", str(output_dir), *extra])  # fmt: skip
    with pytest.raises(SystemExit) as stopped:
        run_record.main(
            ["--do_train", "--train_file", str(RECORD_SAMPLE_TRAIN), "--output_dir", str(output_dir), *extra]
        )
    assert stopped.value.code == 2
    record = capsys.readouterr().err.strip().splitlines()[-1]
    assert record.startswith("run_record.py: error: ")
    assert multihop.removeprefix("run_multihop.py: error: ") == record.removeprefix("run_record.py: error: ")
    return multihop


def test_a_folder_in_use_by_a_live_run_is_refused_as_run_record_refuses_it(tmp_path, capsys):
    output_dir = tmp_path / "busy"
    with OutputDirLock(output_dir):
        refused = _refused_by_both(capsys, tmp_path, output_dir, [])
    assert f"--output_dir {output_dir} is in use by a live run (pid {os.getpid()})" in refused


def test_a_folder_holding_a_trained_model_is_not_overwritten_as_by_run_record(tiny_luke_dir, tmp_path, capsys):
    output_dir = tmp_path / "finished"
    shutil.copytree(tiny_luke_dir, output_dir)
    refused = _refused_by_both(capsys, tmp_path, output_dir, [])
    assert "already holds a trained model (config.json, model.safetensors); pass --overwrite_output_dir" in refused
    assert sorted(path.name for path in output_dir.iterdir()) == sorted(path.name for path in tiny_luke_dir.iterdir())


def test_an_incomplete_checkpoint_is_not_resumed_as_by_run_record(tmp_path, capsys):
    checkpoint = tmp_path / "out" / "checkpoint-2"
    checkpoint.mkdir(parents=True)
    (checkpoint / "config.json").write_text("{}")
    refused = _refused_by_both(capsys, tmp_path, tmp_path / "out", ["--resume_from_checkpoint", str(checkpoint)])
    assert f"--resume_from_checkpoint {checkpoint}: {checkpoint} has no trainer_state.json" in refused


def test_bad_training_flags_and_unreachable_hub_are_refused_as_by_run_record(tmp_path, capsys, monkeypatch):
    assert "--learning_rate must be >= 0, got -1.0" in _refused_by_both(
        capsys, tmp_path, tmp_path / "o", ["--learning_rate", "-1"]
    )
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", True)
    refused = _refused_by_both(capsys, tmp_path, tmp_path / "o", ["--push_to_hub", "--hub_model_id", "me/x"])
    assert "--push_to_hub: HF_HUB_OFFLINE is set" in refused
    assert not (tmp_path / "o").exists()  # refused before the folder was made
