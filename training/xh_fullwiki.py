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
--hotpot_setting fullwiki --corpus_dir DIR``, with ``--system paper`` (``FullWikiPaperHotpotQATask``) or ``--system
joint`` (``FullWikiHotpotQATask``), both tasks of the shared driver: the corpus is read and indexed with the data,
before any model loads; the re-ranker is the run's ``ranker`` component (the driver's ``ComponentTrainer``).

Every question's paragraphs come from the Wikipedia abstracts in ``--corpus_dir`` (``training.abstracts``) instead of
its file's ``context``: ``training.fullwiki_graphs.FullWikiRetriever`` (BM25 + title-named articles, re-ranked, expanded
along hyperlinks; edges along hyperlinks, node text with anchor text). The re-ranker is the paper's BERT IR on this
project's backbone: ``XhForSupportingFacts`` (A.3.2's model, each document read alone, ``xh_num_hop_layers=0``) with
only its relevance head trained (binary cross-entropy on ``[CLS]`` of ``question </s> </s> title: paragraph``,
supporting paragraphs 1, the BM25 hits that are not 0, ``--ranker_negatives`` per question). It is trained on
``--train_file`` first and saved under ``<output_dir>/ranker``; a later run whose ``--model_name_or_path`` holds
``ranker/`` re-uses it. A FullWiki question file's ``context`` is not read (``HotpotQATask.reads_context``).

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

from datasets import Dataset
from transformers import PreTrainedModel

from ..inputs_gesa import InputError
from ..processing_xh_tasks import SUPPORTING_ONLY, XhTaskProcessor
from .abstracts import AbstractsCorpus, abstracts_line, read_abstracts_corpus
from .fullwiki_graphs import FullWikiRetriever
from .machinery import ScriptArgumentError
from .retrieval import RerankedTask, TextReranker
from .task import file_error
from .xh import HotpotQATask
from .xh_paper import PaperHotpotQATask

HOTPOT_SETTINGS = ("distractor", "fullwiki")
RANKER = "ranker"  # the re-ranker's subfolder of a run


class Reranker(TextReranker):
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
        super().__init__(model, processor, batch_size, chunk)
        self.corpus = corpus

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
        logits = iter(self.logits(self.features([{"question": q} for q in questions], candidates, labelled=False)))
        return [[next(logits) for _ in titles] for titles in candidates]


def training_candidates(
    retriever: FullWikiRetriever, rows: Sequence[Mapping[str, Any]], negatives: int
) -> list[list[str]]:
    """Per training question its supporting paragraphs (each in the corpus: ``FullWikiRetrieval.check``) and its
    ``negatives`` best BM25 hits that are not."""
    most = max((len(set(row["supporting_facts"]["title"])) for row in rows), default=0)
    hits = retriever.index.search([str(row["question"]) for row in rows], negatives + most)
    candidates = []
    for row, found in zip(rows, hits, strict=True):
        gold = [title for title in dict.fromkeys(row["supporting_facts"]["title"]) if title in retriever.corpus]
        others = [retriever.titles[i] for i, _ in found if retriever.titles[i] not in gold][:negatives]
        candidates.append(gold + others)
    return candidates


def check_fullwiki_flags(model_args: Any, data_args: Any) -> None:
    """The FullWiki flags (``ScriptArgumentError`` naming the flag), before anything is read."""
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


class FullWikiRetrieval:
    """What both FullWiki systems share, in the driver's order: the corpus read and indexed and the training
    questions' paragraphs found in it (``check``, before any model loads), the BERT-IR re-ranker (``reranker``:
    loaded, trained and put to use by ``FullWikiSetting``), and the questions' graphs retrieved (``retrieve``)."""

    def __init__(self) -> None:
        self.retriever: FullWikiRetriever | None = None
        self.reranker: Reranker | None = None

    def check(self, examples: Mapping[str, Any], data_args: Any) -> None:
        """The corpus read and its BM25 index built (a corpus with no word to index is named with the fix), and every
        training question's supporting paragraphs found in it."""
        try:
            corpus = read_abstracts_corpus(data_args.corpus_dir, "--corpus_dir")
        except InputError as error:
            raise ScriptArgumentError(str(error)) from None
        try:
            self.retriever = FullWikiRetriever(corpus, self._unranked, candidates=data_args.retrieval_candidates,
                                               keep=data_args.retrieval_keep, expand=data_args.retrieval_expand)  # fmt: skip
        except ValueError as error:
            raise ScriptArgumentError(
                f"--corpus_dir {data_args.corpus_dir}: its {len(corpus.articles)} articles cannot be searched: {error}; "
                "give the abstracts folder whose articles carry their title and text"
            ) from None
        where = f"--train_file {data_args.train_file}"
        for row in examples.get("train", []):
            missing = [title for title in dict.fromkeys(row["supporting_facts"]["title"]) if title not in corpus]
            if missing:
                raise ScriptArgumentError(file_error(where, Path(str(data_args.train_file)), InputError(
                    f"supporting paragraphs {missing} are not in --corpus_dir: the re-ranker and the answer model "
                    "have no positive to learn", row.get("location"), record="HotpotQA question",
                    record_id=row.get("id"), fix="give --corpus_dir the abstracts that hold every training "
                    "question's paragraphs")))  # fmt: skip

    @staticmethod
    def _unranked(questions: Sequence[str], candidates: Sequence[Sequence[str]]) -> list[list[float]]:
        raise RuntimeError("the FullWiki re-ranker is used before it is loaded (FullWikiSetting.load_ranker)")

    def retrieve(self, rows: Sequence[Mapping[str, Any]], expand: bool | Sequence[bool], split: str) -> list[dict]:
        """``rows`` with their retrieved graphs (training rows: with their supporting paragraphs)."""
        where = {"train": "--train_file", "validation": "--validation_file"}.get(split, "--test_file")
        return retrieve_split(self.retriever, rows, expand, where, include_gold=split == "train")


