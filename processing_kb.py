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

Flat module: copied next to every saved checkpoint, so it imports third-party packages and `checks_gesa` (the NULL
candidate's and the head entity's ids) only.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
from transformers import PreTrainedTokenizerBase

from .checks_gesa import ERNIE_HEAD_ENTITY, KAR_NULL_CANDIDATE

SPECIAL_ENTITY_TITLES = ("[PAD]", "[UNK]", "[MASK]", "[MASK2]")
# how the candidates of an alias table are formed (`EntityCandidateGenerator`), also in the docs and the flag's help
MERGE_RULE = (
    "aliases equal up to case, spaces, underscores and surrounding punctuation are one alias; an entity listed "
    "more than once under it is one candidate with the highest of its priors; candidates are sorted by prior, "
    "highest first"
)
KNOWLEDGE_VARIANTS = ("kar", "ernie")


# the one Unicode form of aliases, entity names and mention text (records_kb reads the KB files into it), so that a
# KB file in NFD and a text in NFC link the same
UNICODE_FORM = "NFC"


def normalize_title(text: str) -> str:
    """Alias / title key: Unicode NFC (`UNICODE_FORM`), case-folded, underscores as spaces, single spaces,
    surrounding punctuation stripped."""
    text = unicodedata.normalize(UNICODE_FORM, text)
    return " ".join(text.replace("_", " ").casefold().split()).strip(" .,;:!?\"'()[]")


