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
(``--hotpot_setting fullwiki``, graphs retrieved by ``training.xh_fullwiki``):
``examples/run_multihop.py --task hotpotqa --variant xh --system paper``, a task of the shared driver
(``training.driver.run_task``: its flag checks, folder lock and overwrite rule, resume and one ``error:`` line).

``PaperHotpotQATask`` is a ``composite`` task: its model is ``modeling_xh_paper.XhPaperSystemForHotpotQA``, five
models each trained by the driver's ``ComponentTrainer`` on the run's ``TrainingArguments`` into
``<output_dir>/<component>``:

- ``question_type``: ``XhForQuestionType`` on the question alone, labels from HotpotQA's ``type`` field (A.3.1);
- ``xh_bridge`` / ``xh_comparison``: ``XhForHotpotQA`` (node relevance, span, answer type) trained on the questions
  of one type only, over that type's graph: bridge questions on the title-mention evidence graph (the distractor
  data's stand-in for hyperlinks), comparison questions on the fully connected graph (5.1); their supporting-fact
  head is not trained (the separate model below predicts the facts);
- ``supporting_bridge`` / ``supporting_comparison``: ``XhForSupportingFacts`` (A.3.2), each document read alone.

The output folder's ``config.json`` (``XhPaperSystemConfig``) names them, so the folder answers through
``pipeline(model=dir, trust_remote_code=True)`` (``pipeline_xh_paper``) and loads again as ``--model_name_or_path``.
Inference on the evaluation / test questions (``pipeline_xh_paper.paper_system_predictions``): the classifier's type,
that type's XH for the answer, that type's supporting-fact model for the facts. The driver writes the official
prediction file ``<split>_predictions.json`` and the scores of ``metrics/hotpotqa`` plus the classifier's accuracy
(``question_type_accuracy``) as ``eval_<key>``.

``--model_name_or_path``: a LUKE checkpoint (every component converted from it) or the output folder of an earlier
paper-system run. Every training question needs its ``type``; an evaluation question may leave it out (the
classifier types it), but a ``type`` that is neither bridge nor comparison is refused when the file is read.

Flat module: imports its siblings relatively, third-party packages otherwise.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from datasets import Dataset
from transformers import PreTrainedModel

from ..configuration_variants import PAPER_SYSTEM_COMPONENTS, PAPER_TYPE_EDGES, XhPaperSystemConfig
from ..inputs_gesa import InputError
from ..loading_gesa import component_problem, weights_problem
from ..modeling_xh_paper import COMPONENT_CLASSES, QUESTION_TYPES, XhForSupportingFacts, XhPaperSystemForHotpotQA
from ..pipeline_xh_paper import paper_system_predictions
from ..processing_xh_tasks import XhTaskProcessor
from .machinery import ScriptArgumentError, checkpoint_config
from .models import ModelRecipe, load_for_task
from .task import LoadedModel, file_error
from .wikihop import entity_rows
from .xh import PAPER_NODE_LENGTH, HotpotQATask, is_paper_system_folder

SYSTEMS = ("joint", "paper")
COMPONENTS = tuple(PAPER_SYSTEM_COMPONENTS)
TYPE_EDGES = dict(PAPER_TYPE_EDGES)
# the flags of the run's own Trainer that a system of separately trained models does not have
NO_SYSTEM_TRAINER = {
    "eval_strategy": "the system is scored once its five models are trained (no model alone has the system's score)",
    "eval_on_start": "the system is scored once its five models are trained",
    "load_best_model_at_end": "no model alone is scored during training",
    "push_to_hub": "upload the finished folder with huggingface_hub's upload_folder",
}


def converted_component(
    head: type[PreTrainedModel], path: str, tokenizer: Any, ablation: str | None, **overrides: Any
) -> PreTrainedModel:
    """``head`` converted from the LUKE checkpoint ``path`` (``overrides``: config values; ``ablation``: the run's)."""
    if ablation is not None:
        overrides["ablation"] = ablation
    try:
        return head.from_luke_pretrained(path, entity_rows=entity_rows(tokenizer), **overrides)
    except ValueError as error:
        raise ScriptArgumentError(f"--model_name_or_path {path}: {str(error).splitlines()[0]}") from None