def retrieve_split(
    retriever: FullWikiRetriever, rows: Sequence[Mapping[str, Any]], expand: bool | Sequence[bool], where: str,
    include_gold: bool,
) -> list[dict[str, Any]]:  # fmt: skip
    """``retriever.retrieve`` with a missing supporting paragraph as the flag's one error line."""
    try:
        return retriever.retrieve(rows, expand=expand, include_gold=include_gold)
    except InputError as error:
        raise ScriptArgumentError(f"{where}: {error}") from None


class FullWikiSetting(RerankedTask):
    """What both FullWiki systems add to their distractor task (a base listed before it): the FullWiki flags, the
    corpus checked with the data, the re-ranker loaded beside the task's model (the run's ``ranker`` component,
    ``RerankedTask``), ``context`` not read. The task holds its ``fullwiki`` (``FullWikiRetrieval``)."""

    fullwiki: FullWikiRetrieval
    reads_context: bool = False
    ranker_folder: str = RANKER

    def check_arguments(self, model_args: Any, data_args: Any, args: Any) -> None:
        check_fullwiki_flags(model_args, data_args)
        super().check_arguments(model_args, data_args, args)

    def check_examples(self, examples: Mapping[str, Any], data_args: Any) -> None:
        super().check_examples(examples, data_args)
        self.fullwiki.check(examples, data_args)

    def load_ranker(self, model_args: Any, data_args: Any, tokenizer: Any, trains: bool) -> Reranker:
        """The re-ranker from ``<model_name_or_path>/ranker`` or converted from LUKE (to train); its processor reads
        ``--max_seq_length`` words per article."""
        self.fullwiki.reranker = Reranker.load(model_args, data_args, tokenizer, RANKER, trains,
                                               "--hotpot_setting fullwiki needs a trained re-ranker",
                                               self.fullwiki.retriever.corpus)  # fmt: skip
        return self.fullwiki.reranker

    def ranker_features(self, ranker: Any, rows: Sequence[Any], data_args: Any) -> list[dict[str, Any]]:
        """Each training question's supporting paragraphs (1) and BM25 hits that are not (0)."""
        candidates = training_candidates(self.fullwiki.retriever, rows, data_args.ranker_negatives)
        return ranker.features(rows, candidates, labelled=True)

    def use_ranker(self, ranker: Any) -> None:
        self.fullwiki.retriever.score = ranker  # the retriever's scorer


@dataclass
class FullWikiHotpotQATask(FullWikiSetting, HotpotQATask):
    """``HOTPOTQA`` (``--system joint``) with every question's graph retrieved from the corpus (every question
    expanded along hyperlinks; training graphs with their supporting paragraphs), the re-ranker trained before the
    features are retrieved."""

    fullwiki: FullWikiRetrieval = field(default_factory=FullWikiRetrieval, repr=False)
    description: str = "HotpotQA FullWiki with Transformer-XH: graphs retrieved from the Wikipedia abstracts"
    reads_context: bool = False

    def featurise(self, processor: XhTaskProcessor, examples: Any, split: str, data_args: Any) -> Dataset:
        """The questions' retrieved graphs (every question expanded), featurised as distractor graphs."""
        return super().featurise(processor, self.fullwiki.retrieve(list(examples), True, split), split, data_args)


@dataclass
class FullWikiPaperHotpotQATask(FullWikiSetting, PaperHotpotQATask):
    """``--system paper`` in the FullWiki setting: the re-ranker is trained first, then the five models on the
    retrieved training graphs (bridge questions expanded by their gold type); at evaluation each question's graph is
    retrieved after the classifier (comparison questions not expanded, A.1)."""

    fullwiki: FullWikiRetrieval = field(default_factory=FullWikiRetrieval, repr=False)
    reads_context: bool = False

    def __post_init__(self) -> None:
        self.retrieve = self.fullwiki.retrieve


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
    "FullWikiPaperHotpotQATask",
    "FullWikiRetrieval",
    "FullWikiSetting",
    "Reranker",
    "abstracts_from_paragraphs",
    "check_fullwiki_flags",
    "hotpot_paragraphs",
    "retrieve_split",
    "training_candidates",
    "write_abstracts_corpus",
]
