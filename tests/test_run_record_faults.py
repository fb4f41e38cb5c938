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
"""run_record.py on inputs it cannot run safely: a checkpoint of another model, a half-written checkpoint, records
with off-by-one ends or no answer, unknown flags, files that are not UTF-8, a missing spaCy pipeline, truncated weights
and flags that cannot train. Such a run stops with one ``run_record.py: error: ...`` line (exit status 2) naming the
flag, the file and line where there is one, and the fix; auto-resume takes the last COMPLETE checkpoint.

Cost: one tiny training run (2 steps, a checkpoint each), one resumed run, one model build, and one fresh process
for all the one-line error cases.
"""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import pytest
import torch
from script_helpers import (
    RECORD_SAMPLE_DEV,
    RECORD_SAMPLE_TRAIN,
    record_error_lines,
    record_sample_argv,
    record_script,
)
from transformers import TrainerCallback

from gesa.processing_gesa import GesaProcessor
from gesa.records_gesa import check_record_file
from gesa.training.machinery import ScriptArgumentError, check_resume_fits
from gesa.training.models import check_resume_config
from gesa.training.record import RECORD, flatten_records
from gesa.training.tokenizer import train_sample_tokenizer

run_record = record_script()


@pytest.fixture(scope="module")
def checkpointed(tmp_path_factory) -> Path:
    """A tiny GESA trained 2 steps from scratch, with checkpoint-1 and checkpoint-2 and the final model."""
    output_dir = tmp_path_factory.mktemp("faults") / "run"
    run_record.main(record_sample_argv(output_dir, "--do_train", "--max_steps", "2", "--save_steps", "1"))
    assert (output_dir / "checkpoint-2" / "trainer_state.json").is_file()
    return output_dir


class _FirstStep(TrainerCallback):
    def __init__(self) -> None:
        self.first_step = None

    def on_step_end(self, args, state, control, **kwargs):
        if self.first_step is None:
            self.first_step = state.global_step


def _sample_records() -> list[dict]:
    return [json.loads(line) for line in RECORD_SAMPLE_TRAIN.read_text(encoding="utf-8").splitlines()]


@pytest.mark.slow
def test_resuming_a_checkpoint_of_another_model_stops_before_touching_it(checkpointed, tmp_path):
    """Loading another model's optimizer state into parameters of other shapes would crash (a segmentation fault).
    Another --ablation or --variant is refused from the checkpoint's config before logging starts (one line, in ``test_one_error_line...``);
    the weights themselves are compared once the model is built, before the checkpoint is loaded."""
    checkpoint = str(checkpointed / "checkpoint-1")
    model_args, data_args, args = run_record.parse_args(
        record_sample_argv(tmp_path / "luke", "--do_train", "--ablation", "luke")
    )
    train = RECORD.read_file(Path(data_args.train_file), "--train_file", "train", data_args, model_args)
    with pytest.raises(ScriptArgumentError) as error:
        check_resume_config(
            checkpoint, RECORD.variant_spec(model_args.variant), model_args.variant, model_args.ablation
        )
    assert f"cannot resume from {checkpoint}: it was saved by another model (ablation None, this run 'luke')" in str(
        error.value
    )
    model = RECORD.load(model_args, data_args, {"train": train}, None).model
    with pytest.raises(ScriptArgumentError) as error:
        check_resume_fits(checkpoint, model)
    message = str(error.value)
    assert "ablation=None; this run: model_type='gesa', ablation='luke'" in message
    assert "missing: ['gesa.embeddings.position_embeddings.weight'" in message and "label_embeddings" in message
    own_args, data_args, _ = run_record.parse_args(record_sample_argv(tmp_path / "own", "--do_train"))
    check_resume_config(checkpoint, RECORD.variant_spec("gesa"), "gesa", None)  # the run's own checkpoint passes both
    own = RECORD.load(own_args, data_args, {"train": train}, None).model
    check_resume_fits(checkpoint, own)


