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
"""The re-rankers (FullWiki's, FEVER's) and the paper system's five models run through the shared driver: its
flag checks, folder lock and overwrite rule, one `error:` line; the node length fits the checkpoint's positions (as
every script's --max_seq_length must); the paper system's folder is one checkpoint (summary line, pipeline, no
Trainer files left, a stopped run resumed)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from hotpot_fever_fixtures import fever_fixture_claims, hotpot_fixture_rows, write_fever_pages
from script_helpers import (
    ENTITY_SCRIPT,
    ENTITY_TASK_FILES,
    RECORD_SCRIPT,
    load_multihop_script,
    multihop_error_line,
    record_sample_argv,
    script_error_lines,
)
from tiny_luke import build_tiny_luke
from transformers import AutoTokenizer
from variant_inputs import xh_config

from gesa.configuration_variants import PAPER_SYSTEM_COMPONENTS, XhPaperSystemConfig
from gesa.modeling_xh_paper import COMPONENT_CLASSES, XhPaperSystemForHotpotQA
from gesa.records_xh import read_hotpot_file
from gesa.training.xh_fullwiki import abstracts_from_paragraphs, hotpot_paragraphs, write_abstracts_corpus

ARGS = ["--variant", "xh", "--per_device_train_batch_size", "4", "--learning_rate", "3e-3", "--report_to", "none",
        "--seed", "0", "--use_cpu", "true", "--max_query_length", "24", "--disable_tqdm", "true"]  # fmt: skip


def _hotpot(tmp_path: Path) -> Path:
    path = tmp_path / "hotpot.json"
    path.write_text(json.dumps(hotpot_fixture_rows()))
    return path


def _corpus(tmp_path: Path, rows: list[dict]) -> Path:
    return write_abstracts_corpus(tmp_path / "corpus", abstracts_from_paragraphs(hotpot_paragraphs(rows)), 3)


def _fever(tmp_path: Path) -> list[str]:
    claims = fever_fixture_claims()
    (tmp_path / "claims.jsonl").write_text("\n".join(json.dumps(c) for c in claims))
    write_fever_pages(tmp_path)
    return ["--task", "fever", "--train_file", str(tmp_path / "claims.jsonl"), "--validation_file",
            str(tmp_path / "claims.jsonl"), "--wiki_pages", str(tmp_path / "wiki-001.jsonl"),
            "--fever_retrieval", "bm25_rerank"]  # fmt: skip


def _runs(tmp_path: Path) -> dict[str, list[str]]:
    """The three runs that train a component first: FullWiki (joint), the paper system, FEVER's bm25_rerank."""
    hotpot = _hotpot(tmp_path)
    corpus = _corpus(tmp_path, hotpot_fixture_rows())
    files = ["--task", "hotpotqa", "--train_file", str(hotpot), "--validation_file", str(hotpot)]
    return {"fullwiki": [*files, "--hotpot_setting", "fullwiki", "--corpus_dir", str(corpus)],
            "paper": [*files, "--system", "paper"], "bm25_rerank": _fever(tmp_path)}  # fmt: skip


def _finished_model(folder: Path, source: Path) -> None:
    """A folder holding a finished model (a config and a complete weights file), as a run leaves it."""
    folder.mkdir(parents=True)
    for name in ("config.json", "model.safetensors"):
        shutil.copy(source / name, folder / name)


@pytest.mark.parametrize("run", ["fullwiki", "paper", "bm25_rerank"])
def test_a_finished_folder_is_refused_before_any_component_trains(tiny_luke_dir, tmp_path, capsys, run):
    output_dir = tmp_path / "out"
    _finished_model(output_dir, tiny_luke_dir)
    component = output_dir / {"fullwiki": "ranker", "paper": "question_type", "bm25_rerank": "sentence_ranker"}[run]
    _finished_model(component, tiny_luke_dir)
    before = {path: path.stat().st_mtime_ns for path in output_dir.rglob("*")}
    argv = [*_runs(tmp_path)[run], "--model_name_or_path", str(tiny_luke_dir), "--output_dir", str(output_dir),
            "--do_train", "--do_eval", *ARGS]  # fmt: skip
    line = multihop_error_line(capsys, argv)
    assert "already holds a trained model" in line and "--overwrite_output_dir" in line
    assert {path: path.stat().st_mtime_ns for path in output_dir.rglob("*")} == before  # nothing replaced


