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
"""Reading and validating WikiHop (QAngaroo) records: the one reader of ``WikihopProcessor`` and run_multihop.py.

Flat module: copied next to every saved WikiHop checkpoint (imported by ``processing_wikihop``), so it imports
third-party packages only.

Three input shapes, one canonical form (``WikihopExample``):

- the QAngaroo release (``train.json`` / ``dev.json``): ONE JSON list of ``{"id", "query", "supports",
  "candidates", "answer"[, "annotations"]}``;
- JSON lines of the same objects (one per line);
- rows of the Hub ``qangaroo`` dataset (``id, query, supports, candidates, answer``) read through ``datasets``.

A record without ``answer`` (a test file) is predicted, never trained on. Every problem is one ``WikihopError``
naming the file, the line or item, the record id, what is wrong and the fix: an answer that is not among the
candidates, empty supports, a duplicate id, a candidate that is not a string, a missing or mistyped field.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

WIKIHOP_FIELDS = ("id", "query", "supports", "candidates", "answer")
DATA_FILE_FIX = (
    "give a QAngaroo WikiHop file: one JSON list (train.json/dev.json of the release) or JSON lines of "
    '{"id", "query", "supports", "candidates", "answer"} objects'
)


@dataclass
class WikihopExample:
    """One WikiHop query in canonical form.

    ``query`` is ``"relation subject"`` (``"country sms braunschweig"``); ``supports`` the support documents;
    ``candidates`` the answer candidates in the file's order (duplicates removed, first kept); ``answer`` the gold
    candidate, ``None`` for an unlabelled record; ``source`` says where it was read (``file, item N``).
    """

    example_id: str
    query: str
    supports: list[str]
    candidates: list[str]
    answer: str | None = None
    source: str | None = None

    @property
    def relation(self) -> str:
        """The query's relation (its first word), underscores kept."""
        return self.query.split(maxsplit=1)[0] if self.query.split() else ""

    @property
    def subject(self) -> str:
        """The query's subject (what follows the relation); the whole query when it is one word."""
        parts = self.query.split(maxsplit=1)
        return parts[1] if len(parts) == 2 else self.query


class WikihopError(ValueError):
    """A bad WikiHop record; ``example_id`` names it (``None`` when the item has no id)."""

    def __init__(self, message: str, example_id: str | None = None) -> None:
        super().__init__(message)
        self.example_id = example_id


def record_error(example_id: str | None, message: str, source: str | None = None) -> WikihopError:
    """``source: WikiHop record 'id': message``."""
    where = f"{source}: " if source else ""
    name = repr(example_id) if example_id is not None else "(no id)"
    return WikihopError(f"{where}WikiHop record {name}: {message}", example_id)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _as_list(value: Any) -> list[Any] | None:
    if isinstance(value, (list, tuple, np.ndarray)):
        return list(value)
    return None


def to_example(item: Any, position: int = 0, source: str | None = None) -> WikihopExample:
    """One record (any of the three shapes) -> ``WikihopExample``; ``WikihopError`` naming it when malformed."""
    if not isinstance(item, Mapping):
        raise WikihopError(
            f"{source or f'input #{position}'}: a WikiHop record must be an object with {list(WIKIHOP_FIELDS)}, got "
            f"{type(item).__name__} {_short(item)}; {DATA_FILE_FIX}"
        )
    if not any(key in item for key in ("query", "supports", "candidates")):
        raise WikihopError(
            f"{source or f'input #{position}'}: not a WikiHop record: it has keys {sorted(map(str, item))}, none of "
            f"'query', 'supports', 'candidates'; {DATA_FILE_FIX}"
        )
    raw_id = item.get("id")
    example_id = str(raw_id) if isinstance(raw_id, (str, int, np.integer)) and not isinstance(raw_id, bool) else None

    def fail(message: str) -> WikihopError:
        return record_error(example_id, message + "; fix or remove that record", source)

    if example_id is None or not example_id.strip():
        raise fail(f"'id' must be a non-empty string, got {_short(raw_id)} (every record needs its own id)")
    query = item.get("query")
    if not isinstance(query, str) or not query.strip():
        raise fail(f"'query' must be a non-empty string 'relation subject', got {_short(query)}")
    supports = _as_list(item.get("supports"))
    if supports is None:
        raise fail(f"'supports' must be a list of document strings, got {_short(item.get('supports'))}")
    for number, text in enumerate(supports):
        if not isinstance(text, str):
            raise fail(f"'supports' item {number} is {type(text).__name__} {_short(text)}, not a string")
    supports = [text for text in supports if text.strip()]
    if not supports:
        raise fail("has empty 'supports' (no non-blank document): there is nothing to read the answer from")
    candidates = _as_list(item.get("candidates"))
    if candidates is None or not candidates:
        raise fail(f"'candidates' must be a non-empty list of strings, got {_short(item.get('candidates'))}")
    for number, text in enumerate(candidates):
        if not isinstance(text, str):
            raise fail(
                f"'candidates' item {number} is {type(text).__name__} {_short(text)}, not a string; write every "
                f"candidate as a string (e.g. {str(text)!r})"
            )
        if not text.strip():
            raise fail(f"'candidates' item {number} is blank; remove it")
    unique = list(dict.fromkeys(text.strip() for text in candidates))
    answer = item.get("answer")
    if answer is not None:
        if not isinstance(answer, str):
            raise fail(
                f"'answer' must be a string (one of the candidates), got {type(answer).__name__} {_short(answer)}"
            )
        if answer.strip() not in unique:
            lowered = [text for text in unique if text.lower() == answer.strip().lower()]
            hint = f" (it differs from candidate {lowered[0]!r} in case only)" if lowered else ""
            raise fail(
                f"'answer' {answer!r} is not among its {len(unique)} candidates{hint}: add it to 'candidates' or "
                "correct the answer"
            )
        answer = answer.strip()
    return WikihopExample(example_id, query.strip(), supports, unique, answer, source)


