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
"""Seed 002's pre-training objectives (``modeling_gesa_objectives``: LUKE's masked words and entities, ERICA's entity
and relation discrimination, KBIR's infilling, length and replacement heads) on the long-document LUKE
(``modeling_long_luke``): ``run_entity_tasks.py --task pretrain --variant long_luke --objectives ...``. Only the
backbone differs: the head reads it through ``GesaForEntityPreTraining``'s forward; a LUKE conversion grows the position
tables beyond LUKE's 512 as ``LongLukePreTrainedModel.from_luke_pretrained`` does, and the infilling decoder starts as
LUKE's word table. A checkpoint of this head starts the long variant's task heads (``LongLukeForDocumentIE``: its
encoder loaded, the task head new).

Flat module: copied next to a saved checkpoint, so it imports only its siblings and third-party packages.
"""

from __future__ import annotations

from .modeling_gesa_objectives import GesaForEntityPreTraining
from .modeling_long_luke import LongLukeModel, LongLukePreTrainedModel


class LongLukeForEntityPreTraining(LongLukePreTrainedModel, GesaForEntityPreTraining):
    """``GesaForEntityPreTraining`` on ``LongLukeModel`` (module docstring)."""

    base_model_class = LongLukeModel


LongLukeForEntityPreTraining.register_for_auto_class("AutoModelForPreTraining")

__all__ = ["LongLukeForEntityPreTraining"]
