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
"""What the scripts write and print around a run: nothing lands in the current folder unasked (``--output_dir`` is
named, on the command line or in an arguments file), every task reports its metrics in one scale (percent, where the
official HotpotQA, FEVER and entity-task metrics give fractions), the Hub's retry lines never precede a refusal and
print once after logging is set up, and a diverged run's error line is the last thing it prints (its progress bar
closed first).

Cost: one process for the refusals, one for the logging set-up; a 3-step diverging run (marked slow).
"""

from __future__ import annotations

import json
import logging
import re
import subprocess
import sys

import pytest
from hotpot_fever_fixtures import FEVER_PAGES, fever_fixture_claims, hotpot_fixture_rows
from script_helpers import (
    ENTITY_SCRIPT,
    ENTITY_TASK_FILES,
    MULTIHOP_SCRIPT,
    RECORD_SAMPLE_TRAIN,
    RECORD_SCRIPT,
    script_error_lines,
)

from gesa.records_entity import read_task_file
from gesa.records_xh import hotpot_supporting_facts, to_hotpot_row
from gesa.training.entity import ENTITY_TASKS
from gesa.training.machinery import ScriptArgumentError, checkpoint_config, explicit_flags
from gesa.training.xh import FEVER, HOTPOTQA

HUB_LOGGER = "huggingface_hub.utils._http"  # where huggingface_hub logs its retries
RETRY = "Retrying in 1s [Retry 1/5]."


def test_every_script_refuses_a_run_without_output_dir_and_writes_nothing(tiny_luke_dir, tmp_path):
    arguments_file = tmp_path / "args.json"
    arguments_file.write_text(json.dumps({"model_name_or_path": str(tiny_luke_dir), "do_train": True,
                                          "train_file": str(RECORD_SAMPLE_TRAIN)}))  # fmt: skip
    cases = {
        RECORD_SCRIPT: [
            ["--model_name_or_path", str(tiny_luke_dir), "--train_file", str(RECORD_SAMPLE_TRAIN), "--do_train"],
            [str(arguments_file)],
        ],
        MULTIHOP_SCRIPT: [
            ["--task", "wikihop", "--model_name_or_path", str(tiny_luke_dir), "--train_file", "t.json", "--do_train"],
            ["--task", "hotpotqa", "--variant", "xh", "--system", "paper", "--model_name_or_path", str(tiny_luke_dir),
             "--train_file", "t.json", "--do_train"],
        ],
        ENTITY_SCRIPT: [
            ["--task", "ner", "--model_name_or_path", str(tiny_luke_dir), "--train_file",
             str(ENTITY_TASK_FILES["ner"]), "--do_train"],
        ],
    }  # fmt: skip
    for script, argvs in cases.items():
        for line in script_error_lines(script, argvs, tmp_path):
            assert ": error: --output_dir is required" in line and "e.g. --output_dir out/" in line, line
    assert sorted(path.name for path in tmp_path.iterdir()) == ["args.json"]  # no ./trainer_output


def test_an_arguments_file_names_its_flags_by_its_keys(tmp_path):
    path = tmp_path / "args.json"
    path.write_text(json.dumps({"output_dir": "out", "do_train": True}))
    assert explicit_flags([str(path)]) == {"output_dir", "do_train"}
    assert explicit_flags(["--output_dir=out", "--do_train"]) == {"output_dir", "do_train"}


