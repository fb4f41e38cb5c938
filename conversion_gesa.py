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
"""LUKE -> GESA weight conversion (paper 4.1): `GesaPreTrainedModel.from_luke_pretrained` delegates here.

LUKE's word query fills GESA's four query matrices; keys, values, FFN, LayerNorm and embeddings map one to one;
absolute position tables are dropped unless kept; label tables and heads start fresh.

Flat module: copied next to every saved checkpoint; it imports torch and transformers only.
"""

from __future__ import annotations

import os
from typing import Any

import torch
from transformers import PreTrainedModel
from transformers.utils import logging

logger = logging.get_logger(__name__)


def convert_luke_checkpoint(
    cls: type,
    pretrained_model_name_or_path: str | os.PathLike,
    keep_entity_aware_queries: bool | None = None,
    entity_rows: list[int] | None = None,
    *,
    cache_dir: str | os.PathLike | None = None,
    revision: str | None = None,
    token: str | bool | None = None,
    local_files_only: bool = False,
    force_download: bool = False,
    subfolder: str = "",
    **config_overrides: Any,
) -> PreTrainedModel:
    """`cls.from_luke_pretrained` (`GesaPreTrainedModel` and every variant): build the GESA class `cls` from a
    transformers LUKE checkpoint (`LukeModel` or any `LukeFor*`).

    LUKE's word `query` is copied into all four query matrices (paper 4.1) unless `keep_entity_aware_queries`
    (default: only for LUKE itself, `ablation="luke"` or a KAR / ERNIE with its default LUKE backbone, entity-aware
    queries and all: `config_class.luke_conversion_is_exact`);
    key/value/output/FFN/LayerNorm/embeddings map one to one; absolute position
    tables are dropped unless `use_absolute_position_embeddings=True`; label tables and heads start fresh.
    `entity_rows` keeps only those rows of LUKE's entity table (in that order; e.g. `[PAD]`, `[UNK]`,
    `[MASK]`). Every GESA parameter not filled from LUKE and every LUKE weight left unused is logged and
    returned in `model.luke_conversion_info`. `cache_dir`, `revision`, `token`, `local_files_only`,
    `force_download` and `subfolder` mean what they mean in `from_pretrained`; other keyword arguments
    override config fields.
    """
    from transformers import LukeConfig, LukeModel, PreTrainedConfig

    hub_kwargs = dict(
        cache_dir=cache_dir,
        revision=revision,
        token=token,
        local_files_only=local_files_only,
        force_download=force_download,
        subfolder=subfolder,
    )
    # the checkpoint's type from its config.json alone: a GESA checkpoint's auto_map must not ask to run its code
    config_dict, _ = PreTrainedConfig.get_config_dict(pretrained_model_name_or_path, **hub_kwargs)
    model_type = config_dict.get("model_type")
    if model_type is None:
        raise ValueError(
            f"{pretrained_model_name_or_path!s} has no config.json with a model_type; from_luke_pretrained "
            "converts LUKE checkpoints (e.g. studio-ousia/luke-large; `subfolder` for a nested one)."
        )
    if model_type != "luke":
        raise ValueError(
            f"{pretrained_model_name_or_path!s} is a {model_type!r} checkpoint, not LUKE; "
            "from_luke_pretrained converts LUKE checkpoints (e.g. studio-ousia/luke-large). "
            f"Load {model_type} checkpoints with from_pretrained."
        )
    luke_config = LukeConfig.from_pretrained(pretrained_model_name_or_path, **hub_kwargs)
    luke, luke_loading = LukeModel.from_pretrained(
        pretrained_model_name_or_path, output_loading_info=True, **hub_kwargs
    )
    luke_state = luke.state_dict()
    fields = (
        "vocab_size entity_vocab_size hidden_size entity_emb_size num_hidden_layers num_attention_heads "
        "intermediate_size hidden_act hidden_dropout_prob attention_probs_dropout_prob max_position_embeddings "
        "type_vocab_size initializer_range layer_norm_eps use_entity_aware_attention classifier_dropout "
        "pad_token_id bos_token_id eos_token_id"
    ).split()
    config_kwargs = {name: getattr(luke_config, name) for name in fields if hasattr(luke_config, name)}
    # ablation="luke", or a variant whose default backbone is LUKE (KAR, ERNIE: `VariantBackboneConfig`)
    exactly_luke = cls.config_class.luke_conversion_is_exact(config_overrides)
    if not exactly_luke:
        config_kwargs["use_entity_aware_attention"] = True  # the four typed queries of Eq. 1
    if keep_entity_aware_queries is None:
        keep_entity_aware_queries = exactly_luke
    if entity_rows is not None:
        config_kwargs["entity_vocab_size"] = len(entity_rows)
    config_kwargs.update(config_overrides)
    config = cls.config_class(**config_kwargs)  # variants: their GesaConfig subclass
    model = cls(config)

    # GESA key -> (tensor, LUKE key it came from)
    mapped: dict[str, tuple[torch.Tensor, str]] = {}
    for key, tensor in luke_state.items():
        if ".attention.self.query." in key:
            for name in ("w2w_query", "w2e_query", "e2w_query", "e2e_query"):
                mapped[key.replace(".query.", f".{name}.")] = (tensor, key)
        elif ".position_embeddings." in key and not config.use_absolute_position_embeddings:
            # the entity table stays for use_entity_position_embeddings: it is LUKE's own
            if not (key.startswith("entity_embeddings.") and config.use_entity_position_embeddings):
                continue
            mapped[key] = (tensor, key)
        elif key == "entity_embeddings.entity_embeddings.weight" and entity_rows is not None:
            mapped[key] = (tensor[torch.as_tensor(entity_rows, dtype=torch.long)], key)
        elif not any(f".attention.self.{n}." in key for n in ("w2e_query", "e2w_query", "e2e_query")):
            mapped[key] = (tensor, key)
        elif keep_entity_aware_queries:
            mapped[key] = (tensor, key)
    base = model.base_model
    base_state = base.state_dict()
    used = {}
    for key, (tensor, _) in mapped.items():
        if key not in base_state:
            continue
        # a variant's own fit of a LUKE weight (the long variant: position tables grown past LUKE's 512)
        tensor = model.adapt_luke_weight(key, tensor, base_state[key])
        if tensor.shape != base_state[key].shape:
            raise ValueError(
                f"LUKE weight {key} has shape {tuple(tensor.shape)} but GESA expects {tuple(base_state[key].shape)}; "
                "check the config overrides passed to from_luke_pretrained."
            )
        used[key] = tensor
    base.load_state_dict(used, strict=False)
    # the copied entity-aware queries brought to unit gain where LUKE's are smaller (`entity_query_gain`), then the
    # fresh label tables: entity rows fit to those queries, mention and edge rows turned towards LUKE's [MASK] entity
    scaled = {} if keep_entity_aware_queries else model.scale_copied_entity_queries()
    model.fit_entity_label_rows_to_queries(entity_rows)
    prefix = f"{cls.base_model_prefix}." if model is not base else ""
    missing = sorted(prefix + k for k in base_state if k not in used)
    if prefix:
        missing += sorted(k for k in model.state_dict() if not k.startswith(prefix))
    luke_keys_used = {mapped[k][1] for k in used}
    unused = sorted(k for k in luke_state if k not in luke_keys_used)
    unused += sorted(luke_loading.get("unexpected_keys", []))
    for key in missing:
        logger.info("GESA parameter %s is newly initialised (not in the LUKE checkpoint).", key)
    replaced = [key for key in unused if not keep_entity_aware_queries
                and any(f".{n}." in key for n in ("w2e_query", "e2w_query", "e2e_query"))]  # fmt: skip
    for key in replaced:
        logger.info("LUKE weight %s is replaced by LUKE's word query (paper 4.1).", key)
    dropped = [key for key in unused if key not in replaced]
    if dropped:  # one line, as transformers' own load report: not one warning per weight
        shown = ", ".join(dropped[:8]) + (f", ... ({len(dropped) - 8} more)" if len(dropped) > 8 else "")
        logger.warning("LUKE weights not used by %s: %s.", cls.__name__, shown)
    if scaled:
        logger.info(
            "Entity-aware queries (copies of LUKE's word query) scaled to gain %s: x%.2f-%.2f over %d matrices.",
            model.entity_query_gain,
            min(scaled.values()),
            max(scaled.values()),
            len(scaled),
        )
    model.luke_conversion_info = {"missing_keys": missing, "unexpected_keys": unused, "scaled_queries": scaled}
    logger.warning(
        "Converted LUKE checkpoint %s: %d GESA parameters newly initialised, %d LUKE weights unused.",
        pretrained_model_name_or_path,
        len(missing),
        len(unused),
    )
    return model


