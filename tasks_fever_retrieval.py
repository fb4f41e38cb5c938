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

Document retrieval stays BM25 (``processing_retrieval_xh``, the top 5 pages); the sentences of those pages are then
ranked by ``SentenceReranker``: ``XhForSupportingFacts`` read alone per sentence (``xh_num_hop_layers=0``; the same
relevance head as HotpotQA's BERT IR, ``tasks_xh_fullwiki``) on ``[CLS]`` of ``claim </s> </s> title: sentence``,
trained with binary cross-entropy on ``--train_file``'s claims: their gold evidence sentences 1, the other sentences of
their BM25 pages and gold pages 0 (at most ``--ranker_negatives`` per claim). It is saved under
``<output_dir>/sentence_ranker`` and re-used from ``<model_name_or_path>/sentence_ranker``; the top ``--max_nodes``
(5) sentences become the claim's XH graph.

Flat module: imports its siblings relatively, third-party packages otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from transformers import PreTrainedModel, TrainingArguments

from .inputs_gesa import InputError
from .loading_gesa import load_tokenizer
from .processing_retrieval_xh import retrieve_fever_evidence
from .processing_xh_tasks import XhTaskProcessor
from .records_xh import read_fever_claims, read_wiki_pages
from .structure_gesa import LUKE_MASK_ENTITY_ID
from .tasks_base import file_error
from .tasks_xh_paper import reranker_model, run_component, train_component
from .training_gesa import ScriptArgumentError

SENTENCE_RANKER = "sentence_ranker"  # the re-ranker's subfolder of a run


class SentenceReranker:
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
        self.model, self.processor, self.pages = model, processor, pages
        self.batch_size, self.chunk = batch_size, chunk

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
        features = self.features([{"claim": claim}], [sentences])
        outputs = run_component(self.model, features, self.processor.get_data_collator(), self.batch_size)
        return [float(logit) for feature, out in zip(features, outputs, strict=True)
                for logit in out["relevance_logits"][0, : len(feature["input_ids"])]]  # fmt: skip


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


def build_sentence_ranker(model_args: Any, data_args: Any, args: TrainingArguments) -> SentenceReranker:
    """The re-ranker loaded from ``<model_name_or_path>/sentence_ranker`` or converted from LUKE and trained on
    ``--train_file`` (``--do_train``; saved to ``<output_dir>/sentence_ranker``)."""
    if data_args.task != "fever":
        raise ScriptArgumentError(f"--fever_retrieval bm25_rerank is for --task fever, not --task {data_args.task}")
    if model_args.model_name_or_path is None or not data_args.wiki_pages:
        raise ScriptArgumentError("--fever_retrieval bm25_rerank needs --model_name_or_path and --wiki_pages")
    try:
        pages = read_wiki_pages([part.strip() for part in data_args.wiki_pages.split(",") if part.strip()])
    except InputError as error:
        raise ScriptArgumentError(f"--wiki_pages: {error}") from None
    claims: list[dict[str, Any]] = []
    if args.do_train and data_args.train_file:
        try:
            claims = read_fever_claims(data_args.train_file)[: data_args.max_train_samples]
        except InputError as error:
            raise ScriptArgumentError(file_error("--train_file", Path(data_args.train_file), error)) from None
    path = model_args.model_name_or_path
    tokenizer = load_tokenizer(model_args.tokenizer_name or path, cache_dir=model_args.cache_dir)
    processor = XhTaskProcessor(
        tokenizer,
        max_node_length=data_args.max_seq_length,
        max_query_length=data_args.max_query_length,
        entity_mask_id=LUKE_MASK_ENTITY_ID,
        task="fever",
        pages=pages,
    )
    model = reranker_model(model_args, tokenizer, SENTENCE_RANKER, bool(claims),
                           "--fever_retrieval bm25_rerank needs a trained sentence re-ranker")  # fmt: skip
    reranker = SentenceReranker(model, processor, pages, batch_size=args.per_device_eval_batch_size)
    if claims:
        kept, candidates = training_sentences(claims, pages, data_args.ranker_negatives)
        if not kept:
            raise ScriptArgumentError(
                "--train_file has no claim with evidence in --wiki_pages: the sentence re-ranker has nothing to learn"
            )
        features = reranker.features(kept, candidates)
        reranker.model = train_component(model, features, processor.get_data_collator(), args, SENTENCE_RANKER)
    reranker.model.to(args.device)
    return reranker


__all__ = ["SENTENCE_RANKER", "SentenceReranker", "build_sentence_ranker", "training_sentences"]
