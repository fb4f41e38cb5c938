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
"""Document windows and features of one ReCoRD query (paper 3.2's inputs): the seam of ``GesaProcessor`` that cuts a
tokenised, marked passage into windows and writes one feature per window.

Flat module: copied next to every saved checkpoint (imported by ``processing_gesa``), so it imports third-party
packages and its siblings only.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .candidates_gesa import normalize_entity_string
from .collator_gesa import CANDIDATE_SPANS_COLUMN
from .records_gesa import HIGHLIGHT_PATTERN, RecordExample, example_error
from .structure_gesa import CLS_GLOBAL, LOCAL, QUESTION_GLOBAL

PLACEHOLDER_TOKEN = "[PLC]"
ENTITY_MARKER_TOKEN = "[ENT]"
HIGHLIGHT_TOKEN = "[HL]"
# LUKE's entity_span_qa adds [HIGHLIGHT], [PLACEHOLDER], [ENTITY] in this order, initialised from "@", "#", "*".
ADDED_TOKEN_SOURCES: dict[str, str] = {HIGHLIGHT_TOKEN: "@", PLACEHOLDER_TOKEN: "#", ENTITY_MARKER_TOKEN: "*"}


@dataclass(frozen=True)
class WindowLayout:
    """The processor's settings that shape windows and features, and the word ids they use."""

    max_seq_length: int
    doc_stride: int
    max_query_length: int
    max_entities: int
    max_mention_length: int
    entity_mask_id: int
    cls_token_id: int
    sep_token_id: int
    placeholder_token_id: int


@dataclass
class PreparedPassage:
    """A passage (with one candidate set) tokenised once and shared by all of its queries. P = candidate mentions."""

    doc_ids: list[int]  # (T,) word ids of the marked passage, no special tokens
    marker_starts: np.ndarray  # (P,) doc index of each mention's opening [ENT]
    marker_ends: np.ndarray  # (P,) doc index of each mention's closing [ENT]
    spans: list[tuple[int, int]]  # (P,) exclusive character spans
    candidate_texts: list[str]  # (P,)
    normalized_texts: list[str]  # (P,)
    string_ids: list[int]  # (P,) id of the normalised string, by first appearance
    sentence_ids: list[int]  # (P,)


def mark_passage(text: str, spans: Sequence[tuple[int, int]]) -> str:
    """Passage string with ``[ENT]`` around each span and ``[HL]`` for ``@highlight``.

    The markers are added tokens with ``lstrip``: they absorb the whitespace on their left, while the space
    before a mention moves inside it, so that mention words keep the leading-space BPE form they have in
    running text.
    """
    edits = [(match.start(), match.end(), 1, " " + HIGHLIGHT_TOKEN) for match in HIGHLIGHT_PATTERN.finditer(text)]
    for start, end in spans:
        opening = start - 1 if start > 0 and text[start - 1] == " " else start
        edits.append((opening, opening, 2, " " + ENTITY_MARKER_TOKEN))
        edits.append((end, end, 0, " " + ENTITY_MARKER_TOKEN))
    # At one position: a closing marker first, then a highlight, then an opening marker.
    edits.sort(key=lambda edit: (edit[0], edit[2]))
    pieces = []
    cursor = 0
    for start, end, _, replacement in edits:
        pieces.append(text[cursor:start])
        pieces.append(replacement)
        cursor = end
    pieces.append(text[cursor:])
    return "".join(pieces)


def plan_windows(
    layout: WindowLayout,
    passage: PreparedPassage,
    window_length: int,
    example: RecordExample,
    stats: Counter[str],
) -> list[tuple[int, int, int, int]]:
    """Document windows ``(doc_start, doc_end, first_entity, end_entity)``; each mention lies fully in one.

    Windows start every ``doc_stride`` tokens, but never after the first mention the previous window cut, and a
    window holding more than ``max_entities - 1`` mentions ends before the next one.
    """
    starts, ends = passage.marker_starts, passage.marker_ends
    doc_length, mention_count = len(passage.doc_ids), len(starts)
    candidate_cap = layout.max_entities - 1
    windows = []
    window_start = 0
    while True:
        window_end = min(window_start + window_length, doc_length)
        first = int(np.searchsorted(starts, window_start, side="left"))
        stop = max(first, int(np.searchsorted(ends, window_end, side="left")))
        if stop - first > candidate_cap:
            stats["entity_cap_window_splits"] += 1
            stop = first + candidate_cap
            window_end = int(starts[stop])
        windows.append((window_start, window_end, first, stop))
        if window_end >= doc_length:
            return windows
        next_start = min(window_start + layout.doc_stride, window_end)
        if stop < mention_count and starts[stop] < next_start:
            next_start = int(starts[stop])
        if next_start <= window_start:
            start, end = passage.spans[stop]
            raise example_error(
                example,
                f"mention ({start}, {end}) needs {int(ends[stop] - starts[stop]) + 1} tokens with its "
                f"markers but a window has only {window_length}; raise max_seq_length",
            )
        window_start = next_start


