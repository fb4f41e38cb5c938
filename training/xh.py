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
"""Transformer-XH's own tasks, HotpotQA and FEVER, as tasks of the shared driver (``examples/run_multihop.py``).

- ``HOTPOTQA`` (distractor): questions in the official JSON or the Hub layout (``records_xh``), one sentence graph
  per question (``XhTaskProcessor``), ``XhForHotpotQA``; predictions ``{answer, supporting_facts}`` written as the
  official file ``{"answer": {id: text}, "sp": {id: [[title, sent_id]]}}`` and scored by ``metrics/hotpotqa`` (every
  official key, fractions of 1).
- ``FEVER``: the shared task's claims with the wiki pages of ``--wiki_pages``, one evidence graph per claim
  (training graphs hold the gold evidence; evaluation and test graphs only the retrieved candidates),
  ``XhForFactVerification``; predictions ``{label, evidence}`` written as the submission JSON lines and scored by
  ``metrics/fever`` (the official scorer's keys).

Both decode the head's outputs for every feature from ``Trainer.evaluate`` / ``Trainer.predict`` with the decoders
the pipelines use (``XhForHotpotQA.decode_hotpot``, ``decode_fever``, then ``XhTaskProcessor`` turns them into
answers). This project's no-hop baseline is the same head with ``xh_num_hop_layers=0`` (``xh_task_config``).

Flat module: imports its siblings relatively, third-party packages otherwise.
"""

from __future__ import annotations

import json
import random
from abc import abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import torch
from datasets import Dataset

from ..configuration_variants import PAPER_SYSTEM_COMPONENTS, XhConfig, XhPaperSystemConfig
from ..inputs_gesa import InputError
from ..modeling_xh import XhForFactVerification
from ..modeling_xh_tasks import FEVER_LABELS, XhForHotpotQA, decode_fever
from ..processing_base_gesa import load_processor_settings
from ..processing_xh_tasks import XhTaskProcessor
from ..records_xh import (
    hotpot_supporting_facts,
    read_fever_claims,
    read_hotpot_file,
    read_wiki_pages,
    to_fever_claim,
    to_hotpot_row,
)
from ..structure_gesa import LUKE_MASK_ENTITY_ID
from .fever_bm25 import retrieve_fever_evidence
from .machinery import ScriptArgumentError, write_json_atomically, write_text_atomically
from .models import ModelRecipe, hub_kwargs, load_for_task, resolve_max_seq_length
from .resources import load_metric
from .task import LoadedModel, Task, concat_padded, file_error

# the outputs the decoders do not read (per-term losses, states): left out of what Trainer gathers
XH_IGNORED_OUTPUTS = ("relevance_loss", "span_loss", "answer_type_loss", "supporting_loss", "hub_states",
                      "hop_attentions", "logits", "node_label_probs", "mention_logits")  # fmt: skip


def _cropped(array: np.ndarray, index: int, sizes: Sequence[int]) -> torch.Tensor:
    """Row ``index`` of a padded output array cut to the feature's own ``sizes`` (``Trainer`` pads each batch to its
    widest feature and the batches to the widest batch), as a batch of one."""
    row = np.asarray(array[index])
    return torch.from_numpy(np.ascontiguousarray(row[tuple(slice(0, size) for size in sizes)]))[None]


