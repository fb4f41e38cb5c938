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
"""SciREX's document IE heads (``modeling_document_ie``) on the long-document LUKE (``modeling_long_luke``): the whole
paper read in one pass (``run_document_ie.py --variant long_luke``). Only the backbone differs: the heads read it
through ``GesaForDocumentIE.encode``; ``<s>`` and ``</s>`` are global unless a ``global_attention_mask`` says
otherwise, and the mention entities of the second pass attend to (and are attended by) every word.

Flat module: copied next to a saved checkpoint, so it imports only its siblings and third-party packages.
"""

from __future__ import annotations

from .modeling_document_ie import GesaForDocumentIE
from .modeling_long_luke import LongLukeModel, LongLukePreTrainedModel


class LongLukeForDocumentIE(LongLukePreTrainedModel, GesaForDocumentIE):
    """``GesaForDocumentIE`` on ``LongLukeModel`` (module docstring)."""

    base_model_class = LongLukeModel


LongLukeForDocumentIE.register_for_auto_class("AutoModelForTokenClassification")

__all__ = ["LongLukeForDocumentIE"]
