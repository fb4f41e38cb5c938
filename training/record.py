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
"""ReCoRD (entity cloze QA) as a task of the shared driver: ``RECORD``, what ``examples/run_record.py`` runs.

- read: every file item checked by the shared ReCoRD reader (``records_gesa.check_record_file``: one known shape,
  spans and answer offsets in the shape's end convention), then one row per query (``flatten_records``: ``id``,
  ``passage``, ``query``, ``entity_spans`` with exclusive ends or ``None``, ``answers``, where it was read);
- model: a tiny GESA from scratch with a byte-level BPE trained offline on the training text (the embedded demo), a
  LUKE checkpoint converted (the entity table cut to LUKE's special entities, except for KAR/ERNIE whose knowledge
  base it is), or a checkpoint of the variant's ``...ForEntitySpanQA`` whose saved window settings
  (``processor_config.json``) become the defaults of the flags not given; tokenizer and config checked first;
- features: ``GesaProcessor`` windows (``XhProcessor`` graphs for ``--variant xh``), with every candidate's span;
- predictions: the window scores of a query merged per normalised answer text (``answers_gesa.ranked_answers``, as the
  pipeline ranks), scored by the official ReCoRD metric (``metrics/record``: exact match and F1 in percent);
  ``eval_predictions.json`` is ``{query id: answer}``, ``predict_predictions.json`` ``{query id: [{answer, score,
  start, end}, ...]}`` (the top ``--predict_top_k``, best first, ``score`` = sigmoid of the merged logit);
- the model card: ``model_cards/template.md`` with the run's scores.

Flat module: imports its siblings relatively, third-party packages otherwise.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from datasets import Dataset, load_dataset
from transformers import PreTrainedTokenizerBase

from ..answers_gesa import first_mentions, ranked_answers
from ..candidates_gesa import normalize_entity_string
from ..configuration_gesa import ABLATION_PRESETS
from ..inputs_gesa import InputError
from ..modeling_ernie import ErnieForEntitySpanQA
from ..modeling_gesa import GesaForEntitySpanQA
from ..modeling_kar import KarForEntitySpanQA
from ..modeling_luke_graph import LukeGraphForEntitySpanQA
from ..modeling_xh import XhForEntitySpanQA
from ..processing_gesa import LUKE_MASK_ENTITY_ID, GesaProcessor
from ..records_gesa import INCLUSIVE_END_KEY, SOURCE_KEY, check_record_file, to_record_examples
from .cards import write_model_card
from .knowledge_base import attach_knowledge_files, knowledge_candidates, load_ner
from .machinery import ScriptArgumentError, featurise_rows, write_json_atomically
from .models import (
    ModelRecipe,
    graph_layer_overrides,
    load_for_task,
    load_run_tokenizer,
)
from .registry import VARIANTS
from .resources import metric_module
from .task import LoadedModel, Task
from .tokenizer import train_sample_tokenizer

# The tiny GESA built when no checkpoint is given (the embedded demo; the word vocabulary comes from the tokenizer
# trained on the data). No dropout (42 training queries, 180 steps); weights drawn at 1/sqrt(width), not BERT's 0.02
# (made for width 1024): at 0.02 or 0.05 a 64-wide model's query hardly reaches the candidates at step 0 and whether
# a run learns is luck of the seed (docs/diagnostic.md, "Why seeds stayed on the city level").
TINY_GESA = dict(
    hidden_size=64,
    entity_emb_size=32,
    num_hidden_layers=2,
    num_attention_heads=4,
    intermediate_size=128,
    max_relative_position=64,
    hidden_dropout_prob=0.0,
    attention_probs_dropout_prob=0.0,
    initializer_range=64**-0.5,
)


# ----------------------------------------------------------------------------------------------- reading


def flatten_records(
    batch: dict[str, list],
    indices: list[int] | None = None,
    sources: list[str] | str | None = None,
    location_columns: tuple[str, str] = (SOURCE_KEY, INCLUSIVE_END_KEY),
) -> dict[str, list]:
    """Any accepted shape -> one row per query: ``id``, ``passage``, ``query``, ``entity_spans``, ``answers``,
    ``record_location``, ``record_inclusive_end``.

    ``entity_spans`` become ``{start, end, text}`` with an EXCLUSIVE ``end`` (``None`` when the input has no
    annotation: the processor then finds candidates with spaCy NER); ``answers`` are strings (``None`` when absent).
    ``record_location`` (where the query was read: the flag, the file and the line) and ``record_inclusive_end`` (the
    file wrote inclusive ends) let the processor's errors name the line and the right fix. ``sources``: per dataset
    row (from ``check_record_file``) or a prefix (Hub datasets: ``"... row N"``). A bad item is a ``ValueError``.
    """
    keys = list(batch)
    items = [dict(zip(keys, values, strict=True)) for values in zip(*(batch[key] for key in keys), strict=True)]
    indices = list(range(len(items))) if indices is None else indices
    if isinstance(sources, str) or sources is None:
        where = [f"{sources or 'row'} {index}" for index in indices]
    else:
        where = [sources[index] for index in indices]
    examples = to_record_examples(items, sources=where)
    out: dict[str, list] = {name: [] for name in ("id", "passage", "query", "entity_spans", "answers")}
    # (the names are an argument so that they are part of Dataset.map's cache fingerprint)
    location_key, inclusive_key = location_columns
    out[location_key], out[inclusive_key] = [], []
    for example in examples:
        out["id"].append(example.example_id)
        out["passage"].append(example.passage)
        out["query"].append(example.query)
        spans = None
        if example.entity_spans is not None:
            spans = [{"start": s, "end": e, "text": example.passage[s:e]} for s, e in example.entity_spans]
        out["entity_spans"].append(spans)
        out["answers"].append(example.answers)
        out[location_key].append(example.source)
        out[inclusive_key].append(example.inclusive_end)
    return out


def one_row_per_query(raw: Dataset, sources: list[str] | str, where: str, data_args: Any) -> Dataset:
    """``raw`` (file items or Hub rows) as one row per query (``flatten_records``); a bad item names ``where``."""
    try:
        return raw.map(
            flatten_records,
            batched=True,
            with_indices=True,
            fn_kwargs={"sources": sources, "location_columns": (SOURCE_KEY, INCLUSIVE_END_KEY)},
            remove_columns=raw.column_names,
            num_proc=data_args.preprocessing_num_workers,
            load_from_cache_file=not data_args.overwrite_cache,
            desc="One row per query",
        )
    except ValueError as error:
        message = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ScriptArgumentError(message if message.startswith(where) else f"{where}: {message}") from None


# ----------------------------------------------------------------------------------------------- the task


# a trained checkpoint's saved processor settings that become a run's defaults (saved name -> flag): GESA's windows,
# XH's nodes (at most --max_seq_length word tokens)
SAVED_WINDOW_SETTINGS = {name: name for name in ("max_seq_length", "doc_stride", "max_query_length", "max_entities")}
SAVED_NODE_SETTINGS = {"max_node_length": "max_seq_length", "max_query_length": "max_query_length"}


@dataclass
class RecordTask(Task):
    """ReCoRD for ``run_task`` (module docstring)."""

    name: str = "record"
    title: str = "ReCoRD"
    description: str = "ReCoRD: entity cloze QA over a news passage, official exact match and F1 (percent)"
    file_format: str = "ReCoRD records (passage + qas, inclusive ends) or flattened rows, .json or .jsonl"
    heads: dict = field(
        default_factory=lambda: {
            "gesa": GesaForEntitySpanQA,
            "luke": GesaForEntitySpanQA,
            "luke_graph": LukeGraphForEntitySpanQA,
            "kar": KarForEntitySpanQA,
            "ernie": ErnieForEntitySpanQA,
            "xh": XhForEntitySpanQA,
        }
    )
    metric_for_best_model: str = "exact_match"
    metric_names: dict = field(default_factory=lambda: {"exact_match": "exact match", "f1": "F1"})
    unit: str = "queries"
    item: str = "query"
    no_feature_hint: str = "no query has a candidate entity"

    # ------------------------------------------------------------------------------------------- flags

    def check_arguments(self, model_args: Any, data_args: Any, args: Any) -> None:
        spec = VARIANTS[model_args.variant]
        fixed = spec.config_overrides.get("ablation")  # luke, luke_graph: the LUKE backbone
        if fixed is not None and model_args.ablation not in (None, fixed):
            raise ScriptArgumentError(
                f"--variant {model_args.variant} is the {fixed!r} ablation; it cannot be combined with --ablation "
                f"{model_args.ablation}"
            )
        if model_args.ablation is not None and model_args.ablation not in ABLATION_PRESETS:
            raise ScriptArgumentError(f"--ablation {model_args.ablation!r} is unknown; choose one of "
                                      f"{sorted(ABLATION_PRESETS)}")  # fmt: skip
        if not spec.uses_gesa_features and data_args.candidate_source == "ner":
            raise ScriptArgumentError(
                f"--variant {model_args.variant} needs annotated candidate entities; not --candidate_source ner"
            )
        if args.do_predict and data_args.test_file is None and not data_args.dataset_name:
            raise ScriptArgumentError(
                "--do_predict needs --test_file (ReCoRD records or rows; gold answers not needed)"
            )
        if data_args.predict_top_k < 1:
            raise ScriptArgumentError(f"--predict_top_k must be at least 1, got {data_args.predict_top_k}")
        if data_args.doc_stride < 1 or data_args.max_seq_length < 16 or data_args.max_query_length < 1:
            raise ScriptArgumentError(
                "--max_seq_length (>= 16), --doc_stride and --max_query_length (>= 1) must be positive"
            )
        if data_args.max_entities < 2:
            raise ScriptArgumentError(f"--max_entities must be at least 2 (the placeholder and a candidate), got "
                                      f"{data_args.max_entities}")  # fmt: skip

    # ------------------------------------------------------------------------------------------- data

    def read_file(self, path: Path, where: str, split: str, data_args: Any, model_args: Any) -> Dataset:
        try:
            checked = check_record_file(path, where=where, unique_ids=split != "train")
        except InputError as error:
            raise ScriptArgumentError(str(error)) from None
        if split == "train" and checked.unanswered is not None:
            raise ScriptArgumentError(
                f"{checked.unanswered} has no gold answer ('answers' missing or empty): it would train as all "
                "negative; give its answers or remove it (a test split cannot train)"
            )
        if split == "validation" and checked.unanswered is not None:
            raise ScriptArgumentError(
                f"{checked.unanswered} has no gold answer to evaluate against (a test split?); give its answers or "
                "remove it, or pass the file as --test_file with --do_predict"
            )
        raw = load_dataset("json", data_files=str(path), field=checked.field, split="train",
                           cache_dir=model_args.cache_dir)  # fmt: skip
        return one_row_per_query(raw, [f"{where}, {location}" for location in checked.locations], where, data_args)

    def read_hub(self, data_args: Any, model_args: Any, split: str) -> Dataset:
        raw = load_dataset(data_args.dataset_name, data_args.dataset_config_name, cache_dir=model_args.cache_dir,
                           token=model_args.token)  # fmt: skip
        if split not in raw:
            raise ScriptArgumentError(f"dataset {data_args.dataset_name} has no {split!r} split ({list(raw)})")
        where = f"--dataset_name {data_args.dataset_name} ({split} split)"
        return one_row_per_query(raw[split], f"{where}, row", where, data_args)

    def check_examples(self, examples: Mapping[str, Any], data_args: Any) -> None:
        """The spaCy NER pipeline, loaded now when some query needs it (the install line otherwise)."""
        if data_args.candidate_source == "annotations":
            return
        unannotated = any(None in split["entity_spans"] for split in examples.values())
        if not (data_args.candidate_source == "ner" or unannotated):
            return
        from ..candidates_gesa import ner_pipeline

        try:
            ner_pipeline(data_args.spacy_model)
        except (ImportError, OSError, ValueError) as error:
            raise ScriptArgumentError(f"--spacy_model {data_args.spacy_model}: {str(error).splitlines()[0]}") from None

    def reference(self, example: Mapping[str, Any]) -> list[str] | None:
        return list(example["answers"]) if example.get("answers") else None

    def chance(self, examples: Dataset) -> float | None:
        """Exact match of a uniform guess among each query's candidates, in percent: the share of a query's distinct
        candidate texts (the official normalisation, as predictions are merged) that are gold answers, averaged over
        the queries. ``None`` when a query's candidates come from spaCy NER (unknown before featurising)."""
        shares = []
        for spans, passage, answers in zip(examples["entity_spans"], examples["passage"], examples["answers"],
                                           strict=True):  # fmt: skip
            if spans is None:
                return None
            candidates = {normalize_entity_string(passage[span["start"] : span["end"]]) for span in spans}
            gold = {normalize_entity_string(answer) for answer in answers or ()}
            if candidates:
                shares.append(len(candidates & gold) / len(candidates))
        return 100.0 * sum(shares) / len(shares) if shares else None

    # ------------------------------------------------------------------------------------------- the model

    def load(
        self, model_args: Any, data_args: Any, examples: Mapping[str, Any], explicit: set[str] | None
    ) -> LoadedModel:
        spec = self.variant_spec(model_args.variant)
        ablation = spec.config_overrides.get("ablation", model_args.ablation)
        overrides = {} if ablation is None else {"ablation": ablation}
        if getattr(model_args, "graph_layer", None) is not None:  # LUKE-Graph's relational layer (a new model's)
            overrides["graph_layer"] = model_args.graph_layer
        ner = load_ner(model_args)  # ERNIE's NER pipeline (--ner_model), before any weight loads
        path = model_args.model_name_or_path
        if path is None:
            loaded = self._scratch_model(spec, model_args, data_args, examples, overrides)
            loaded.processor.ner_finder = ner
            return loaded
        names = SAVED_WINDOW_SETTINGS if spec.uses_gesa_features else SAVED_NODE_SETTINGS
        recipe = ModelRecipe(
            spec,
            f"run_record.py --variant {model_args.variant}",
            lambda tokenizer, config: self.make_processor(tokenizer, data_args, model_args.variant),
            overrides=overrides,
            saved_settings=names,
            settings_note="run_record.py: processor settings: ",
            positions="words per sequence",
            # KAR and ERNIE use LUKE's entity table as their knowledge base: it stays whole (model and tokenizer)
            entity_rows=4 if spec.shrink_entity_table else None,
            shrink_tokenizer=True,
            check_vocab=True,
            init_added_words=True,  # [HL] [PLC] [ENT] start from @ # *
            knowledge_files=True,
            configure=functools.partial(graph_layer_overrides, model_args),
        )
        loaded = LoadedModel(*load_for_task(recipe, model_args, data_args, explicit))
        loaded.processor.ner_finder = ner
        return loaded

    def _scratch_model(
        self, spec: Any, model_args: Any, data_args: Any, examples: Mapping[str, Any], overrides: dict[str, Any]
    ) -> LoadedModel:
        """A tiny random model (``TINY_GESA``); its tokenizer learns from the training text only, so the evaluation
        text stays unseen (``--tokenizer_name`` instead, when given)."""
        if model_args.tokenizer_name:
            tokenizer = load_run_tokenizer(model_args, model_args.tokenizer_name)
        else:
            split = examples.get("train", examples.get("validation", next(iter(examples.values()))))
            tokenizer = train_sample_tokenizer([*dict.fromkeys(split["passage"]), *split["query"]])
        entity_vocab = getattr(tokenizer, "entity_vocab", None) or {"[PAD]": 0, "[UNK]": 1, "[MASK]": 2, "[MASK2]": 3}
        processor = self.make_processor(tokenizer, data_args, model_args.variant)
        model = spec.from_scratch(
            vocab_size=len(tokenizer),
            entity_vocab_size=len(entity_vocab),
            max_position_embeddings=max(514, data_args.max_seq_length + 2),
            pad_token_id=tokenizer.pad_token_id,
            bos_token_id=tokenizer.cls_token_id,
            eos_token_id=tokenizer.sep_token_id,
            **overrides,
            **TINY_GESA,
        )
        model.init_added_word_embeddings(processor.added_token_sources())
        attach_knowledge_files(model_args, model, tokenizer, processor)  # --kb_* files: KAR's / ERNIE's KB
        return LoadedModel(model, processor, tokenizer)

    @staticmethod
    def make_processor(tokenizer: PreTrainedTokenizerBase, data_args: Any, variant: str = "gesa") -> Any:
        """The variant's ReCoRD processor with the data arguments (``[HL] [PLC] [ENT]`` are added to ``tokenizer``):
        ``GesaProcessor`` windows, or for xh ``XhProcessor`` graphs (one per query) whose nodes are
        ``--max_seq_length`` word tokens at most, with ``--max_query_length`` query tokens."""
        spec = VARIANTS[variant]
        try:
            if not spec.uses_gesa_features:
                return spec.make_processor(
                    tokenizer, max_node_length=data_args.max_seq_length, max_query_length=data_args.max_query_length
                )
            return GesaProcessor(
                tokenizer,
                max_seq_length=data_args.max_seq_length,
                doc_stride=data_args.doc_stride,
                max_query_length=data_args.max_query_length,
                max_entities=data_args.max_entities,
                spacy_model=data_args.spacy_model,
                candidate_source=data_args.candidate_source,
                entity_mask_id=LUKE_MASK_ENTITY_ID if getattr(tokenizer, "entity_vocab", None) is None else None,
            )
        except (TypeError, ValueError) as error:
            raise ScriptArgumentError(f"cannot build the ReCoRD processor: {error}") from None

    def collator(self, processor: Any, variant: str) -> Any:
        """GESA's collator (+ the KAR/ERNIE knowledge inputs), or XH's graph collator."""
        spec = VARIANTS[variant]
        if spec.uses_gesa_features:
            candidates = knowledge_candidates(processor)
            ner = getattr(processor, "ner_finder", None)
            return spec.wrap_collator(
                processor.get_data_collator(), processor.tokenizer, candidates=candidates, ner=ner
            )
        return processor.get_data_collator()

    # ------------------------------------------------------------------------------------------- features

    def featurise(self, processor: Any, examples: Dataset, split: str, data_args: Any) -> Dataset:
        """One feature per window (GESA) or per query graph (XH), with ``example_id``, ``candidate_texts`` and (GESA)
        ``candidate_spans``."""
        if isinstance(processor, GesaProcessor):
            function = functools.partial(processor.map_function, return_candidate_spans=True)
        else:
            function = XhMapFunction(processor)
        return featurise_rows(
            examples, function, split, data_args.preprocessing_num_workers, not data_args.overwrite_cache
        )

    # ------------------------------------------------------------------------------------------- predictions

    def decode(
        self, examples: Dataset, features: Dataset, outputs: Any, processor: Any
    ) -> dict[str, list[dict[str, Any]]]:
        """Every query's candidates ranked by their merged logit (``answers_gesa.ranked_answers``, as the pipeline
        ranks): ``{query id: [{answer, score, start, end}, ...]}``, best first. A feature is a window (logits
        ``(B, E)`` over its ``candidate_texts``, entity 0 the placeholder) or an XH query graph (``(G, C)``); scores
        past a row's candidates (batch padding) are ignored."""
        logits = outputs[0] if isinstance(outputs, tuple | list) else outputs
        logits = np.asarray(logits, dtype=np.float32)
        gesa_features = "candidate_spans" in features.column_names
        texts = list(features["candidate_texts"])
        if gesa_features:
            spans = list(features["candidate_spans"])
        else:  # one XH graph per query: each candidate string's first mention in its passage
            spans = [
                first_mentions(row["passage"], [(span["start"], span["end"]) for span in row["entity_spans"] or []],
                               feature_texts)
                for row, feature_texts in zip(examples, texts, strict=True)
            ]  # fmt: skip
        ranked = ranked_answers(
            list(features["example_id"]),
            texts,
            logits,
            candidate_spans=spans,
            first_candidate=1 if gesa_features else 0,
            caller="rank_answers",
        )
        return {query_id: ranked[query_id] for query_id in examples["id"] if query_id in ranked}

    def score(self, predictions: Mapping[str, Any], examples: Dataset) -> dict[str, float]:
        references = {query_id: list(answers) for query_id, answers in zip(examples["id"], examples["answers"],
                                                                            strict=True) if answers}  # fmt: skip
        answers = {query_id: ranked[0]["answer"] for query_id, ranked in predictions.items() if ranked}
        return metric_module("record").compute_record_scores(
            {k: answers[k] for k in references if k in answers}, references
        )

    def write_predictions(
        self, predictions: Mapping[str, Any], examples: Dataset, output_dir: str | Path, split: str, data_args: Any
    ) -> Path:
        """``eval_predictions.json``: ``{query id: answer}``; ``predict_predictions.json``: the top
        ``--predict_top_k`` answers per query, best first."""
        path = Path(output_dir) / f"{split}_predictions.json"
        if split == "eval":
            write_json_atomically(path, {query_id: ranked[0]["answer"] for query_id, ranked in predictions.items()})
        else:
            write_json_atomically(
                path, {key: ranked[: data_args.predict_top_k] for key, ranked in predictions.items()}
            )
        return path

    # ------------------------------------------------------------------------------------------- model card

    def card_kwargs(self, model_args: Any, data_args: Any, args: Any, files: Mapping[str, Path]) -> dict[str, Any]:
        from dataclasses import asdict

        return dict(
            base_model=model_args.model_name_or_path,
            dataset_name=data_args.dataset_name,
            dataset_config_name=data_args.dataset_config_name,
            train_files=[str(files["train"])] if "train" in files else [],
            eval_files=[str(files["validation"])] if "validation" in files else [],
            variant=model_args.variant,
            training_args=args.to_dict(),
            data_args=asdict(data_args),
            world_size=args.world_size,
            repo_id=args.hub_model_id or args.output_dir,
            model_name=(args.hub_model_id or Path(args.output_dir).resolve().name).split("/")[-1],
        )

    def write_model_card(self, output_dir: str, card_kwargs: Mapping[str, Any]) -> bool:
        kwargs = dict(card_kwargs)
        if kwargs.get("model_name") is None:
            kwargs.pop("model_name", None)
        write_model_card(output_dir, **kwargs)
        return True


class XhMapFunction:
    """Batched ``Dataset.map`` function: rows (one per query) -> XH graph columns (``encode_record_graphs``)."""

    def __init__(self, processor: Any) -> None:
        self.processor = processor

    def __call__(self, batch: dict[str, list]) -> dict[str, list]:
        keys = list(batch)
        rows = [dict(zip(keys, values, strict=True)) for values in zip(*(batch[key] for key in keys), strict=True)]
        graphs = self.processor.encode_record_graphs(rows)
        names = list(dict.fromkeys(name for graph in graphs for name in graph))
        missing = [name for name in names if any(name not in graph for graph in graphs)]
        if missing:  # e.g. `labels`/`answers` for some queries only: a split must have answers for all or none
            raise ValueError(
                f"XH graphs of one split disagree on the columns {missing} (answers for some queries only?)"
            )
        return {name: [graph[name] for graph in graphs] for name in names}


RECORD = RecordTask()


__all__ = ["RECORD", "TINY_GESA", "RecordTask", "XhMapFunction", "flatten_records", "one_row_per_query"]
