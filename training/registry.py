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
"""The variant registry: the model families every script (`--variant NAME`) and pipeline builds, in one place.

Each `VariantSpec` says how to build the variant (from a LUKE checkpoint with `from_luke_pretrained` + config
overrides, from scratch with config kwargs, or from its own checkpoint), its ReCoRD head, and which features it trains
on; each task names its own head per variant (`training.task.Task.heads`, `Task.variant_spec`):

| name    | QA class                 | features                                                          | entity table |
|---------|--------------------------|-------------------------------------------------------------------|--------------|
| `gesa`  | `GesaForEntitySpanQA`    | `GesaProcessor`                                                   | shrink       |
| `luke`  | `GesaForEntitySpanQA`    | `GesaProcessor` (config `ablation="luke"`: LUKE exactly)          | shrink       |
| `luke_graph` | `LukeGraphForEntitySpanQA` | `GesaProcessor` (LUKE + gated relational graph network) | shrink |
| `kar`   | `KarForEntitySpanQA`     | `GesaProcessor` + `KnowledgeInputBuilder("kar")` in the collator  | keep (= KB)  |
| `ernie` | `ErnieForEntitySpanQA`   | `GesaProcessor` + `KnowledgeInputBuilder("ernie")` in the collator | keep (= KB)  |
| `xh`    | `XhForEntitySpanQA`      | `XhProcessor.encode_record_graphs` + `XhGraphCollator`            | shrink       |
| `context_graph` | `ContextGraphForMultipleChoice` (WikiHop/MedHop only) | `ContextGraphProcessor` (the thesis's graphs) | shrink |
| `long_luke` | `LongLukeForEntitySpanQA` | `GesaProcessor` (LUKE with Longformer/BigBird attention, whole documents) | shrink |

"keep" means: do not pass `entity_rows` (do not shrink the tokenizer's entity vocabulary): KAR and ERNIE use LUKE's
entity table as their knowledge base and its titles for candidate generation by default. A KAR/ERNIE config with a
user-supplied KB (`kb_size` set, `set_knowledge_base`) is refused (`check_knowledge_base`) by `from_luke`,
`from_scratch` and by `from_checkpoint` unless the checkpoint carries its KB files (`loading_gesa.KNOWLEDGE_FILES`),
whose collator would give entity-vocabulary ids; the scripts install a user KB
after building the model (`--kb_entity_vectors`, `training.knowledge_base.attach_knowledge_files`) and hand its candidates to
`wrap_collator(candidates=...)` (docs/entity_tasks.md). XH's logits are `(G, C)` over each
graph's `candidate_texts` (one graph per query), where GESA's are `(B, E)` over each window's `candidate_texts`.

Usage (what `run_record.py` does for `--variant`)::

    spec = VARIANTS[name]
    model = spec.from_luke(path, entity_rows=rows if spec.shrink_entity_table else None)  # or spec.from_scratch(**kw),
    # or spec.from_checkpoint(path) for a checkpoint of the variant itself (it refuses a user-KB KAR/ERNIE one)
    if spec.uses_gesa_features:
        collator = spec.wrap_collator(processor.get_data_collator(), tokenizer)   # GesaProcessor features
    else:
        xh = spec.make_processor(tokenizer, max_node_length=..., max_query_length=...)
        features, collator = xh.encode_record_graphs(records), xh.get_data_collator()
    model.init_added_word_embeddings(processor.added_token_sources())
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from transformers import AutoConfig, PretrainedConfig, PreTrainedModel, PreTrainedTokenizerBase

from ..configuration_context_graph import ContextGraphConfig
from ..configuration_gesa import GesaConfig
from ..configuration_long_luke import LongLukeConfig
from ..configuration_luke_graph import LukeGraphConfig
from ..configuration_variants import ErnieConfig, KarConfig, XhConfig
from ..loading_gesa import KB_ENTITIES_FILE, knowledge_file
from ..modeling_context_graph import ContextGraphForMultipleChoice
from ..modeling_ernie import ErnieForEntitySpanQA
from ..modeling_gesa import GesaForEntitySpanQA
from ..modeling_kar import KarForEntitySpanQA
from ..modeling_long_luke import LongLukeForEntitySpanQA
from ..modeling_luke_graph import LukeGraphForEntitySpanQA
from ..modeling_xh import XhForEntitySpanQA
from ..processing_kb import EntityCandidateGenerator, KnowledgeCollator, KnowledgeInputBuilder
from ..processing_xh import XhProcessor

Collator = Callable[[Sequence[Mapping[str, Any]]], dict[str, Any]]


def _xh_hops(num_hidden_layers: int, overrides: Mapping[str, Any]) -> dict[str, Any]:
    """XH's default K = 3 hop layers, at most the model's depth (tiny test models have 2 layers)."""
    if "xh_num_hop_layers" in overrides:
        return {}
    return {"xh_num_hop_layers": min(3, num_hidden_layers)}


@dataclass(frozen=True)
class VariantSpec:
    """How `run_record.py` builds and feeds one model family.

    Args:
        name: the `--variant` value.
        description: one line for `--help`.
        model_class: the ReCoRD QA class (`...ForEntitySpanQA`).
        config_class: its config class.
        config_overrides: config values fixed by the variant (e.g. `ablation="luke"`), for both constructions.
        uses_gesa_features: True: `GesaProcessor` windows; False: `XhProcessor` graphs.
        shrink_entity_table: whether the script may keep only LUKE's special entities (`entity_rows`).
        knowledge_variant: `"kar"`/`"ernie"`: the collator adds that variant's KB inputs.
        keep_entity_aware_queries: convert LUKE keeping its own w2e/e2w/e2e queries even when not asked to
            (LUKE-Graph fine-tunes LUKE as it is).
        pretraining_head: the class name of the variant's pre-training head (``run_entity_tasks.py --task
            pretrain``: KnowBERT's ``KarForPreTraining``, ``ErnieForPreTraining``, the long variant's
            ``LongLukeForEntityPreTraining``), whose checkpoint a task head
            starts from (its encoder loaded, the task head new: ``is_pretraining_checkpoint``).
    """

    name: str
    description: str
    model_class: type[PreTrainedModel]
    config_class: type[GesaConfig]
    config_overrides: Mapping[str, Any] = field(default_factory=dict)
    uses_gesa_features: bool = True
    shrink_entity_table: bool = True
    knowledge_variant: str | None = None
    keep_entity_aware_queries: bool = False
    pretraining_head: str | None = None

    def is_pretraining_checkpoint(self, config: Mapping[str, Any]) -> bool:
        """Whether a checkpoint's config (a dict) is this variant's pre-training head (``pretraining_head``)."""
        architectures = config.get("architectures") or [None]
        return (
            self.pretraining_head is not None
            and config.get("model_type") == self.config_class.model_type
            and isinstance(architectures, list)
            and architectures[0] == self.pretraining_head
        )

    def _overrides(self, num_hidden_layers: int, overrides: Mapping[str, Any]) -> dict[str, Any]:
        merged = {**self.config_overrides, **overrides}
        if self.config_class is XhConfig:
            merged.update(_xh_hops(num_hidden_layers, merged))
        return merged

    def check_knowledge_base(
        self, config: PretrainedConfig | Mapping[str, Any], source: str = "the model", folder: str | None = None
    ) -> None:
        """Refuse a KAR/ERNIE config with a user-supplied KB (`kb_size` set) unless its checkpoint `folder` carries
        the KB's entity list (`loading_gesa.KB_ENTITIES_FILE`, saved with the model, read by
        `training.knowledge_base.attach_checkpoint_knowledge`): without it this registry's collator (`wrap_collator`) generates
        candidates as LUKE entity-vocabulary ids, which would index the user KB's rows wrongly (a silently wrong
        model, or an out-of-range error at the first batch)."""
        if self.knowledge_variant is None:
            return
        kb_size = config.get("kb_size") if isinstance(config, Mapping) else getattr(config, "kb_size", None)
        if kb_size is None or knowledge_file(folder, KB_ENTITIES_FILE) is not None:
            return
        raise ValueError(
            f"{source} has kb_size={kb_size} (a user-supplied knowledge base, set with set_knowledge_base), but "
            f"it carries no KB files ({KB_ENTITIES_FILE}): without them --variant {self.name}'s candidate ids are "
            "the tokenizer's entity-vocabulary ids, which do not index the rows of a user KB. Save the model with its "
            "KB (the scripts' --kb_entity_vectors runs do), train a user-KB model "
            "from Python with gesa.processing_kb (EntityCandidateGenerator(alias_table=...) giving KB rows, "
            f"KnowledgeCollator; see model_cards/{self.knowledge_variant}.md), or use a checkpoint with kb_size=None."
        )

    def from_luke(
        self,
        name_or_path: str,
        keep_entity_aware_queries: bool | None = None,
        entity_rows: list[int] | None = None,
        hub: dict[str, Any] | None = None,
        **overrides: Any,
    ) -> PreTrainedModel:
        """`model_class.from_luke_pretrained(...)` with the variant's config overrides (then `overrides`); `hub`:
        `cache_dir`, `revision`, `token` ... for the download."""
        if entity_rows is not None and not self.shrink_entity_table:
            raise ValueError(
                f"--variant {self.name} uses LUKE's entity table as its knowledge base: do not shrink it (entity_rows)."
            )
        hub = hub or {}
        layers = AutoConfig.from_pretrained(name_or_path, **hub).num_hidden_layers
        merged = self._overrides(layers, overrides)
        self.check_knowledge_base(merged, source="a config override")
        return self.model_class.from_luke_pretrained(
            name_or_path,
            # None: the model class decides (ablation 'luke' keeps LUKE's own queries: that preset is exactly LUKE)
            keep_entity_aware_queries=True if keep_entity_aware_queries or self.keep_entity_aware_queries else None,
            entity_rows=entity_rows,
            **hub,
            **merged,
        )

    def from_scratch(self, **config_kwargs: Any) -> PreTrainedModel:
        """A randomly initialised model: `model_class(config_class(**config_kwargs, **variant overrides))`."""
        layers = config_kwargs.get("num_hidden_layers", GesaConfig().num_hidden_layers)
        config = self.config_class(**self._overrides(layers, config_kwargs))
        self.check_knowledge_base(config, source="the config")
        return self.model_class(config)

    def from_checkpoint(
        self,
        name_or_path: str,
        config: PretrainedConfig | None = None,
        hub: dict[str, Any] | None = None,
    ) -> PreTrainedModel:
        """`model_class.from_pretrained(name_or_path, config=config)` for a checkpoint of this variant (`config`:
        default, the checkpoint's own); refuses a KAR/ERNIE checkpoint with a user KB (`check_knowledge_base`) before
        loading any weight. `hub`: `cache_dir`, `revision`, `token` ... for the download."""
        hub = hub or {}
        if config is None:
            config = self.config_class.from_pretrained(name_or_path, **hub)
        self.check_knowledge_base(config, source=str(name_or_path), folder=str(name_or_path))
        return self.model_class.from_pretrained(name_or_path, config=config, **hub)

    def wrap_collator(
        self,
        collator: Collator,
        tokenizer: PreTrainedTokenizerBase,
        alias_table: Mapping[str, Sequence[tuple[int | str, float]]] | None = None,
        max_candidates: int = 30,
        candidates: EntityCandidateGenerator | None = None,
        ner: Callable[[str], Sequence[tuple[int, int]]] | None = None,
    ) -> Collator:
        """The GESA collator, plus the KB inputs for KAR/ERNIE (title match in the tokenizer's entity vocabulary and
        the optional alias table, or `candidates`: the KB files' generator; `ner`: ERNIE's NER for the spans no alias
        matches); unchanged for the other variants."""
        if self.knowledge_variant is None:
            return collator
        if candidates is not None:
            builder = KnowledgeInputBuilder(tokenizer, candidates, self.knowledge_variant)
        else:
            builder = KnowledgeInputBuilder.from_tokenizer(
                tokenizer, self.knowledge_variant, alias_table, max_candidates
            )
        builder.ner = ner
        return KnowledgeCollator(collator, builder)

    def make_processor(self, tokenizer: PreTrainedTokenizerBase, **kwargs: Any) -> XhProcessor:
        """XH's graph processor (`max_node_length`, `max_query_length`, `max_nodes`, ...)."""
        if self.uses_gesa_features:
            raise ValueError(f"--variant {self.name} trains on GesaProcessor features, not XH graphs.")
        return XhProcessor(tokenizer, **kwargs)


VARIANTS: dict[str, VariantSpec] = {
    spec.name: spec
    for spec in (
        VariantSpec(
            "gesa",
            "GESA: relative-position labels on LUKE",
            GesaForEntitySpanQA,
            GesaConfig,
            # seed 002's objectives (run_entity_tasks.py --task pretrain --objectives ...): its encoder starts a task
            pretraining_head="GesaForEntityPreTraining",
        ),
        VariantSpec(
            "luke",
            "LUKE exactly (absolute positions, no labels)",
            GesaForEntitySpanQA,
            GesaConfig,
            config_overrides={"ablation": "luke"},
            pretraining_head="GesaForEntityPreTraining",
        ),
        VariantSpec(
            "luke_graph",
            "LUKE-Graph: LUKE + gated relational graph network over the entity graph (GESA paper, Table 2)",
            LukeGraphForEntitySpanQA,
            LukeGraphConfig,
            config_overrides={"ablation": "luke"},
            keep_entity_aware_queries=True,
        ),
        VariantSpec(
            "kar",
            "KnowBERT-KAR: knowledge attention and recontextualisation (KB: LUKE's entity table)",
            KarForEntitySpanQA,
            KarConfig,
            shrink_entity_table=False,
            knowledge_variant="kar",
            pretraining_head="KarForPreTraining",
        ),
        VariantSpec(
            "ernie",
            "ERNIE: knowledge-entity stream and information fusion in the top layers",
            ErnieForEntitySpanQA,
            ErnieConfig,
            shrink_entity_table=False,
            knowledge_variant="ernie",
            pretraining_head="ErnieForPreTraining",
        ),
        VariantSpec(
            "xh",
            "Transformer-XH: sentence graph with extra-hop attention among sentence hubs",
            XhForEntitySpanQA,
            XhConfig,
            uses_gesa_features=False,
        ),
        VariantSpec(
            "context_graph",
            "Acton 2023's context-graph GNN (WikiHop/MedHop): the word encoder embeds each text, a GNN reads the graph",
            ContextGraphForMultipleChoice,
            ContextGraphConfig,
        ),
        VariantSpec(
            "long_luke",
            "LUKE for whole documents (seed 002): Longformer/BigBird attention, windows growing with depth",
            LongLukeForEntitySpanQA,
            LongLukeConfig,
            # the position rows a conversion grows to (LUKE's 512 copied over them), not the checkpoint's 514
            config_overrides={
                "max_position_embeddings": LongLukeConfig.__dataclass_fields__["max_position_embeddings"].default
            },
            # seed 002's objectives (run_entity_tasks.py --task pretrain --variant long_luke --objectives ...)
            pretraining_head="LongLukeForEntityPreTraining",
        ),
    )
}


def knowledge_variant_of(model_type: str) -> str | None:
    """``"kar"``/``"ernie"`` for a config ``model_type`` whose collator adds knowledge-base inputs, else ``None``."""
    for spec in VARIANTS.values():
        if spec.config_class.model_type == model_type:
            return spec.knowledge_variant
    return None


def reads_sentence_graphs(model_type: str) -> bool:
    """Whether a config ``model_type`` reads XH sentence graphs (``XhProcessor``) instead of GESA windows."""
    return any(
        spec.config_class.model_type == model_type and not spec.uses_gesa_features for spec in VARIANTS.values()
    )


def variant_of(model_type: Any, ablation: Any = None) -> str | None:
    """The ``--variant`` that builds a config's ``model_type`` (``gesa`` with ``ablation="luke"``: ``luke``); ``None``
    for a model type no variant builds."""
    if model_type == GesaConfig.model_type and ablation == "luke":
        return "luke"
    return next((name for name, spec in VARIANTS.items() if spec.config_class.model_type == model_type), None)


# what a head class is trained for, by the end of its name (the longest that fits): the run that trains a checkpoint
# of that head, named when a checkpoint is given to another task (``training.models.check_checkpoint_head``)
HEAD_RUNS = {
    "ForEntitySpanQA": "ReCoRD (run_record.py)",
    "ForEntityMultipleChoice": "WikiHop / MedHop (run_multihop.py --task wikihop or medhop)",
    "ForMultipleChoice": "WikiHop / MedHop (run_multihop.py --task wikihop or medhop)",
    "PaperSystemForHotpotQA": "HotpotQA's paper system (run_multihop.py --task hotpotqa --system paper)",
    "ForHotpotQA": "HotpotQA (run_multihop.py --task hotpotqa)",
    "ForFactVerification": "FEVER (run_multihop.py --task fever)",
    "ForEntityClassification": "entity typing (run_entity_tasks.py --task entity_typing)",
    "ForEntityPairClassification": "relation classification (run_entity_tasks.py --task relation_classification)",
    "ForEntitySpanClassification": "NER (run_entity_tasks.py --task ner)",
    "ForMaskedLM": "pre-training (run_entity_tasks.py --task pretrain)",
    "ForPreTraining": "pre-training (run_entity_tasks.py --task pretrain)",
}


def head_run(class_name: Any) -> str | None:
    """What a head class (by name) is trained for and by which run (``HEAD_RUNS``); ``None`` when unknown."""
    if not isinstance(class_name, str):
        return None
    ending = max((end for end in HEAD_RUNS if class_name.endswith(end)), key=len, default=None)
    return None if ending is None else HEAD_RUNS[ending]


__all__ = [
    "HEAD_RUNS",
    "VARIANTS",
    "VariantSpec",
    "head_run",
    "knowledge_variant_of",
    "reads_sentence_graphs",
    "variant_of",
]
