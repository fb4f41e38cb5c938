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
"""ReCoRD data for the Trainer: the files checked and read as one row per query (any accepted shape, with where
each query was read), the variant's processor, collator and features, the evaluation's window merge and metric
(``RecordEvaluator``) and ``--do_predict``'s ranked answers. Every bad input is one ``ScriptArgumentError`` naming the
flag, the file and line and the fix."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
from datasets import Dataset, load_dataset
from transformers import EvalPrediction, PreTrainedTokenizerBase, Trainer, TrainingArguments

from .answers_gesa import first_mentions, ranked_answers
from .processing_gesa import LUKE_MASK_ENTITY_ID, GesaProcessor
from .records_gesa import (
    INCLUSIVE_END_KEY,
    SOURCE_KEY,
    CheckedFile,
    RecordError,
    check_record_file,
    to_record_examples,
)
from .registry_gesa import VARIANTS
from .training_gesa import ScriptArgumentError, featurise_rows

DATA_FILE_FLAGS = {"train": "--train_file", "validation": "--validation_file", "test": "--test_file"}


def data_files(
    data_args: Any, args: TrainingArguments, sample_files: Mapping[str, Path] | None = None
) -> dict[str, Path]:
    """The local files per split (``test``: ``--test_file`` with ``--do_predict``); ``sample_files`` (``{"train": F,
    "validation": F}``, the script's embedded sample) when neither a Hub dataset nor train/validation files are given."""
    test = {"test": Path(data_args.test_file)} if args.do_predict and data_args.test_file else {}
    if data_args.dataset_name:
        return test
    if sample_files is not None and not (data_args.train_file or data_args.validation_file):
        return {**sample_files, **test}
    files = dict(test)
    for split, path, needed in (
        ("train", data_args.train_file, args.do_train),
        ("validation", data_args.validation_file, args.do_eval),
    ):
        if needed and path is None:
            raise ScriptArgumentError(f"--do_{'train' if split == 'train' else 'eval'} needs --{split}_file")
        if path is not None:
            files[split] = Path(path)
    return files


def sniff_json_file(path: Path, flag: str = "--validation_file") -> CheckedFile:
    """Check every item of ``path`` (given as ``flag``) with the shared ReCoRD reader (``records_gesa``): one known
    shape, structure, types, spans and answer offsets in the shape's end convention. A problem is a
    ``ScriptArgumentError`` naming the flag, the file, the line (or item), the example and the fix."""
    try:
        return check_record_file(path, where=f"{flag} {path}", unique_ids=flag != DATA_FILE_FLAGS["train"])
    except RecordError as error:
        raise ScriptArgumentError(str(error)) from None


def check_data_files(files: dict[str, Path]) -> dict[str, CheckedFile]:
    """``sniff_json_file`` for every split's file (all of them before anything is loaded)."""
    return {split: sniff_json_file(path, DATA_FILE_FLAGS[split]) for split, path in files.items()}


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
    ``record_location`` (where the query was read: the flag, the file and the line) and ``record_inclusive_end`` (the file wrote
    inclusive ends) let the processor's errors name the line and the right fix. ``sources``: per dataset row (from
    ``check_record_file``) or a prefix (Hub datasets: ``"... row N"``). A bad item is a ``ValueError`` naming it.
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


