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
"""Seed 002's pre-training objectives on GESA's (or LUKE's, `ablation="luke"`) encoder: LUKE's masked words and
masked entities (3.1.1, eq. 23), ERICA's entity and relation discrimination (3.2, eqs. 25-26) and the KBIR-inspired
boundary infilling, length prediction and replacement classification (4.1.1, eqs. 27-30), as one head,
`GesaForEntityPreTraining`, in the paper's order: the entity representations (eq. 25), ERICA's two contrastive losses,
KBIR's infilling head (eqs. 27-29) and replacement head (eq. 30), then the head that sums them.

Which losses a batch trains is what its inputs carry (the collator of `training.entity_objectives` builds them for the
objectives of `config.pretraining_objectives`); the weights are the config's (`alpha`, `gamma`, `sigma`, `delta`):
`loss = alpha L_MLM + L_MEP + L_ED + L_RD + gamma L_Infill + sigma L_LP + delta L_KRC`. Each loss is kept for the
training log (`pop_logged_losses`); evaluation counts each objective's accuracy beside its chance level
(`pop_evaluation_metrics`).

Flat module: copied next to every saved checkpoint, so it imports only its siblings.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from transformers.activations import ACT2FN
from transformers.processing_utils import Unpack
from transformers.utils import ModelOutput, can_return_tuple

from .checks_gesa import IGNORE_INDEX, pop_inputs
from .configuration_gesa import PRETRAINING_OBJECTIVES, PRETRAINING_SETTINGS
from .modeling_gesa import GesaModel, with_inputs_of
from .modeling_gesa_entity import GesaForMaskedLM, GesaMaskedLMInputs, LoggedLosses, _passed, masked_lm_loss

# the losses of the head, in the order of the log lines and of `GesaEntityPreTrainingOutput`
LOSSES = ("mlm_loss", "mep_loss", "ed_loss", "rd_loss", "infill_loss", "lp_loss", "krc_loss")
# each loss's weight in the sum: the config setting that holds it (eqs. 29-30), 1 for the others (eqs. 23, 26)
LOSS_WEIGHTS = {"mlm_loss": "alpha", "infill_loss": "gamma", "lp_loss": "sigma", "krc_loss": "delta"}


def objective_settings(config: Any) -> dict[str, Any]:
    """`config.pretraining_objectives` with every setting `PRETRAINING_SETTINGS` has (its defaults where unset)."""
    return {**PRETRAINING_SETTINGS, **(getattr(config, "pretraining_objectives", None) or {})}


def objective_losses(objectives: list[str] | str) -> list[str]:
    """The losses (`mlm`, `mep`, `ed`, ...) a list of objective names trains, each once, in `LOSSES` order."""
    names = [objectives] if isinstance(objectives, str) else objectives
    wanted = {loss for name in names for loss in PRETRAINING_OBJECTIVES[name]}
    return [loss.removesuffix("_loss") for loss in LOSSES if loss.removesuffix("_loss") in wanted]


# ----------------------------------------------------------------------------------------------- ERICA (3.2)


def entity_representations(
    words: torch.Tensor, mention_spans: torch.Tensor, mention_entities: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Eq. 25: each mention the mean of its word states, each entity the mean of its mentions.

    Args:
        words: `(B, L, D)` word states.
        mention_spans: `(B, M, 2)` each mention's first word and its end (exclusive); padding `-1`.
        mention_entities: `(B, M)` the entity (`0 .. N-1` within its document) of each mention; padding `-1`.

    Returns:
        `(B, N, D)` entity representations and `(B, N)` whether the document has that entity (a mention of it).
    """
    length = words.size(1)
    positions = torch.arange(length, device=words.device)
    starts, ends = mention_spans[..., :1], mention_spans[..., 1:]
    inside = ((positions >= starts) & (positions < ends) & (mention_entities[..., None] >= 0)).to(words.dtype)
    mentions = inside @ words / inside.sum(-1, keepdim=True).clamp(min=1)  # (B, M, D)
    count = int(mention_entities.max()) + 1 if mention_entities.numel() else 0
    member = F.one_hot(mention_entities.clamp(min=0), max(count, 1)).to(words.dtype)  # (B, M, N)
    member = member * (inside.sum(-1, keepdim=True) > 0)
    totals = member.sum(1)  # (B, N)
    entities = member.transpose(1, 2) @ mentions / totals.clamp(min=1)[..., None]
    return entities, totals > 0


