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
"""A full disk while a script writes: the lock file, the model's weights, the metric files or the predictions. Each
ends the run with one ``<script>: error: no space left ...`` line (exit status 2, no traceback) and leaves no 0-byte
result file behind.

The disk is a patched writer: ``open`` (and ``io.open``, which ``tempfile`` uses) hand out files whose ``write`` fails
with ``ENOSPC`` when their name matches, as a full disk does after the file was created; the weights' writer
(safetensors) fails with the message safetensors gives on ENOSPC. Cost: four one-step entity-typing runs.
"""

from __future__ import annotations

import builtins
import errno
import fnmatch
import io
import os
from pathlib import Path

import pytest
from script_helpers import ENTITY_TASK_FILES, load_entity_script

from gesa.training.machinery import LOCK_NAME


class _FullFile:
    """A real, open file whose every ``write`` fails as on a full disk."""

    def __init__(self, handle) -> None:
        self._handle = handle

    def write(self, data) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    def __getattr__(self, name):
        return getattr(self._handle, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc_info) -> None:
        self._handle.close()

    def __iter__(self):
        return iter(self._handle)


def _fill_disk(monkeypatch, folder: Path, patterns: tuple[str, ...]) -> None:
    """Files under ``folder`` whose name (a temporary file's too: ``.<name>.XXXX``) matches ``patterns`` take no
    byte."""
    real_open = builtins.open

    def full_open(file, mode="r", *args, **kwargs):
        handle = real_open(file, mode, *args, **kwargs)
        if not any(flag in mode for flag in "wax+"):
            return handle
        path = Path(os.readlink(f"/proc/self/fd/{handle.fileno()}"))  # the file itself (tempfile passes its folder)
        name = path.name.lstrip(".")
        if str(path).startswith(str(folder)) and any(fnmatch.fnmatch(name, f"{p}*") for p in patterns):
            return _FullFile(handle)
        return handle

    monkeypatch.setattr(builtins, "open", full_open)
    monkeypatch.setattr(io, "open", full_open)


def _run(tmp_path: Path, tiny_luke_dir: Path, capsys, output_dir: Path) -> str:
    data = str(ENTITY_TASK_FILES["entity_typing"])
    argv = ["--task", "entity_typing", "--model_name_or_path", str(tiny_luke_dir), "--output_dir", str(output_dir),
            "--train_file", data, "--validation_file", data, "--do_train", "--do_eval", "--max_steps", "1",
            "--save_strategy", "no", "--report_to", "none", "--use_cpu", "true", "--disable_tqdm", "true"]  # fmt: skip
    capsys.readouterr()
    with pytest.raises(SystemExit) as stopped:
        load_entity_script().main(argv)
    captured = capsys.readouterr()
    assert stopped.value.code == 2 and "Traceback" not in captured.out + captured.err
    errors = [line for line in captured.err.splitlines() if line.startswith("run_entity_tasks.py: error: ")]
    assert len(errors) == 1 and captured.err.strip().splitlines()[-1] == errors[0], captured.err[-2000:]
    if output_dir.is_dir():
        empty = [path.name for path in output_dir.rglob("*") if path.is_file() and path.stat().st_size == 0]
        assert not empty, empty
        assert not list(output_dir.glob(".*.json*")), list(output_dir.iterdir())  # no temporary file left
    return errors[0]


@pytest.mark.parametrize(
    "patterns, expected",
    [
        (("train_results.json", "all_results.json", "eval_results.json"), "while writing train_results.json"),
        (("eval_predictions.json",), "while writing eval_predictions.json"),
        ((LOCK_NAME.lstrip("."),), f"while writing the run's lock file {LOCK_NAME}"),
    ],
)
def test_a_full_disk_while_writing_a_result_is_one_error_line_and_no_empty_file(
    tiny_luke_dir, tmp_path, capsys, monkeypatch, patterns, expected
):
    output_dir = tmp_path / "out"
    _fill_disk(monkeypatch, tmp_path, patterns)
    line = _run(tmp_path, tiny_luke_dir, capsys, output_dir)
    assert f"no space left on the device of {output_dir}" in line and expected in line, line


def test_a_full_disk_while_saving_the_weights_is_one_error_line(tiny_luke_dir, tmp_path, capsys, monkeypatch):
    from safetensors import SafetensorError

    def full_disk(*args, **kwargs):
        raise SafetensorError("Error while serializing: I/O error: No space left on device (os error 28)")

    monkeypatch.setattr("transformers.modeling_utils.safe_save_file", full_disk)
    output_dir = tmp_path / "out"
    line = _run(tmp_path, tiny_luke_dir, capsys, output_dir)
    assert f"no space left on the device of {output_dir} while saving a checkpoint or the model" in line, line
