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
"""WikiHop / MedHop records -> the inputs of ``ContextGraphForMultipleChoice`` (thesis 3.1-3.2).

One feature per query: the query, every document and every candidate tokenised separately (``<s> text </s>``, a
document cut to ``max_document_length`` tokens), and the context graph (``graph_context.build_context_graph``) with
each node's token span in its text. A node whose span falls past a cut document is dropped with its edges (counted
and logged).

Feature columns (named as the model's inputs, so ``Trainer`` keeps them): ``input_ids`` (one token list per text:
query first, then the documents, then the candidates), ``query_text`` (0), ``node_text``, ``node_start``,
``node_end``, ``node_type``, ``entity_candidate``, ``edge_index`` ``(2, M)`` (both directions), ``edge_type``,
``candidate_nodes``, ``labels`` (the answer's candidate index; -100 unlabelled); and for decoding ``example_id``,
``candidate_texts``, ``answers``. ``ContextGraphCollator`` flattens a batch of graphs into one node set.

Flat module: copied next to every saved context-graph processor with its relative imports.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
from tokenizers import Tokenizer
from transformers import PreTrainedTokenizerBase

from .graph_context import CANDIDATE, DOCUMENT, EDGE_KINDS, ENTITY, SENTENCE_MODES, build_context_graph
from .processing_wikihop import QangarooProcessorBase, _span_in, normalize_mention
from .records_wikihop import WikihopExample

IGNORE_INDEX = -100
MODEL_COLUMNS = ("input_ids", "query_text", "node_text", "node_start", "node_end", "node_type", "entity_candidate",
                 "edge_index", "edge_type", "candidate_nodes")  # fmt: skip
EVAL_COLUMNS = ("example_id", "candidate_texts", "answers")


class ContextGraphProcessor(QangarooProcessorBase):
    """Context graphs of WikiHop / MedHop queries (module docstring).

    Args:
        tokenizer: a fast tokenizer with ``<s>``/``</s>``/``<pad>`` (``LukeTokenizer`` or RoBERTa's).
        max_document_length: tokens per document, ``<s>``/``</s>`` included (the rest is cut, and logged).
        max_query_length: tokens of the query, likewise.
        max_candidate_length: tokens per candidate, likewise.
        max_entities: entity-mention nodes per query, in reading order (``None``: all).
        co_document_edges, complement_edges, unconnected_edges, sentence_nodes, co_mention_edges: thesis 3.1's
            optional rules 6, 7, 8, the sentence nodes and rule 3 (``graph_context.GraphRules``).
    """

    eval_columns = EVAL_COLUMNS
    first_candidate = 0  # logit column c is candidate c

    cap_warnings = {
        "documents_cut": "{documents_cut} documents cut to max_document_length={max_document_length} tokens",
        "nodes_cut": "{nodes_cut} entity/sentence nodes dropped: their text lies past a cut document",
        "query_truncated": "{query_truncated} queries cut to max_query_length={max_query_length}",
        "candidate_truncated": "{candidate_truncated} candidates cut to max_candidate_length={max_candidate_length}",
    }

    def __init__(
        self,
        tokenizer: PreTrainedTokenizerBase | None = None,
        max_document_length: int = 512,
        max_query_length: int = 64,
        max_candidate_length: int = 16,
        max_entities: int | None = None,
        co_document_edges: bool = False,
        complement_edges: bool = False,
        unconnected_edges: bool = False,
        sentence_nodes: str = "none",
        co_mention_edges: bool = True,
        **kwargs: Any,
    ) -> None:
        if tokenizer is None or not isinstance(getattr(tokenizer, "backend_tokenizer", None), Tokenizer):
            raise TypeError("ContextGraphProcessor needs a fast tokenizer with a `tokenizers` backend (offsets)")
        for name, value in (("max_document_length", max_document_length), ("max_query_length", max_query_length),
                            ("max_candidate_length", max_candidate_length)):  # fmt: skip
            if not isinstance(value, int) or value < 3:
                raise ValueError(f"{name} counts <s> and </s>: an integer >= 3, got {value!r}")
        if max_entities is not None and (not isinstance(max_entities, int) or max_entities < 0):
            raise ValueError(f"max_entities must be None or a non-negative integer, got {max_entities!r}")
        if sentence_nodes not in SENTENCE_MODES:
            raise ValueError(f"sentence_nodes must be one of {SENTENCE_MODES}, got {sentence_nodes!r}")
        for name in ("cls_token_id", "sep_token_id", "pad_token_id"):
            if getattr(tokenizer, name, None) is None:
                raise ValueError(f"the tokenizer has no {name[:-3]} token (each text is read as <s> text </s>)")
        super().__init__(tokenizer, **kwargs)
        self.max_document_length = max_document_length
        self.max_query_length = max_query_length
        self.max_candidate_length = max_candidate_length
        self.max_entities = max_entities
        self.keep_graph_rules(co_document_edges, complement_edges, unconnected_edges, co_mention_edges, sentence_nodes)

    @property
    def model_input_names(self) -> list[str]:
        return [*MODEL_COLUMNS, "attention_mask", "node_graph"]

    def get_data_collator(self, **kwargs: Any) -> ContextGraphCollator:
        return ContextGraphCollator(pad_token_id=self.tokenizer.pad_token_id)

    # ------------------------------------------------------------------ encoding

    def _encode_text(self, backend: Tokenizer, text: str, limit: int) -> tuple[list[int], np.ndarray, bool]:
        """``<s> tokens </s>`` of ``text`` cut to ``limit`` ids, and each kept token's character span."""
        encoding = backend.encode(text, add_special_tokens=False)
        keep = limit - 2
        ids = [self.tokenizer.cls_token_id, *encoding.ids[:keep], self.tokenizer.sep_token_id]
        offsets = np.asarray(encoding.offsets[:keep], dtype=np.int64).reshape(-1, 2)
        return ids, offsets, len(encoding.ids) > keep

    def feature_columns(self) -> list[str]:
        """The model columns, then the decoding ones (module docstring)."""
        return [*MODEL_COLUMNS, *EVAL_COLUMNS]

    def _encode_one(
        self, example: WikihopExample, backend: Tokenizer, columns: dict[str, list], stats: Counter, with_labels: bool
    ) -> None:
        relation = example.relation.replace("_", " ")
        query_text = f"{relation} {example.subject}" if example.subject != example.query else example.subject
        query, _, cut = self._encode_text(backend, query_text, self.max_query_length)
        stats["query_truncated"] += cut
        documents = [self._encode_text(backend, text, self.max_document_length) for text in example.supports]
        stats["documents_cut"] += sum(cut for _, _, cut in documents)
        candidates = [self._encode_text(backend, text, self.max_candidate_length) for text in example.candidates]
        stats["candidate_truncated"] += sum(cut for _, _, cut in candidates)
        graph = build_context_graph(example.supports, example.candidates, example.subject_mention, self.rules,
                                    self.max_entities)  # fmt: skip
        texts = [query, *(ids for ids, _, _ in documents), *(ids for ids, _, _ in candidates)]
        kept: dict[int, int] = {}  # graph node -> feature node
        node_text, node_start, node_end, node_type, entity_candidate = [], [], [], [], []
        candidate_of = {normalize_mention(text): index for index, text in enumerate(example.candidates)}
        for index, node in enumerate(graph.nodes):
            if node.kind == CANDIDATE:
                text, span = 1 + len(documents) + node.source, (1, len(texts[1 + len(documents) + node.source]) - 1)
            else:
                text = 1 + node.source
                ids, offsets, _ = documents[node.source]
                if node.kind == DOCUMENT:
                    span = (1, len(ids) - 1)
                else:
                    found = _span_in(offsets[:, 0], np.maximum.accumulate(offsets[:, 1]) if len(offsets) else
                                     offsets[:, 1], node.start, node.end)  # fmt: skip
                    if found is None:
                        stats["nodes_cut"] += 1
                        continue
                    span = (1 + found[0], 1 + found[1])
            if span[1] <= span[0]:  # an empty text (no token): read its </s>
                span = (span[0], span[0] + 1)
            kept[index] = len(node_text)
            node_text.append(text)
            node_start.append(span[0])
            node_end.append(span[1])
            node_type.append(node.kind)
            entity_candidate.append(candidate_of.get(node.string, -1) if node.kind == ENTITY else -1)
        senders, receivers, kinds = [], [], []
        for i, j, kind in graph.edges:
            if i in kept and j in kept:
                senders += [kept[i], kept[j]]
                receivers += [kept[j], kept[i]]
                kinds += [kind, kind]
        columns["input_ids"].append(texts)
        columns["query_text"].append(0)
        columns["node_text"].append(node_text)
        columns["node_start"].append(node_start)
        columns["node_end"].append(node_end)
        columns["node_type"].append(node_type)
        columns["entity_candidate"].append(entity_candidate)
        columns["edge_index"].append([senders, receivers])
        columns["edge_type"].append(kinds)
        columns["candidate_nodes"].append([kept[index] for index in graph.indices(CANDIDATE)])
        columns["example_id"].append(example.example_id)
        columns["candidate_texts"].append(list(example.candidates))
        columns["answers"].append([] if example.answer is None else [example.answer])
        if with_labels:
            label = IGNORE_INDEX if example.answer is None else example.candidates.index(example.answer)
            columns["labels"].append(label)
        stats["queries"] += 1


class ContextGraphCollator:
    """A batch of context-graph features -> one flattened node set (``ContextGraphForMultipleChoice`` inputs):
    texts padded to ``(T, L)``, node and edge indices offset per graph, ``candidate_nodes`` padded with -1."""

    def __init__(self, pad_token_id: int) -> None:
        self.pad_token_id = pad_token_id

    def __call__(self, features: Sequence[Mapping[str, Any]]) -> dict[str, torch.Tensor]:
        if not features:
            raise ValueError("ContextGraphCollator got an empty batch")
        missing = [name for name in MODEL_COLUMNS if name not in features[0]]
        if missing:
            raise ValueError(f"ContextGraphCollator: features lack {missing}; build them with ContextGraphProcessor")
        texts = [list(ids) for feature in features for ids in feature["input_ids"]]
        width = max(len(ids) for ids in texts)
        input_ids = torch.full((len(texts), width), self.pad_token_id, dtype=torch.long)
        attention_mask = torch.zeros((len(texts), width), dtype=torch.long)
        for row, ids in enumerate(texts):
            input_ids[row, : len(ids)] = torch.tensor(ids, dtype=torch.long)
            attention_mask[row, : len(ids)] = 1
        batch: dict[str, list] = {name: [] for name in ("query_text", "node_text", "node_start", "node_end",
                                                        "node_type", "node_graph", "entity_candidate", "edge_type")}  # fmt: skip
        edges, candidates = [], []
        text_offset = node_offset = 0
        for graph, feature in enumerate(features):
            count = len(feature["node_text"])
            batch["query_text"].append(text_offset + int(feature["query_text"]))
            batch["node_text"] += [text_offset + int(t) for t in feature["node_text"]]
            for name in ("node_start", "node_end", "node_type", "entity_candidate", "edge_type"):
                batch[name] += list(feature[name])
            batch["node_graph"] += [graph] * count
            edges.append(
                torch.as_tensor(np.asarray(feature["edge_index"], dtype=np.int64).reshape(2, -1)) + node_offset
            )
            candidates.append([node_offset + int(node) for node in feature["candidate_nodes"]])
            text_offset += len(feature["input_ids"])
            node_offset += count
        most = max(len(row) for row in candidates)
        out = {name: torch.tensor(values, dtype=torch.long) for name, values in batch.items()}
        out.update(input_ids=input_ids, attention_mask=attention_mask, edge_index=torch.cat(edges, dim=1),
                   candidate_nodes=torch.tensor([row + [-1] * (most - len(row)) for row in candidates]))  # fmt: skip
        if "labels" in features[0]:
            out["labels"] = torch.tensor([int(feature["labels"]) for feature in features], dtype=torch.long)
        return out


ContextGraphProcessor.register_for_auto_class("AutoProcessor")

__all__ = ["EDGE_KINDS", "ContextGraphCollator", "ContextGraphProcessor"]
