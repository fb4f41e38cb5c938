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
"""A second run into a folder, or with a folder an earlier run wrote, keeps the promises of the shared driver
(``training.driver`` / ``training.machinery`` / ``training.models``), the same for every script:

- ``--resume_from_checkpoint false`` starts afresh: the folder's checkpoints are neither resumed nor left behind;
- a training run replaces an earlier run's results (``eval_*``, predictions, card), never merges them;
- a demo (a script given no data) writes only into a new or empty folder, or an earlier demo's;
- a checkpoint of another task is refused naming the task (its head), not the variant, and the reverse;
- every script's demo takes ``--variant`` and names its folder after the variant it trains;
- the model card command says what it wrote.

One tiny ``run_record.py`` training run (2 steps, a checkpoint each) is shared by the cases that need a folder.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from script_helpers import (
    RECORD_SAMPLE_DEV,
    load_entity_script,
    load_multihop_script,
    record_sample_argv,
    record_script,
    short_window_argv,
    train_two_steps,
)

from gesa.training import driver, machinery
from gesa.training.entity import ENTITY_TASKS
from gesa.training.models import check_checkpoint_head
from gesa.training.record import RECORD
from gesa.training.registry import HEAD_RUNS, head_run

run_record = record_script()


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    """A tiny GESA trained 2 steps from scratch, its checkpoints kept (``--save_steps 1``)."""
    output_dir = train_two_steps(tmp_path_factory.mktemp("second-runs") / "run")
    assert (output_dir / "checkpoint-2").is_dir() and (output_dir / "model.safetensors").is_file()
    return output_dir


def _error_line(capsys, main, argv: list[str]) -> str:
    capsys.readouterr()
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines, "no error line"
    return lines[-1]


# ----------------------------------------------------------------------------------------------- resuming


@pytest.mark.slow
def test_resume_from_checkpoint_false_starts_afresh_and_discards_the_old_checkpoints(trained, tmp_path, capsys):
    """``--resume_from_checkpoint false --overwrite_output_dir`` trains from the start (the folder's checkpoint-2,
    past ``--max_steps 1``, would otherwise be resumed, or refused); without ``--overwrite_output_dir`` it is refused
    naming what the folder holds."""
    folder = tmp_path / "again"
    shutil.copytree(trained, folder)
    line = _error_line(capsys, run_record.main, short_window_argv(folder, "--do_train", "--max_steps", "1",
                                                       "--resume_from_checkpoint", "false"))  # fmt: skip
    assert "--resume_from_checkpoint false starts afresh" in line and "checkpoint-1" in line
    assert "--overwrite_output_dir" in line
    run_record.main(short_window_argv(folder, "--do_train", "--max_steps", "1", "--resume_from_checkpoint", "false",
                           "--overwrite_output_dir", "true", "--save_strategy", "no"))  # fmt: skip
    state = json.loads((folder / "trainer_state.json").read_text())
    assert state["global_step"] == 1 and not list(folder.glob("checkpoint-*"))


def test_a_fresh_start_plans_to_discard_every_checkpoint(tmp_path):
    (tmp_path / "checkpoint-3").mkdir()
    (tmp_path / "checkpoint-12").mkdir()
    (tmp_path / "checkpoint-x").mkdir()  # not a Trainer checkpoint: left alone
    args = run_record.parse_args(record_sample_argv(tmp_path, "--do_train", "--resume_from_checkpoint", "False"))[2]
    plan = machinery.plan_resume(args, overwrite_output_dir=True)
    assert plan.checkpoint is None and plan.discard == [
        str(tmp_path / "checkpoint-12"),
        str(tmp_path / "checkpoint-3"),
    ]
    assert machinery.discard_checkpoints(plan) == ["checkpoint-12", "checkpoint-3"]
    assert sorted(path.name for path in tmp_path.iterdir()) == ["checkpoint-x"]


# ----------------------------------------------------------------------------------------------- results


@pytest.mark.slow
def test_an_overwriting_train_only_run_keeps_no_result_of_the_model_it_replaces(trained, tmp_path):
    """A train-only run over a folder that held a train + eval run: no ``eval_*`` in ``all_results.json``, no
    ``eval_predictions.json``, a card without scores; the folder's data files (an input of this run) are kept."""
    folder = tmp_path / "replaced"
    shutil.copytree(trained, folder, ignore=shutil.ignore_patterns("checkpoint-*"))
    (folder / "all_results.json").write_text(json.dumps({"eval_exact_match": 77.0, "eval_f1": 80.0, "epoch": 1.0}))
    (folder / "eval_results.json").write_text(json.dumps({"eval_exact_match": 77.0}))
    (folder / "eval_predictions.json").write_text(json.dumps({"q1": "Exeter"}))
    (folder / "demo-data").mkdir()
    train_file = shutil.copy(run_record.SAMPLE_FILES["train"], folder / "demo-data" / "train.jsonl")
    argv = short_window_argv(
        folder, "--do_train", "--max_steps", "1", "--overwrite_output_dir", "true", "--save_strategy", "no"
    )
    argv[argv.index("--train_file") + 1] = str(train_file)
    run_record.main(argv)
    results = json.loads((folder / "all_results.json").read_text())
    assert "train_loss" in results and not [key for key in results if key.startswith("eval_")], results
    assert not (folder / "eval_predictions.json").exists() and not (folder / "eval_results.json").exists()
    card = (folder / "README.md").read_text()
    assert "77.0" not in card and "model-index" not in card
    assert Path(train_file).is_file()  # an input of the run is never removed


