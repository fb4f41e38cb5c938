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
"""The three scripts keep one promise through the shared driver: a bad flag, a bad arguments file, an unreachable
dataset, an output folder that cannot be used, a damaged checkpoint or a record the processor cannot use ends the run
with ONE ``<script>: error: ...`` line (exit status 2, nothing else printed, no traceback) before any training.

Cost: one fresh process per script for the flag cases (no model is built), and for the damaged checkpoints three tiny
one-step training runs (WikiHop, ReCoRD, entity typing) plus one process per script.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from hotpot_fever_fixtures import FEVER_PAGES, fever_fixture_claims, hotpot_fixture_rows
from script_helpers import (
    ENTITY_SCRIPT,
    ENTITY_TASK_FILES,
    MULTIHOP_SCRIPT,
    RECORD_SAMPLE_TRAIN,
    RECORD_SCRIPT,
    load_entity_script,
    load_multihop_script,
    record_sample_argv,
    record_script,
    script_error_lines,
)

from gesa.training.machinery import LOCK_NAME
from gesa.training.wikihop import make_wikihop_sample, write_wikihop_file


def _check(script: Path, cases: list[tuple[list[str], str]], cwd: Path) -> None:
    lines = script_error_lines(script, [argv for argv, _ in cases], cwd)
    for (argv, expected), line in zip(cases, lines, strict=True):
        assert expected in line, (argv, line)


def _folders(tmp_path: Path) -> tuple[Path, Path]:
    """A symbolic link to a folder that does not exist, and a folder whose lock-file path is a folder."""
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "nowhere")
    locked = tmp_path / "locked"
    (locked / LOCK_NAME).mkdir(parents=True)
    return dangling, locked


def _shared_refusals(base: list[str], tmp_path: Path) -> list[tuple[list[str], str]]:
    """The refusals every script shares (one argument path): `base` with --output_dir and one bad flag or output
    folder, each with the line it must print."""
    dangling, locked = _folders(tmp_path)
    out, missing = str(tmp_path / "out"), str(tmp_path / "no-tokenizer")
    return [
        ([*base, "--output_dir", out, "--seed", "-1"], "--seed must lie in 0 .. 4294967295 (2**32 - 1), got -1"),
        ([*base, "--output_dir", out, "--num_train_epochs", "inf"], "--num_train_epochs must be a finite number"),
        ([*base, "--output_dir", out, "--ablation", "nope"], "--ablation 'nope' is unknown; choose one of"),
        ([*base, "--output_dir", out, "--max_train_samples", "-1"], "--max_train_samples must be at least 1"),
        (
            [*base, "--output_dir", out, "--tokenizer_name", missing],
            f"--tokenizer_name {missing}: cannot load a token",
        ),
        ([*base, "--output_dir", str(dangling)], f"--output_dir {dangling} is a symbolic link to"),
        ([*base, "--output_dir", str(locked)], f"{locked / LOCK_NAME} is a folder, not the run's lock file"),
    ]


def _arguments_file(tmp_path: Path, name: str, **flags) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(flags), encoding="utf-8")
    return str(path)


def _fever_files(tmp_path: Path, claims: list[dict]) -> tuple[str, str]:
    pages = [{"id": p, "text": "", "lines": "\n".join(f"{n}\t{s}" for n, s in lines.items())}
             for p, lines in FEVER_PAGES.items()]  # fmt: skip
    wiki = tmp_path / "wiki-001.jsonl"
    wiki.write_text("\n".join(json.dumps(page) for page in pages), encoding="utf-8")
    path = tmp_path / f"fever-{len(list(tmp_path.glob('fever-*')))}.jsonl"
    path.write_text("\n".join(json.dumps(claim) for claim in claims), encoding="utf-8")
    return str(path), str(wiki)


def test_every_bad_flag_of_run_multihop_is_one_error_line(tiny_luke_dir, tmp_path):
    wikihop = str(write_wikihop_file(tmp_path / "train.json", make_wikihop_sample(4, seed=1)))
    (tmp_path / "hotpot.json").write_text(json.dumps(hotpot_fixture_rows()), encoding="utf-8")
    fever, wiki = _fever_files(tmp_path, fever_fixture_claims())
    out = str(tmp_path / "out")
    wh = ["--task", "wikihop", "--model_name_or_path", str(tiny_luke_dir), "--train_file", wikihop, "--do_train"]
    hp = ["--task", "hotpotqa", "--variant", "xh", "--model_name_or_path", str(tiny_luke_dir), "--train_file",
          str(tmp_path / "hotpot.json"), "--do_train", "--output_dir", out]  # fmt: skip
    fv = ["--task", "fever", "--variant", "xh", "--model_name_or_path", str(tiny_luke_dir), "--train_file", fever,
          "--wiki_pages", wiki, "--do_train", "--output_dir", out]  # fmt: skip
    no_dataset = ["--task", "hotpotqa", "--variant", "xh", "--do_train", "--output_dir", out, "--dataset_name",
                  "nobody/no-such-dataset", "--model_name_or_path", str(tiny_luke_dir)]  # fmt: skip
    arguments = _arguments_file(tmp_path, "args.json", task="wikihop", train_file=wikihop, do_train=True,
                                output_dir=out, num_train_epochs="many")  # fmt: skip
    cases = [
        *_shared_refusals(wh, tmp_path),
        ([*wh, "--output_dir", out, "--attention_window", "-1"], "--attention_window must be at least 1"),
        ([*wh, "--output_dir", out, "--max_eval_samples", "0"], "--max_eval_samples must be at least 1"),
        ([*wh, "--output_dir", out, "--max_seq_length", "200000000"], "--max_seq_length must be at most 65536"),
        ([*hp, "--max_query_length", "0"], "--max_query_length must be at least 1 token, got 0"),
        ([*hp, "--max_seq_length", "8"], "--max_seq_length 8 (the processor's max_node_length, tokens per node)"),
        ([*fv, "--max_nodes", "0"], "--max_nodes must be at least 1"),
        ([*fv, "--max_nodes", "-2"], "--max_nodes must be at least 1"),
        (no_dataset, "--dataset_name nobody/no-such-dataset: cannot load its train split"),
        ([arguments], "'num_train_epochs' must be float, got 'many'"),
    ]
    _check(MULTIHOP_SCRIPT, cases, tmp_path)
    assert not (tmp_path / "out").exists() and (tmp_path / "locked" / LOCK_NAME).is_dir()


def test_every_bad_flag_of_run_entity_tasks_is_one_error_line(tiny_luke_dir, tmp_path):
    out = str(tmp_path / "out")
    typing = ["--task", "entity_typing", "--model_name_or_path", str(tiny_luke_dir), "--train_file",
              str(ENTITY_TASK_FILES["entity_typing"]), "--do_train"]  # fmt: skip
    arguments = _arguments_file(tmp_path, "args.json", task="entity_typing", do_train=True, output_dir=out,
                                train_file=str(ENTITY_TASK_FILES["entity_typing"]), max_seq_length="long")  # fmt: skip
    cases = [
        *_shared_refusals(typing, tmp_path),
        ([*typing, "--output_dir", out, "--num_train_epochs", "0"], "--num_train_epochs must be positive to train"),
        ([*typing, "--output_dir", out, "--max_steps", "0"], "--max_steps must be a positive number of steps"),
        ([*typing, "--output_dir", out, "--max_train_samples", "-2"], "--max_train_samples must be at least 1"),
        ([arguments], "'max_seq_length' must be int, got 'long'"),
    ]
    _check(ENTITY_SCRIPT, cases, tmp_path)
    assert not (tmp_path / "out").exists()


def test_run_record_refuses_a_negative_seed_infinite_epochs_and_a_mistyped_arguments_file(tmp_path):
    out = str(tmp_path / "out")
    train = ["--train_file", str(RECORD_SAMPLE_TRAIN), "--do_train", "--output_dir", out]
    cases = [
        ([*train, "--seed", "-1"], "--seed must lie in 0 .. 4294967295"),
        ([*train, "--num_train_epochs", "inf"], "--num_train_epochs must be a finite number"),
        (
            [
                _arguments_file(
                    tmp_path, "args.json", train_file=str(RECORD_SAMPLE_TRAIN), do_train=True, output_dir=out, seed="x"
                )
            ],
            "'seed' must be int, got 'x'",
        ),  # fmt: skip
        ([str(tmp_path / "list.json")], f"the arguments file {tmp_path / 'list.json'} holds a JSON list"),
    ]
    (tmp_path / "list.json").write_text("[1, 2]", encoding="utf-8")
    _check(RECORD_SCRIPT, cases, tmp_path)


def test_records_the_processor_cannot_use_are_one_error_line_naming_the_record(tiny_luke_dir, tmp_path):
    """XH featurising problems (gold evidence missing from --wiki_pages, malformed predicted_sentences) and an empty
    HotpotQA file: one line naming the claim, before any training."""
    claims = fever_fixture_claims()
    no_page = [dict(claims[0], evidence=[[[0, 0, "Nowhere", 0]]]), *claims[1:]]
    bare_sentences = [dict(claims[0]), dict(claims[1], predicted_sentences=[["Lyon"]]), *claims[2:]]
    (tmp_path / "empty.json").write_text("[]", encoding="utf-8")
    out = str(tmp_path / "out")
    common = ["--variant", "xh", "--model_name_or_path", str(tiny_luke_dir), "--do_train", "--output_dir", out]
    cases = []
    # gold evidence missing from the pages: found while featurising; a malformed field: found by the reader
    for claims_file, expected in (
        (no_page, "the train data cannot be featurised (claim '0'): "),
        (bare_sentences, ", line 2: FEVER claim 1: 'predicted_sentences' must be a list"),
    ):
        fever, wiki = _fever_files(tmp_path, claims_file)
        cases.append((["--task", "fever", "--train_file", fever, "--wiki_pages", wiki, *common], expected))  # fmt: skip
    cases.append((["--task", "hotpotqa", "--train_file", str(tmp_path / "empty.json"), *common], "holds no question"))
    lines = script_error_lines(MULTIHOP_SCRIPT, [argv for argv, _ in cases], tmp_path)
    for (_, expected), line in zip(cases, lines, strict=True):
        assert expected in line, line
    assert "gold evidence ['Nowhere', 0] is not in the wiki pages given" in lines[0]
    assert lines[1].count("fever-1.jsonl") == 1, lines[1]  # the file named once
    assert not (tmp_path / "out").exists()


def test_evaluation_files_without_answers_are_refused_before_training(tiny_luke_dir, tmp_path):
    """A WikiHop dev file without answers and FEVER's blind claims given as --validation_file: refused up front (they
    can be predicted with --do_predict --test_file), not after predicting."""
    unlabelled = make_wikihop_sample(3, seed=2, labelled=False)
    train = str(write_wikihop_file(tmp_path / "train.json", make_wikihop_sample(4, seed=1)))
    dev = str(write_wikihop_file(tmp_path / "dev.json", unlabelled))
    blind, wiki = _fever_files(tmp_path, [{"id": c["id"], "claim": c["claim"]} for c in fever_fixture_claims()[:3]])
    fever, _ = _fever_files(tmp_path, fever_fixture_claims())
    out = str(tmp_path / "out")
    cases = [
        (["--task", "wikihop", "--model_name_or_path", str(tiny_luke_dir), "--train_file", train, "--validation_file",
          dev, "--do_train", "--do_eval", "--output_dir", out], "WikiHop query 'WH_synthetic_2_0' has no gold answer"),
        (["--task", "fever", "--variant", "xh", "--model_name_or_path", str(tiny_luke_dir), "--train_file", fever,
          "--validation_file", blind, "--wiki_pages", wiki, "--do_train", "--do_eval", "--output_dir", out],
         "FEVER claim '0' has no gold label"),
    ]  # fmt: skip
    _check(MULTIHOP_SCRIPT, cases, tmp_path)


# ----------------------------------------------------------------------------------------------- damaged checkpoints


def _damage(source: Path, target: Path, config=None, tokenizer_bytes: int | None = None) -> str:
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("checkpoint-*"))
    if config is not None:
        text = (target / "config.json").read_text(encoding="utf-8")
        (target / "config.json").write_text(config(json.loads(text)) if callable(config) else config)
    if tokenizer_bytes is not None:
        raw = (target / "tokenizer.json").read_bytes()
        (target / "tokenizer.json").write_bytes(raw[:tokenizer_bytes])
    return str(target)


def _with(**values):
    return lambda config: json.dumps({**config, **values})


@pytest.mark.slow
def test_damaged_checkpoints_are_one_error_line_in_every_script(tiny_luke_dir, tmp_path):
    wikihop = str(write_wikihop_file(tmp_path / "train.json", make_wikihop_sample(4, seed=1)))
    typing_file = str(ENTITY_TASK_FILES["entity_typing"])
    quick = ["--max_steps", "1", "--save_strategy", "no", "--report_to", "none", "--use_cpu", "true"]
    trained = {name: tmp_path / f"trained-{name}" for name in ("wikihop", "record", "typing")}
    load_multihop_script().main(["--task", "wikihop", "--model_name_or_path", str(tiny_luke_dir), "--train_file",
                                 wikihop, "--do_train", "--output_dir", str(trained["wikihop"]), *quick])  # fmt: skip
    record_script().main(record_sample_argv(trained["record"], "--do_train", "--max_steps", "1"))
    load_entity_script().main(["--task", "entity_typing", "--model_name_or_path", str(tiny_luke_dir), "--train_file",
                               typing_file, "--do_train", "--output_dir", str(trained["typing"]), *quick])  # fmt: skip
    out = str(tmp_path / "out")
    damaged = tmp_path / "damaged"

    def wh(path: str) -> list[str]:
        return ["--task", "wikihop", "--model_name_or_path", path, "--train_file", wikihop, "--do_train",
                "--output_dir", out]  # fmt: skip

    source = trained["wikihop"]
    cases = [
        (wh(_damage(source, damaged / "a", "{not json")), "cannot read its config"),
        (wh(_damage(source, damaged / "b", "[1, 2]")), "its config.json holds a JSON list, not an object"),
        (wh(_damage(source, damaged / "c", _with(hidden_size="big"))), "its config.json is not a valid GesaConfig"),
        (wh(_damage(source, damaged / "d", _with(architectures=[]))), "has architectures=[]: it must name the head"),
        (wh(_damage(source, damaged / "e", _with(model_type=None))), "its config.json names no model_type"),
        (wh(_damage(source, damaged / "f", tokenizer_bytes=200)), "cannot load its tokenizer"),
    ]
    _check(MULTIHOP_SCRIPT, cases, tmp_path)

    def record(path: str) -> list[str]:
        return ["--model_name_or_path", path, "--train_file", str(RECORD_SAMPLE_TRAIN), "--do_train", "--output_dir",
                out]  # fmt: skip

    source = trained["record"]
    cases = [
        (record(_damage(source, damaged / "r1", "[1, 2]")), "its config.json holds a JSON list, not an object"),
        (record(_damage(source, damaged / "r2", _with(hidden_size="big"))), "is not a valid GesaConfig"),
    ]
    _check(RECORD_SCRIPT, cases, tmp_path)

    def typing(path: str) -> list[str]:
        return ["--task", "entity_typing", "--model_name_or_path", path, "--validation_file", typing_file,
                "--do_eval", "--output_dir", out]  # fmt: skip

    source = trained["typing"]
    labels = json.loads((source / "config.json").read_text())["id2label"]
    gapped = {str(int(key) + (1 if int(key) > 0 else 0)): value for key, value in labels.items()}
    cases = [
        (typing(_damage(source, damaged / "t1", _with(id2label={}))), "its config.json has no id2label"),
        (typing(_damage(source, damaged / "t2", _with(id2label=gapped))), "id2label skips class ids [1]"),
        (typing(_damage(source, damaged / "t3", _with(hidden_size="big"))), "is not a valid GesaConfig"),
    ]
    _check(ENTITY_SCRIPT, cases, tmp_path)
    assert not (tmp_path / "out").exists()
    # the weights every trained folder holds have the mode of the run's other files (not a temporary file's 0600)
    for folder in trained.values():
        modes = {path.name: path.stat().st_mode & 0o777 for path in folder.iterdir() if path.is_file()}
        assert modes["model.safetensors"] == modes["config.json"] == 0o666 & ~_umask(), modes


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
