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
"""Every command the README and ``docs/*.md`` show works as written.

The commands are read from the documents themselves (``bash`` blocks, with their ``\\`` continuations, and inline code
that starts with ``python``, ``accelerate launch``, ``torchrun`` or ``pip install``; ``a && b`` is two commands), so a
command added to the docs is checked without touching this file, and ``plan`` must say how:

- ``run``: the example scripts and the card renderer run in this process, at toy size: a Hub checkpoint becomes the
  tiny LUKE, a documented data path or Hub dataset the project's sample in that task's public format (written here),
  output folders under a scratch folder the test runs in; the documented flags stay, and ``TOY_FLAGS`` cap the run at
  one step and four examples to evaluate and predict (``--bf16``, the GPUs' mixed precision, is dropped on a machine
  without one). Each must end without an error.
- ``demo``: a script given no data (its demo: no argument, or only the flags its ``wants_demo`` takes) runs at toy
  size in document order with the ``run`` commands (its demo arguments capped at one step), from a folder holding the
  clone's ``examples``, so that a later command finds the folder it wrote (``outputs/<variant>-tiny-<task>``); the
  whole demos run in the tests that ``DEMO_TESTS`` names.
- ``exec``: ``python -c CODE`` runs in that same folder, in order.
- ``parse``: what takes minutes at its documented size (benches, the diagnostic), needs several processes or GPUs
  (``accelerate launch``, ``torchrun``, ``--device cuda``), pushes to the Hub, or is a synopsis (``a|b`` alternatives,
  ``...``, placeholders): its flags are parsed by the script's own parser, every alternative of a synopsis, so a flag
  that is misspelt, renamed, or not read by that task fails here.
- ``setup``: installing (``pip install``, ``python -m venv``, a spaCy download): what CI's fresh virtual environment
  does (``.ci/run``); ``suite``: a pytest command, whose test file must exist.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import itertools
import json
import re
import runpy
import shlex
import sys
from pathlib import Path
from types import ModuleType

import pytest
import torch
from script_helpers import ENTITY_SCRIPT, MULTIHOP_SCRIPT, RECORD_SCRIPT, load_script

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
COMMAND = re.compile(r"^(?:[A-Z_]+=\S+\s+)*(?:python|accelerate launch|torchrun|pip install)\b")
SCRIPTS = {"examples/run_record.py": RECORD_SCRIPT, "examples/run_multihop.py": MULTIHOP_SCRIPT,
           "examples/run_entity_tasks.py": ENTITY_SCRIPT}  # fmt: skip
# the demos (a script given no data) and the test that runs each
DEMO_TESTS = {
    "python examples/run_record.py": "test_run_record_default.py::test_embedded_default_runs_offline_with_no_arguments",
    "python examples/run_multihop.py --task wikihop": "test_multihop_demos.py::test_the_demo_learns",
    "python examples/run_multihop.py --task medhop": "test_multihop_demos.py::test_the_demo_learns",
}
# what caps a toy run: one optimizer step, four examples to evaluate and predict (the training split stays whole: a
# classification head's labels are the training split's)
TOY_FLAGS = ["--max_steps", "1", "--max_eval_samples", "4", "--max_predict_samples", "4",
             "--per_device_eval_batch_size", "4", "--report_to", "none", "--disable_tqdm", "true"]  # fmt: skip


def documented_commands() -> list[tuple[str, str]]:
    """``(document, command)`` for every command in the README and docs, whitespace normalised."""
    found = []
    for path in DOCUMENTS:
        text = path.read_text(encoding="utf-8")
        lines = []
        for block in re.finditer(r"```(\w*)\n(.*?)```", text, re.S):
            if block.group(1) in ("bash", "sh", ""):
                lines += re.sub(r"\\\n\s*", " ", block.group(2)).splitlines()
        prose = re.sub(r"```.*?```", "", text, flags=re.S)
        lines += [span.group(1) for span in re.finditer(r"`([^`]+)`", prose)]
        for line in lines:
            for part in line.split(" # ")[0].split("&&"):
                command = " ".join(part.split())
                if COMMAND.match(command):
                    found.append((path.name, command))
    return found


def words(command: str) -> list[str]:
    """The command's words without its environment assignments (``OMP_NUM_THREADS=1``); a script path given from
    elsewhere (``~/gesa/examples/...``: the clone) relative to the clone."""
    parts = shlex.split(re.sub(r"<[^>]+>", "PLACEHOLDER", command).replace("~/gesa/", ""))
    while parts and re.fullmatch(r"[A-Z_]+=\S+", parts[0]):
        parts.pop(0)
    return parts


def is_synopsis(command: str) -> bool:
    """``a|b`` alternatives, ``...``, ``[optional]`` or a placeholder the reader fills in."""
    return bool(re.search(r"\w\|\w|\.\.\.|\[--|\bN\b|PLACEHOLDER|<[^>]+>|\bREV\b|--seeds S\b", command))


@functools.cache
def script_module(script: str) -> ModuleType:
    """An example script loaded once as a module (its ``wants_demo``, ``parse_args``, ``main``)."""
    return load_script(SCRIPTS[script], f"documented_{Path(script).stem}")


def plan(command: str) -> str:
    """How the test checks ``command`` (module docstring): run, demo, exec, parse, setup or suite."""
    parts = words(command)
    if parts[:2] == ["pip", "install"] or parts[:3] in (["python", "-m", "venv"], ["python", "-m", "spacy"]):
        return "setup"
    if parts[:3] == ["python", "-m", "pytest"]:
        return "suite"
    if parts[:2] == ["python", "-c"]:
        return "exec"
    if parts[0] in ("accelerate", "torchrun") or "cuda" in parts or "--push_to_hub" in parts or is_synopsis(command):
        return "parse"
    if len(parts) > 1 and parts[1] in SCRIPTS and script_module(parts[1]).wants_demo(parts[2:]):
        return "demo"
    if parts[:3] == ["python", "-m", "gesa.training.cards"] or (len(parts) > 1 and parts[1] in SCRIPTS):
        return "run"
    return "parse"  # the benches, the diagnostic and the docs' picture: minutes at their documented size


def launcher_options(command: str) -> list[str]:
    """The options of an ``accelerate launch`` / ``torchrun`` command, parsed by the launcher's own parser (a quoted
    prefix without a script included): ``[]`` for other commands."""
    parts = words(command)
    if parts[0] not in ("accelerate", "torchrun"):
        return []
    start = 2 if parts[0] == "accelerate" else 1
    end = next((i for i, part in enumerate(parts) if part.endswith(".py")), len(parts))
    options = [{"N": "2"}.get(part, part) for part in parts[start:end] if part != "..."]
    if parts[0] == "accelerate":
        from accelerate.commands.launch import launch_command_parser

        launch_command_parser().parse_args([*options, "script.py"])
    else:
        from torch.distributed.run import get_args_parser

        get_args_parser().parse_args([*options, "script.py"])
    return options


def script_argv(command: str) -> tuple[str | None, list[str]]:
    """The script a command runs (``accelerate launch``/``torchrun`` options dropped; ``None`` when a launcher is
    quoted without one) and its arguments."""
    parts = words(command)
    if parts[0] in ("accelerate", "torchrun"):
        start = next((i for i, part in enumerate(parts) if part.endswith(".py")), None)
        return (None, []) if start is None else (parts[start], parts[start + 1 :])
    if parts[:2] == ["python", "-m"]:
        return parts[2], parts[3:]
    return parts[1], parts[2:]


def expansions(argv: list[str]) -> list[list[str]]:
    """Every reading of a synopsis: one per combination of ``a|b`` alternatives, with and without each ``[...]``."""
    text = " ".join(argv).replace("...", " ")
    optional = re.findall(r"\[([^\]]+)\]", text)
    text = re.sub(r"\[([^\]]+)\]", "{}", text)
    readings = []
    for chosen in itertools.product(*[["", option] for option in optional]):
        tokens = text.format(*chosen).split()
        choices = [token.split("|") if "|" in token and not token.startswith("|") else [token] for token in tokens]
        readings += [list(reading) for reading in itertools.product(*choices)]
    return readings


class _Parsed(Exception):
    """Raised by the patched ``parse_known_args`` once a bench's flags parsed: nothing of the bench runs."""


