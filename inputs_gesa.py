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
"""The input layer: the one error every reader raises (``InputError``) and the readers of data files under them.

Every task's records module (``records_gesa``, ``records_wikihop``, ``records_xh``, ``records_entity``) reads its
files here and raises ``InputError``, so a file problem reads the same in every script:

- Bytes are UTF-8. A UTF-8 byte-order mark at the start is dropped; any other byte that is not UTF-8 is an error
  naming its line, column and offset in the file, and how to re-save the file.
- ``read_json_file``: one JSON list (``item N``), a JSON object holding the list under a field (``{"data": [...]}``,
  ``item N of 'data'``), or JSON lines (``line N``; blank lines are skipped and still counted). An empty file, a
  JSON syntax error (with its line and column) and a document of no known layout are errors.
- ``read_text_lines``: the lines of a text file (CoNLL column files), decoded the same way.
- A ``.bz2`` file (HotpotQA's Wikipedia abstracts) is read decompressed, streamed; a damaged stream is an error at
  the line it stops before.
- Lines and items count from 1, as an editor does; ``Location`` prints them as errors do: ``--train_file f.jsonl,
  line 3``.

Flat module on the bottom floor: it imports the standard library only, nothing of the package.
"""

from __future__ import annotations

import bz2
import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

UTF8_FIX = "re-save the file as UTF-8 (e.g. iconv -f latin1 -t utf-8 FILE > FILE.utf8)"
JSON_LAYOUTS = "one JSON list, a JSON object holding the list under {field!r}, or JSON lines (one object per line)"
_BOM = b"\xef\xbb\xbf"


@dataclasses.dataclass(frozen=True)
class Location:
    """Where an item of an input file sits.

    ``source`` names the file the way errors do (``"--train_file f.jsonl"`` or the path); ``unit`` is ``"line"``
    (JSON lines, text lines, and a line of a JSON document) or ``"item"`` (an item of a JSON list); ``number`` counts
    from 1; ``field`` is the JSON object field that holds the list, when there is one. ``str()`` gives
    ``"f.jsonl, line 3"`` / ``"f.json, item 2"`` / ``"f.json, item 2 of 'data'"``.
    """

    source: str
    unit: str
    number: int
    field: str | None = None

    @property
    def place(self) -> str:
        """The location inside the file: ``"line 3"``, ``"item 2"``, ``"item 2 of 'data'"``."""
        of = f" of {self.field!r}" if self.field else ""
        return f"{self.unit} {self.number}{of}"

    def __str__(self) -> str:
        return f"{self.source}, {self.place}"


class InputError(ValueError):
    """Bad input: where it is, which record, what is wrong (naming the field) and the fix, in one line.

    Printed as ``where: record 'id': problem; fix``, each part left out when unknown, e.g. ``--train_file f.jsonl,
    line 3: ReCoRD example 'q1': query must contain '@placeholder' exactly once, found 0``.

    Attributes:
        problem: what is wrong, naming the field (``"'y_str' must be a non-empty list of type names (got [])"``).
        where: the flag and file, with the line or item (a ``Location`` or its text), or ``None``.
        record: the kind of record (``"ReCoRD example"``, ``"WikiHop record"``, ``"TACRED record"``), or ``None``.
        record_id: the record's id when it has one (printed with ``repr``), else ``None``.
        fix: what to do about it, or ``None`` when the problem says it.
    """

    def __init__(
        self,
        problem: str,
        where: str | Location | None = None,
        record: str | None = None,
        record_id: Any = None,
        fix: str | None = None,
    ) -> None:
        self.problem, self.where, self.record, self.record_id, self.fix = problem, where, record, record_id, fix
        parts = [str(where)] if where else []
        if record is not None:
            parts.append(record if record_id is None else f"{record} {record_id!r}")
        parts.append(problem if not fix else f"{problem}; {fix}")
        super().__init__(": ".join(parts))

    def __reduce__(self) -> tuple[Any, ...]:
        # rebuilt from its parts (an error raised in a `datasets.map` worker crosses a process boundary)
        return (self.__class__, (self.problem, self.where, self.record, self.record_id, self.fix))


# ----------------------------------------------------------------------------------------------- decoding


def _check_file(path: Path, where: str, fix: str | None) -> None:
    if path.is_dir():
        raise InputError("is a folder, not a file", where, fix=fix or "give the path of a file")
    if not path.is_file():
        raise InputError("does not exist", where, fix=fix or "give the path of an existing file")


def _raw_lines(handle: Any, path: Path, where: str) -> Iterator[bytes]:
    """The byte lines of an open file; a damaged bzip2 stream is an ``InputError`` at the line it stops before."""
    number = 0
    try:
        for number, raw in enumerate(handle, 1):  # noqa: B007 (read after the loop by the error)
            yield raw
    except (OSError, EOFError) as error:
        raise InputError(
            f"the bzip2 data stops being readable ({error})",
            Location(where, "line", number + 1),
            fix=f"download {path.name} again (bzip2 -t {path.name} checks it)",
        ) from None


