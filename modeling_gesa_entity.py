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
"""Entity-task heads on GESA's encoder: entity typing, entity-pair (relation) and entity-span (NER) classification,
and masked language modelling + masked-entity prediction, each LUKE's head (transformers `Luke*`) on `GesaModel`.

With `ablation="luke"` every head computes exactly its `transformers.Luke*` counterpart; `from_luke_pretrained`
also copies a fine-tuned LUKE checkpoint's own head (`classifier`, `lm_head`, `entity_predictions`).
A variant's head sets `base_model_class` (its encoder) and inherits the rest.

Flat module: copied next to every saved checkpoint, so it imports only its siblings.
"""

from __future__ import annotations

import os
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from transformers.models.luke.modeling_luke import (
    EntityClassificationOutput,
    EntityPairClassificationOutput,
    EntityPredictionHead,
    EntitySpanClassificationOutput,
    LukeLMHead,
    LukeMaskedLMOutput,
)
from transformers.processing_utils import Unpack
from transformers.utils import ModelOutput, can_return_tuple, logging

from .checks_gesa import IGNORE_INDEX, check_binary_targets, check_class_labels, ignored_loss, pop_inputs
from .loading_gesa import PipelineSpec
from .modeling_gesa import (
    GesaHeadBase,
    GesaInputs,
    GesaModel,
    GesaPooler,
    classifier_dropout,
    with_inputs_of,
)

logger = logging.get_logger(__name__)

HUB_KWARGS = ("cache_dir", "revision", "token", "local_files_only", "force_download", "subfolder")


def copy_luke_head(
    model: nn.Module,
    pretrained_model_name_or_path: str | os.PathLike,
    luke_class_name: str,
    hub_kwargs: dict,
    entity_rows: list[int] | None = None,
) -> list[str]:
    """Copy the head modules (`model.luke_head_modules`) of a fine-tuned LUKE checkpoint into `model`.

    A module the checkpoint does not hold (a `LukeModel` checkpoint has no head) keeps its fresh initialisation.
    `entity_rows` (the rows of LUKE's entity table the model kept) selects the same rows of the entity decoder
    (`entity_predictions`: its weight, tied to the table, and its bias).
    Returns the names of the modules copied; `model.luke_conversion_info` is updated to match.
    """
    import transformers

    luke_class = getattr(transformers, luke_class_name)
    config_kwargs = {}
    if getattr(model.config, "num_labels", None) is not None and luke_class_name != "LukeForMaskedLM":
        config_kwargs["num_labels"] = model.config.num_labels
    # quietly: a checkpoint without the head (a `LukeModel`) is expected here, and its "missing" head and untied
    # decoder are reported once by the conversion (`luke_conversion_info`), not as a corrupted checkpoint
    verbosity = logging.get_verbosity()
    logging.set_verbosity_error()
    try:
        luke, loading = luke_class.from_pretrained(
            pretrained_model_name_or_path, output_loading_info=True, **config_kwargs, **hub_kwargs
        )
    finally:
        logging.set_verbosity(verbosity)
    missing = set(loading.get("missing_keys", []))
    tied = set(getattr(luke, "_tied_weights_keys", None) or {})
    copied = []
    for name in model.luke_head_modules:
        source, target = getattr(luke, name), getattr(model, name)
        own = {f"{name}.{key}" for key in source.state_dict()}
        if own & missing - tied:
            continue  # not in the checkpoint: fresh head
        state = source.state_dict()
        if name == "entity_predictions" and entity_rows is not None:
            rows = torch.as_tensor(entity_rows, dtype=torch.long)
            entities = luke.config.entity_vocab_size
            state = {k: v.index_select(0, rows) if k in ("decoder.weight", "bias") and v.size(0) == entities else v
                     for k, v in state.items()}  # fmt: skip
        for key, tensor in target.state_dict().items():
            if key in state and state[key].shape != tensor.shape:
                raise ValueError(
                    f"LUKE head weight {name}.{key} has shape {tuple(state[key].shape)} but {type(model).__name__} "
                    f"expects {tuple(tensor.shape)}; pass num_labels (or the entity_rows it was trained with) to "
                    "from_luke_pretrained to match the checkpoint."
                )
        target.load_state_dict(state, strict=False)
        copied.append(name)
    info = getattr(model, "luke_conversion_info", None)
    if info is not None:
        info["missing_keys"] = [k for k in info["missing_keys"] if k.split(".")[0] not in copied]
        info["unexpected_keys"] = [k for k in info["unexpected_keys"] if k.split(".")[0] not in copied]
    for name in copied:
        logger.info("Copied LUKE head %s from %s.", name, pretrained_model_name_or_path)
    return copied


