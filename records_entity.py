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
"""Reading and validating the entity-task datasets' public formats into one canonical example per task.

- Open Entity crowd JSON lines (``left_context_token, mention_span, right_context_token, y_str``) -> ``TypingExample``;
- TACRED JSON (a list of ``{id, token, subj_start, subj_end, obj_start, obj_end, subj_type, obj_type, relation}``,
  INCLUSIVE ends) and its Hub rows (the same fields) -> ``RelationExample``;
- CoNLL-2003 column files (``word POS chunk NER``, blank line between sentences, ``-DOCSTART-`` lines) and the Hub's
  ``conll2003`` rows (``tokens``, ``ner_tags`` as names or ClassLabel ids) -> ``NerExample``.

All spans are word spans with an EXCLUSIVE end. Every bad record is ONE ``EntityRecordError`` naming the file and
line (or the row index), the field, what is wrong and the fix.

Flat module: copied next to every saved checkpoint, so it imports only the standard library.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

NO_RELATION = "no_relation"


class EntityRecordError(ValueError):
    """One bad record: the message names where it is, the field, the problem and the fix."""


@dataclass(frozen=True)
class TypingExample:
    """Entity typing: the mention `tokens[start:end]` has the types `labels` (any number, Open Entity's y_str)."""

    id: str
    tokens: list[str]
    start: int
    end: int
    labels: list[str]


@dataclass(frozen=True)
class RelationExample:
    """Relation classification: the relation from the head `tokens[head[0]:head[1]]` to the tail span."""

    id: str
    tokens: list[str]
    head: tuple[int, int]
    tail: tuple[int, int]
    relation: str
    head_type: str | None = None
    tail_type: str | None = None


@dataclass(frozen=True)
class NerExample:
    """NER: one sentence's tokens and their BIO / IOB1 tags; `spans()` gives the labelled word spans."""

    id: str
    tokens: list[str]
    tags: list[str]
    spans: list[tuple[int, int, str]] = field(default_factory=list)


def _where(source: str | None, position: int, unit: str) -> str:
    return f"{source}, {unit} {position}" if source else f"{unit} {position}"


def _tokens(row: Mapping[str, Any], name: str, fail: Any) -> list[str]:
    value = row.get(name)
    if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
        raise fail(f"field {name!r} must be a list of strings (got {type(value).__name__})")
    return value


def _index(row: Mapping[str, Any], name: str, fail: Any) -> int:
    value = row.get(name)
    if isinstance(value, bool) or not isinstance(value, int):
        raise fail(f"field {name!r} must be an integer token index (got {value!r})")
    return value


# ---------------------------------------------------------------------------------------------
# Open Entity
# ---------------------------------------------------------------------------------------------


def open_entity_example(row: Any, position: int, source: str | None = None) -> TypingExample:
    """One Open Entity crowd record (`position`: its line number when read from a file, else its index)."""
    where = _where(source, position, "line" if source else "row")

    def fail(message: str) -> EntityRecordError:
        return EntityRecordError(
            f"{where}: Open Entity record {message}. Each line must be a JSON object with left_context_token "
            "(list of str), mention_span (str), right_context_token (list of str) and y_str (list of type names)."
        )

    if not isinstance(row, Mapping):
        raise fail(f"is a {type(row).__name__}, not an object")
    left, right = _tokens(row, "left_context_token", fail), _tokens(row, "right_context_token", fail)
    mention = row.get("mention_span")
    if not isinstance(mention, str) or not mention.split():
        raise fail(f"field 'mention_span' must be a non-empty string (got {mention!r})")
    labels = row.get("y_str")
    if not isinstance(labels, list) or not labels or not all(isinstance(t, str) and t for t in labels):
        raise fail(f"field 'y_str' must be a non-empty list of type names (got {labels!r})")
    mention_tokens = mention.split()
    tokens = left + mention_tokens + right
    example_id = str(row.get("annot_id", row.get("id", position)))
    return TypingExample(example_id, tokens, len(left), len(left) + len(mention_tokens), list(labels))


# ---------------------------------------------------------------------------------------------
# TACRED
# ---------------------------------------------------------------------------------------------


def tacred_example(row: Any, position: int, source: str | None = None) -> RelationExample:
    """One TACRED record (`position`: its index in the file's list, or the Hub row index)."""
    where = _where(source, position, "record")
    example_id = row.get("id", position) if isinstance(row, Mapping) else position

    def fail(message: str) -> EntityRecordError:
        return EntityRecordError(
            f"{where} (id {example_id!r}): TACRED record {message}. Records hold token (list of str), subj_start, "
            "subj_end, obj_start, obj_end (INCLUSIVE token indices), subj_type, obj_type and relation (str)."
        )

    if not isinstance(row, Mapping):
        raise fail(f"is a {type(row).__name__}, not an object")
    tokens = _tokens(row, "token", fail)
    spans = []
    for role in ("subj", "obj"):
        start, end = _index(row, f"{role}_start", fail), _index(row, f"{role}_end", fail)
        if not 0 <= start <= end < len(tokens):
            raise fail(
                f"has {role}_start={start}, {role}_end={end} outside its {len(tokens)} tokens (or start > end); "
                "ends are inclusive: a one-token mention has start == end"
            )
        spans.append((start, end + 1))
    relation = row.get("relation")
    if not isinstance(relation, str) or not relation:
        raise fail(f"field 'relation' must be a relation name such as 'per:title' or 'no_relation' (got {relation!r})")
    types = [row.get(name) for name in ("subj_type", "obj_type")]
    for name, value in zip(("subj_type", "obj_type"), types, strict=True):
        if value is not None and not isinstance(value, str):
            raise fail(f"field {name!r} must be a string such as 'PERSON' (got {value!r})")
    return RelationExample(str(example_id), tokens, spans[0], spans[1], relation, types[0], types[1])


# ---------------------------------------------------------------------------------------------
# CoNLL-2003
# ---------------------------------------------------------------------------------------------


def bio_spans(tags: Sequence[str], fail: Any = None) -> list[tuple[int, int, str]]:
    """Labelled word spans `(start, end exclusive, type)` of BIO or IOB1 tags (CoNLL-2003's original files are IOB1:
    `I-X` opens a span unless it continues one of type X; `B-X` only separates two adjacent spans of type X)."""
    spans: list[tuple[int, int, str]] = []
    start, kind = None, None
    for i, tag in enumerate([*tags, "O"]):
        if tag != "O" and (len(tag) < 3 or tag[:2] not in ("B-", "I-")):
            if fail is not None:
                raise fail(i, tag)
            raise ValueError(f"tag {tag!r} at token {i} is neither 'O' nor 'B-TYPE' / 'I-TYPE'.")
        prefix, label = (tag[:2], tag[2:]) if tag != "O" else ("O", None)
        if kind is not None and (prefix != "I-" or label != kind):
            spans.append((start, i, kind))
            start, kind = None, None
        if prefix in ("B-", "I-") and kind is None:
            start, kind = i, label
    return spans


def _ner_example(tokens: list[str], tags: list[str], example_id: str, fail: Any) -> NerExample:
    def bad_tag(index: int, tag: str) -> EntityRecordError:
        return fail(f"tag {tag!r} of token {index} ({tokens[index]!r}) is neither 'O' nor 'B-TYPE' / 'I-TYPE'", index)

    return NerExample(example_id, tokens, tags, bio_spans(tags, bad_tag))


def read_conll_file(path: str | Path, tag_column: int = -1) -> list[NerExample]:
    """Sentences of a CoNLL-2003 column file (`word POS chunk NER`; `tag_column` picks the tag column)."""
    path = Path(path)
    examples: list[NerExample] = []
    tokens: list[str] = []
    tags: list[str] = []
    lines: list[int] = []
    width = None

    def flush() -> None:
        if tokens:
            first = lines[0]

            def fail(message: str, index: int = 0) -> EntityRecordError:
                return EntityRecordError(
                    f"{path}, line {lines[index]}: CoNLL-2003 {message}; fix the tag column (BIO or IOB1 tags)."
                )

            examples.append(_ner_example(list(tokens), list(tags), f"{path.name}:{first}", fail))
        tokens.clear(), tags.clear(), lines.clear()

    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            columns = line.split()
            if not columns or columns[0] == "-DOCSTART-":
                flush()
                continue
            if width is None:
                width = len(columns)
            if len(columns) != width or len(columns) < 2:
                raise EntityRecordError(
                    f"{path}, line {number}: CoNLL-2003 line has {len(columns)} columns where the file's first token "
                    f"line has {width} (need at least word and tag); write one token per line as 'word POS chunk NER' "
                    "separated by single spaces, a blank line between sentences."
                )
            tokens.append(columns[0])
            tags.append(columns[tag_column])
            lines.append(number)
    flush()
    return examples


def conll_hub_example(row: Any, position: int, tag_names: Sequence[str] | None = None) -> NerExample:
    """One Hub `conll2003` row: `tokens` and `ner_tags` (names, or ClassLabel ids with `tag_names`)."""

    def fail(message: str, index: int | None = None) -> EntityRecordError:
        return EntityRecordError(
            f"row {position}: CoNLL-2003 Hub row {message}. Rows hold tokens (list of str) and ner_tags of the same "
            "length (tag names, or ids together with the dataset's features['ner_tags'].feature.names)."
        )

    if not isinstance(row, Mapping):
        raise fail(f"is a {type(row).__name__}, not an object")
    tokens = _tokens(row, "tokens", fail)
    raw = row.get("ner_tags")
    if not isinstance(raw, list) or len(raw) != len(tokens):
        raise fail(f"field 'ner_tags' must be a list as long as tokens ({len(tokens)}) (got {raw!r:.60})")
    tags = []
    for index, tag in enumerate(raw):
        if isinstance(tag, int) and not isinstance(tag, bool):
            if tag_names is None or not 0 <= tag < len(tag_names):
                raise fail(f"ner_tags[{index}] = {tag} is an id with no name; pass tag_names (ClassLabel names)")
            tag = tag_names[tag]
        if not isinstance(tag, str):
            raise fail(f"ner_tags[{index}] = {tag!r} is neither a tag name nor an id")
        tags.append(tag)
    return _ner_example(tokens, tags, str(row.get("id", position)), fail)


# ---------------------------------------------------------------------------------------------
# Files
# ---------------------------------------------------------------------------------------------


def _json_items(path: Path) -> Iterator[tuple[int, Any]]:
    """`(position, item)`: a JSON list's items by index, or a JSON-lines file's objects by line number."""
    text = path.read_text(encoding="utf-8")
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            items = json.loads(text)
        except json.JSONDecodeError as error:
            raise EntityRecordError(
                f"{path}, line {error.lineno}: not valid JSON ({error.msg}); fix the file."
            ) from None
        yield from enumerate(items)
        return
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except json.JSONDecodeError as error:
            raise EntityRecordError(
                f"{path}, line {number}: not valid JSON ({error.msg}); write one JSON object per line."
            ) from None


def read_open_entity_file(path: str | Path) -> list[TypingExample]:
    """Every record of an Open Entity crowd file (JSON lines, or a JSON list)."""
    path = Path(path)
    return [open_entity_example(row, position, str(path)) for position, row in _json_items(path)]


def read_tacred_file(path: str | Path) -> list[RelationExample]:
    """Every record of a TACRED JSON file (a list, as released; JSON lines also read)."""
    path = Path(path)
    return [tacred_example(row, position, str(path)) for position, row in _json_items(path)]


def read_hub_rows(task: str, rows: Iterable[Mapping[str, Any]], tag_names: Sequence[str] | None = None) -> list:
    """A Hub dataset split's rows: `ner` (conll2003 layout), `relation_classification` (TACRED fields),
    `entity_typing` (Open Entity fields)."""
    if task == "ner":
        return [conll_hub_example(row, i, tag_names) for i, row in enumerate(rows)]
    if task == "relation_classification":
        return [tacred_example(row, i) for i, row in enumerate(rows)]
    if task == "entity_typing":
        return [open_entity_example(row, i) for i, row in enumerate(rows)]
    raise ValueError(f"task {task!r} has no Hub layout here; use 'ner', 'relation_classification' or 'entity_typing'.")


READERS = {
    "entity_typing": read_open_entity_file,
    "relation_classification": read_tacred_file,
    "ner": read_conll_file,
}


def read_task_file(task: str, path: str | Path) -> list:
    """The reader of `task`'s public format (`READERS`) on `path`."""
    if task not in READERS:
        raise ValueError(f"task {task!r} has no file reader; choose one of {sorted(READERS)}.")
    if not Path(path).is_file():
        raise FileNotFoundError(f"{path}: no such file (the {task} data file).")
    return READERS[task](path)


__all__ = [
    "NO_RELATION",
    "READERS",
    "EntityRecordError",
    "NerExample",
    "RelationExample",
    "TypingExample",
    "bio_spans",
    "conll_hub_example",
    "open_entity_example",
    "read_conll_file",
    "read_hub_rows",
    "read_open_entity_file",
    "read_tacred_file",
    "read_task_file",
    "tacred_example",
]