def to_wikihop_examples(
    items: Iterable[Any], sources: Sequence[str | None] | None = None, where: str | None = None
) -> list[WikihopExample]:
    """Canonical examples from records/rows; a duplicate id is an error naming both places.

    Args:
        items: records of any of the three shapes.
        sources: per item, where it was read (``"f.json, item 3"``), named in errors.
        where: the input's name for errors when ``sources`` is not given (e.g. ``"--train_file f.json"``).
    """
    examples: list[WikihopExample] = []
    seen: dict[str, str] = {}
    for position, item in enumerate(items):
        if sources is not None:
            source = sources[position]
        else:
            source = f"{where}, item {position + 1}" if where else f"item {position + 1}"
        example = to_example(item, position, source)
        if example.example_id in seen:
            raise record_error(
                example.example_id,
                f"duplicate id: {seen[example.example_id]} has the same id; give every record its own id (its "
                "predictions would overwrite the other's)",
                source,
            )
        seen[example.example_id] = source or f"item {position + 1}"
        examples.append(example)
    return examples


def _decode(path: Path, where: str) -> str:
    try:
        return path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as error:
        raise WikihopError(
            f"{where}: not UTF-8 (byte {error.object[error.start]:#04x} at offset {error.start}); re-save it as UTF-8"
        ) from None


def read_wikihop_file(path: Path | str, where: str | None = None) -> Iterator[tuple[str, Any]]:
    """``(location, item)`` pairs of a WikiHop file: ``item N`` of a JSON list, ``line N`` of JSON lines."""
    path = Path(path)
    where = where or str(path)
    if not path.is_file():
        raise WikihopError(f"{where} does not exist: give the path of a WikiHop .json or .jsonl file")
    text = _decode(path, where)
    if not text.strip():
        raise WikihopError(f"{where} is empty; {DATA_FILE_FIX}")
    if text.lstrip().startswith("["):
        try:
            document = json.loads(text)
        except json.JSONDecodeError as error:
            raise WikihopError(f"{where} is not valid JSON ({error}); {DATA_FILE_FIX}") from None
        return ((f"item {number}", item) for number, item in enumerate(document, 1))
    if text.lstrip().startswith("{") and "\n" not in text.strip():
        try:
            document = json.loads(text)
        except json.JSONDecodeError as error:
            raise WikihopError(f"{where}, line 1: not valid JSON ({error}); {DATA_FILE_FIX}") from None
        if isinstance(document, Mapping) and isinstance(document.get("data"), list):
            return ((f"item {number} of 'data'", item) for number, item in enumerate(document["data"], 1))
        return iter([("line 1", document)])

    def lines() -> Iterator[tuple[str, Any]]:
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                yield f"line {number}", json.loads(line)
            except json.JSONDecodeError as error:
                raise WikihopError(f"{where}, line {number}: not valid JSON ({error}); fix or remove it") from None

    return lines()


def load_wikihop_file(path: Path | str, where: str | None = None) -> list[WikihopExample]:
    """Every record of a WikiHop file, checked (``WikihopError`` for the first bad one)."""
    where = where or str(path)
    located = list(read_wikihop_file(path, where))
    if not located:
        raise WikihopError(f"{where} holds no record; {DATA_FILE_FIX}")
    return to_wikihop_examples([item for _, item in located], sources=[f"{where}, {loc}" for loc, _ in located])


def examples_to_rows(examples: Sequence[WikihopExample]) -> dict[str, list]:
    """Columns for ``datasets.Dataset.from_dict`` (``answer`` ``None`` for unlabelled records)."""
    return {
        "id": [example.example_id for example in examples],
        "query": [example.query for example in examples],
        "supports": [example.supports for example in examples],
        "candidates": [example.candidates for example in examples],
        "answer": [example.answer for example in examples],
        "source": [example.source for example in examples],
    }


def rows_to_examples(batch: Mapping[str, list]) -> list[WikihopExample]:
    """The inverse of ``examples_to_rows`` for one ``Dataset.map`` batch (Hub ``qangaroo`` rows work too)."""
    keys = list(batch)
    rows = [dict(zip(keys, values, strict=True)) for values in zip(*(batch[key] for key in keys), strict=True)]
    return [to_example(row, position, row.get("source")) for position, row in enumerate(rows)]


__all__ = [
    "WIKIHOP_FIELDS",
    "WikihopError",
    "WikihopExample",
    "examples_to_rows",
    "load_wikihop_file",
    "read_wikihop_file",
    "record_error",
    "rows_to_examples",
    "to_example",
    "to_wikihop_examples",
]