def load_queries(
    data_args: Any,
    model_args: Any,
    args: TrainingArguments,
    fields: dict[str, CheckedFile] | None = None,
    files: dict[str, Path] | None = None,
) -> dict[str, Dataset]:
    """The raw splits as one row per query (``flatten_records``), truncated to ``--max_*_samples``.

    ``fields``: ``check_data_files``'s answer for the local files, when the caller has checked them already;
    ``files``: ``data_files``'s answer (computed without an embedded sample otherwise).
    """
    splits: dict[str, Dataset] = {}
    sources: dict[str, str] = {}
    row_sources: dict[str, list[str] | str] = {}
    if data_args.dataset_name:
        raw = load_dataset(
            data_args.dataset_name,
            data_args.dataset_config_name,
            cache_dir=model_args.cache_dir,
            token=model_args.token,
        )
        for split, needed in (("train", args.do_train), ("validation", args.do_eval)):
            if needed:
                if split not in raw:
                    raise ScriptArgumentError(f"dataset {data_args.dataset_name} has no {split!r} split ({list(raw)})")
                splits[split] = raw[split]
                sources[split] = f"--dataset_name {data_args.dataset_name} ({split} split)"
                row_sources[split] = f"{sources[split]}, row"
    else:
        files = data_files(data_args, args) if files is None else files
        if fields is None:
            fields = check_data_files(files)  # every file checked first
        for split, path in files.items():
            if (split == "train" and args.do_train) or (split == "validation" and args.do_eval):
                sources[split] = f"{DATA_FILE_FLAGS[split]} {path}"
                row_sources[split] = [f"{sources[split]}, {location}" for location in fields[split].locations]
                splits[split] = load_dataset(
                    "json",
                    data_files=str(path),
                    field=fields[split].field,
                    split="train",
                    cache_dir=model_args.cache_dir,
                )
    limits = {"train": data_args.max_train_samples, "validation": data_args.max_eval_samples}
    queries = {}
    for split, raw_split in splits.items():
        try:
            flat = raw_split.map(
                flatten_records,
                batched=True,
                with_indices=True,
                fn_kwargs={"sources": row_sources[split], "location_columns": (SOURCE_KEY, INCLUSIVE_END_KEY)},
                remove_columns=raw_split.column_names,
                num_proc=data_args.preprocessing_num_workers,
                load_from_cache_file=not data_args.overwrite_cache,
                desc=f"One row per query ({split})",
            )
        except ValueError as error:
            raise ScriptArgumentError(prefixed(sources[split], error)) from None
        if limits[split] is not None:
            flat = flat.select(range(min(limits[split], len(flat))))
        if len(flat) == 0:
            raise ScriptArgumentError(f"the {split} data holds no query")
        if split == "train":
            check_training_answers(flat)
        queries[split] = flat
    if "validation" in queries:
        check_references(queries["validation"])
    return queries


def check_split_answers(fields: dict[str, CheckedFile], args: TrainingArguments) -> None:
    """A training file needs gold answers on every query (one without would train as all negative), an evaluation
    file too (there is nothing to score against otherwise): the first query without names the file and line."""
    if args.do_train and "train" in fields and fields["train"].unanswered is not None:
        raise ScriptArgumentError(
            f"{fields['train'].unanswered} has no gold answer ('answers' missing or empty): it would train as all "
            "negative; give its answers or remove it (a test split cannot train)"
        )
    if args.do_eval and "validation" in fields and fields["validation"].unanswered is not None:
        raise ScriptArgumentError(
            f"{fields['validation'].unanswered} has no gold answer to evaluate against (a test split?); give its "
            "answers or remove it"
        )


def prefixed(where: str, error: Exception) -> str:
    """The first line of ``error`` behind ``where``, unless it names ``where`` already (errors of the record reader
    start with the flag, the file and the line)."""
    message = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return message if message.startswith(where) else f"{where}: {message}"


def check_training_answers(queries: Dataset) -> None:
    """Every training query needs its gold answers: one without would train as all negative."""
    for query_id, answers, source in zip(queries["id"], queries["answers"], queries[SOURCE_KEY], strict=True):
        if not answers:
            where = f"{source}: " if source else ""
            raise ScriptArgumentError(
                f"{where}training query {query_id!r} has no gold answer ('answers' missing or empty): it would train "
                "as all negative; give its answers or remove it (a test split cannot train)"
            )


def check_references(queries: Dataset) -> None:
    """Evaluation needs unique query ids and at least one gold answer per query."""
    ids = list(queries["id"])
    if len(set(ids)) != len(ids):
        duplicate = next(query_id for query_id in ids if ids.count(query_id) > 1)
        raise ScriptArgumentError(f"the evaluation data repeats the query id {duplicate!r}; ids must be unique")
    for query_id, answers in zip(ids, list(queries["answers"]), strict=True):
        if not answers:
            raise ScriptArgumentError(f"evaluation query {query_id!r} has no gold answer (a test split?)")