class GesaEntityHeadBase(GesaHeadBase):
    """What the four entity-task heads share: the encoder and the forward a variant's head inherits (`GesaHeadBase`),
    LUKE conversion that also copies LUKE's head, the check of the entities the head reads."""

    # the transformers LUKE class whose head this one equals with ablation="luke", and its head modules
    luke_class_name: str = ""
    luke_head_modules: tuple[str, ...] = ("classifier",)
    # the smallest number of entities per example the head reads
    min_entities: int = 1
    # the loss is a mean over labels, not over items counted by Trainer
    accepts_loss_kwargs = False

    @classmethod
    def from_luke_pretrained(
        cls, pretrained_model_name_or_path: str | os.PathLike, *args: Any, **kwargs: Any
    ) -> GesaEntityHeadBase:
        """`GesaPreTrainedModel.from_luke_pretrained`, then LUKE's own head from the checkpoint where it has one.

        A fine-tuned LUKE checkpoint's `id2label` (and so `num_labels`) is taken unless passed.
        """
        from transformers import PreTrainedConfig

        hub_kwargs = {k: kwargs[k] for k in HUB_KWARGS if k in kwargs}
        if "id2label" not in kwargs and "num_labels" not in kwargs and cls.luke_class_name != "LukeForMaskedLM":
            config_dict, _ = PreTrainedConfig.get_config_dict(pretrained_model_name_or_path, **hub_kwargs)
            if config_dict.get("id2label"):
                kwargs["id2label"] = {int(k): v for k, v in config_dict["id2label"].items()}
                kwargs["label2id"] = {v: int(k) for k, v in config_dict["id2label"].items()}
        model = super().from_luke_pretrained(pretrained_model_name_or_path, *args, **kwargs)
        entity_rows = kwargs.get("entity_rows", args[1] if len(args) > 1 else None)
        copy_luke_head(model, pretrained_model_name_or_path, cls.luke_class_name, hub_kwargs, entity_rows)
        return model

    def encode(self, input_ids: torch.Tensor | None, kwargs: dict) -> ModelOutput:
        """The encoder on the inputs, after checking the head has the entities it reads."""
        entity_ids = kwargs.get("entity_ids")
        if entity_ids is None or entity_ids.dim() != 2 or entity_ids.size(1) < self.min_entities:
            shape = None if entity_ids is None else tuple(entity_ids.shape)
            raise ValueError(
                f"{type(self).__name__} needs entity_ids of shape (batch, >= {self.min_entities}) (got {shape}): "
                f"{self.task_entities}. Build the inputs with the entity-task processor (processing_entity.py)."
            )
        return self.gesa(input_ids, **kwargs, return_dict=True)

    task_entities = "the entities the head classifies"

    def add_auxiliary_loss(self, loss: torch.Tensor | None, outputs: ModelOutput) -> torch.Tensor | None:
        """The task loss plus a variant's own (KAR: its weighted entity-linking loss); GESA's heads add none."""
        return loss


def classification_loss(logits: torch.Tensor, labels: torch.Tensor | None, single_label_dims: int) -> torch.Tensor:
    """LUKE's head loss: cross-entropy for class indices (`labels.ndim == single_label_dims`), else binary
    cross-entropy over `{0, 1}` multi-label targets of the logits' shape (Open Entity typing)."""
    if labels.dim() == single_label_dims:
        check_class_labels(labels, logits.size(-1))
        if not torch.compiler.is_compiling() and not (labels != IGNORE_INDEX).any():
            return ignored_loss(logits)  # cross-entropy over no label is 0/0
        return F.cross_entropy(logits.reshape(-1, logits.size(-1)), labels.reshape(-1))
    if labels.shape != logits.shape:
        raise ValueError(
            f"labels has shape {tuple(labels.shape)}; give class indices of shape {tuple(logits.shape[:-1])} or "
            f"multi-label 0/1 targets of shape {tuple(logits.shape)}."
        )
    check_binary_targets(labels)
    return F.binary_cross_entropy_with_logits(logits.reshape(-1), labels.reshape(-1).type_as(logits))