@dataclass
class XhTask(Task):
    """What HotpotQA and FEVER share: files only, the ``xh`` head, ``XhTaskProcessor`` graphs."""

    heads: dict = field(default_factory=dict)
    remove_unused_columns: bool = False  # the collator reads the sentence and label columns
    ragged_outputs: bool = True  # node token and sentence widths differ between batches
    official_fraction: bool = True  # the official HotpotQA and FEVER scripts give fractions
    ignore_output_keys: tuple[str, ...] = XH_IGNORED_OUTPUTS
    default_max_nodes: int | None = None

    def check_arguments(self, model_args: Any, data_args: Any, args: Any) -> None:
        if data_args.max_nodes is not None and data_args.max_nodes < 1:
            raise ScriptArgumentError(f"--max_nodes must be at least 1 (or left out), got {data_args.max_nodes}")

    def config_overrides(self) -> dict[str, Any]:
        return {}

    def make_processor(self, tokenizer: Any, data_args: Any) -> XhTaskProcessor:
        """``--max_seq_length`` words per node, ``--max_query_length`` question words, ``--max_nodes`` nodes."""
        max_nodes = data_args.max_nodes if data_args.max_nodes is not None else self.default_max_nodes
        return XhTaskProcessor(tokenizer, max_node_length=data_args.max_seq_length,
                               max_query_length=data_args.max_query_length, max_nodes=max_nodes,
                               entity_mask_id=LUKE_MASK_ENTITY_ID, task=self.name,
                               pages=self.pages(data_args))  # fmt: skip

    def pages(self, data_args: Any) -> dict[str, dict[int, str]]:
        return {}

    @staticmethod
    def saved_graph(processor: XhTaskProcessor, path: str, hub: Mapping[str, Any]) -> XhTaskProcessor:
        """``processor`` with the edges of a trained checkpoint's ``processor_config.json`` (an older file's
        ``"title_mention"`` read as it was trained: ``XhProcessor.upgrade_settings``)."""
        try:
            saved, _ = load_processor_settings(path, **hub)
        except ValueError as error:
            raise ScriptArgumentError(f"--model_name_or_path {path}: {error}") from None
        edges = XhTaskProcessor.saved_settings(saved).get("hotpot_edges", processor.hotpot_edges)
        return processor if edges == processor.hotpot_edges else processor.with_edges(edges)

    def checked_processor(self, tokenizer: Any, data_args: Any) -> XhTaskProcessor:
        """``make_processor``; settings it refuses are one error naming the flags that set them."""
        try:
            return self.make_processor(tokenizer, data_args)
        except (InputError, ValueError) as error:  # the processor names its settings: say which flags set them
            raise ScriptArgumentError(
                f"--max_seq_length {data_args.max_seq_length} (the processor's max_node_length, tokens per node) with "
                f"--max_query_length {data_args.max_query_length}: {str(error).splitlines()[0]}"
            ) from None

    def check_source(self, path: str, model_args: Any) -> None:
        """What ``--model_name_or_path`` must not be for this task, before its config is matched; nothing here."""
        return None

    def summary_notes(self, processor: Any) -> list[str]:
        """How many node texts (and with them sentences, answers) the processor cut to ``--max_seq_length``."""
        stats = getattr(processor, "stats", {})
        notes = []
        if stats.get("truncated_nodes"):
            notes.append(f"{stats['truncated_nodes']} node texts cut to --max_seq_length {processor.max_node_length} "
                         "words")  # fmt: skip
        for key, what in (("truncated_sentences", "sentences"), ("truncated_answers", "answer spans")):
            if stats.get(key):
                notes.append(f"{stats[key]} {what} cut off with them")
        return notes

    def load(
        self, model_args: Any, data_args: Any, examples: Mapping[str, Any], explicit: set[str] | None
    ) -> LoadedModel:
        path = model_args.model_name_or_path
        if path is not None:
            self.check_source(path, model_args)  # before its config is matched
        overrides = dict(self.config_overrides())
        if model_args.ablation is not None:
            overrides["ablation"] = model_args.ablation

        def processor(tokenizer: Any, config: dict[str, Any]) -> XhTaskProcessor:
            checked = self.checked_processor(tokenizer, data_args)
            if config.get("model_type") == "luke":
                return checked
            return self.saved_graph(checked, path, hub_kwargs(model_args))  # a trained checkpoint's own graph

        recipe = ModelRecipe(
            self.variant_spec(model_args.variant), f"--task {self.name} --variant {model_args.variant}", processor,
            overrides=overrides, positions="XH's words per node", default_length=PAPER_NODE_LENGTH,
        )  # fmt: skip
        return LoadedModel(*load_for_task(recipe, model_args, data_args, explicit))

    def read_file(self, path: Path, where: str, split: str, data_args: Any, model_args: Any) -> list[dict]:
        try:
            return self.read(path)
        except InputError as error:
            raise ScriptArgumentError(file_error(where, path, error)) from None

    @abstractmethod
    def read(self, path: str | Path) -> list[dict[str, Any]]:
        """Every question / claim of ``path``, checked (``InputError`` naming the line, the id and the fix)."""

    def example_id(self, example: Mapping[str, Any]) -> str:
        return str(example["id"])

    def features_dataset(self, features: list[dict[str, Any]]) -> Dataset:
        if not features:
            return Dataset.from_dict({})
        return Dataset.from_list(features)


