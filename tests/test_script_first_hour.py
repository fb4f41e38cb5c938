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
"""A new user's first hour with the task scripts: ``--help`` says what each task reads, a script given no data or
model (only ``--task``) runs that task's demo offline on project-written data and ends with one summary line (metric
before and after training), the folder it trains answers through ``pipeline(model=dir, trust_remote_code=True)``, and
a training-only run ends with a summary line too.

Cost: the help texts; each demo trains a tiny model for ~20 s (marked slow).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from script_helpers import ENTITY_SCRIPT, MULTIHOP_SCRIPT, load_entity_script, load_multihop_script


def _help(script) -> str:
    proc = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def test_run_multihop_help_opens_with_every_task_its_variant_and_its_file_format():
    text = _help(MULTIHOP_SCRIPT)
    head = text[: text.index("options:")]  # usage and description, before the flags
    assert (
        head.startswith("usage: run_multihop.py [--task wikihop|medhop|hotpotqa|fever]")
        and len(head.splitlines()) < 45
    )
    for expected in ("--task wikihop", "QAngaroo JSON", "--task hotpotqa --variant xh", "HotpotQA distractor JSON",
                     "--task fever --variant xh", "FEVER shared-task JSON lines", "--wiki_pages", "with no arguments"):  # fmt: skip
        assert expected in " ".join(head.split()), expected
    assert "--task hotpotqa: xh" in " ".join(text.split())  # the --variant help names xh for the XH tasks


def test_run_entity_tasks_help_opens_with_a_description_of_every_task():
    text = _help(ENTITY_SCRIPT)
    head = " ".join(text[: text.index("options:")].split())
    assert head.startswith("usage: run_entity_tasks.py [--task entity_typing|relation_classification|ner|pretrain]")
    for expected in ("entity typing", "relation classification", "NER", "--task pretrain", "Open Entity", "TACRED",
                     "CoNLL-2003", "with no arguments"):  # fmt: skip
        assert expected in head, expected


def _demo(capsys, script, task: str, output_dir) -> list[str]:
    import re
    from pathlib import Path

    capsys.readouterr()
    script.main(["--task", task, "--output_dir", str(output_dir)])
    captured = capsys.readouterr()
    out = captured.out.splitlines()
    assert out[0].startswith(f"{script.SCRIPT.name}: no data or model given: the "), out[0]
    assert str(output_dir) in out[-1] and "; before training: " in out[-1], out[-1]
    assert not [line for line in out if "Model config" in line]  # no config dump (the WikiHop demo printed four)
    # the demo's data stays in its folder: every path the run names (the converted tiny LUKE) still exists
    assert out[-1].endswith(f"; demo data: {output_dir / 'demo-data'})") and (output_dir / "demo-data").is_dir()
    for named in re.findall(r"Converted LUKE checkpoint (\S+):", captured.out + captured.err):
        assert Path(named).is_dir() and Path(named).is_relative_to(output_dir), named
    noise = ("have been ignored", "seem corrupted", "LOAD REPORT", "pin_memory", " - DEBUG - ")
    assert not [line for line in (captured.out + captured.err).splitlines() if any(n in line for n in noise)]
    return out


@pytest.mark.slow
def test_hotpotqa_demo_trains_offline_and_its_folder_answers_through_its_own_pipeline(tmp_path, capsys):
    import transformers

    from gesa.training.xh import make_hotpot_sample

    output_dir = tmp_path / "hotpot"
    out = _demo(capsys, load_multihop_script(), "hotpotqa", output_dir)
    assert out[-1].startswith("HotpotQA 8 questions: joint F1 ")
    config = json.loads((output_dir / "config.json").read_text())
    assert list(config["custom_pipelines"]) == ["xh-hotpot-qa"] and (output_dir / "pipeline_xh_tasks.py").is_file()
    qa = transformers.pipeline(model=str(output_dir), trust_remote_code=True)
    assert type(qa).__name__ == "XhHotpotQAPipeline"
    answer = qa(make_hotpot_sample(1, seed=7)[0])
    assert set(answer) == {"id", "answer", "score", "supporting_facts"}


@pytest.mark.slow
def test_fever_demo_trains_offline_and_its_folder_answers_through_its_own_pipeline(tmp_path, capsys):
    import transformers

    from gesa.records_xh import read_wiki_pages
    from gesa.training.xh import make_fever_sample

    output_dir = tmp_path / "fever"
    out = _demo(capsys, load_multihop_script(), "fever", output_dir)
    assert out[-1].startswith("FEVER 9 claims: FEVER score ")
    assert (output_dir / "eval_predictions.jsonl").is_file()
    claims, _ = make_fever_sample(3, seed=2)
    # the pages the demo trained on stay in its folder: the README's call, as written
    assert out[-1].endswith(f"; demo data: {output_dir / 'demo-data'})")
    pages = read_wiki_pages([f"{output_dir}/demo-data/wiki-001.jsonl"])
    verify = transformers.pipeline(model=str(output_dir), trust_remote_code=True, pages=pages)
    assert type(verify).__name__ == "XhFactVerificationPipeline"
    assert verify({"claim": claims[0]["claim"]})["label"] in {"SUPPORTS", "REFUTES", "NOT ENOUGH INFO"}


@pytest.mark.slow
@pytest.mark.parametrize(
    "task, title, pipeline_class",
    [
        ("entity_typing", "Open Entity 12 mentions: micro F1 ", "EntityTypingPipeline"),
        ("relation_classification", "TACRED 12 sentences: micro F1 ", "RelationClassificationPipeline"),
        ("ner", "CoNLL-2003 12 sentences: span F1 ", "EntitySpanClassificationPipeline"),
        ("pretrain", "Pre-training 12 sentences: loss ", None),
        ("figer", "FIGER 12 mentions: strict accuracy ", None),
    ],
)
def test_entity_task_demos_train_offline_and_say_how_they_did(tmp_path, capsys, task, title, pipeline_class):
    output_dir = tmp_path / task
    out = _demo(capsys, load_entity_script(), task, output_dir)
    assert out[-1].startswith(title), out[-1]
    assert "{}" not in out  # nothing prints an empty dict
    if pipeline_class is not None:  # percent, like every script: 100 x the official fraction of its predictions
        from gesa.training.entity import ENTITY_TASKS

        rows = json.loads((output_dir / "eval_predictions.json").read_text())
        official = ENTITY_TASKS[task].metric([r["prediction"] for r in rows], [r["reference"] for r in rows])["f1"]
        shown = float(out[-1][len(title) :].split(",")[0])
        assert shown == pytest.approx(100 * official, abs=0.005) and official > 0.01, (shown, official)
    if pipeline_class is not None:
        import transformers

        answer = transformers.pipeline(model=str(output_dir), trust_remote_code=True)
        assert type(answer).__name__ == pipeline_class
        if task == "ner":  # word spans, as run_entity_tasks.py's predictions, each with its type and probability
            spans = answer({"tokens": ["Ana", "Velmor", "visits", "Ostrel", "."]})
            assert all(set(span) == {"start", "end", "words", "type", "score"} for span in spans), spans
            assert all(0 <= span["start"] < span["end"] <= 5 and 0 < span["score"] <= 1 for span in spans), spans


@pytest.mark.slow
def test_a_training_only_run_ends_with_a_summary_line(tiny_luke_dir, tmp_path, capsys):
    from script_helpers import ENTITY_TASK_FILES

    output_dir = tmp_path / "train-only"
    capsys.readouterr()
    load_entity_script().main(["--task", "entity_typing", "--model_name_or_path", str(tiny_luke_dir),
                               "--train_file", str(ENTITY_TASK_FILES["entity_typing"]), "--do_train",
                               "--max_steps", "2", "--logging_steps", "1", "--output_dir", str(output_dir),
                               "--report_to", "none", "--save_strategy", "no", "--use_cpu", "true"])  # fmt: skip
    captured = capsys.readouterr()
    last = captured.out.strip().splitlines()[-1]
    assert last.startswith("Open Entity trained on 6 mentions, not evaluated (no --do_eval); training loss "), last
    assert last.endswith(f"({output_dir})")
    # log noise a user reported: the Hub reminder, the card's dropped-metrics dump and the pin_memory warning
    text = captured.out + captured.err
    assert "Do not forget to share your model" not in text and "Dropping the following result" not in text
    assert "pin_memory" not in text
