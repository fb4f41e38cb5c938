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
"""gesa: graph-enhanced, entity-aware reading comprehension models for 🤗 Transformers.

The flat modules beside this file (`configuration_gesa.py`, `modeling_gesa.py`, `processing_gesa.py`, ...) are
also copied next to every saved checkpoint, where `trust_remote_code=True` loads them without this package.
"""

from .configuration_gesa import ABLATION_PRESETS, DEFAULT_LABEL_SWITCHES, GesaConfig
from .configuration_long_luke import LongLukeConfig
from .configuration_luke_graph import LukeGraphConfig
from .configuration_variants import ErnieConfig, KarConfig, XhConfig
from .modeling_ernie import ErnieForDenoisingEntityAutoencoder, ErnieForEntitySpanQA, ErnieModel
from .modeling_gesa import (
    GesaEntitySpanQAOutput,
    GesaForEntitySpanQA,
    GesaModel,
    GesaModelOutput,
    GesaPreTrainedModel,
)
from .modeling_gesa_entity import (
    GesaForEntityClassification,
    GesaForEntityPairClassification,
    GesaForEntitySpanClassification,
    GesaForMaskedLM,
)
from .modeling_kar import KarForEntitySpanQA, KarModel
from .modeling_long_luke import LongLukeForEntitySpanQA, LongLukeModel
from .modeling_luke_graph import LukeGraphForEntitySpanQA, LukeGraphModel
from .modeling_xh import XhForEntitySpanQA, XhForFactVerification, XhForMultiHopQA, XhModel
from .pipeline_gesa import EntityClozeQAPipeline
from .pipeline_kb import KnowledgeClozeQAPipeline
from .pipeline_xh import XhClozeQAPipeline
from .processing_gesa import GesaDataCollator, GesaProcessor
from .processing_kb import EntityCandidateGenerator, KnowledgeCollator, KnowledgeInputBuilder
from .processing_xh import XhGraphCollator, XhProcessor
from .render_gesa import render_entity_graph, render_html

__version__ = "0.1.0"

__all__ = [
    "ABLATION_PRESETS",
    "DEFAULT_LABEL_SWITCHES",
    "GesaConfig",
    "GesaEntitySpanQAOutput",
    "GesaForEntityClassification",
    "GesaForEntityPairClassification",
    "GesaForEntitySpanClassification",
    "GesaForEntitySpanQA",
    "GesaForMaskedLM",
    "GesaModel",
    "GesaModelOutput",
    "GesaPreTrainedModel",
    # variants
    "ErnieConfig",
    "ErnieForDenoisingEntityAutoencoder",
    "ErnieForEntitySpanQA",
    "ErnieModel",
    "KarConfig",
    "KarForEntitySpanQA",
    "KarModel",
    "LongLukeConfig",
    "LongLukeForEntitySpanQA",
    "LongLukeModel",
    "LukeGraphConfig",
    "LukeGraphForEntitySpanQA",
    "LukeGraphModel",
    "XhConfig",
    "XhForEntitySpanQA",
    "XhForFactVerification",
    "XhForMultiHopQA",
    "XhModel",
    # processors (ReCoRD -> model inputs) and inference
    "EntityCandidateGenerator",
    "EntityClozeQAPipeline",
    "GesaDataCollator",
    "GesaProcessor",
    "KnowledgeClozeQAPipeline",
    "KnowledgeCollator",
    "KnowledgeInputBuilder",
    "XhClozeQAPipeline",
    "XhGraphCollator",
    "XhProcessor",
    "render_entity_graph",
    "render_html",
]
