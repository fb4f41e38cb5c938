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
"""The command line of examples/run_record.py at first use: --help says what the script does, --push_to_hub fails in
one line before any work when the Hub cannot be used, evaluation-only runs say what they are and what they wrote."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from script_helpers import RECORD_SCRIPT, load_script

from gesa.training import driver
from gesa.training.record import RECORD

run_record = load_script(RECORD_SCRIPT, "run_record_cli_under_test")


def _run(args: list[str], tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    environment = {key: value for key, value in os.environ.items() if not key.startswith("HF_")}
    environment.update(HF_HOME=str(tmp_path / "hf-home"), **env)
    return subprocess.run(
        [sys.executable, str(RECORD_SCRIPT), *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=environment,
        timeout=300,
    )


def test_help_describes_the_script(capsys):
    try:
        run_record.parse_args(["--help"])
    except SystemExit as exit_:
        assert exit_.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "Fine-tune, evaluate and publish GESA" in text
    assert "Run with no arguments, the script converts a tiny random LUKE it builds offline" in text
    assert "--do_predict --test_file F writes the top --predict_top_k answers" in text
    assert "--test_file PATH" in text and "--predict_top_k N" in text


def test_push_to_hub_preflight_fails_in_one_line_before_any_work(tmp_path):
    """No token; then a token but an unreachable Hub: one `error:` line each, exit status 2, nothing loaded (the model
    path does not even exist) and nothing written."""
    base = ["--do_train", "--do_eval", "--model_name_or_path", str(tmp_path / "no-such-model"), "--push_to_hub",
            "--output_dir", str(tmp_path / "out"), "--report_to", "none"]  # fmt: skip
    cases = {
        "no Hub token found": {},
        "cannot reach the Hub at http://127.0.0.1:9": {"HF_TOKEN": "hf_test", "HF_ENDPOINT": "http://127.0.0.1:9"},
    }
    for expected, env in cases.items():
        proc = _run(base, tmp_path, **env)
        lines = [line for line in proc.stderr.splitlines() if line.strip()]
        assert proc.returncode == 2, proc.stderr[-2000:]
        assert len(lines) == 1 and lines[0].startswith("run_record.py: error: --push_to_hub: "), lines
        assert expected in lines[0] and "hf auth login" in lines[0], lines
        assert "Traceback" not in proc.stderr and not (tmp_path / "out").exists()


def test_push_to_hub_preflight_tries_the_hub_once_with_its_timeout_before_reading_any_data(tmp_path, monkeypatch):
    """An unreachable Hub costs one connection attempt bounded by the preflight's timeout (5 s), to the configured
    endpoint, and the run stops before it reads a data file or a checkpoint."""
    import socket

    from huggingface_hub import constants

    attempts = []

    def refused(address, timeout=None, *args, **kwargs):
        attempts.append((address, timeout))
        raise ConnectionRefusedError("connection refused")

    def must_not_run(*args, **kwargs):
        raise AssertionError("the run went past the preflight")

    monkeypatch.setattr(socket, "create_connection", refused)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "ENDPOINT", "http://127.0.0.1:9")
    monkeypatch.setattr(driver, "read_splits", must_not_run)
    monkeypatch.setattr(RECORD, "load", must_not_run)
    with pytest.raises(SystemExit) as stopped:
        run_record.main(["--do_train", "--push_to_hub", "--hub_token", "hf_test", "--output_dir", str(tmp_path / "out"),
                         "--report_to", "none"])  # fmt: skip
    assert stopped.value.code == 2
    assert attempts == [(("127.0.0.1", 9), 5.0)]
    assert not (tmp_path / "out").exists()


def test_eval_only_run_warns_and_prints_one_honest_line(tmp_path, capsys):
    """--do_eval without a model scores a random tiny GESA: a warning says so; the result line says "evaluation only"
    (no "before training" score) and names what the run wrote, which is all it wrote."""
    output_dir = tmp_path / "eval-only"
    run_record.main(
        ["--do_eval", "--output_dir", str(output_dir), "--max_seq_length", "128", "--doc_stride", "64",
         "--max_query_length", "32", "--max_eval_samples", "4", "--per_device_eval_batch_size", "8",
         "--report_to", "none", "--disable_tqdm", "true", "--dataloader_pin_memory", "false",
         "--cache_dir", str(tmp_path / "cache")]
    )  # fmt: skip
    captured = capsys.readouterr()
    assert "run_record.py: warning: --do_eval/--do_predict without --do_train or --model_name_or_path" in captured.err
    lines = [line for line in captured.out.splitlines() if line.startswith("ReCoRD")]
    assert len(lines) == 1 and lines[0].startswith("ReCoRD (evaluation only, no training) 4 queries: exact match ")
    assert "before training" not in lines[0]
    written = {"eval_predictions.json", "eval_results.json", "all_results.json"}
    assert all(name in lines[0] for name in written)
    assert {path.name for path in output_dir.iterdir()} == written


def test_do_predict_needs_a_test_file_and_a_model(tmp_path, capsys):
    for argv, message in (
        (["--do_predict", "--model_name_or_path", "x"], "--do_predict needs --test_file"),
        (["--do_predict", "--test_file", "t.jsonl"], "--do_predict without --do_train needs --model_name_or_path"),
        (["--do_predict", "--model_name_or_path", "x", "--test_file", str(tmp_path / "t.jsonl")], "does not exist"),
    ):
        try:
            run_record.main([*argv, "--output_dir", str(tmp_path / "out"), "--report_to", "none"])
        except SystemExit as exit_:
            assert exit_.code == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("run_record.py: error: ") and message in err[0], err
