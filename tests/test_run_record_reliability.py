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
"""run_record.py never loses or silently corrupts a result: saved settings, duplicate ids, diverged runs, a busy output
folder, damaged checkpoints, bad training flags, full or read-only disks, and resuming past --max_steps.

Each case is either one ``run_record.py: error:`` line (exit status 2) before any work, or a correct run. One tiny
training run (2 steps, a checkpoint each) is shared by the cases that need a trained folder.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from script_helpers import (
    RECORD_SAMPLE_DEV,
    RECORD_SAMPLE_TRAIN,
    RECORD_SCRIPT,
    record_error_lines,
    record_sample_argv,
    record_script,
    train_two_steps,
)

from gesa.training import machinery

run_record = record_script()


def _records() -> list[dict]:
    return [json.loads(line) for line in RECORD_SAMPLE_TRAIN.read_text(encoding="utf-8").splitlines()]


def _write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    """A tiny GESA trained 2 steps from scratch with 96-token windows (not the script's default 512/128/90)."""
    output_dir = train_two_steps(tmp_path_factory.mktemp("reliability") / "run")
    assert json.loads((output_dir / "processor_config.json").read_text())["max_seq_length"] == 96
    return output_dir


@pytest.mark.slow
def test_reevaluation_uses_the_checkpoints_saved_window_settings(trained, tmp_path, capsys):
    common = ["--validation_file", str(RECORD_SAMPLE_DEV), "--model_name_or_path", str(trained), "--do_eval",
              "--report_to", "none", "--disable_tqdm", "true", "--max_eval_samples", "4"]  # fmt: skip
    run_record.main([*common, "--output_dir", str(tmp_path / "saved")])
    printed = capsys.readouterr().out
    assert "max_seq_length 96 (from" in printed and "doc_stride 40 (from" in printed
    run_record.main([*common, "--output_dir", str(tmp_path / "flag"), "--max_seq_length", "128"])
    printed = capsys.readouterr().out
    assert "max_seq_length 128 (--max_seq_length;" in printed and "says 96" in printed


@pytest.mark.slow
def test_non_finite_weights_stop_training_naming_the_step(tmp_path, capsys):
    """A learning rate of 1e8 drives the weights to NaN (the logged loss would read 0.0): the run stops with one error
    naming the step, and no checkpoint or model holds the broken weights."""
    output_dir = tmp_path / "diverged"
    with pytest.raises(SystemExit) as stopped:
        run_record.main(record_sample_argv(output_dir, "--do_train", "--max_steps", "3", "--learning_rate", "1e8",
                              "--logging_steps", "1", "--save_steps", "1", "--max_grad_norm", "0"))  # fmt: skip
    assert stopped.value.code == 2
    error = capsys.readouterr().err
    assert "run_record.py: error: training diverged: non-finite weights at step 2 (finite at step 1;" in error
    assert (output_dir / "checkpoint-1").is_dir()  # saved while the weights were finite
    assert not (output_dir / "checkpoint-2").exists() and not (output_dir / "model.safetensors").exists()


def test_finite_guard_reads_logged_losses():
    guard = machinery.FiniteTrainingGuard()

    class State:
        global_step = 7

    with pytest.raises(machinery.ScriptArgumentError, match="logged loss is nan at step 7"):
        guard.on_log(None, State(), None, logs={"loss": float("nan")})
    guard.on_log(None, State(), None, logs={"loss": 0.5})


def test_a_live_run_holds_its_output_folder(tmp_path):
    """A second process on the folder of a live run is refused; once that process is dead, the folder is free."""
    folder = tmp_path / "busy"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from gesa.training.machinery import OutputDirLock\n"
         "with OutputDirLock(sys.argv[1]):\n    print('held', flush=True); time.sleep(60)", str(folder)],
        stdout=subprocess.PIPE, text=True, env=dict(os.environ),
    )  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(machinery.ScriptArgumentError, match=r"is in use by a live run \(pid"):
            machinery.OutputDirLock(folder).__enter__()
    finally:
        holder.kill()
        holder.wait()
    with machinery.OutputDirLock(folder):  # a killed run's lock is gone with its process
        pass