def masked_lm_loss(logits: torch.Tensor, labels: torch.Tensor | None) -> torch.Tensor | None:
    """Masked language modelling's cross-entropy: word logits `(B, L, V)`, `labels` `(B, L)` word ids at masked words
    (-100 elsewhere); `None` without labels."""
    if labels is None:
        return None
    if labels.shape != logits.shape[:2]:
        raise ValueError(f"labels has shape {tuple(labels.shape)}; it must be input_ids' {tuple(logits.shape[:2])}.")
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)), labels.to(logits.device).reshape(-1))


def marked_states(outputs: ModelOutput, marker_positions: torch.Tensor | None, count: int) -> torch.Tensor:
    """The features a typing / pair head reads: the entity states `(B, E, D)`, or with `marker_positions` `(B, count)`
    the word states of those tokens `(B, count, D)` (ERNIE's and KnowBERT's marked inputs)."""
    if marker_positions is None:
        return outputs.entity_last_hidden_state
    words = outputs.last_hidden_state
    if marker_positions.dim() != 2 or marker_positions.size(0) != words.size(0) or marker_positions.size(1) != count:
        raise ValueError(
            f"marker_positions has shape {tuple(marker_positions.shape)}; expected (batch={words.size(0)}, {count}): "
            "the word index of each mention's opening marker (processing_entity_markers)."
        )
    if not torch.compiler.is_compiling() and ((marker_positions < 0) | (marker_positions >= words.size(1))).any():
        raise ValueError(f"marker_positions must be word indices in [0, {words.size(1) - 1}].")
    index = marker_positions.to(words.device)[..., None].expand(-1, -1, words.size(-1))
    return words.gather(1, index)


def _passed(outputs: ModelOutput) -> dict:
    return {name: outputs.get(name) for name in ("hidden_states", "entity_hidden_states", "attentions")}


class GesaEntityClassifierHead(GesaEntityHeadBase):
    """What the typing, pair and span heads share: LUKE's `classifier` over `classifier_inputs` hidden-size states
    side by side (`logits = W . dropout(features)`, bias per `classifier_bias`), its loss (`classification_loss`, plus a
    variant's) and the output (`output_class`, with the encoder's per-layer outputs)."""

    classifier_inputs: int = 1
    classifier_bias: bool = True
    output_class: type[ModelOutput] = EntityClassificationOutput

    def __init__(self, config: Any) -> None:
        super().__init__(config)
        self.dropout = classifier_dropout(config)
        self.classifier = nn.Linear(
            self.classifier_inputs * config.hidden_size, config.num_labels, self.classifier_bias
        )
        self.post_init()

    def classify(
        self, features: torch.Tensor, labels: torch.Tensor | None, outputs: ModelOutput, single_label_dims: int
    ) -> ModelOutput:
        """`features` `(..., classifier_inputs * D)` -> the output with `logits` `(..., num_labels)` and, given
        `labels` (class indices of `single_label_dims` dimensions, or 0/1 targets of the logits' shape), the loss."""
        logits = self.classifier(self.dropout(features))
        loss = self.add_auxiliary_loss(
            None if labels is None else classification_loss(logits, labels.to(logits.device), single_label_dims),
            outputs,
        )
        return self.output_class(loss=loss, logits=logits, **_passed(outputs))


class GesaMarkedEntityInputs(GesaInputs, total=False):
    """The typing and pair heads' own inputs: `labels` and the opening markers' `marker_positions`."""

    labels: torch.Tensor | None
    marker_positions: torch.LongTensor | None


