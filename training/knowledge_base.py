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
``--entity_links FILE`` (``gold_links``): the gold links of the task files as the features' ``kar_gold_entities``,
which the collator turns into KAR's ``kar_gold_candidates`` (KnowBERT's ``L_EL``).
Without the KB flags the KB is LUKE's entity table and the aliases are its titles, or, for a checkpoint of a run that
had them, the KB files the checkpoint carries (``loading_gesa.KNOWLEDGE_FILES``, saved with the model).

Flat module: imports its siblings relatively, third-party packages otherwise.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..checks_gesa import KAR_NULL_CANDIDATE
from ..inputs_gesa import InputError
from ..processing_kb import EntityCandidateGenerator
from ..records_kb import entity_key
from .entity_links import EntityLink, read_entity_links
from .machinery import ScriptArgumentError
from .models import attach_checkpoint_knowledge, attach_knowledge_files  # the KB files of a run (one loader)
from .ner_spacy import SpacyMentionFinder

logger = logging.getLogger(__name__)

# what the KB flags are for, said when a run that does not read them is given one (training.machinery.read_by)
KB_WHY = "the knowledge base of KnowBERT-KAR and ERNIE"
NER_WHY = "it finds ERNIE's mentions that no alias matches"
KB_ALIAS_TABLE_HELP = (
    "--variant kar/ernie: the KB's alias table, a TSV of 'alias<TAB>entity<TAB>prior' lines (KnowBERT's candidates "
    "with p(e|m)); entities are names of --kb_entity_vectors or LUKE's titles. Aliases equal up to case and "
    "surrounding punctuation are one alias, a repeated (alias, entity) pair one candidate with its highest prior, "
    "candidates best first. Default: LUKE's titles, prior 1."
)
KB_ENTITY_VECTORS_HELP = (
    "--variant kar/ernie: the KB's entity embeddings, 'name v1 ... vD' lines (word2vec / wikipedia2vec text format, "
    "a TransE export; D = the model's entity_emb_size), frozen. Default: LUKE's entity table."
)


ENTITY_LINKS_HELP = (
    '--variant kar: gold entity links of the task files (JSON lines {"id": example id, "links": [[start, end, '
    "entity or null], ...]}, word spans end exclusive), which train KnowBERT's linker with L_EL (logged as "
    "linking_loss) beside the task; an example listed is taken as fully linked (its other mentions' gold is NULL)."
)


def kb_rows(processor: Any) -> dict[str, int]:
    """Entity name -> KB row: the run's KB entity list (``--kb_entity_vectors`` or the checkpoint's), else the
    tokenizer's entity titles (LUKE's table; also matched after ``records_kb.entity_key``)."""
    files = getattr(processor, "knowledge_files", None)
    if files is not None and files.entities is not None:
        return {name: row for row, name in enumerate(files.entities)}
    vocab = getattr(processor.tokenizer, "entity_vocab", None) or {}
    return {**{entity_key(title): int(i) for title, i in vocab.items()}, **{t: int(i) for t, i in vocab.items()}}


def mention_slots(task: str, example: Any, feature: Mapping[str, Any]) -> list[tuple[int, int]]:
    """The word span of each LUKE entity of a feature: NER's candidate spans, the typed mention, head and tail."""
    if task == "ner":
        spans = [tuple(span) for span in feature["spans"]]
    elif task == "relation_classification":
        spans = [tuple(example.head), tuple(example.tail)]
    else:
        spans = [(example.start, example.end)]
    return spans[: len(feature["entity_ids"])]


def gold_links(
    task: str, examples: Sequence[Any], features: list[dict], links: Mapping[str, list[EntityLink]], processor: Any
) -> list[dict]:
    """``features`` with ``kar_gold_entities``: per LUKE entity, the KB row of its mention's gold entity;
    ``KAR_NULL_CANDIDATE`` where the gold is NULL (a ``null`` link, or no link in an example the file lists: it is
    taken as fully linked, as KnowBERT's annotated data); -1 where the example has no links or the entity is not in
    the KB (counted and logged). A link outside its example's words is a ``ScriptArgumentError``."""
    linker = GoldLinker(examples, links, processor)
    out = []
    for feature in features:
        example = examples[feature["example_index"]]
        out.append(dict(feature, kar_gold_entities=linker(example, mention_slots(task, example, feature))))
    linker.log()
    return out