# the words per node of the paper's BERT (and LUKE's absolute positions): XH's default --max_seq_length
PAPER_NODE_LENGTH = 512


def resolve_node_length(data_args: Any, limit: int | None, path: str) -> None:
    """XH's words per node: ``--max_seq_length`` checked against the checkpoint's absolute positions (``limit``,
    ``training.models.position_limit``; ``None``: relative positions, no limit), or when left out what the backbone
    holds: the paper's 512, fewer where the checkpoint's positions hold fewer."""
    resolve_max_seq_length(data_args, limit, path, "XH's words per node", PAPER_NODE_LENGTH)


@dataclass
class HotpotQATask(XhTask):
    """HotpotQA distractor: answer span / yes / no plus supporting facts (``XhForHotpotQA``)."""

    name: str = "hotpotqa"
    title: str = "HotpotQA"
    description: str = (
        "HotpotQA distractor with Transformer-XH: answer span / yes / no and supporting facts (official metric)"
    )
    file_format: str = "HotpotQA JSON (official list, or Hub-layout rows as a JSON list or JSON lines)"
    heads: dict = field(default_factory=lambda: {"xh": XhForHotpotQA})
    metric_for_best_model: str = "joint_f1"
    chance_metric: str | None = "em"
    metric_names: dict = field(default_factory=lambda: {"joint_f1": "joint F1", "em": "answer EM", "f1": "answer F1",
                                                        "sp_f1": "supporting-fact F1"})  # fmt: skip
    unit: str = "questions"
    item: str = "question"
    reads_context: bool = True  # FullWiki retrieves every question's paragraphs instead

    def read(self, path: str | Path) -> list[dict[str, Any]]:
        return read_hotpot_file(path, with_context=self.reads_context)

    def check_source(self, path: str, model_args: Any) -> None:
        """A ``--system paper`` output folder is the paper system's, not this (joint) model's: say so."""
        if is_paper_system_folder(path):
            raise ScriptArgumentError(
                f"--model_name_or_path {path} holds the paper system's five models (--system paper), not one "
                "--system joint model: pass --system paper to evaluate it, or give a LUKE checkpoint or a --system "
                "joint output folder"
            )

    def read_hub(self, data_args: Any, model_args: Any, split: str) -> list[dict[str, Any]]:
        import datasets

        rows = datasets.load_dataset(data_args.dataset_name, data_args.dataset_config_name, split=split,
                                     cache_dir=model_args.cache_dir, token=model_args.token)  # fmt: skip
        where = f"--dataset_name {data_args.dataset_name} ({split})"
        try:
            return [
                to_hotpot_row(row, f"{where}, row {i}", f"row-{i}", self.reads_context) for i, row in enumerate(rows)
            ]
        except InputError as error:
            raise ScriptArgumentError(str(error)) from None

    def reference(self, example: Mapping[str, Any]) -> str | None:
        return example.get("answer")

    def chance(self, examples: Sequence[Mapping[str, Any]]) -> float | None:
        """Answer EM of guessing: a coin for the yes/no questions, nothing for span answers (a span guessed among
        a paragraph's thousands is right by chance too rarely to count), in percent."""
        answers = [self.reference(example) for example in examples if self.reference(example) is not None]
        return 100.0 * sum(answer in ("yes", "no") for answer in answers) / (2 * len(answers)) if answers else None

    def featurise(self, processor: XhTaskProcessor, examples: Any, split: str, data_args: Any) -> Dataset:
        return self.features_dataset(processor.encode_hotpot_rows(examples))

    def decode(self, examples: Any, features: Dataset, outputs: Any, processor: Any) -> dict[str, Any]:
        """Per question ``{answer, score, supporting_facts}`` (``XhForHotpotQA.decode_hotpot`` on each feature's own
        nodes, tokens and sentences, then ``XhTaskProcessor.hotpot_prediction``)."""
        relevance, start, end, answer_type, supporting = concat_padded(outputs)
        predictions = {}
        for index, feature in enumerate(features):
            nodes = len(feature["input_ids"])
            length = max(len(ids) for ids in feature["input_ids"])
            sentences = max([len(starts) for starts in feature["sentence_starts"]] + [1])
            output = SimpleNamespace(
                relevance_logits=_cropped(relevance, index, (nodes,)),
                start_logits=_cropped(start, index, (nodes, length)),
                end_logits=_cropped(end, index, (nodes, length)),
                answer_type_logits=_cropped(answer_type, index, (nodes, 3)),
                supporting_logits=_cropped(supporting, index, (nodes, sentences)),
            )
            decoded = XhForHotpotQA.decode_hotpot(output, torch.ones(1, nodes, dtype=torch.bool))[0]
            predictions[str(feature["example_id"])] = processor.hotpot_prediction(feature, decoded)
        return predictions

    def score(self, predictions: Mapping[str, Any], examples: Sequence[Mapping[str, Any]]) -> dict[str, float]:
        references = [
            {"id": row["id"], "answer": row["answer"], "supporting_facts": hotpot_supporting_facts(row)}
            for row in examples
            if row.get("answer") is not None
        ]
        ordered = [
            {
                "id": ref["id"],
                "answer": predictions[ref["id"]]["answer"],
                "sp": predictions[ref["id"]]["supporting_facts"],
            }
            for ref in references
        ]
        return load_metric("hotpotqa").compute(predictions=ordered, references=references)

    def write_predictions(
        self, predictions: Mapping[str, Any], examples: Any, output_dir: str | Path, split: str, data_args: Any
    ) -> Path:
        """``<split>_predictions.json``, the official file ``{"answer": {id: text}, "sp": {id: [[title, sent_id]]}}``."""
        payload = {
            "answer": {key: p["answer"] for key, p in predictions.items()},
            "sp": {key: [[t, int(s)] for t, s in p["supporting_facts"]] for key, p in predictions.items()},
        }
        path = Path(output_dir) / f"{split}_predictions.json"
        write_json_atomically(path, payload)
        return path