def reranker_model(
    model_args: Any, tokenizer: Any, folder: str, trains: bool, untrained: str
) -> tuple[XhForSupportingFacts, bool]:
    """A re-ranker that reads each text alone (FullWiki's paragraphs, FEVER's sentences: ``XhForSupportingFacts``
    with no hop layer) and whether it is trained: the one saved in ``<model_name_or_path>/<folder>`` (its weights
    checked first), else converted from LUKE when the run ``trains`` it; ``untrained``: the refusal when neither."""
    path = model_args.model_name_or_path
    saved = Path(path) / folder
    if (saved / "config.json").is_file():
        if (problem := weights_problem(saved)) is not None:
            raise ScriptArgumentError(f"--model_name_or_path {path}: its {folder} model cannot be loaded ({problem}); "
                                      "copy the folder again, or train a new one with --do_train")  # fmt: skip
        return XhForSupportingFacts.from_pretrained(saved), True
    if not trains:
        raise ScriptArgumentError(f"{untrained}: {saved} holds none; train one with --do_train --train_file, or give "
                                  f"--model_name_or_path the output folder of such a run")  # fmt: skip
    overrides: dict[str, Any] = {"xh_num_hop_layers": 0}  # each text read alone (BERT IR)
    return converted_component(XhForSupportingFacts, path, tokenizer, model_args.ablation, **overrides), False


