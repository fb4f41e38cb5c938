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
"""Reading and validating ReCoRD records: the one reader used by ``GesaProcessor``, ``XhProcessor`` and run_record.py.

Flat module: copied next to every saved checkpoint (it is imported by ``processing_gesa``), so it imports
third-party packages and the input layer (``inputs_gesa``) only.

Three input shapes, one canonical form (``RecordExample``, all spans with an EXCLUSIVE ``end``):

- original ReCoRD / SuperGLUE records: ``{"passage": {"text", "entities": [{start, end}]}, "qas": [{"id"|"idx",
  "query", "answers": [{start, end, text}]}]}`` with an INCLUSIVE ``end`` (entities and answers);
- Hub rows of ``super_glue``/``record``: ``{"passage": str, "query": str, "entity_spans": {text, start, end},
  "answers": [str], "idx": {passage, query}}`` with an EXCLUSIVE ``end``;
- raw rows: ``{"passage": str, "query": str}`` (candidates from NER), optionally ``"entities": [str]``.

Every problem is an ``InputError`` (``inputs_gesa``, a ``ValueError``) naming the example (its id; the record's, when
the record itself is broken), where it came from (``file, line N`` when read from a file), what is wrong and the fix.
``check_record_file`` reads a .json/.jsonl file (``inputs_gesa.read_json_file``) and checks every item of it before
anything is encoded.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .inputs_gesa import InputError, read_json_file

RECORD_PLACEHOLDER = "@placeholder"
RECORD_HIGHLIGHT = "@highlight"
HIGHLIGHT_PATTERN = re.compile(re.escape(RECORD_HIGHLIGHT))
# Keys a flattened row may carry to say where it came from (run_record.py fills them): ``record_location``
# ("--train_file f.jsonl, line 3") is named in errors; ``record_inclusive_end`` says that its exclusive ``entity_spans``
# were converted from an original record's inclusive ends, so that errors show them the way the file wrote them.
SOURCE_KEY = "record_location"
INCLUSIVE_END_KEY = "record_inclusive_end"
DATA_FILE_FIX = "give a .json/.jsonl file of ReCoRD records (passage{text, entities} + qas) or rows (passage + query)"
NO_SHAPE = "is neither a ReCoRD record (passage + qas) nor a flattened row (passage + query)"


@dataclass
class RecordExample:
    """One ReCoRD query in canonical form (all spans EXCLUSIVE ``end``).

    ``entity_spans`` is ``None`` when the input has no annotation (candidates then come from spaCy NER);
    ``span_texts`` (aligned with ``entity_spans``) holds texts given by the input, checked against the passage;
    ``answers`` is ``None`` when the input has no answer field (no ``labels`` are produced then);
    ``answer_spans`` holds the ``(start, end, text)`` answer spans the input gives (original records), checked
    against the passage; ``inclusive_end`` records that the input wrote ``end`` inclusively (original records), so
    that errors show spans as the user wrote them; ``source`` says where the example was read (``file, line N``).
    """

    example_id: str
    passage: str
    query: str
    entity_spans: list[tuple[int, int]] | None = None
    span_texts: list[str | None] | None = None
    answers: list[str] | None = None
    answer_spans: list[tuple[int, int, str]] | None = None
    inclusive_end: bool = False
    source: str | None = None


@dataclass
class InvalidExample:
    """A rejected example: its id and the reason (the message of the ``ValueError`` it would raise)."""

    example_id: str
    reason: str


def example_error(
    example: RecordExample | str, message: str, source: str | None = None, kind: str = "example"
) -> InputError:
    """``source: ReCoRD example 'id': message`` (``source``, e.g. ``--train_file f.jsonl, line 3``, when known)."""
    if isinstance(example, RecordExample):
        example_id, source = example.example_id, example.source
    else:
        example_id = example
    return InputError(message, source, record=f"ReCoRD {kind}", record_id=example_id)


def integer_spans(given: Any, example_id: str) -> list[tuple[int, int]]:
    """``(start, end)`` pairs of python ints from ints or numpy integers (a caller's ``entity_spans`` of one example,
    exclusive ends); anything else is one ``RecordError`` naming the example."""
    if isinstance(given, (str, Mapping)) or not isinstance(given, (Sequence, np.ndarray)):
        raise example_error(
            example_id,
            "entity_spans must be a list of (start, end) character spans with an exclusive end, got "
            f"{type(given).__name__}",
        )
    spans = []
    for span in given:
        try:
            start, end = span
        except (TypeError, ValueError):
            raise example_error(
                example_id,
                f"entity span {span!r} is not a (start, end) pair; entity_spans holds, per example, "
                "a list of (start, end) character spans with an exclusive end",
            ) from None
        if not all(isinstance(value, (int, np.integer)) and not isinstance(value, bool) for value in (start, end)):
            raise example_error(
                example_id, f"entity span {span!r} must hold two integer character offsets (exclusive end)"
            )
        spans.append((int(start), int(end)))
    return spans


# ----------------------------------------------------------------------------------------------- field readers


def _is_integer(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _as_list(value: Any, name: str, fail: Any) -> list[Any]:
    """A JSON list / Arrow sequence as a list; anything else (a string, a dict, a number) is an error."""
    if isinstance(value, (list, tuple, np.ndarray)):
        return list(value)
    raise fail(f"'{name}' must be a list, got {type(value).__name__} {_short(value)}")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _span_dicts(value: Any, name: str, fail: Any) -> list[dict[str, Any]]:
    """Spans as dicts, from a list of dicts or an Arrow struct sequence (a dict of equally long lists)."""
    if value is None:
        return []
    if isinstance(value, Mapping):
        columns = {key: value[key] for key in value}
        if not all(isinstance(column, (list, tuple, np.ndarray)) for column in columns.values()):
            raise fail(
                f"'{name}' is an object {_short(value)}: give a list of {{start, end}} objects (or, Arrow layout, "
                "an object of equally long lists)"
            )
        lengths = {len(column) for column in columns.values()}
        if len(lengths) > 1:
            raise fail(f"'{name}' (object of lists) has lists of different lengths {sorted(lengths)}")
        keys = list(columns)
        return [dict(zip(keys, items, strict=True)) for items in zip(*columns.values(), strict=True)]
    items = _as_list(value, name, fail)
    for number, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise fail(f"'{name}' item {number} is {type(item).__name__} {_short(item)}, not a {{start, end}} object")
    return [dict(item) for item in items]


def _offset(span: Mapping[str, Any], key: str, name: str, number: int, fail: Any) -> int:
    if key not in span or span[key] is None:
        raise fail(f"'{name}' item {number} {_short(span)} has no '{key}'; every span needs integer 'start' and 'end'")
    value = span[key]
    if not _is_integer(value):
        raise fail(
            f"'{name}' item {number}: '{key}' must be an integer character offset, got {type(value).__name__} "
            f"{value!r}"
        )
    return int(value)


def _spans(value: Any, name: str, inclusive: bool, fail: Any) -> tuple[list[tuple[int, int]], list[str | None]]:
    """EXCLUSIVE spans and their given texts (``None`` when the input gives none)."""
    spans, texts = [], []
    for number, span in enumerate(_span_dicts(value, name, fail)):
        start, end = _offset(span, "start", name, number, fail), _offset(span, "end", name, number, fail)
        text = span.get("text")
        if text is not None and not isinstance(text, str):
            raise fail(f"'{name}' item {number}: 'text' must be a string, got {type(text).__name__}")
        spans.append((start, end + 1 if inclusive else end))
        texts.append(text)
    return spans, texts


def parse_answers(value: Any, inclusive: bool, fail: Any) -> tuple[list[str], list[tuple[int, int, str]]]:
    """Sorted unique answer texts and the EXCLUSIVE ``(start, end, text)`` spans the input gives.

    Answers are strings (Hub rows) or ``{start, end, text}`` objects (original records, INCLUSIVE ``end``); an Arrow
    struct sequence ``{"text": [...], ...}`` works too. A bare string is an error (it would be read as characters).
    """
    if isinstance(value, str):
        raise fail(f"'answers' is the string {_short(value)}, not a list: wrap it as [{value!r}]")
    if isinstance(value, Mapping):
        if "text" not in value:
            raise fail(f"'answers' is an object {_short(value)} without 'text'")
        value = _span_dicts(value, "answers", fail)
    texts, spans = set(), []
    for number, item in enumerate(_as_list(value, "answers", fail)):
        if isinstance(item, str):
            texts.add(item)
            continue
        if not isinstance(item, Mapping):
            raise fail(f"'answers' item {number} is {type(item).__name__} {_short(item)}: give strings or "
                       "{start, end, text} objects")  # fmt: skip
        if not isinstance(item.get("text"), str):
            raise fail(f"'answers' item {number} {_short(item)} has no 'text' string")
        texts.add(item["text"])
        if item.get("start") is not None or item.get("end") is not None:
            start = _offset(item, "start", "answers", number, fail)
            end = _offset(item, "end", "answers", number, fail)
            spans.append((start, end + 1 if inclusive else end, item["text"]))
    return sorted(texts), spans


def content_id(passage: str, query: str) -> str:
    """A stable id of a query without one: a hash of passage and query."""
    digest = hashlib.sha1(f"{passage}\x00{query}".encode("utf-8", "surrogatepass")).hexdigest()
    return f"sha1-{digest[:16]}"


def locate_entity_strings(passage: str, entity_texts: Iterable[str]) -> list[tuple[int, int]]:
    """Mentions of entity strings found by exact, word-bounded search; longest match wins on overlap."""
    found = []
    for text in {text for text in entity_texts if text and text.strip()}:
        pattern = re.compile(rf"(?<!\w){re.escape(text)}(?!\w)")
        found.extend((match.start(), match.end()) for match in pattern.finditer(passage))
    found.sort(key=lambda span: (span[0], -(span[1] - span[0])))
    kept: list[tuple[int, int]] = []
    for start, end in found:
        if not kept or start >= kept[-1][1]:
            kept.append((start, end))
    return kept


def _id_text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, (str, int, np.integer)) and not isinstance(value, bool):
        return str(value)
    return None


# ----------------------------------------------------------------------------------------------- the shapes


def _record_to_examples(record: Mapping[str, Any], position: int, source: str | None) -> list[RecordExample]:
    """Original ReCoRD / SuperGLUE record (passage + inclusive entity spans + ``qas``) -> one example per query."""
    record_id = _id_text(record.get("idx", record.get("id")))
    name = record_id if record_id is not None else f"#{position}"

    def fail(message: str) -> InputError:
        return example_error(name, message + "; fix or remove that record", source, kind="record")

    passage_field = record.get("passage")
    if not isinstance(passage_field, Mapping) or not isinstance(passage_field.get("text"), str):
        raise fail(f"'passage' must be an object with 'text' (a string) and 'entities', got {_short(passage_field)}")
    passage = passage_field["text"]
    entities = passage_field.get("entities")
    spans, texts = (None, None) if entities is None else _spans(entities, "passage.entities", True, fail)
    if record.get("qas") is None:
        raise fail("'qas' is null: give a list of query objects ({id, query[, answers]})")
    examples = []
    for number, qa in enumerate(_span_dicts(record.get("qas"), "qas", fail)):
        qa_id = _id_text(qa.get("id"))
        if qa_id is None and record_id is not None and _id_text(qa.get("idx")) is not None:
            qa_id = f"{record_id}-{qa['idx']}"
        if qa_id is None:
            qa_id = content_id(passage, str(qa.get("query")))

        def qa_fail(message: str, qa_id: str = qa_id, number: int = number) -> InputError:
            return example_error(qa_id, message + f" (query {number} of record {name!r})", source)

        if not isinstance(qa.get("query"), str):
            raise qa_fail(f"'query' must be a string, got {_short(qa.get('query'))}")
        answers, answer_spans = (
            (None, None) if qa.get("answers") is None else parse_answers(qa["answers"], True, qa_fail)
        )
        examples.append(
            RecordExample(
                qa_id,
                passage,
                qa["query"],
                None if spans is None else list(spans),
                None if texts is None else list(texts),
                answers,
                answer_spans=answer_spans,
                inclusive_end=True,
                source=source,
            )
        )
    return examples


def _row_to_example(row: Mapping[str, Any], position: int, source: str | None) -> RecordExample:
    """Flattened row (Hub ``super_glue``/``record``: exclusive ``entity_spans``) or raw ``passage`` + ``query``."""
    source = row.get(SOURCE_KEY) or source
    passage, query = row.get("passage"), row.get("query")
    idx = row.get("idx")
    example_id = _id_text(row.get("id"))
    if example_id is None and isinstance(idx, Mapping) and idx.get("passage") is not None:
        example_id = f"{idx['passage']}-{idx.get('query')}"
    elif example_id is None:
        example_id = _id_text(idx)
    if example_id is None:
        example_id = content_id(str(passage), str(query))

    def fail(message: str) -> InputError:
        return example_error(example_id, message, source)

    spans: list[tuple[int, int]] | None = None
    span_texts: list[str | None] | None = None
    inclusive_end = isinstance(passage, Mapping)
    if inclusive_end:  # a flattened row that kept the original passage object (inclusive ends)
        if not isinstance(passage.get("text"), str):
            raise fail(f"'passage' must be a string (or an object with 'text'), got {_short(passage)}")
        if passage.get("entities") is not None:
            spans, span_texts = _spans(passage["entities"], "passage.entities", True, fail)
        passage = passage["text"]
    elif not isinstance(passage, str):
        raise fail(f"'passage' must be a string, got {type(passage).__name__} {_short(passage)}")
    elif row.get("entity_spans") is not None:
        spans, span_texts = _spans(row["entity_spans"], "entity_spans", False, fail)
        inclusive_end = bool(row.get(INCLUSIVE_END_KEY))
    elif row.get("entities") is not None:
        # Older Hub rows carry entity strings only: locate their mentions in the passage.
        names = _as_list(row["entities"], "entities", fail)
        if not all(isinstance(text, str) for text in names):
            raise fail("'entities' must be a list of strings (entity names; give spans as 'entity_spans')")
        spans = locate_entity_strings(passage, names)
        span_texts = [None] * len(spans)
    if not isinstance(query, str):
        raise fail(f"'query' must be a string, got {type(query).__name__} {_short(query)}")
    answers, answer_spans = None, None
    if row.get("answers") is not None:
        # Answer dicts with offsets follow the passage object's (inclusive) convention; Hub rows carry strings only.
        answers, answer_spans = parse_answers(row["answers"], inclusive_end, fail)
    return RecordExample(example_id, passage, query, spans, span_texts, answers, answer_spans, inclusive_end, source)


def to_record_examples(
    items: Iterable[Any],
    invalid: list[InvalidExample] | None = None,
    sources: Sequence[str | None] | None = None,
) -> list[RecordExample]:
    """Canonical examples from original/SuperGLUE records (with ``qas``) and/or flattened rows (with ``query``).

    Args:
        items: records and/or rows.
        invalid: when given, a malformed item is appended to it (``InvalidExample``) and skipped; else it raises.
        sources: per item, where it was read (``"f.jsonl, line 3"``), named in errors.

    Raises:
        InputError (a ``ValueError``) naming the example (or record) and what is wrong with its structure or types.
    """
    examples: list[RecordExample] = []
    for position, item in enumerate(items):
        source = sources[position] if sources is not None else None
        try:
            examples.extend(item_to_examples(item, position, source))
        except InputError as error:
            if invalid is None:
                raise
            invalid.append(InvalidExample(error.record_id or f"input #{position}", str(error)))
    return examples


def item_shape(item: Any) -> str | None:
    """``"record"`` (passage + qas), ``"row"`` (passage + query) or ``None``."""
    if not isinstance(item, Mapping) or "passage" not in item:
        return None
    if "qas" in item:
        return "record"
    return "row" if "query" in item else None


def item_to_examples(item: Any, position: int = 0, source: str | None = None) -> list[RecordExample]:
    """The examples of one record or row; ``InputError`` if it is in no known shape or malformed."""
    shape = item_shape(item)
    if shape == "record":
        return _record_to_examples(item, position, source)
    if shape == "row":
        return [_row_to_example(item, position, source)]
    raise InputError(f"{_what(item)} {NO_SHAPE}", source or f"input #{position}", fix=DATA_FILE_FIX)


def _what(item: Any) -> str:
    return f"an object with keys {sorted(map(str, item))}" if isinstance(item, Mapping) else f"a {type(item).__name__}"


# ----------------------------------------------------------------------------------------------- content checks


def end_convention_hint(example: RecordExample) -> str:
    """What ``end`` means in the example's input shape, and the fix for the other convention."""
    if example.inclusive_end:
        return (
            "Original ReCoRD/SuperGLUE records (passage 'entities', 'qas' answers) use an INCLUSIVE end: the mention "
            "is passage[start:end + 1]. If your ends are exclusive (Python slicing), subtract 1, or pass flattened "
            "rows with exclusive 'entity_spans'."
        )
    return (
        "Flattened Hub rows ('entity_spans') and GesaProcessor.__call__ use an EXCLUSIVE end: the mention is "
        "passage[start:end]. If your ends are inclusive (original ReCoRD), add 1."
    )


