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
"""Entity-task examples (``records_entity``) -> model inputs of the entity heads, with LUKE's tokenizer.

As LUKE fine-tunes them: typing marks the mention with the `[MASK]` entity, relation classification the head with
`[MASK]` and the tail with `[MASK2]`, NER gives every candidate word span up to `max_span_length` words its own
`[MASK]` entity (in chunks of `max_entities`). The tokenizer (`LukeTokenizer`) builds word ids, entity ids and
mention positions (`entity_position_ids`, GESA's mention links); this module adds the labels, NER's span ends and
GESA's entity-graph inputs (`graph_inputs`: sentence edges between the entities, match edges between equal mentions).

Flat module: copied next to every saved checkpoint, so it imports only its siblings and third-party packages.
"""

from __future__ import annotations

import bisect
import re
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import torch
from transformers import PreTrainedTokenizerBase

from .processing_base_gesa import ProcessorBase
from .records_entity import NerExample, RelationExample, TypingExample

TASKS = ("entity_typing", "relation_classification", "ner")
# NER's label 0: a candidate span that is no entity
NO_ENTITY = "O"
# GESA's entity-graph inputs the features carry (`graph_inputs`); padded entities get -1 (no sentence, no string)
GRAPH_INPUTS = ("entity_sentence_ids", "entity_string_ids")


def graph_inputs(mention_texts: Sequence[str]) -> dict[str, list[int]]:
    """GESA's entity-graph inputs of one single-sentence example (a TACRED or CoNLL-2003 sentence, an Open Entity
    context): every mention lies in sentence 0 (`entity_sentence_ids`: a sentence edge between every two entities),
    and mentions of the same text (case-folded) share an `entity_string_ids` value (a match edge). LUKE
    (`ablation="luke"`) reads neither."""
    ids: dict[str, int] = {}
    return {
        "entity_sentence_ids": [0] * len(mention_texts),
        "entity_string_ids": [ids.setdefault(" ".join(text.casefold().split()), len(ids)) for text in mention_texts],
    }


def check_max_length(max_length: int) -> None:
    """Refuse a ``max_length`` that is not a positive integer (``ValueError``)."""
    if isinstance(max_length, bool) or not isinstance(max_length, int) or max_length < 1:
        raise ValueError(f"max_length must be a positive integer, got {max_length!r}")


def most_that_fit(
    encode: Callable[[int], dict[str, Any]], low: int, high: int, best: dict[str, Any], max_length: int
) -> tuple[dict[str, Any], int]:
    """The largest ``n`` in ``[low, high]`` whose ``encode(n)`` fits ``max_length`` word tokens, by bisection (the
    encoding grows with ``n``; ``best = encode(low)``, which fits), with that encoding: ``(encoding, n)``."""
    while low < high:
        middle = (low + high + 1) // 2
        candidate = encode(middle)
        if len(candidate["input_ids"]) <= max_length:
            low, best = middle, candidate
        else:
            high = middle - 1
    return best, low