def test_every_task_reports_perfect_predictions_as_100_percent(tmp_path):
    rows = [to_hotpot_row(row, f"item {i}", str(i)) for i, row in enumerate(hotpot_fixture_rows())]
    perfect = {row["id"]: {"answer": row["answer"], "supporting_facts": hotpot_supporting_facts(row)} for row in rows}
    official = HOTPOTQA.score(perfect, rows)
    assert official["joint_f1"] == pytest.approx(1.0)  # the official script's scale
    assert HOTPOTQA.reported(official)["joint_f1"] == pytest.approx(100.0)

    claims = [claim for claim in fever_fixture_claims() if claim["label"] != "NOT ENOUGH INFO"]
    perfect = {str(c["id"]): {"label": c["label"], "evidence": [[c["evidence"][0][0][2], 0]]} for c in claims}
    assert all(c["evidence"][0][0][2] in FEVER_PAGES for c in claims)
    assert FEVER.reported(FEVER.score(perfect, claims))["fever_score"] == pytest.approx(100.0)

    for name, task in ENTITY_TASKS.items():
        path = ENTITY_TASK_FILES.get(name)
        if path is None:  # FIGER: the project's sample in ERNIE's JSON
            from gesa.training.entity import make_entity_sample

            path = tmp_path / f"{name}.json"
            path.write_text(make_entity_sample(name, 8, 1), encoding="utf-8")
        examples = read_task_file(name, path)
        perfect = {str(example.id): task.reference(example) for example in examples}
        assert task.reported(task.score(perfect, examples))[task.metric_for_best_model] == pytest.approx(100.0), name


class _Lines(logging.Handler):
    """What the ``huggingface_hub`` logger's handlers print (its own stderr handler is made at import)."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@pytest.fixture
def hub_lines(monkeypatch):
    lines = _Lines()
    monkeypatch.setattr(logging.getLogger("huggingface_hub"), "handlers", [lines])
    return lines.lines


def test_hub_retries_before_a_refused_checkpoint_are_not_printed(monkeypatch, hub_lines):
    from transformers import PretrainedConfig

    def unreachable(path, **kwargs):
        logging.getLogger(HUB_LOGGER).warning(RETRY)
        raise OSError("We couldn't connect to 'https://huggingface.co' to load the files")

    monkeypatch.setattr(PretrainedConfig, "get_config_dict", unreachable)
    with pytest.raises(ScriptArgumentError, match="--model_name_or_path someone/luke: cannot read its config"):
        checkpoint_config("someone/luke", "a LUKE")
    assert hub_lines == []


def test_hub_retries_before_a_checkpoint_that_comes_are_printed_once(monkeypatch, hub_lines):
    from transformers import PretrainedConfig

    def slow(path, **kwargs):
        logging.getLogger(HUB_LOGGER).warning(RETRY)
        return {"model_type": "luke"}, {}

    monkeypatch.setattr(PretrainedConfig, "get_config_dict", slow)
    assert checkpoint_config("someone/luke", "a LUKE") == {"model_type": "luke"}
    assert hub_lines == [RETRY]


def test_hub_lines_print_once_after_the_scripts_logging_set_up(tmp_path):
    code = (
        "import logging\n"
        "from transformers import TrainingArguments\n"
        "from gesa.training.machinery import setup_logging\n"
        f"setup_logging(TrainingArguments(output_dir={str(tmp_path)!r}, report_to=[]), logging.getLogger('run'))\n"
        f"logging.getLogger({HUB_LOGGER!r}).warning({RETRY!r})\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (proc.stdout + proc.stderr).count(RETRY) == 1, proc.stdout + proc.stderr


@pytest.mark.slow
def test_a_diverged_run_ends_on_its_error_line_with_its_progress_bar_closed(tiny_luke_dir, tmp_path):
    data = str(ENTITY_TASK_FILES["entity_typing"])
    argv = ["--task", "entity_typing", "--model_name_or_path", str(tiny_luke_dir), "--train_file", data,
            "--do_train", "--output_dir", str(tmp_path / "out"), "--learning_rate", "1e8", "--max_steps", "3",
            "--logging_steps", "1", "--report_to", "none", "--use_cpu", "true",
            "--dataloader_pin_memory", "false"]  # fmt: skip
    # the progress bar left on (no --disable_tqdm)
    proc = subprocess.run([sys.executable, str(ENTITY_SCRIPT), *argv], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "it/s]" in proc.stderr or "s/it]" in proc.stderr  # the bar was drawn
    lines = [line for line in re.split(r"[\r\n]", proc.stderr) if line.strip()]  # tqdm redraws with \r
    assert lines[-1].startswith("run_entity_tasks.py: error: training diverged"), lines[-3:]
