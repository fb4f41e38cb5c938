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
"""The data side of ERICA's and KBIR's objectives (``--task pretrain --objectives ...``; the head is
``modeling_gesa_objectives.GesaForEntityPreTraining``): the objectives named on the command line and their weights
(``objective_config``), the documents cut into windows of word tokens (``EntityObjectivesProcessor``) and each batch's
corruption and targets (``EntityObjectivesCollator``).

Per batch, following the authors' released code where the seed leaves a choice open (docs/entity_tasks.md's
paper-vs-here tables name each):

- ERICA: with both ED and RD on, every other document of the batch is an ED document (ERICA's code trains ED and RD on
  two halves of the data at each step). An ED document draws one of its relations ``(h, r, t)`` and is read after the
  query ``<s> r's words + h's first mention </s>``; its head entity must find ``t`` among its other entities. An RD
  document gives every relation pair and up to 32 ``no_relation`` pairs; pairs of the same relation in the batch are
  paired as positives, every pair of another relation (``no_relation`` included, at most 64 drawn) is a negative,
  except pairs of the same document sharing the head or the tail. Entity mentions are never masked for MLM.
- KBIR: each mention (non-overlapping, in text order) is infilled with probability 0.4 (its span becomes ONE
  ``[MASK]``; at most 10 per window have targets, each up to ``kbi_max_span_length`` tokens), else replaced with
  probability 0.1 (``--krc_probability``) by another entity of its type from the typed entity list (the documents'
  typed entities and the knowledge graph's ``instance of`` triples; ``--krc_replacement any``: of any type); the first 20 mentions neither infilled nor masked are KRC's items (1 replaced, 0
  kept). Words outside mentions are masked for MLM with ``--mlm_probability`` (80/10/10).
- LUKE (``mep``): the entity inputs are the mentions' entities (the pre-training vocabulary), masked with
  ``--entity_mask_probability``; without ``mep`` every mention's entity input is ``[MASK]`` (as the fine-tuning
  tasks feed them), so ERICA and KBIR read the words, not an entity id that names the answer.

Flat module: imports its siblings relatively, third-party packages otherwise.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
from transformers import PreTrainedTokenizerBase
from transformers.utils import logging

from ..checks_gesa import IGNORE_INDEX
from ..configuration_gesa import PRETRAINING_OBJECTIVES, PRETRAINING_SETTINGS
from ..inputs_gesa import InputError
from ..modeling_gesa_objectives import objective_losses
from ..processing_kb import normalize_title
from .entity_documents import NO_RELATION, Document, KnowledgeGraph, documents_of, read_triples
from .machinery import ScriptArgumentError

logger = logging.get_logger(__name__)

WEIGHTS = ("alpha", "gamma", "sigma", "delta")
# KRC's settings from the command line: KBIR's replacement share and rule, our class weight and readout
KRC_SETTINGS = ("krc_probability", "krc_replaced_weight", "krc_replacement", "krc_readout")
# the runs that read --objectives, the weights and --kg_triples (the variants with GesaForEntityPreTraining)
OBJECTIVE_RUNS = {"task": "pretrain", "variant": "gesa luke long_luke"}
OBJECTIVES_WHY = (
    "seed 002's pre-training objectives train on LUKE's / GESA's encoder (--variant luke, gesa or long_luke)"
)
OBJECTIVES_HELP = (
    "--task pretrain: the objectives, comma-separated: luke (MLM + masked entities, LUKE's own, the default), erica "
    "(MLM + entity and relation discrimination, eq. 26), kbi (MLM + boundary infilling + length, eq. 29), kbir (kbi + "
    "replacement classification, eq. 30), or single losses (mlm, mep, ed, rd, infill, lp, krc); e.g. luke,erica,kbir"
)
KG_TRIPLES_HELP = (
    "--objectives: a knowledge graph, head<TAB>relation<TAB>tail lines (the kb_triples.tsv format): ERICA's relations "
    "between a document's entities (distant supervision, names matched up to case and punctuation) and, from its "
    "'instance of' triples, KRC's typed entity list"
)
# ERICA's released pre-training (pretrain/code/pretrain: train.sh, dataset.py) and KBIR's (its pretrain_runner.py
# defaults): the sampling constants the seed leaves open
ERICA_NONE_PAIRS = 32  # no_relation pairs an RD document adds (add_none=1, neg_multiple)
ERICA_NEGATIVES = 64  # negatives per RD anchor (neg_sample_num)
ED_QUERY_TOKENS = 16  # the ED query's budget in the window: the relation's words and the head's first mention
KBI_PROBABILITY = 0.4  # keyphrase-mask-percentage with infilling
KBI_MAX_SPANS = 10  # max-mask-keyphrase-pairs
KRC_MAX_ITEMS = 20  # max-keyphrase-pairs
MAX_MENTION_TOKENS = 30  # LUKE's max_mention_length: positions an entity input averages


# how the run's summary line names the objectives' evaluation metrics (``GesaForEntityPreTraining.pop_evaluation_metrics``)
OBJECTIVE_METRIC_NAMES = {
    "ed_accuracy": "ED accuracy",
    "ed_chance": "ED chance",
    "rd_accuracy": "RD accuracy",
    "rd_chance": "RD chance",
    "infill_accuracy": "KBI infilling accuracy",
    "infill_unigram_accuracy": "KBI unigram baseline",
    "lp_accuracy": "KBI length accuracy",
    "krc_accuracy": "KRC balanced accuracy",
}


def pretraining_card_line(config: Any) -> list[str]:
    """The model card's line on what a checkpoint was pre-trained with (``config.pretraining_objectives``, kept by
    every head started from it); none for a model without it."""
    settings = getattr(config, "pretraining_objectives", None)
    if not settings:
        return []
    settings = {**PRETRAINING_SETTINGS, **settings}
    losses = objective_losses(settings["objectives"])
    weights = ", ".join(f"{name}={settings[name]:g}" for name in WEIGHTS)
    krc = [f"{name} {settings[name]:g}" if isinstance(settings[name], float) else f"{name} {settings[name]}"
           for name in KRC_SETTINGS if settings[name] != PRETRAINING_SETTINGS[name]]  # fmt: skip
    flags = "".join(f" --{entry}" for entry in krc) if "krc" in losses else ""
    return [
        f"**Pre-training**: pre-trained with seed 002's objectives {','.join(settings['objectives'])} (losses: "
        f"{', '.join(losses)}; weights {weights}; ERICA temperature {settings['temperature']:g}) by "
        "`run_entity_tasks.py --task pretrain --objectives "
        f"{','.join(settings['objectives'])}{flags}` (docs/entity_tasks.md, seed 002's objectives)."
    ]


def read_graph_flag(data_args: Any) -> KnowledgeGraph | None:
    """The knowledge graph of ``--kg_triples`` (``None`` without it); a bad or empty file is one
    ``ScriptArgumentError`` naming the flag, the file and the line."""
    path = getattr(data_args, "kg_triples", None)
    if path is None:
        return None
    try:
        return KnowledgeGraph.from_triples(read_triples(path, f"--kg_triples {path}"))
    except InputError as error:
        raise ScriptArgumentError(str(error)) from None


def parse_objectives(text: str) -> list[str]:
    """``--objectives`` (names separated by commas or spaces) as a list; one ``ScriptArgumentError`` naming an unknown
    name and the known ones."""
    names = [name for name in text.replace(",", " ").split() if name]
    unknown = [name for name in names if name not in PRETRAINING_OBJECTIVES]
    if not names or unknown:
        raise ScriptArgumentError(
            f"--objectives {text!r}: {'unknown objective ' + repr(unknown[0]) if unknown else 'no objective given'}; "
            f"choose names from {sorted(PRETRAINING_OBJECTIVES)} separated by commas (luke: MLM + masked entities; "
            "erica: MLM + ED + RD, eq. 26; kbi: MLM + infilling + length, eq. 29; kbir: kbi + KRC, eq. 30)"
        )
    return names


def objective_config(data_args: Any) -> dict[str, Any] | None:
    """The head's ``pretraining_objectives`` from ``--objectives``, the weights ``--alpha``, ``--gamma``,
    ``--sigma``, ``--delta`` and KRC's ``--krc_probability`` / ``--krc_replaced_weight`` / ``--krc_replacement`` /
    ``--krc_readout`` (``None``: LUKE's own objective, ``GesaForMaskedLM``). A value that is negative, not a finite number (a probability above 1), or given
    for no loss it acts on is one ``ScriptArgumentError``."""
    names = parse_objectives(getattr(data_args, "objectives", None) or "luke")
    losses = objective_losses(names)
    weighs = {"alpha": "mlm", "gamma": "infill", "sigma": "lp", "delta": "krc", **dict.fromkeys(KRC_SETTINGS, "krc")}
    settings: dict[str, Any] = {"objectives": names}
    for name in (*WEIGHTS, *KRC_SETTINGS):
        value = getattr(data_args, name, None)
        if value is None:
            continue
        if name in ("krc_replacement", "krc_readout"):  # a choice HfArgumentParser checked
            if value != PRETRAINING_SETTINGS[name] and "krc" not in losses:
                raise ScriptArgumentError(
                    f"--{name} acts on L_KRC, which --objectives {','.join(names)} does not train: drop --{name}, "
                    "or add an objective with it"
                )
            settings[name] = value
            continue
        limit = 1 if name == "krc_probability" else math.inf
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if not number or not math.isfinite(value) or not 0 <= value <= limit:
            what = (
                "a probability must be a number in [0, 1]"
                if limit == 1
                else "a loss weight must be a finite number >= 0"
            )
            raise ScriptArgumentError(f"--{name} {value!r}: {what}")
        if weighs[name] not in losses and value != PRETRAINING_SETTINGS[name]:
            verb = "weighs" if name in WEIGHTS else "acts on"
            raise ScriptArgumentError(
                f"--{name} {verb} L_{weighs[name].upper()}, which --objectives {','.join(names)} does not train: "
                f"drop --{name}, or add an objective with it"
            )
        settings[name] = float(value)
    if names == ["luke"]:
        return None
    return settings


class EntityObjectivesProcessor:
    """The features of ERICA's and KBIR's objectives and their collator.

    Args:
        tokenizer: the pre-training tokenizer (its entity vocabulary: the data's mention texts).
        settings: the head's ``pretraining_objectives`` (``objective_config``).
        max_length: word tokens per window, the specials (and the ED query) included.
        mlm_probability, entity_mask_probability: as ``--mlm_probability`` / ``--entity_mask_probability``.
        graph: the knowledge graph of ``--kg_triples`` (``None``: the documents' own relations and types).
        seed: the collator's draws.
    """

    def __init__(self, tokenizer: PreTrainedTokenizerBase, settings: Mapping[str, Any], max_length: int,
                 mlm_probability: float = 0.15, entity_mask_probability: float = 0.15,
                 graph: KnowledgeGraph | None = None, seed: int = 0) -> None:  # fmt: skip
        self.tokenizer, self.settings, self.max_length = tokenizer, {**PRETRAINING_SETTINGS, **settings}, max_length
        self.losses = objective_losses(self.settings["objectives"])
        self.mlm_probability, self.entity_mask_probability = mlm_probability, entity_mask_probability
        self.graph, self.seed = graph, seed
        self.relations: dict[str, int] = {NO_RELATION: 0}
        self.types: dict[str, int] = {}
        self.universe: dict[int, dict[str, list[int]]] = {}  # type id -> {entity key: its name's word tokens}
        self.word_cache: dict[str, list[int]] = {}
        self.reports: dict[str, int] = {}
        for name, kind in graph.types.items() if graph is not None else ():
            self.add_to_universe(name, kind)

    # ------------------------------------------------------------------------------------------- features

    def words(self, words: Sequence[str]) -> list[list[int]]:
        """Each word's tokens (a space before it, as LUKE's tokenizer reads a word inside a text)."""
        new = sorted({word for word in words if word not in self.word_cache})
        if new:
            ids = self.tokenizer([" " + word for word in new], add_special_tokens=False)["input_ids"]
            self.word_cache.update(zip(new, ids, strict=True))
        return [self.word_cache[word] for word in words]

    def add_to_universe(self, name: str, kind: str) -> None:
        """``name`` an entity of type ``kind`` that KRC may put in place of another of that type."""
        pieces = [piece for word in name.replace("_", " ").split() for piece in self.words([word])[0]]
        if pieces:
            type_id = self.types.setdefault(kind, len(self.types))
            self.universe.setdefault(type_id, {}).setdefault(normalize_title(name), pieces)

    def encode_all(self, examples: Sequence[Any]) -> list[dict[str, Any]]:
        """Every document (``documents_of``; aligned to the knowledge graph) as windows of at most ``max_length``
        word tokens (the specials and the ED query's budget kept free), each with its mentions, entities and
        relations (``encode_window``); a window never cuts a mention, and a document that fits is one window."""
        documents = documents_of(examples)
        if self.graph is not None:
            documents = [self.graph.align(document) for document in documents]
        if "ed" in self.losses or "rd" in self.losses:
            check_relations(documents)
        budget = self.max_length - 2 - (ED_QUERY_TOKENS if "ed" in self.losses else 0)
        if budget < 8:
            raise ScriptArgumentError(
                f"--max_seq_length {self.max_length} leaves {budget} word tokens per window (2 specials"
                f"{' and the ED query' if 'ed' in self.losses else ''}): give at least {self.max_length - budget + 8}"
            )
        features = []
        for document in documents:
            for entity in document.entities:
                if entity.type is not None:
                    self.add_to_universe(entity.name, entity.type)
            features.extend(self.encode_document(document, budget))
        logger.info(
            f"objectives {','.join(self.settings['objectives'])}: {len(documents)} documents -> {len(features)} "
            f"windows of <= {self.max_length} tokens; {sum(len(f['mention_starts']) for f in features)} mentions, "
            f"{sum(len(f['relation_ids']) for f in features)} relation pairs"
        )
        return features

    def encode_document(self, document: Document, budget: int) -> list[dict[str, Any]]:
        """The windows of one document (``encode_all``)."""
        pieces = self.words(document.tokens)
        mentions = sorted((s, e, i) for i, entity in enumerate(document.entities) for s, e in entity.mentions)
        covering = [None] * len(document.tokens)  # the end of the longest mention that covers a word
        for start, end, _ in mentions:
            for word in range(start, end):
                covering[word] = max(covering[word] or 0, end)
        windows, start = [], 0
        while start < len(document.tokens):
            end, size, safe = start, 0, start
            while end < len(document.tokens) and size + len(pieces[end]) <= budget:
                size += len(pieces[end])
                end += 1
                if all(covering[w] is None or covering[w] <= end for w in range(safe, end)):
                    safe = end
            if end == start:  # one word longer than the window: its first tokens
                end = safe = start + 1
            windows.append((start, safe if safe > start else end))
            start = windows[-1][1]
        return [self.encode_window(document, pieces, mentions, first, last) for first, last in windows]

    def encode_window(self, document: Document, pieces: list[list[int]], mentions: list[tuple[int, int, int]],
                      first: int, last: int) -> dict[str, Any]:  # fmt: skip
        """One window's feature: ``word_ids`` (its tokens, no specials), each mention's token span, entity (its index
        among the window's entities) and entity-vocabulary id, each entity's type and KB key, the relation pairs
        (``relation_heads``, ``relation_ids``, ``relation_tails``) between the window's entities."""
        offsets, ids = {}, []
        for word in range(first, last):
            offsets[word] = len(ids)
            ids.extend(pieces[word])
        offsets[last] = len(ids)
        ids = ids[: self.max_length]
        inside = [(s, e, i) for s, e, i in mentions if first <= s and e <= last and offsets[e] <= len(ids)]
        local = {i: n for n, i in enumerate(dict.fromkeys(i for _, _, i in inside))}
        vocabulary = self.tokenizer.entity_vocab
        names = [" ".join(document.tokens[s:e]) for s, e, _ in inside]
        relations = [(local[h], r, local[t]) for h, r, t in document.relations if h in local and t in local]
        entities = [document.entities[i] for i in local]
        return {
            "word_ids": ids,
            "mention_starts": [offsets[s] for s, _, _ in inside],
            "mention_ends": [offsets[e] for _, e, _ in inside],
            "mention_entities": [local[i] for _, _, i in inside],
            "mention_vocabulary": [vocabulary.get(name, vocabulary["[UNK]"]) for name in names],
            "entity_types": [self.types.get(e.type, -1) if e.type is not None else -1 for e in entities],
            "entity_keys": [normalize_title(e.name) for e in entities],
            "relation_heads": [h for h, _, _ in relations],
            "relation_ids": [self.relations.setdefault(r, len(self.relations)) for _, r, _ in relations],
            "relation_tails": [t for _, _, t in relations],
        }

    # ------------------------------------------------------------------------------------------- batches

    def get_data_collator(self) -> EntityObjectivesCollator:
        return EntityObjectivesCollator(self, seed=self.seed)

    def save_pretrained(self, save_directory: str | Path, **kwargs: Any) -> None:
        self.tokenizer.save_pretrained(save_directory, **kwargs)


def check_relations(documents: Sequence[Document]) -> None:
    """ERICA learns from relations: one ``ScriptArgumentError`` when no document has one (give ``--kg_triples`` or
    documents with relations)."""
    if not any(document.relations for document in documents):
        raise ScriptArgumentError(
            f"--objectives with ED or RD: none of the {len(documents)} documents has a relation between two of its "
            "entities, so ERICA would learn nothing; give --kg_triples (head<TAB>relation<TAB>tail lines naming the "
            "documents' entities) or documents with relations (DocRED's labels, SciREX's n_ary_relations, TACRED's "
            "relation)"
        )


class EntityObjectivesCollator:
    """The batch of ``GesaForEntityPreTraining`` for the processor's objectives (module docstring): the corrupted
    words with LUKE's inputs (``input_ids``, ``attention_mask``, ``entity_ids``, ``entity_position_ids``,
    ``entity_attention_mask``) and each objective's targets (the head's forward names them)."""

    def __init__(self, processor: EntityObjectivesProcessor, seed: int = 0) -> None:
        self.processor, self.tokenizer, self.losses = processor, processor.tokenizer, processor.losses
        self.draw = random.Random(seed)

    def __call__(self, features: Sequence[Mapping[str, Any]]) -> dict[str, torch.Tensor]:
        both = "ed" in self.losses and "rd" in self.losses
        rows = [self.corrupt(f, role=("ed" if i % 2 == 0 else "rd") if both else None) for i, f in enumerate(features)]
        batch = self.pad(rows)
        if "ed" in self.losses:
            batch["ed_heads"] = torch.tensor([row["ed"][0] for row in rows])
            batch["ed_tails"] = torch.tensor([row["ed"][1] for row in rows])
        if "rd" in self.losses:
            batch.update(self.relation_pairs(rows))
        return batch

    # ------------------------------------------------------------------------------------------- one window

    def corrupt(self, feature: Mapping[str, Any], role: str | None) -> dict[str, Any]:
        """One window's input and targets: the ED query (an ED document), KBI's and KRC's span corruption, MLM's
        masked words, the mentions' entity inputs and their positions in the corrupted input."""
        draw, tokenizer, processor = self.draw, self.tokenizer, self.processor
        words = list(feature["word_ids"])
        mentions = list(zip(feature["mention_starts"], feature["mention_ends"], feature["mention_entities"],
                            feature["mention_vocabulary"], strict=True))  # fmt: skip
        ed = (-1, -1)
        query: list[int] = []
        relations = list(
            zip(feature["relation_heads"], feature["relation_ids"], feature["relation_tails"], strict=True)
        )
        if "ed" in self.losses and role != "rd" and relations:
            head, relation, tail = draw.choice(relations)
            name = next(n for n, i in processor.relations.items() if i == relation)
            first = next(m for m in mentions if m[2] == head)
            query = ([t for word in processor.words(name.replace("_", " ").split()) for t in word]
                     + words[first[0] : first[1]])[: ED_QUERY_TOKENS - 1] + [tokenizer.sep_token_id]  # fmt: skip
            ed = (head, tail)
        # KBI / KRC over non-overlapping mentions, in text order: index -> (action, replacement tokens)
        actions: dict[int, tuple[str, list[int]]] = {}
        end_of_last, growth = -1, 0
        for index, (start, end, entity, _) in enumerate(mentions):
            if start < end_of_last:
                continue
            end_of_last = end
            if "infill" in self.losses and draw.random() < KBI_PROBABILITY:
                actions[index] = ("infill", [])
                growth += 1 - (end - start)
            elif "krc" in self.losses:
                actions[index] = ("keep", [])
                kind, rule = feature["entity_types"][entity], processor.settings["krc_replacement"]
                kinds = {"same_type": [kind], "any": sorted(processor.universe)}.get(rule)  # any: KBIR's code
                if kinds is None:  # other_type: the easy control, a sentence alone shows the replacement
                    kinds = [other for other in sorted(processor.universe) if other != kind]
                key = feature["entity_keys"][entity]
                others = [v for other in kinds for k, v in processor.universe.get(other, {}).items() if k != key]
                if others and draw.random() < processor.settings["krc_probability"]:
                    replacement = draw.choice(others)
                    fits = (
                        2 + len(query) + len(words) + growth + len(replacement) - (end - start) <= processor.max_length
                    )
                    if fits:  # a longer name may not push the window past --max_seq_length
                        actions[index] = ("replace", replacement)
                        growth += len(replacement) - (end - start)
        # the corrupted sequence: <s> [query] words </s>; each original word's new position (None: corrupted away)
        sequence = [tokenizer.cls_token_id, *query]
        moved_word: list[int | None] = [None] * len(words)
        spans: dict[int, tuple[int, int]] = {}
        position = 0
        for index in sorted(i for i, (a, _) in actions.items() if a != "keep"):
            start, end = mentions[index][0], mentions[index][1]
            for word in range(position, start):
                moved_word[word] = len(sequence)
                sequence.append(words[word])
            action, replacement = actions[index]
            spans[index] = (len(sequence), len(sequence) + (1 if action == "infill" else len(replacement)))
            sequence.extend([tokenizer.mask_token_id] if action == "infill" else replacement)
            position = end
        for word in range(position, len(words)):
            moved_word[word] = len(sequence)
            sequence.append(words[word])
        sequence.append(tokenizer.sep_token_id)
        moved: list[tuple[int, int] | None] = []
        for index, (start, end, _, _) in enumerate(mentions):
            inside = moved_word[start:end]
            moved.append(spans.get(index) or (None if None in inside else (inside[0], inside[-1] + 1)))
        return self.targets(sequence, mentions, moved, actions, ed, len(query), feature)

    def targets(self, sequence: list[int], mentions: list, moved: list[tuple[int, int] | None], actions: dict,
                ed: tuple[int, int], query: int, feature: Mapping[str, Any]) -> dict[str, Any]:  # fmt: skip
        """MLM's masked words, the entity inputs, and ERICA's, KBI's and KRC's targets of one corrupted window
        (``moved``: each mention's span in ``sequence``, ``None`` when a corrupted mention it overlaps removed it)."""
        draw, tokenizer, losses = self.draw, self.tokenizer, self.losses
        size = self.processor.settings["kbi_max_span_length"]
        in_mention = [False] * len(sequence)
        for span in moved:
            for position in range(*span) if span else ():
                in_mention[position] = True
        labels = [IGNORE_INDEX] * len(sequence)
        if "mlm" in losses:
            guard = any(name in losses for name in ("ed", "rd", "infill", "lp", "krc"))
            words = [p for p in range(1 + query, len(sequence) - 1) if not (guard and in_mention[p])]
            chosen = [p for p in words if draw.random() < self.processor.mlm_probability] or words[:1]
            for position in chosen:
                labels[position] = sequence[position]
                roll = draw.random()
                if roll < 0.8:
                    sequence[position] = tokenizer.mask_token_id
                elif roll < 0.9:
                    sequence[position] = draw.randrange(len(tokenizer))
        mask_entity = tokenizer.entity_vocab["[MASK]"]
        entity_ids, entity_labels, entity_positions, erica, kbi, krc = [], [], [], [], [], []
        for index, ((start, end, entity, vocabulary_id), span) in enumerate(zip(mentions, moved, strict=True)):
            if span is None:
                continue
            action, _ = actions.get(index, ("keep", []))
            given, label = mask_entity, IGNORE_INDEX
            if "mep" in losses and action == "keep":
                given = vocabulary_id
                if draw.random() < self.processor.entity_mask_probability:
                    given, label = mask_entity, vocabulary_id
            entity_ids.append(given)
            entity_labels.append(label)
            entity_positions.append(list(range(*span))[:MAX_MENTION_TOKENS])
            if action != "replace":
                erica.append((*span, entity))
            if action == "infill" and len(kbi) < KBI_MAX_SPANS:
                original = list(feature["word_ids"][start:end])
                kbi.append(
                    ((span[0] - 1, span[1]), (original + [IGNORE_INDEX] * size)[:size], min(len(original), size - 1))
                )
            elif index in actions and action != "infill" and len(krc) < KRC_MAX_ITEMS:
                krc.append(((span[0] - 1, span[1]), int(action == "replace")))
        present = {entity for _, _, entity in erica}
        if not {*ed} <= present:
            ed = (-1, -1)  # KRC replaced every mention of the query's head or tail
        return {"input_ids": sequence, "labels": labels, "entity_ids": entity_ids, "entity_labels": entity_labels,
                "entity_positions": entity_positions, "erica": erica, "ed": ed, "kbi": kbi, "krc": krc, "query": query,
                "relations": list(zip(feature["relation_heads"], feature["relation_ids"], feature["relation_tails"],
                                      strict=True))}  # fmt: skip

    # ------------------------------------------------------------------------------------------- the batch

    def pad(self, rows: list[dict[str, Any]]) -> dict[str, torch.Tensor]:
        """The rows as padded tensors (module docstring; ``-1`` / ``-100`` padding as the head reads them)."""
        length = max(len(row["input_ids"]) for row in rows)
        entities = max(1, max(len(row["entity_ids"]) for row in rows))
        width = max([1] + [len(p) for row in rows for p in row["entity_positions"]])
        mentions = max(1, max(len(row["erica"]) for row in rows))
        size = self.processor.settings["kbi_max_span_length"]
        pad = self.tokenizer.pad_token_id
        batch = {
            "input_ids": [r["input_ids"] + [pad] * (length - len(r["input_ids"])) for r in rows],
            "attention_mask": [[1] * len(r["input_ids"]) + [0] * (length - len(r["input_ids"])) for r in rows],
            "entity_ids": [r["entity_ids"] + [0] * (entities - len(r["entity_ids"])) for r in rows],
            "entity_attention_mask": [[1] * len(r["entity_ids"]) + [0] * (entities - len(r["entity_ids"])) for r in rows],
            "entity_position_ids": [[p + [-1] * (width - len(p)) for p in r["entity_positions"]]
                                    + [[-1] * width] * (entities - len(r["entity_positions"])) for r in rows],
        }  # fmt: skip
        if "mlm" in self.losses:
            batch["labels"] = [r["labels"] + [IGNORE_INDEX] * (length - len(r["labels"])) for r in rows]
        if "mep" in self.losses:
            batch["entity_labels"] = [r["entity_labels"] + [IGNORE_INDEX] * (entities - len(r["entity_labels"]))
                                      for r in rows]  # fmt: skip
        if "ed" in self.losses or "rd" in self.losses:
            batch["erica_mention_spans"] = [[[s, e] for s, e, _ in r["erica"]] + [[-1, -1]] * (mentions - len(r["erica"]))
                                            for r in rows]  # fmt: skip
            batch["erica_mention_entities"] = [[i for _, _, i in r["erica"]] + [-1] * (mentions - len(r["erica"]))
                                               for r in rows]  # fmt: skip
        if "infill" in self.losses or "lp" in self.losses:
            count = max(1, max(len(r["kbi"]) for r in rows))
            blank = ((1, 0), [IGNORE_INDEX] * size, IGNORE_INDEX)
            items = [r["kbi"] + [blank] * (count - len(r["kbi"])) for r in rows]
            batch["kbi_boundaries"] = [[list(b) for b, _, _ in row] for row in items]
            batch["kbi_labels"] = [[t for _, t, _ in row] for row in items]
            batch["kbi_length_labels"] = [[n for _, _, n in row] for row in items]
        if "krc" in self.losses:
            count = max(1, max(len(r["krc"]) for r in rows))
            items = [r["krc"] + [((1, 0), IGNORE_INDEX)] * (count - len(r["krc"])) for r in rows]
            batch["krc_boundaries"] = [[list(b) for b, _ in row] for row in items]
            batch["krc_labels"] = [[y for _, y in row] for row in items]
        return {name: torch.tensor(value, dtype=torch.long) for name, value in batch.items()}

    def relation_pairs(self, rows: list[dict[str, Any]]) -> dict[str, torch.Tensor]:
        """RD's pairs over the batch's RD documents (ERICA's ``get_doc_batch``): every relation pair whose entities
        are still mentioned, up to ``ERICA_NONE_PAIRS`` ``no_relation`` pairs per document; pairs of one relation
        paired off as each other's positives; each anchor's negatives (module docstring)."""
        draw = self.draw
        pairs: list[tuple[int, int, int, int]] = []  # document, head, tail, relation id
        for document, row in enumerate(rows):
            if row["query"]:
                continue  # an ED document
            present = {entity for _, _, entity in row["erica"]}
            related = {(h, t) for h, _, t in row["relations"]}
            pairs.extend((document, h, t, r) for h, r, t in row["relations"] if h in present and t in present)
            none = [(h, t) for h in sorted(present) for t in sorted(present) if h != t and (h, t) not in related]
            pairs.extend((document, h, t, 0) for h, t in draw.sample(none, min(len(none), ERICA_NONE_PAIRS)))
        by_relation: dict[int, list[int]] = {}
        for index, pair in enumerate(pairs):
            if pair[3] != 0:
                by_relation.setdefault(pair[3], []).append(index)
        partners = [-1] * len(pairs)
        for members in by_relation.values():
            draw.shuffle(members)
            for a, b in zip(members[0::2], members[1::2], strict=False):
                partners[a], partners[b] = b, a
        negatives = [[False] * len(pairs) for _ in pairs]
        for i, (doc_i, h_i, t_i, r_i) in enumerate(pairs):
            if partners[i] < 0:
                continue
            allowed = [j for j, (doc_j, h_j, t_j, r_j) in enumerate(pairs)
                       if r_j != r_i and not (doc_j == doc_i and (h_j == h_i or t_j == t_i))]  # fmt: skip
            for j in draw.sample(allowed, min(len(allowed), ERICA_NEGATIVES)):
                negatives[i][j] = True
            if not any(negatives[i]):
                partners[i] = -1  # no negative: nothing to discriminate against
        if not pairs:
            return {"rd_pairs": torch.zeros(0, 3, dtype=torch.long), "rd_partners": torch.zeros(0, dtype=torch.long),
                    "rd_negatives": torch.zeros(0, 0, dtype=torch.bool)}  # fmt: skip
        return {
            "rd_pairs": torch.tensor([p[:3] for p in pairs], dtype=torch.long),
            "rd_partners": torch.tensor(partners, dtype=torch.long),
            "rd_negatives": torch.tensor(negatives, dtype=torch.bool),
        }


__all__ = [
    "KG_TRIPLES_HELP",
    "OBJECTIVE_METRIC_NAMES",
    "OBJECTIVES_HELP",
    "OBJECTIVES_WHY",
    "OBJECTIVE_RUNS",
    "ERICA_NEGATIVES",
    "ERICA_NONE_PAIRS",
    "EntityObjectivesCollator",
    "EntityObjectivesProcessor",
    "KBI_PROBABILITY",
    "KRC_SETTINGS",
    "WEIGHTS",
    "check_relations",
    "objective_config",
    "parse_objectives",
    "pretraining_card_line",
    "read_graph_flag",
]
