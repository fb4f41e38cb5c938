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
third-party packages and the input layer (``inputs_gesa``) only.

Three input shapes, one canonical form (``WikihopExample``):

- the QAngaroo release (``train.json`` / ``dev.json``): ONE JSON list of ``{"id", "query", "supports",
  "candidates", "answer"[, "annotations"]}``;
- JSON lines of the same objects (one per line);
- rows of the Hub ``qangaroo`` dataset (``id, query, supports, candidates, answer``) read through ``datasets``.

A record without ``answer`` (a test file) is predicted, never trained on. Files are read by the input layer
(``inputs_gesa.read_json_file``). Every problem is one ``InputError`` naming the file, the line or item, the record
id, what is wrong and the fix: an answer that is not among the candidates, empty supports, a duplicate id, a
candidate that is not a string, a missing or mistyped field.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from transformers.utils import logging

from .inputs_gesa import InputError, read_json_file

logger = logging.get_logger(__name__)

WIKIHOP_FIELDS = ("id", "query", "supports", "candidates", "answer")
DATA_FILE_FIX = (
    "give a QAngaroo WikiHop file: one JSON list (train.json/dev.json of the release) or JSON lines of "
    '{"id", "query", "supports", "candidates", "answer"} objects'
)


# ---- thesis 3.1's exact match (the mentions of candidates and of the query subject), shared by GESA's features
# (processing_wikihop) and the context graph (graph_context)


def lower_in_place(text: str) -> str:
    """``text`` lower-cased character by character, one character for one: a character whose lower-case form is
    longer (``İ``, U+0130 -> ``i̇``) keeps its first character, so offsets into the result are offsets into ``text``."""
    if text.isascii():
        return text.lower()
    return "".join(char.lower()[:1] or char for char in text)


def normalize_mention(text: str) -> str:
    """Thesis 3.1's exact match, normalised: lower case (``lower_in_place``), whitespace collapsed (WikiHop candidates
    are lower case)."""
    return " ".join(lower_in_place(text).split())


def find_mentions(text: str, strings: Sequence[str]) -> list[tuple[int, int, int]]:
    """``(start, end, string index)`` of every whole-word, case-insensitive match of ``strings`` in ``text``.

    Longest match first where two overlap (``"new york city"`` over ``"new york"``); sorted by start.
    """
    lowered = lower_in_place(text)  # same length as `text`: match offsets are offsets into `text`
    found = []
    for index, string in enumerate(strings):
        words = normalize_mention(string).split()
        if not words:
            continue
        pattern = re.compile(r"(?<!\w)" + r"\s+".join(map(re.escape, words)) + r"(?!\w)")
        found.extend((match.start(), match.end(), index) for match in pattern.finditer(lowered))
    found.sort(key=lambda item: (item[0], -(item[1] - item[0])))
    kept: list[tuple[int, int, int]] = []
    for start, end, index in found:
        if not kept or start >= kept[-1][1]:
            kept.append((start, end, index))
    return kept


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

    @property
    def subject_mention(self) -> str:
        """The subject as its mentions in the supports read: MedHop asks ``"interacts_with DB01171?"``, and the drug's
        mentions are ``DB01171`` (a question mark ends the question, not the name)."""
        subject = self.subject
        return subject[:-1].rstrip() if subject.endswith("?") and subject[:-1].strip() else subject


def record_error(
    example_id: str | None, message: str, source: str | None = None, fix: str | None = None
) -> InputError:
    """``source: WikiHop record 'id': message[; fix]``."""
    return InputError(message, source, record="WikiHop record", record_id=example_id, fix=fix)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _as_list(value: Any) -> list[Any] | None:
    if isinstance(value, (list, tuple, np.ndarray)):
        return list(value)
    return None