@dataclass
class FeverTask(XhTask):
    """FEVER: claim label (Eqs. 14-16) and evidence from node importance (``XhForFactVerification``)."""

    name: str = "fever"
    title: str = "FEVER"
    description: str = (
        "FEVER with Transformer-XH: claim label (Eqs. 14-16) and evidence from node importance (official scorer)"
    )
    file_format: str = "FEVER shared-task JSON lines {id, claim, label, evidence}, with --wiki_pages"
    heads: dict = field(default_factory=lambda: {"xh": XhForFactVerification})
    metric_for_best_model: str = "fever_score"
    chance_metric: str | None = "label_accuracy"
    metric_names: dict = field(
        default_factory=lambda: {"fever_score": "FEVER score", "label_accuracy": "label accuracy"}
    )
    unit: str = "claims"
    item: str = "claim"
    reference_name: str = "label"
    default_max_nodes: int | None = 5  # the paper's five retrieved sentences
    # --fever_retrieval bm25_rerank: the backbone's sentence re-ranker (training.fever_retrieval.SentenceReranker)
    sentence_score: Any = field(default=None, repr=False)

    def check_arguments(self, model_args: Any, data_args: Any, args: Any) -> None:
        super().check_arguments(model_args, data_args, args)
        if not data_args.wiki_pages:
            raise ScriptArgumentError(
                "--task fever needs --wiki_pages (the wiki-pages JSON-lines files holding the evidence)"
            )

    def featurise_hint(self, data_args: Any) -> str:
        return (
            f" (check that --wiki_pages {data_args.wiki_pages} holds every page and line the claims' evidence and "
            "predicted_pages / predicted_sentences name, as [page, line] pairs)"
        )

    def config_overrides(self) -> dict[str, Any]:
        return {
            "num_labels": len(FEVER_LABELS),
            "id2label": dict(enumerate(FEVER_LABELS)),
            "label2id": {label: i for i, label in enumerate(FEVER_LABELS)},
        }

    def pages(self, data_args: Any) -> dict[str, dict[int, str]]:
        return read_wiki_pages([part.strip() for part in data_args.wiki_pages.split(",") if part.strip()])

    def read(self, path: str | Path) -> list[dict[str, Any]]:
        return read_fever_claims(path)

    def read_hub(self, data_args: Any, model_args: Any, split: str) -> list[dict[str, Any]]:
        import datasets

        rows = datasets.load_dataset(data_args.dataset_name, data_args.dataset_config_name, split=split,
                                     cache_dir=model_args.cache_dir, token=model_args.token)  # fmt: skip
        where = f"--dataset_name {data_args.dataset_name} ({split})"
        try:
            return [to_fever_claim(row, f"{where}, row {i}") for i, row in enumerate(rows)]
        except InputError as error:
            raise ScriptArgumentError(str(error)) from None

    def reference(self, example: Mapping[str, Any]) -> str | None:
        return example.get("label")

    def chance(self, examples: Sequence[Mapping[str, Any]]) -> float | None:
        """Label accuracy of a uniform guess among the three labels, in percent (the FEVER score of a guess is lower:
        a SUPPORTS / REFUTES claim needs its evidence too)."""
        return 100.0 / 3 if any(self.reference(example) is not None for example in examples) else None

    def featurise(self, processor: XhTaskProcessor, examples: Any, split: str, data_args: Any) -> Dataset:
        """Training graphs hold the gold evidence among the candidates; evaluation and test graphs only what the
        claim's retrieved pages/sentences (or the title match) give."""
        retrieval = getattr(data_args, "fever_retrieval", "title")
        if retrieval == "bm25_rerank" and self.sentence_score is None:
            raise ScriptArgumentError(
                "--fever_retrieval bm25_rerank needs the task's sentence re-ranker: run it as "
                "training.fever_retrieval.RerankedFeverTask (run_multihop.py does), which trains or loads it"
            )
        if retrieval in ("bm25", "bm25_rerank"):  # claims without candidates
            examples = retrieve_fever_evidence(examples, processor.pages, max_sentences=processor.max_nodes or 5,
                                               score=self.sentence_score)  # fmt: skip
        features = processor.encode_fever_claims(examples, processor.pages, include_gold=split == "train")
        for feature in features:
            feature["labels"] = feature.pop("fever_label", -100)
            feature["candidates"] = json.dumps(feature["candidates"])  # one Arrow type per column
        return self.features_dataset(features)

    def decode(self, examples: Any, features: Dataset, outputs: Any, processor: Any) -> dict[str, Any]:
        """Per claim ``{label, score, evidence}`` (``decode_fever`` on each feature's own nodes)."""
        probs, importance = concat_padded(outputs)
        predictions = {}
        for index, feature in enumerate(features):
            candidates = json.loads(feature["candidates"])
            output = SimpleNamespace(probs=_cropped(probs, index, (len(FEVER_LABELS),)),
                                     node_importance=_cropped(importance, index, (len(candidates),)))  # fmt: skip
            predictions[str(feature["example_id"])] = decode_fever(output, [candidates])[0]
        return predictions

    def score(self, predictions: Mapping[str, Any], examples: Sequence[Mapping[str, Any]]) -> dict[str, float]:
        labelled = [row for row in examples if row.get("label") is not None]
        ordered = [
            {"id": str(row["id"]), "predicted_label": predictions[str(row["id"])]["label"],
             "predicted_evidence": predictions[str(row["id"])]["evidence"]}
            for row in labelled
        ]  # fmt: skip
        references = [{"id": str(r["id"]), "label": r["label"], "evidence": r["evidence"]} for r in labelled]
        return load_metric("fever").compute(predictions=ordered, references=references)

    def write_predictions(
        self, predictions: Mapping[str, Any], examples: Any, output_dir: str | Path, split: str, data_args: Any
    ) -> Path:
        """``<split>_predictions.jsonl``, the shared task's submission: ``{"id", "predicted_label",
        "predicted_evidence"}`` per line, in the file's order."""
        path = Path(output_dir) / f"{split}_predictions.jsonl"
        rows = []
        for row in examples:
            prediction = predictions[str(row["id"])]
            rows.append({"id": row["id"], "predicted_label": prediction["label"],
                         "predicted_evidence": prediction["evidence"]})  # fmt: skip
        write_text_atomically(
            path, "".join(json.dumps(row, ensure_ascii=False, allow_nan=False) + "\n" for row in rows)
        )
        return path


