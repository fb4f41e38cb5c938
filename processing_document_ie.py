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
"""Document IE features (SciREX): one feature per document, its words in pieces the backbone reads, the mentions,
clusters and relation candidates its heads train on; the batches; a raw text as a document (spaCy sentences).

A document's words are tokenized once and cut into pieces of at most ``max_seq_length`` tokens (``<s>`` and
``</s>`` included) at sentence boundaries (a sentence longer than a piece at a word boundary outside mentions):
``--variant luke`` reads 512-token pieces, each alone, as SciREX's BERT read its sections; a long backbone gets
``max_seq_length`` as long as the document and reads it in one piece.

Feature columns (``W`` words, ``N`` gold mentions, ``C`` gold clusters, ``R`` relation candidates):

- ``input_ids``: the pieces (lists of token ids); ``word_piece``, ``word_start``, ``word_end`` ``(W,)``: each word's
  piece and its first and last token there; ``word_features`` ``(W, 5)``: SciREX's section features of its sentence
  (``SECTION_FEATURES``: the section's first sentence, "abstract", "introduction", dataset words, experiment words);
- labelled documents only: ``ner_labels`` ``(W,)`` (BIO ids of ``BIO_LABELS``), ``mention_spans`` ``(N, 2)``,
  ``mention_types`` ``(N,)`` (``ENTITY_TYPES`` index), ``saliency_labels`` ``(N,)`` (1: in a salient cluster),
  ``mention_text_ids`` ``(N,)`` (same id: same lower-cased text), ``mention_clusters`` ``(N, C)`` (membership),
  ``cluster_types`` ``(C,)``, ``relation_clusters`` ``(R, 4)`` (one cluster per type, ``ENTITY_TYPES`` order) and
  ``relation_labels`` ``(R,)``.

The clusters, their types and the relation candidates are SciREX's reader's (``scirex_full_reader.py``): a method's
sub-methods that no relation names join it; a cluster's type is the one its relations give it, else its mentions'
most common type; the candidates are every product of one cluster per type, labelled 1 when a gold relation joins
them (at most ``max_relation_candidates``: the positives, then the first negatives in product order).

Flat module: copied next to a saved document-IE checkpoint, so it imports only its siblings and third-party packages.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import torch

from .extras_gesa import require
from .processing_base_gesa import ProcessorBase
from .records_scirex import ENTITY_TYPES, Mention, ScirexDocument

BIO_LABELS = ("O", *(f"{prefix}-{kind}" for kind in ENTITY_TYPES for prefix in ("B", "I")))
SECTION_FEATURES = ("Heading", "Abstract", "Introduction", "Dataset", "Experiment")
DATASET_WORDS = ("dataset", "corpus", "corpora")
EXPERIMENT_WORDS = ("experiment", "evaluation", "evaluate")
IGNORE = -100


def bio_tags(length: int, mentions: Sequence[Mention]) -> list[int]:
    """BIO label ids (``BIO_LABELS``) of ``length`` words with ``mentions`` (non-overlapping)."""
    tags = [0] * length
    for mention in mentions:
        kind = ENTITY_TYPES.index(mention.type)
        tags[mention.start] = 1 + 2 * kind
        for index in range(mention.start + 1, mention.end):
            tags[index] = 2 + 2 * kind
    return tags


def section_features(document: ScirexDocument) -> list[list[int]]:
    """Per word, SciREX's section features (``SECTION_FEATURES``) of its sentence (``extract_sentence_features``)."""
    features = [[0] * len(SECTION_FEATURES) for _ in document.words]
    sections = iter(document.sections)
    section = next(sections)
    first = True
    for start, end in document.sentences:
        while start >= section[1]:
            section, first = next(sections), True
        text = " ".join(document.words[start:end]).lower()
        own = {
            "Heading": first, "Abstract": "abstract" in text, "Introduction": "introduction" in text,
            "Dataset": any(word in text for word in DATASET_WORDS),
            "Experiment": any(word in text for word in DATASET_WORDS + EXPERIMENT_WORDS),
        }  # fmt: skip
        row = [int(own[name]) for name in SECTION_FEATURES]
        for index in range(start, end):
            features[index] = row
        first = False
    return features


