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
"""FEVER's sentence selection re-ranked by the backbone: ``run_multihop.py --task fever --fever_retrieval
bm25_rerank`` for claims that carry no ``predicted_pages`` / ``predicted_sentences``.

Document retrieval stays BM25 (``training.fever_bm25``, the top 5 pages); the sentences of those pages are then
ranked by ``SentenceReranker``: ``XhForSupportingFacts`` read alone per sentence (``xh_num_hop_layers=0``; the same
relevance head as HotpotQA's BERT IR, ``training.xh_fullwiki``) on ``[CLS]`` of ``claim </s> </s> title: sentence``,
trained with binary cross-entropy on ``--train_file``'s claims: their gold evidence sentences 1, the other sentences of
their BM25 pages and gold pages 0 (at most ``--ranker_negatives`` per claim). ``RerankedFeverTask`` trains it through
the shared driver as the run's ``sentence_ranker`` component (saved under ``<output_dir>/sentence_ranker``, re-used
from ``<model_name_or_path>/sentence_ranker``); the top ``--max_nodes`` (5) sentences become the claim's XH graph.

Flat module: imports its siblings relatively, third-party packages otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from transformers import PreTrainedModel

from ..inputs_gesa import InputError
from ..processing_xh_tasks import XhTaskProcessor
from .fever_bm25 import retrieve_fever_evidence
from .machinery import ScriptArgumentError
from .retrieval import RerankedTask, TextReranker
from .xh import FeverTask

SENTENCE_RANKER = "sentence_ranker"  # the re-ranker's subfolder of a run


class SentenceReranker(TextReranker):
    """``reranker(claim, [(page, line)])`` -> the relevance logit of each sentence, each read alone (``chunk``
    sentences a graph, ``batch_size`` graphs a step)."""

    def __init__(
        self,
        model: PreTrainedModel,
        processor: XhTaskProcessor,
        pages: Mapping[str, Mapping[int, str]],
        batch_size: int = 8,
        chunk: int = 8,
    ) -> None:
        super().__init__(model, processor, batch_size, chunk)
        self.pages = pages

    def features(self, claims: Sequence[Mapping[str, Any]], candidates: Sequence[Sequence[tuple[str, int]]]) -> list:
        """Per claim its candidate sentences in graphs of at most ``chunk`` nodes, ``node_labels`` 1 on the claim's
        gold evidence (0 on the others; none without ``evidence``)."""
        features = []
        for claim, sentences in zip(claims, candidates, strict=True):
            for begin in range(0, len(sentences), self.chunk):
                part = [[page, line] for page, line in sentences[begin : begin + self.chunk]]
                row = {"id": claim.get("id", ""), "claim": claim["claim"], "predicted_sentences": part,
                       "predicted_pages": [], "evidence": claim.get("evidence", [])}  # fmt: skip
                feature = self.processor.encode_fever_claim(row, self.pages)
                for name in ("fever_label", "candidates"):
                    feature.pop(name, None)
                feature["sentence_starts"] = feature["sentence_ends"] = [[-1] for _ in feature["input_ids"]]
                if not claim.get("evidence"):
                    feature.pop("node_labels")
                features.append(feature)
        return features

    def __call__(self, claim: str, sentences: Sequence[tuple[str, int]]) -> list[float]:
        return self.logits(self.features([{"claim": claim}], [sentences]))


def training_sentences(
    claims: Sequence[Mapping[str, Any]], pages: Mapping[str, Mapping[int, str]], negatives: int
) -> tuple[list[Mapping[str, Any]], list[list[tuple[str, int]]]]:
    """The claims with gold evidence and per claim: its evidence sentences, then at most ``negatives`` other sentences
    of its BM25 pages and its gold pages."""
    blind = [{"id": c["id"], "claim": c["claim"]} for c in claims]
    retrieved = retrieve_fever_evidence(blind, pages, max_sentences=1)  # its pages are what counts
    kept, candidates = [], []
    for claim, found in zip(claims, retrieved, strict=True):
        gold = list(dict.fromkeys((e[2], e[3]) for group in claim.get("evidence", []) for e in group if e[2]))
        gold = [pair for pair in gold if pair[0] in pages and pair[1] in pages[pair[0]]]
        if not gold:
            continue  # NOT ENOUGH INFO (or evidence outside the pages given): no positive to learn
        nearby = dict.fromkeys([*found["predicted_pages"], *(p for p, _ in gold)])
        around = [(p, line) for p in nearby for line, text in sorted(pages.get(p, {}).items())
                  if text.strip() and (p, line) not in gold]  # fmt: skip
        kept.append(claim)
        candidates.append(gold + around[:negatives])
    return kept, candidates


@dataclass
class RerankedFeverTask(RerankedTask, FeverTask):
    """``FEVER`` with ``--fever_retrieval bm25_rerank``: the sentence re-ranker is the run's ``sentence_ranker``
    component (the driver's ``ComponentTrainer``), loaded from ``<model_name_or_path>/sentence_ranker`` or converted
    from LUKE and trained on the training claims' evidence before the claims are featurised. The wiki pages are read
    with the data, before any model loads."""

    pages_read: dict[str, dict[int, str]] | None = field(default=None, repr=False)
    ranker: SentenceReranker | None = field(default=None, repr=False)
    ranker_folder: str = SENTENCE_RANKER

    def check_arguments(self, model_args: Any, data_args: Any, args: Any) -> None:
        if data_args.task != "fever":
            raise ScriptArgumentError(
                f"--fever_retrieval bm25_rerank is for --task fever, not --task {data_args.task}"
            )
        if model_args.model_name_or_path is None:
            raise ScriptArgumentError("--fever_retrieval bm25_rerank needs --model_name_or_path: a LUKE checkpoint "
                                      "(the sentence re-ranker is converted from it) or the output folder of such a run")  # fmt: skip
        super().check_arguments(model_args, data_args, args)

    def pages(self, data_args: Any) -> dict[str, dict[int, str]]:
        if self.pages_read is None:
            self.pages_read = super().pages(data_args)
        return self.pages_read

    def check_examples(self, examples: Mapping[str, Any], data_args: Any) -> None:
        """The wiki pages read; training claims need evidence in them (the re-ranker's positives)."""
        super().check_examples(examples, data_args)
        try:
            pages = self.pages(data_args)
        except InputError as error:
            raise ScriptArgumentError(f"--wiki_pages: {error}") from None
        evidence = ((e[2], e[3]) for claim in examples.get("train", []) for group in claim.get("evidence") or []
                    for e in group if e[2])  # fmt: skip
        if "train" in examples and not any(page in pages and line in pages[page] for page, line in evidence):
            raise ScriptArgumentError(
                "--train_file has no claim with evidence in --wiki_pages: the sentence re-ranker has nothing to learn"
            )

    def load_ranker(self, model_args: Any, data_args: Any, tokenizer: Any, trains: bool) -> SentenceReranker:
        self.ranker = SentenceReranker.load(model_args, data_args, tokenizer, SENTENCE_RANKER, trains,
                                            "--fever_retrieval bm25_rerank needs a trained sentence re-ranker",
                                            self.pages(data_args), {"task": "fever", "pages": self.pages(data_args)})  # fmt: skip
        return self.ranker

    def ranker_features(self, ranker: Any, rows: Sequence[Any], data_args: Any) -> list[dict[str, Any]]:
        """The training claims' evidence sentences (1) and other sentences of their pages (0)."""
        return ranker.features(*training_sentences(rows, ranker.pages, data_args.ranker_negatives))

    def use_ranker(self, ranker: Any) -> None:
        self.sentence_score = ranker  # the claims' sentences are ranked by it


__all__ = ["SENTENCE_RANKER", "RerankedFeverTask", "SentenceReranker", "training_sentences"]
