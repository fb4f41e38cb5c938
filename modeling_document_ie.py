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
"""Document-level information extraction (SciREX, seed 002's 4.2.2) on an entity-aware backbone: mention
identification, salient clusters (coreference + saliency) and N-ary relations among the clusters, SciREX's pipeline
(Jain et al. 2020) on LUKE.

The backbone reads a document's pieces (``(P, L)`` token ids: 512-token pieces for ``--variant luke``, the whole
document in one piece for a long backbone) through one interface, ``encode``: ``input_ids``, ``attention_mask``,
optionally LUKE's entity inputs and a ``global_attention_mask``, giving ``last_hidden_state`` and
``entity_last_hidden_state``. What the heads read, top to bottom:

1. mentions: each word's first-token state -> BIO logits over ``processing_document_ie.BIO_LABELS`` (SciREX: a CRF
   over BIOUL; here softmax BIO);
2. mention representations: ``mention_representation="entities"`` (default, LUKE's span representation): a second
   backbone pass with one ``[MASK]`` entity per mention (its tokens as entity positions), ``[h_first ; h_last ;
   e_mention]``; ``"words"`` (SciREX's one pass): ``[h_first ; h_last ; mean h]`` over the mention's words; then
   SciREX's span features: relative position, type one-hot, the sentence's section features (10 values);
3. saliency: ``FFN(m) ; features -> 1`` (SciREX's ``SpanClassifier``);
4. coreference among same-type mentions: ``a_i . W b_j + u . a_i + u . b_j + c + w [same text]`` on ``a = FFN_a(m)``,
   ``b = FFN_b(m)`` (SciREX trains a separate BERT on mention-string pairs; its labels: same salient cluster or same
   lower-cased string, pairs of two cluster-less mentions left out); clusters by complete linkage at
   ``coreference_threshold``; a cluster is salient when one of its mentions is;
5. relations: a cluster's embedding is the mean of its mentions' representations (a type vector when it has none),
   each candidate (one cluster per type) ``FFN([c_material ; c_metric ; c_task ; c_method]) -> 1`` (SciREX's
   ``RelationExtractor`` at ``relation_cardinality=4``).

Training reads the gold mentions and clusters (SciREX's teacher forcing); the loss is the sum of the four (BIO
cross-entropy, saliency BCE, coreference BCE with both classes weighted alike, relation BCE). In evaluation (or with
``return_predictions=True``) the forward also runs the pipeline on its own predictions: BIO mentions, their
representations, saliency, clusters, the salient clusters' top ``relation_clusters_per_type`` per type, relation
scores, and returns them padded per document.

Flat module: copied next to a saved checkpoint, so it imports only its siblings and third-party packages.
"""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from transformers.utils import ModelOutput

from .loading_gesa import PipelineSpec
from .modeling_gesa import GesaHeadBase, classifier_dropout
from .structure_gesa import LUKE_MASK_ENTITY_ID

NUM_TYPES = 4  # ENTITY_TYPES: Material, Metric, Task, Method (records_scirex)
NUM_BIO = 1 + 2 * NUM_TYPES
NUM_FEATURES = 1 + NUM_TYPES + 5  # SciREX's span features: position, type, section features
IGNORE = -100
DOCUMENT_IE_TASK = "document-information-extraction"