def training_clusters(document: ScirexDocument) -> tuple[list[str], list[list[tuple[int, int]]], list[int]]:
    """The salient clusters SciREX's reader trains on: names, spans and type index (``-1``: no type), each method
    with the sub-methods no relation names."""
    clusters = {cluster.name: list(cluster.spans) for cluster in document.clusters if cluster.salient}
    named = {name: kind for relation in document.relations for kind, name in zip(ENTITY_TYPES, relation.names,
                                                                                   strict=True)}  # fmt: skip
    for method, subs in document.method_subrelations.items():
        for _, name in subs:
            if name in clusters and name != method and name not in named:
                clusters[method] = sorted(set(clusters[method] + clusters.pop(name)))
    types = {mention.span: mention.type for mention in document.mentions}
    kinds = []
    for name, spans in clusters.items():
        if name in named:
            kinds.append(ENTITY_TYPES.index(named[name]))
        elif spans:
            counts = Counter(types[span] for span in spans)
            kinds.append(ENTITY_TYPES.index(max(ENTITY_TYPES, key=lambda kind: counts[kind])))
        else:
            kinds.append(-1)
    return list(clusters), list(clusters.values()), kinds


class DocumentIEProcessor(ProcessorBase):
    """Encode SciREX documents for the document IE heads and collate them into batches (module docstring).

    Args:
        tokenizer: a fast LUKE (RoBERTa BPE) tokenizer, the checkpoint's own.
        max_seq_length: tokens per piece, ``<s>`` and ``</s>`` included (512: LUKE's pieces).
        max_relation_candidates: relation candidates kept per training document.
        spacy_model: the spaCy pipeline a raw text's sentences come from (``None``: spaCy's rule-based sentencizer).
    """

    cap_warnings = {
        "words_cut": "{words_cut} words longer than max_seq_length={max_seq_length} tokens were cut to fit a piece",
        "candidates_cut": (
            "{candidates_cut} relation candidates beyond max_relation_candidates="
            "{max_relation_candidates} were left out of training"
        ),  # fmt: skip
    }
    per_process_state = ("_nlp",)

    def __init__(
        self,
        tokenizer: Any = None,
        max_seq_length: int = 512,
        max_relation_candidates: int = 4096,
        spacy_model: str | None = None,
    ) -> None:
        if tokenizer is None:
            raise ValueError("DocumentIEProcessor needs the checkpoint's LUKE tokenizer")
        for name, value, least in (("max_seq_length", max_seq_length, 8),
                                   ("max_relation_candidates", max_relation_candidates, 1)):  # fmt: skip
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise ValueError(f"DocumentIEProcessor: {name} must be an integer >= {least}, got {value!r}")
        super().__init__(tokenizer)
        self.max_seq_length, self.max_relation_candidates = max_seq_length, max_relation_candidates
        self.spacy_model = spacy_model
        self._nlp = None

    # ------------------------------------------------------------------ pieces

    def _word_tokens(self, words: Sequence[str]) -> list[list[int]]:
        """Each word's token ids as it reads in the words joined by spaces."""
        encodings = self._tokenizer_backend().encode_batch(
            [word if index == 0 else " " + word for index, word in enumerate(words)], add_special_tokens=False
        )
        return [encoding.ids for encoding in encodings]

    def pieces(self, document: ScirexDocument, tokens: Sequence[Sequence[int]]) -> list[tuple[int, int]]:
        """Word spans ``[start, end)`` of the pieces: whole sentences while they fit (a mention's sentences stay
        together), a longer sentence cut at the last word boundary outside a mention that fits."""
        room = self.max_seq_length - 2
        inside = [False] * (len(document.words) + 1)  # a cut before word i would split a mention
        for mention in document.mentions:
            for index in range(mention.start + 1, mention.end):
                inside[index] = True
        bounds = [start for start, _ in document.sentences if not inside[start]] + [len(document.words)]
        pieces, start, used = [], 0, 0
        for begin, end in itertools.pairwise(bounds):
            size = sum(min(len(tokens[i]), room) for i in range(begin, end))
            if used and used + size > room:
                pieces.append((start, begin))
                start, used = begin, 0
            if size <= room:
                used += size
                continue
            for index in range(begin, end):  # a sentence longer than a piece: cut between words
                width = min(len(tokens[index]), room)
                if used and used + width > room and not inside[index]:
                    pieces.append((start, index))
                    start, used = index, 0
                used += width
        pieces.append((start, len(document.words)))
        return pieces

    # ------------------------------------------------------------------ features

    def encode(self, document: ScirexDocument) -> dict[str, Any]:
        """One document's feature (module docstring); training columns when it is labelled."""
        tokens = self._word_tokens(document.words)
        room = self.max_seq_length - 2
        tokenizer = self.tokenizer
        feature: dict[str, Any] = {"input_ids": [], "word_piece": [], "word_start": [], "word_end": []}
        for piece, (start, end) in enumerate(self.pieces(document, tokens)):
            ids = [tokenizer.cls_token_id]
            for index in range(start, end):
                own = tokens[index][:room] or [tokenizer.unk_token_id]
                self.stats["words_cut"] += len(tokens[index]) > room
                if len(ids) - 1 + len(own) > room:  # a mention wider than a piece: its words cut short
                    own = own[: max(1, room - len(ids) + 1)]
                feature["word_piece"].append(piece)
                feature["word_start"].append(len(ids))
                ids.extend(own)
                feature["word_end"].append(len(ids) - 1)
            feature["input_ids"].append([*ids[: room + 1], tokenizer.sep_token_id])
        feature["word_start"] = [min(value, room) for value in feature["word_start"]]
        feature["word_end"] = [min(value, room) for value in feature["word_end"]]
        feature["word_features"] = section_features(document)
        if document.labelled:
            feature.update(self.training_columns(document))
        return feature

    def training_columns(self, document: ScirexDocument) -> dict[str, Any]:
        """The gold columns of a labelled document (module docstring)."""
        mentions = list(document.mentions)
        index = {mention.span: i for i, mention in enumerate(mentions)}
        names, spans, kinds = training_clusters(document)
        salient = {span for cluster in document.clusters if cluster.salient for span in cluster.spans}
        membership = [[0] * len(names) for _ in mentions]
        for cluster, members in enumerate(spans):
            for span in members:
                membership[index[span]][cluster] = 1
        texts: dict[str, int] = {}
        by_type = [[c for c, kind in enumerate(kinds) if kind == t] for t in range(len(ENTITY_TYPES))]
        gold = {tuple(names.index(name) for name in relation.names) for relation in document.relations
                if all(name in names for name in relation.names)}  # fmt: skip
        positives = [candidate for candidate in itertools.product(*by_type) if candidate in gold]
        negatives = [candidate for candidate in itertools.product(*by_type) if candidate not in gold]
        kept = (positives + negatives)[: self.max_relation_candidates]
        self.stats["candidates_cut"] += len(positives) + len(negatives) - len(kept)
        return {
            "ner_labels": bio_tags(len(document.words), mentions),
            "mention_spans": [[m.start, m.end] for m in mentions],
            "mention_types": [ENTITY_TYPES.index(m.type) for m in mentions],
            "saliency_labels": [int(m.span in salient) for m in mentions],
            "mention_text_ids": [texts.setdefault(document.text(m.span).lower(), len(texts)) for m in mentions],
            "mention_clusters": membership,
            "cluster_types": kinds,
            "relation_clusters": [list(candidate) for candidate in kept],
            "relation_labels": [int(candidate in gold) for candidate in kept],
        }

    def encode_all(self, documents: Sequence[ScirexDocument]) -> list[dict[str, Any]]:
        """Every document's feature, what was cut reported once."""
        features = [self.encode(document) for document in documents]
        self._report(self.stats)
        return features

    # ------------------------------------------------------------------ batches

    def __call__(self, features: Sequence[Mapping[str, Any]]) -> dict[str, torch.Tensor]:
        """A batch of document features: the pieces of all documents stacked ``(P, L)``, each word's first and last
        token as a flat index into them ``(B, W)`` (``-1``: padding), the rest padded per document."""
        pieces = [piece for feature in features for piece in feature["input_ids"]]
        length = max(len(piece) for piece in pieces)
        pad = self.tokenizer.pad_token_id
        batch = {
            "input_ids": torch.tensor([piece + [pad] * (length - len(piece)) for piece in pieces]),
            "attention_mask": torch.tensor([[1] * len(piece) + [0] * (length - len(piece)) for piece in pieces]),
        }
        words = max(len(feature["word_piece"]) for feature in features)
        first = torch.full((len(features), words), -1)
        last = torch.full((len(features), words), -1)
        offset = 0
        for row, feature in enumerate(features):
            piece = torch.tensor(feature["word_piece"]) + offset
            count = len(feature["word_piece"])
            first[row, :count] = piece * length + torch.tensor(feature["word_start"])
            last[row, :count] = piece * length + torch.tensor(feature["word_end"])
            offset += len(feature["input_ids"])
        batch["word_positions"], batch["word_end_positions"] = first, last
        batch["word_features"] = _pad([f["word_features"] for f in features], 0, (words, len(SECTION_FEATURES)))
        if all("ner_labels" in feature for feature in features):
            mentions = max(1, max(len(f["mention_types"]) for f in features))
            clusters = max(1, max(len(f["cluster_types"]) for f in features))
            candidates = max(1, max(len(f["relation_labels"]) for f in features))
            batch.update(
                ner_labels=_pad([f["ner_labels"] for f in features], IGNORE, (words,)),
                mention_spans=_pad([f["mention_spans"] for f in features], -1, (mentions, 2)),
                mention_types=_pad([f["mention_types"] for f in features], -1, (mentions,)),
                saliency_labels=_pad([f["saliency_labels"] for f in features], IGNORE, (mentions,)),
                mention_text_ids=_pad([f["mention_text_ids"] for f in features], -1, (mentions,)),
                mention_clusters=_pad([f["mention_clusters"] for f in features], 0, (mentions, clusters)),
                cluster_types=_pad([f["cluster_types"] for f in features], -1, (clusters,)),
                relation_clusters=_pad([f["relation_clusters"] for f in features], -1, (candidates, 4)),
                relation_labels=_pad([f["relation_labels"] for f in features], IGNORE, (candidates,)),
            )
        return batch

    def get_data_collator(self) -> DocumentIEProcessor:
        return self

    # ------------------------------------------------------------------ raw text

    def document_from_text(self, text: str, doc_id: str = "text") -> ScirexDocument:
        """A raw text as an unlabelled document: spaCy's words and sentences (one section)."""
        if not isinstance(text, str) or not text.split():
            raise ValueError("the text is empty: give the document's text as one string")
        if self._nlp is None:
            spacy = require("spacy", "splitting a raw text into sentences")
            if self.spacy_model is None:
                self._nlp = spacy.blank("en")
                self._nlp.add_pipe("sentencizer")
            else:
                self._nlp = spacy.load(self.spacy_model)
        parsed = self._nlp(text)
        words, sentences = [], []
        for sentence in parsed.sents:
            tokens = [token.text for token in sentence if token.text.strip()]
            if tokens:
                sentences.append((len(words), len(words) + len(tokens)))
                words.extend(tokens)
        return ScirexDocument(doc_id, tuple(words), tuple(sentences), ((0, len(words)),), labelled=False)


def _pad(rows: Sequence[Any], value: int, shape: tuple[int, ...]) -> torch.Tensor:
    """Per-document nested lists padded with ``value`` to ``(B, *shape)``."""
    out = torch.full((len(rows), *shape), value, dtype=torch.long)
    for row, data in enumerate(rows):
        if len(data) == 0:
            continue
        tensor = torch.tensor(data, dtype=torch.long)
        out[(row, *(slice(0, size) for size in tensor.shape))] = tensor
    return out


DocumentIEProcessor.register_for_auto_class("AutoProcessor")

__all__ = [
    "BIO_LABELS",
    "SECTION_FEATURES",
    "DocumentIEProcessor",
    "bio_tags",
    "section_features",
    "training_clusters",
]