def _decoded_lines(path: Path, where: str) -> Iterator[tuple[int, str]]:
    """``(line number from 1, text without its line end)`` of a UTF-8 file, streamed; a leading BOM is dropped. A
    ``.bz2`` file is read decompressed (line numbers and byte offsets count in its decompressed text)."""
    offset = 0
    with bz2.open(path, "rb") if path.suffix == ".bz2" else path.open("rb") as handle:
        for number, raw in enumerate(_raw_lines(handle, path, where), 1):
            start = len(_BOM) if number == 1 and raw.startswith(_BOM) else 0
            try:
                text = raw[start:].decode("utf-8")
            except UnicodeDecodeError as error:
                column = start + error.start
                raise InputError(
                    f"not UTF-8 (byte {raw[column]:#04x} at column {column + 1}, byte offset {offset + column} of "
                    "the file)",
                    Location(where, "line", number),
                    fix=UTF8_FIX,
                ) from None
            offset += len(raw)
            yield number, text.rstrip("\r\n")


def read_text_lines(
    path: str | Path, where: str | None = None, fix: str | None = None
) -> Iterator[tuple[Location, str]]:
    """``(Location, text)`` of every line of a UTF-8 text file (a CoNLL column file), without its line end.

    Args:
        path: the file.
        where: how errors name it (``"--train_file f.txt"``); default the path.
        fix: what a right file looks like, added to the missing-file error.

    Raises:
        InputError: no such file (at the call), or a byte that is not UTF-8 (at its line, while iterating).
    """
    path = Path(path)
    where = where or str(path)
    _check_file(path, where, fix)
    return ((Location(where, "line", number), text) for number, text in _decoded_lines(path, where))


# ----------------------------------------------------------------------------------------------- JSON


@dataclasses.dataclass(frozen=True)
class JsonItems:
    """The items of one JSON input file, as ``read_json_file`` found them.

    ``layout`` is ``"lines"`` (JSON lines), ``"list"`` (one JSON list) or ``"object"`` (a JSON object holding the
    list under ``field``). Iterating gives ``(Location, item)`` in file order; JSON lines are streamed (re-read on
    every pass), so a bad line is an ``InputError`` when the iteration reaches it.
    """

    path: Path
    where: str
    layout: str
    field: str | None = None
    items: list[Any] | None = dataclasses.field(default=None, repr=False)

    def __iter__(self) -> Iterator[tuple[Location, Any]]:
        if self.items is not None:
            for number, item in enumerate(self.items, 1):
                yield Location(self.where, "item", number, self.field), item
            return
        for number, text in _decoded_lines(self.path, self.where):
            if not text.strip():
                continue
            try:
                item = json.loads(text)
            except json.JSONDecodeError as error:
                raise InputError(
                    f"not valid JSON ({error.msg} at column {error.colno})",
                    Location(self.where, "line", number),
                    fix="fix or remove it (JSON lines hold one JSON object per line)",
                ) from None
            yield Location(self.where, "line", number), item


def _holds_list(value: Any, list_field: str | None) -> bool:
    return list_field is not None and isinstance(value, dict) and isinstance(value.get(list_field), list)


def read_json_file(
    path: str | Path, where: str | None = None, fix: str | None = None, list_field: str | None = "data"
) -> JsonItems:
    """The items of a JSON file: one JSON list, a JSON object holding the list under ``list_field``, or JSON lines.

    The layout is told from the first non-blank line: an object on one line that does not hold the list under
    ``list_field`` starts JSON lines (so a one-line file of one record reads as JSON lines); anything else is read as
    one JSON document. Locations count from 1: ``line N`` (JSON lines, blank lines counted), ``item N`` (a list),
    ``item N of 'data'`` (the list of an object).

    Args:
        path: the file.
        where: how errors name it (``"--train_file f.jsonl"``); default the path.
        fix: what a right file holds (``"give ReCoRD records (passage + qas)"``), added to the file-level errors.
        list_field: the field of a JSON object that holds the list of items (``None``: no object layout).

    Raises:
        InputError: no such file, not UTF-8, empty, not valid JSON (line and column), a document that is neither a
            list nor an object holding one. A bad JSON line is raised while iterating, at its line.
    """
    path = Path(path)
    where = where or str(path)
    _check_file(path, where, fix)
    lines = _decoded_lines(path, where)
    texts: list[str] = []
    for _, text in lines:
        texts.append(text)
        if text.strip():
            break
    else:
        raise InputError("the file is empty", where, fix=fix or f"give {JSON_LAYOUTS.format(field=list_field)}")
    first = texts[-1].strip()
    if first.startswith("{") and first.endswith("}"):
        try:
            head = json.loads(first)
        except json.JSONDecodeError:
            head = None  # JSON lines: the iteration names the line
        if not _holds_list(head, list_field):
            lines.close()
            return JsonItems(path, where, "lines")
    texts.extend(text for _, text in lines)
    try:
        document = json.loads("\n".join(texts))
    except json.JSONDecodeError as error:
        hint = f"; {fix}" if fix else ""
        raise InputError(
            f"not valid JSON ({error.msg} at column {error.colno})",
            Location(where, "line", error.lineno),
            fix=f"fix the JSON ({JSON_LAYOUTS.format(field=list_field)}){hint}",
        ) from None
    if isinstance(document, list):
        return JsonItems(path, where, "list", items=document)
    if _holds_list(document, list_field):
        return JsonItems(path, where, "object", list_field, document[list_field])
    what = (
        f"an object with keys {sorted(document)}"
        if isinstance(document, dict)
        else f"a JSON {type(document).__name__}"
    )
    raise InputError(
        f"is in no known layout: the document is {what}",
        where,
        fix=fix or f"give {JSON_LAYOUTS.format(field=list_field)}",
    )


__all__ = ["JSON_LAYOUTS", "UTF8_FIX", "InputError", "JsonItems", "Location", "read_json_file", "read_text_lines"]
