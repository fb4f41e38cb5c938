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
"""The KB files of a KnowBERT-KAR or ERNIE run (``--kb_alias_table FILE``, ``--kb_entity_vectors FILE`` on
``run_entity_tasks.py`` and ``run_record.py``): read with ``records_kb``, the vectors installed as the model's frozen
KB (``set_knowledge_base``), the candidates handed to the collator through the processor (``knowledge_candidates``).
Without the flags the KB is LUKE's entity table and the aliases are its titles, or, for a checkpoint of a run that
had them, the KB files the checkpoint carries (``loading_gesa.KNOWLEDGE_FILES``, saved with the model).

Flat module: imports its siblings relatively, third-party packages otherwise.
"""

from __future__ import annotations

from typing import Any

from .inputs_gesa import InputError
from .loading_gesa import KB_ENTITIES_FILE
from .processing_kb import EntityCandidateGenerator
from .records_kb import KnowledgeBaseFiles, checkpoint_knowledge_files, load_knowledge_files
from .registry_gesa import VARIANTS
from .training_gesa import ScriptArgumentError

KB_ALIAS_TABLE_HELP = (
    "--variant kar/ernie: the KB's alias table, a TSV of 'alias<TAB>entity<TAB>prior' lines (KnowBERT's candidates "
    "with p(e|m)); entities are names of --kb_entity_vectors or LUKE's titles. Default: LUKE's titles, prior 1."
)
KB_ENTITY_VECTORS_HELP = (
    "--variant kar/ernie: the KB's entity embeddings, 'name v1 ... vD' lines (word2vec / wikipedia2vec text format, "
    "a TransE export; D = the model's entity_emb_size), frozen. Default: LUKE's entity table."
)


def attach_knowledge_files(model_args: Any, model: Any, tokenizer: Any, processor: Any) -> KnowledgeBaseFiles | None:
    """Read ``--kb_alias_table`` / ``--kb_entity_vectors`` (``None`` without them), install the vectors as the model's
    KB and keep the files on ``processor`` (``knowledge_files``) for the collator; one ``ScriptArgumentError`` naming
    the flag, the file and the line of a problem."""
    alias_table = getattr(model_args, "kb_alias_table", None)
    entity_vectors = getattr(model_args, "kb_entity_vectors", None)
    if alias_table is None and entity_vectors is None:
        return attach_checkpoint_knowledge(model_args, model, tokenizer, processor)
    if VARIANTS[model_args.variant].knowledge_variant is None:
        raise ScriptArgumentError(
            f"--kb_alias_table / --kb_entity_vectors feed KnowBERT-KAR and ERNIE only, not --variant "
            f"{model_args.variant}: drop them, or pass --variant kar or ernie"
        )
    try:
        files = load_knowledge_files(
            alias_table,
            entity_vectors,
            getattr(tokenizer, "entity_vocab", None),
            alias_where=f"--kb_alias_table {alias_table}",
            vectors_where=f"--kb_entity_vectors {entity_vectors}",
        )
    except InputError as error:
        raise ScriptArgumentError(str(error)) from None
    if files.vectors is not None:
        width = model.config.entity_emb_size
        if files.vectors.size(1) != width:
            raise ScriptArgumentError(
                f"--kb_entity_vectors {entity_vectors}: its vectors have {files.vectors.size(1)} values, the model's "
                f"KB width (entity_emb_size) is {width}: give vectors of that size (e.g. train TransE with dim={width})"
            )
        model.set_knowledge_base(files.vectors)
    processor.knowledge_files = files
    model.knowledge_files = files  # saved with every checkpoint (loading_gesa.save_knowledge_files)
    return files


def attach_checkpoint_knowledge(
    model_args: Any, model: Any, tokenizer: Any, processor: Any
) -> KnowledgeBaseFiles | None:
    """The KB files a KAR/ERNIE checkpoint of a script carries (``records_kb.checkpoint_knowledge_files``), kept on
    ``processor`` and ``model`` as ``attach_knowledge_files`` keeps a run's; ``None`` when it carries none."""
    if getattr(model, "knowledge_inputs", None) is None:
        return None
    path = model_args.model_name_or_path
    try:
        files = checkpoint_knowledge_files(path, getattr(tokenizer, "entity_vocab", None))
    except InputError as error:
        raise ScriptArgumentError(f"--model_name_or_path {path}: {error}") from None
    if files is None:
        return None
    kb_size = getattr(model.config, "kb_size", None)
    if files.entities is not None and kb_size != len(files.entities):
        raise ScriptArgumentError(
            f"--model_name_or_path {path}: its {KB_ENTITIES_FILE} lists {len(files.entities)} entities, its KB has "
            f"kb_size={kb_size} rows: the folder's KB files belong to another model; copy the checkpoint again"
        )
    processor.knowledge_files = files
    model.knowledge_files = files
    return files


def knowledge_candidates(processor: Any, max_candidates: int = 30) -> EntityCandidateGenerator | None:
    """The candidate generator of the run's KB files (``attach_knowledge_files``), or ``None`` (LUKE's titles)."""
    files = getattr(processor, "knowledge_files", None)
    if files is None:
        return None
    return files.candidate_generator(getattr(processor.tokenizer, "entity_vocab", None), max_candidates)


__all__ = [
    "KB_ALIAS_TABLE_HELP",
    "KB_ENTITY_VECTORS_HELP",
    "attach_checkpoint_knowledge",
    "attach_knowledge_files",
    "knowledge_candidates",
]