def test_earlier_results_are_removed_but_not_the_runs_inputs(tmp_path):
    for name in ("all_results.json", "eval_results.json", "eval_predictions.json", "predict_predictions.json",
                 "trainer_state.json", "README.md", "config.json", "notes.txt"):  # fmt: skip
        (tmp_path / name).write_text("{}")
    (tmp_path / "demo-data").mkdir()
    (tmp_path / "demo-data" / "train.jsonl").write_text("")
    removed = machinery.remove_earlier_results(tmp_path, inputs=[tmp_path / "predict_predictions.json"])
    assert sorted(removed) == ["README.md", "all_results.json", "demo-data/", "eval_predictions.json",
                               "eval_results.json", "trainer_state.json"]  # fmt: skip
    assert sorted(path.name for path in tmp_path.iterdir()) == ["config.json", "notes.txt", "predict_predictions.json"]
    (tmp_path / "demo-data").mkdir()
    kept = [tmp_path / "predict_predictions.json"]
    assert machinery.remove_earlier_results(tmp_path, kept, demo=True) == []  # a demo keeps the data it just wrote


# ----------------------------------------------------------------------------------------------- demos


def test_the_demo_refuses_a_folder_holding_a_model_it_did_not_write(trained, tmp_path, capsys):
    folder = tmp_path / "my-model"
    shutil.copytree(trained, folder, ignore=shutil.ignore_patterns("checkpoint-*"))
    before = sorted(path.name for path in folder.iterdir())
    line = _error_line(capsys, run_record.main, ["--output_dir", str(folder)])
    assert f"--output_dir {folder} holds a trained model that no demo wrote" in line
    assert "--train_file" in line and "new or empty --output_dir" in line
    assert sorted(path.name for path in folder.iterdir()) == before  # no demo-data written, nothing replaced


def test_a_demo_writes_into_a_new_or_empty_folder_or_an_earlier_demos(tmp_path):
    machinery.check_demo_folder(str(tmp_path / "new"))
    machinery.check_demo_folder(str(tmp_path))  # empty
    (tmp_path / ".gesa-run.lock").write_text("")  # hidden files do not count
    machinery.check_demo_folder(str(tmp_path))
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(machinery.ScriptArgumentError, match=r"holds files that no demo wrote \(notes.txt\)"):
        machinery.check_demo_folder(str(tmp_path))
    (tmp_path / "config.json").write_text("{}")
    (tmp_path / "demo-data").mkdir()
    machinery.check_demo_folder(str(tmp_path))  # an earlier demo's folder
    shutil.rmtree(tmp_path / "demo-data")
    with pytest.raises(machinery.ScriptArgumentError, match="holds a trained model that no demo wrote"):
        machinery.check_demo_folder(str(tmp_path))