def append_features(
    layout: WindowLayout,
    columns: dict[str, list],
    example: RecordExample,
    passage: PreparedPassage,
    query_ids: list[int],
    stats: Counter[str],
    with_labels: bool,
    return_candidate_spans: bool,
    query_string_ids: list[int] | None = None,
) -> int:
    """Append the features of one query to ``columns``; returns how many windows were kept.

    ``query_string_ids``: ``(Q,)`` per query token the string id of the candidate occurrence it lies in, -1 outside
    (``candidates_gesa.token_string_ids``); every window carries them as its ``question_string_ids``.
    """
    placeholder_index = query_ids.index(layout.placeholder_token_id)
    if query_string_ids is None:
        query_string_ids = [-1] * len(query_ids)
    if len(query_ids) > layout.max_query_length:
        stats["query_truncated"] += 1
        first = max(0, min(placeholder_index - layout.max_query_length // 2, len(query_ids) - layout.max_query_length))
        query_ids = query_ids[first : first + layout.max_query_length]
        query_string_ids = query_string_ids[first : first + layout.max_query_length]
        placeholder_index -= first
    query_length = len(query_ids)
    window_length = layout.max_seq_length - query_length - 4
    prefix = [layout.cls_token_id] + query_ids + [layout.sep_token_id, layout.sep_token_id]
    doc_offset = len(prefix)
    placeholder_position = 1 + placeholder_index
    answer_set = {normalize_entity_string(text) for text in example.answers or ()}
    mention_labels = [float(text in answer_set) for text in passage.normalized_texts]
    if with_labels and answer_set and not any(mention_labels):
        stats["answers_not_in_candidates"] += 1

    kept = 0
    for window_start, window_end, first, stop in plan_windows(layout, passage, window_length, example, stats):
        if stop <= first:
            stats["windows_without_candidates_dropped"] += 1
            continue
        input_ids = prefix + passage.doc_ids[window_start:window_end] + [layout.sep_token_id]
        sequence_length = len(input_ids)
        shift = doc_offset - window_start
        mention_starts = (passage.marker_starts[first:stop] + 1 + shift).tolist()
        mention_ends = (passage.marker_ends[first:stop] + shift).tolist()
        longest = max(end - start for start, end in zip(mention_starts, mention_ends, strict=True))
        if longest > layout.max_mention_length:
            stats["mention_truncated"] += sum(
                end - start > layout.max_mention_length
                for start, end in zip(mention_starts, mention_ends, strict=True)
            )
        width = min(longest, layout.max_mention_length)
        position_rows = [[placeholder_position] + [-1] * (width - 1)]
        for start, end in zip(mention_starts, mention_ends, strict=True):
            end = min(end, start + width)
            position_rows.append(list(range(start, end)) + [-1] * (width - (end - start)))
        entity_count = stop - first + 1

        columns["input_ids"].append(input_ids)
        columns["attention_mask"].append([1] * sequence_length)
        columns["token_type_ids"].append([0] * sequence_length)
        columns["global_attention_mask"].append(
            [CLS_GLOBAL] + [QUESTION_GLOBAL] * query_length + [LOCAL] * (sequence_length - 1 - query_length)
        )
        columns["question_string_ids"].append([-1, *query_string_ids] + [-1] * (sequence_length - 1 - query_length))
        columns["entity_ids"].append([layout.entity_mask_id] * entity_count)
        columns["entity_attention_mask"].append([1] * entity_count)
        columns["entity_token_type_ids"].append([0] * entity_count)
        columns["entity_position_ids"].append(position_rows)
        columns["placeholder_entity_mask"].append([1] + [0] * (entity_count - 1))
        columns["entity_string_ids"].append([-1] + passage.string_ids[first:stop])
        columns["entity_sentence_ids"].append([-1] + passage.sentence_ids[first:stop])
        if with_labels:
            columns["labels"].append([0.0] + mention_labels[first:stop])
        columns["example_id"].append(example.example_id)
        columns["candidate_texts"].append([""] + passage.candidate_texts[first:stop])
        columns["answers"].append(list(example.answers or ()))
        if return_candidate_spans:
            columns[CANDIDATE_SPANS_COLUMN].append([[-1, -1]] + [list(span) for span in passage.spans[first:stop]])
        kept += 1
    return kept


__all__ = [
    "ADDED_TOKEN_SOURCES",
    "ENTITY_MARKER_TOKEN",
    "HIGHLIGHT_TOKEN",
    "PLACEHOLDER_TOKEN",
    "PreparedPassage",
    "WindowLayout",
    "append_features",
    "mark_passage",
    "plan_windows",
]
