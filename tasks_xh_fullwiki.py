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
"""HotpotQA in the FullWiki setting (paper 5.1, A.1): ``run_multihop.py --task hotpotqa --variant xh
--hotpot_setting fullwiki --corpus_dir DIR``, with ``--system paper`` or ``--system joint``.

Every question's paragraphs come from the Wikipedia abstracts in ``--corpus_dir`` (``records_abstracts``) instead of
its file's ``context``: ``processing_fullwiki_xh.FullWikiRetriever`` (BM25 + title-named articles, re-ranked, expanded
along hyperlinks; edges along hyperlinks, node text with anchor text). The re-ranker is the paper's BERT IR on this
project's backbone: ``XhForSupportingFacts`` (A.3.2's model, each document read alone, ``xh_num_hop_layers=0``) with
only its relevance head trained (binary cross-entropy on ``[CLS]`` of ``question </s> </s> title: paragraph``,
supporting paragraphs 1, the BM25 hits that are not 0, ``--ranker_negatives`` per question). It is trained on
``--train_file`` first and saved under ``<output_dir>/ranker``; a later run whose ``--model_name_or_path`` holds
``ranker/`` re-uses it.

Training graphs hold their supporting paragraphs (put first when retrieval missed them); evaluation and test graphs
hold only what retrieval found. ``--system paper`` expands only the questions its classifier types as bridge (A.1:
comparison questions are not expanded) and trains each type on its own graphs; ``--system joint`` expands every
question (its one model has no question type). ``write_abstracts_corpus`` writes HotpotQA paragraphs in the abstracts
layout, hyperlinks where a paragraph names another one's title (the tests' and demos' corpora).

Flat module: imports its siblings relatively, third-party packages otherwise.
"""

from __future__ import annotations

import bz2
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from transformers import PreTrainedModel, TrainingArguments

from .inputs_gesa import InputError
from .loading_gesa import load_tokenizer
from .processing_fullwiki_xh import FullWikiRetriever
from .processing_xh_tasks import XhTaskProcessor
from .records_abstracts import AbstractsCorpus, abstracts_line, read_abstracts_corpus
from .records_xh import read_hotpot_file
from .structure_gesa import LUKE_MASK_ENTITY_ID
from .tasks_base import file_error
from .tasks_xh import HotpotQATask
from .tasks_xh_paper import SUPPORTING_ONLY, reranker_model, run_component, train_component
from .training_gesa import ScriptArgumentError

HOTPOT_SETTINGS = ("distractor", "fullwiki")
RANKER = "ranker"  # the re-ranker's subfolder of a run


class Reranker:
    """The BERT-IR re-ranker: ``reranker(questions, titles)`` -> per question the relevance logit of each of its
    articles, each read alone.

    ``chunk`` articles go into one graph (independent nodes: ``xh_num_hop_layers=0``), ``batch_size`` graphs a step.
    """

    def __init__(
        self,
        model: PreTrainedModel,
        processor: XhTaskProcessor,
        corpus: AbstractsCorpus,
        batch_size: int = 8,
        chunk: int = 8,
    ) -> None:
        self.model, self.processor, self.corpus = model, processor, corpus
        self.batch_size, self.chunk = batch_size, chunk

    def features(
        self, rows: Sequence[Mapping[str, Any]], candidates: Sequence[Sequence[str]], labelled: bool
    ) -> list[dict[str, Any]]:
        """Per row its candidate articles as graphs of at most ``chunk`` documents; ``node_labels`` 1 on the row's
        supporting paragraphs (``labelled``) or -100, no sentence label (only the relevance head learns)."""
        pseudo, labels, none = [], [], {"title": [], "sent_id": []}
        for row, titles in zip(rows, candidates, strict=True):
            gold = set(row.get("supporting_facts", {}).get("title", [])) if labelled else set()
            for begin in range(0, len(titles), self.chunk):
                part = list(titles[begin : begin + self.chunk])
                context = {"title": part, "sentences": [self.corpus.articles[t].sentences for t in part]}
                pseudo.append({"id": row.get("id", ""), "question": row["question"], "answer": None,
                               "context": context, "supporting_facts": none})  # fmt: skip
                labels.append([int(t in gold) if labelled else -100 for t in part])
        features = self.processor.encode_hotpot_rows(pseudo)
        for feature, node_labels in zip(features, labels, strict=True):
            feature["node_labels"] = node_labels
            feature["sentence_labels"] = [[-100] * len(starts) for starts in feature["sentence_starts"]]
            for name in SUPPORTING_ONLY:
                feature.pop(name, None)
        return features

    def __call__(self, questions: Sequence[str], candidates: Sequence[Sequence[str]]) -> list[list[float]]:
        """Per question the relevance logit of each of its candidate articles (one encode call for all)."""
        features = self.features([{"question": q} for q in questions], candidates, labelled=False)
        outputs = run_component(self.model, features, self.processor.get_data_collator(), self.batch_size)
        logits = iter([float(x) for f, out in zip(features, outputs, strict=True)
                       for x in out["relevance_logits"][0, : len(f["input_ids"])]])  # fmt: skip
        return [[next(logits) for _ in titles] for titles in candidates]