@dataclass(frozen=True)
class DocumentIESettings:
    """The heads' settings (``config.document_ie``, a dict of these fields; unset ones take these defaults).

    Args:
        ffn_size: SciREX's feed-forward width (2 layers, GELU, dropout 0.2).
        mention_representation: ``"entities"`` (LUKE's: a [MASK] entity per mention) or ``"words"`` (one pass).
        max_mention_length: word tokens an entity reads (LUKE's ``max_mention_length``).
        saliency_threshold / coreference_threshold / relation_threshold: probabilities above which a mention is
            salient, two mentions corefer, a relation holds (SciREX tunes its saliency and relation thresholds on the
            development set; 0.5 here).
        relation_clusters_per_type: the salient clusters per type (most salient first) whose products are scored.
        max_mentions: predicted mentions kept per document (first in reading order).
    """

    ffn_size: int = 150
    mention_representation: str = "entities"
    max_mention_length: int = 30
    saliency_threshold: float = 0.5
    coreference_threshold: float = 0.5
    relation_threshold: float = 0.5
    relation_clusters_per_type: int = 8
    max_mentions: int = 1024

    def __post_init__(self) -> None:
        for name in ("ffn_size", "max_mention_length", "relation_clusters_per_type", "max_mentions"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"config.document_ie[{name!r}] must be a positive integer, got {value!r}")
        for name in ("saliency_threshold", "coreference_threshold", "relation_threshold"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
                raise ValueError(f"config.document_ie[{name!r}] must be a probability in [0, 1], got {value!r}")
        if self.mention_representation not in ("entities", "words"):
            raise ValueError(
                "config.document_ie['mention_representation'] must be 'entities' or 'words', got "
                f"{self.mention_representation!r}"
            )

    @classmethod
    def of(cls, config: Any) -> DocumentIESettings:
        """The settings a config holds (``document_ie``), checked: unknown keys and bad values are errors."""
        given = getattr(config, "document_ie", None) or {}
        if not isinstance(given, dict):
            raise ValueError(f"config.document_ie must be a dict of settings, got {type(given).__name__}")
        known = {field.name for field in dataclasses.fields(cls)}
        unknown = sorted(set(given) - known)
        if unknown:
            raise ValueError(f"config.document_ie has unknown settings {unknown}; known: {sorted(known)}")
        return cls(**given)


@dataclass
class DocumentIEOutput(ModelOutput):
    """
    Args:
        loss: the sum of the four losses (module docstring), with gold labels.
        ner_logits: `(B, W, 9)` BIO logits per word.
        mentions: `(B, N, 3)` predicted mentions `[start, end, type]` (word span, end exclusive; -1 padding).
        mention_saliency: `(B, N)` each predicted mention's saliency probability.
        mention_clusters: `(B, N)` each predicted mention's cluster (an index into the document's clusters).
        cluster_salient: `(B, K)` 1 for a salient cluster (K <= N clusters per document, -1 padding).
        cluster_types: `(B, K)` each cluster's type index (its mentions' most common).
        relations: `(B, R, 4)` the scored candidates, one salient cluster per type (-1 padding).
        relation_scores: `(B, R)` their probabilities; relation_predicted `(B, R)`: 1 above the threshold.
        hidden_states, attentions: the backbone's (words-only pass), on request.
    """

    loss: torch.FloatTensor | None = None
    ner_logits: torch.FloatTensor | None = None
    mentions: torch.LongTensor | None = None
    mention_saliency: torch.FloatTensor | None = None
    mention_clusters: torch.LongTensor | None = None
    cluster_salient: torch.LongTensor | None = None
    cluster_types: torch.LongTensor | None = None
    relations: torch.LongTensor | None = None
    relation_scores: torch.FloatTensor | None = None
    relation_predicted: torch.LongTensor | None = None
    hidden_states: tuple[torch.FloatTensor, ...] | None = None
    attentions: tuple[torch.FloatTensor, ...] | None = None


def feed_forward(inputs: int, size: int, dropout: float = 0.2) -> nn.Sequential:
    """SciREX's ``make_feedforward``: two layers of ``size``, GELU, dropout."""
    return nn.Sequential(nn.Linear(inputs, size), nn.GELU(), nn.Dropout(dropout), nn.Linear(size, size), nn.GELU(),
                         nn.Dropout(dropout))  # fmt: skip


# ----------------------------------------------------------------------------------------------- decoding helpers


def bio_spans(tags: list[int], limit: int) -> list[tuple[int, int, int]]:
    """``(start, end, type)`` of BIO label ids (an ``I-X`` continuing no ``X`` opens a mention), at most ``limit``."""
    mentions, start, kind = [], None, None
    for index, tag in enumerate([*tags, 0]):
        inside = tag > 0 and tag % 2 == 0 and kind == (tag - 2) // 2
        if kind is not None and not inside:
            mentions.append((start, index, kind))
            start, kind = None, None
        if tag > 0 and kind is None:
            start, kind = index, (tag - 1) // 2
    return mentions[:limit]


def complete_linkage(probabilities: torch.Tensor, threshold: float) -> list[int]:
    """Cluster ids (numbered in order of first mention) of ``N`` items from their pair probabilities ``(N, N)`` (-1:
    never together): the two clusters whose least likely pair is the most likely are merged while that pair's
    probability is above ``threshold``."""
    count = probabilities.size(0)
    similarity = probabilities.detach().double().cpu().numpy().copy()
    np.fill_diagonal(similarity, -1.0)
    parent = list(range(count))
    for _ in range(count - 1):
        best = int(similarity.argmax())
        i, j = divmod(best, count)
        if similarity[i, j] <= threshold:
            break
        merged = np.minimum(similarity[i], similarity[j])  # complete linkage: the least likely pair
        similarity[i, :], similarity[:, i] = merged, merged
        similarity[i, i] = -1.0
        similarity[j, :], similarity[:, j] = -1.0, -1.0  # j is gone
        parent[j] = i
    roots = []
    for item in range(count):
        root = item
        while parent[root] != root:
            root = parent[root]
        roots.append(root)
    order = {root: index for index, root in enumerate(dict.fromkeys(roots))}
    return [order[root] for root in roots]


class GesaForDocumentIE(GesaHeadBase):
    """SciREX's document IE on the backbone (module docstring): BIO mentions, saliency, coreference, 4-ary
    relations. ``config.document_ie``: ``DocumentIESettings``."""

    pipeline = PipelineSpec(DOCUMENT_IE_TASK, "pipeline_document_ie.DocumentIEPipeline")
    accepts_loss_kwargs = False

    def __init__(self, config: Any) -> None:
        super().__init__(config)
        self.settings = DocumentIESettings.of(config)
        size, hidden = self.settings.ffn_size, config.hidden_size
        mention = 3 * hidden + NUM_FEATURES
        self.dropout = classifier_dropout(config)
        self.tagger = nn.Linear(hidden, NUM_BIO)
        self.saliency_ffn = feed_forward(mention, size)
        self.saliency_scorer = nn.Linear(size + NUM_FEATURES, 1)
        self.coref_left, self.coref_right = feed_forward(mention, size), feed_forward(mention, size)
        self.coref_bilinear = nn.Linear(size, size, bias=False)
        self.coref_unary = nn.Linear(size, 1)
        self.coref_same_text = nn.Linear(1, 1, bias=False)
        self.cluster_type_vectors = nn.Embedding(NUM_TYPES, mention)
        self.relation_ffn = feed_forward(NUM_TYPES * mention, size)
        self.relation_scorer = nn.Linear(size, 1)
        self.post_init()

    # ------------------------------------------------------------------ the backbone interface

    def encode(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, entities: dict | None = None,
               **kwargs: Any) -> Any:  # fmt: skip
        """The backbone on the pieces ``(P, L)`` (with ``entities``: ``entity_ids`` ``(P, E)``,
        ``entity_attention_mask``, ``entity_position_ids`` ``(P, E, M)``): its ``last_hidden_state`` and
        ``entity_last_hidden_state``. A long backbone's ``global_attention_mask`` comes through ``kwargs``."""
        return self.gesa(input_ids, attention_mask=attention_mask, **(entities or {}), **kwargs, return_dict=True)

    def mention_entities(self, spans: list[list[tuple[int, int]]], first: torch.Tensor, last: torch.Tensor,
                         pieces: int, length: int) -> tuple[dict[str, torch.Tensor], list[torch.Tensor]]:  # fmt: skip
        """LUKE's entity inputs for one ``[MASK]`` entity per mention (its tokens in its first token's piece, at most
        ``max_mention_length``), and per document the flat index of each mention's entity in ``(P * E)``."""
        limit = self.settings.max_mention_length
        slots: list[list[list[int]]] = [[] for _ in range(pieces)]
        where = []
        for row, own in enumerate(spans):
            indices = []
            for start, end in own:
                a, b = int(first[row, start]), int(last[row, end - 1])
                piece, position = divmod(a, length)
                stop = b - piece * length if b // length == piece else length - 1
                positions = list(range(position, min(stop, position + limit - 1) + 1))
                indices.append((piece, len(slots[piece])))
                slots[piece].append(positions + [-1] * (limit - len(positions)))
            where.append(indices)
        width = max(1, max(len(slot) for slot in slots))
        device = first.device
        positions = torch.full((pieces, width, limit), -1, dtype=torch.long)
        mask = torch.zeros((pieces, width), dtype=torch.long)
        for piece, slot in enumerate(slots):
            if slot:
                positions[piece, : len(slot)] = torch.tensor(slot)
                mask[piece, : len(slot)] = 1
        flat = [torch.tensor([piece * width + slot for piece, slot in own], dtype=torch.long, device=device)
                for own in where]  # fmt: skip
        entities = {
            "entity_ids": torch.full((pieces, width), LUKE_MASK_ENTITY_ID, dtype=torch.long, device=device),
            "entity_attention_mask": mask.to(device),
            "entity_position_ids": positions.to(device),
        }
        return entities, flat

    # ------------------------------------------------------------------ heads

    def mention_representations(self, words: torch.Tensor, entity_states: torch.Tensor | None,
                                entity_index: list[torch.Tensor] | None, spans: list[list[tuple[int, int]]],
                                types: list[list[int]], first: torch.Tensor, last: torch.Tensor,
                                word_features: torch.Tensor) -> list[torch.Tensor]:  # fmt: skip
        """Per document ``(N, 3D + 10)``: the span representation (module docstring, 2.) and SciREX's features."""
        flat_words = words.reshape(-1, words.size(-1))
        flat_entities = None if entity_states is None else entity_states.reshape(-1, entity_states.size(-1))
        out = []
        for row, own in enumerate(spans):
            if not own:
                out.append(flat_words.new_zeros((0, 3 * words.size(-1) + NUM_FEATURES)))
                continue
            starts = torch.tensor([s for s, _ in own], device=words.device)
            ends = torch.tensor([e for _, e in own], device=words.device)
            head = flat_words[first[row, starts]]
            tail = flat_words[last[row, ends - 1]]
            if flat_entities is not None:
                third = flat_entities[entity_index[row]]
            else:
                count = int((first[row] >= 0).sum())
                states = flat_words[first[row, :count]]
                cumulative = torch.cat([states.new_zeros((1, states.size(-1))), states.cumsum(0)])
                third = (cumulative[ends] - cumulative[starts]) / (ends - starts)[:, None].to(states.dtype)
            length = max(1, int((first[row] >= 0).sum()))
            position = ((starts + ends).to(words.dtype) / 2 / length)[:, None]
            kinds = F.one_hot(torch.tensor(types[row], device=words.device), NUM_TYPES).to(words.dtype)
            sections = word_features[row, starts].to(words.dtype)
            out.append(torch.cat([head, tail, third, position, kinds, sections], dim=-1))
        return out

    def saliency_logits(self, mentions: torch.Tensor) -> torch.Tensor:
        """``(N,)`` saliency logits of mention representations ``(N, 3D + 10)``."""
        hidden = self.saliency_ffn(self.dropout(mentions))
        return self.saliency_scorer(torch.cat([hidden, mentions[:, -NUM_FEATURES:]], dim=-1)).squeeze(-1)

    def coreference_logits(self, mentions: torch.Tensor, same_text: torch.Tensor) -> torch.Tensor:
        """``(N, N)`` pair logits (module docstring, 4.); ``same_text`` ``(N, N)`` 0/1."""
        left, right = self.coref_left(self.dropout(mentions)), self.coref_right(self.dropout(mentions))
        unary_left, unary_right = self.coref_unary(left), self.coref_unary(right)
        scores = self.coref_bilinear(left) @ right.T + unary_left + unary_right.T
        scores = scores + self.coref_same_text(same_text.to(scores.dtype)[..., None]).squeeze(-1)
        return (scores + scores.T) / 2  # a pair's score does not depend on its order

    def cluster_embeddings(
        self, mentions: torch.Tensor, membership: torch.Tensor, types: torch.Tensor
    ) -> torch.Tensor:
        """``(C, 3D + 10)``: each cluster's mean mention representation, its type's vector when it has none."""
        membership = membership.to(mentions.dtype)
        counts = membership.sum(0)[:, None]
        means = membership.T @ mentions / counts.clamp(min=1)
        fallback = self.cluster_type_vectors(types.clamp(min=0))
        return torch.where(counts > 0, means, fallback)

    def relation_logits(self, clusters: torch.Tensor, candidates: torch.Tensor) -> torch.Tensor:
        """``(R,)`` logits of candidates ``(R, 4)`` (cluster indices) over cluster embeddings ``(C, .)``."""
        joined = clusters[candidates].reshape(candidates.size(0), -1)
        return self.relation_scorer(self.relation_ffn(self.dropout(joined))).squeeze(-1)

    # ------------------------------------------------------------------ forward

    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        word_positions: torch.LongTensor | None = None,
        word_end_positions: torch.LongTensor | None = None,
        word_features: torch.LongTensor | None = None,
        global_attention_mask: torch.LongTensor | None = None,
        ner_labels: torch.LongTensor | None = None,
        mention_spans: torch.LongTensor | None = None,
        mention_types: torch.LongTensor | None = None,
        saliency_labels: torch.LongTensor | None = None,
        mention_text_ids: torch.LongTensor | None = None,
        mention_clusters: torch.LongTensor | None = None,
        cluster_types: torch.LongTensor | None = None,
        relation_clusters: torch.LongTensor | None = None,
        relation_labels: torch.LongTensor | None = None,
        return_predictions: bool | None = None,
        return_dict: bool | None = None,
        **kwargs: Any,
    ) -> DocumentIEOutput | tuple:
        """``input_ids`` / ``attention_mask`` ``(P, L)``: the batch's pieces; ``word_positions`` /
        ``word_end_positions`` ``(B, W)``: each word's first / last token as a flat index into ``(P * L)`` (-1:
        padding); ``word_features`` ``(B, W, 5)``; ``global_attention_mask`` ``(P, L)`` for a long backbone. Gold
        (training): ``ner_labels`` ``(B, W)``, ``mention_spans`` ``(B, N, 2)``, ``mention_types``,
        ``saliency_labels``, ``mention_text_ids`` ``(B, N)``, ``mention_clusters`` ``(B, N, C)``, ``cluster_types``
        ``(B, C)``, ``relation_clusters`` ``(B, R, 4)``, ``relation_labels`` ``(B, R)`` (the processor's columns).
        ``return_predictions`` (default: in evaluation) runs the pipeline on the model's own mentions."""
        if input_ids is None or attention_mask is None or word_positions is None or word_end_positions is None:
            raise ValueError(
                "GesaForDocumentIE needs input_ids, attention_mask, word_positions and word_end_positions: build "
                "them with processing_document_ie.DocumentIEProcessor (its call collates documents)"
            )
        if word_features is None:
            word_features = torch.zeros((*word_positions.shape, 5), dtype=torch.long, device=input_ids.device)
        extra = {} if global_attention_mask is None else {"global_attention_mask": global_attention_mask}
        pieces, length = input_ids.shape
        words_out = self.encode(input_ids, attention_mask, None, **extra, **kwargs)
        states = words_out.last_hidden_state
        flat = states.reshape(pieces * length, -1)
        valid = word_positions >= 0
        word_states = flat[word_positions.clamp(min=0)] * valid[..., None].to(states.dtype)
        ner_logits = self.tagger(self.dropout(word_states))
        loss = None
        if ner_labels is not None:
            loss = F.cross_entropy(ner_logits.reshape(-1, NUM_BIO), ner_labels.reshape(-1), ignore_index=IGNORE)
            if mention_spans is not None:
                loss = loss + self.gold_losses(states, input_ids, attention_mask, word_positions, word_end_positions,
                                               word_features, extra, mention_spans, mention_types, saliency_labels,
                                               mention_text_ids, mention_clusters, cluster_types, relation_clusters,
                                               relation_labels)  # fmt: skip
        predictions = {}
        if return_predictions if return_predictions is not None else not self.training:
            predictions = self.predict(states, ner_logits, input_ids, attention_mask, word_positions,
                                       word_end_positions, word_features, extra)  # fmt: skip
        output = DocumentIEOutput(
            loss=loss, ner_logits=ner_logits, hidden_states=words_out.get("hidden_states"),
            attentions=words_out.get("attentions"), **predictions,
        )  # fmt: skip
        return output if return_dict is not False else output.to_tuple()

    def _mention_states(self, states, input_ids, attention_mask, first, last, word_features, extra, spans, types):
        """Mention representations of ``spans`` per document (a second pass for ``"entities"``)."""
        pieces, length = input_ids.shape
        if self.settings.mention_representation == "words" or not any(spans):
            words, entity_states, index = states, None, None
        else:
            entities, index = self.mention_entities(spans, first, last, pieces, length)
            out = self.encode(input_ids, attention_mask, entities, **extra)
            words, entity_states = out.last_hidden_state, out.entity_last_hidden_state
        return self.mention_representations(words, entity_states, index, spans, types, first, last, word_features)

    def gold_losses(self, states, input_ids, attention_mask, first, last, word_features, extra, mention_spans,
                    mention_types, saliency_labels, mention_text_ids, mention_clusters, cluster_types,
                    relation_clusters, relation_labels) -> torch.Tensor:  # fmt: skip
        """Saliency, coreference and relation losses on the gold mentions and clusters (teacher forcing)."""
        spans, types = [], []
        for row in range(mention_spans.size(0)):
            keep = mention_types[row] >= 0
            spans.append([tuple(span) for span in mention_spans[row][keep].tolist()])
            types.append(mention_types[row][keep].tolist())
        mentions = self._mention_states(states, input_ids, attention_mask, first, last, word_features, extra, spans,
                                        types)  # fmt: skip
        total = states.new_zeros(())
        for row, own in enumerate(mentions):
            count = own.size(0)
            if count == 0:
                continue
            labels = saliency_labels[row, :count].to(own.dtype)
            total = total + F.binary_cross_entropy_with_logits(self.saliency_logits(own), labels)
            text = mention_text_ids[row, :count]
            same_text = (text[:, None] == text[None, :]).long()
            members = mention_clusters[row, :count]
            together = (members.to(own.dtype) @ members.T.to(own.dtype)) > 0
            kinds = mention_types[row, :count]
            in_cluster = members.sum(-1) > 0
            pairs = (kinds[:, None] == kinds[None, :]) & (in_cluster[:, None] | in_cluster[None, :] | (same_text > 0))
            pairs &= torch.ones_like(pairs).triu(1)
            if pairs.any():
                logits = self.coreference_logits(own, same_text)[pairs]
                targets = (together | (same_text > 0))[pairs].to(own.dtype)
                losses = F.binary_cross_entropy_with_logits(logits, targets, reduction="none")
                parts = [losses[targets == value].mean() for value in (0.0, 1.0) if (targets == value).any()]
                total = total + sum(parts) / len(parts)  # both classes weighted alike (SciREX subsamples)
            keep = relation_labels[row] != IGNORE
            if keep.any():
                clusters = self.cluster_embeddings(own, members, cluster_types[row, : members.size(1)])
                logits = self.relation_logits(clusters, relation_clusters[row][keep])
                total = total + F.binary_cross_entropy_with_logits(logits, relation_labels[row][keep].to(own.dtype))
        return total

    @torch.no_grad()
    def predict(self, states, ner_logits, input_ids, attention_mask, first, last, word_features, extra) -> dict:
        """The pipeline on the model's own mentions (module docstring), padded per document."""
        settings = self.settings
        spans, types = [], []
        for row in range(ner_logits.size(0)):
            count = int((first[row] >= 0).sum())
            found = bio_spans(ner_logits[row, :count].argmax(-1).tolist(), settings.max_mentions)
            spans.append([(start, end) for start, end, _ in found])
            types.append([kind for _, _, kind in found])
        mentions = self._mention_states(states, input_ids, attention_mask, first, last, word_features, extra, spans,
                                        types)  # fmt: skip
        rows = []
        for row, own in enumerate(mentions):
            rows.append(self._predict_document(own, spans[row], types[row], input_ids, first[row], last[row]))
        return pad_predictions(rows, ner_logits.device, settings.relation_threshold)

    def _predict_document(self, mentions, spans, types, input_ids, first, last) -> dict[str, Any]:
        settings = self.settings
        count = len(spans)
        if count == 0:
            return {"mentions": [], "saliency": [], "clusters": [], "salient": [], "cluster_types": [],
                    "relations": [], "scores": []}  # fmt: skip
        saliency = torch.sigmoid(self.saliency_logits(mentions))
        flat_ids = input_ids.reshape(-1)
        texts = [tuple(flat_ids[int(first[s]) : int(last[e - 1]) + 1].tolist()) for s, e in spans]
        same_text = torch.tensor([[int(a == b) for b in texts] for a in texts], device=mentions.device)
        probabilities = torch.sigmoid(self.coreference_logits(mentions, same_text))
        labels, clusters = [0] * count, 0
        for kind in sorted(set(types)):  # mentions of one type only corefer: one clustering per type
            own = [index for index, other in enumerate(types) if other == kind]
            picked = torch.tensor(own, device=mentions.device)
            for index, label in zip(own, complete_linkage(probabilities[picked][:, picked],
                                                           settings.coreference_threshold), strict=True):  # fmt: skip
                labels[index] = clusters + label
            clusters = max(labels[index] for index in own) + 1
        order = {label: index for index, label in enumerate(dict.fromkeys(labels))}  # numbered in reading order
        labels = [order[label] for label in labels]
        membership = torch.zeros((count, clusters), device=mentions.device)
        membership[torch.arange(count), torch.tensor(labels)] = 1
        salient_score = torch.zeros(clusters, device=mentions.device).scatter_reduce(
            0, torch.tensor(labels, device=mentions.device), saliency, "amax", include_self=False
        )
        cluster_kinds = [types[labels.index(c)] for c in range(clusters)]  # one type per cluster (same-type pairs)
        salient = (salient_score > settings.saliency_threshold).long()
        by_type = [sorted((c for c in range(clusters) if cluster_kinds[c] == t and salient[c]),
                          key=lambda c: -float(salient_score[c]))[: settings.relation_clusters_per_type]
                   for t in range(NUM_TYPES)]  # fmt: skip
        candidates = list(itertools.product(*by_type))
        scores: list[float] = []
        if candidates:
            embeddings = self.cluster_embeddings(
                mentions, membership, torch.tensor(cluster_kinds, device=mentions.device)
            )
            logits = self.relation_logits(embeddings, torch.tensor(candidates, device=mentions.device))
            scores = torch.sigmoid(logits).tolist()
        return {"mentions": [[s, e, k] for (s, e), k in zip(spans, types, strict=True)], "saliency": saliency.tolist(),
                "clusters": labels, "salient": salient.tolist(), "cluster_types": cluster_kinds,
                "relations": [list(c) for c in candidates], "scores": scores}  # fmt: skip