HOTPOTQA = HotpotQATask()
FEVER = FeverTask()


def is_paper_system_folder(path: str) -> bool:
    """Whether ``path`` is a local ``--system paper`` output folder (its config names the paper system, or, written
    before that config, it holds the five models' folders without one)."""
    folder = Path(path)
    config = folder / "config.json"
    if config.is_file():
        try:
            return json.loads(config.read_text(encoding="utf-8")).get("model_type") == XhPaperSystemConfig.model_type
        except (OSError, ValueError, AttributeError):
            return False
    return folder.is_dir() and all((folder / name / "config.json").is_file() for name in PAPER_SYSTEM_COMPONENTS)


def xh_task_config(task: XhTask, hop_attention: bool = True, **kwargs: Any) -> XhConfig:
    """An ``XhConfig`` for ``task``; ``hop_attention=False`` is this project's no-hop baseline
    (``xh_num_hop_layers=0``; not a row of the paper's Table 4)."""
    overrides = {**task.config_overrides(), **kwargs}
    if not hop_attention:
        overrides["xh_num_hop_layers"] = 0
    return XhConfig(**overrides)


# ----------------------------------------------------------------------------------------- the embedded samples

_SYLLABLES = ["vel", "mor", "kas", "trel", "dun", "abo", "rin", "ost", "lam", "bre", "sar", "tho", "quil", "nes"]
_COUNTRIES = ["France", "Italy", "Spain", "Norway", "Poland", "Greece", "Portugal", "Austria", "Denmark", "Chile"]
_JOBS = ["writer", "painter", "sailor", "farmer", "doctor", "singer"]


