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
``pipeline(...)`` loads the tokenizer and nothing else, and none of them generates. A head of this package names the
pipeline its checkpoints answer through (``pipeline``, written to ``config.custom_pipelines``); a pipeline built on a
model whose head names another one is refused with that name, not left to fail on the wrong features. Given a list,
a pipeline checks every item first (``check_input``), so an error names the bad item's position.

Flat module: copied next to every saved checkpoint, so it imports only its siblings and third-party packages.
"""

from __future__ import annotations

from typing import Any

from transformers import Pipeline
from transformers.pipelines import PIPELINE_REGISTRY


class TokenizerPipeline(Pipeline):
    """A `Pipeline` that loads only the tokenizer (no processor, image processor, feature extractor or video
    processor) and never calls `generate`, on a model whose head names this pipeline (or names none)."""

    _load_processor = False
    _load_image_processor = False
    _load_feature_extractor = False
    _load_video_processor = False
    _load_tokenizer = True
    _pipeline_calls_generate = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        impl = getattr(getattr(type(self.model), "pipeline", None), "impl", None)
        if isinstance(impl, str) and impl.rpartition(".")[2] not in {cls.__name__ for cls in type(self).__mro__}:
            raise ValueError(
                f"{type(self.model).__name__} answers through {impl}, not {type(self).__name__}: load its saved "
                f"checkpoint with pipeline(model=checkpoint_dir, trust_remote_code=True), or pass "
                f"pipeline_class={impl.rpartition('.')[2]} (gesa.{impl})"
            )

    def check_input(self, item: Any) -> None:
        """Raise the ``ValueError``/``TypeError`` that ``preprocess`` would raise for one input (a pipeline checks its
        fields here); the default checks nothing."""

    def __call__(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        """``Pipeline.__call__``; a list is checked item by item first, so a bad item is named by its position."""
        if isinstance(inputs, list):
            for position, item in enumerate(inputs):
                try:
                    self.check_input(item)
                except (TypeError, ValueError) as error:
                    raise ValueError(f"inputs[{position}] (of {len(inputs)}): {error}") from error
        return super().__call__(inputs, *args, **kwargs)


def register_pipelines(*tasks: tuple[str, type[Pipeline], type]) -> None:
    """`pipeline(task, model=...)` for each `(task, pipeline class, Auto model class)` once its module is imported;
    the first import wins (the package's or a checkpoint's copy)."""
    for task, pipeline_class, auto_class in tasks:
        if task not in PIPELINE_REGISTRY.supported_tasks:
            PIPELINE_REGISTRY.register_pipeline(task, pipeline_class, pt_model=auto_class)


__all__ = ["TokenizerPipeline", "register_pipelines"]