def pad_predictions(rows: list[dict[str, Any]], device: torch.device, threshold: float) -> dict[str, torch.Tensor]:
    """Per-document predictions as padded tensors (``DocumentIEOutput``'s fields; -1 / 0 padding); a relation is
    predicted when its probability is above ``threshold``."""
    batch = len(rows)
    width = max(1, max(len(row["mentions"]) for row in rows))
    clusters = max(1, max(len(row["salient"]) for row in rows))
    candidates = max(1, max(len(row["relations"]) for row in rows))
    out = {
        "mentions": torch.full((batch, width, 3), -1, dtype=torch.long),
        "mention_saliency": torch.zeros((batch, width)),
        "mention_clusters": torch.full((batch, width), -1, dtype=torch.long),
        "cluster_salient": torch.full((batch, clusters), -1, dtype=torch.long),
        "cluster_types": torch.full((batch, clusters), -1, dtype=torch.long),
        "relations": torch.full((batch, candidates, NUM_TYPES), -1, dtype=torch.long),
        "relation_scores": torch.zeros((batch, candidates)),
        "relation_predicted": torch.zeros((batch, candidates), dtype=torch.long),
    }
    for index, row in enumerate(rows):
        count, found, scored = len(row["mentions"]), len(row["salient"]), len(row["relations"])
        if count:
            out["mentions"][index, :count] = torch.tensor(row["mentions"])
            out["mention_saliency"][index, :count] = torch.tensor(row["saliency"])
            out["mention_clusters"][index, :count] = torch.tensor(row["clusters"])
            out["cluster_salient"][index, :found] = torch.tensor(row["salient"])
            out["cluster_types"][index, :found] = torch.tensor(row["cluster_types"])
        if scored:
            out["relations"][index, :scored] = torch.tensor(row["relations"])
            out["relation_scores"][index, :scored] = torch.tensor(row["scores"])
            out["relation_predicted"][index, :scored] = (torch.tensor(row["scores"]) > threshold).long()
    return {key: value.to(device) for key, value in out.items()}


GesaForDocumentIE.register_for_auto_class("AutoModelForTokenClassification")

__all__ = ["DOCUMENT_IE_TASK", "DocumentIEOutput", "DocumentIESettings", "GesaForDocumentIE", "bio_spans",
           "complete_linkage", "pad_predictions"]  # fmt: skip