def typed_rows(rows: Sequence[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    """The rows of each question type (training rows: every one has its ``type``)."""
    return {kind: [row for row in rows if row.get("type") == kind] for kind in QUESTION_TYPES}


@dataclass
class PaperHotpotQATask(HotpotQATask):
    """``--system paper`` (module docstring): the five models trained in turn, the system scored on its own
    predictions. ``retrieve`` (FullWiki, ``training.xh_fullwiki``) gives questions their retrieved graphs:
    ``retrieve(rows, expand, split)``, ``expand`` per row (bridge questions are expanded along hyperlinks)."""

    title: str = "HotpotQA (paper system)"
    description: str = (
        "HotpotQA with Transformer-XH as the paper's system (A.3): question type, XH and supporting facts per type"
    )
    heads: dict = field(default_factory=lambda: {"xh": XhPaperSystemForHotpotQA})
    metric_names: dict = field(default_factory=lambda: {
        "joint_f1": "joint F1", "em": "answer EM", "f1": "answer F1", "sp_f1": "supporting-fact F1",
        "question_type_accuracy": "question type accuracy"})  # fmt: skip
    composite: bool = True
    retrieve: Callable[..., list[dict[str, Any]]] | None = field(default=None, repr=False)

    def check_arguments(self, model_args: Any, data_args: Any, args: Any) -> None:
        super().check_arguments(model_args, data_args, args)
        if model_args.model_name_or_path is None:
            raise ScriptArgumentError(
                "--system paper needs --model_name_or_path: a LUKE checkpoint or a --system paper output folder"
            )
        for flag, why in NO_SYSTEM_TRAINER.items():
            value = getattr(args, flag, None)
            if value not in (None, False, "no"):  # (an IntervalStrategy equals its string)
                shown = getattr(value, "value", value)
                raise ScriptArgumentError(f"--{flag} {shown}: --system paper trains five models in turn and {why}; "
                                          f"drop --{flag}")  # fmt: skip

    def read_file(self, path: Path, where: str, split: str, data_args: Any, model_args: Any) -> list[dict]:
        """The questions, each with a known ``type`` (required to train; an evaluation question may have none)."""
        rows = super().read_file(path, where, split, data_args, model_args)
        for row in rows:
            try:
                XhTaskProcessor.question_type_id(row, required=split == "train")
            except InputError as error:
                raise ScriptArgumentError(file_error(where, path, error)) from None
        return rows

    def read_hub(self, data_args: Any, model_args: Any, split: str) -> list[dict[str, Any]]:
        rows = super().read_hub(data_args, model_args, split)
        for row in rows:
            try:
                XhTaskProcessor.question_type_id(row, required=split == "train")
            except InputError as error:
                raise ScriptArgumentError(str(error)) from None
        return rows

    def check_examples(self, examples: Mapping[str, Any], data_args: Any) -> None:
        """One XH and one supporting-fact model per question type: the training file needs questions of each."""
        for kind, rows in typed_rows(examples.get("train", [])).items():
            if "train" in examples and not rows:
                raise ScriptArgumentError(
                    f"--train_file has no {kind} questions: --system paper trains one XH and one supporting-fact "
                    "model per question type (use --system joint for one model)"
                )

    # ------------------------------------------------------------------------------------------- the model

    def load(
        self, model_args: Any, data_args: Any, examples: Mapping[str, Any], explicit: set[str] | None
    ) -> LoadedModel:
        """The system from an earlier paper-system folder (every component loaded) or converted from LUKE; the
        processor of its graphs (bridge edges; each type's edges derived, ``TYPE_EDGES``). One ``load_for_task``
        call: the source (``_source``, a LUKE checkpoint checked by the loader), XH's words per node against the
        positions its XH models read, the tokenizer and the processor, all before any weight loads (``_build``)."""
        recipe = ModelRecipe(
            self.variant_spec(model_args.variant),  # XhConfig's: the positions its XH models read
            "--task hotpotqa --variant xh --system paper",
            # the processor of the graphs: bridge edges; each type's derived
            lambda tokenizer, config: self.checked_processor(tokenizer, data_args),
            needs_path="--system paper needs --model_name_or_path: a LUKE checkpoint or a --system paper output folder",
            overrides={} if model_args.ablation is None else {"ablation": model_args.ablation},
            positions="XH's words per node",
            default_length=PAPER_NODE_LENGTH,
            entity_rows=None,  # each component keeps LUKE's special entity rows itself (converted_component)
            check_source=self._source,
            build_model=lambda config, tokenizer: (self._build(model_args, config, tokenizer), tokenizer),
        )
        return LoadedModel(*load_for_task(recipe, model_args, data_args, explicit))

    def _build(self, model_args: Any, config: dict[str, Any], tokenizer: Any) -> XhPaperSystemForHotpotQA:
        """The system: an earlier run's (``config``: its ``xh_bridge`` model's) loaded, else its five components
        converted from the LUKE checkpoint."""
        path = model_args.model_name_or_path
        if config.get("model_type") != "luke":  # a paper-system run (``_source``)
            return self._load_run(path, model_args)
        layers = int(config.get("num_hidden_layers") or 1)
        components = {}
        for name, head_name in PAPER_SYSTEM_COMPONENTS.items():
            overrides_of: dict[str, Any] = {}
            if name == "question_type":
                overrides_of.update(xh_num_hop_layers=0, id2label=dict(enumerate(QUESTION_TYPES)),
                                    label2id={k: i for i, k in enumerate(QUESTION_TYPES)})  # fmt: skip
            elif name.startswith("supporting"):
                overrides_of["xh_num_hop_layers"] = 0  # each document read alone (A.3.2)
            else:  # the paper's three hop steps, at most the model's depth
                overrides_of["xh_num_hop_layers"] = min(3, layers)
            components[name] = converted_component(COMPONENT_CLASSES[head_name], path, tokenizer,
                                                   model_args.ablation, **overrides_of)  # fmt: skip
        return XhPaperSystemForHotpotQA(XhPaperSystemConfig(), components)

    def _source(self, path: str, hub: dict[str, Any]) -> dict[str, Any] | None:
        """The config the run's XH models read when ``--model_name_or_path`` is a paper-system run (a folder, or a Hub
        repo of one: its ``xh_bridge``'s); ``None`` for a LUKE checkpoint (the loader's ``check_model_source`` checks
        it next); anything else is refused, naming the system that reads it."""
        if is_paper_system_folder(path):  # a local folder (also one written before the system's config)
            return self._run_component_config(path, hub)
        source = checkpoint_config(path, "a LUKE checkpoint or a --system paper output folder", **hub)
        if source.get("model_type") == XhPaperSystemConfig.model_type:  # a Hub repo of the system
            return checkpoint_config(path, "a --system paper", subfolder="xh_bridge", **hub)
        if source.get("model_type") != "luke":
            raise ScriptArgumentError(
                f"--model_name_or_path {path} holds a {source.get('model_type')!r} model "
                f"({(source.get('architectures') or ['?'])[0]}), but --system paper needs a LUKE checkpoint to "
                "convert or a --system paper output folder (question_type/, xh_bridge/, ...); evaluate a --system "
                "joint folder with --system joint"
            )
        return None

    @staticmethod
    def _run_component_config(path: str, hub: dict[str, Any]) -> dict[str, Any]:
        """The per-type XH model's config of a paper-system folder (its positions), every weights file checked
        first: a damaged one is named with its component and the fix."""
        folder = Path(path)
        if (folder / "config.json").is_file():
            problem = weights_problem(folder)  # every component's config.json and weights
        else:  # a folder written before the system's own config.json
            problem = next((found for name in COMPONENTS if (found := component_problem(folder, name))), None)
        if problem is not None:
            raise ScriptArgumentError(
                f"--model_name_or_path {path}: {problem}; copy the folder again, or train the system again with "
                "--do_train (from a LUKE checkpoint) into a new --output_dir"
            )
        return checkpoint_config(str(folder / "xh_bridge"), "an XhForHotpotQA", **hub)

    @staticmethod
    def _load_run(path: str, model_args: Any) -> XhPaperSystemForHotpotQA:
        if (Path(path) / "config.json").is_file():
            try:
                return XhPaperSystemForHotpotQA.from_pretrained(path)
            except OSError as error:
                raise ScriptArgumentError(f"--model_name_or_path {path}: {str(error).splitlines()[0]}") from None
        # a folder written before the system's own config.json: its five models' folders
        components = {name: COMPONENT_CLASSES[head].from_pretrained(Path(path) / name)
                      for name, head in PAPER_SYSTEM_COMPONENTS.items()}  # fmt: skip
        return XhPaperSystemForHotpotQA(XhPaperSystemConfig(), components)

    def train_components(self, loaded: LoadedModel, examples: Mapping[str, Any], data_args: Any, args: Any,
                         train: Any) -> None:  # fmt: skip
        """The classifier on every training question, each type's XH and supporting-fact model on that type's
        questions over that type's graph (FullWiki: retrieved, bridge questions expanded; with their gold)."""
        if "train" not in examples:
            return
        rows = list(examples["train"])
        if self.retrieve is not None:  # training graphs hold their supporting paragraphs
            rows = self.retrieve(rows, [row.get("type") == "bridge" for row in rows], "train")
        system, processor = loaded.model, loaded.processor
        collator = processor.get_data_collator()
        typed = Dataset.from_list(processor.encode_question_types(rows, required=True))
        system.components["question_type"] = train("question_type", system.components["question_type"], typed,
                                                   collator)  # fmt: skip
        for kind, chosen in typed_rows(rows).items():
            answers, facts = processor.with_edges(system.config.type_edges[kind]).encode_paper_graphs(chosen)
            for name, features in ((f"xh_{kind}", answers), (f"supporting_{kind}", facts)):
                system.components[name] = train(name, system.components[name], Dataset.from_list(features), collator)

    # ------------------------------------------------------------------------------------------- predictions

    def predict_examples(self, loaded: LoadedModel, examples: Any, split: str, args: Any) -> dict[str, Any]:
        """``pipeline_xh_paper.paper_system_predictions`` on the questions (FullWiki: each typed question's graph
        retrieved after the classifier, bridge questions expanded)."""
        system = loaded.model.to(args.device)
        processors = {kind: loaded.processor.with_edges(edges) for kind, edges in system.config.type_edges.items()}
        retrieve = None
        if self.retrieve is not None:

            def retrieve(rows: Sequence[Mapping[str, Any]], kind: str) -> list[dict[str, Any]]:
                return self.retrieve(rows, kind == "bridge", split)

        return paper_system_predictions(system, processors, list(examples), args.per_device_eval_batch_size,
                                        retrieve)  # fmt: skip

    def score(self, predictions: Mapping[str, Any], examples: Sequence[Mapping[str, Any]]) -> dict[str, float]:
        """The official HotpotQA metric and the classifier's accuracy over the questions that give their type."""
        metrics = super().score(predictions, examples)
        typed = [(row["type"], predictions[row["id"]].get("type")) for row in examples if row.get("type")]
        if typed:
            metrics["question_type_accuracy"] = sum(gold == kind for gold, kind in typed) / len(typed)
        return metrics


PAPER_HOTPOTQA = PaperHotpotQATask()

__all__ = [
    "COMPONENTS",
    "PAPER_HOTPOTQA",
    "SYSTEMS",
    "TYPE_EDGES",
    "PaperHotpotQATask",
    "converted_component",
    "reranker_model",
    "typed_rows",
]