def _invented_name(rng: random.Random, parts: int = 2, used: set[str] | None = None) -> str:
    """A capitalised name of ``parts`` syllables, one not in ``used`` (which then holds it)."""
    used = set() if used is None else used
    while True:
        name = "".join(rng.choice(_SYLLABLES) for _ in range(parts)).capitalize()
        if name not in used:
            used.add(name)
            return name


def make_hotpot_sample(count: int, seed: int = 0) -> list[dict[str, Any]]:
    """``count`` invented HotpotQA distractor questions in the official layout (``_id``, ``question``, ``answer``,
    ``type``, ``supporting_facts``, ``context``): bridge questions (the country of a person's birth town: two hops,
    a span answer) and comparison questions (are two people both <job>: yes / no), each with a distractor paragraph."""
    rng = random.Random(seed)
    rows = []
    for index in range(count):
        used: set[str] = set()  # the titles of one question's paragraphs differ
        person = f"{_invented_name(rng, 2, used)} {_invented_name(rng, 2, used)}"
        other, town = _invented_name(rng, 3, used), _invented_name(rng, 2, used)
        country, job = rng.choice(_COUNTRIES), rng.choice(_JOBS)
        noise = [
            f"{_invented_name(rng, 2, used)} Hall",
            [f"It is an old hall with {rng.randint(2, 9)} doors.", " Nothing more."],
        ]
        if index % 2 == 0:
            rows.append({"_id": f"hotpot-{seed}-{index}", "type": "bridge", "answer": country,
                         "question": f"In which country is the town where {person} was born?",
                         "supporting_facts": [[person, 0], [town, 1]],
                         "context": [[person, [f"{person} was born in {town}.", f" {person} was a {job}."]],
                                     [town, [f"{town} is a small town.", f" It lies in {country}."]], noise]})  # fmt: skip
        else:
            same = rng.random() < 0.5
            other_job = job if same else rng.choice([j for j in _JOBS if j != job])
            rows.append({"_id": f"hotpot-{seed}-{index}", "type": "comparison", "answer": "yes" if same else "no",
                         "question": f"Were {person} and {other} both {job}s?",
                         "supporting_facts": [[person, 1], [other, 0]],
                         "context": [[person, [f"{person} was born in {town}.", f" {person} was a {job}."]],
                                     [other, [f"{other} was a {other_job}.", f" {other} lived in {country}."]],
                                     noise]})  # fmt: skip
    return rows


