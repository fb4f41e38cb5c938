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
"""``TokenizerPipeline``: the base of every gesa pipeline.

Each of them builds its own features from the checkpoint's tokenizer (and its saved processor settings), so
``pipeline(...)`` loads the tokenizer and nothing else, and none of them generates.

Flat module: copied next to every saved checkpoint, so it imports only its siblings and third-party packages.
"""

from __future__ import annotations

from transformers import Pipeline


class TokenizerPipeline(Pipeline):
    """A `Pipeline` that loads only the tokenizer (no processor, image processor, feature extractor or video
    processor) and never calls `generate`."""

    _load_processor = False
    _load_image_processor = False
    _load_feature_extractor = False
    _load_video_processor = False
    _load_tokenizer = True
    _pipeline_calls_generate = False


__all__ = ["TokenizerPipeline"]