class GesaMarkedEntityClassifierHead(GesaEntityClassifierHead):
    """The typing and the pair head: the classifier on the first `min_entities` entities' final states side by side,
    or with `marker_positions` on the word states of their mentions' opening markers."""

    @can_return_tuple
    @with_inputs_of(GesaModel.forward, own=GesaMarkedEntityInputs)
    def forward(
        self, input_ids: torch.LongTensor | None = None, **kwargs: Unpack[GesaMarkedEntityInputs]
    ) -> ModelOutput:
        """`logits` `(B, num_labels)`; `labels` as in the LUKE head (`luke_class_name`): class indices `(B,)` or
        multi-label 0/1 targets `(B, num_labels)`; `marker_positions` `(B, min_entities)`: read the word states of the
        mentions' opening markers instead (ERNIE/KnowBERT inputs, `processing_entity_markers`). Other inputs: the
        encoder's."""
        labels, marker_positions = pop_inputs(kwargs, GesaMarkedEntityInputs)
        outputs = self.encode(input_ids, kwargs)
        states = marked_states(outputs, marker_positions, self.min_entities)
        return self.classify(states[:, : self.min_entities].flatten(1), labels, outputs, 1)


class GesaForEntityClassification(GesaMarkedEntityClassifierHead):
    """Entity typing (Open Entity): `logits = W . dropout(e_1)` on the first entity's final state; multi-label
    0/1 `labels` `(B, num_labels)` give binary cross-entropy, class indices `(B,)` cross-entropy (LUKE's head)."""

    luke_class_name = "LukeForEntityClassification"
    task_entities = "the entity to type first"
    pipeline = PipelineSpec("entity-typing", "pipeline_entity.EntityTypingPipeline")


class GesaForEntityPairClassification(GesaMarkedEntityClassifierHead):
    """Relation classification (TACRED): `logits = W . dropout([e_head ; e_tail])` on the first two entities'
    final states (no bias, as LUKE's head)."""

    luke_class_name = "LukeForEntityPairClassification"
    min_entities = 2
    task_entities = "the head entity first, the tail entity second"
    pipeline = PipelineSpec("relation-classification", "pipeline_entity.RelationClassificationPipeline")
    classifier_inputs = 2
    classifier_bias = False
    output_class = EntityPairClassificationOutput


class GesaEntitySpanInputs(GesaInputs, total=False):
    """The span head's own inputs: each span's first / last word index and `labels`."""

    entity_start_positions: torch.LongTensor | None
    entity_end_positions: torch.LongTensor | None
    labels: torch.Tensor | None


class GesaForEntitySpanClassification(GesaEntityClassifierHead):
    """NER over candidate spans (CoNLL-2003): for every span entity, `logits = W . dropout([h_start ; h_end ; e])`
    from its first and last word states and its entity state (LUKE's head)."""

    luke_class_name = "LukeForEntitySpanClassification"
    task_entities = "one entity per candidate span"
    pipeline = PipelineSpec("entity-span-classification", "pipeline_entity.EntitySpanClassificationPipeline")
    classifier_inputs = 3
    output_class = EntitySpanClassificationOutput

    @can_return_tuple
    @with_inputs_of(GesaModel.forward, own=GesaEntitySpanInputs)
    def forward(
        self, input_ids: torch.LongTensor | None = None, **kwargs: Unpack[GesaEntitySpanInputs]
    ) -> EntitySpanClassificationOutput:
        """`entity_start_positions` / `entity_end_positions` `(B, E)`: each span's first and last word index;
        `logits` `(B, E, num_labels)`; `labels` `(B, E)` class indices (-100 ignored) or `(B, E, num_labels)` 0/1."""
        entity_start_positions, entity_end_positions, labels = pop_inputs(kwargs, GesaEntitySpanInputs)
        outputs = self.encode(input_ids, kwargs)
        words = outputs.last_hidden_state
        entity_shape = tuple(kwargs["entity_ids"].shape)
        for name, positions in (
            ("entity_start_positions", entity_start_positions),
            ("entity_end_positions", entity_end_positions),
        ):
            if positions is None or tuple(positions.shape) != entity_shape:
                got = None if positions is None else tuple(positions.shape)
                raise ValueError(
                    f"{name} must have entity_ids' shape {entity_shape} (got {got}): the word index of each span's "
                    "first / last token (the entity-task processor builds them)."
                )
            if positions.numel() and (int(positions.min()) < 0 or int(positions.max()) >= words.size(1)):
                raise ValueError(
                    f"{name} holds word indices outside [0, {words.size(1) - 1}]; point padded spans at 0 and mask "
                    "them with entity_attention_mask and labels=-100."
                )
        hidden = words.size(-1)
        start = torch.gather(words, -2, entity_start_positions.to(words.device).unsqueeze(-1).expand(-1, -1, hidden))
        end = torch.gather(words, -2, entity_end_positions.to(words.device).unsqueeze(-1).expand(-1, -1, hidden))
        return self.classify(torch.cat([start, end, outputs.entity_last_hidden_state], dim=2), labels, outputs, 2)


