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
"""LUKE-Graph's gated relational graph network under the WikiHop multiple-choice head
(``modeling_gesa_multiple_choice``): the head's forward with LUKE-Graph's encoder and inputs.

Flat module: copied next to every saved checkpoint, so it imports only its siblings.
"""

from __future__ import annotations

from .modeling_gesa_multiple_choice import GesaForEntityMultipleChoice
from .modeling_luke_graph import LukeGraphModel, LukeGraphPreTrainedModel


class LukeGraphForEntityMultipleChoice(LukeGraphPreTrainedModel, GesaForEntityMultipleChoice):
    """LUKE-Graph's gated relational graph network under the multiple-choice head."""

    base_model_class = LukeGraphModel


LukeGraphForEntityMultipleChoice.register_for_auto_class("AutoModelForMultipleChoice")

__all__ = ["LukeGraphForEntityMultipleChoice"]
