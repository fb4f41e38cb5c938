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
"""Knowledge-base inputs for KnowBERT-KAR and ERNIE on top of GESA's features.

- `EntityCandidateGenerator`: candidate KB entities of a mention string, KnowBERT-style: the user's alias table
  (alias -> entity ids or titles with priors) first, falling back to a normalised title match in the entity
  vocabulary (LUKE's Wikipedia titles; prior 1).
- `KnowledgeInputBuilder`: adds the KAR inputs (`kar_mention_spans`, `kar_candidate_ids`, `kar_candidate_priors`) or
  the ERNIE inputs (`ernie_entity_ids`, `ernie_entity_positions`) to a collated GESA batch (README "Model inputs"):
  every real, non-placeholder entity's mention is read back from its word tokens, so it works after any collator
  (also inside `Trainer`, where the string columns are gone).
- `KnowledgeCollator`: a GESA data collator followed by a `KnowledgeInputBuilder`.

Candidate ids index the model's knowledge base: the entity table (entity-vocabulary ids) unless the model has a
separate KB (`kb_size`), in which case the alias table must give KB rows.

Flat module: copied next to every saved checkpoint, so it imports third-party packages only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
from transformers import PreTrainedTokenizerBase

SPECIAL_ENTITY_TITLES = ("[PAD]", "[UNK]", "[MASK]", "[MASK2]")
KNOWLEDGE_VARIANTS = ("kar", "ernie")


def normalize_title(text: str) -> str:
    """Alias / title key: case-folded, underscores as spaces, single spaces, surrounding punctuation stripped."""
    return " ".join(text.replace("_", " ").casefold().split()).strip(" .,;:!?\"'()[]")


class EntityCandidateGenerator:
    """Candidate KB entities for a mention string, with priors (KnowBERT's candidate selector).

    Args:
        entity_vocab: title -> entity id (e.g. `LukeTokenizer.entity_vocab`); titles are matched after
            `normalize_title`. Special entities (`[PAD]`, `[UNK]`, `[MASK]`, `[MASK2]`) never match.
        alias_table: alias -> `[(entity, prior), ...]` with `entity` a KB id or a title of `entity_vocab`; looked up
            first, after `normalize_title`.
        max_candidates: candidates kept per mention, highest priors first (KnowBERT: 30).
    """

    def __init__(
        self,
        entity_vocab: Mapping[str, int] | None = None,
        alias_table: Mapping[str, Sequence[tuple[int | str, float]]] | None = None,
        max_candidates: int = 30,
    ) -> None:
        if entity_vocab is None and alias_table is None:
            raise ValueError("EntityCandidateGenerator needs an entity_vocab, an alias_table, or both.")
        if max_candidates < 1:
            raise ValueError(f"max_candidates must be positive, got {max_candidates}.")
        self.max_candidates = max_candidates
        self.entity_vocab = dict(entity_vocab or {})
        self.titles: dict[str, int] = {}
        for title, entity_id in self.entity_vocab.items():
            if title in SPECIAL_ENTITY_TITLES:
                continue
            self.titles.setdefault(normalize_title(title), int(entity_id))
        self.aliases: dict[str, list[tuple[int, float]]] = {}
        for alias, candidates in (alias_table or {}).items():
            resolved = []
            for entity, prior in candidates:
                if isinstance(entity, str):
                    if entity not in self.entity_vocab:
                        raise ValueError(f"alias_table[{alias!r}] names {entity!r}, which is not in the entity_vocab.")
                    entity = self.entity_vocab[entity]
                resolved.append((int(entity), float(prior)))
            resolved.sort(key=lambda item: -item[1])
            self.aliases.setdefault(normalize_title(alias), []).extend(resolved)
        self._cache: dict[str, list[tuple[int, float]]] = {}

    @classmethod
    def from_tokenizer(
        cls,
        tokenizer: PreTrainedTokenizerBase,
        alias_table: Mapping[str, Sequence[tuple[int | str, float]]] | None = None,
        max_candidates: int = 30,
    ) -> EntityCandidateGenerator:
        """Title match in the tokenizer's entity vocabulary (LUKE's), plus an optional alias table."""
        entity_vocab = getattr(tokenizer, "entity_vocab", None)
        if entity_vocab is None and alias_table is None:
            raise ValueError(
                f"{type(tokenizer).__name__} has no entity_vocab; pass an alias_table (alias -> [(kb_id, prior)])."
            )
        return cls(entity_vocab, alias_table, max_candidates)

    def __call__(self, mention: str) -> list[tuple[int, float]]:
        """`[(kb_id, prior), ...]`, best first, at most `max_candidates`; `[]` when nothing matches."""
        key = normalize_title(mention)
        if key not in self._cache:
            if key in self.aliases:
                candidates = self.aliases[key][: self.max_candidates]
            elif key in self.titles:
                candidates = [(self.titles[key], 1.0)]
            else:
                candidates = []
            self._cache[key] = candidates
        return self._cache[key]


class KnowledgeInputBuilder:
    """Adds the KAR or ERNIE inputs to a collated GESA batch, from the mention strings of its entities.

    KAR (`variant="kar"`): one mention slot per LUKE entity (C = E), the placeholder and padding as `[-1, -1]`:
    `kar_mention_spans` `(B, E, 2)` inclusive word spans, `kar_candidate_ids` `(B, E, K)` (-1 padded) and
    `kar_candidate_priors` `(B, E, K)`.
    ERNIE (`variant="ernie"`): each mention with a candidate is linked to its best one (ERNIE links with TAGME: one
    entity per mention), aligned to the mention's first word: `ernie_entity_ids` and `ernie_entity_positions` `(B, N)`,
    -1 padded.

    Args:
        tokenizer: the word tokenizer of the features (to read the mentions back).
        candidates: an `EntityCandidateGenerator`.
        variant: `"kar"` or `"ernie"`.
    """

    def __init__(self, tokenizer: PreTrainedTokenizerBase, candidates: EntityCandidateGenerator, variant: str) -> None:
        if variant not in KNOWLEDGE_VARIANTS:
            raise ValueError(f"variant must be one of {KNOWLEDGE_VARIANTS}, got {variant!r}.")
        self.tokenizer = tokenizer
        self.candidates = candidates
        self.variant = variant

    @classmethod
    def from_tokenizer(
        cls,
        tokenizer: PreTrainedTokenizerBase,
        variant: str,
        alias_table: Mapping[str, Sequence[tuple[int | str, float]]] | None = None,
        max_candidates: int = 30,
    ) -> KnowledgeInputBuilder:
        """The builder the scripts and the pipelines use: candidates by title match in the tokenizer's entity
        vocabulary (LUKE's), plus an optional alias table (`EntityCandidateGenerator.from_tokenizer`)."""
        candidates = EntityCandidateGenerator.from_tokenizer(tokenizer, alias_table, max_candidates)
        return cls(tokenizer, candidates, variant)

    def mentions(self, batch: Mapping[str, torch.Tensor]) -> list[list[tuple[int, int, int, str]]]:
        """Per example, `(entity index, first word, last word, mention text)` of every real, non-placeholder entity."""
        input_ids = batch["input_ids"]
        positions = batch["entity_position_ids"]
        real = batch.get("entity_attention_mask", torch.ones(positions.shape[:2], dtype=torch.long)).bool()
        if "placeholder_entity_mask" in batch:
            real = real & ~batch["placeholder_entity_mask"].bool()
        found = []
        for b in range(positions.size(0)):
            row = []
            for e in real[b].nonzero().flatten().tolist():
                words = [p for p in positions[b, e].tolist() if p >= 0]
                if not words:
                    continue
                text = self.tokenizer.decode(input_ids[b, words].tolist(), skip_special_tokens=True).strip()
                row.append((e, min(words), max(words), text))
            found.append(row)
        return found

    def __call__(self, batch: Mapping[str, Any]) -> dict[str, Any]:
        """A new batch dict: `batch` plus the variant's inputs."""
        out = dict(batch)
        mentions = self.mentions(batch)
        batch_size, entity_length = batch["entity_position_ids"].shape[:2]
        if self.variant == "kar":
            per_mention = [[self.candidates(text) for *_, text in row] for row in mentions]
            width = max([len(c) for row in per_mention for c in row] + [1])
            spans = torch.full((batch_size, entity_length, 2), -1, dtype=torch.long)
            ids = torch.full((batch_size, entity_length, width), -1, dtype=torch.long)
            priors = torch.zeros(batch_size, entity_length, width)
            for b, (row, row_candidates) in enumerate(zip(mentions, per_mention, strict=True)):
                for (entity, first, last, _), candidates in zip(row, row_candidates, strict=True):
                    spans[b, entity] = torch.tensor([first, last])
                    for k, (kb_id, prior) in enumerate(candidates):
                        ids[b, entity, k] = kb_id
                        priors[b, entity, k] = prior
            out.update(kar_mention_spans=spans, kar_candidate_ids=ids, kar_candidate_priors=priors)
        else:
            linked = []
            for row in mentions:
                aligned: dict[int, int] = {}
                for _, first, _, text in row:
                    candidates = self.candidates(text)
                    if candidates and first not in aligned:
                        aligned[first] = candidates[0][0]
                linked.append(sorted(aligned.items()))
            width = max([len(row) for row in linked] + [1])
            ids = torch.full((batch_size, width), -1, dtype=torch.long)
            positions = torch.full((batch_size, width), -1, dtype=torch.long)
            for b, row in enumerate(linked):
                for n, (first, kb_id) in enumerate(row):
                    ids[b, n], positions[b, n] = kb_id, first
            out.update(ernie_entity_ids=ids, ernie_entity_positions=positions)
        return out


def knowledge_inputs_of(model: Any, user: str) -> str:
    """The knowledge inputs a model's forward reads (its ``knowledge_inputs``: ``"kar"`` / ``"ernie"``); one
    ``ValueError`` naming ``user`` (the pipeline that adds them) when it reads none."""
    variant = getattr(model, "knowledge_inputs", None)
    if variant not in KNOWLEDGE_VARIANTS:
        raise ValueError(
            f"{user} adds KnowBERT-KAR or ERNIE knowledge inputs, but {type(model).__name__} reads none (its "
            f"knowledge_inputs {variant!r} is not one of {KNOWLEDGE_VARIANTS}): use the pipeline its checkpoint names"
        )
    return variant


class KnowledgeCollator:
    """`builder(collator(features))`: a GESA data collator (e.g. `GesaProcessor.get_data_collator()`) whose batches
    also carry the KAR or ERNIE inputs."""

    def __init__(
        self, collator: Callable[[Sequence[Mapping[str, Any]]], dict[str, Any]], builder: KnowledgeInputBuilder
    ) -> None:
        self.collator = collator
        self.builder = builder

    def __call__(self, features: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        return self.builder(self.collator(features))


__all__ = [
    "KNOWLEDGE_VARIANTS",
    "EntityCandidateGenerator",
    "KnowledgeCollator",
    "KnowledgeInputBuilder",
    "knowledge_inputs_of",
    "normalize_title",
]