def make_processor(tokenizer: PreTrainedTokenizerBase, data_args: Any, variant: str = "gesa") -> Any:
    """The variant's ReCoRD processor with the data arguments (``[HL] [PLC] [ENT]`` are added to ``tokenizer``).

    ``GesaProcessor`` windows for gesa/luke/kar/ernie; for xh, ``XhProcessor`` graphs (one per query) whose nodes are
    ``--max_seq_length`` word tokens at most, with ``--max_query_length`` query tokens.
    """
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


def make_collator(variant: str, processor: Any) -> Any:
    """The training/evaluation collator: GESA's (+ the KAR/ERNIE knowledge inputs), or XH's graph collator."""
    spec = VARIANTS[variant]
    if spec.uses_gesa_features:
        return spec.wrap_collator(processor.get_data_collator(), processor.tokenizer)
    return processor.get_data_collator()


def featurise(processor: Any, variant: str, queries: Dataset, data_args: Any, split: str) -> Dataset:
    """One feature per window (GESA processor) or per query graph (XH), with ``example_id`` and ``candidate_texts``."""
    if VARIANTS[variant].uses_gesa_features:
        function = processor.map_function
    else:
        function = XhMapFunction(processor)
    return featurise_rows(queries, function, split, data_args.preprocessing_num_workers, not data_args.overwrite_cache)


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


def check_ner_available(data_args: Any, unannotated: bool) -> None:
    """The spaCy NER pipeline, loaded now when some query needs it (``ScriptArgumentError`` with the install line)."""
    if data_args.candidate_source == "annotations" or not (data_args.candidate_source == "ner" or unannotated):
        return
    from .candidates_gesa import ner_pipeline

    try:
        ner_pipeline(data_args.spacy_model)
    except (ImportError, OSError, ValueError) as error:
        raise ScriptArgumentError(f"--spacy_model {data_args.spacy_model}: {str(error).splitlines()[0]}") from None


class RecordEvaluator:
    """``compute_metrics`` for ``Trainer``: merge window scores per query, then ``score`` (the official ReCoRD metric,
    ``metrics/record``: ``compute_record_scores(predictions, references)``).

    A feature is a window (GESA features: logits ``(B, E)`` over its ``candidate_texts``) or, for ``--variant xh``, a
    query's whole graph (logits ``(G, C)`` over the graph's ``candidate_texts``): ``GesaProcessor.rank_answers`` takes
    both, one row per feature; scores past a row's candidates (batch padding) are ignored. The evaluation features keep their order through ``Trainer.evaluate`` (sequential sampler; the distributed
    gather drops the padding duplicates), so row ``i`` of the predictions belongs to feature ``i``.
    """

    def __init__(
        self,
        features: Dataset,
        queries: Dataset,
        score: Callable[[dict[str, str], dict[str, list[str]]], dict[str, float]],
    ) -> None:
        self.score = score
        self.example_ids = list(features["example_id"])
        self.candidate_texts = list(features["candidate_texts"])
        self.references = {
            query_id: list(answers) for query_id, answers in zip(queries["id"], queries["answers"], strict=True)
        }
        self.predictions: dict[str, str] = {}

    def __call__(self, eval_prediction: EvalPrediction) -> dict[str, float]:
        logits = eval_prediction.predictions
        if isinstance(logits, tuple | list):
            logits = logits[0]
        logits = np.asarray(logits, dtype=np.float32)
        if logits.shape[0] != len(self.example_ids):
            raise RuntimeError(f"got scores for {logits.shape[0]} features, expected {len(self.example_ids)}")
        # the one merge of window scores (answers_gesa), as the pipeline and --do_predict rank; "" slots are no candidate
        ranked = GesaProcessor.rank_answers(self.example_ids, self.candidate_texts, logits, first_candidate=0)
        merged = {query_id: answers[0]["answer"] for query_id, answers in ranked.items()}
        self.predictions = {query_id: merged[query_id] for query_id in self.references if query_id in merged}
        return self.score(self.predictions, self.references)