@pytest.mark.parametrize("run", ["fullwiki", "paper", "bm25_rerank"])
def test_an_output_dir_under_a_file_is_one_error_line(tiny_luke_dir, tmp_path, capsys, run):
    (tmp_path / "a_file").write_text("x")
    argv = [*_runs(tmp_path)[run], "--model_name_or_path", str(tiny_luke_dir), "--output_dir",
            str(tmp_path / "a_file" / "out"), "--do_train", *ARGS]  # fmt: skip
    assert "is a file, not a folder" in multihop_error_line(capsys, argv)


def test_the_paper_system_refuses_flags_of_a_trainer_it_does_not_have(tiny_luke_dir, tmp_path, capsys):
    base = [*_runs(tmp_path)["paper"], "--model_name_or_path", str(tiny_luke_dir), "--output_dir", str(tmp_path / "o"),
            "--do_train", "--do_eval", *ARGS]  # fmt: skip
    line = multihop_error_line(capsys, [*base, "--eval_strategy", "steps", "--eval_steps", "2"])
    assert "--eval_strategy steps: --system paper" in line and "drop --eval_strategy" in line
    line = multihop_error_line(capsys, [*base, "--max_eval_samples", "-1"])  # as the joint system refuses it
    assert "--max_eval_samples must be at least 1" in line


def test_an_evaluation_question_of_an_unknown_type_is_refused_when_the_file_is_read(tiny_luke_dir, tmp_path, capsys):
    rows = hotpot_fixture_rows()
    rows[3]["type"] = "compare"
    (tmp_path / "dev.json").write_text(json.dumps(rows))
    argv = ["--task", "hotpotqa", "--system", "paper", "--model_name_or_path", str(tiny_luke_dir), "--output_dir",
            str(tmp_path / "o"), "--validation_file", str(tmp_path / "dev.json"), "--do_eval", *ARGS]  # fmt: skip
    line = multihop_error_line(capsys, argv)
    assert str(tmp_path / "dev.json") in line and "item 4" in line and rows[3]["_id"] in line
    assert "type 'compare'" in line and "'bridge', 'comparison'" in line
    assert not (tmp_path / "o").exists()  # nothing loaded, nothing written


def _paper_folder(folder: Path, tokenizer_dir: Path) -> Path:
    """A --system paper folder as a run saves it, with random tiny components (no training)."""
    torch.manual_seed(0)
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    components = {}
    for name, head in PAPER_SYSTEM_COMPONENTS.items():
        config = xh_config(vocab_size=len(tokenizer) + 3, max_relative_position=8, xh_num_hop_layers=0,
                           **({"id2label": {0: "bridge", 1: "comparison"}} if name == "question_type" else {}))  # fmt: skip
        components[name] = COMPONENT_CLASSES[head](config)
    XhPaperSystemForHotpotQA(XhPaperSystemConfig(), components).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def test_a_truncated_component_is_named_with_the_fix(tiny_luke_dir, tmp_path, capsys):
    folder = _paper_folder(tmp_path / "paper", tiny_luke_dir)
    weights = folder / "xh_comparison" / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:1000])
    argv = ["--task", "hotpotqa", "--system", "paper", "--model_name_or_path", str(folder), "--output_dir",
            str(tmp_path / "o"), "--validation_file", str(_hotpot(tmp_path)), "--do_eval", *ARGS]  # fmt: skip
    line = multihop_error_line(capsys, argv)
    assert "its xh_comparison model" in line and str(weights) in line and "train the system again" in line
    with pytest.raises(OSError, match="the paper system's xh_comparison model"):
        XhPaperSystemForHotpotQA.from_pretrained(folder)


def test_a_component_without_its_config_is_named_with_the_fix(tiny_luke_dir, tmp_path, capsys):
    folder = _paper_folder(tmp_path / "paper", tiny_luke_dir)
    (folder / "xh_comparison" / "config.json").unlink()
    argv = ["--task", "hotpotqa", "--system", "paper", "--model_name_or_path", str(folder), "--output_dir",
            str(tmp_path / "o"), "--validation_file", str(_hotpot(tmp_path)), "--do_eval", *ARGS]  # fmt: skip
    line = multihop_error_line(capsys, argv)
    assert "its xh_comparison model has no config.json" in line and "train the system again" in line
    with pytest.raises(OSError, match="the paper system's xh_comparison model .* has no config.json"):
        XhPaperSystemForHotpotQA.from_pretrained(folder)


