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
"""Transformer-XH graphs of text sequences from ReCoRD and HotpotQA records, and their collator.

ReCoRD (spec `variants.md`): one graph per query. Nodes are the passage's sentences (spaCy's rule-based sentencizer on
the article, each `@highlight` line its own sentence; a boundary inside a candidate mention is dropped), each node
`<s> Q' </s> </s> S' </s>` with the query (`@placeholder` -> `[PLC]`) and the sentence with every candidate mention
wrapped in `[ENT]` markers. Entities of a node: its placeholder (on `[PLC]`) and its mentions; `entity_string_ids` are
graph-wide candidate indices (one per normalised candidate string) and `labels` mark the gold ones. Every node's
`question_string_ids` mark the query words that name a candidate (`candidates_gesa.string_occurrences`, the rule of
`GesaProcessor`): the mention label links the candidate's entities to them too (paper 3.3; preset
`no_question_mentions` drops those links, `luke` never reads them). Edges join two sentences that share a candidate
string (both directions).

HotpotQA (distractor layout, HF rows: `question`, `answer`, `supporting_facts`, `context.title/sentences`): one graph
per question, one node per paragraph, `<s> question </s> </s> title: paragraph </s>`. Edges, as Wikipedia links are
not in the distractor data, follow title mentions (paragraph tau "links to" eta when tau mentions eta's title); a
retrieved FullWiki graph's `hyperlinks` ([from title, to title]) take the place of the mentions. `hotpot_edges`:

- `"title_mention"` (default): along each link, the LINKED paragraph attends to the LINKING one, as the authors'
  released code (an edge `start -> end` where start links to end, DGL sending messages from source to destination)
  and the paper's narrative (2.2: "d3 ... gathering information from its neighbor d1 using the hop attention
  d1 -> d3"; the answer document is reached from the bridge);
- `"title_mention_eq7"`: the literal reading of Eq. 7 with `e_tau,eta = 1` when tau links to eta: the linking
  paragraph attends to the linked one;
- `"bidirectional"` (both) or `"full"` (every pair).

`title_mentions` finds the links once for the edges and for the anchor sentences (`processing_xh_tasks`). Labels: the
relevant node is the supporting paragraph holding the answer, with the answer's token span in it (yes/no answers:
span -100).

Features are python lists per graph; `XhGraphCollator` pads them to `(G, N, L)` tensors for `modeling_xh`.

Flat module: copied next to every saved checkpoint, so it imports only third-party packages and its siblings.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from tokenizers import AddedToken
from transformers import PreTrainedTokenizerBase

from .candidates_gesa import normalize_entity_string, string_occurrences, token_string_ids
from .extras_gesa import require
from .processing_base_gesa import ProcessorBase
from .records_gesa import RECORD_HIGHLIGHT, RECORD_PLACEHOLDER, RecordExample, check_example, to_record_examples
from .structure_gesa import LUKE_MASK_ENTITY_ID
from .windows_gesa import ADDED_TOKEN_SOURCES, ENTITY_MARKER_TOKEN, PLACEHOLDER_TOKEN

HOTPOT_EDGES = ("title_mention", "title_mention_eq7", "bidirectional", "full")
_PARENTHETICAL = re.compile(r"\s*\([^)]*\)\s*$")
_SPACY: dict[str, Any] = {}


def _sentencizer() -> Any:
    if "nlp" not in _SPACY:
        spacy = require("spacy", "XhProcessor's sentence splitting (spaCy's rule-based sentencizer)")
        nlp = spacy.blank("en")
        nlp.add_pipe("sentencizer")
        _SPACY["nlp"] = nlp
    return _SPACY["nlp"]


def _whitespace_to_spaces(text: str) -> str:
    """Every whitespace character becomes one space (offsets unchanged)."""
    return "".join(" " if ch.isspace() else ch for ch in text)


def record_sentences(passage: str, spans: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """Exclusive character ranges of the sentences of a ReCoRD passage.

    The article body is split by spaCy's rule-based sentencizer; every `@highlight` line is one sentence; the
    `@highlight` markers belong to no sentence. A boundary falling strictly inside a mention `spans` is removed, so
    every mention lies in one sentence.
    """
    pieces = []  # (start, end) of the body and of each highlight line
    marker = re.compile(re.escape(RECORD_HIGHLIGHT) + r"\s*")
    cursor = 0
    for match in marker.finditer(passage):
        pieces.append((cursor, match.start(), cursor == 0))
        cursor = match.end()
    pieces.append((cursor, len(passage), cursor == 0))
    sentences = []
    nlp = _sentencizer()
    for start, end, is_body in pieces:
        text = passage[start:end]
        if not text.strip():
            continue
        if is_body:
            for sentence in nlp(text).sents:
                sentences.append([start + sentence.start_char, start + sentence.end_char])
        else:
            sentences.append([start, end])
    merged: list[list[int]] = []
    for sentence in sentences:
        if merged and any(s < sentence[0] < e for s, e in spans):
            merged[-1][1] = sentence[1]
        else:
            merged.append(sentence)
    return [(s, e) for s, e in merged]


def _strip_title(title: str) -> str:
    return normalize_entity_string(_PARENTHETICAL.sub("", title))


def title_mentions(titles: Sequence[str], paragraphs: Sequence[Sequence[str]]) -> dict[tuple[int, int], list[int]]:
    """The links of a distractor graph: `{(a, b): sentences of a naming b}` for every paragraph a whose text
    (`title: sentences`) names paragraph b's title (without a trailing parenthetical; normalised, whole words) as in
    `normalize_entity_string`. The sentence list is empty when only a's title names b."""
    keys = [_strip_title(title) for title in titles]
    texts = [
        normalize_entity_string(_whitespace_to_spaces(f"{t}: {''.join(s)}"))
        for t, s in zip(titles, paragraphs, strict=True)
    ]
    links: dict[tuple[int, int], list[int]] = {}
    for a, text in enumerate(texts):
        for b, key in enumerate(keys):
            if a == b or not key or f" {key} " not in f" {text} ":
                continue
            links[(a, b)] = [i for i, sentence in enumerate(paragraphs[a])
                             if f" {key} " in f" {normalize_entity_string(sentence)} "]  # fmt: skip
    return links