def span_as_given(example: RecordExample, start: int, end: int) -> str:
    """An EXCLUSIVE span written the way the input wrote it (original records: inclusive ``end``)."""
    return f"({start}, {end - 1}) (inclusive end)" if example.inclusive_end else f"({start}, {end})"


def check_text_fields(example: RecordExample) -> None:
    """Passage and query: non-empty strings, ``@placeholder`` exactly once, encodable as UTF-8."""
    if not isinstance(example.passage, str) or not example.passage.strip():
        raise example_error(example, "has an empty passage")
    if not isinstance(example.query, str):
        raise example_error(example, f"query must be a string, got {type(example.query).__name__}")
    placeholders = example.query.count(RECORD_PLACEHOLDER)
    if placeholders != 1:
        raise example_error(
            example,
            f"query must contain {RECORD_PLACEHOLDER!r} exactly once, found {placeholders}: {example.query[:120]!r}",
        )
    for name, text in (("passage", example.passage), ("query", example.query)):
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as error:
            raise example_error(
                example,
                f"{name} has a character the tokenizer cannot map at position {error.start} "
                f"({text[error.start]!r}, a lone surrogate)",
            ) from None


def check_answer_spans(example: RecordExample) -> None:
    """Answers given with offsets (original records, INCLUSIVE ``end``) must match their text in the passage."""
    passage = example.passage
    for start, end, text in example.answer_spans or ():
        if start < 0 or passage[start:end] != text:
            raise example_error(
                example,
                f"answer {text!r} at {span_as_given(example, start, end)} does not match the passage: "
                f"passage[{start}:{end}] = {passage[max(start, 0) : end]!r}. {end_convention_hint(example)}",
            )


