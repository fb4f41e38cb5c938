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
"""HotpotQA with Transformer-XH as the paper's system (5.1, appendix A.3), in the distractor setting or FullWiki
(``--hotpot_setting fullwiki``, graphs retrieved by ``tasks_xh_fullwiki``):
``examples/run_multihop.py --task hotpotqa --variant xh --system paper``.

Five models, each trained with the 🤗 ``Trainer`` on the run's ``TrainingArguments`` and saved under
``<output_dir>/<component>``:

- ``question_type``: ``XhForQuestionType`` on the question alone, labels from HotpotQA's ``type`` field (A.3.1);
- ``xh_bridge`` / ``xh_comparison``: ``XhForHotpotQA`` (node relevance, span, answer type) trained on the questions
  of one type only, over that type's graph: bridge questions on the title-mention evidence graph (the distractor
  data's stand-in for hyperlinks), comparison questions on the fully connected graph (5.1); their supporting-fact
  head is not trained (the separate model below predicts the facts);
- ``supporting_bridge`` / ``supporting_comparison``: ``XhForSupportingFacts`` (A.3.2), each document read alone.

Inference on the evaluation / test questions: the classifier's type, that type's XH for the answer, that type's
supporting-fact model for the facts (bridge: the answer document and its most relevant graph parent; comparison:
the top-2 documents). Writes the official prediction file ``<split>_predictions.json`` (``{"answer", "sp"}``) and
scores it with ``metrics/hotpotqa`` plus the classifier's accuracy (``question_type_accuracy``), into
``all_results.json`` as ``eval_<key>``.

``--model_name_or_path``: a LUKE checkpoint (every component converted from it) or the output folder of an earlier
paper-system run (every component loaded from its subfolder).

Flat module: imports its siblings relatively, third-party packages otherwise.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
from datasets import Dataset
from transformers import AutoConfig, PreTrainedModel, Trainer, TrainingArguments, set_seed

from .inputs_gesa import InputError
from .loading_gesa import load_tokenizer
from .modeling_xh_paper import (
    QUESTION_TYPES,
    XhForQuestionType,
    XhForSupportingFacts,
    bridge_supporting_facts,
    comparison_supporting_facts,
)
from .modeling_xh_tasks import XhForHotpotQA
from .processing_xh_tasks import XhTaskProcessor
from .records_xh import read_hotpot_file
from .structure_gesa import LUKE_MASK_ENTITY_ID
from .tasks_multihop import entity_rows
from .tasks_xh import HOTPOTQA
from .training_gesa import ScriptArgumentError, check_output_dir_given, write_json_atomically

SYSTEMS = ("joint", "paper")
# the graph each question type's XH model reads (5.1): the evidence graph for bridge, fully connected for comparison
TYPE_EDGES = {"bridge": "title_mention", "comparison": "full"}
COMPONENTS = ("question_type", "xh_bridge", "xh_comparison", "supporting_bridge", "supporting_comparison")
ANSWER_ONLY = ("sentence_starts", "sentence_ends", "sentence_labels")
SUPPORTING_ONLY = ("relevant_node", "start_positions", "end_positions", "answer_type")


def type_id(row: Mapping[str, Any], required: bool) -> int:
    """The row's ``type`` as an index of ``QUESTION_TYPES`` (-100 when absent and not ``required``)."""
    kind = row.get("type")
    if kind in QUESTION_TYPES:
        return QUESTION_TYPES.index(kind)
    if kind is None and not required:
        return -100
    raise InputError(
        f"{'no type' if kind is None else f'type {kind!r}'}: the paper system trains one model per question type and needs one of "
        f"{list(QUESTION_TYPES)}",
        row.get("location"),
        record="HotpotQA question",
        record_id=row.get("id"),
        fix="use HotpotQA's released training file (every question has its type), or --system joint",
    )


def question_type_features(
    processor: XhTaskProcessor, rows: Sequence[Mapping[str, Any]], required: bool
) -> list[dict[str, Any]]:
    """One single-node graph per question, ``<s> question </s>``, with ``labels`` its type id (A.3.1)."""
    tokenizer, features = processor.tokenizer, []
    for row in rows:
        question = processor._tokens(" ".join(str(row["question"]).split()), leading_space=False)
        question = question[: processor.max_query_length]
        ids = [tokenizer.cls_token_id, *question, tokenizer.sep_token_id]
        features.append({"input_ids": [ids], "global_attention_mask": [[1] + [2] * len(question) + [0]],
                         "node_adjacency": [[0]], "labels": type_id(row, required), "example_id": str(row["id"])})  # fmt: skip
    return features