class EntityCandidateGenerator:
    """Candidate KB entities for a mention string, with priors (KnowBERT's candidate selector).

    Args:
        entity_vocab: title -> entity id (e.g. `LukeTokenizer.entity_vocab`); titles are matched after
            `normalize_title`. Special entities (`[PAD]`, `[UNK]`, `[MASK]`, `[MASK2]`) never match.
        alias_table: alias -> `[(entity, prior), ...]` with `entity` a KB id or a title of `entity_vocab`; looked up
            first, after `normalize_title`. `MERGE_RULE`: aliases equal after `normalize_title` (case, spaces,
            underscores, surrounding punctuation) are one alias, an entity listed more than once under it is one
            candidate with the highest of its priors, and its candidates are sorted by prior, highest first (equal
            priors in the table's order).
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
        merged: dict[str, dict[int, float]] = {}  # normalised alias -> entity -> prior, in first-seen order
        for alias, candidates in (alias_table or {}).items():
            for entity, prior in candidates:
                if isinstance(entity, str):
                    if entity not in self.entity_vocab:
                        raise ValueError(f"alias_table[{alias!r}] names {entity!r}, which is not in the entity_vocab.")
                    entity = self.entity_vocab[entity]
                entities = merged.setdefault(normalize_title(alias), {})
                entities[int(entity)] = max(float(prior), entities.get(int(entity), -1.0))
        for key, entities in merged.items():
            # best first; equal priors keep the order the table gave them (sorted() is stable)
            self.aliases[key] = sorted(entities.items(), key=lambda item: -item[1])
        self._cache: dict[str, list[tuple[int, float]]] = {}
        keys = [*self.aliases, *self.titles]
        self.max_alias_words = max([len(key.split()) for key in keys] + [1])

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
    """Adds the KAR or ERNIE inputs to a collated GESA batch: the task's own mentions (its LUKE entities, read back
    from their word tokens) and, with `over_generate`, every other word span of the input that matches an alias.

    KAR (`variant="kar"`), KnowBERT's candidate mentions: slot `e < E` is LUKE entity `e`'s mention (the placeholder
    and padding `[-1, -1]`), the slots after it hold the over-generated alias spans. A mention gets its `K` best
    candidates by prior `p(e|m)` and, when it has any, KnowBERT's NULL entity (`KAR_NULL_CANDIDATE`, prior 0); a span
    the table does not know gets none. `kar_mention_spans` `(B, C, 2)` inclusive word spans, `kar_candidate_ids`
    `(B, C, K + 1)` (-1 padded), `kar_candidate_priors` `(B, C, K + 1)`.
    ERNIE (`variant="ernie"`): every mention with a candidate is linked to its best one (ERNIE links with TAGME: one
    entity per mention; here the top prior), aligned to the mention's first word, the task's mentions first, then
    the longest non-overlapping alias spans: `ernie_entity_ids` and `ernie_entity_positions` `(B, N)`, -1 padded.
    A batch with `marker_positions` (the words the typing / pair heads read) also gets one `ERNIE_HEAD_ENTITY` slot
    per marker (ERNIE's released code's `[CLS]` entity slot: the head reads the KB through it).
    With `ner` (a spaCy pipeline, `training.ner_spacy.SpacyMentionFinder`), the named entities over words no mention covers
    are ERNIE's mentions with a NULL entity: they feed the model nothing (an unaligned word) and are listed in
    `alignments` (the last batch's `(first, last, entity or None, "task" | "alias" | "ner")` per example).

    `report()` counts what the calls so far found (KnowBERT's linking statistics): mentions (task / alias), mentions
    with candidates, candidates per linked mention, entities aligned, gold links used (and those whose entity is not a
    candidate).

    Args:
        tokenizer: the word tokenizer of the features (to read the mentions back).
        candidates: an `EntityCandidateGenerator`.
        variant: `"kar"` or `"ernie"`.
        over_generate: also every alias-matching span of the input (KnowBERT, ERNIE), not only the task's mentions.
        add_null: KAR: add the NULL entity to every candidate list (KnowBERT).
        max_mention_words: longest over-generated span, in words (default: the longest alias, at most 8).
        ner: ERNIE: text -> character spans `(start, end)` of its named entities (spans no alias matches, NULL).
    """

    def __init__(
        self,
        tokenizer: PreTrainedTokenizerBase,
        candidates: EntityCandidateGenerator,
        variant: str,
        over_generate: bool = True,
        add_null: bool = True,
        max_mention_words: int | None = None,
        ner: Callable[[str], Sequence[tuple[int, int]]] | None = None,
    ) -> None:
        if variant not in KNOWLEDGE_VARIANTS:
            raise ValueError(f"variant must be one of {KNOWLEDGE_VARIANTS}, got {variant!r}.")
        self.tokenizer = tokenizer
        self.candidates = candidates
        self.variant = variant
        self.over_generate = over_generate
        self.add_null = add_null
        self.max_mention_words = max_mention_words or min(candidates.max_alias_words, 8)
        self.ner = ner
        self.alignments: list[list[tuple[int, int, int | None, str]]] = []
        self.special_ids = set(tokenizer.all_special_ids)
        self._word_start: dict[int, bool] = {}
        self.counts = dict.fromkeys(
            ("batches", "task_mentions", "alias_mentions", "linked_mentions", "candidates", "aligned_entities",
             "gold_mentions", "gold_not_candidate", "ner_mentions"), 0,
        )  # fmt: skip

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

    def _starts_word(self, token_id: int) -> bool:
        if token_id not in self._word_start:
            text = self.tokenizer.convert_tokens_to_string(self.tokenizer.convert_ids_to_tokens([token_id]))
            self._word_start[token_id] = text[:1].isspace()
        return self._word_start[token_id]

    def words(self, input_ids: Sequence[int], attention: Sequence[int] | None = None) -> list[tuple[int, int]]:
        """Inclusive token spans of the words of one sequence: a word starts after a special token or at a token that
        begins with a space (byte-level BPE's `Ġ`); special and padding tokens belong to no word."""
        words: list[tuple[int, int]] = []
        previous_special = True
        for index, token_id in enumerate(input_ids):
            if token_id in self.special_ids or (attention is not None and not attention[index]):
                previous_special = True
                continue
            if previous_special or self._starts_word(token_id) or not words:
                words.append((index, index))
            else:
                words[-1] = (words[-1][0], index)
            previous_special = False
        return words

    def alias_mentions(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None) -> list[list[tuple]]:
        """Per example, `(first word, last word, text, candidates)` of every span of up to `max_mention_words` words
        (inside one segment) whose text matches an alias or title: KnowBERT's over-generated candidate mentions."""
        found = []
        for b in range(input_ids.size(0)):
            ids = input_ids[b].tolist()
            words = self.words(ids, None if attention_mask is None else attention_mask[b].tolist())
            row = []
            for i in range(len(words)):
                for n in range(1, self.max_mention_words + 1):
                    if i + n > len(words) or (n > 1 and words[i + n - 1][0] != words[i + n - 2][1] + 1):
                        break
                    first, last = words[i][0], words[i + n - 1][1]
                    text = self.tokenizer.decode(ids[first : last + 1]).strip()
                    candidates = self.candidates(text)
                    if candidates:
                        row.append((first, last, text, candidates))
            found.append(row)
        return found

    def ner_mentions(self, ids: Sequence[int], attention_mask: torch.Tensor | None, row: int) -> list[tuple[int, int]]:
        """Inclusive token spans of the named entities `ner` finds in one sequence's words (none without `ner`): the
        words are decoded and joined by single spaces, each entity's character span mapped to the words it touches."""
        if self.ner is None:
            return []
        words = self.words(ids, None if attention_mask is None else attention_mask[row].tolist())
        pieces, starts, cursor = [], [], 0
        for first, last in words:
            text = self.tokenizer.decode(ids[first : last + 1]).strip()
            starts.append(cursor)
            pieces.append(text)
            cursor += len(text) + 1
        spans = []
        for start, end in self.ner(" ".join(pieces)):
            touched = [i for i, begin in enumerate(starts) if begin < end and start < begin + len(pieces[i])]
            if touched:
                spans.append((words[touched[0]][0], words[touched[-1]][1]))
        return spans

    def gold_candidates(self, gold_entities: torch.Tensor, candidate_ids: torch.Tensor) -> torch.Tensor:
        """`kar_gold_candidates` `(B, C)`: for each task mention (slot `e < E`) with a gold entity, the index of that
        entity (or of NULL) among its candidates; -1 elsewhere (alias spans, no gold, a gold entity that is not a
        candidate: counted in `report()`'s `gold_not_candidate`)."""
        gold = torch.full(candidate_ids.shape[:2], -1, dtype=torch.long)
        for b, e in (gold_entities != -1).nonzero().tolist():
            if e >= candidate_ids.size(1) or not (candidate_ids[b, e] != -1).any():
                continue
            self.counts["gold_mentions"] += 1
            hits = (candidate_ids[b, e] == gold_entities[b, e]).nonzero()
            if len(hits):
                gold[b, e] = int(hits[0, 0])
            else:
                self.counts["gold_not_candidate"] += 1
        return gold

    def report(self) -> dict[str, float]:
        """KnowBERT's linking statistics over the calls so far: mentions found (the task's and the alias spans),
        mentions with candidates, candidates per linked mention (NULL not counted), ERNIE's aligned entities."""
        counts = dict(self.counts)
        linked = counts["linked_mentions"]
        counts["candidates_per_mention"] = counts["candidates"] / linked if linked else 0.0
        return counts

    def __call__(self, batch: Mapping[str, Any]) -> dict[str, Any]:
        """A new batch dict: `batch` plus the variant's inputs. A batch's `kar_gold_entities` `(B, E)` (the gold KB
        row of each LUKE entity's mention, `KAR_NULL_CANDIDATE` for a gold NULL, -1 for none: `training.knowledge_base.gold_links`)
        becomes KAR's `kar_gold_candidates` `(B, C)`: the gold's index among its mention's candidates, -1 where the
        mention has no gold or its gold entity is not a candidate (KnowBERT's `L_EL`)."""
        out = dict(batch)
        gold_entities = out.pop("kar_gold_entities", None)
        mentions = self.mentions(batch)
        batch_size, entity_length = batch["entity_position_ids"].shape[:2]
        extra: list[list[tuple]] = [[] for _ in range(batch_size)]
        if self.over_generate:
            extra = self.alias_mentions(batch["input_ids"], batch.get("attention_mask"))
        self.counts["batches"] += 1
        self.counts["task_mentions"] += sum(len(row) for row in mentions)
        if self.variant == "kar":
            slots: list[list[tuple[int, int, int, list]]] = []  # (slot, first, last, candidates)
            for row, alias_row in zip(mentions, extra, strict=True):
                own = [(entity, first, last, self.candidates(text)) for entity, first, last, text in row]
                taken = {(first, last) for _, first, last, _ in own}
                spans = [(first, last, c) for first, last, _, c in alias_row if (first, last) not in taken]
                self.counts["alias_mentions"] += len(spans)
                slots.append(own + [(entity_length + j, first, last, c) for j, (first, last, c) in enumerate(spans)])
            null = 1 if self.add_null else 0
            width = max([len(c) + null for row in slots for *_, c in row if c] + [1])
            length = max([entity_length] + [slot + 1 for row in slots for slot, *_ in row])
            spans_tensor = torch.full((batch_size, length, 2), -1, dtype=torch.long)
            ids = torch.full((batch_size, length, width), -1, dtype=torch.long)
            priors = torch.zeros(batch_size, length, width)
            for b, row in enumerate(slots):
                for slot, first, last, candidates in row:
                    spans_tensor[b, slot] = torch.tensor([first, last])
                    if not candidates:
                        continue
                    self.counts["linked_mentions"] += 1
                    self.counts["candidates"] += len(candidates)
                    for k, (kb_id, prior) in enumerate(candidates):
                        ids[b, slot, k] = kb_id
                        priors[b, slot, k] = prior
                    if null:
                        ids[b, slot, len(candidates)] = KAR_NULL_CANDIDATE
            out.update(kar_mention_spans=spans_tensor, kar_candidate_ids=ids, kar_candidate_priors=priors)
            if gold_entities is not None:
                out["kar_gold_candidates"] = self.gold_candidates(gold_entities, ids)
        else:
            linked = []
            self.alignments = []
            for b, (row, alias_row) in enumerate(zip(mentions, extra, strict=True)):
                aligned: dict[int, int] = {}
                covered: set[int] = set()
                found: list[tuple[int, int, int | None, str]] = []  # (first, last, entity or None, source)
                for _, first, last, text in row:
                    candidates = self.candidates(text)
                    if candidates and first not in aligned:
                        aligned[first] = candidates[0][0]
                        self.counts["linked_mentions"] += 1
                        self.counts["candidates"] += len(candidates)
                    found.append((first, last, candidates[0][0] if candidates else None, "task"))
                    covered.update(range(first, last + 1))
                # the longest alias spans first (then the most probable link), never overlapping a chosen one
                self.counts["alias_mentions"] += len(alias_row)
                for first, last, _, candidates in sorted(alias_row, key=lambda m: (m[0] - m[1], -m[3][0][1], m[0])):
                    if covered.isdisjoint(range(first, last + 1)):
                        aligned[first] = candidates[0][0]
                        covered.update(range(first, last + 1))
                        found.append((first, last, candidates[0][0], "alias"))
                        self.counts["linked_mentions"] += 1
                        self.counts["candidates"] += len(candidates)
                # ERNIE's NER for the spans no alias matches: their entity is NULL, so they add no input
                for first, last in self.ner_mentions(batch["input_ids"][b].tolist(), batch.get("attention_mask"), b):
                    if covered.isdisjoint(range(first, last + 1)):
                        covered.update(range(first, last + 1))
                        found.append((first, last, None, "ner"))
                        self.counts["ner_mentions"] += 1
                self.alignments.append(sorted(found))
                self.counts["aligned_entities"] += len(aligned)
                if "marker_positions" in batch:  # the words the head reads: ERNIE's [CLS] entity slot
                    for position in batch["marker_positions"][b].tolist():
                        aligned.setdefault(int(position), ERNIE_HEAD_ENTITY)
                linked.append(sorted(aligned.items()))
            width = max([len(row) for row in linked] + [1])
            ids = torch.full((batch_size, width), -1, dtype=torch.long)
            positions = torch.full((batch_size, width), -1, dtype=torch.long)
            for b, row in enumerate(linked):
                for n, (first, kb_id) in enumerate(row):
                    ids[b, n], positions[b, n] = kb_id, first
            out.update(ernie_entity_ids=ids, ernie_entity_positions=positions)
        return out


def knowledge_inputs_of(model: Any, user: str, kb_files: bool = False) -> str:
    """The knowledge inputs a model's forward reads (its ``knowledge_inputs``: ``"kar"`` / ``"ernie"``); one
    ``ValueError`` naming ``user`` (the pipeline that adds them) when it reads none, or when it reads a user KB
    (``kb_size``) and its checkpoint carries no KB files (``kb_files``: ``records_kb.checkpoint_knowledge_files``)."""
    variant = getattr(model, "knowledge_inputs", None)
    if variant not in KNOWLEDGE_VARIANTS:
        raise ValueError(
            f"{user} adds KnowBERT-KAR or ERNIE knowledge inputs, but {type(model).__name__} reads none (its "
            f"knowledge_inputs {variant!r} is not one of {KNOWLEDGE_VARIANTS}): use the pipeline its checkpoint names"
        )
    kb_size = getattr(getattr(model, "config", None), "kb_size", None)
    if kb_size is not None and not kb_files:
        raise ValueError(
            f"{user} generates candidates from the tokenizer's entity titles (LUKE's table), but {type(model).__name__} "
            f"reads a user-supplied KB (kb_size={kb_size}) whose rows those ids do not index, and its checkpoint "
            "carries no KB files (kb_entities.txt, kb_alias_table.tsv): save the model with its KB (a run with "
            "--kb_entity_vectors does), or build its inputs with gesa.records_kb.load_knowledge_files(...)"
            ".candidate_generator(...) and processing_kb.KnowledgeInputBuilder"
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
        gold = [feature.get("kar_gold_entities") for feature in features]
        batch = self.collator([{k: v for k, v in feature.items() if k != "kar_gold_entities"} for feature in features])
        if any(row is not None for row in gold):  # gold links (--entity_links): padded with -1 to the batch's entities
            width = batch["entity_ids"].size(1)
            batch["kar_gold_entities"] = torch.tensor(
                [list(row or [])[:width] + [-1] * (width - len(row or [])) for row in gold], dtype=torch.long
            )
        return self.builder(batch)


__all__ = [
    "KNOWLEDGE_VARIANTS",
    "MERGE_RULE",
    "UNICODE_FORM",
    "EntityCandidateGenerator",
    "KnowledgeCollator",
    "KnowledgeInputBuilder",
    "knowledge_inputs_of",
    "normalize_title",
]