def training_candidates(
    retriever: FullWikiRetriever, rows: Sequence[Mapping[str, Any]], negatives: int
) -> list[list[str]]:
    """Per training question its supporting paragraphs and its ``negatives`` best BM25 hits that are not."""
    most = max((len(set(row["supporting_facts"]["title"])) for row in rows), default=0)
    hits = retriever.index.search([str(row["question"]) for row in rows], negatives + most)
    candidates = []
    for row, found in zip(rows, hits, strict=True):
        gold = list(dict.fromkeys(row["supporting_facts"]["title"]))
        missing = [title for title in gold if title not in retriever.corpus]
        if missing:
            raise InputError(
                f"supporting paragraphs {missing} are not in the corpus: the re-ranker has no positive to learn",
                row.get("location"),
                record="HotpotQA question",
                record_id=row.get("id"),
                fix="give --corpus_dir the abstracts that hold every training question's paragraphs",
            )
        others = [retriever.titles[i] for i, _ in found if retriever.titles[i] not in gold][:negatives]
        candidates.append(gold + others)
    return candidates


def _check_flags(model_args: Any, data_args: Any) -> None:
    if data_args.task != "hotpotqa":
        raise ScriptArgumentError(f"--hotpot_setting fullwiki is for --task hotpotqa, not --task {data_args.task}")
    if model_args.variant != "xh":
        raise ScriptArgumentError(f"--hotpot_setting fullwiki is Transformer-XH's: use --variant xh, not "
                                  f"{model_args.variant}")  # fmt: skip
    if not data_args.corpus_dir:
        raise ScriptArgumentError(
            "--hotpot_setting fullwiki needs --corpus_dir: the folder of HotpotQA's Wikipedia abstracts "
            "(enwiki-20171001-pages-meta-current-withlinks-abstracts: AA/wiki_00.bz2, ...)"
        )
    if model_args.model_name_or_path is None:
        raise ScriptArgumentError("--hotpot_setting fullwiki needs --model_name_or_path: a LUKE checkpoint or a run")
    for flag in ("retrieval_candidates", "retrieval_keep"):
        if getattr(data_args, flag) < 1:
            raise ScriptArgumentError(f"--{flag} must be at least 1, got {getattr(data_args, flag)}")
    for flag in ("retrieval_expand", "ranker_negatives"):
        if getattr(data_args, flag) < 0:
            raise ScriptArgumentError(f"--{flag} must be at least 0, got {getattr(data_args, flag)}")


def build_fullwiki(model_args: Any, data_args: Any, args: TrainingArguments) -> FullWikiRetriever:
    """The corpus read, the re-ranker loaded from ``<model_name_or_path>/ranker`` or converted from LUKE, trained on
    ``--train_file`` (``--do_train``; saved to ``<output_dir>/ranker``), and the retriever over them."""
    _check_flags(model_args, data_args)
    try:
        corpus = read_abstracts_corpus(data_args.corpus_dir, "--corpus_dir")
    except InputError as error:
        raise ScriptArgumentError(str(error)) from None
    train_rows: list[dict[str, Any]] = []
    if args.do_train:
        if data_args.train_file is None:
            raise ScriptArgumentError("--do_train in --hotpot_setting fullwiki needs --train_file")
        try:
            train_rows = read_hotpot_file(data_args.train_file)[: data_args.max_train_samples]
        except InputError as error:
            raise ScriptArgumentError(file_error("--train_file", Path(data_args.train_file), error)) from None
    path = model_args.model_name_or_path
    tokenizer = load_tokenizer(model_args.tokenizer_name or path, cache_dir=model_args.cache_dir)
    processor = XhTaskProcessor(
        tokenizer,
        max_node_length=data_args.max_seq_length,
        max_query_length=data_args.max_query_length,
        entity_mask_id=LUKE_MASK_ENTITY_ID,
    )
    model = reranker_model(model_args, tokenizer, RANKER, bool(train_rows),
                           "--hotpot_setting fullwiki needs a trained re-ranker")  # fmt: skip
    reranker = Reranker(model, processor, corpus, batch_size=args.per_device_eval_batch_size)
    retriever = FullWikiRetriever(corpus, reranker, candidates=data_args.retrieval_candidates,
                                  keep=data_args.retrieval_keep, expand=data_args.retrieval_expand)  # fmt: skip
    if train_rows:
        try:
            candidates = training_candidates(retriever, train_rows, data_args.ranker_negatives)
        except InputError as error:
            raise ScriptArgumentError(file_error("--train_file", Path(data_args.train_file), error)) from None
        features = reranker.features(train_rows, candidates, labelled=True)
        reranker.model = train_component(model, features, processor.get_data_collator(), args, RANKER)
    reranker.model.to(args.device)
    return retriever