def hop_adjacency(count: int, links: Iterable[tuple[int, int]], edges: str) -> list[list[int]]:
    """`(count, count)` 0/1 rows: `[tau][eta] = 1` when node tau attends to node eta under `edges` (`HOTPOT_EDGES`,
    module docstring), `links` the `(a, b)` pairs where a links to b; never a node to itself."""
    linked = set(links)

    def reads(tau: int, eta: int) -> bool:
        if edges == "full":
            return True
        if edges == "title_mention":  # the linked paragraph reads the linking one (released code)
            return (eta, tau) in linked
        if edges == "title_mention_eq7":  # Eq. 7 read literally: the linking paragraph reads the linked one
            return (tau, eta) in linked
        return (eta, tau) in linked or (tau, eta) in linked

    return [[int(tau != eta and reads(tau, eta)) for eta in range(count)] for tau in range(count)]


@dataclass
class XhGraphCollator:
    """Pads graph features to tensors for `modeling_xh` (python lists in, torch tensors out).

    Returns `input_ids`, `attention_mask`, `global_attention_mask` (and `question_string_ids`, -1 padded, when the
    features have it): `(G, N, L)`; with entities `entity_ids`,
    `entity_attention_mask`, `placeholder_entity_mask`, `entity_string_ids`, `entity_sentence_ids`: `(G, N, E)` and
    `entity_position_ids` `(G, N, E, M)`; `node_mask` `(G, N)`; `node_adjacency` `(G, N, N)`; and the labels present:
    `labels` `(G, C)` (ReCoRD, 0-padded), `relevant_node`, `start_positions`, `end_positions` `(G,)` (HotpotQA),
    `node_labels` `(G, N)`. String columns (`example_id`, `candidate_texts`, ...) are kept as lists when
    `keep_eval_columns`.
    """

    pad_token_id: int = 1
    entity_id: int = LUKE_MASK_ENTITY_ID
    keep_eval_columns: bool = False

    def __call__(self, features: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        if not features:
            raise ValueError("XhGraphCollator got an empty batch")
        graphs = len(features)
        nodes = max(len(f["input_ids"]) for f in features)
        length = max(len(ids) for f in features for ids in f["input_ids"])
        batch: dict[str, Any] = {}
        input_ids = torch.full((graphs, nodes, length), self.pad_token_id, dtype=torch.long)
        attention_mask = torch.zeros(graphs, nodes, length, dtype=torch.long)
        global_mask = torch.zeros(graphs, nodes, length, dtype=torch.long)
        question_strings = (
            torch.full((graphs, nodes, length), -1, dtype=torch.long) if "question_string_ids" in features[0] else None
        )
        node_mask = torch.zeros(graphs, nodes, dtype=torch.long)
        adjacency = torch.zeros(graphs, nodes, nodes, dtype=torch.long)
        for g, feature in enumerate(features):
            count = len(feature["input_ids"])
            node_mask[g, :count] = 1
            adjacency[g, :count, :count] = torch.tensor(feature["node_adjacency"], dtype=torch.long).view(count, count)
            for n, ids in enumerate(feature["input_ids"]):
                input_ids[g, n, : len(ids)] = torch.tensor(ids)
                attention_mask[g, n, : len(ids)] = 1
                global_mask[g, n, : len(ids)] = torch.tensor(feature["global_attention_mask"][n])
                if question_strings is not None:
                    question_strings[g, n, : len(ids)] = torch.tensor(feature["question_string_ids"][n])
        batch.update(
            input_ids=input_ids,
            attention_mask=attention_mask,
            global_attention_mask=global_mask,
            node_mask=node_mask,
            node_adjacency=adjacency,
        )
        if question_strings is not None:
            batch["question_string_ids"] = question_strings
        if "entity_position_ids" in features[0]:
            entities = max(len(e) for f in features for e in f["entity_position_ids"])
            mention = max((len(p) for f in features for e in f["entity_position_ids"] for p in e), default=1)
            entity_attention = torch.zeros(graphs, nodes, entities, dtype=torch.long)
            positions = torch.full((graphs, nodes, entities, mention), -1, dtype=torch.long)
            padded = {
                name: torch.full((graphs, nodes, entities), pad, dtype=torch.long)
                for name, pad in (
                    ("placeholder_entity_mask", 0),
                    ("entity_string_ids", -1),
                    ("entity_sentence_ids", -1),
                )
            }
            for g, feature in enumerate(features):
                for n, node_positions in enumerate(feature["entity_position_ids"]):
                    entity_attention[g, n, : len(node_positions)] = 1
                    for e, words in enumerate(node_positions):
                        positions[g, n, e, : len(words)] = torch.tensor(words)
                    for name, values in padded.items():
                        values[g, n, : len(node_positions)] = torch.tensor(feature[name][n], dtype=torch.long)
            batch.update(
                entity_ids=torch.where(entity_attention.bool(), self.entity_id, 0),
                entity_attention_mask=entity_attention,
                entity_position_ids=positions,
                **padded,
            )
        if "labels" in features[0]:
            candidates = max(len(f["labels"]) for f in features)
            labels = torch.zeros(graphs, max(candidates, 1))
            for g, feature in enumerate(features):
                labels[g, : len(feature["labels"])] = torch.tensor(feature["labels"], dtype=torch.float)
            batch["labels"] = labels
        for name in ("relevant_node", "start_positions", "end_positions"):
            if name in features[0]:
                batch[name] = torch.tensor([f[name] for f in features], dtype=torch.long)
        if "node_labels" in features[0]:
            node_labels = torch.zeros(graphs, nodes, dtype=torch.long)
            for g, feature in enumerate(features):
                node_labels[g, : len(feature["node_labels"])] = torch.tensor(feature["node_labels"])
            batch["node_labels"] = node_labels
        if self.keep_eval_columns:
            for name in ("example_id", "candidate_texts", "answers", "titles", "answer"):
                if name in features[0]:
                    batch[name] = [f[name] for f in features]
        return batch


class XhProcessor(ProcessorBase):
    """Builds Transformer-XH graph features from ReCoRD and HotpotQA records.

    Args:
        tokenizer: LUKE's (or RoBERTa's) word tokenizer; the `[HL]`, `[PLC]`, `[ENT]` word tokens are added exactly as
            `GesaProcessor` adds them, so both processors give the same ids.
        max_node_length: word tokens per node, special tokens included; longer sentences/paragraphs are truncated (a
            mention or answer cut off is dropped, and counted in `stats`).
        max_query_length: query tokens kept per node (LUKE: 90), around `[PLC]`.
        max_nodes: nodes kept per graph (the first ones); `None` keeps all.
        hotpot_edges: `"title_mention"` (the linked paragraph reads the linking one, as the released code),
            `"title_mention_eq7"` (the literal reading of Eq. 7: the linking paragraph reads the linked one),
            `"bidirectional"` or `"full"` (see the module docstring).
        entity_mask_id: entity id of every entity token (`[MASK]`, LUKE's ReCoRD setting).

    `save_pretrained` writes the settings, the tokenizer and this code; `stats` counts the caps of the encode calls
    (each logged, `ProcessorBase`).
    """

    # version 2: `"title_mention"` means the released code's direction; a file of version 1 (no version key) meant
    # Eq. 7's literal reading, which it keeps (`upgrade_settings`)
    settings_version = 2

    cap_warnings = {
        "truncated_queries": "{truncated_queries} queries cut to max_query_length={max_query_length} tokens",
        "truncated_nodes": "{truncated_nodes} node texts cut to max_node_length={max_node_length} tokens",
        "truncated_mentions": (
            "{truncated_mentions} candidate mentions cut off with their node's text (max_node_length="
            "{max_node_length}): not scored there"
        ),
        "truncated_graphs": "{truncated_graphs} graphs cut to their first max_nodes={max_nodes} nodes",
        "truncated_answers": (
            "{truncated_answers} answer spans cut off with their node's text (max_node_length={max_node_length})"
        ),
    }

    def __init__(
        self,
        tokenizer: PreTrainedTokenizerBase | None = None,
        max_node_length: int = 256,
        max_query_length: int = 90,
        max_nodes: int | None = None,
        hotpot_edges: str = "title_mention",
        entity_mask_id: int | None = None,
    ) -> None:
        if tokenizer is None:
            raise ValueError(f"{type(self).__name__} needs a tokenizer (LukeTokenizer or RoBERTa's)")
        if hotpot_edges not in HOTPOT_EDGES:
            raise ValueError(f"hotpot_edges must be one of {HOTPOT_EDGES}, got {hotpot_edges!r}.")
        if max_node_length < max_query_length + 8:
            raise ValueError(
                f"max_node_length={max_node_length} leaves no room for the node text after max_query_length="
                f"{max_query_length} query tokens and the special tokens."
            )
        super().__init__(tokenizer)
        self.max_node_length = max_node_length
        self.max_query_length = max_query_length
        self.max_nodes = max_nodes
        self.hotpot_edges = hotpot_edges
        vocab = getattr(tokenizer, "entity_vocab", None) or {}
        self.entity_mask_id = (
            entity_mask_id if entity_mask_id is not None else vocab.get("[MASK]", LUKE_MASK_ENTITY_ID)
        )
        tokenizer.add_tokens(
            [
                AddedToken(token, lstrip=True, rstrip=False, single_word=False, normalized=False, special=True)
                for token in ADDED_TOKEN_SOURCES
            ],
            special_tokens=True,
        )
        self.placeholder_id = tokenizer.convert_tokens_to_ids(PLACEHOLDER_TOKEN)
        self.marker_id = tokenizer.convert_tokens_to_ids(ENTITY_MARKER_TOKEN)

    @classmethod
    def upgrade_settings(cls, saved: dict[str, Any], version: int) -> dict[str, Any]:
        """A checkpoint saved before version 2 was trained with `"title_mention"` read as Eq. 7 literally (the linking
        paragraph reading the linked one): it keeps that graph, now named `"title_mention_eq7"`."""
        if version < 2 and saved.get("hotpot_edges", "title_mention") == "title_mention":
            saved = {**saved, "hotpot_edges": "title_mention_eq7"}
        return saved

    def added_token_sources(self) -> dict[int, int]:
        """New word token id -> existing token id that initialises it (as `GesaProcessor.added_token_sources`)."""
        return {
            self.tokenizer.convert_tokens_to_ids(new): self.tokenizer.convert_tokens_to_ids(source)
            for new, source in ADDED_TOKEN_SOURCES.items()
        }

    def get_data_collator(self, keep_eval_columns: bool = False) -> XhGraphCollator:
        return XhGraphCollator(self.tokenizer.pad_token_id, self.entity_mask_id, keep_eval_columns)

    def _count(self, key: str) -> None:
        self.stats[key] += 1

    def _reported(self, features: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
        """One encode call's features (a generator, run here), then every cap that applied to them logged once (their
        counts are already in `stats`)."""
        before = Counter(self.stats)
        encoded = list(features)
        self._report(self.stats - before, counted=True)
        return encoded

    # ------------------------------------------------------------------ tokenisation

    def _tokens(self, text: str, leading_space: bool) -> list[int]:
        text = text.strip()
        if not text:
            return []
        return self.tokenizer.convert_tokens_to_ids(self.tokenizer.tokenize((" " if leading_space else "") + text))

    def _encode_with_spans(
        self, text: str, spans: Sequence[tuple[int, int]], markers: bool
    ) -> tuple[list[int], list[list[int]]]:
        """Word ids of `text` and, per span (exclusive, sorted, disjoint), the positions of its tokens.

        With `markers`, each span is wrapped in `[ENT]` tokens. Whitespace before a span is the span's leading space.
        """
        text = _whitespace_to_spaces(text)
        ids: list[int] = []
        positions: list[list[int]] = []
        cursor = 0
        for start, end in spans:
            before = text[cursor:start]
            ids += self._tokens(before, leading_space=bool(ids) and before[:1].isspace())
            if markers:
                ids.append(self.marker_id)
            leading = bool(ids) and start > 0 and text[start - 1].isspace()
            mention = self._tokens(text[start:end], leading_space=leading)
            positions.append(list(range(len(ids), len(ids) + len(mention))))
            ids += mention
            if markers:
                ids.append(self.marker_id)
            cursor = end
        rest = text[cursor:]
        ids += self._tokens(rest, leading_space=bool(ids) and rest[:1].isspace())
        return ids, positions

    def _query_ids(self, query: str, candidate_texts: Sequence[str] = ()) -> tuple[list[int], int, list[int]]:
        """Query word ids with `[PLC]`, cut to `max_query_length` around it; returns (ids, index of `[PLC]`, string
        ids): per query token the index in `candidate_texts` of the candidate occurrence it lies in, -1 elsewhere
        (`candidates_gesa.string_occurrences`: the candidates' normalisation and whole-word rule, matched on text,
        the placeholder never)."""
        if query.count(RECORD_PLACEHOLDER) != 1:
            raise ValueError(f"a ReCoRD query needs exactly one {RECORD_PLACEHOLDER}: {query!r}")
        query = _whitespace_to_spaces(query)
        left, right = query.split(RECORD_PLACEHOLDER)
        right_start = len(left) + len(RECORD_PLACEHOLDER)
        occurrences = string_occurrences(
            query, candidate_texts, range(len(candidate_texts)), [(len(left), right_start)]
        )
        left_ids, left_strings = self._query_tokens(left, False, 0, occurrences)
        right_ids, right_strings = self._query_tokens(right, right[:1].isspace(), right_start, occurrences)
        ids = left_ids + [self.placeholder_id] + right_ids
        strings = left_strings + [-1] + right_strings
        plc = len(left_ids)
        if len(ids) > self.max_query_length:
            self._count("truncated_queries")
            start = max(0, min(plc - self.max_query_length // 2, len(ids) - self.max_query_length))
            ids = ids[start : start + self.max_query_length]
            strings = strings[start : start + self.max_query_length]
            plc -= start
        return ids, plc, strings

    def _query_tokens(
        self, text: str, leading_space: bool, base: int, occurrences: Sequence[tuple[int, int, int]]
    ) -> tuple[list[int], list[int]]:
        """`_tokens(text, leading_space)` and each token's string id (`candidates_gesa.token_string_ids`) from the
        backend's offsets, `text` starting at character `base` of the query the `occurrences` were found in."""
        stripped = text.strip()
        if not stripped:
            return [], []
        prefix = " " if leading_space else ""
        encoding = self._tokenizer_backend().encode(prefix + stripped, add_special_tokens=False)
        # offsets of `prefix + stripped` -> offsets in the query
        shift = base + len(text) - len(text.lstrip()) - len(prefix)
        offsets = [(start + shift, end + shift) for start, end in encoding.offsets]
        return list(encoding.ids), token_string_ids(offsets, occurrences)

    def _node(self, question_ids: list[int], text_ids: list[int]) -> tuple[list[int], list[int], int]:
        """`<s> Q </s> </s> T </s>` (T truncated); returns ids, global attention mask and the offset of T."""
        tokenizer = self.tokenizer
        room = self.max_node_length - len(question_ids) - 4
        if len(text_ids) > room:
            self._count("truncated_nodes")
            text_ids = text_ids[:room]
        ids = [tokenizer.cls_token_id, *question_ids, tokenizer.sep_token_id, tokenizer.sep_token_id, *text_ids]
        ids.append(tokenizer.sep_token_id)
        global_mask = [1] + [2] * len(question_ids) + [0] * (len(ids) - 1 - len(question_ids))
        return ids, global_mask, len(question_ids) + 3

    # ------------------------------------------------------------------ ReCoRD

    def encode_record_graphs(self, records: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """One graph feature per query of ReCoRD records (original/SuperGLUE records or flattened Hub rows)."""
        return self._reported(self.encode_record_example(example) for example in to_record_examples(records))

    def encode_record_example(self, example: RecordExample) -> dict[str, Any]:
        """The XH graph of one ReCoRD query (`processing_gesa.RecordExample`, exclusive spans)."""
        check_example(example)
        if not example.entity_spans:
            raise ValueError(f"ReCoRD example {example.example_id!r}: XH graphs need annotated candidate entities.")
        passage = example.passage
        spans = sorted(set(example.entity_spans))
        normalized = [normalize_entity_string(passage[s:e]) for s, e in spans]
        candidate_index: dict[str, int] = {}
        candidate_texts: list[str] = []
        for (start, end), key in zip(spans, normalized, strict=True):
            if key not in candidate_index:
                candidate_index[key] = len(candidate_texts)
                candidate_texts.append(passage[start:end])
        query_ids, plc, query_strings = self._query_ids(example.query, candidate_texts)
        # every node carries the query: its words that name a candidate are that candidate's mentions too (paper 3.3)
        sentences = record_sentences(passage, spans)
        if self.max_nodes is not None and len(sentences) > self.max_nodes:
            self._count("truncated_graphs")
            sentences = sentences[: self.max_nodes]
        feature: dict[str, list] = {name: [] for name in (
            "input_ids", "global_attention_mask", "entity_position_ids", "placeholder_entity_mask",
            "entity_string_ids", "entity_sentence_ids", "question_string_ids",
        )}  # fmt: skip
        node_strings: list[set[int]] = []
        for node, (s_start, s_end) in enumerate(sentences):
            inside = [(i, s, e) for i, (s, e) in enumerate(spans) if s_start <= s and e <= s_end]
            local = [(s - s_start, e - s_start) for _, s, e in inside]
            text_ids, mention_positions = self._encode_with_spans(passage[s_start:s_end], local, markers=True)
            ids, global_mask, offset = self._node(query_ids, text_ids)
            positions = [[plc + 1]]
            strings, sentence_ids, placeholder = [-1], [-1], [1]
            kept = set()
            for (index, _, _), words in zip(inside, mention_positions, strict=True):
                words = [offset + w for w in words]
                if not words or words[-1] >= len(ids) - 1:  # cut off by truncation (ids[-1] is </s>)
                    self._count("truncated_mentions")
                    continue
                string_id = candidate_index[normalized[index]]
                positions.append(words)
                strings.append(string_id)
                sentence_ids.append(node)
                placeholder.append(0)
                kept.add(string_id)
            feature["input_ids"].append(ids)
            feature["global_attention_mask"].append(global_mask)
            feature["entity_position_ids"].append(positions)
            feature["placeholder_entity_mask"].append(placeholder)
            feature["entity_string_ids"].append(strings)
            feature["entity_sentence_ids"].append(sentence_ids)
            feature["question_string_ids"].append([-1, *query_strings] + [-1] * (len(ids) - 1 - len(query_strings)))
            node_strings.append(kept)
        count = len(sentences)
        adjacency = [
            [int(a != b and bool(node_strings[a] & node_strings[b])) for b in range(count)] for a in range(count)
        ]
        feature.update(
            node_adjacency=adjacency,
            example_id=example.example_id,
            candidate_texts=candidate_texts,
        )
        if example.answers is not None:
            gold = {normalize_entity_string(answer) for answer in example.answers}
            feature["labels"] = [float(normalize_entity_string(text) in gold) for text in candidate_texts]
            feature["answers"] = list(example.answers)
        return feature

    # ------------------------------------------------------------------ HotpotQA

    def encode_hotpot_graphs(self, records: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """One graph feature per HotpotQA question (HF layout; the original list-of-pairs `context` works too)."""
        return self._reported(self.encode_hotpot_record(record, position) for position, record in enumerate(records))

    def encode_hotpot_record(self, record: Mapping[str, Any], position: int = 0) -> dict[str, Any]:
        """The XH graph of one HotpotQA question: paragraphs as nodes, relevance and answer-span labels."""
        context = record["context"]
        if isinstance(context, Mapping):
            titles, paragraphs = list(context["title"]), [list(s) for s in context["sentences"]]
        else:  # original release: [[title, [sentences]], ...]
            titles, paragraphs = [c[0] for c in context], [list(c[1]) for c in context]
        supporting = record.get("supporting_facts", {})
        supporting_titles = (
            list(supporting["title"]) if isinstance(supporting, Mapping) else [fact[0] for fact in supporting]
        )
        if self.max_nodes is not None and len(titles) > self.max_nodes:
            self._count("truncated_graphs")
            titles, paragraphs = titles[: self.max_nodes], paragraphs[: self.max_nodes]
        question = _whitespace_to_spaces(record["question"])
        question_ids = self._tokens(question, leading_space=False)[: self.max_query_length]
        answer = str(record.get("answer", ""))
        texts = [
            _whitespace_to_spaces(f"{title}: {''.join(sentences)}")
            for title, sentences in zip(titles, paragraphs, strict=True)
        ]
        relevant, answer_span = self._hotpot_answer(texts, titles, supporting_titles, answer)
        feature: dict[str, Any] = {"input_ids": [], "global_attention_mask": []}
        start_position = end_position = -100
        for node, text in enumerate(texts):
            spans = [answer_span] if node == relevant and answer_span is not None else []
            text_ids, span_positions = self._encode_with_spans(text, spans, markers=False)
            ids, global_mask, offset = self._node(question_ids, text_ids)
            if spans and span_positions[0]:
                first, last = offset + span_positions[0][0], offset + span_positions[0][-1]
                if last < len(ids) - 1:
                    start_position, end_position = first, last
                else:
                    self._count("truncated_answers")
            feature["input_ids"].append(ids)
            feature["global_attention_mask"].append(global_mask)
        count = len(texts)
        # a retrieved (FullWiki) graph carries its Wikipedia hyperlinks: the links, in place of title mentions
        hyperlinks = record.get("hyperlinks")
        if hyperlinks is None:
            links = set(title_mentions(titles, paragraphs))
        else:
            index = {title: node for node, title in enumerate(titles)}
            links = {(index[a], index[b]) for a, b in hyperlinks if a in index and b in index}
        adjacency = hop_adjacency(count, links, self.hotpot_edges)
        example_id = record.get("_id", record.get("id"))
        if example_id is None:
            digest = hashlib.sha1(f"{position}\x00{record['question']}".encode()).hexdigest()
            example_id = f"sha1-{digest[:16]}"
        feature.update(
            node_adjacency=adjacency,
            relevant_node=relevant,
            start_positions=start_position,
            end_positions=end_position,
            node_labels=[int(title in supporting_titles) for title in titles],
            example_id=str(example_id),
            titles=titles,
            answer=answer,
        )
        return feature

    @staticmethod
    def _hotpot_answer(
        texts: Sequence[str], titles: Sequence[str], supporting_titles: Sequence[str], answer: str
    ) -> tuple[int, tuple[int, int] | None]:
        """(relevant node, exclusive character span of the answer in it or None)."""
        order = [i for i, t in enumerate(titles) if t in supporting_titles]
        order += [i for i in range(len(titles)) if i not in order]
        if answer and answer.lower() not in ("yes", "no"):
            for flags in (0, re.IGNORECASE):
                pattern = re.compile(rf"(?<!\w){re.escape(answer)}(?!\w)", flags)
                for node in order:
                    match = pattern.search(texts[node], len(titles[node]) + 2)
                    if match:
                        return node, (match.start(), match.end())
        return (order[0] if order else -100), None


XhProcessor.register_for_auto_class("AutoProcessor")

__all__ = ["HOTPOT_EDGES", "XhGraphCollator", "XhProcessor", "hop_adjacency", "record_sentences", "title_mentions"]
