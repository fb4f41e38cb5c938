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
"""WikiHop features for GESA, LUKE and LUKE-Graph: ``WikihopProcessor`` (one long sequence per query).

Flat module: copied next to every saved WikiHop checkpoint (``AutoProcessor.from_pretrained(...,
trust_remote_code=True)``) with the siblings it imports relatively (``records_wikihop``, ``candidates_gesa``,
``collator_gesa``).

Word sequence of one query (ONE feature per query, no document windows: the model's ``attention_window`` makes it
linear in length)::

    <s> R S </s> </s> C_1 </s> C_2 </s> ... C_n </s> D_1 </s> D_2 </s> ... D_m </s>

``R S`` is the query (relation with ``_`` read as spaces, then the subject): global (``global_attention_mask`` 2,
``<s>`` 1). ``C_i`` are the candidates (the candidate list is sentence unit 0), ``D_j`` the support documents (unit
``j``); every other word is local. Entities (all global: entities attend to every word and every word to them):

- entity 0, the query entity (``placeholder_entity_mask``), positioned on the subject's words ``S``;
- entities ``1..n``, one per candidate, positioned on ``C_i``: always present, also for a candidate that is never
  mentioned in the supports;
- one entity per mention of the subject or of a candidate in the supports, found by normalised exact match (thesis
  3.1: lower case, whitespace collapsed, whole words; the longest match wins where two overlap).

The query's own words that name a candidate (or the subject) by the same rule carry its string id in
``question_string_ids``: the mention label links an entity to them too (paper 3.3; preset ``no_question_mentions``
ignores them).

The thesis's context-graph edges reach GESA's entity graph through the compact inputs (``docs/wikihop.md``):
``entity_string_ids`` is the normalised text (MATCH: same text in different units: co-mention across documents, and
candidate node <-> its mentions); ``entity_sentence_ids`` the unit (SENT: co-document mentions, and candidate <->
candidate in unit 0); the query entity is the placeholder (PLC: query subject <-> every node).

With ``entity_graph="context"`` the entities are the thesis's context graph instead (``graph_context``, one builder
for both systems): after the query entity and the candidates, every entity-mention node, then one entity per support
document (positioned on all of its kept words, so the mention label links it to them) and, with ``sentence_nodes``,
one per sentence (on its words); ``entity_graph_edges`` lists every edge ``(i, j, kind)`` of the graph between kept
entities (``kind``: ``structure_gesa.CONTEXT_EDGE_KINDS``), each kind its own e2e label in a model with
``entity_graph="context"``. The query entity keeps its place (the linear head reads it) but joins no edge: the thesis
has no query node and no PLC edge. Document and sentence entities get string ids of their own (never matched).

When the query, candidates and supports exceed ``max_seq_length``, every support is cut to the same largest length
that fits (each keeps its beginning); the log says how many records and words were cut. Mentions beyond
``max_entities`` are dropped, latest first, and logged too. Nothing is cut silently.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
from tokenizers import Tokenizer
from transformers import BatchFeature, PreTrainedTokenizerBase

from .answers_gesa import ranked_answers
from .collator_gesa import MODEL_INPUT_NAMES, GesaDataCollator
from .graph_context import CANDIDATE, DOCUMENT, ENTITY, SENTENCE, SENTENCE_MODES, GraphRules, build_context_graph
from .inputs_gesa import InputError
from .processing_base_gesa import ProcessorBase
from .records_gesa import content_id
from .records_wikihop import (
    WikihopExample,
    check_unique_ids,
    find_mentions,
    normalize_mention,
    record_error,
    refuse_repeated_ids,
    rows_to_examples,
    to_example,
)
from .structure_gesa import CLS_GLOBAL as GLOBAL_CLS
from .structure_gesa import LOCAL as GLOBAL_LOCAL
from .structure_gesa import LUKE_MASK_ENTITY_ID
from .structure_gesa import QUESTION_GLOBAL as GLOBAL_QUESTION

IGNORE_INDEX = -100
CANDIDATE_ENTITY_MASK = "candidate_entity_mask"
WIKIHOP_EVAL_COLUMNS = ("example_id", "candidate_texts", "answers")
CANDIDATE_UNIT = 0  # sentence unit of the candidate list; support j is unit j + 1
GRAPH_EDGES = "entity_graph_edges"
ENTITY_GRAPHS = ("merged", "context")


def _token_span(offsets: Sequence[tuple[int, int]], start: int, end: int) -> tuple[int, int] | None:
    """Token indices ``[first, last)`` of the tokens overlapping characters ``[start, end)`` (offsets sorted)."""
    token_starts = np.fromiter((a for a, _ in offsets), dtype=np.int64, count=len(offsets))
    token_ends = np.fromiter((b for _, b in offsets), dtype=np.int64, count=len(offsets))
    return _span_in(token_starts, token_ends, start, end)


def _span_in(token_starts: np.ndarray, token_ends: np.ndarray, start: int, end: int) -> tuple[int, int] | None:
    """``_token_span`` on offset arrays: two binary searches (a mention costs O(log T), not O(T))."""
    first = int(np.searchsorted(token_ends, start, side="right"))  # the first token ending after `start`
    last = int(np.searchsorted(token_starts, end, side="left"))  # past the last token starting before `end`
    if first >= last:
        return None
    return first, last


def fair_cut(lengths: Sequence[int], budget: int) -> int | None:
    """The largest per-document length ``c`` with ``sum(min(length, c)) <= budget`` (None: nothing to cut)."""
    if sum(lengths) <= budget:
        return None
    low, high = 0, max(lengths)
    while low < high:
        middle = (low + high + 1) // 2
        if sum(min(length, middle) for length in lengths) <= budget:
            low = middle
        else:
            high = middle - 1
    return low


class QangarooProcessorBase(ProcessorBase):
    """What the QAngaroo processors (``WikihopProcessor``, ``ContextGraphProcessor``) share: ``processor(...)`` (records
    in, ``encode_examples``' columns out; ``eval_columns``: the columns that are not model inputs), the batched
    ``map_function``, ``encode_examples`` (one feature per query: ``_encode_one`` fills ``feature_columns``), the
    context graph's optional rules, and the ranking of each query's candidates (``rank_candidates``)."""

    eval_columns: tuple[str, ...] = ()
    # the logit column of the first candidate (WikiHop's column 0 is the query entity)
    first_candidate: int = 0

    def __call__(
        self,
        queries: str | Mapping[str, Any] | Sequence[Mapping[str, Any]],
        supports: Sequence[str] | Sequence[Sequence[str]] | None = None,
        candidates: Sequence[str] | Sequence[Sequence[str]] | None = None,
        answers: str | Sequence[str | None] | None = None,
        example_ids: str | Sequence[str] | None = None,
        return_tensors: str | None = None,
    ) -> BatchFeature:
        """Encode one query or a list: ``processor(query, supports, candidates)`` or ``processor({"query",
        "supports", "candidates"[, "answer", "id"]})`` (or a list of such dicts).

        Returns:
            ``BatchFeature`` of the feature columns (one row per query); with ``return_tensors="pt"`` the model
            inputs as padded tensors, the evaluation columns as attributes (``batch.candidate_texts``).
        """
        examples = query_examples(queries, supports, candidates, answers, example_ids)
        return columns_batch(self.encode_examples(examples), self.get_data_collator(), self.eval_columns,
                             return_tensors)  # fmt: skip

    def keep_graph_rules(
        self, co_document_edges: bool, complement_edges: bool, unconnected_edges: bool, co_mention_edges: bool,
        sentence_nodes: str,
    ) -> None:  # fmt: skip
        """Keep the context graph's optional rules (settings under their own names; ``rules`` reads them)."""
        self.co_document_edges = bool(co_document_edges)
        self.complement_edges = bool(complement_edges)
        self.unconnected_edges = bool(unconnected_edges)
        self.co_mention_edges = bool(co_mention_edges)
        self.sentence_nodes = sentence_nodes

    @property
    def rules(self) -> GraphRules:
        """The context graph's optional rules 6, 7, 8, the sentence nodes and rule 3 (``graph_context.GraphRules``)."""
        return GraphRules(self.co_document_edges, self.complement_edges, self.unconnected_edges, self.sentence_nodes,
                          self.co_mention_edges)  # fmt: skip

    def map_function(self, batch: Mapping[str, list]) -> dict[str, list]:
        """Batched ``Dataset.map`` function over rows with ``id, query, supports, candidates, answer``."""
        return self.encode_examples(rows_to_examples(batch))

    def feature_columns(self) -> list[str]:
        """The columns of a feature, ``labels`` aside (added when the examples have answers)."""
        raise NotImplementedError

    def encode_examples(self, examples: Sequence[WikihopExample]) -> dict[str, list]:
        """Columns (dict of lists, one row per query); see the class docstring. Two queries with one id are refused
        (``InputError``: their answers would be ranked as one query's)."""
        check_unique_ids(examples)
        stats: Counter[str] = Counter()
        columns: dict[str, list] = {name: [] for name in self.feature_columns()}
        with_labels = any(example.answer is not None for example in examples)
        if with_labels:
            columns["labels"] = []
        backend = self._tokenizer_backend()
        for example in examples:
            self._encode_one(example, backend, columns, stats, with_labels)
        self._report(stats)
        return columns

    def _encode_one(
        self, example: WikihopExample, backend: Tokenizer, columns: dict[str, list], stats: Counter, with_labels: bool
    ) -> None:
        """Append ``example``'s feature to ``columns``, counting what was cut in ``stats``."""
        raise NotImplementedError

    @classmethod
    def rank_candidates(
        cls, example_ids: Sequence[str], candidate_texts: Sequence[Sequence[str]], logits: Any
    ) -> dict[str, list[dict[str, Any]]]:
        """Per query, every candidate best first with its probability (softmax over that query's candidates):
        ``answers_gesa.ranked_answers`` with each candidate its own answer (no text merging); logit column
        ``first_candidate + c`` is candidate ``c``.

        Raises:
            ValueError: lengths disagree, two features share a query id (two queries, one id), or a query's scores
                are not finite (NaN).
        """
        refuse_repeated_ids(example_ids, "rank_candidates")
        return ranked_answers(example_ids, candidate_texts, logits, first_candidate=cls.first_candidate,
                              score="softmax", same_answer=None, caller="rank_candidates")  # fmt: skip


class WikihopProcessor(QangarooProcessorBase):
    """Turns WikiHop records (three input shapes) into one long GESA feature per query (see the module docstring).

    Feature columns (``L`` words, ``E`` entities, ``M`` longest mention): the ``GesaProcessor`` model inputs
    (``input_ids`` ... ``entity_sentence_ids``), plus ``candidate_entity_mask`` ``(E,)`` (1 on the candidate
    entities), ``labels`` (the answer's entity index, ``-100`` for an unlabelled query; only when the input has
    answers), and the evaluation columns ``example_id``, ``candidate_texts`` ``(E,)`` (the candidate of each
    candidate entity, ``""`` elsewhere), ``answers`` (the gold candidate, or empty).

    Args:
        tokenizer: a fast tokenizer with RoBERTa's ``<s>``/``</s>``/``<pad>`` (``LukeTokenizer`` or RoBERTa's).
        max_seq_length: word tokens of the one sequence, special tokens included (WikiHop: 4096 or more with the
            model's ``attention_window``; the supports are cut fairly beyond it).
        max_query_length: query tokens kept.
        max_candidate_length: tokens kept per candidate in the candidate list.
        max_entities: entities per query: the query entity, every candidate, then mentions in reading order.
        max_mention_length: word positions kept per mention.
        entity_mask_id: entity id of ``[MASK]``; default the tokenizer's entity vocabulary, else LUKE's 2.
        entity_graph: ``"merged"`` (GESA's entity graph from the compact inputs, module docstring) or ``"context"``
            (the thesis's context graph as entities and ``entity_graph_edges``); the model's ``config.entity_graph``.
        co_document_edges, complement_edges, unconnected_edges, co_mention_edges, sentence_nodes: the context
            graph's optional rules 6, 7, 8, 3 and the sentence nodes (``graph_context.GraphRules``), read with
            ``entity_graph="context"`` only.

    ``stats`` accumulates what the encode calls cut (each logged, ``ProcessorBase``).
    """

    eval_columns = WIKIHOP_EVAL_COLUMNS
    first_candidate = 1

    # every cut at WARNING (never silent)
    cap_warnings = {
        "records_cut": (
            "supports of {records_cut} of {queries} records cut to fit max_seq_length={max_seq_length}: {words_cut} "
            "support words dropped, with {mentions_cut_with_supports} candidate/subject mentions in them (each "
            "document keeps its beginning; raise --max_seq_length to keep them)"
        ),
        "mentions_over_max_entities": (
            "{mentions_over_max_entities} mentions dropped beyond max_entities={max_entities}"
        ),
        "query_truncated": "{query_truncated} queries cut to max_query_length={max_query_length}",
        "candidate_truncated": (
            "{candidate_truncated} candidates cut to max_candidate_length={max_candidate_length} words"
        ),
        "mention_truncated": "{mention_truncated} mentions cut to max_mention_length={max_mention_length} words",
        "sentences_cut_with_supports": (
            "{sentences_cut_with_supports} sentence nodes dropped with the cut part of their supports (raise "
            "--max_seq_length to keep them)"
        ),
    }

    def __init__(
        self,
        tokenizer: PreTrainedTokenizerBase | None = None,
        max_seq_length: int = 4096,
        max_query_length: int = 64,
        max_candidate_length: int = 16,
        max_entities: int = 1024,
        max_mention_length: int = 30,
        entity_mask_id: int | None = None,
        entity_graph: str = "merged",
        co_document_edges: bool = False,
        complement_edges: bool = False,
        unconnected_edges: bool = False,
        co_mention_edges: bool = True,
        sentence_nodes: str = "none",
        **kwargs: Any,
    ) -> None:
        if entity_graph not in ENTITY_GRAPHS:
            raise ValueError(f"entity_graph must be one of {ENTITY_GRAPHS}, got {entity_graph!r}")
        if sentence_nodes not in SENTENCE_MODES:
            raise ValueError(f"sentence_nodes must be one of {SENTENCE_MODES}, got {sentence_nodes!r}")
        if tokenizer is None:
            raise ValueError("WikihopProcessor needs a tokenizer (LukeTokenizer or a fast RoBERTa tokenizer)")
        if not isinstance(getattr(tokenizer, "backend_tokenizer", None), Tokenizer):
            raise TypeError(
                "WikihopProcessor needs a fast tokenizer with a `tokenizers` backend (offsets); got "
                f"{type(tokenizer).__name__}"
            )
        for name, value in (
            ("max_query_length", max_query_length),
            ("max_candidate_length", max_candidate_length),
            ("max_mention_length", max_mention_length),
        ):
            if value < 1:
                raise ValueError(f"{name} must be positive, got {value}")
        if max_entities < 3:
            raise ValueError(f"max_entities counts the query entity and the candidates: >= 3, got {max_entities}")
        if max_seq_length < max_query_length + 8:
            raise ValueError(f"max_seq_length={max_seq_length} leaves no room after {max_query_length} query tokens")
        for name in ("cls_token_id", "sep_token_id", "pad_token_id"):
            if getattr(tokenizer, name, None) is None:
                raise ValueError(f"the tokenizer has no {name[:-3]} (needed for <s> Q </s> </s> C </s> D </s>)")
        super().__init__(tokenizer, **kwargs)
        self.max_seq_length = int(max_seq_length)
        self.max_query_length = int(max_query_length)
        self.max_candidate_length = int(max_candidate_length)
        self.max_entities = int(max_entities)
        self.max_mention_length = int(max_mention_length)
        if entity_mask_id is None:
            entity_vocab = getattr(tokenizer, "entity_vocab", None) or {}
            entity_mask_id = entity_vocab.get(getattr(tokenizer, "entity_mask_token", "[MASK]"), LUKE_MASK_ENTITY_ID)
        self.entity_mask_id = int(entity_mask_id)
        self.entity_graph = entity_graph
        self.keep_graph_rules(co_document_edges, complement_edges, unconnected_edges, co_mention_edges, sentence_nodes)

    @property
    def model_input_names(self) -> list[str]:
        graph = [GRAPH_EDGES] if self.entity_graph == "context" else []
        return [*MODEL_INPUT_NAMES, *graph, CANDIDATE_ENTITY_MASK]

    # ------------------------------------------------------------------ encoding

    def get_data_collator(self, **kwargs: Any) -> WikihopDataCollator:
        return WikihopDataCollator(pad_token_id=self.tokenizer.pad_token_id, **kwargs)

    def feature_columns(self) -> list[str]:
        names = [*MODEL_INPUT_NAMES, CANDIDATE_ENTITY_MASK, *WIKIHOP_EVAL_COLUMNS]
        if self.entity_graph == "context":
            names.append(GRAPH_EDGES)
        return names

    def _encode_one(
        self,
        example: WikihopExample,
        backend: Tokenizer,
        columns: dict[str, list],
        stats: Counter[str],
        with_labels: bool,
    ) -> None:
        cls_id, sep_id = self.tokenizer.cls_token_id, self.tokenizer.sep_token_id
        relation = example.relation.replace("_", " ")
        subject = example.subject
        query_text = f"{relation} {subject}" if subject != example.query else subject
        query = backend.encode(query_text, add_special_tokens=False)
        query_ids = query.ids
        subject_span = _token_span(query.offsets, len(query_text) - len(subject), len(query_text))
        strings = [normalize_mention(text) for text in example.candidates]
        string_index: dict[str, int] = {}
        candidate_string_ids = [string_index.setdefault(text, len(string_index)) for text in strings]
        subject_string_id = string_index.setdefault(normalize_mention(example.subject_mention), len(string_index))
        mention_strings = [*strings, normalize_mention(example.subject_mention)]
        mention_string_ids = [*candidate_string_ids, subject_string_id]
        # the query's own mentions (paper 3.3: the mention label reaches the question), by the supports' rule
        query_string_ids = [-1] * len(query_ids)
        for start, end, index in find_mentions(query_text, mention_strings):
            span = _token_span(query.offsets, start, end)
            if span is not None:
                query_string_ids[span[0] : span[1]] = [mention_string_ids[index]] * (span[1] - span[0])
        if len(query_ids) > self.max_query_length:
            stats["query_truncated"] += 1
            query_ids = query_ids[-self.max_query_length :]  # the subject is at the end: keep it
            query_string_ids = query_string_ids[-self.max_query_length :]
            shift = len(query.ids) - self.max_query_length
            subject_span = None if subject_span is None else (max(0, subject_span[0] - shift), subject_span[1] - shift)
        if subject_span is None or subject_span[1] <= subject_span[0]:
            subject_span = (0, len(query_ids))
        input_ids = [cls_id, *query_ids, sep_id, sep_id]
        global_mask = [GLOBAL_CLS] + [GLOBAL_QUESTION] * len(query_ids) + [GLOBAL_LOCAL, GLOBAL_LOCAL]
        subject_positions = list(range(1 + subject_span[0], 1 + subject_span[1]))

        # the candidate list (unit 0)
        candidate_encodings = backend.encode_batch(
            [" " + text for text in example.candidates], add_special_tokens=False
        )
        candidate_positions = []
        for encoding in candidate_encodings:
            ids = encoding.ids[: self.max_candidate_length] or [self.tokenizer.unk_token_id or sep_id]
            if len(encoding.ids) > self.max_candidate_length:
                stats["candidate_truncated"] += 1
            candidate_positions.append(list(range(len(input_ids), len(input_ids) + len(ids))))
            input_ids.extend([*ids, sep_id])
        global_mask.extend([GLOBAL_LOCAL] * (len(input_ids) - len(global_mask)))
        if len(example.candidates) + 1 > self.max_entities:
            raise record_error(
                example.example_id,
                f"has {len(example.candidates)} candidates but max_entities={self.max_entities} (query entity "
                "included); raise max_entities (--max_entities)",
                example.source,
            )

        # the supports (units 1..m), cut fairly when they do not fit
        support_encodings = backend.encode_batch([" " + text for text in example.supports], add_special_tokens=False)
        budget = self.max_seq_length - len(input_ids) - len(example.supports)
        if budget < len(example.supports):
            raise record_error(
                example.example_id,
                f"the query and {len(example.candidates)} candidates take {len(input_ids)} of max_seq_length="
                f"{self.max_seq_length} words, leaving no room for its {len(example.supports)} supports; raise "
                "max_seq_length (--max_seq_length)",
                example.source,
            )
        lengths = [len(encoding.ids) for encoding in support_encodings]
        cut = fair_cut(lengths, budget)
        if cut is not None:
            stats["records_cut"] += 1
            stats["words_cut"] += sum(max(0, length - cut) for length in lengths)
        mentions: list[tuple[list[int], int, int]] = []  # (positions, string id, unit)
        mention_keys: list[tuple[int, int]] = []  # (document, first character) of each mention
        documents: list[tuple[int, np.ndarray, np.ndarray, int]] = []  # (first position, token starts, ends, kept)
        for unit, (text, encoding) in enumerate(zip(example.supports, support_encodings, strict=True), 1):
            keep = len(encoding.ids) if cut is None else min(len(encoding.ids), cut)
            offset = len(input_ids)
            offsets = np.asarray(encoding.offsets[:keep], dtype=np.int64).reshape(-1, 2) - 1  # the leading space
            token_starts, token_ends = offsets[:, 0], np.maximum.accumulate(offsets[:, 1]) if keep else offsets[:, 1]
            documents.append((offset, token_starts, token_ends, keep))
            for start, end, index in find_mentions(text, mention_strings):
                span = _span_in(token_starts, token_ends, start, end)
                if span is None:
                    if keep and start >= token_ends[-1]:
                        stats["mentions_cut_with_supports"] += 1
                    continue
                first, last = span
                if last - first > self.max_mention_length:
                    stats["mention_truncated"] += 1
                    last = first + self.max_mention_length
                mentions.append((list(range(offset + first, offset + last)), mention_string_ids[index], unit))
                mention_keys.append((unit - 1, start))
            input_ids.extend([*encoding.ids[:keep], sep_id])
        global_mask.extend([GLOBAL_LOCAL] * (len(input_ids) - len(global_mask)))
        room = self.max_entities - 1 - len(example.candidates)
        graph_entities: list[tuple[list[int], int, int]] = []  # context graph: documents, sentences
        edges: list[list[int]] = []
        if self.entity_graph == "context":
            mentions, graph_entities, edges = self._context_graph(
                example, mentions, mention_keys, documents, room, len(string_index), stats
            )
        elif len(mentions) > room:
            stats["mentions_over_max_entities"] += len(mentions) - room
            mentions = mentions[:room]
        mentions = mentions + graph_entities

        positions = [subject_positions, *candidate_positions, *(m[0] for m in mentions)]
        width = max(len(row) for row in positions)
        count = len(positions)
        candidate_count = len(example.candidates)
        columns["input_ids"].append(input_ids)
        columns["attention_mask"].append([1] * len(input_ids))
        columns["token_type_ids"].append([0] * len(input_ids))
        columns["global_attention_mask"].append(global_mask)
        columns["question_string_ids"].append([-1, *query_string_ids] + [-1] * (len(input_ids) - 1 - len(query_ids)))
        columns["entity_ids"].append([self.entity_mask_id] * count)
        columns["entity_attention_mask"].append([1] * count)
        columns["entity_token_type_ids"].append([0] * count)
        columns["entity_position_ids"].append([row + [-1] * (width - len(row)) for row in positions])
        columns["placeholder_entity_mask"].append([1] + [0] * (count - 1))
        columns["entity_string_ids"].append([subject_string_id, *candidate_string_ids, *(m[1] for m in mentions)])
        columns["entity_sentence_ids"].append([-1] + [CANDIDATE_UNIT] * candidate_count + [m[2] for m in mentions])
        columns[CANDIDATE_ENTITY_MASK].append([0] + [1] * candidate_count + [0] * len(mentions))
        columns["example_id"].append(example.example_id)
        columns["candidate_texts"].append(["", *example.candidates] + [""] * len(mentions))
        columns["answers"].append([] if example.answer is None else [example.answer])
        if self.entity_graph == "context":
            columns[GRAPH_EDGES].append(edges)
        if with_labels:
            label = IGNORE_INDEX if example.answer is None else 1 + example.candidates.index(example.answer)
            columns["labels"].append(label)
        stats["queries"] += 1
        stats["mentions"] += len(mentions) - len(graph_entities)
        stats["unmentioned_candidates"] += candidate_count - len({m[1] for m in mentions} & set(candidate_string_ids))

    def _context_graph(
        self,
        example: WikihopExample,
        mentions: list[tuple[list[int], int, int]],
        mention_keys: list[tuple[int, int]],
        documents: list[tuple[int, np.ndarray, np.ndarray, int]],
        room: int,
        first_string_id: int,
        stats: Counter[str],
    ) -> tuple[list[tuple[list[int], int, int]], list[tuple[list[int], int, int]], list[list[int]]]:
        """The thesis's context graph (``graph_context.build_context_graph``, the one builder) as GESA entities.

        Returns the entity-mention nodes kept (``(positions, string id, unit)``, reading order, at most ``room``
        with the document and sentence entities), the document and sentence entities (``graph_entities``, string
        ids from ``first_string_id`` on, one each) and the edges ``[i, j, kind]`` between kept entities (entity
        indices: 0 the query entity, ``1..n`` the candidates, then the mentions, then ``graph_entities``).
        """
        graph = build_context_graph(example.supports, example.candidates, example.subject_mention, self.rules)
        candidate_count = len(example.candidates)
        found = {key: index for index, key in enumerate(mention_keys)}
        entity_of: dict[int, int] = {}  # graph node -> entity index
        graph_entities: list[tuple[list[int], int, int]] = []
        kept_mentions: list[tuple[list[int], int, int]] = []
        nodes = graph.nodes
        sentences = graph.indices(SENTENCE)
        fixed = len(documents) + len(sentences)
        if fixed > room:
            raise record_error(
                example.example_id,
                f"its context graph has {len(documents)} document and {len(sentences)} sentence nodes, more than "
                f"max_entities={self.max_entities} leaves after the query entity and {candidate_count} candidates; "
                "raise max_entities (--max_entities)",
                example.source,
            )
        for node in graph.indices(ENTITY):
            index = found.get((nodes[node].source, nodes[node].start))
            if index is None:  # its words were cut with the supports (counted there)
                continue
            if len(kept_mentions) == room - fixed:
                stats["mentions_over_max_entities"] += 1
                continue
            entity_of[node] = 1 + candidate_count + len(kept_mentions)
            kept_mentions.append(mentions[index])
        base = 1 + candidate_count + len(kept_mentions)
        for node in graph.indices(CANDIDATE):
            entity_of[node] = 1 + nodes[node].source
        for node in graph.indices(DOCUMENT):
            offset, _, _, keep = documents[nodes[node].source]
            entity_of[node] = base + len(graph_entities)
            positions = list(range(offset, offset + keep))
            graph_entities.append((positions, first_string_id + len(graph_entities), nodes[node].source + 1))
        for node in sentences:
            offset, token_starts, token_ends, keep = documents[nodes[node].source]
            span = _span_in(token_starts, token_ends, nodes[node].start, nodes[node].end) if keep else None
            if span is None:  # the sentence lies in the cut part of its document
                stats["sentences_cut_with_supports"] += 1
                continue
            entity_of[node] = base + len(graph_entities)
            positions = list(range(offset + span[0], offset + span[1]))
            graph_entities.append((positions, first_string_id + len(graph_entities), nodes[node].source + 1))
        edges = [[entity_of[i], entity_of[j], kind] for i, j, kind in graph.edges if i in entity_of and j in entity_of]
        return kept_mentions, graph_entities, edges


def query_examples(
    queries: str | Mapping[str, Any] | Sequence[Mapping[str, Any]],
    supports: Sequence[str] | Sequence[Sequence[str]] | None = None,
    candidates: Sequence[str] | Sequence[Sequence[str]] | None = None,
    answers: str | Sequence[str | None] | None = None,
    example_ids: str | Sequence[str] | None = None,
) -> list[WikihopExample]:
    """The examples of a processor call (``processor(query, supports, candidates)``, a record dict or a list of
    either): an id-less query gets a hash of its texts (the same query twice: two ids, never merged); two queries
    given one id are an ``InputError`` naming both (``input #N``)."""
    if isinstance(queries, Mapping):
        records = [dict(queries)]
    elif isinstance(queries, str):
        records = [{"query": queries, "supports": supports, "candidates": candidates, "answer": answers}]
        if example_ids is not None:
            records[0]["id"] = example_ids
    else:
        queries = list(queries)
        if queries and all(isinstance(item, Mapping) for item in queries):
            records = [dict(item) for item in queries]
        else:
            count = len(queries)
            for name, values in (("supports", supports), ("candidates", candidates)):
                if values is None or len(values) != count:
                    raise ValueError(f"{name} must give one list per query ({count} queries)")
            records = [
                {
                    "query": query,
                    "supports": supports[index],
                    "candidates": candidates[index],
                    "answer": None if answers is None else answers[index],
                    **({} if example_ids is None else {"id": example_ids[index]}),
                }
                for index, query in enumerate(queries)
            ]
    examples = []
    derived: set[str] = set()
    for position, record in enumerate(records):
        if record.get("id") is None:
            record["id"] = content_id(
                "\x00".join(map(str, record.get("supports") or [])),
                f"{record.get('query')}\x00{record.get('candidates')}",
            )
            if record["id"] in derived:  # the same query twice: two queries, two answers (never merged)
                record["id"] = f"{record['id']}-{position}"
            derived.add(record["id"])
        examples.append(to_example(record, position, f"input #{position}"))
    check_unique_ids(examples)
    return examples


def columns_batch(
    columns: dict[str, list], collator: Any, eval_columns: Sequence[str], return_tensors: str | None
) -> BatchFeature:
    """A processor call's result: the feature columns, or (``return_tensors="pt"``) the collated model inputs with the
    evaluation columns as attributes (``batch.candidate_texts``)."""
    if return_tensors is None:
        return BatchFeature(columns)
    if return_tensors != "pt":
        raise ValueError(f"return_tensors must be None or 'pt', got {return_tensors!r}")
    names = [name for name in columns if name not in eval_columns]
    rows = len(columns[eval_columns[0]])
    batch = BatchFeature(collator([{name: columns[name][row] for name in names} for row in range(rows)]))
    for name in eval_columns:
        setattr(batch, name, columns[name])
    return batch


class WikihopDataCollator(GesaDataCollator):
    """``GesaDataCollator`` plus ``candidate_entity_mask`` ``(B, E)`` (padded 0), ``labels`` ``(B,)`` long and, with
    context-graph features, ``entity_graph_edges`` ``(B, K, 3)`` (padded with -1 rows)."""

    def __call__(self, features: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        if not features:
            raise ValueError("WikihopDataCollator got an empty batch")
        for row, feature in enumerate(features):
            if CANDIDATE_ENTITY_MASK not in feature:
                raise ValueError(
                    f"WikihopDataCollator: feature {row} has no {CANDIDATE_ENTITY_MASK!r}; build features with "
                    "WikihopProcessor"
                )
        labels = [feature["labels"] for feature in features] if "labels" in features[0] else None
        masks = [feature[CANDIDATE_ENTITY_MASK] for feature in features]
        graph_edges = [feature[GRAPH_EDGES] for feature in features] if GRAPH_EDGES in features[0] else None
        own = ("labels", CANDIDATE_ENTITY_MASK, GRAPH_EDGES)
        rest = [{key: value for key, value in feature.items() if key not in own} for feature in features]
        batch = super().__call__(rest)
        entity_length = batch["entity_ids"].size(1)
        batch[CANDIDATE_ENTITY_MASK] = self._pad_rows(
            [{CANDIDATE_ENTITY_MASK: mask} for mask in masks], CANDIDATE_ENTITY_MASK, entity_length, 0, np.int64
        )
        if labels is not None:
            batch["labels"] = torch.tensor([int(label) for label in labels], dtype=torch.long)
        if graph_edges is not None:
            padded = np.full((len(features), max(len(rows) for rows in graph_edges), 3), -1, dtype=np.int64)
            for row, rows in enumerate(graph_edges):
                if len(rows):
                    padded[row, : len(rows)] = rows
            batch[GRAPH_EDGES] = torch.from_numpy(padded)
        return batch


WikihopProcessor.register_for_auto_class("AutoProcessor")

__all__ = [
    "QangarooProcessorBase",
    "columns_batch",
    "query_examples",
    "CANDIDATE_ENTITY_MASK",
    "GRAPH_EDGES",
    "IGNORE_INDEX",
    "InputError",
    "WikihopDataCollator",
    "WikihopExample",
    "WikihopProcessor",
    "fair_cut",
    "find_mentions",
    "normalize_mention",
]