def parse_only(script: str, argv: list[str]) -> None:
    """Parse ``argv`` with ``script``'s own parser and stop: an example script's ``parse_args`` (its flag checks
    included), or an argparse script (a bench, the diagnostic) run up to its parsing."""
    argv = [{"N": "2", "S": "0", "REV": "HEAD", "PLACEHOLDER": "HEAD"}.get(word, word) for word in argv]
    if script in SCRIPTS:
        if "--bf16" in argv and not torch.cuda.is_available():
            argv = [*argv, "--use_cpu", "true"]  # bf16 on the CPU: TrainingArguments needs to be told
        script_module(script).parse_args(argv)
        return
    real = argparse.ArgumentParser.parse_known_args  # under parse_args and HfArgumentParser's dataclass parsing

    def parse_then_stop(self: argparse.ArgumentParser, args: list[str] | None = None, namespace: object = None):
        _, extras = real(self, args, namespace)
        if extras:
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        raise _Parsed

    with pytest.MonkeyPatch.context() as patch, contextlib.suppress(_Parsed):
        patch.setattr(argparse.ArgumentParser, "parse_known_args", parse_then_stop)
        patch.setattr(sys, "argv", [str(ROOT / script), *argv])
        patch.syspath_prepend(str((ROOT / script).parent))  # as `python bench/x.py` does: its folder's modules
        runpy.run_path(str(ROOT / script), run_name="__main__")