def test_paper_and_joint_folders_given_to_the_other_system_name_the_system_that_reads_them(
    tiny_luke_dir, tmp_path, capsys
):
    paper = _paper_folder(tmp_path / "paper", tiny_luke_dir)
    joint = tmp_path / "joint"
    _finished_model(joint, tiny_luke_dir)
    (joint / "config.json").write_text(json.dumps({"model_type": "gesa_xh", "architectures": ["XhForHotpotQA"]}))
    dev = str(_hotpot(tmp_path))
    base = ["--task", "hotpotqa", "--output_dir", str(tmp_path / "o"), "--validation_file", dev, "--do_eval", *ARGS]
    line = multihop_error_line(capsys, [*base, "--model_name_or_path", str(paper)])
    assert "holds the paper system's five models" in line and "pass --system paper" in line
    line = multihop_error_line(capsys, [*base, "--system", "paper", "--model_name_or_path", str(joint)])
    assert "XhForHotpotQA" in line and "--system paper needs a LUKE checkpoint" in line
    assert "evaluate a --system joint folder with --system joint" in line


def test_a_corpus_without_a_word_to_index_is_named_with_the_fix(tiny_luke_dir, tmp_path, capsys):
    articles = [{"id": str(i), "url": "", "title": title, "text": [" "], "text_with_links": [" "]}
                for i, title in enumerate(["The", "A"])]  # fmt: skip
    corpus = write_abstracts_corpus(tmp_path / "corpus", articles)
    argv = ["--task", "hotpotqa", "--hotpot_setting", "fullwiki", "--corpus_dir", str(corpus),
            "--model_name_or_path", str(tiny_luke_dir), "--output_dir", str(tmp_path / "o"), "--validation_file",
            str(_hotpot(tmp_path)), "--do_eval", *ARGS]  # fmt: skip
    line = multihop_error_line(capsys, argv)
    assert f"--corpus_dir {corpus}: its 2 articles cannot be searched" in line and "has a word to index" in line
    assert "carry their title and text" in line


def test_a_fullwiki_question_need_not_carry_its_paragraphs_in_its_context(tiny_luke_dir, tmp_path, capsys):
    rows = hotpot_fixture_rows()
    corpus = _corpus(tmp_path, rows)
    for row in rows:  # FullWiki retrieves the paragraphs: the file's own context holds none of the gold ones
        row["context"] = [pair for pair in row["context"] if pair[0] not in {t for t, _ in row["supporting_facts"]}]
    (tmp_path / "dev.json").write_text(json.dumps(rows))
    assert len(read_hotpot_file(tmp_path / "dev.json", with_context=False)) == len(rows)
    argv = ["--task", "hotpotqa", "--hotpot_setting", "fullwiki", "--corpus_dir", str(corpus),
            "--model_name_or_path", str(tiny_luke_dir), "--output_dir", str(tmp_path / "o"), "--validation_file",
            str(tmp_path / "dev.json"), "--do_eval", *ARGS]  # fmt: skip
    # read and accepted: what stops this evaluation-only run is the missing trained re-ranker, not the file
    assert "needs a trained re-ranker" in multihop_error_line(capsys, argv)


@pytest.fixture(scope="module")
def luke_514(tmp_path_factory) -> Path:
    """A tiny LUKE with LUKE's 514 position rows (512 words)."""
    return build_tiny_luke(tmp_path_factory.mktemp("luke-514"), max_position_embeddings=514)


@pytest.mark.parametrize("system", ["joint", "paper"])
def test_a_max_seq_length_beyond_the_checkpoints_positions_is_one_error_before_weights_load(
    luke_514, tmp_path, capsys, system
):
    argv = ["--task", "hotpotqa", "--system", system, "--model_name_or_path", str(luke_514), "--output_dir",
            str(tmp_path / "o"), "--train_file", str(_hotpot(tmp_path)), "--do_train", "--max_seq_length", "600",
            *ARGS]  # fmt: skip
    line = multihop_error_line(capsys, argv)
    assert "--max_seq_length 600" in line and "reach 512 words" in line and "give --max_seq_length 512 or less" in line
    assert not (tmp_path / "o").exists()


