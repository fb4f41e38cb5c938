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
"""Run the example scripts the way the tests need them: load a script as a module, ``run_record.py`` on the project's
ReCoRD sample and its one-line errors from a fresh process, ``run_multihop.py``'s one error line, and
``run_entity_tasks.py`` on the project's entity-task fixtures."""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
RECORD_SCRIPT = EXAMPLES / "run_record.py"
MULTIHOP_SCRIPT = EXAMPLES / "run_multihop.py"
ENTITY_SCRIPT = EXAMPLES / "run_entity_tasks.py"
RECORD_SAMPLE_TRAIN = EXAMPLES / "data" / "record_sample_train.jsonl"
RECORD_SAMPLE_DEV = EXAMPLES / "data" / "record_sample_dev.jsonl"
ENTITY_FIXTURES = Path(__file__).resolve().parent / "fixtures" / "entity"
ENTITY_TASK_FILES = {
    "entity_typing": ENTITY_FIXTURES / "open_entity_crowd.json",
    "relation_classification": ENTITY_FIXTURES / "tacred.json",
    "ner": ENTITY_FIXTURES / "conll2003.txt",
}


def load_script(path: Path, module_name: str) -> ModuleType:
    """Execute the script at `path` as a fresh module registered as `module_name` (its dataclasses look their module
    up in ``sys.modules`` while the file executes)."""
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


# ---------------------------------------------------------------------------------------------
# run_record.py
# ---------------------------------------------------------------------------------------------


@functools.cache
def record_script() -> ModuleType:
    """``examples/run_record.py``, loaded once for all the test modules that run it in this process."""
    return load_script(RECORD_SCRIPT, "run_record_under_test")


def record_sample_argv(output_dir: Path, *extra: str) -> list[str]:
    """run_record.py flags for a small run on the project's ReCoRD sample (train and dev), then `extra`."""
    return [
        "--train_file", str(RECORD_SAMPLE_TRAIN), "--validation_file", str(RECORD_SAMPLE_DEV),
        "--output_dir", str(output_dir),
        "--max_seq_length", "128", "--doc_stride", "64", "--max_query_length", "32",
        "--per_device_train_batch_size", "8", "--report_to", "none", "--disable_tqdm", "true",
        "--dataloader_pin_memory", "false", "--seed", "0", *extra,
    ]  # fmt: skip


def short_window_argv(output_dir: Path, *extra: str) -> list[str]:
    """``record_sample_argv`` with 96-token windows and a stride of 40 (not the script's default 512/128/90)."""
    argv = record_sample_argv(output_dir, *extra)
    argv[argv.index("--max_seq_length") + 1] = "96"
    argv[argv.index("--doc_stride") + 1] = "40"
    return argv


def train_two_steps(output_dir: Path) -> Path:
    """A tiny GESA trained 2 steps from scratch on the project's ReCoRD sample with 96-token windows, a checkpoint at
    each step (kept: ``--save_steps`` asks for them)."""
    record_script().main(short_window_argv(output_dir, "--do_train", "--max_steps", "2", "--save_steps", "1"))
    return output_dir


# Runs each argv through a script's main in ONE fresh process (one import for all cases), with file descriptors 1
# and 2 sent to a file per case: everything the run prints (print, logging handlers, progress bars) is captured.
_ERROR_RUNNER = r"""
import importlib.util, json, os, sys, tempfile, traceback
spec = importlib.util.spec_from_file_location("script_cli", sys.argv[1])
module = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = module
spec.loader.exec_module(module)
results = []
for argv in json.loads(sys.argv[2]):
    with tempfile.TemporaryFile() as sink:
        sys.stdout.flush(); sys.stderr.flush()
        saved = os.dup(1), os.dup(2)
        os.dup2(sink.fileno(), 1); os.dup2(sink.fileno(), 2)
        try:
            module.main(argv)
            code = 0
        except SystemExit as error:
            code = error.code
        except BaseException:
            traceback.print_exc()
            code = "exception"
        finally:
            sys.stdout.flush(); sys.stderr.flush()
            os.dup2(saved[0], 1); os.dup2(saved[1], 2)
        sink.seek(0)
        results.append({"code": code, "output": sink.read().decode("utf-8", "replace")})
print(json.dumps(results))
"""


def script_error_lines(script: Path, cases: list[list[str]], cwd: Path) -> list[str]:
    """The one output line of each bad-input run of ``script`` (all cases in one fresh, offline process): exit status
    2, exactly one non-empty line (stdout and stderr together), the ``<script>: error:`` line, nothing of training."""
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1")
    proc = subprocess.run([sys.executable, "-c", _ERROR_RUNNER, str(script), json.dumps(cases)], cwd=cwd,
                          capture_output=True, text=True, env=env, timeout=900)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    lines = []
    for argv, result in zip(cases, results, strict=True):
        output = [line for line in result["output"].splitlines() if line.strip()]
        assert result["code"] == 2 and len(output) == 1, (argv, result)
        assert output[0].startswith(f"{script.name}: error: "), (argv, output)
        lines.append(output[0])
    return lines