# ----------------------------------------------------------------------------------------------- the checks


def test_the_documents_hold_commands_and_each_has_a_check():
    commands = documented_commands()
    plans = {command: plan(command) for _, command in commands}
    assert len(commands) > 60 and {"run", "demo", "exec", "parse", "setup", "suite"} <= set(plans.values()), plans
    for command, test in DEMO_TESTS.items():
        assert plans.get(command) == "demo", f"{command!r} is no longer documented as a demo: drop it from DEMO_TESTS"
        path, name = test.split("::")
        assert f"def {name}(" in (ROOT / "tests" / path).read_text(encoding="utf-8"), test
    for command, how in plans.items():
        if how == "suite":
            assert any((ROOT / word).is_file() for word in words(command)[3:] if word.endswith(".py")) or words(
                command
            )[3:] in (["-q"], []), command


@pytest.mark.parametrize("document, command", [case for case in documented_commands() if plan(case[1]) == "parse"])
def test_documented_commands_parse_with_their_own_flags(document, command):
    launcher_options(command)  # a launcher's own options, by its own parser
    script, argv = script_argv(command)
    if script is None:
        return
    if "--deepspeed" in argv and torch.cuda.device_count() == 0:
        argv = argv[: argv.index("--deepspeed")] + argv[argv.index("--deepspeed") + 2 :]  # the extra needs GPUs
    readings = expansions(argv) if is_synopsis(command) else [argv]
    for reading in readings:
        try:
            parse_only(script, reading)
        except SystemExit as stop:
            assert stop.code in (0, None), f"{document}: {command!r} as {reading}: exit {stop.code}"