def answer_features(processor: XhTaskProcessor, rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``XhTaskProcessor`` graphs for the answer model: relevance, span and answer type labels, no sentences."""
    features = processor.encode_hotpot_rows(rows)
    for feature in features:
        for name in ANSWER_ONLY:
            feature.pop(name, None)
    return features


def supporting_features(processor: XhTaskProcessor, rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``XhTaskProcessor`` graphs for the supporting-fact model: sentence boundaries and labels, and ``node_labels``
    1 on the documents holding a supporting fact."""
    features = processor.encode_hotpot_rows(rows)
    for feature, row in zip(features, rows, strict=True):
        facts = row.get("supporting_facts") or {}
        titles = set(facts.get("title", [])) if isinstance(facts, Mapping) else {fact[0] for fact in facts}
        feature["node_labels"] = [int(title in titles) for title in feature["titles"]]
        for name in SUPPORTING_ONLY:
            feature.pop(name, None)
    return features


def _component_args(args: TrainingArguments, name: str) -> TrainingArguments:
    return dataclasses.replace(args, output_dir=str(Path(args.output_dir) / name), remove_unused_columns=False)


def train_component(
    model: PreTrainedModel, features: list[dict[str, Any]], collator: Any, args: TrainingArguments, name: str
) -> PreTrainedModel:
    """``Trainer.train`` on ``features``, then the model saved to ``<output_dir>/<name>``."""
    trainer = Trainer(model=model, args=_component_args(args, name), train_dataset=Dataset.from_list(features),
                      data_collator=collator)  # fmt: skip
    trainer.train()
    trainer.save_model()
    return trainer.model


def reranker_model(model_args: Any, tokenizer: Any, folder: str, trains: bool, untrained: str) -> XhForSupportingFacts:
    """A re-ranker that reads each text alone (FullWiki's paragraphs, FEVER's sentences: ``XhForSupportingFacts``
    with no hop layer): the one saved in ``<model_name_or_path>/<folder>``, else converted from LUKE when the run
    ``trains`` it; ``untrained``: the refusal when there is neither."""
    path = model_args.model_name_or_path
    saved = Path(path) / folder
    if (saved / "config.json").is_file():
        return XhForSupportingFacts.from_pretrained(saved)
    if not trains:
        raise ScriptArgumentError(f"{untrained}: {saved} holds none; train one with --do_train --train_file, or give "
                                  f"--model_name_or_path the output folder of such a run")  # fmt: skip
    overrides: dict[str, Any] = {"xh_num_hop_layers": 0}  # each text read alone (BERT IR)
    if model_args.ablation is not None:
        overrides["ablation"] = model_args.ablation
    try:
        return XhForSupportingFacts.from_luke_pretrained(path, entity_rows=entity_rows(tokenizer), **overrides)
    except ValueError as error:
        raise ScriptArgumentError(f"--model_name_or_path {path}: {str(error).splitlines()[0]}") from None


@torch.no_grad()
def run_component(
    model: PreTrainedModel, features: list[dict[str, Any]], collator: Any, batch_size: int
) -> list[dict[str, torch.Tensor]]:
    """The model's outputs per feature (each a batch of one, on the CPU), evaluation mode, ``batch_size`` graphs at
    a time. Labels are left out of the inputs."""
    model.eval()
    device = next(model.parameters()).device
    results = []
    for begin in range(0, len(features), batch_size):
        chunk = features[begin : begin + batch_size]
        batch = collator(chunk)
        batch = {k: v.to(device) for k, v in batch.items() if isinstance(v, torch.Tensor) and k not in _LABELS}
        outputs = model(**batch)
        for g in range(len(chunk)):
            row = {k: v[g : g + 1].cpu() for k, v in outputs.items() if isinstance(v, torch.Tensor) and v.dim() > 1}
            row["node_mask"] = batch["node_mask"][g : g + 1].cpu().bool()
            row["node_adjacency"] = batch["node_adjacency"][g].cpu()
            results.append(row)
    return results


_LABELS = ("labels", "relevant_node", "start_positions", "end_positions", "answer_type", "sentence_labels",
           "node_labels")  # fmt: skip


@dataclasses.dataclass
class PaperSystem:
    """The five models of the paper's HotpotQA system and the processors that feed them (one per graph kind)."""

    models: dict[str, PreTrainedModel]
    processors: dict[str, XhTaskProcessor]

    def predict(
        self, rows: Sequence[Mapping[str, Any]], batch_size: int, retrieve: Callable[..., Any] | None = None
    ) -> tuple[dict[str, Any], list[int]]:
        """Per question ``{answer, score, supporting_facts, type}`` and the predicted type ids, in ``rows``' order.
        ``retrieve(rows, kind)`` (FullWiki) gives the typed questions their retrieved graphs first."""
        plain = self.processors["bridge"]
        collator = plain.get_data_collator()
        typed = run_component(self.models["question_type"], question_type_features(plain, rows, False), collator,
                              batch_size)  # fmt: skip
        kinds = [int(out["logits"][0].argmax()) for out in typed]
        predictions: dict[str, Any] = {}
        for index, kind in enumerate(QUESTION_TYPES):
            chosen = [row for row, k in zip(rows, kinds, strict=True) if k == index]
            if not chosen:
                continue
            if retrieve is not None:  # FullWiki: the graph depends on the type (comparison: no expansion, A.1)
                chosen = retrieve(chosen, kind)
            processor = self.processors[kind]
            answers = answer_features(processor, chosen)
            facts = supporting_features(processor, chosen)
            answered = run_component(self.models[f"xh_{kind}"], answers, collator, batch_size)
            scored = run_component(self.models[f"supporting_{kind}"], facts, collator, batch_size)
            for feature, fact_feature, answer_out, fact_out in zip(answers, facts, answered, scored, strict=True):
                if feature["titles"] != fact_feature["titles"]:  # one processor encodes both: same documents
                    raise RuntimeError("the answer and supporting-fact graphs of a question differ in their documents")
                decoded = XhForHotpotQA.decode_hotpot(_hotpot_output(answer_out), answer_out["node_mask"])[0]
                nodes = len(feature["input_ids"])  # the batch's padded nodes left out
                relevance = fact_out["relevance_logits"][0, :nodes]
                sentences = fact_out["supporting_logits"][0, :nodes]
                if kind == "bridge":
                    adjacency = answer_out["node_adjacency"][:nodes, :nodes]
                    pairs = bridge_supporting_facts(decoded["node"], adjacency, relevance, sentences)
                else:
                    pairs = comparison_supporting_facts(relevance, sentences)
                prediction = processor.hotpot_prediction(feature, {**decoded, "supporting": pairs})
                predictions[str(feature["example_id"])] = {**prediction, "type": kind}
        return predictions, kinds


def _hotpot_output(outputs: Mapping[str, torch.Tensor]) -> Any:
    from types import SimpleNamespace

    names = ("relevance_logits", "start_logits", "end_logits", "answer_type_logits")
    return SimpleNamespace(supporting_logits=None, **{name: outputs[name] for name in names})


def build_system(model_args: Any, data_args: Any, args: TrainingArguments) -> tuple[PaperSystem, Any]:
    """The five models from a LUKE checkpoint (converted) or from an earlier run's folder, and the processors."""
    path = model_args.model_name_or_path
    if path is None:
        raise ScriptArgumentError("--system paper needs --model_name_or_path: a LUKE checkpoint or a paper-system run")
    saved = Path(path)
    from_run = all((saved / name / "config.json").is_file() for name in COMPONENTS)
    tokenizer = load_tokenizer(model_args.tokenizer_name or path, cache_dir=model_args.cache_dir)
    processors = {
        kind: XhTaskProcessor(
            tokenizer,
            max_node_length=data_args.max_seq_length,
            max_query_length=data_args.max_query_length,
            max_nodes=data_args.max_nodes,
            hotpot_edges=edges,
            entity_mask_id=LUKE_MASK_ENTITY_ID,
        )  # fmt: skip
        for kind, edges in TYPE_EDGES.items()
    }
    classes = {"question_type": XhForQuestionType, "xh_bridge": XhForHotpotQA, "xh_comparison": XhForHotpotQA,
               "supporting_bridge": XhForSupportingFacts, "supporting_comparison": XhForSupportingFacts}  # fmt: skip
    models = {}
    for name, cls in classes.items():
        if from_run:
            models[name] = cls.from_pretrained(saved / name)
            continue
        overrides: dict[str, Any] = {} if model_args.ablation is None else {"ablation": model_args.ablation}
        if name == "question_type":
            overrides.update(xh_num_hop_layers=0, id2label=dict(enumerate(QUESTION_TYPES)),
                             label2id={k: i for i, k in enumerate(QUESTION_TYPES)})  # fmt: skip
        elif name.startswith("supporting"):
            overrides["xh_num_hop_layers"] = 0  # each document read alone (A.3.2)
        else:  # the paper's three hop steps, at most the model's depth
            overrides["xh_num_hop_layers"] = min(3, AutoConfig.from_pretrained(path).num_hidden_layers)
        try:
            models[name] = cls.from_luke_pretrained(path, entity_rows=entity_rows(tokenizer), **overrides)
        except ValueError as error:
            raise ScriptArgumentError(f"--model_name_or_path {path}: {str(error).splitlines()[0]}") from None
    return PaperSystem(models, processors), tokenizer


def _read(path: str | None, flag: str) -> list[dict[str, Any]]:
    if path is None:
        raise ScriptArgumentError(f"{flag} is needed for this step of --system paper")
    try:
        return read_hotpot_file(path)
    except InputError as error:
        raise ScriptArgumentError(f"{flag}: {error}") from None


def train_system(system: PaperSystem, rows: Sequence[Mapping[str, Any]], args: TrainingArguments) -> None:
    """Train the classifier on every question, each type's XH and supporting-fact model on that type's questions."""
    plain = system.processors["bridge"]
    collator = plain.get_data_collator()
    typed = question_type_features(plain, rows, required=True)
    system.models["question_type"] = train_component(system.models["question_type"], typed, collator, args,
                                                     "question_type")  # fmt: skip
    for index, kind in enumerate(QUESTION_TYPES):
        chosen = [row for row, feature in zip(rows, typed, strict=True) if feature["labels"] == index]
        if not chosen:
            raise ScriptArgumentError(
                f"--train_file has no {kind} questions: --system paper trains one XH and one supporting-fact model "
                "per question type (use --system joint for one model)"
            )
        processor = system.processors[kind]
        for name, features in ((f"xh_{kind}", answer_features(processor, chosen)),
                               (f"supporting_{kind}", supporting_features(processor, chosen))):  # fmt: skip
            system.models[name] = train_component(system.models[name], features, collator, args, name)


def _retrieved(retriever: Any, rows: Sequence[Mapping[str, Any]], expand: Any, flag: str, include_gold: bool) -> Any:
    try:
        return retriever.retrieve(rows, expand=expand, include_gold=include_gold)
    except InputError as error:
        raise ScriptArgumentError(f"{flag}: {error}") from None


def run_paper_system(
    model_args: Any,
    data_args: Any,
    args: TrainingArguments,
    retriever: Any = None,
    explicit: set[str] | None = None,
) -> dict[str, float]:
    """``--system paper``: train (``--do_train``), then predict and score (``--do_eval``: ``--validation_file``;
    ``--do_predict``: ``--test_file``); returns the evaluation metrics as ``eval_<key>``. ``retriever`` (FullWiki,
    ``tasks_xh_fullwiki.build_fullwiki``): every question's graph is retrieved, expanded along hyperlinks for bridge
    questions only (training: the gold type; evaluation: the classifier's). ``explicit``: the flags given, as for
    ``run_task``."""
    check_output_dir_given(explicit, "out/hotpotqa-paper")
    if model_args.variant != "xh":
        raise ScriptArgumentError(
            f"--system paper is Transformer-XH's system: use --variant xh, not {model_args.variant}"
        )
    set_seed(args.seed)
    # every file read and checked before any model loads: a bad file is the run's one error line
    train_rows = _read(data_args.train_file, "--train_file")[: data_args.max_train_samples] if args.do_train else []
    for row in train_rows:
        try:
            type_id(row, required=True)
        except InputError as error:
            raise ScriptArgumentError(f"--train_file: {error}") from None
    splits = [(split, _read(getattr(data_args, attribute), flag)[:limit])
              for split, attribute, flag, wanted, limit in (
                  ("eval", "validation_file", "--validation_file", args.do_eval, data_args.max_eval_samples),
                  ("predict", "test_file", "--test_file", args.do_predict, data_args.max_predict_samples))
              if wanted]  # fmt: skip
    system, tokenizer = build_system(model_args, data_args, args)
    output_dir = Path(args.output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    if train_rows:
        if retriever is not None:  # training graphs hold their supporting paragraphs
            bridge = [row.get("type") == "bridge" for row in train_rows]
            train_rows = _retrieved(retriever, train_rows, bridge, "--train_file", include_gold=True)
        train_system(system, train_rows, args)
        tokenizer.save_pretrained(output_dir)
    results: dict[str, float] = {}
    for model in system.models.values():
        model.to(args.device)
    for split, rows in splits:
        flag = "--validation_file" if split == "eval" else "--test_file"

        def retrieve(chosen: Sequence[Mapping[str, Any]], kind: str, flag: str = flag) -> Any:
            return _retrieved(retriever, chosen, kind == "bridge", flag, include_gold=False)

        predictions, kinds = system.predict(
            rows, args.per_device_eval_batch_size, None if retriever is None else retrieve
        )
        HOTPOTQA.write_predictions(predictions, rows, output_dir, split, data_args)
        if split == "eval":
            metrics = HOTPOTQA.score(predictions, rows)
            labelled = [(type_id(row, False), kind) for row, kind in zip(rows, kinds, strict=True)]
            labelled = [(gold, kind) for gold, kind in labelled if gold != -100]
            if labelled:
                metrics["question_type_accuracy"] = sum(g == k for g, k in labelled) / len(labelled)
            results.update({f"eval_{key}": value for key, value in HOTPOTQA.reported(metrics).items()})
    if results:
        write_json_atomically(output_dir / "all_results.json", results)
    return results


__all__ = [
    "COMPONENTS",
    "SYSTEMS",
    "TYPE_EDGES",
    "PaperSystem",
    "answer_features",
    "build_system",
    "question_type_features",
    "run_paper_system",
    "supporting_features",
    "train_system",
]