@pytest.mark.parametrize(
    ("argv", "variant", "folder"),
    [
        (["--task", "wikihop", "--variant", "luke"], "luke", "outputs/luke-tiny-wikihop"),
        (["--task", "hotpotqa"], "xh", "outputs/xh-tiny-hotpotqa"),
        (["--task", "fever"], "xh", "outputs/xh-tiny-fever"),
    ],
)
def test_every_multihop_demo_trains_its_variant_into_a_folder_named_after_it(
    tmp_path, monkeypatch, capsys, argv, variant, folder
):
    """``run_multihop.py --task wikihop --variant luke`` is the demo for that variant, like the other scripts' demos;
    the XH demos' folders are ``xh-tiny-<task>``. (The run itself is stubbed: the demos train in their own tests.)"""
    script = load_multihop_script()
    assert script.wants_demo(argv)
    ran = {}
    monkeypatch.setattr(driver, "run_task", lambda task, model_args, data_args, args, *a, **k: ran.update(
        task=task.name, variant=model_args.variant, output_dir=args.output_dir, demo_data=k.get("demo_data")))  # fmt: skip
    monkeypatch.chdir(tmp_path)
    script.main(argv)
    assert ran["variant"] == variant and ran["output_dir"] == folder and ran["demo_data"] == Path(folder, "demo-data")
    printed = capsys.readouterr().out
    assert f"demo (--variant {variant})" in printed and "on one idle core" in printed


def test_the_demo_says_how_long_it_takes():
    from script_helpers import EXAMPLES, load_script

    document_ie = load_script(EXAMPLES / "run_document_ie.py", "run_document_ie_demo_time")
    for script in (run_record, load_multihop_script(), load_entity_script(), document_ie):
        for name, task in script.SCRIPT.tasks.items():
            assert script.SCRIPT.demo_time(task).startswith("about "), (script.SCRIPT.name, name)
    assert document_ie.SCRIPT.demo_time(document_ie.SCIREX, "long_luke") == "about 60 s on one idle core"


# ----------------------------------------------------------------------------------------------- other tasks


def _config(architecture: str, model_type: str = "gesa", **extra) -> dict:
    return {"model_type": model_type, "architectures": [architecture], **extra}


def test_a_checkpoint_of_another_task_is_refused_naming_the_task_not_the_variant():
    ner = ENTITY_TASKS["ner"].variant_spec("gesa")
    with pytest.raises(machinery.ScriptArgumentError) as refused:
        check_checkpoint_head("typing-model", _config("GesaForEntityClassification"), ner, "--task ner --variant gesa")
    message = str(refused.value)
    assert "the task differs" in message and "entity typing (run_entity_tasks.py --task entity_typing)" in message
    assert "use it with run_entity_tasks.py --task entity_typing" in message and "pass --variant" not in message
    typing = ENTITY_TASKS["entity_typing"].variant_spec("gesa")
    with pytest.raises(machinery.ScriptArgumentError, match=r"trained for ReCoRD \(run_record.py\).*use it with "
                       r"run_record.py, or give --task entity_typing --variant gesa a LUKE checkpoint"):  # fmt: skip
        check_checkpoint_head(
            "record-model", _config("GesaForEntitySpanQA"), typing, "--task entity_typing --variant gesa"
        )
    # the same task, another variant: the variant is what differs
    with pytest.raises(machinery.ScriptArgumentError, match="the variant differs: pass --variant kar"):
        check_checkpoint_head("kar-model", _config("KarForEntityClassification", "gesa_kar"), typing, "--variant gesa")
    with pytest.raises(machinery.ScriptArgumentError, match="the task and the variant differ: use it with run_record"):
        check_checkpoint_head("xh-model", _config("XhForEntitySpanQA", "gesa_xh"), typing, "--variant gesa")
    check_checkpoint_head("typing-model", _config("GesaForEntityClassification"), typing, "--variant gesa")
    check_checkpoint_head("mlm", _config("GesaForMaskedLM"), typing, "--variant gesa", also=("GesaForMaskedLM",))


def test_every_tasks_head_names_the_run_that_trains_it():
    from gesa.training.wikihop import WIKIHOP
    from gesa.training.xh import FEVER, HOTPOTQA
    from gesa.training.xh_paper import PAPER_HOTPOTQA

    runs = [(RECORD, "run_record.py"), (WIKIHOP, "--task wikihop"), (HOTPOTQA, "--task hotpotqa"),
            (FEVER, "--task fever"), (PAPER_HOTPOTQA, "--system paper"),
            *((task, f"--task {task.features}") for task in ENTITY_TASKS.values())]  # fmt: skip
    # (FIGER trains entity typing's head, features and all: a FIGER checkpoint names the typing run)
    for task, run in runs:
        for head in task.heads.values():
            assert run in (head_run(head.__name__) or ""), (task.name, head.__name__)
    assert head_run("GesaModel") is None and len(set(HEAD_RUNS.values())) == 9