class GesaMaskedLMInputs(GesaInputs, total=False):
    """The masked-LM head's own inputs: masked word and entity ids."""

    labels: torch.LongTensor | None
    entity_labels: torch.LongTensor | None


class GesaForMaskedLM(GesaEntityHeadBase):
    """Masked language modelling + masked-entity prediction (LUKE's pre-training, paper sec. 3.4): `lm_head` over
    the word states, `entity_predictions` over the entity states; `loss = mlm_loss + mep_loss`. The word and entity
    decoders are tied to the input tables, as in `LukeForMaskedLM`."""

    luke_class_name = "LukeForMaskedLM"
    luke_head_modules = ("lm_head", "entity_predictions")
    min_entities = 0
    _tied_weights_keys = {
        "entity_predictions.decoder.weight": "gesa.entity_embeddings.entity_embeddings.weight",
        "lm_head.decoder.weight": "gesa.embeddings.word_embeddings.weight",
        "lm_head.bias": "lm_head.decoder.bias",
    }

    def __init__(self, config: Any) -> None:
        super().__init__(config)
        self.lm_head = LukeLMHead(config)
        self.entity_predictions = EntityPredictionHead(config)
        self.post_init()

    def get_output_embeddings(self) -> nn.Linear:
        return self.lm_head.decoder

    def set_output_embeddings(self, new_embeddings: nn.Linear) -> None:
        self.lm_head.decoder = new_embeddings

    def encode(self, input_ids: torch.Tensor | None, kwargs: dict) -> ModelOutput:
        return self.gesa(input_ids, **kwargs, return_dict=True)

    @can_return_tuple
    @with_inputs_of(GesaModel.forward, own=GesaMaskedLMInputs)
    def forward(
        self, input_ids: torch.LongTensor | None = None, **kwargs: Unpack[GesaMaskedLMInputs]
    ) -> LukeMaskedLMOutput:
        """`labels` `(B, L)` word ids at masked words (-100 elsewhere), `entity_labels` `(B, E)` entity ids at masked
        entities (-100 elsewhere). Other inputs: the encoder's."""
        labels, entity_labels = pop_inputs(kwargs, GesaMaskedLMInputs)
        outputs = self.encode(input_ids, kwargs)
        logits = self.lm_head(outputs.last_hidden_state)
        mep_loss = entity_logits = None
        loss = mlm_loss = masked_lm_loss(logits, labels)
        if outputs.entity_last_hidden_state is not None:
            entity_logits = self.entity_predictions(outputs.entity_last_hidden_state)
            if entity_labels is not None:
                if entity_labels.shape != entity_logits.shape[:2]:
                    raise ValueError(
                        f"entity_labels has shape {tuple(entity_labels.shape)}; it must be entity_ids' "
                        f"{tuple(entity_logits.shape[:2])}."
                    )
                flat = entity_logits.reshape(-1, entity_logits.size(-1))
                mep_loss = F.cross_entropy(flat, entity_labels.to(flat.device).reshape(-1))
                loss = mep_loss if loss is None else loss + mep_loss
        elif entity_labels is not None:
            raise ValueError("entity_labels were given without entity_ids: give the (masked) entities they label.")
        return LukeMaskedLMOutput(
            loss=loss,
            mlm_loss=mlm_loss,
            mep_loss=mep_loss,
            logits=logits,
            entity_logits=entity_logits,
            **_passed(outputs),
        )


class LoggedLosses:
    """A pre-training head's separate losses kept for the driver's log while training (`log_losses`; read by
    `training.entity.LoggedLossesCallback` through `pop_logged_losses`)."""

    def log_losses(self, losses: dict[str, torch.Tensor | None]) -> torch.Tensor | None:
        """Keep each given loss for the log (while training); their sum, or `None` when none is given."""
        if self.training:
            logged = self.__dict__.setdefault("logged_losses", {})
            for name, value in losses.items():
                if value is not None:
                    logged.setdefault(name, []).append(float(value.detach()))
        given = [value for value in losses.values() if value is not None]
        return sum(given[1:], given[0]) if given else None

    def pop_logged_losses(self) -> dict[str, float]:
        """The mean of each loss over the training steps since the last call."""
        logged = self.__dict__.pop("logged_losses", {})
        return {name: sum(values) / len(values) for name, values in logged.items() if values}