def grow_position_table(
    old: torch.Tensor, target: torch.Tensor, start: int, period: int, copy: bool = True
) -> torch.Tensor:
    """A position table `old` `(n, D)` grown to `target`'s rows `(N, D)` (N > n).

    `copy` (Longformer's recipe for RoBERTa/LUKE beyond 512): rows from `start` on repeat `old[start : start +
    period]` over and over, rows before `start` are `old`'s; otherwise `old`'s rows, then `target`'s own (fresh)
    rows beyond them.
    """
    grown = target.detach().clone()
    grown[: old.size(0)] = old
    if copy:
        learned = old[start : start + period]
        for first in range(start, grown.size(0), period):
            count = min(period, grown.size(0) - first)
            grown[first : first + count] = learned[:count]
    return grown


def init_added_word_embeddings(model: PreTrainedModel, sources: dict[int, int]) -> None:
    """`model.init_added_word_embeddings`: grow the word table to hold new token ids and copy each from its source token (spec section 1).

    Args:
        sources: `{new_token_id: existing_token_id}`, e.g. `GesaProcessor.added_token_sources()`.
    """
    embeddings = model.get_input_embeddings()
    needed = max(sources, default=-1) + 1
    for new_id, source_id in sources.items():
        if source_id >= min(embeddings.num_embeddings, needed) or source_id < 0:
            raise ValueError(f"sources[{new_id}]={source_id} is not an existing word token id.")
    if needed > embeddings.num_embeddings:
        model.resize_token_embeddings(needed, mean_resizing=False)
        embeddings = model.get_input_embeddings()
    with torch.no_grad():
        for new_id, source_id in sources.items():
            embeddings.weight[new_id] = embeddings.weight[source_id]


__all__ = ["convert_luke_checkpoint", "grow_position_table", "init_added_word_embeddings"]