def test_a_record_folder_given_to_an_entity_task_is_refused_naming_the_task(trained, tmp_path, capsys):
    """``run_entity_tasks.py --task entity_typing`` on a ``run_record.py`` folder: the head differs (not "no
    id2label"); a typing checkpoint given to ``--task ner``: the task differs (not "pass the --variant")."""
    from gesa.training.entity import make_entity_sample

    data = tmp_path / "typing.json"
    data.write_text(make_entity_sample("entity_typing", 4, 1))
    entity = load_entity_script()
    base = ["--train_file", str(data), "--validation_file", str(data), "--do_train", "--do_eval", "--output_dir",
            str(tmp_path / "out")]  # fmt: skip
    line = _error_line(capsys, entity.main, ["--task", "entity_typing", "--model_name_or_path", str(trained), *base])
    assert "holds a GesaForEntitySpanQA (--variant gesa, trained for ReCoRD (run_record.py))" in line
    assert "the task differs" in line and "id2label" not in line
    typing = tmp_path / "typing-model"
    shutil.copytree(trained, typing, ignore=shutil.ignore_patterns("checkpoint-*"))
    config = json.loads((typing / "config.json").read_text())
    config.update(architectures=["GesaForEntityClassification"], id2label={"0": "person"}, label2id={"person": 0})
    (typing / "config.json").write_text(json.dumps(config))
    (tmp_path / "ner.txt").write_text(make_entity_sample("ner", 4, 1))
    base = [str(tmp_path / "ner.txt") if arg == str(data) else arg for arg in base]
    line = _error_line(capsys, entity.main, ["--task", "ner", "--model_name_or_path", str(typing), *base])
    assert "trained for entity typing" in line and "use it with run_entity_tasks.py --task entity_typing" in line
    assert "pass the --variant" not in line
    assert not (tmp_path / "out").exists()  # refused before anything was written


# ----------------------------------------------------------------------------------------------- the card


def test_the_card_command_says_what_it_wrote(trained, tmp_path, capsys):
    from gesa.training import cards

    folder = tmp_path / "carded"
    shutil.copytree(trained, folder, ignore=shutil.ignore_patterns("checkpoint-*"))
    (folder / "all_results.json").write_text(json.dumps({"eval_exact_match": 50.0, "eval_f1": 62.5}))
    capsys.readouterr()
    path = cards.main([str(folder)])
    printed = capsys.readouterr().out.strip()
    assert path == folder / "README.md" and path.is_file()
    assert printed == (f"cards: wrote {path}, the GESA (Graph-Enhanced Self-Attention) card (scores from "
                       "all_results.json: exact match 50.00, F1 62.50)")  # fmt: skip
    with pytest.raises(SystemExit):
        cards.main([str(tmp_path / "nothing-here")])
    assert "holds no config.json" in capsys.readouterr().err


def test_chance_of_a_record_split_is_a_uniform_guess_among_its_candidates():
    rows = RECORD.read_file(run_record.SAMPLE_FILES["validation"], "--validation_file f", "validation",
                            run_record.parse_args(["--output_dir", "o", "--do_eval"])[1], _NoHub())  # fmt: skip
    assert RECORD.chance(rows) == pytest.approx(12.5)  # four people and four cities, one answer
    news = RECORD.read_file(RECORD_SAMPLE_DEV, "--validation_file f", "validation",
                            run_record.parse_args(["--output_dir", "o", "--do_eval"])[1], _NoHub())  # fmt: skip
    by_hand = []
    for passage, spans, answers in zip(news["passage"], news["entity_spans"], news["answers"], strict=True):
        from gesa.candidates_gesa import normalize_entity_string

        texts = {normalize_entity_string(passage[span["start"] : span["end"]]) for span in spans}
        by_hand.append(len(texts & {normalize_entity_string(answer) for answer in answers}) / len(texts))
    assert RECORD.chance(news) == pytest.approx(100 * sum(by_hand) / len(by_hand))


class _NoHub:
    cache_dir = None


def test_the_xh_tasks_chance_levels():
    """HotpotQA: a coin for the yes/no questions, a span answer guessed right too rarely to count; FEVER: one label in
    three."""
    from gesa.training.xh import FEVER, HOTPOTQA

    questions = [{"answer": "yes"}, {"answer": "no"}, {"answer": "Paris"}, {"answer": "France"}, {"answer": None}]
    assert HOTPOTQA.chance(questions) == pytest.approx(100 * (0.5 + 0.5) / 4)
    assert FEVER.chance([{"label": "SUPPORTS"}, {"label": None}]) == pytest.approx(100 / 3)
    assert FEVER.chance([{"label": None}]) is None and HOTPOTQA.chance([]) is None