def retrieve_split(
    retriever: FullWikiRetriever, rows: Sequence[Mapping[str, Any]], expand: bool | Sequence[bool], where: str,
    include_gold: bool,
) -> list[dict[str, Any]]:  # fmt: skip
    """``retriever.retrieve`` with a missing supporting paragraph as the flag's one error line."""
    try:
        return retriever.retrieve(rows, expand=expand, include_gold=include_gold)
    except InputError as error:
        raise ScriptArgumentError(f"{where}: {error}") from None


def _limit(data_args: Any, split: str) -> int | None:
    """The split's ``--max_*_samples`` (retrieval runs on the questions kept only)."""
    name = {"train": "max_train_samples", "validation": "max_eval_samples"}.get(split, "max_predict_samples")
    return getattr(data_args, name, None)


@dataclass
class FullWikiHotpotQATask(HotpotQATask):
    """``HOTPOTQA`` (``--system joint``) with every question's graph retrieved from the corpus (every question
    expanded along hyperlinks; training graphs with their supporting paragraphs)."""

    retriever: FullWikiRetriever | None = field(default=None, repr=False)
    description: str = "HotpotQA FullWiki with Transformer-XH: graphs retrieved from the Wikipedia abstracts"

    def read_file(self, path: Path, where: str, split: str, data_args: Any, model_args: Any) -> list[dict]:
        rows = self.limit(super().read_file(path, where, split, data_args, model_args), _limit(data_args, split))
        return retrieve_split(self.retriever, rows, True, where, include_gold=split == "train")

    def read_hub(self, data_args: Any, model_args: Any, split: str) -> list[dict[str, Any]]:
        rows = self.limit(super().read_hub(data_args, model_args, split), _limit(data_args, split))
        where = f"--dataset_name {data_args.dataset_name} ({split})"
        return retrieve_split(self.retriever, rows, True, where, include_gold=split == "train")


# ----------------------------------------------------------------------------------------- a corpus from paragraphs

_WORD_RUN = r"(?<!\w){}(?!\w)"


def abstracts_from_paragraphs(paragraphs: Iterable[tuple[str, Sequence[str]]]) -> list[dict[str, Any]]:
    """Articles in the abstracts layout from ``(title, sentences)`` pairs (the first of a repeated title kept), with a
    hyperlink wherever a sentence names another article's title (without a trailing parenthetical), longest first."""
    articles: dict[str, list[str]] = {}
    for title, sentences in paragraphs:
        articles.setdefault(title, list(sentences))
    names = sorted(((re.sub(r"\s*\([^)]*\)\s*$", "", t), t) for t in articles), key=lambda pair: -len(pair[0]))
    patterns = [(re.compile(_WORD_RUN.format(re.escape(name))), title) for name, title in names if name.strip()]
    lines = []
    for index, (title, sentences) in enumerate(articles.items()):
        links: dict[int, list[tuple[int, int, str]]] = {}
        for number, sentence in enumerate(sentences):
            taken: list[tuple[int, int, str]] = []
            for pattern, target in patterns:
                if target == title:
                    continue
                for match in pattern.finditer(sentence):
                    if all(match.end() <= a or match.start() >= b for a, b, _ in taken):
                        taken.append((match.start(), match.end(), target))
            if taken:
                links[number] = taken
        lines.append(abstracts_line(index, title, sentences, links))
    return lines


def hotpot_paragraphs(rows: Iterable[Mapping[str, Any]]) -> list[tuple[str, list[str]]]:
    """Every ``(title, sentences)`` of HotpotQA questions (official or Hub layout)."""
    pairs = []
    for row in rows:
        context = row["context"]
        if isinstance(context, Mapping):
            pairs += list(zip(context["title"], context["sentences"], strict=True))
        else:
            pairs += [(title, sentences) for title, sentences in context]
    return pairs


def write_abstracts_corpus(
    directory: str | Path, articles: Sequence[Mapping[str, Any]], per_file: int = 100, compress: bool = True
) -> Path:
    """``articles`` (``abstracts_from_paragraphs``) as the abstracts folder: ``AA/wiki_00.bz2``, ... (``per_file``
    articles a file, ``compress=False``: plain ``wiki_00``)."""
    directory = Path(directory)
    for number, begin in enumerate(range(0, len(articles), per_file)):
        folder = directory / ("A" + chr(ord("A") + number // 100))
        folder.mkdir(parents=True, exist_ok=True)
        text = "".join(json.dumps(a, ensure_ascii=False) + "\n" for a in articles[begin : begin + per_file])
        name = f"wiki_{number % 100:02d}"
        if compress:
            (folder / f"{name}.bz2").write_bytes(bz2.compress(text.encode("utf-8")))
        else:
            (folder / name).write_text(text, encoding="utf-8")
    return directory


__all__ = [
    "HOTPOT_SETTINGS",
    "RANKER",
    "FullWikiHotpotQATask",
    "Reranker",
    "abstracts_from_paragraphs",
    "build_fullwiki",
    "hotpot_paragraphs",
    "retrieve_split",
    "training_candidates",
    "write_abstracts_corpus",
]
