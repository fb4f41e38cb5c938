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
"""ERNIE's and KnowBERT's fine-tuning inputs for entity typing and relation classification (``--input_format``).

- ``luke`` (default): LUKE's inputs, the mention(s) as ``[MASK]`` (``[MASK2]``) entities whose states the heads read
  (``processing_entity.EntityTaskProcessor``).
- ``ernie``: marker tokens around the mentions, ``[ENT] mention [ENT]`` for typing, ``[HD] head [HD]`` and
  ``[TL] tail [TL]`` for relations (ERNIE, sec. 4.4-4.5).
- ``knowbert``: ``[E1] mention [/E1]`` for typing, ``[E1] head [/E1]`` ... ``[E2] tail [/E2]`` for relations
  (KnowBERT's TACRED input).

With markers the heads read the word states of the opening markers (``marker_positions``) instead of entity states;
the mentions keep their LUKE entities (so KAR and ERNIE still find them for their KB inputs). The markers are added
tokens whose embeddings start from ``@`` (first mention) and ``#`` (second), LUKE's choice for its entity markers.
``mark_text`` and ``marker_positions`` are shared with the pipelines, so a checkpoint answers with the inputs it was
trained on.

Flat module: copied next to every saved checkpoint, so it imports only its siblings and third-party packages.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from transformers import PreTrainedTokenizerBase

from .processing_entity import EntityTaskProcessor

INPUT_FORMATS = ("luke", "ernie", "knowbert")
MARKED_TASKS = ("entity_typing", "relation_classification")
# per format and task: (opening, closing) marker of each mention, in the mentions' order
MARKERS = {
    "ernie": {"entity_typing": (("[ENT]", "[ENT]"),), "relation_classification": (("[HD]", "[HD]"), ("[TL]", "[TL]"))},
    "knowbert": {
        "entity_typing": (("[E1]", "[/E1]"),),
        "relation_classification": (("[E1]", "[/E1]"), ("[E2]", "[/E2]")),
    },
}
# the existing token whose embedding a marker of the first / second mention starts from
MARKER_SOURCES = ("@", "#")


def markers_of(input_format: str, task: str) -> tuple[tuple[str, str], ...]:
    """The (opening, closing) markers of each mention; a ``ValueError`` naming the choices for a bad pair."""
    if input_format not in MARKERS or task not in MARKED_TASKS:
        raise ValueError(
            f"input_format {input_format!r} for task {task!r}: markers exist for {sorted(MARKERS)} on {MARKED_TASKS}"
        )
    return MARKERS[input_format][task]


def input_format_of(tokenizer: PreTrainedTokenizerBase, task: str) -> str:
    """The format a checkpoint's tokenizer was trained with: the one whose markers for ``task`` it holds, else luke."""
    added = set(tokenizer.get_added_vocab())
    for name in MARKERS:
        if task in MARKED_TASKS and {m for pair in markers_of(name, task) for m in pair} <= added:
            return name
    return "luke"


def add_marker_tokens(tokenizer: PreTrainedTokenizerBase, input_format: str, task: str) -> dict[int, int]:
    """Add the markers to ``tokenizer`` (special tokens, never split); ``{marker id: source token id}``."""
    pairs = markers_of(input_format, task)
    tokenizer.add_tokens(sorted({m for pair in pairs for m in pair}), special_tokens=True)
    sources = {}
    for pair, source in zip(pairs, MARKER_SOURCES, strict=False):
        source_id = tokenizer.convert_tokens_to_ids(source)
        if source_id is None or source_id == tokenizer.unk_token_id:
            raise ValueError(f"marker source token {source!r} is not in the word vocabulary")
        for marker in pair:
            sources[tokenizer.convert_tokens_to_ids(marker)] = source_id
    return sources


def mark_text(
    text: str, spans: Sequence[tuple[int, int]], pairs: Sequence[tuple[str, str]]
) -> tuple[str, list[tuple[int, int]]]:
    """``text`` with ``opening mention closing`` around each character span (end exclusive), and the spans moved."""
    order = sorted(range(len(spans)), key=lambda i: spans[i][0])
    pieces, moved, cursor, shift = [], [None] * len(spans), 0, 0
    for i in order:
        start, end = spans[i]
        opening, closing = pairs[i]
        pieces.append(text[cursor:start] + opening + " ")
        shift += len(opening) + 1
        moved[i] = (start + shift, end + shift)
        pieces.append(text[start:end] + " " + closing)
        shift += len(closing) + 1
        cursor = end
    pieces.append(text[cursor:])
    return "".join(pieces), moved