def to_example(item: Any, position: int = 0, source: str | None = None) -> WikihopExample:
    """One record (any of the three shapes) -> ``WikihopExample``; ``InputError`` naming it when malformed."""
    if not isinstance(item, Mapping):
        raise InputError(
            f"a WikiHop record must be an object with {list(WIKIHOP_FIELDS)}, got {type(item).__name__} "
            f"{_short(item)}",
            source or f"input #{position}",
            fix=DATA_FILE_FIX,
        )
    if not any(key in item for key in ("query", "supports", "candidates")):
        raise InputError(
            f"not a WikiHop record: it has keys {sorted(map(str, item))}, none of 'query', 'supports', 'candidates'",
            source or f"input #{position}",
            fix=DATA_FILE_FIX,
        )
    raw_id = item.get("id")
    example_id = str(raw_id) if isinstance(raw_id, (str, int, np.integer)) and not isinstance(raw_id, bool) else None

    def fail(message: str) -> InputError:
        return record_error(example_id, message, source, fix="fix or remove that record")

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
    repeats: list[tuple[WikihopExample, list[str]]] = []
    for position, item in enumerate(items):
        if sources is not None:
            source = sources[position]
        else:
            source = f"{where}, item {position + 1}" if where else f"item {position + 1}"
        examples.append(to_example(item, position, source))
        counts = Counter(text.strip() for text in _as_list(item.get("candidates")) or ())
        if any(count > 1 for count in counts.values()):
            repeats.append((examples[-1], [text for text, count in counts.items() if count > 1]))
    check_unique_ids(examples)
    if repeats:
        warn_repeated_candidates(repeats)
    return examples


def warn_repeated_candidates(repeats: Sequence[tuple[WikihopExample, list[str]]]) -> None:
    """One warning for the records that list a candidate more than once (each is kept once, at its first place),
    naming the first record, its repeated candidates and the fix."""
    example, texts = repeats[0]
    first = record_error(example.example_id, f"lists {', '.join(map(repr, texts[:3]))} more than once", example.source)
    others = f" (and {len(repeats) - 1} more records)" if len(repeats) > 1 else ""
    logger.warning(
        f"{first}{others}: each candidate is kept once, at its first place, so the accuracy and the chance level count "
        "it once; remove the repeats from 'candidates' to silence this"
    )


def check_unique_ids(examples: Sequence[WikihopExample]) -> None:
    """Every query its own id: two queries with one id would be ranked as one (one's answers lost). The second is an
    error naming both places (``source``, else its position) and the fix."""
    seen: dict[str, str] = {}
    for position, example in enumerate(examples):
        place = example.source or f"item {position + 1}"
        if example.example_id in seen:
            raise record_error(
                example.example_id,
                f"duplicate id: {seen[example.example_id]} has the same id; give every record its own id (its "
                "predictions would overwrite the other's)",
                place,
            )
        seen[example.example_id] = place


def refuse_repeated_ids(example_ids: Sequence[str], caller: str) -> None:
    """A WikiHop query is one feature: an id on two features is two queries sharing it, which a ranking would merge
    into one (``ValueError`` naming the id, both features and the fix)."""
    first: dict[str, int] = {}
    for feature, example_id in enumerate(example_ids):
        if example_id in first:
            raise ValueError(
                f"{caller}: features {first[example_id]} and {feature} have the same query id {example_id!r}: two "
                "queries with one id would be ranked as one; give every query its own id"
            )
        first[example_id] = feature


def read_wikihop_file(path: Path | str, where: str | None = None) -> Iterator[tuple[str, Any]]:
    """``(location, item)`` pairs of a WikiHop file: ``item N`` of a JSON list, ``line N`` of JSON lines, ``item N of
    'data'`` of ``{"data": [...]}`` (``inputs_gesa.read_json_file``: UTF-8, a BOM dropped, counted from 1)."""
    return ((location.place, item) for location, item in read_json_file(path, where, fix=DATA_FILE_FIX))


def load_wikihop_file(path: Path | str, where: str | None = None) -> list[WikihopExample]:
    """Every record of a WikiHop file, checked (``InputError`` for the first bad one)."""
    where = where or str(path)
    located = list(read_json_file(path, where, fix=DATA_FILE_FIX))
    if not located:
        raise InputError("holds no record", where, fix=DATA_FILE_FIX)
    return to_wikihop_examples([item for _, item in located], sources=[str(location) for location, _ in located])


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
    "find_mentions",
    "lower_in_place",
    "normalize_mention",
    "InputError",
    "WikihopExample",
    "examples_to_rows",
    "load_wikihop_file",
    "read_wikihop_file",
    "record_error",
    "rows_to_examples",
    "to_example",
    "check_unique_ids",
    "refuse_repeated_ids",
    "to_wikihop_examples",
    "warn_repeated_candidates",
]