class MaskedLmNspHeads(LoggedLosses):
    """BERT's pre-training heads on an entity-head model (KnowBERT-KAR's and ERNIE's pre-training): masked language
    modelling (`lm_head`, LUKE's, tied to the word table) and next-sentence prediction (`seq_relationship` on the
    pooled `<s>` state, `nsp_pooler`, for batches of sentence pairs `<s> A </s></s> B </s>`); the model's own
    objective is added by the subclass. While training, each loss is kept for the driver's log (`log_losses`,
    `pop_logged_losses`)."""

    luke_class_name = "LukeForMaskedLM"
    luke_head_modules = ("lm_head",)
    min_entities = 0
    _tied_weights_keys = {
        "lm_head.decoder.weight": "gesa.embeddings.word_embeddings.weight",
        "lm_head.bias": "lm_head.decoder.bias",
    }

    def build_pretraining_heads(self, config: Any) -> None:
        self.lm_head = LukeLMHead(config)
        self.nsp_pooler = GesaPooler(config)
        self.seq_relationship = nn.Linear(config.hidden_size, 2)

    def get_output_embeddings(self) -> nn.Linear:
        return self.lm_head.decoder

    def set_output_embeddings(self, new_embeddings: nn.Linear) -> None:
        self.lm_head.decoder = new_embeddings

    def masked_lm_and_nsp(
        self, words: torch.Tensor, labels: torch.Tensor | None, next_sentence_label: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor, torch.Tensor | None]:
        """`(logits (B, L, V), mlm_loss, nsp_logits (B, 2), nsp_loss)` from the word states `(B, L, D)`; `labels`
        `(B, L)` word ids at masked words (-100 elsewhere), `next_sentence_label` `(B,)` 0 when the second sentence
        follows the first, 1 when it is a random one (BERT's convention; -100 ignored)."""
        logits = self.lm_head(words)
        mlm_loss, nsp_loss = masked_lm_loss(logits, labels), None
        nsp_logits = self.seq_relationship(self.nsp_pooler(words))
        if next_sentence_label is not None:
            if next_sentence_label.shape != nsp_logits.shape[:1]:
                raise ValueError(
                    f"next_sentence_label has shape {tuple(next_sentence_label.shape)}; it must be (batch,) = "
                    f"{tuple(nsp_logits.shape[:1])}, 0 (the second sentence follows) or 1 (a random one)."
                )
            nsp_loss = classification_loss(nsp_logits, next_sentence_label.to(nsp_logits.device), 1)
        return logits, mlm_loss, nsp_logits, nsp_loss

    def count_for_evaluation(self, hits: dict[str, float], total: int) -> None:
        """Add an evaluation batch's counts (``{metric: hits}`` over ``total`` items, each metric its own items) to
        ``pop_evaluation_metrics``'."""
        counts = self.__dict__.setdefault("evaluation_counts", {})
        for name, value in hits.items():
            seen = counts.get(name, (0.0, 0))
            counts[name] = (seen[0] + value, seen[1] + total)

    def pop_evaluation_metrics(self) -> dict[str, float]:
        """Each counted metric over the evaluation batches since the last call, in percent (none without items)."""
        counts = self.__dict__.pop("evaluation_counts", {})
        return {name: 100.0 * value / total for name, (value, total) in counts.items() if total}


GesaForEntityClassification.register_for_auto_class("AutoModelForSequenceClassification")
GesaForEntityPairClassification.register_for_auto_class("AutoModelForSequenceClassification")
GesaForEntitySpanClassification.register_for_auto_class("AutoModelForTokenClassification")
GesaForMaskedLM.register_for_auto_class("AutoModelForMaskedLM")

__all__ = [
    "GesaEntityHeadBase",
    "GesaForEntityClassification",
    "GesaForEntityPairClassification",
    "GesaForEntitySpanClassification",
    "GesaForMaskedLM",
    "LoggedLosses",
    "MaskedLmNspHeads",
    "classification_loss",
    "copy_luke_head",
    "masked_lm_loss",
]
