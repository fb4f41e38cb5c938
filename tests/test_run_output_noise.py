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
"""A run's output shows what the user asked for: no library notice repeated at every dataloader, no debug lines of a
library, no "corrupted checkpoint" warning for a LUKE checkpoint without a head, no paths of deleted folders; and a
finished run's folder holds its model and results, not the resume points it no longer needs (an interrupted run
keeps them and resumes)."""

from __future__ import annotations

import json
import logging

import pytest
from script_helpers import ENTITY_TASK_FILES, load_entity_script

from gesa.training.machinery import CHECKPOINT_FLAGS, keeps_checkpoints, remove_resume_checkpoints, setup_logging


def test_bm25s_debug_level_is_not_left_on_the_run(caplog):
    from gesa.training.fever_bm25 import Bm25Index

    logging.getLogger("bm25s").setLevel(logging.DEBUG)  # what `import bm25s` does
    with caplog.at_level(logging.DEBUG):
        Bm25Index(["Lyon is a city in France.", "Turin is in Italy."]).search(["Lyon"], 1)
    assert not [record for record in caplog.records if record.name.startswith("bm25s")]
    assert logging.getLogger("bm25s").level == logging.WARNING


def test_trainers_ignored_columns_notice_is_dropped_and_its_warnings_kept(tmp_path):
    from transformers import TrainingArguments
    from transformers.utils import logging as hf_logging

    setup_logging(TrainingArguments(output_dir=str(tmp_path), report_to=[]), logging.getLogger("test"))
    trainer_logger = hf_logging.get_logger("transformers.trainer")
    kept = []
    handler = logging.Handler()
    handler.emit = kept.append
    trainer_logger.addHandler(handler)
    try:
        trainer_logger.info("The following columns in the Training set don't have a corresponding argument in "
                            "`GesaForEntitySpanQA.forward` and have been ignored: answers.")  # fmt: skip
        trainer_logger.warning("a warning the user needs")
    finally:
        trainer_logger.removeHandler(handler)
    assert [record.getMessage() for record in kept] == ["a warning the user needs"]


def test_an_entity_head_from_a_luke_checkpoint_without_its_head_loads_without_a_corruption_warning(
    tiny_luke_dir, capfd
):
    from gesa.modeling_gesa_entity import GesaForMaskedLM

    capfd.readouterr()
    model = GesaForMaskedLM.from_luke_pretrained(tiny_luke_dir)
    printed = "".join(capfd.readouterr())
    assert "seem corrupted" not in printed and "LOAD REPORT" not in printed, printed
    assert model.luke_conversion_info["missing_keys"]  # the fresh head is still reported, by the conversion


def test_only_a_run_that_asked_for_checkpoints_keeps_them():
    assert not keeps_checkpoints({"do_train", "output_dir", "max_steps"})
    assert all(keeps_checkpoints({"do_train", flag}) for flag in CHECKPOINT_FLAGS)
    assert keeps_checkpoints(None)  # started from Python without the flags: nothing is removed


def test_removing_resume_points_leaves_everything_else(tmp_path):
    for name in ("checkpoint-2", "checkpoint-10", "checkpoint-best", "demo-data"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "f").write_text("x")
    (tmp_path / "checkpoint-3").write_text("a file, not a checkpoint")
    assert remove_resume_checkpoints(tmp_path) == ["checkpoint-10", "checkpoint-2"]
    assert sorted(path.name for path in tmp_path.iterdir()) == ["checkpoint-3", "checkpoint-best", "demo-data"]


def _train(luke, output_dir, *extra):
    argv = ["--task", "entity_typing", "--model_name_or_path", str(luke), "--output_dir", str(output_dir),
            "--train_file", str(ENTITY_TASK_FILES["entity_typing"]), "--do_train", "--max_steps", "2",
            "--per_device_train_batch_size", "4", "--report_to", "none", "--use_cpu", "true", "--disable_tqdm",
            "true", *extra]  # fmt: skip
    return load_entity_script().main(argv)


@pytest.mark.slow
def test_a_finished_run_leaves_its_model_without_resume_points_and_an_interrupted_one_resumes(tiny_luke_dir, tmp_path):
    finished = tmp_path / "finished"
    _train(tiny_luke_dir, finished)  # Trainer's default save strategy writes checkpoint-2 at the last step
    assert (finished / "model.safetensors").is_file() and not list(finished.glob("checkpoint-*"))
    kept = tmp_path / "kept"
    _train(tiny_luke_dir, kept, "--save_steps", "1")  # asked for checkpoints: kept
    assert sorted(path.name for path in kept.glob("checkpoint-*")) == ["checkpoint-1", "checkpoint-2"]
    # an interrupted run: its checkpoint-1 without the finished model; the next run resumes from it
    interrupted = tmp_path / "interrupted"
    interrupted.mkdir()
    (kept / "checkpoint-1").rename(interrupted / "checkpoint-1")
    _train(tiny_luke_dir, interrupted)
    state = json.loads((interrupted / "trainer_state.json").read_text())
    assert state["global_step"] == 2 and not list(interrupted.glob("checkpoint-*"))
    assert [entry["step"] for entry in state["log_history"] if "loss" in entry] in ([2], [])  # step 1 not retrained
