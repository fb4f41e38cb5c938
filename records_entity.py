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
- FIGER in ERNIE's JSON (a list of ``{sent, start, end, labels}``: character offsets of the mention in ``sent``,
  hierarchical types such as ``/person/artist``, any number) -> ``TypingExample``;
- TACRED JSON (a list of ``{id, token, subj_start, subj_end, obj_start, obj_end, subj_type, obj_type, relation}``,
  INCLUSIVE ends) and its Hub rows (the same fields) -> ``RelationExample``;
- CoNLL-2003 column files (``word POS chunk NER``, blank line between sentences, ``-DOCSTART-`` lines) and the Hub's
  ``conll2003`` rows (``tokens``, ``ner_tags`` as names or ClassLabel ids) -> ``NerExample``.

All spans are word spans with an EXCLUSIVE end. Files are read by the input layer (``inputs_gesa``: UTF-8, a BOM
dropped, lines and items counted from 1). Every bad record is ONE ``InputError`` naming the file and line or item (or
the Hub row index), the record's id when it has one, the field, what is wrong and the fix.

Flat module: copied next to every saved checkpoint, so it imports only the standard library and the input layer.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .inputs_gesa import InputError, Location, read_json_file, read_text_lines

NO_RELATION = "no_relation"
OPEN_ENTITY_FIX = (
    "give JSON objects with left_context_token (list of str), mention_span (str), right_context_token "
    "(list of str) and y_str (list of type names)"
)
FIGER_FIX = (
    "give records with sent (str), start and end (character offsets of the mention in sent, end exclusive) and labels "
    "(a non-empty list of types such as '/person/artist')"
)
TACRED_FIX = (
    "give records with token (list of str), subj_start, subj_end, obj_start, obj_end (INCLUSIVE token indices), "
    "subj_type, obj_type and relation (str)"
)
CONLL_FIX = (
    "write one token per line as 'word POS chunk NER' separated by single spaces, a blank line between sentences"
)
CONLL_HUB_FIX = (
    "give rows with tokens (list of str) and ner_tags of the same length (tag names, or ids together with the dataset's "
    "features['ner_tags'].feature.names)"
)


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
    """NER: one sentence's tokens and their BIO / IOB1 tags; `spans()` gives the labelled word spans. `document`: the
    id of the document the sentence belongs to in a CoNLL file (its `-DOCSTART-` line; the sentences of a document
    follow each other: ERNIE's next-sentence pairs), `None` for rows that come without documents."""

    id: str
    tokens: list[str]
    tags: list[str]
    spans: list[tuple[int, int, str]] = field(default_factory=list)
    document: str | None = None


def _record_id(row: Any, *names: str) -> Any:
    """The record's own id (the first of ``names`` it has), for errors; ``None`` when it has none."""
    if isinstance(row, Mapping):
        return next((row[name] for name in names if row.get(name) is not None), None)
    return None


def _tokens(row: Mapping[str, Any], name: str, fail: Any) -> list[str]:
    value = row.get(name)
    if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
        raise fail(f"field {name!r} must be a list of strings (got {type(value).__name__})")
    for index, token in enumerate(value):
        if not token.strip():
            # a blank token has no characters to tokenize: a mention on it would have no position
            raise fail(f"field {name!r} item {index} is blank ({token!r}); remove it or give the word")
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
    """One Open Entity crowd record.

    Args:
        row: the record.
        position: its number (a file's line or item number from 1; a Hub split's row index), the id of a record
            without ``annot_id`` / ``id``.
        source: where it was read (``"f.json, line 3"``), named in errors; default ``row <position>``.
    """
    record_id = _record_id(row, "annot_id", "id")

    def fail(message: str) -> InputError:
        return InputError(
            message, source or f"row {position}", record="Open Entity record", record_id=record_id, fix=OPEN_ENTITY_FIX
        )

    if not isinstance(row, Mapping):
        raise fail(f"is a {type(row).__name__}, not a JSON object")
    left, right = _tokens(row, "left_context_token", fail), _tokens(row, "right_context_token", fail)
    mention = row.get("mention_span")
    if not isinstance(mention, str) or not mention.split():
        raise fail(f"field 'mention_span' must be a non-empty string (got {mention!r})")
    labels = row.get("y_str")
    if not isinstance(labels, list) or not labels or not all(isinstance(t, str) and t for t in labels):
        raise fail(f"field 'y_str' must be a non-empty list of type names (got {labels!r})")
    mention_tokens = mention.split()
    tokens = left + mention_tokens + right
    example_id = str(record_id if record_id is not None else position)
    return TypingExample(example_id, tokens, len(left), len(left) + len(mention_tokens), list(labels))