def _toy_data(folder: Path, luke: Path) -> dict[str, str]:
    """Every documented data path and Hub id -> the project's sample in that format, written under ``folder``."""
    from kb_helpers import write_kb
    from record_fixtures import hub_rows, project_records

    from gesa.training.entity import make_entity_sample
    from gesa.training.wikihop import make_wikihop_sample, write_wikihop_file
    from gesa.training.xh import make_fever_sample, make_hotpot_sample, write_json_lines
    from gesa.training.xh_fullwiki import abstracts_from_paragraphs, hotpot_paragraphs, write_abstracts_corpus

    folder.mkdir(parents=True, exist_ok=True)
    data = {"studio-ousia/luke-large": str(luke), "studio-ousia/luke-base": str(luke)}
    # Hub datasets as local folders in the Hub's layout (datasets loads a folder like a Hub id)
    record = folder / "super_glue"
    (record / "record").mkdir(parents=True)
    (record / "README.md").write_text("---\nconfigs:\n- config_name: record\n  data_files:\n  - split: train\n    path: "
                                      "record/train.jsonl\n  - split: validation\n    path: record/validation.jsonl\n"
                                      "---\n")  # fmt: skip
    records = project_records()
    for split, part in (("train", records[:6]), ("validation", records[-3:])):
        rows = [row for item in part for row in hub_rows(item)]
        (record / "record" / f"{split}.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    data["super_glue"] = str(record)
    conll = folder / "conll2003"
    conll.mkdir()
    from gesa.records_entity import read_task_file

    for split, seed in (("train", 1), ("validation", 2)):
        (folder / f"ner-{split}.txt").write_text(make_entity_sample("ner", 8, seed), encoding="utf-8")
        rows = [{"id": str(i), "tokens": e.tokens, "ner_tags": e.tags}
                for i, e in enumerate(read_task_file("ner", folder / f"ner-{split}.txt"))]  # fmt: skip
        (conll / f"{split}.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    data["conll2003"] = str(conll)
    for task, name in (("entity_typing", "open_entity"), ("relation_classification", "tacred")):
        (folder / name).mkdir()
        for split, seed in (("train", 1), ("dev", 2), ("test", 3)):
            path = folder / name / f"{split}.json"
            path.write_text(make_entity_sample(task, 8, seed), encoding="utf-8")
            data[f"{name}/{split}.json"] = str(path)
    (folder / "kb").mkdir()
    aliases, vectors, _ = write_kb(folder / "kb")
    data.update({"kb/aliases.tsv": str(aliases), "kb/entities.txt": str(vectors)})
    for split, seed in (("train", 1), ("dev", 2)):
        path = write_wikihop_file(folder / f"wikihop-{split}.json", make_wikihop_sample(6, seed=seed))
        data[f"qangaroo_v1.1/wikihop/{split}.json"] = str(path)
    train, evaluation = make_hotpot_sample(8, seed=1), make_hotpot_sample(4, seed=2)
    for name, rows in (("hotpot_train_v1.1.json", train), ("hotpot_dev_distractor_v1.json", evaluation),
                       ("hotpot_dev_fullwiki_v1.json", evaluation)):  # fmt: skip
        (folder / name).write_text(json.dumps(rows))
        data[name] = str(folder / name)
    corpus = write_abstracts_corpus(
        folder / "abstracts", abstracts_from_paragraphs(hotpot_paragraphs(train + evaluation)), 3
    )
    data["enwiki-20171001-pages-meta-current-withlinks-abstracts"] = str(corpus)
    claims, pages = make_fever_sample(8, seed=1)
    dev, more = make_fever_sample(4, seed=2)
    data["train.jsonl"] = str(write_json_lines(folder / "fever-train.jsonl", claims))
    data["shared_task_dev.jsonl"] = str(write_json_lines(folder / "fever-dev.jsonl", dev))
    everything = pages + more
    first = write_json_lines(folder / "wiki-001.jsonl", everything[: len(everything) // 2])
    second = write_json_lines(folder / "wiki-002.jsonl", everything[len(everything) // 2 :])
    data["wiki-001.jsonl,wiki-002.jsonl"] = f"{first},{second}"
    # seed 002's objectives: DocRED documents and their KG, SciREX release records, FIGER
    from gesa.training.synthetic_documents import write_objective_corpus
    from gesa.training.synthetic_scirex import make_scirex_sample

    corpus = write_objective_corpus(folder / "objectives", documents=12, task_examples_per_split=(8, 4))
    data.update({"docs.json": str(corpus / "pretrain.json"), "kg.tsv": str(corpus / "kg.tsv")})
    for split, seed in (("train30", 1), ("dev10", 2)):
        path = folder / f"scirex-{split}.jsonl"
        path.write_text(make_scirex_sample(2, seed=seed), encoding="utf-8")
        data[f"../shared/data/scirex/{split}.jsonl"] = str(path)
    (folder / "figer").mkdir()
    for split, seed in (("train", 1), ("dev", 2), ("test", 3)):
        path = folder / "figer" / f"{split}.json"
        path.write_text(make_entity_sample("figer", 8, seed), encoding="utf-8")
        data[f"figer/{split}.json"] = str(path)
    return data


def toy_argv(argv: list[str], data: dict[str, str], trained: Path | None) -> list[str]:
    """``argv`` at toy size: data and checkpoints rewritten (``data``), the placeholders ``DIR``/``F``/``OUT``/
    ``OUTPUT_DIR`` filled, ``TOY_FLAGS`` appended (output folders stay as written: the test runs in a scratch
    folder)."""
    fills = {"F": str(ROOT / "examples" / "data" / "record_sample_dev.jsonl"), "OUT": "outputs/predicted"}
    if trained is not None:
        fills.update(DIR=str(trained), OUTPUT_DIR=str(trained))
    rewritten = [data.get(word, fills.get(word, word)) for word in argv]
    if "--bf16" in rewritten and not torch.cuda.is_available():
        rewritten.remove("--bf16")  # a GPU's mixed precision (parsed with it in the parse check)
    return rewritten + TOY_FLAGS


@pytest.mark.slow
def test_documented_script_commands_run_at_toy_size(tiny_luke_dir, tmp_path, capsys, monkeypatch):
    """Every ``run``, ``demo`` and ``exec`` command, in document order, from a folder holding the clone's ``examples``
    (the README's trained ReCoRD folder is the later ``DIR``; a demo's folder is there for a later command)."""
    data = _toy_data(tmp_path / "data", tiny_luke_dir)
    clone = tmp_path / "clone"
    clone.mkdir()
    (clone / "examples").symlink_to(ROOT / "examples")
    monkeypatch.chdir(clone)
    for script in SCRIPTS:  # a demo capped at one step: its own arguments, then the cap (the last value wins)
        module = script_module(script)
        for name in ("DEMO_ARGS", "EMBEDDED_DEFAULT_ARGS"):
            if hasattr(module, name):
                monkeypatch.setattr(module, name, [*getattr(module, name), "--max_steps", "1"])
    trained = None
    failures, done = [], set()
    for document, command in documented_commands():
        how = plan(command)
        if how not in ("run", "demo", "exec") or command in done:
            continue  # a command shown in two documents runs once
        done.add(command)
        script, argv = script_argv(command)
        if how == "exec":
            try:
                exec(compile(argv[0], f"<{document}>", "exec"), {"__name__": "__main__"})
            except Exception as error:  # noqa: BLE001 (any failure of the documented code is the finding)
                failures.append(f"{document}: {command} -> {type(error).__name__}: {error}")
            continue
        if script == "gesa.training.cards":
            saved, sys.argv = (
                sys.argv,
                ["training.cards", *(str(trained) if word == "OUTPUT_DIR" else word for word in argv)],
            )
            try:
                runpy.run_module("gesa.training.cards", run_name="__main__")
            except SystemExit as stop:
                failures += [] if stop.code in (0, None) else [f"{document}: {command} -> exit {stop.code}"]
            finally:
                sys.argv = saved
            continue
        toy = argv if how == "demo" else toy_argv(argv, data, trained)
        module = script_module(script)
        capsys.readouterr()
        try:
            module.main(toy)
        except SystemExit as stop:
            error = capsys.readouterr().err.strip().splitlines()[-1:]
            failures.append(f"{document}: {command} -> exit {stop.code}: {error}")
            continue
        if script == "examples/run_record.py" and trained is None:
            output = clone / module.parse_args(list(toy))[-1].output_dir  # the demo's default folder included
            trained = output if (output / "model.safetensors").is_file() else None
    assert not failures, "\n".join(failures)