def test_every_script_refuses_a_max_seq_length_beyond_the_checkpoints_positions(luke_514, tmp_path):
    record = [*record_sample_argv(tmp_path / "r", "--model_name_or_path", str(luke_514), "--variant", "luke",
                                  "--do_train"), "--max_seq_length", "600"]  # fmt: skip
    entity = ["--task", "entity_typing", "--variant", "luke", "--model_name_or_path", str(luke_514), "--output_dir",
              str(tmp_path / "e"), "--train_file", str(ENTITY_TASK_FILES["entity_typing"]), "--do_train",
              "--max_seq_length", "600"]  # fmt: skip
    for script, argv in ((RECORD_SCRIPT, record), (ENTITY_SCRIPT, entity)):
        (line,) = script_error_lines(script, [argv], tmp_path)
        assert "--max_seq_length 600" in line and "reach 512 words" in line and "512 or less" in line, line


@pytest.mark.slow
def test_xh_nodes_default_to_what_the_backbone_holds_and_longer_ones_are_cut_and_counted(tmp_path, capsys):
    luke = build_tiny_luke(tmp_path / "luke", max_position_embeddings=42)  # 40 words: the fixtures' nodes are longer
    output_dir = tmp_path / "out"
    argv = ["--task", "hotpotqa", "--model_name_or_path", str(luke), "--output_dir", str(output_dir), "--train_file",
            str(_hotpot(tmp_path)), "--validation_file", str(_hotpot(tmp_path)), "--do_train", "--do_eval",
            "--max_steps", "2", *ARGS]  # fmt: skip
    load_multihop_script().main(argv)
    assert json.loads((output_dir / "processor_config.json").read_text())["max_node_length"] == 40
    summary = capsys.readouterr().out.strip().splitlines()[-1]
    assert (
        summary.startswith("HotpotQA 6 questions: joint F1")
        and "node texts cut to --max_seq_length 40 words" in summary
    )


@pytest.mark.slow
def test_a_paper_run_prints_its_summary_answers_through_its_pipeline_and_leaves_no_trainer_files(
    luke_514, tmp_path, capsys
):
    from transformers import pipeline

    output_dir = tmp_path / "out"
    argv = [*_runs(tmp_path)["paper"], "--model_name_or_path", str(luke_514), "--output_dir", str(output_dir),
            "--do_train", "--do_eval", "--num_train_epochs", "2", "--save_steps", "1", "--logging_steps", "1",
            *ARGS]  # fmt: skip
    results = load_multihop_script().main(argv)
    summary = capsys.readouterr().out.strip().splitlines()[-1]
    assert summary.startswith(f"HotpotQA (paper system) 6 questions: joint F1 {results['eval_joint_f1']:.2f}")
    assert "question type accuracy" in summary and "question_type trained: loss" in summary
    for name in PAPER_SYSTEM_COMPONENTS:  # checkpoints were saved every step, and are gone with the Trainer's files
        assert (output_dir / name / "model.safetensors").is_file()
        assert (
            not list((output_dir / name).glob("checkpoint-*"))
            and not (output_dir / name / "training_args.bin").exists()
        )
    # the folder is one checkpoint: its pipeline answers as the joint system's does
    qa = pipeline(model=str(output_dir), trust_remote_code=True)
    row = hotpot_fixture_rows()[0]
    answer = qa(row)
    assert set(answer) == {"id", "answer", "score", "supporting_facts", "type"} and answer["id"] == row["_id"]
    predictions = json.loads((output_dir / "eval_predictions.json").read_text())
    assert answer["answer"] == predictions["answer"][row["_id"]]
    assert [list(fact) for fact in answer["supporting_facts"]] == predictions["sp"][row["_id"]]
    # a run stopped before its end (no top-level config yet) keeps the models it finished and trains no more
    (output_dir / "config.json").unlink()
    weights = {name: (output_dir / name / "model.safetensors").read_bytes() for name in PAPER_SYSTEM_COMPONENTS}
    again = load_multihop_script().main(argv)
    assert again == results
    assert all((output_dir / name / "model.safetensors").read_bytes() == w for name, w in weights.items())