def make_fever_sample(count: int, seed: int = 0) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``count`` invented FEVER claims in the shared task's layout and the wiki pages that hold their evidence
    (``{"id", "text", "lines"}`` rows, as the wiki-pages dump): per invented town a SUPPORTS, a REFUTES and a NOT
    ENOUGH INFO claim."""
    rng = random.Random(seed)
    claims, pages, towns = [], [], set()
    for index in range((count + 2) // 3):
        town, country = _invented_name(rng, 2, towns), rng.choice(_COUNTRIES)
        wrong = rng.choice([c for c in _COUNTRIES if c != country])
        lines = [f"{town} is a town in {country}.", f"{town} has {rng.randint(2, 9)} bridges."]
        pages.append(
            {"id": town, "text": " ".join(lines), "lines": "\n".join(f"{n}\t{t}" for n, t in enumerate(lines))}
        )
        evidence = [[[index, 3 * index, town, 0]]]
        claims += [
            {"id": 3 * index, "claim": f"{town} is in {country}.", "label": "SUPPORTS", "evidence": evidence},
            {"id": 3 * index + 1, "claim": f"{town} is in {wrong}.", "label": "REFUTES", "evidence": evidence},
            {"id": 3 * index + 2, "claim": f"{town} has a famous zoo.", "label": "NOT ENOUGH INFO",
             "evidence": [[[index, None, None, None]]]},
        ]  # fmt: skip
    return claims[:count], pages


def write_json_lines(path: str | Path, rows: Sequence[Mapping[str, Any]]) -> Path:
    """``rows`` as JSON lines (FEVER claims, wiki pages)."""
    path = Path(path)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


__all__ = [
    "FEVER",
    "HOTPOTQA",
    "FeverTask",
    "PAPER_NODE_LENGTH",
    "HotpotQATask",
    "XhTask",
    "is_paper_system_folder",
    "make_fever_sample",
    "make_hotpot_sample",
    "resolve_node_length",
    "write_json_lines",
    "xh_task_config",
]