def check_entity_spans(example: RecordExample) -> None:
    """Each annotated span: inside the passage, equal to its given text, no whitespace at its edges, not on a
    ``@highlight`` separator. (Whether it covers whole tokens depends on the tokenizer: ``GesaProcessor`` checks it.)"""
    passage = example.passage
    highlights = [(match.start(), match.end()) for match in HIGHLIGHT_PATTERN.finditer(passage)]
    texts = example.span_texts or [None] * len(example.entity_spans or ())
    hint = end_convention_hint(example)
    for (start, end), text in zip(example.entity_spans or (), texts, strict=True):
        given = span_as_given(example, start, end)
        if not (0 <= start < end <= len(passage)):
            raise example_error(
                example, f"entity span {given} is outside the passage (length {len(passage)}) or empty. {hint}"
            )
        mention = passage[start:end]
        if text is not None and mention != text:
            raise example_error(
                example,
                f"entity span {given} is not on the character boundaries of its text: passage[{start}:{end}] = "
                f"{mention!r} but the span says {text!r}. {hint} (Or are offsets counted in bytes / UTF-16 units?)",
            )
        if not mention.strip():
            raise example_error(example, f"entity span {given} covers only whitespace: no word token to map it to")
        if mention != mention.strip():
            edges = [name for name, edge in (("starts", mention[0]), ("ends", mention[-1])) if edge.isspace()]
            raise example_error(
                example,
                f"entity span {given} = {mention!r} {' and '.join(edges)} with whitespace; a span must cover the "
                f"mention exactly. {hint}",
            )
        if any(start < h_end and h_start < end for h_start, h_end in highlights):
            raise example_error(
                example,
                f"entity span {given} = {mention!r} overlaps a {RECORD_HIGHLIGHT!r} separator, which is not part of "
                "any mention",
            )