# ---------------------------------------------------------------------------------------------
# FIGER
# ---------------------------------------------------------------------------------------------


def figer_example(row: Any, position: int, source: str | None = None) -> TypingExample:
    """One FIGER record in ERNIE's JSON (``position``: its item or line number, the id of a record without ``id``;
    ``source``: where it was read). The words are the text split on white space; the mention is the words of
    ``sent[start:end]``, which must begin and end at word boundaries."""
    record_id = _record_id(row, "id")

    def fail(message: str) -> InputError:
        return InputError(message, source or f"row {position}", record="FIGER record", record_id=record_id,
                          fix=FIGER_FIX)  # fmt: skip

    if not isinstance(row, Mapping):
        raise fail(f"is a {type(row).__name__}, not a JSON object")
    text = row.get("sent")
    if not isinstance(text, str) or not text.strip():
        raise fail(f"field 'sent' must be a non-empty string (got {text!r:.40})")
    start, end = _index(row, "start", fail), _index(row, "end", fail)
    if not 0 <= start < end <= len(text) or not text[start:end].strip():
        raise fail(f"start={start}, end={end} is not a non-blank character span of its {len(text)}-character sent")
    if (start and not text[start - 1].isspace()) or (end < len(text) and not text[end].isspace()):
        raise fail(f"the mention {text[start:end]!r} (start={start}, end={end}) cuts a word of sent; give offsets at "
                   "word boundaries")  # fmt: skip
    labels = row.get("labels")
    if not isinstance(labels, list) or not labels or not all(isinstance(t, str) and t for t in labels):
        raise fail(f"field 'labels' must be a non-empty list of type names (got {labels!r})")
    left, mention = text[:start].split(), text[start:end].split()
    tokens = left + mention + text[end:].split()
    example_id = str(record_id if record_id is not None else position)
    return TypingExample(example_id, tokens, len(left), len(left) + len(mention), list(labels))


def read_figer_file(path: str | Path, where: str | None = None) -> list[TypingExample]:
    """Every record of a FIGER file (ERNIE's JSON list, or JSON lines); ``where`` names it in errors."""
    items = read_json_file(path, where, fix=FIGER_FIX, list_field=None)
    return [figer_example(row, location.number, str(location)) for location, row in items]


# ---------------------------------------------------------------------------------------------
# TACRED
# ---------------------------------------------------------------------------------------------


def tacred_example(row: Any, position: int, source: str | None = None) -> RelationExample:
    """One TACRED record (``position``: its item number from 1 in a file, or the Hub row index, the id of a record
    without ``id``; ``source``: where it was read, ``"f.json, item 3"``, default ``row <position>``)."""
    record_id = _record_id(row, "id")
    example_id = record_id if record_id is not None else position

    def fail(message: str) -> InputError:
        return InputError(
            message, source or f"row {position}", record="TACRED record", record_id=record_id, fix=TACRED_FIX
        )

    if not isinstance(row, Mapping):
        raise fail(f"is a {type(row).__name__}, not a JSON object")
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
    if spans[0] == spans[1]:  # the markers and entities of both arguments would sit on one mention
        start, end = spans[0]
        raise InputError(
            f"has its subject and object on the same span, tokens {start}..{end - 1} ({' '.join(tokens[start:end])!r}):"
            " a relation holds between two mentions",
            source or f"row {position}",
            record="TACRED record",
            record_id=record_id,
            fix="give the object its own obj_start/obj_end, or remove the record",
        )
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
    def bad_tag(index: int, tag: str) -> InputError:
        return fail(f"tag {tag!r} of token {index} ({tokens[index]!r}) is neither 'O' nor 'B-TYPE' / 'I-TYPE'", index)

    return NerExample(example_id, tokens, tags, bio_spans(tags, bad_tag))