def marker_positions(
    input_ids: Sequence[int], tokenizer: PreTrainedTokenizerBase, pairs: Sequence[tuple[str, str]]
) -> list[int]:
    """The token index of each mention's opening marker (its first occurrence: a closing marker comes after it, and
    each mention has its own opening marker); 0 (the first token) when truncation cut it."""
    ids = list(input_ids)
    positions = []
    for opening, _ in pairs:
        marker = tokenizer.convert_tokens_to_ids(opening)
        positions.append(ids.index(marker) if marker in ids else 0)
    return positions


class MarkedEntityTaskProcessor(EntityTaskProcessor):
    """``EntityTaskProcessor`` with ERNIE's or KnowBERT's markers (module docstring): the features also carry
    ``marker_positions`` (one per mention), which the heads read instead of the entity states. Adds the markers to the
    tokenizer; ``added_token_sources`` initialises their embeddings."""

    def __init__(
        self,
        tokenizer: PreTrainedTokenizerBase | None = None,
        task: str = "entity_typing",
        label_names: Sequence[str] = (),
        max_length: int = 128,
        max_span_length: int = 8,
        max_entities: int = 64,
        input_format: str = "ernie",
    ) -> None:
        super().__init__(tokenizer, task, label_names, max_length, max_span_length, max_entities)
        self.input_format = input_format
        self.pairs = markers_of(input_format, task)
        self._sources = add_marker_tokens(self.tokenizer, input_format, task)

    def added_token_sources(self) -> dict[int, int]:
        """New marker token id -> id of the token whose embedding initialises it (``@``, ``#``)."""
        return dict(self._sources)

    def _encode(
        self, tokens: Sequence[str], spans: Sequence[tuple[int, int]], entities: Sequence[str], example_id: str = ""
    ) -> dict:
        marked: list[str] = []
        order = sorted(range(len(spans)), key=lambda i: spans[i][0])
        cursor, new_spans = 0, [None] * len(spans)
        for i in order:
            start, end = spans[i]
            opening, closing = self.pairs[i]
            marked += [*tokens[cursor:start], opening]
            new_spans[i] = (len(marked), len(marked) + end - start)
            marked += [*tokens[start:end], closing]
            cursor = end
        marked += tokens[cursor:]
        feature = super()._encode(marked, new_spans, entities, example_id)
        return dict(feature, marker_positions=marker_positions(feature["input_ids"], self.tokenizer, self.pairs))

    def collate(self, features: Sequence[dict]) -> dict[str, torch.Tensor]:
        batch = super().collate([{k: v for k, v in f.items() if k != "marker_positions"} for f in features])
        batch["marker_positions"] = torch.tensor([f["marker_positions"] for f in features], dtype=torch.long)
        return batch

    __call__ = collate


MarkedEntityTaskProcessor.register_for_auto_class("AutoProcessor")


def marked_inputs(tokenizer: PreTrainedTokenizerBase, task: str, text: str, spans: Sequence[tuple[int, int]],
                  **encode: Any) -> tuple[dict, list[tuple[int, int]]]:  # fmt: skip
    """A pipeline's encoding of ``text`` in its checkpoint's format (``input_format_of``): ``(encoded, spans)`` with
    the markers inserted and ``marker_positions`` added (LUKE's format: ``text`` and ``spans`` as they are)."""
    input_format = input_format_of(tokenizer, task)
    if input_format == "luke":
        return dict(tokenizer(text, entity_spans=list(spans), **encode)), list(spans)
    pairs = markers_of(input_format, task)
    text, spans = mark_text(text, spans, pairs)
    encoded = dict(tokenizer(text, entity_spans=spans, **encode))
    ids = encoded["input_ids"][0].tolist() if isinstance(encoded["input_ids"], torch.Tensor) else encoded["input_ids"]
    encoded["marker_positions"] = torch.tensor([marker_positions(ids, tokenizer, pairs)])
    return encoded, spans


__all__ = [
    "INPUT_FORMATS",
    "MARKERS",
    "MarkedEntityTaskProcessor",
    "add_marker_tokens",
    "input_format_of",
    "mark_text",
    "marked_inputs",
    "marker_positions",
    "markers_of",
]