@pytest.mark.slow
def test_auto_resume_skips_a_half_written_last_checkpoint(checkpointed, tmp_path, caplog):
    """The newest checkpoint is skipped (and the log says why) when its save was cut short: resuming it would end in a
    raw SafetensorError naming no path."""
    output_dir = tmp_path / "half"
    shutil.copytree(checkpointed / "checkpoint-1", output_dir / "checkpoint-1")
    shutil.copytree(checkpointed / "checkpoint-2", output_dir / "checkpoint-2")
    weights = output_dir / "checkpoint-2" / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:4000])
    (output_dir / "checkpoint-2" / "trainer_state.json").unlink()
    first = _FirstStep()
    with caplog.at_level("INFO"):
        run_record.main(
            record_sample_argv(output_dir, "--do_train", "--max_steps", "3", "--save_strategy", "no"),
            callbacks=[first],
        )
    assert first.first_step == 2  # resumed after step 1
    assert f"Not resuming from an incomplete checkpoint: {output_dir / 'checkpoint-2'} has no trainer_state.json" in (
        caplog.text
    )
    assert f"Resuming from {output_dir / 'checkpoint-1'}" in caplog.text
    assert json.loads((output_dir / "trainer_state.json").read_text())["global_step"] == 3


@pytest.mark.slow
def test_one_error_line_for_each_bad_flag_file_or_checkpoint(checkpointed, tmp_path):
    """Bad records, flags, files and checkpoints: one line each, exit status 2, before any training."""
    records = _sample_records()
    exclusive_ends = copy.deepcopy(records[1])  # original shape, ends written exclusively (off by one)
    for entity in exclusive_ends["passage"]["entities"]:
        entity["end"] += 1
    answer_off = copy.deepcopy(records[1])
    for answer in answer_off["qas"][0]["answers"]:
        answer["end"] += 1
    no_answer = copy.deepcopy(records[1])
    no_answer["qas"][0]["answers"] = []
    bare_answer = copy.deepcopy(records[1])
    bare_answer["qas"][0]["answers"] = "Tobias Wren"
    files = {
        name: "".join(json.dumps(item) + "\n" for item in (records[0], bad))
        for name, bad in (("ends.jsonl", exclusive_ends), ("answer-off.jsonl", answer_off),
                          ("no-answer.jsonl", no_answer), ("bare-answer.jsonl", bare_answer))
    }  # fmt: skip
    for name, content in files.items():
        (tmp_path / name).write_text(content, encoding="utf-8")
    first_line = RECORD_SAMPLE_TRAIN.read_bytes().split(b"\n")[0]
    (tmp_path / "latin1.jsonl").write_bytes(first_line + b"\n" + '{"passage": "Café"}'.encode("latin-1") + b"\n")
    truncated = tmp_path / "truncated-model"
    shutil.copytree(checkpointed, truncated, ignore=shutil.ignore_patterns("checkpoint-*"))
    weights = (truncated / "model.safetensors").read_bytes()
    (truncated / "model.safetensors").write_bytes(weights[: len(weights) // 2])
    half = tmp_path / "half-checkpoint"
    shutil.copytree(checkpointed / "checkpoint-2", half)
    (half / "trainer_state.json").unlink()
    out = str(tmp_path / "out")

    def data(train: str = str(RECORD_SAMPLE_TRAIN)) -> list[str]:
        return ["--train_file", train, "--validation_file", str(RECORD_SAMPLE_DEV), "--do_train", "--output_dir", out]

    cases = {
        "exclusive-entity-ends": (data("ends.jsonl"), ["--train_file ends.jsonl, line 2: ReCoRD example ", "ends with whitespace",
                                    "INCLUSIVE end", "subtract 1"]),
        "answer-end-off-by-one": (data("answer-off.jsonl"), ["--train_file answer-off.jsonl, line 2: ReCoRD example ",
                                           "does not match the passage", "subtract 1"]),
        "training-query-without-answer": (data("no-answer.jsonl"), ["--train_file no-answer.jsonl, line 2: ReCoRD example ",
                                         "has no gold answer", "train as all negative"]),
        "answers-a-bare-string": (data("bare-answer.jsonl"), ["--train_file bare-answer.jsonl, line 2: ReCoRD example ",
                                           "'answers' is the string 'Tobias Wren', not a list: wrap it"]),
        "unknown-flag": (["--do_train", "--not_a_flag", "1"], ["['--not_a_flag', '1']", "--help"]),
        "missing-arguments-file": (["missing-args.json"], ["the arguments file missing-args.json does not exist"]),
        "file-not-utf8": (data("latin1.jsonl"), ["--train_file latin1.jsonl, line 2: not UTF-8 (byte 0xe9",
                                              "re-save the file as UTF-8"]),
        "spacy-pipeline-not-installed": (data() + ["--candidate_source", "ner", "--spacy_model", "no_such_pipeline"],
                      ["--spacy_model no_such_pipeline: spaCy pipeline 'no_such_pipeline' is not installed",
                       "python -m spacy download no_such_pipeline"]),
        "resume-from-a-missing-checkpoint": (data() + ["--resume_from_checkpoint", "no-such-checkpoint"],
                               ["--resume_from_checkpoint no-such-checkpoint: no-such-checkpoint does not exist",
                                "give a complete checkpoint folder"]),
        "resume-from-a-half-written-checkpoint": (data() + ["--resume_from_checkpoint", str(half)],
                           [f"{half} has no trainer_state.json", "give a complete checkpoint folder"]),
        "truncated-model-weights": (["--model_name_or_path", str(truncated), "--do_eval", "--validation_file",
                                   str(RECORD_SAMPLE_DEV), "--output_dir", out],
                                  [f"--model_name_or_path {truncated}: {truncated / 'model.safetensors'} is truncated",
                                   "save or download the checkpoint again"]),
        "resume-a-checkpoint-of-another-ablation": (data() + ["--ablation", "luke", "--resume_from_checkpoint", str(checkpointed / "checkpoint-1")],
                        [f"cannot resume from {checkpointed / 'checkpoint-1'}: it was saved by another model "
                         "(ablation None, this run 'luke')"]),
        "resume-a-checkpoint-of-another-variant": (data() + ["--variant", "kar", "--output_dir", str(checkpointed)],
                       [f"cannot resume from {checkpointed / 'checkpoint-2'}: it was saved by another model "
                        "(model_type 'gesa', this run 'gesa_kar' (--variant kar))"]),
        "zero-epochs": (data() + ["--num_train_epochs", "0"], ["--num_train_epochs must be positive", "got 0.0"]),
        "negative-max-steps": (data() + ["--max_steps", "-5"], ["--max_steps must be a positive number of steps", "got -5"]),
        "incomplete-model-in-output-dir": (["--train_file", str(RECORD_SAMPLE_TRAIN), "--do_train",
                                            "--output_dir", str(truncated)],
                          [f"--output_dir {truncated} holds an incomplete model save", "is truncated",
                           "--overwrite_output_dir"]),
    }  # fmt: skip
    if not torch.cuda.is_available():
        cases["bf16-without-hardware"] = (data() + ["--bf16"], ["doesn't support bf16"])
    lines = record_error_lines([argv for argv, _ in cases.values()], cwd=tmp_path)
    for (name, (_, fragments)), line in zip(cases.items(), lines, strict=True):
        for fragment in fragments:
            assert fragment in line, (name, line)
    assert "add 1" not in lines[0]  # exclusive-entity-ends: the inclusive convention's fix, not the opposite
    assert not (tmp_path / "out").exists()


def test_processor_errors_on_flattened_rows_keep_the_file_line_and_the_inclusive_fix(tmp_path):
    """run_record flattens records to rows with exclusive spans; the processor's own checks (here: a span starting
    inside a word, which needs the tokenizer) still name the file and line and show the record's inclusive ends."""
    record = _sample_records()[1]
    text, entity = record["passage"]["text"], record["passage"]["entities"][0]
    entity["start"] += 1  # now inside the first word of the mention
    path = tmp_path / "inside.jsonl"
    path.write_text(json.dumps(_sample_records()[0]) + "\n" + json.dumps(record) + "\n", encoding="utf-8")
    checked = check_record_file(path, where=f"--train_file {path}")  # no tokenizer needed for this file-level check
    rows = flatten_records(
        {key: [item[key] for item in (_sample_records()[0], record)] for key in record},
        indices=[0, 1],
        sources=[f"--train_file {path}, {location}" for location in checked.locations],
    )
    assert rows["record_inclusive_end"] == [True] * len(rows["id"])
    tokenizer = train_sample_tokenizer([text] * 4)
    processor = GesaProcessor(tokenizer, entity_mask_id=2)
    rows_list = [dict(zip(rows, values, strict=True)) for values in zip(*rows.values(), strict=True)]
    with pytest.raises(ValueError) as error:
        processor.encode_records(rows_list)
    message = str(error.value)
    start, end = entity["start"], entity["end"]
    assert message.startswith(f"--train_file {path}, line 2: ReCoRD example "), message
    assert f"({start}, {end}) (inclusive end)" in message and "starts inside a word" in message, message
    assert "INCLUSIVE end" in message and "add 1" not in message