def check_example(example: RecordExample) -> None:
    """Every check that needs no tokenizer: text fields, answer offsets, entity spans (``ValueError`` naming it)."""
    check_text_fields(example)
    check_answer_spans(example)
    check_entity_spans(example)


# ----------------------------------------------------------------------------------------------- files


def read_record_file(path: Path | str, where: str | None = None) -> tuple[str | None, Iterator[tuple[str, Any]]]:
    """The JSON ``field`` holding the items (``"data"`` for the original release, else ``None``) and ``(location,
    item)`` pairs: ``line N`` of JSON lines, ``item N`` of a JSON list / ``item N of 'data'`` of ``{"data": [...]}``
    (``inputs_gesa.read_json_file``: UTF-8, a BOM dropped, counted from 1)."""
    found = read_json_file(path, where, fix=DATA_FILE_FIX)
    return found.field, ((location.place, item) for location, item in found)


@dataclass
class CheckedFile:
    """A data file as ``check_record_file`` read it: the JSON field to load, the shape and each item's location."""

    field: str | None
    shape: str
    locations: list[str]
    queries: int
    unannotated: int = 0  # queries without entity annotation (their candidates come from NER)
    unanswered: str | None = None  # "where: ReCoRD example 'id'" of the first query without a gold answer


def check_record_file(path: Path | str, where: str | None = None, unique_ids: bool = False) -> CheckedFile:
    """Check that ``path`` holds ReCoRD data in one known shape, every item of it (structure, types, spans and
    answer offsets in the shape's end convention). A problem is an ``InputError`` naming ``where`` (e.g. the flag and
    the file), the line or item, the example id, what is wrong and the fix.

    Known shapes: JSON lines or a JSON list of original/SuperGLUE records (``passage`` + ``qas``) or of flattened
    rows (``passage`` + ``query``), or the original release's ``{"data": [records...]}`` object. A file must hold at
    least one query; with ``unique_ids`` (evaluation and prediction files) no two queries may share an id, wherever
    they are in the file (their answers would be merged into one).
    """
    path = Path(path)
    where = where or str(path)
    if path.is_dir():
        raise InputError("is a folder", where, fix="give the path of a ReCoRD .json or .jsonl file")
    if not path.is_file():
        raise InputError("does not exist", where, fix="give the path of an existing ReCoRD .json or .jsonl file")
    if path.suffix not in (".json", ".jsonl"):
        raise InputError(f"must be .json or .jsonl (ReCoRD records or rows), not {path.suffix!r}", where)
    found = read_json_file(path, where, fix=DATA_FILE_FIX)
    shape, locations, queries, unannotated, unanswered = None, [], 0, 0, None
    seen: dict[str, str] = {}  # query id -> where it was first read
    for location, item in found:
        this_shape = item_shape(item)
        if this_shape is None:
            raise InputError(f"{_what(item)} {NO_SHAPE}", location, fix=DATA_FILE_FIX)
        if shape is None:
            shape = this_shape
        elif this_shape != shape:
            raise InputError(f"a {this_shape} in a file of {shape}s", location, fix="use one shape per file")
        for example in item_to_examples(item, len(locations), str(location)):
            check_example(example)
            if unique_ids and example.example_id in seen:
                raise InputError(
                    f"query id {example.example_id!r} was already used at {seen[example.example_id]}",
                    example.source,
                    fix="two queries may not share an id (their answers would be merged): give each its own id",
                )
            seen.setdefault(example.example_id, location.place)
            queries += 1
            unannotated += example.entity_spans is None
            if not example.answers and unanswered is None:
                unanswered = f"{example.source}: ReCoRD example {example.example_id!r}"
        locations.append(location.place)
    if shape is None:
        raise InputError("holds no record", where, fix=DATA_FILE_FIX)
    if queries == 0:
        raise InputError(
            f"holds {len(locations)} record(s) but no query (every 'qas' is empty)", where, fix="give queries"
        )
    return CheckedFile(found.field, shape, locations, queries, unannotated, unanswered)


__all__ = [
    "INCLUSIVE_END_KEY",
    "RECORD_HIGHLIGHT",
    "RECORD_PLACEHOLDER",
    "SOURCE_KEY",
    "CheckedFile",
    "InvalidExample",
    "InputError",
    "RecordExample",
    "check_example",
    "check_record_file",
    "content_id",
    "integer_spans",
    "item_to_examples",
    "parse_answers",
    "read_record_file",
    "to_record_examples",
]