def encode_within(
    tokenizer: PreTrainedTokenizerBase,
    text: str,
    spans: Sequence[tuple[int, int]],
    entities: Sequence[str],
    max_length: int,
    where: str = "the input",
) -> tuple[dict[str, Any], bool]:
    """LUKE's encoding of ``text`` with its entity ``spans`` (character offsets) in at most ``max_length`` word tokens,
    special tokens included, and whether it was cut: the whole text when it fits, else the longest window of whole
    words around the mentions (as many words kept on each side; ``LukeTokenizer`` cannot truncate with entities).

    Raises:
        ValueError: the mentions themselves, from the first to the last, take more than ``max_length`` tokens.
    """
    check_max_length(max_length)

    def encode(start: int, end: int) -> dict[str, Any]:
        moved = [(a - start, b - start) for a, b in spans]
        return dict(tokenizer(text[start:end], entity_spans=moved, entities=list(entities)))

    encoded = encode(0, len(text))
    if len(encoded["input_ids"]) <= max_length or not spans:
        return encoded, False
    words = [(match.start(), match.end()) for match in re.finditer(r"\S+", text)]
    starts, ends = [a for a, _ in words], [b for _, b in words]
    first = max(0, bisect.bisect_right(starts, min(a for a, _ in spans)) - 1)  # the word holding the first mention
    last = min(len(words), bisect.bisect_left(ends, max(b for _, b in spans)) + 1)  # past the last mention's word

    def window(context: int) -> dict[str, Any]:
        left, right = max(0, first - context), min(len(words), last + context)
        return encode(min(starts[left], min(a for a, _ in spans)), max(ends[right - 1], max(b for _, b in spans)))

    best = window(0)
    if len(best["input_ids"]) > max_length:
        raise ValueError(
            f"{where}: the mentions take {len(best['input_ids'])} tokens from the first to the last, more than "
            f"max_length={max_length}; raise max_length (--max_seq_length) or give mentions closer together"
        )
    # the most context words on each side that still fit
    return most_that_fit(window, 0, max(first, len(words) - last), best, max_length)[0], True


def encode_word_prefix(
    tokenizer: PreTrainedTokenizerBase,
    tokens: Sequence[str],
    spans: Sequence[tuple[int, int]],
    entities: Sequence[str],
    max_length: int,
) -> tuple[dict[str, Any], int]:
    """LUKE's encoding of the longest prefix of the words ``tokens`` that fits ``max_length`` word tokens (special
    tokens included), with the word ``spans`` (exclusive ends) that lie inside it; and how many words it kept
    (``len(tokens)``: all). What pre-training reads (every mention an entity), where ``encode_within`` centres one
    example's few mentions."""
    check_max_length(max_length)

    def encode(words: int) -> dict[str, Any]:
        text, offsets = char_spans(tokens[:words])
        inside = [(start, end) for start, end in spans if end <= words]
        return dict(
            tokenizer(
                text,
                entity_spans=[(offsets[start][0], offsets[end - 1][1]) for start, end in inside],
                entities=[entity for entity, (_, end) in zip(entities, spans, strict=True) if end <= words],
            )
        )

    best = encode(len(tokens))
    if len(best["input_ids"]) <= max_length:
        return best, len(tokens)
    return most_that_fit(encode, 0, len(tokens) - 1, encode(0), max_length)  # the most words that still fit


def char_spans(tokens: Sequence[str]) -> tuple[str, list[tuple[int, int]]]:
    """The tokens joined by single spaces and each token's character span in that text."""
    offsets, position = [], 0
    for token in tokens:
        offsets.append((position, position + len(token)))
        position += len(token) + 1
    return " ".join(tokens), offsets