@pytest.mark.slow
def test_auto_resume_skips_checkpoints_whose_state_files_do_not_parse(trained, tmp_path):
    output_dir = tmp_path / "damaged"
    for name in ("checkpoint-1", "checkpoint-2"):
        shutil.copytree(trained / name, output_dir / name)
    args = run_record.parse_args(record_sample_argv(output_dir, "--do_train", "--max_steps", "3"))[2]
    (output_dir / "checkpoint-2" / "trainer_state.json").write_text('{"global_step": 2, "log_hi')
    plan = machinery.plan_resume(args)
    assert (
        plan.checkpoint == str(output_dir / "checkpoint-1") and "trainer_state.json cannot be read" in plan.skipped[0]
    )
    shutil.copy(trained / "checkpoint-2" / "trainer_state.json", output_dir / "checkpoint-2" / "trainer_state.json")
    optimizer = output_dir / "checkpoint-2" / "optimizer.pt"
    optimizer.write_bytes(optimizer.read_bytes()[: optimizer.stat().st_size // 2])
    plan = machinery.plan_resume(args)
    assert plan.checkpoint == str(output_dir / "checkpoint-1") and "optimizer.pt is truncated" in plan.skipped[0]


@pytest.mark.slow
def test_resuming_a_checkpoint_past_max_steps_is_refused(trained, tmp_path):
    output_dir = tmp_path / "past"
    shutil.copytree(trained / "checkpoint-2", output_dir / "checkpoint-2")
    args = run_record.parse_args(record_sample_argv(output_dir, "--do_train", "--max_steps", "1"))[2]
    with pytest.raises(machinery.ScriptArgumentError, match="has trained 2 steps, more than --max_steps 1"):
        machinery.plan_resume(args)
    args = run_record.parse_args(record_sample_argv(output_dir, "--do_train", "--max_steps", "2"))[2]
    assert machinery.plan_resume(args).checkpoint == str(output_dir / "checkpoint-2")


def test_result_files_are_whole_or_absent(tmp_path, monkeypatch):
    target = tmp_path / "predict_predictions.json"
    machinery.write_json_atomically(target, {"q": [{"answer": "A", "score": 0.5}]})
    before = target.read_text()

    def full_disk(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(machinery.os, "fsync", full_disk)  # the disk fills while the file is flushed
    with pytest.raises(machinery.ScriptArgumentError, match="no space left on the device"):
        machinery.write_json_atomically(target, {"q": []})
    assert target.read_text() == before  # the old file is untouched, no half-written one
    assert [path.name for path in tmp_path.iterdir()] == ["predict_predictions.json"]
    monkeypatch.undo()
    assert oct(target.stat().st_mode & 0o777) == oct(0o666 & ~_umask())  # a plain file's mode, not 0600
    with pytest.raises(ValueError):  # NaN is no JSON: never written
        machinery.write_json_atomically(tmp_path / "nan.json", {"score": float("nan")})
    assert not (tmp_path / "nan.json").exists()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_disk_full_is_recognised_by_its_errors(tmp_path):
    assert machinery.disk_full(OSError(errno.ENOSPC, "No space left on device"), tmp_path)
    assert not machinery.disk_full(OSError(errno.EACCES, "Permission denied"), tmp_path)
    assert not machinery.disk_full(RuntimeError("unexpected pos 861184 vs 861072"), tmp_path)  # plenty free here


@pytest.mark.slow
def test_one_error_line_for_each_unusable_flag_or_file(trained, tmp_path):
    records = _records()
    no_queries = _write_jsonl(tmp_path / "no-queries.jsonl", [dict(record, qas=[]) for record in records[:2]])
    null_queries = _write_jsonl(tmp_path / "null-queries.jsonl", [records[0], dict(records[1], qas=None)])
    duplicate = [json.loads(json.dumps(record)) for record in records[:3]]
    duplicate[2]["qas"][0]["id"] = duplicate[0]["qas"][0]["id"] = "q3"
    duplicates = _write_jsonl(tmp_path / "duplicates.jsonl", duplicate)
    read_only = tmp_path / "read-only"
    read_only.mkdir()
    read_only.chmod(0o500)
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    killed = tmp_path / "killed"
    shutil.copytree(trained, killed, ignore=shutil.ignore_patterns("checkpoint-*"))
    (killed / "model.safetensors").write_bytes((killed / "model.safetensors").read_bytes()[:2000])
    out = str(tmp_path / "out")
    predict = ["--model_name_or_path", str(trained), "--do_predict", "--output_dir", out]
    cases = {
        "--gradient_accumulation_steps must be at least 1 (batches per optimizer step), got -1": record_sample_argv(
            tmp_path / "o1", "--do_train", "--gradient_accumulation_steps", "-1"
        ),
        "--gradient_accumulation_steps must be at least 1 (batches per optimizer step), got 0": record_sample_argv(
            tmp_path / "o2", "--do_train", "--gradient_accumulation_steps", "0"
        ),
        "learning_rate must be >= 0": record_sample_argv(tmp_path / "o3", "--do_train", "--learning_rate", "-1"),
        "learning_rate must be a finite": record_sample_argv(tmp_path / "o4", "--do_train", "--learning_rate", "nan"),
        "per_device_train_batch_size must be at least 1": record_sample_argv(
            tmp_path / "o5", "--do_train", "--per_device_train_batch_size", "0"
        ),
        "--output_dir is empty": [*record_sample_argv(tmp_path / "o7", "--do_train"), "--output_dir", ""],
        "is a file, not a folder": record_sample_argv(a_file, "--do_train"),
        "is not writable": [*predict[:-1], str(read_only), "--test_file", str(RECORD_SAMPLE_DEV)],
        "--preprocessing_num_workers must be at least 1": record_sample_argv(
            tmp_path / "o6", "--do_train", "--preprocessing_num_workers", "-1"
        ),
        "is a folder; give the path": [*predict, "--test_file", str(tmp_path)],
        "no query (every 'qas' is empty)": [*predict, "--test_file", str(no_queries)],
        "'qas' is null": [*predict, "--test_file", str(null_queries)],
        "query id 'q3' was already used at line 1": [*predict, "--test_file", str(duplicates)],
        "holds an incomplete model save": record_sample_argv(killed, "--do_train"),
    }
    if os.geteuid() == 0:  # root writes anywhere: the read-only case cannot be made here
        del cases["is not writable"]
    lines = record_error_lines(list(cases.values()), cwd=tmp_path)
    for expected, line in zip(cases, lines, strict=True):
        assert expected in line, (expected, line)
    test_line = lines[list(cases).index("'qas' is null")]
    assert test_line.count("--test_file") == 1  # the flag and file are named once, with the line
    assert "line 2" in test_line


def test_summary_line_of_an_evaluation_only_run_names_its_files_and_no_score_before_training(tmp_path):
    from transformers import TrainingArguments

    from gesa.training.driver import summary_line
    from gesa.training.record import RECORD

    (tmp_path / "eval_predictions.json").write_text("{}")
    (tmp_path / "all_results.json").write_text("{}")
    args = TrainingArguments(output_dir=str(tmp_path), do_eval=True, report_to="none")
    history = [{"step": 0, "eval_exact_match": 0.0, "eval_f1": 1.0}]
    line = summary_line(RECORD, 4, {"eval_exact_match": 25.0, "eval_f1": 21.875}, history, args)
    assert line == (f"ReCoRD (evaluation only, no training) 4 queries: exact match 25.00, F1 21.88 ({tmp_path}: "
                    "all_results.json, eval_predictions.json; no model, no card)")  # fmt: skip
    args = TrainingArguments(output_dir=str(tmp_path), do_train=True, do_eval=True, report_to="none")
    history += [{"step": 5, "loss": 0.5}, {"step": 10, "loss": 0.25}]
    line = summary_line(RECORD, 4, {"eval_exact_match": 25.0, "eval_f1": 21.875}, history, args, chance=10.0)
    assert line == ("ReCoRD 4 queries: exact match 25.00, F1 21.88; before training: exact match 0.00, F1 1.00; "
                    f"chance 10.00; training loss 0.500 (step 5) -> 0.250 (step 10) ({tmp_path})")  # fmt: skip


def test_script_help_opens_with_the_description():
    proc = subprocess.run([sys.executable, str(RECORD_SCRIPT), "--help"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    assert lines[0].startswith("usage: run_record.py [--model_name_or_path DIR]") and len(lines[0]) < 200
    assert lines[1].startswith(run_record.DESCRIPTION.splitlines()[0][:40])  # the description, right after usage