def record_error_lines(cases: list[list[str]], cwd: Path) -> list[str]:
    """``script_error_lines`` of run_record.py."""
    return script_error_lines(RECORD_SCRIPT, cases, cwd)


# ---------------------------------------------------------------------------------------------
# run_multihop.py
# ---------------------------------------------------------------------------------------------


def load_multihop_script() -> ModuleType:
    """``examples/run_multihop.py``, freshly loaded."""
    return load_script(MULTIHOP_SCRIPT, "run_multihop_under_test")


def multihop_error_line(capsys, argv: list[str]) -> str:
    """The one ``run_multihop.py: error: ...`` line (exit status 2) a refused run prints, with nothing else on
    stderr."""
    capsys.readouterr()
    with pytest.raises(SystemExit) as stopped:
        load_multihop_script().main(argv)
    assert stopped.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("run_multihop.py: error: "), lines
    return lines[0]


def check_multihop_eval_predictions(output_dir: Path, evaluation: list[dict]) -> dict:
    """A run's ``eval_predictions.json`` answers every evaluation record with one of its own candidates, and
    ``all_results.json``'s accuracy is the share of gold answers among them; returns ``all_results.json``."""
    predictions = json.loads((output_dir / "eval_predictions.json").read_text())
    by_id = {record["id"]: record for record in evaluation}
    assert set(predictions) == set(by_id)
    assert all(answer in by_id[key]["candidates"] for key, answer in predictions.items())
    correct = sum(answer == by_id[key]["answer"] for key, answer in predictions.items())
    all_results = json.loads((output_dir / "all_results.json").read_text())
    assert all_results["eval_accuracy"] == pytest.approx(100.0 * correct / len(by_id))
    return all_results


def run_multihop_on_hotpot_rows(luke_dir: Path, tmp_path: Path, output_dir: Path, rows: list[dict], *flags: str):
    """``run_multihop.py --task hotpotqa`` from `luke_dir` into `output_dir`, `rows` (HotpotQA questions) written to
    ``tmp_path / "train.json"`` and read as both the train and the validation file, then `flags`; returns its
    results."""
    data = tmp_path / "train.json"
    data.write_text(json.dumps(rows))
    argv = ["--task", "hotpotqa", "--model_name_or_path", str(luke_dir), "--output_dir", str(output_dir),
            "--train_file", str(data), "--validation_file", str(data), *flags]  # fmt: skip
    return load_multihop_script().main(argv)


def multihop_pipeline_elsewhere(model_dir: Path, records: list[dict], workdir: Path, body: str):
    """Run a saved checkpoint's pipeline in a fresh process from `workdir` (outside the checkout, no PYTHONPATH):
    `body` runs after ``answer = pipeline(model=model_dir, trust_remote_code=True)`` and ``records`` (the WikiHop
    records' query, supports and candidates) and prints one JSON line, returned parsed."""
    workdir.mkdir()
    code = (
        "import json, sys\n"
        "from transformers import pipeline\n"
        f"answer = pipeline(model={str(model_dir)!r}, trust_remote_code=True)\n"
        "records = json.load(open(sys.argv[1]))\n" + body
    )
    inputs = workdir / "inputs.json"
    inputs.write_text(json.dumps([{k: r[k] for k in ("query", "supports", "candidates")} for r in records]))
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    env.update(HF_HUB_OFFLINE="1", OMP_NUM_THREADS="1")
    done = subprocess.run([sys.executable, "-c", code, str(inputs)], cwd=workdir, env=env, capture_output=True,
                          text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------------------------------------
# run_entity_tasks.py
# ---------------------------------------------------------------------------------------------


def load_entity_script() -> ModuleType:
    """``examples/run_entity_tasks.py``, freshly loaded."""
    return load_script(ENTITY_SCRIPT, "run_entity_tasks_under_test")


def run_entity_task(luke_dir, output_dir, task, extra=(), data=None):
    """Train and evaluate `task` for 25 epochs on its fixture file (or `data`) from the LUKE at `luke_dir`."""
    data = data or ENTITY_TASK_FILES[task]
    argv = ["--task", task, "--model_name_or_path", str(luke_dir), "--output_dir", str(output_dir),
            "--train_file", str(data), "--validation_file", str(data), "--do_train", "--do_eval",
            "--num_train_epochs", "25", "--learning_rate", "1e-2", "--per_device_train_batch_size", "4",
            "--logging_steps", "4", "--save_strategy", "no", "--report_to", "none", "--seed", "0",
            "--use_cpu", "true", "--dataloader_pin_memory", "false", "--disable_tqdm", "true", *extra]  # fmt: skip
    return load_entity_script().main(argv)


def logged_losses(output_dir) -> list[float]:
    """The training losses the Trainer logged (``trainer_state.json``)."""
    history = json.loads((Path(output_dir) / "trainer_state.json").read_text())["log_history"]
    return [entry["loss"] for entry in history if "loss" in entry]