def read_conll_file(path: str | Path, tag_column: int = -1, where: str | None = None) -> list[NerExample]:
    """Sentences of a CoNLL-2003 column file (`word POS chunk NER`; `tag_column` picks the tag column), read by
    ``inputs_gesa.read_text_lines`` (UTF-8, a BOM dropped); ``where`` names the file in errors (default its path)."""
    path = Path(path)
    examples: list[NerExample] = []
    tokens: list[str] = []
    tags: list[str] = []
    lines: list[Location] = []
    width = None

    def flush() -> None:
        if tokens:
            example_id = f"{path.name}:{lines[0].number}"

            def fail(message: str, index: int = 0) -> InputError:
                return InputError(
                    message,
                    lines[index],
                    record="CoNLL-2003 sentence",
                    record_id=example_id,
                    fix="fix the tag column (BIO or IOB1 tags)",
                )

            example = _ner_example(list(tokens), list(tags), example_id, fail)
            examples.append(dataclasses.replace(example, document=document))
        tokens.clear(), tags.clear(), lines.clear()

    document = f"{path.name}:1"  # sentences before any -DOCSTART- line: the file's first document
    for location, line in read_text_lines(path, where, fix=CONLL_FIX):
        columns = line.split()
        if not columns or columns[0] == "-DOCSTART-":
            flush()
            if columns:
                document = f"{path.name}:{location.number}"
            continue
        if width is None:
            width = len(columns)
        if len(columns) != width or len(columns) < 2:
            raise InputError(
                f"the line has {len(columns)} columns where the file's first token line has {width} (need at least "
                "word and tag)",
                location,
                fix=CONLL_FIX,
            )
        tokens.append(columns[0])
        tags.append(columns[tag_column])
        lines.append(location)
    flush()
    return examples


def conll_hub_example(row: Any, position: int, tag_names: Sequence[str] | None = None) -> NerExample:
    """One Hub `conll2003` row: `tokens` and `ner_tags` (names, or ClassLabel ids with `tag_names`)."""

    def fail(message: str, index: int | None = None) -> InputError:
        return InputError(
            message, f"row {position}", record="CoNLL-2003 row", record_id=_record_id(row, "id"), fix=CONLL_HUB_FIX
        )

    if not isinstance(row, Mapping):
        raise fail(f"is a {type(row).__name__}, not a JSON object")
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


def read_open_entity_file(path: str | Path, where: str | None = None) -> list[TypingExample]:
    """Every record of an Open Entity crowd file (JSON lines, or a JSON list); ``where`` names it in errors."""
    items = read_json_file(path, where, fix=OPEN_ENTITY_FIX, list_field=None)
    return [open_entity_example(row, location.number, str(location)) for location, row in items]


def read_tacred_file(path: str | Path, where: str | None = None) -> list[RelationExample]:
    """Every record of a TACRED JSON file (a list, as released; JSON lines also read); ``where`` names it."""
    items = read_json_file(path, where, fix=TACRED_FIX, list_field=None)
    return [tacred_example(row, location.number, str(location)) for location, row in items]


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
    "figer": read_figer_file,
    "relation_classification": read_tacred_file,
    "ner": read_conll_file,
}


def read_task_file(task: str, path: str | Path) -> list:
    """The reader of `task`'s public format (`READERS`) on `path`."""
    if task not in READERS:
        raise ValueError(f"task {task!r} has no file reader; choose one of {sorted(READERS)}.")
    if not Path(path).is_file():
        raise InputError("does not exist", str(path), fix=f"give the path of an existing {task} data file")
    return READERS[task](path)


__all__ = [
    "NO_RELATION",
    "READERS",
    "InputError",
    "NerExample",
    "RelationExample",
    "TypingExample",
    "bio_spans",
    "figer_example",
    "conll_hub_example",
    "open_entity_example",
    "read_conll_file",
    "read_figer_file",
    "read_hub_rows",
    "read_open_entity_file",
    "read_tacred_file",
    "read_task_file",
    "tacred_example",
]