class GoldLinker:
    """The gold KB rows of an example's mention spans from ``--entity_links`` (``gold_links``; KnowBERT's pre-training
    features, ``training.entity.PretrainTask``): ``linker(example, spans)``, then ``log()`` the counts."""

    def __init__(self, examples: Sequence[Any], links: Mapping[str, list[EntityLink]], processor: Any) -> None:
        self.rows, self.links = kb_rows(processor), links
        by_id = {str(example.id): example for example in examples}
        self.counts = dict.fromkeys(("examples", "links", "on_mentions", "unknown_entities"), 0)
        self.used: set[tuple[str, int, int]] = set()
        for key, example_links in links.items():
            example = by_id.get(key)
            if example is None:
                continue
            self.counts["examples"] += 1
            self.counts["links"] += len(example_links)
            for link in example_links:
                if link.end > len(example.tokens):
                    raise ScriptArgumentError(
                        f"{link.location}: entity links {key!r}: the span [{link.start}, {link.end}) ends after the "
                        f"example's {len(example.tokens)} words; give word indices of the example (end exclusive)"
                    )

    def __call__(self, example: Any, spans: Sequence[tuple[int, int]]) -> list[int]:
        example_links = self.links.get(str(example.id))
        if example_links is None:
            return [-1] * len(spans)
        gold_of = {(link.start, link.end): link.entity for link in example_links}
        gold = []
        for span in spans:
            span = tuple(span)
            entity = gold_of.get(span)
            if span in gold_of:
                self.used.add((str(example.id), *span))
            if entity is None:
                gold.append(KAR_NULL_CANDIDATE)
            elif entity in self.rows or entity_key(entity) in self.rows:
                gold.append(self.rows.get(entity, self.rows.get(entity_key(entity))))
            else:
                self.counts["unknown_entities"] += 1
                gold.append(-1)
        return gold

    def log(self) -> None:
        counts = dict(self.counts, on_mentions=len(self.used))
        logger.info(
            "entity links: %d examples, %d links, %d on the task's mentions (the rest sit on no mention and are not "
            "used), %d naming entities the KB lacks",
            counts["examples"], counts["links"], counts["on_mentions"], counts["unknown_entities"],
        )  # fmt: skip


NER_MODEL_HELP = (
    "--variant ernie: a spaCy pipeline (installed package name or saved folder) whose NER finds the mentions no "
    "alias matches, aligned with a NULL entity as ERNIE does; e.g. en_core_web_sm after pip install 'gesa[data]'."
)


def load_ner(model_args: Any) -> SpacyMentionFinder | None:
    """``--ner_model``'s spaCy pipeline (``training.ner_spacy.SpacyMentionFinder``), or ``None`` without the flag; one
    ``ScriptArgumentError`` naming the flag and the fix (installing spaCy or a pipeline) when it does not load."""
    name = getattr(model_args, "ner_model", None)
    if name is None:
        return None
    if model_args.variant != "ernie":
        raise ScriptArgumentError(
            f"--ner_model finds ERNIE's mentions that no alias matches; --variant {model_args.variant} does not "
            "align mentions that way: drop it, or pass --variant ernie"
        )
    try:
        return SpacyMentionFinder(name)
    except ValueError as error:
        raise ScriptArgumentError(str(error)) from None


def load_entity_links(path: str) -> dict[str, list[EntityLink]]:
    """``--entity_links FILE`` read (``training.entity_links.read_entity_links``); one ``ScriptArgumentError`` naming the flag,
    the file, the line and the fix."""
    try:
        return read_entity_links(path, f"--entity_links {path}")
    except InputError as error:
        raise ScriptArgumentError(str(error)) from None