def load_test_queries(data_args: Any, model_args: Any, checked: CheckedFile) -> Dataset:
    """``--test_file`` (``checked`` by ``check_data_files``) as one row per query (``flatten_records``); gold answers
    may be absent."""
    path = Path(data_args.test_file)
    raw = load_dataset(
        "json", data_files=str(path), field=checked.field, split="train", cache_dir=model_args.cache_dir
    )
    sources = [f"--test_file {path}, {location}" for location in checked.locations]
    try:
        return raw.map(
            flatten_records,
            batched=True,
            with_indices=True,
            fn_kwargs={"sources": sources, "location_columns": (SOURCE_KEY, INCLUSIVE_END_KEY)},
            remove_columns=raw.column_names,
            load_from_cache_file=not data_args.overwrite_cache,
            desc="One row per query (test)",
        )
    except ValueError as error:
        raise ScriptArgumentError(prefixed(f"--test_file {path}", error)) from None


def predict(
    trainer: Trainer,
    processor: Any,
    variant: str,
    data_args: Any,
    model_args: Any,
    checked: CheckedFile,
) -> dict[str, list[dict[str, Any]]]:
    """Top ``--predict_top_k`` answers per query of ``--test_file`` (``Trainer.predict``, with its progress bar),
    merged over windows as the evaluation merges them and scored as the pipeline scores them
    (``answers_gesa.ranked_answers``: ``score`` is the sigmoid of the merged logit). Written to ``predict_predictions.json`` as ``{query_id: [{answer, score,
    start, end}, ...]}``, best first (``start``/``end``: the answer's first mention in the passage)."""
    queries = load_test_queries(data_args, model_args, checked)
    uses_gesa_features = VARIANTS[variant].uses_gesa_features
    function = (
        functools.partial(processor.map_function, return_candidate_spans=True)
        if uses_gesa_features
        else XhMapFunction(processor)
    )
    try:
        features = queries.map(
            function,
            batched=True,
            remove_columns=queries.column_names,
            load_from_cache_file=not data_args.overwrite_cache,
            desc="Featurising test",
        )
    except ValueError as error:
        raise ScriptArgumentError(prefixed(f"--test_file {data_args.test_file}", error)) from None
    if uses_gesa_features:
        spans = list(features["candidate_spans"])
    else:  # one XH graph per query: each candidate string's first mention in its passage
        spans = [
            first_mentions(passage, [(span["start"], span["end"]) for span in row_spans or []], texts)
            for passage, row_spans, texts in zip(
                queries["passage"], queries["entity_spans"], features["candidate_texts"], strict=True
            )
        ]
    compute_metrics, trainer.compute_metrics = trainer.compute_metrics, None  # test answers are optional
    try:
        logits = trainer.predict(features, metric_key_prefix="predict").predictions
    finally:
        trainer.compute_metrics = compute_metrics
    if isinstance(logits, tuple | list):
        logits = logits[0]
    ranked = ranked_answers(
        list(features["example_id"]),
        list(features["candidate_texts"]),
        np.asarray(logits, dtype=np.float32),
        candidate_spans=spans,
        first_candidate=1 if uses_gesa_features else 0,
        top_k=data_args.predict_top_k,
        caller="rank_answers",
    )
    return {query_id: ranked[query_id] for query_id in queries["id"] if query_id in ranked}


# ----------------------------------------------------------------------------------------------- main


__all__ = [
    "DATA_FILE_FLAGS",
    "RecordEvaluator",
    "XhMapFunction",
    "check_data_files",
    "check_ner_available",
    "check_references",
    "check_split_answers",
    "check_training_answers",
    "data_files",
    "featurise",
    "flatten_records",
    "load_queries",
    "load_test_queries",
    "make_collator",
    "make_processor",
    "predict",
    "prefixed",
    "sniff_json_file",
]