class EntityTaskProcessor(ProcessorBase):
    """Encode one task's examples for its head and collate them into batches (calling the processor collates).

    Args:
        tokenizer: a LUKE tokenizer (takes `entity_spans` and `entities`), e.g. the checkpoint's own.
        task: `entity_typing`, `relation_classification` or `ner`.
        label_names: the label list; index = the head's class id (NER: `O` first, the no-entity class).
        max_length: word tokens per feature; max_span_length / max_entities: NER's candidate spans.

    `save_pretrained` writes the settings (the label list included), the tokenizer and this code.
    """

    def __init__(
        self,
        tokenizer: PreTrainedTokenizerBase | None = None,
        task: str = "entity_typing",
        label_names: Sequence[str] = (),
        max_length: int = 128,
        max_span_length: int = 8,
        max_entities: int = 64,
    ) -> None:
        if tokenizer is None:
            raise ValueError("EntityTaskProcessor needs a LUKE tokenizer (it takes entity_spans and entities)")
        if task not in TASKS:
            raise ValueError(f"task {task!r} is not an entity task; choose one of {TASKS}.")
        for name, value, least in (("max_length", max_length, 8), ("max_span_length", max_span_length, 1),
                                   ("max_entities", max_entities, 1)):  # fmt: skip
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise ValueError(f"EntityTaskProcessor: {name} must be an integer >= {least}, got {value!r}")
        if task == "ner" and (not label_names or label_names[0] != NO_ENTITY):
            raise ValueError(
                f"NER label_names must start with {NO_ENTITY!r} (the no-entity class), got {label_names!r}."
            )
        super().__init__(tokenizer)
        self.task, self.label_names = task, list(label_names)
        self.label2id = {name: i for i, name in enumerate(self.label_names)}
        self.max_length, self.max_span_length, self.max_entities = max_length, max_span_length, max_entities

    @staticmethod
    def label_names_of(task: str, examples: Sequence[Any]) -> list[str]:
        """Every label the examples use, sorted (NER: `O` then the entity types)."""
        if task == "entity_typing":
            return sorted({label for example in examples for label in example.labels})
        if task == "relation_classification":
            return sorted({example.relation for example in examples})
        return [NO_ENTITY, *sorted({kind for example in examples for *_, kind in example.spans})]

    def _label_id(self, name: str, example_id: str) -> int:
        if name not in self.label2id:
            raise ValueError(
                f"example {example_id!r}: label {name!r} is not among the model's {len(self.label_names)} labels "
                f"({self.label_names[:8]}...); train with a label list that includes it (config.id2label)."
            )
        return self.label2id[name]

    cap_warnings = {
        "examples_cut": (
            "{examples_cut} examples longer than max_length={max_length} tokens kept only the words around their "
            "mentions (raise --max_seq_length to keep more)"
        ),
        "gold_spans_too_long": (
            "{gold_spans_too_long} gold entity spans are longer than max_span_length={max_span_length} words: no "
            "candidate span covers them, so they are never trained on or predicted (raise --max_span_length)"
        ),
    }

    def _encode(
        self, tokens: Sequence[str], spans: Sequence[tuple[int, int]], entities: Sequence[str], example_id: str = ""
    ) -> dict:
        text, offsets = char_spans(tokens)
        entity_spans = [(offsets[start][0], offsets[end - 1][1]) for start, end in spans]
        feature, cut = encode_within(
            self.tokenizer, text, entity_spans, entities, self.max_length, f"example {example_id!r}"
        )
        self.stats["examples_cut"] += int(cut)
        kept = len(feature["entity_ids"])
        return dict(feature, **graph_inputs([" ".join(tokens[start:end]) for start, end in spans[:kept]]))

    def encode(self, example: TypingExample | RelationExample | NerExample, index: int = 0) -> list[dict]:
        """The features of one example (NER: one per chunk of candidate spans), labels included."""
        if self.task == "entity_typing":
            feature = self._encode(example.tokens, [(example.start, example.end)], ["[MASK]"], example.id)
            labels = [0.0] * len(self.label_names)
            for name in example.labels:
                labels[self._label_id(name, example.id)] = 1.0
            return [dict(feature, labels=labels, example_index=index)]
        if self.task == "relation_classification":
            feature = self._encode(example.tokens, [example.head, example.tail], ["[MASK]", "[MASK2]"], example.id)
            return [dict(feature, labels=self._label_id(example.relation, example.id), example_index=index)]
        gold = {(start, end): kind for start, end, kind in example.spans}
        self.stats["gold_spans_too_long"] += sum(end - start > self.max_span_length for start, end in gold)
        candidates = [
            (start, end)
            for start in range(len(example.tokens))
            for end in range(start + 1, min(start + self.max_span_length, len(example.tokens)) + 1)
        ]
        features = []
        chunks = [
            candidates[first : first + self.max_entities] for first in range(0, len(candidates), self.max_entities)
        ]
        while chunks:
            chunk = chunks.pop(0)
            try:
                feature = self._encode(example.tokens, chunk, ["[MASK]"] * len(chunk), example.id)
            except ValueError:
                if len(chunk) == 1:
                    raise
                # the chunk's spans reach further than max_length tokens: two smaller chunks, each in its own window
                chunks[:0] = [chunk[: len(chunk) // 2], chunk[len(chunk) // 2 :]]
                continue
            positions = feature["entity_position_ids"]
            starts = [row[0] for row in positions]
            ends = [max(p for p in row if p >= 0) for row in positions]
            labels = [self._label_id(gold.get(span, NO_ENTITY), example.id) for span in chunk]
            features.append(
                dict(
                    feature,
                    entity_start_positions=starts,
                    entity_end_positions=ends,
                    labels=labels,
                    example_index=index,
                    spans=chunk,
                )
            )
        return features

    def encode_all(self, examples: Sequence[Any]) -> list[dict]:
        """The features of every example; what was cut (long examples, NER gold spans over max_span_length) is
        counted in ``stats`` and logged."""
        before = Counter(self.stats)
        features = []
        for index, example in enumerate(examples):
            cut = self.stats["examples_cut"]
            features += self.encode(example, index)
            self.stats["examples_cut"] = cut + int(self.stats["examples_cut"] > cut)  # once per example (NER: chunks)
        self._report(self.stats - before, counted=True)
        return features

    def collate(self, features: Sequence[dict]) -> dict[str, torch.Tensor]:
        """Pad a batch: the tokenizer pads words and entities; labels pad with -100, span ends with 0, graph inputs -1."""
        own = ("labels", "entity_start_positions", "entity_end_positions", "example_index", "spans", *GRAPH_INPUTS)
        batch = self.tokenizer.pad(
            [{k: v for k, v in feature.items() if k not in own} for feature in features], return_tensors="pt"
        )
        batch = dict(batch)
        width = batch["entity_ids"].size(1)
        for name in GRAPH_INPUTS:
            if name in features[0]:
                batch[name] = torch.tensor([f[name] + [-1] * (width - len(f[name])) for f in features])
        if self.task == "ner":
            for name, fill in (("labels", -100), ("entity_start_positions", 0), ("entity_end_positions", 0)):
                batch[name] = torch.tensor([f[name] + [fill] * (width - len(f[name])) for f in features])
        elif "labels" in features[0]:
            dtype = torch.float if self.task == "entity_typing" else torch.long
            batch["labels"] = torch.tensor([f["labels"] for f in features], dtype=dtype)
        return batch

    __call__ = collate


EntityTaskProcessor.register_for_auto_class("AutoProcessor")


def decode_ner(
    features: Sequence[dict], logits: Sequence[Any], label_names: Sequence[str], num_examples: int
) -> list[list[tuple[int, int, str]]]:
    """Predicted spans per example: LUKE's greedy decoding (best-scoring non-`O` spans first, no overlaps)."""
    scored: list[list[tuple[float, int, int, str]]] = [[] for _ in range(num_examples)]
    for feature, feature_logits in zip(features, logits, strict=True):
        for (start, end), row in zip(feature["spans"], feature_logits, strict=False):
            row = torch.as_tensor(row)
            label = int(row.argmax())
            if label != 0:
                scored[feature["example_index"]].append((float(row[label]), start, end, label_names[label]))
    predictions = []
    for candidates in scored:
        taken: list[tuple[int, int, str]] = []
        for _, start, end, kind in sorted(candidates, key=lambda c: -c[0]):
            if all(end <= s or start >= e for s, e, _ in taken):
                taken.append((start, end, kind))
        predictions.append(sorted(taken))
    return predictions


__all__ = [
    "GRAPH_INPUTS",
    "NO_ENTITY",
    "TASKS",
    "EntityTaskProcessor",
    "char_spans",
    "decode_ner",
    "encode_within",
    "encode_word_prefix",
    "graph_inputs",
]