def linking_decisions(model: Any, batches: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per mention with a gold link among its candidates (``kar_gold_candidates >= 0``): the entity (KB row, or
    ``KAR_NULL_CANDIDATE``) of KAR's linker choice (the highest ``linking_scores``, or NULL when no candidate passes
    the threshold ``kar_entity_threshold``: the forward's ``null_mask``), of the prior's (the highest
    ``kar_candidate_priors``; NULL's prior is 0, so it never picks NULL) and of the gold, and whether each is NULL. ``model``: a KAR model or head (``linking_scores`` in
    its base model's output), run in eval mode without gradients on the collated ``batches``."""
    import torch

    base = getattr(model, "gesa", model)
    was_training = model.training
    model.eval()
    decisions = []
    try:
        for batch in batches:
            gold = batch["kar_gold_candidates"]
            inputs = {k: v for k, v in batch.items() if k not in ("labels", "marker_positions", "kar_gold_candidates")}
            with torch.no_grad():
                outputs = base(**inputs)
            scores = outputs.linking_scores
            ids, priors = batch["kar_candidate_ids"], batch["kar_candidate_priors"]
            valid = ids != -1
            linker = scores.masked_fill(~valid, float("-inf")).argmax(-1)
            prior = priors.masked_fill(~valid, float("-inf")).argmax(-1)
            for b, m in (gold >= 0).nonzero().tolist():
                # the entities (KB rows, KAR_NULL_CANDIDATE for NULL) each picks: equal ids are the same link
                row = {name: int(ids[b, m, int(choice[b, m])]) for name, choice in
                       (("gold", gold), ("linker", linker), ("prior", prior))}  # fmt: skip
                if outputs.null_mask[b, m]:  # no candidate passed delta: the forward took the NULL embedding
                    row["linker"] = KAR_NULL_CANDIDATE
                row["candidates"] = int(valid[b, m].sum())
                for name in ("gold", "linker", "prior"):
                    row[f"{name}_null"] = row[name] == KAR_NULL_CANDIDATE
                decisions.append(row)
    finally:
        model.train(was_training)
    return decisions


def linking_report(decisions: Sequence[Mapping[str, Any]]) -> dict[str, float | int | None]:
    """Accuracy of the linker and of the prior alone over ``linking_decisions`` (all mentions, and those where the
    prior is wrong), and NULL precision / recall (``None`` where nothing was predicted or is gold NULL)."""

    def share(hits: int, total: int) -> float | None:
        return hits / total if total else None

    wrong = [d for d in decisions if d["prior"] != d["gold"]]
    report: dict[str, float | int | None] = {"mentions": len(decisions), "prior_wrong_mentions": len(wrong)}
    for name in ("prior", "linker"):
        report[f"{name}_accuracy"] = share(sum(d[name] == d["gold"] for d in decisions), len(decisions))
        report[f"{name}_accuracy_prior_wrong"] = share(sum(d[name] == d["gold"] for d in wrong), len(wrong))
        both = sum(d[f"{name}_null"] and d["gold_null"] for d in decisions)
        report[f"{name}_null_precision"] = share(both, sum(d[f"{name}_null"] for d in decisions))
        report[f"{name}_null_recall"] = share(both, sum(d["gold_null"] for d in decisions))
    return report


def knowledge_candidates(processor: Any, max_candidates: int = 30) -> EntityCandidateGenerator | None:
    """The candidate generator of the run's KB files (``attach_knowledge_files``), or ``None`` (LUKE's titles)."""
    files = getattr(processor, "knowledge_files", None)
    if files is None:
        return None
    return files.candidate_generator(getattr(processor.tokenizer, "entity_vocab", None), max_candidates)


__all__ = [
    "ENTITY_LINKS_HELP",
    "GoldLinker",
    "NER_MODEL_HELP",
    "KB_ALIAS_TABLE_HELP",
    "KB_ENTITY_VECTORS_HELP",
    "attach_checkpoint_knowledge",
    "attach_knowledge_files",
    "gold_links",
    "kb_rows",
    "knowledge_candidates",
    "linking_decisions",
    "linking_report",
    "load_entity_links",
    "KB_WHY",
    "NER_WHY",
    "load_ner",
    "mention_slots",
]