def nt_xent(scores: torch.Tensor, positive: torch.Tensor, candidates: torch.Tensor) -> torch.Tensor:
    """ERICA's NT-Xent loss per anchor: `-log exp(s_pos) / (exp(s_pos) + sum_neg exp(s_neg))` over `scores` `(A, C)`
    (cosine similarities over the temperature), the positive's column `positive` `(A,)` and the columns allowed as
    positive or negative `candidates` `(A, C)`."""
    masked = scores.masked_fill(~candidates, torch.finfo(scores.dtype).min)
    return F.cross_entropy(masked, positive, reduction="none")


def entity_discrimination(
    entities: torch.Tensor, present: torch.Tensor, heads: torch.Tensor, tails: torch.Tensor, temperature: float
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None:
    """ERICA's entity discrimination (ED): the head entity's representation, its document read after the relation
    and the head's name, must find the tail among the document's other entities (cosine / temperature, NT-Xent).

    Args:
        entities, present: `entity_representations`' outputs.
        heads, tails: `(B,)` each document's query head and gold tail entity; `-1`: the document has no ED query.

    Returns:
        `(loss per query, hit per query, candidates per query)`, or `None` when the batch has no query.
    """
    asked = (heads >= 0) & (tails >= 0)
    if not asked.any():
        return None
    rows = asked.nonzero().flatten()
    normal = F.normalize(entities[rows], dim=-1)
    query = normal[torch.arange(len(rows)), heads[rows]]
    scores = (normal @ query[..., None]).squeeze(-1) / temperature  # (Q, N)
    candidates = present[rows].clone()
    candidates[torch.arange(len(rows)), heads[rows]] = False
    loss = nt_xent(scores, tails[rows], candidates)
    masked = scores.masked_fill(~candidates, torch.finfo(scores.dtype).min)
    return loss, masked.argmax(-1) == tails[rows], candidates.sum(-1)


def relation_discrimination(
    entities: torch.Tensor,
    pairs: torch.Tensor,
    partners: torch.Tensor,
    negatives: torch.Tensor,
    temperature: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None:
    """ERICA's relation discrimination (RD): a pair's relation representation `[e_head ; e_tail]` must be closer
    (cosine / temperature) to another pair of the same relation, from any document of the batch, than to the pairs
    of other relations (`no_relation` pairs among them).

    Args:
        entities: `(B, N, D)` entity representations.
        pairs: `(P, 3)` `[document, head entity, tail entity]` of each pair.
        partners: `(P,)` the row of each anchor's positive pair; `-1`: not an anchor.
        negatives: `(P, P)` the negatives of each anchor.

    Returns:
        `(loss per anchor, hit per anchor, negatives per anchor)`, or `None` when the batch has no anchor.
    """
    anchors = (partners >= 0).nonzero().flatten()
    if len(anchors) == 0:
        return None
    relations = torch.cat([entities[pairs[:, 0], pairs[:, 1]], entities[pairs[:, 0], pairs[:, 2]]], dim=-1)
    normal = F.normalize(relations, dim=-1)
    scores = normal[anchors] @ normal.T / temperature  # (A, P)
    candidates = negatives[anchors].clone()
    candidates[torch.arange(len(anchors)), partners[anchors]] = True
    loss = nt_xent(scores, partners[anchors], candidates)
    masked = scores.masked_fill(~candidates, torch.finfo(scores.dtype).min)
    return loss, masked.argmax(-1) == partners[anchors], negatives[anchors].sum(-1)


# ----------------------------------------------------------------------------------------------- KBIR (4.1.1)


class MlpWithLayerNorm(nn.Module):
    """SpanBERT's / KBIR's two-layer MLP: `LN(act(W2 LN(act(W1 x))))`."""

    def __init__(self, config: Any, input_size: int) -> None:
        super().__init__()
        self.dense1 = nn.Linear(input_size, config.hidden_size)
        self.layer_norm1 = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dense2 = nn.Linear(config.hidden_size, config.hidden_size)
        self.layer_norm2 = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.activation = ACT2FN[config.hidden_act]

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        hidden = self.layer_norm1(self.activation(self.dense1(hidden)))
        return self.layer_norm2(self.activation(self.dense2(hidden)))


def boundary_states(words: torch.Tensor, boundaries: torch.Tensor) -> torch.Tensor:
    """`[x_{s-1} ; x_{e+1}]` `(B, K, 2D)` of the word states `(B, L, D)` at `boundaries` `(B, K, 2)`."""
    index = boundaries.clamp(min=0, max=words.size(1) - 1)
    hidden = words.size(-1)
    left = words.gather(1, index[..., 0, None].expand(-1, -1, hidden))
    right = words.gather(1, index[..., 1, None].expand(-1, -1, hidden))
    return torch.cat([left, right], dim=-1)


def roc_auc(scores: Sequence[float], targets: Sequence[int]) -> float:
    """ROC AUC: the share of (target 1, target 0) pairs whose 1 scores higher, ties counted half; 0.5 where one
    class is absent."""
    scores_t, targets_t = torch.tensor(scores, dtype=torch.float64), torch.tensor(targets)
    positive, negative = scores_t[targets_t == 1, None], scores_t[None, targets_t == 0]
    if not positive.numel() or not negative.numel():
        return 0.5
    return float((positive > negative).double().mean() + 0.5 * (positive == negative).double().mean())


class BoundaryInfillingHead(nn.Module):
    """KBI (eqs. 27-29): an entity span replaced by ONE `[MASK]` is infilled token by token from its two boundary
    words and a position embedding, `y_i = f(x_{s-1}, x_{e+1}, p_i)` (`f`: the MLP, then the word decoder, which
    starts as the word table), and a linear classifier on the boundary words predicts the span's length (KBIR's released head: length
    classes `0 .. S-1`, a longer span's class `S-1`)."""

    def __init__(self, config: Any, max_span_length: int, position_size: int) -> None:
        super().__init__()
        self.max_span_length = max_span_length
        self.position_embeddings = nn.Embedding(max_span_length, position_size)
        self.mlp = MlpWithLayerNorm(config, 2 * config.hidden_size + position_size)
        self.decoder = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.bias = nn.Parameter(torch.zeros(config.vocab_size))
        self.length_classifier = nn.Linear(2 * config.hidden_size, max_span_length)

    def forward(self, boundaries: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """`boundaries` `(n, 2D)` -> token logits `(n, S, V)` and length logits `(n, S)`."""
        count, size = boundaries.size(0), self.max_span_length
        positions = self.position_embeddings.weight[None].expand(count, -1, -1)
        hidden = self.mlp(torch.cat([boundaries[:, None].expand(-1, size, -1), positions], dim=-1))
        return self.decoder(hidden) + self.bias, self.length_classifier(boundaries)


# ----------------------------------------------------------------------------------------------- the head


@dataclass
class GesaEntityPreTrainingOutput(ModelOutput):
    """
    Args:
        loss: the weighted sum of the losses given (module docstring).
        mlm_loss, mep_loss, ed_loss, rd_loss, infill_loss, lp_loss, krc_loss: each objective's loss (unweighted),
            when its inputs are given.
        logits: `(B, L, V)` masked-word logits; entity_logits: `(B, E, entity_vocab_size)` masked-entity logits.
        hidden_states, entity_hidden_states, attentions: the encoder's, on request.
    """

    loss: torch.FloatTensor | None = None
    mlm_loss: torch.FloatTensor | None = None
    mep_loss: torch.FloatTensor | None = None
    ed_loss: torch.FloatTensor | None = None
    rd_loss: torch.FloatTensor | None = None
    infill_loss: torch.FloatTensor | None = None
    lp_loss: torch.FloatTensor | None = None
    krc_loss: torch.FloatTensor | None = None
    logits: torch.FloatTensor | None = None
    entity_logits: torch.FloatTensor | None = None
    hidden_states: tuple[torch.FloatTensor, ...] | None = None
    entity_hidden_states: tuple[torch.FloatTensor, ...] | None = None
    attentions: tuple[torch.FloatTensor, ...] | None = None


class GesaEntityPreTrainingInputs(GesaMaskedLMInputs, total=False):
    """The objectives' own inputs (`training.entity_objectives.EntityObjectivesCollator` builds them)."""

    erica_mention_spans: torch.LongTensor | None
    erica_mention_entities: torch.LongTensor | None
    ed_heads: torch.LongTensor | None
    ed_tails: torch.LongTensor | None
    rd_pairs: torch.LongTensor | None
    rd_partners: torch.LongTensor | None
    rd_negatives: torch.Tensor | None
    kbi_boundaries: torch.LongTensor | None
    kbi_labels: torch.LongTensor | None
    kbi_length_labels: torch.LongTensor | None
    krc_boundaries: torch.LongTensor | None
    krc_labels: torch.LongTensor | None


class GesaForEntityPreTraining(LoggedLosses, GesaForMaskedLM):
    """LUKE's masked-LM + masked-entity head (`GesaForMaskedLM`) with ERICA's and KBIR's objectives (module
    docstring): ERICA needs no weights of its own (cosine similarities of mean-pooled states); KBI adds the infilling
    head (`infill`), KRC a linear classifier on the boundary words (`replacement_classifier`). The infilling decoder
    starts as the word table (`from_luke_pretrained`)."""

    def __init__(self, config: Any) -> None:
        super().__init__(config)
        settings = objective_settings(config)
        self.infill = BoundaryInfillingHead(config, settings["kbi_max_span_length"], settings["kbi_position_size"])
        self.replacement_classifier = nn.Linear(2 * config.hidden_size, 2)
        self.post_init()

    @classmethod
    def from_luke_pretrained(cls, *args: Any, **kwargs: Any) -> GesaForEntityPreTraining:
        """`GesaForMaskedLM.from_luke_pretrained`; the infilling decoder starts as LUKE's word table (KBIR's is tied
        to it; the project's heads keep their decoders untied, as `lm_head`)."""
        model = super().from_luke_pretrained(*args, **kwargs)
        with torch.no_grad():
            model.infill.decoder.weight.copy_(model.gesa.embeddings.word_embeddings.weight)
        return model

    @property
    def objectives(self) -> list[str]:
        """The losses the config's objectives train (`objective_losses`)."""
        return objective_losses(objective_settings(self.config)["objectives"])

    @can_return_tuple
    @with_inputs_of(GesaModel.forward, own=GesaEntityPreTrainingInputs)
    def forward(
        self, input_ids: torch.LongTensor | None = None, **kwargs: Unpack[GesaEntityPreTrainingInputs]
    ) -> GesaEntityPreTrainingOutput:
        """`labels` / `entity_labels` as `GesaForMaskedLM`'s; ERICA: `erica_mention_spans` `(B, M, 2)`,
        `erica_mention_entities` `(B, M)`, `ed_heads` / `ed_tails` `(B,)`, `rd_pairs` `(P, 3)`, `rd_partners` `(P,)`,
        `rd_negatives` `(P, P)` (`entity_discrimination`, `relation_discrimination`); KBI: `kbi_boundaries`
        `(B, K, 2)` (the words before and after each infilled `[MASK]`), `kbi_labels` `(B, K, S)` the span's tokens,
        `kbi_length_labels` `(B, K)` its length class; KRC: `krc_boundaries` `(B, R, 2)`, `krc_labels` `(B, R)` 1
        replaced, 0 kept. Padding: `-1` spans / entities / partners, `-100` labels."""
        (labels, entity_labels, spans, mention_entities, ed_heads, ed_tails, rd_pairs, rd_partners, rd_negatives,
         kbi_boundaries, kbi_labels, kbi_lengths, krc_boundaries, krc_labels) = pop_inputs(
            kwargs, GesaEntityPreTrainingInputs
        )  # fmt: skip
        outputs = self.encode(input_ids, kwargs)
        words = outputs.last_hidden_state
        settings = objective_settings(self.config)
        logits = self.lm_head(words)
        losses: dict[str, torch.Tensor | None] = dict.fromkeys(LOSSES)
        if labels is not None and (labels != IGNORE_INDEX).any():
            losses["mlm_loss"] = masked_lm_loss(logits, labels)
        entity_logits = None
        if outputs.entity_last_hidden_state is not None:
            entity_logits = self.entity_predictions(outputs.entity_last_hidden_state)
            if entity_labels is not None and (entity_labels != IGNORE_INDEX).any():
                flat = entity_logits.reshape(-1, entity_logits.size(-1))
                losses["mep_loss"] = F.cross_entropy(flat, entity_labels.to(flat.device).reshape(-1))
        if spans is not None and mention_entities is not None:
            entities, present = entity_representations(
                words, spans.to(words.device), mention_entities.to(words.device)
            )
            if ed_heads is not None:
                found = entity_discrimination(entities, present, ed_heads.to(words.device), ed_tails.to(words.device),
                                              settings["temperature"])  # fmt: skip
                if found is not None:
                    losses["ed_loss"] = found[0].mean()
                    self.count("ed", found[1], chance=1.0 / found[2].clamp(min=1))
            if rd_pairs is not None and len(rd_pairs):
                found = relation_discrimination(entities, rd_pairs.to(words.device), rd_partners.to(words.device),
                                                rd_negatives.to(words.device), settings["temperature"])  # fmt: skip
                if found is not None:
                    losses["rd_loss"] = found[0].mean()
                    self.count("rd", found[1], chance=1.0 / (1.0 + found[2]))
        if kbi_boundaries is not None and (kbi_lengths != IGNORE_INDEX).any():
            asked = kbi_lengths != IGNORE_INDEX
            token_logits, length_logits = self.infill(boundary_states(words, kbi_boundaries.to(words.device))[asked])
            targets, lengths = kbi_labels.to(words.device)[asked], kbi_lengths.to(words.device)[asked]
            losses["infill_loss"] = F.cross_entropy(token_logits.flatten(0, 1), targets.flatten())
            losses["lp_loss"] = F.cross_entropy(length_logits, lengths)
            filled = targets != IGNORE_INDEX
            self.count("infill", (token_logits.argmax(-1) == targets)[filled])
            self.count_labels("infill", targets)
            self.count("lp", length_logits.argmax(-1) == lengths)
        if krc_boundaries is not None and (krc_labels != IGNORE_INDEX).any():
            asked = krc_labels != IGNORE_INDEX
            boundaries = krc_boundaries.to(words.device)
            if settings["krc_readout"] == "span":  # our option: the span's own first and last words
                boundaries = boundaries + boundaries.new_tensor([1, -1])
            scores = self.replacement_classifier(boundary_states(words, boundaries)[asked])
            targets = krc_labels.to(words.device)[asked]
            # our option krc_replaced_weight: a replaced item's weight (1: KBIR's plain cross-entropy)
            weight = scores.new_tensor([1.0, settings["krc_replaced_weight"]])
            losses["krc_loss"] = F.cross_entropy(scores, targets, weight=weight)
            hits = scores.argmax(-1) == targets
            self.count("krc_replaced", hits[targets == 1])
            self.count("krc_kept", hits[targets == 0])
            self.keep_scores("krc", scores[:, 1] - scores[:, 0], targets)
        weighted = {name: value if name not in LOSS_WEIGHTS else settings[LOSS_WEIGHTS[name]] * value
                    for name, value in losses.items() if value is not None}  # fmt: skip
        self.log_losses(losses)
        loss = sum(list(weighted.values())[1:], list(weighted.values())[0]) if weighted else None
        return GesaEntityPreTrainingOutput(
            loss=loss, **losses, logits=logits, entity_logits=entity_logits, **_passed(outputs)
        )

    # ------------------------------------------------------------------------------------------- evaluation counts

    def count(self, name: str, hits: torch.Tensor, chance: torch.Tensor | None = None) -> None:
        """While evaluating, add a batch's hits (and each item's chance of a uniform guess) to `name`'s counts."""
        if self.training or hits.numel() == 0:
            return
        counts = self.__dict__.setdefault("evaluation_counts", {})
        entry = counts.setdefault(name, [0.0, 0, 0.0])
        entry[0] += float(hits.float().sum())
        entry[1] += int(hits.numel())
        if chance is not None:
            entry[2] += float(chance.float().sum())

    def keep_scores(self, name: str, scores: torch.Tensor, targets: torch.Tensor) -> None:
        """While evaluating, keep a batch's scores `(N,)` and 0/1 targets `(N,)` for `name`'s ROC AUC."""
        if self.training:
            return
        kept = self.__dict__.setdefault("evaluation_scores", {}).setdefault(name, ([], []))
        kept[0].extend(scores.detach().float().cpu().tolist())
        kept[1].extend(targets.detach().cpu().tolist())

    def count_labels(self, name: str, targets: torch.Tensor) -> None:
        """While evaluating, count each slot's target tokens (the best constant guess per slot: the unigram
        baseline of `pop_evaluation_metrics`)."""
        if self.training:
            return
        slots = self.__dict__.setdefault("evaluation_labels", {}).setdefault(name, {})
        for slot in range(targets.size(1)):
            column = targets[:, slot]
            for token, number in zip(*torch.unique(column[column != IGNORE_INDEX], return_counts=True), strict=True):
                key = (slot, int(token))
                slots[key] = slots.get(key, 0) + int(number)

    def pop_evaluation_metrics(self) -> dict[str, float]:
        """Each objective's accuracy since the last call, in percent, beside its chance: `ed_accuracy` /
        `ed_chance` (a uniform guess among the document's other entities), `rd_accuracy` / `rd_chance` (among the
        anchor's positive and negatives), `infill_accuracy` / `infill_unigram_accuracy` (each slot's most frequent
        token of the same evaluation: a unigram guess that knows the answers' distribution), `lp_accuracy`,
        `krc_accuracy` (balanced: the mean of the replaced and the kept recall; chance 50) with `krc_replaced_recall`
        and `krc_kept_recall`, and `krc_auc` (ROC AUC in percent: how often a replaced item scores above a kept one,
        ties half; chance 50 at any threshold, so it shows a separation the argmax at a 1-in-10 share may hide)."""
        counts = self.__dict__.pop("evaluation_counts", {})
        labels = self.__dict__.pop("evaluation_labels", {})
        scores = self.__dict__.pop("evaluation_scores", {})
        metrics: dict[str, float] = {}
        for name in ("ed", "rd", "infill", "lp"):
            if counts.get(name, [0, 0])[1]:
                hits, total, chance = counts[name]
                metrics[f"{name}_accuracy"] = 100.0 * hits / total
                if name in ("ed", "rd"):
                    metrics[f"{name}_chance"] = 100.0 * chance / total
        if labels.get("infill") and counts.get("infill", [0, 0])[1]:
            best: dict[int, int] = {}
            for (slot, _), number in labels["infill"].items():
                best[slot] = max(best.get(slot, 0), number)
            metrics["infill_unigram_accuracy"] = 100.0 * sum(best.values()) / counts["infill"][1]
        recalls = [
            100.0 * counts[k][0] / counts[k][1] for k in ("krc_replaced", "krc_kept") if counts.get(k, [0, 0])[1]
        ]
        if len(recalls) == 2:
            metrics.update(krc_accuracy=sum(recalls) / 2, krc_replaced_recall=recalls[0], krc_kept_recall=recalls[1])
            metrics["krc_auc"] = 100.0 * roc_auc(*scores["krc"])
        return metrics


GesaForEntityPreTraining.register_for_auto_class("AutoModelForPreTraining")

__all__ = [
    "LOSSES",
    "BoundaryInfillingHead",
    "GesaEntityPreTrainingOutput",
    "GesaForEntityPreTraining",
    "boundary_states",
    "entity_discrimination",
    "entity_representations",
    "nt_xent",
    "objective_losses",
    "objective_settings",
    "relation_discrimination",
    "roc_auc",
]
