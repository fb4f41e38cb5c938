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
"""Transformer-XH graph features for its own tasks: HotpotQA with sentences and answer types, and FEVER.

HotpotQA: `processing_xh`'s paragraph graph (one node per paragraph, title-mention edges), plus per node the
first/last token of each sentence (`sentence_starts`/`sentence_ends`, -1 for a sentence cut by `max_node_length`),
`sentence_labels` (1 on supporting facts) and `answer_type` (0 span, 1 yes, 2 no). A node is
`<s> question </s> anchors </s> </s> title: paragraph </s>` (the paper's question + anchor text + paragraph, sec. 3:
what the paragraphs linking to this one say of it; `"; "`-joined, question and anchors within `max_query_length`
tokens; `<s> question </s> </s> ...` without anchors): a retrieved FullWiki graph's `anchors` (the anchor texts of the
graph's links into the paragraph), or in the distractor setting the sentences of the other paragraphs that name its
title (`processing_xh.title_mentions`; the released code appends each edge's sentence to the linked node, and a title
mention's own text would only repeat the title). Sentence and answer boundaries are tokenisation boundaries, so a
sentence's tokens are exactly its own.

FEVER (paper sec. 4): one node per candidate evidence sentence, `<s> claim </s> </s> title: sentence </s>`, fully
connected. Candidates (at most `max_nodes`, the paper's five): the record's `predicted_sentences` ([page, line], e.g.
from a retriever), then the sentences of its `predicted_pages` or, without those, of the pages whose title's words
occur in the claim as a run of whole words (longest first); with `include_gold` (training) the gold evidence
sentences come first. A claim with no candidate gets one node with the claim alone (it is never predicted as
evidence). `labels` is the class id, `node_labels` marks the gold evidence nodes and `candidates` the `[page, line]`
of each node.

Flat module: copied next to every saved checkpoint, so it imports only third-party packages and its siblings.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from .configuration_variants import HOTPOT_QUESTION_TYPES
from .inputs_gesa import InputError
from .processing_xh import XhGraphCollator, XhProcessor, _whitespace_to_spaces, title_mentions
from .records_xh import FEVER_LABELS, page_title

ANSWER_TYPES = ("span", "yes", "no")
# the answer model's labels, left out of the supporting-fact model's features
SUPPORTING_ONLY = ("relevant_node", "start_positions", "end_positions", "answer_type")
FEVER_LABEL_IDS = {label: index for index, label in enumerate(FEVER_LABELS)}
_WORD = re.compile(r"\w+")


def answer_type_of(answer: str | None) -> int:
    """0 for a span answer, 1 for yes, 2 for no (HotpotQA's comparison questions)."""
    text = (answer or "").strip().lower()
    return ANSWER_TYPES.index(text) if text in ("yes", "no") else 0


@dataclass
class XhTaskCollator(XhGraphCollator):
    """`XhGraphCollator` plus `sentence_starts`/`sentence_ends` `(G, N, S)` (-1 padding), `sentence_labels`
    `(G, N, S)` (-100 padding), `answer_type` `(G,)` and FEVER's class `labels` `(G,)`."""

    def __call__(self, features: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        own = ("sentence_starts", "sentence_ends", "sentence_labels", "answer_type", "fever_label", "candidates")
        extra = [{k: f[k] for k in own if k in f} for f in features]
        if "labels" in features[0] and isinstance(features[0]["labels"], int):  # FEVER's class id (-100: none)
            for row, feature in zip(extra, features, strict=True):
                row["fever_label"] = feature["labels"]
            own = (*own, "labels")
        base = [{k: v for k, v in f.items() if k not in own} for f in features]
        batch = super().__call__(base)
        graphs, nodes = batch["node_mask"].shape
        if "sentence_starts" in extra[0]:
            count = max((len(s) for f in extra for s in f["sentence_starts"]), default=1) or 1
            for name, pad in (("sentence_starts", -1), ("sentence_ends", -1), ("sentence_labels", -100)):
                if name not in extra[0]:
                    continue
                tensor = torch.full((graphs, nodes, count), pad, dtype=torch.long)
                for g, feature in enumerate(extra):
                    for n, values in enumerate(feature[name]):
                        tensor[g, n, : len(values)] = torch.tensor(values, dtype=torch.long)
                batch[name] = tensor
        if "answer_type" in extra[0]:
            batch["answer_type"] = torch.tensor([f["answer_type"] for f in extra], dtype=torch.long)
        if "fever_label" in extra[0]:
            batch["labels"] = torch.tensor([f["fever_label"] for f in extra], dtype=torch.long)
        if self.keep_eval_columns and "candidates" in extra[0]:
            batch["candidates"] = [f["candidates"] for f in extra]
        return batch


class XhTaskProcessor(XhProcessor):
    """`XhProcessor` with HotpotQA sentence features and FEVER claim graphs (see the module docstring).

    `task` (`"hotpotqa"` or `"fever"`) and, for FEVER, `pages` (`{page id: {line: sentence}}`) say what
    `map_function` (batched `Dataset.map` over `example_json` rows) encodes; it builds TRAINING features (FEVER:
    the gold evidence among the candidates). `save_pretrained` writes the settings (not the pages: data, given again
    when loading), the tokenizer and this code.
    """

    TASKS = ("hotpotqa", "fever")
    unsaved_settings = ("pages",)
    per_process_state = ("_title_index",)
    cap_warnings = {
        **XhProcessor.cap_warnings,
        "truncated_sentences": (
            "{truncated_sentences} sentences cut off with their paragraph's text (max_node_length={max_node_length}): "
            "never predicted as supporting facts"
        ),
        "answers_not_found": "{answers_not_found} span answers found in none of their question's paragraphs",
        "truncated_candidates": (
            "{truncated_candidates} claims whose candidate evidence sentences were cut to max_nodes={max_nodes}"
        ),
    }

    def __init__(
        self,
        tokenizer: Any = None,
        max_node_length: int = 256,
        max_query_length: int = 90,
        max_nodes: int | None = None,
        hotpot_edges: str = "title_mention",
        entity_mask_id: int | None = None,
        task: str = "hotpotqa",
        pages: Mapping[str, Mapping[int, str]] | None = None,
    ) -> None:
        if task not in self.TASKS:
            raise ValueError(f"XhTaskProcessor: task must be one of {self.TASKS}, got {task!r}")
        super().__init__(tokenizer, max_node_length, max_query_length, max_nodes, hotpot_edges, entity_mask_id)
        self.task = task
        self.pages = dict(pages or {})
        self._title_index: tuple[Mapping, dict[str, list[str]], int] | None = None

    def map_function(self, batch: Mapping[str, list]) -> dict[str, list]:
        """Training features of a batch of `example_json` rows (JSON of `records_xh` rows), as columns."""
        rows = [json.loads(text) for text in batch["example_json"]]
        if self.task == "hotpotqa":
            features = self.encode_hotpot_rows(rows)
        else:
            features = self.encode_fever_claims(rows, self.pages, include_gold=True)
            for feature in features:
                feature["labels"] = feature.pop("fever_label", -100)
                feature["candidates"] = json.dumps(feature["candidates"])  # one Arrow type per column
        return {key: [feature[key] for feature in features] for key in features[0]} if features else {}

    def get_data_collator(self, keep_eval_columns: bool = False) -> XhTaskCollator:
        return XhTaskCollator(self.tokenizer.pad_token_id, self.entity_mask_id, keep_eval_columns)

    # ------------------------------------------------------------------ HotpotQA

    def hotpot_prediction(self, feature: Mapping[str, Any], decoded: Mapping[str, Any]) -> dict[str, Any]:
        """``{id, answer, score, supporting_facts}`` of one question from ``XhForHotpotQA.decode_hotpot``'s choice
        for its feature: a span's text (its tokens in the chosen node, decoded), or ``yes``/``no``; the supporting
        facts as ``[title, sent_id]`` pairs."""
        if decoded["answer_type"] == "span":
            ids = feature["input_ids"][decoded["node"]][decoded["start"] : decoded["end"] + 1]
            answer = self.tokenizer.decode(ids, skip_special_tokens=True).strip()
        else:
            answer = decoded["answer_type"]
        titles = feature["titles"]
        facts = [[titles[node], sentence] for node, sentence in decoded["supporting"]]
        return {"id": feature["example_id"], "answer": answer, "score": decoded["score"], "supporting_facts": facts}

    def encode_hotpot_rows(self, rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """One graph feature per HotpotQA row (`records_xh.read_hotpot_file` rows or Hub rows)."""
        return self._reported(self.encode_hotpot_sentences(row, position) for position, row in enumerate(rows))

    def encode_hotpot_sentences(self, row: Mapping[str, Any], position: int = 0) -> dict[str, Any]:
        """`encode_hotpot_record`'s graph and labels, the nodes re-encoded with sentence boundaries."""
        counted = Counter(self.stats)  # the nodes are encoded again below: count each cap once
        feature = self.encode_hotpot_record({**row, "answer": row.get("answer") or ""}, position)
        self.stats.clear()  # in place: processors derived with `with_edges` share it
        self.stats.update(counted)
        feature.pop("node_labels", None)  # paragraph labels: superseded by the sentence labels
        context = row["context"]
        if isinstance(context, Mapping):
            titles, paragraphs = list(context["title"]), [list(s) for s in context["sentences"]]
        else:
            titles, paragraphs = [c[0] for c in context], [list(c[1]) for c in context]
        titles, paragraphs = titles[: len(feature["input_ids"])], paragraphs[: len(feature["input_ids"])]
        facts = row.get("supporting_facts", {})
        if isinstance(facts, Mapping):
            gold = set(zip(facts.get("title", []), facts.get("sent_id", []), strict=True))
        else:
            gold = {(f[0], f[1]) for f in facts}
        answer = str(row.get("answer") or "")
        texts = [_whitespace_to_spaces(f"{t}: {''.join(s)}") for t, s in zip(titles, paragraphs, strict=True)]
        relevant, answer_span = self._hotpot_answer(texts, titles, [t for t, _ in gold], answer)
        question_ids = self._tokens(_whitespace_to_spaces(row["question"]), leading_space=False)
        question_ids = question_ids[: self.max_query_length]
        if "anchors" in row or "hyperlinks" in row:  # a retrieved graph: the anchor texts of its links
            anchors = list(row.get("anchors") or [])[: len(titles)]
            anchors += [[]] * (len(titles) - len(anchors))
        else:  # distractor: the sentences that name the paragraph's title (the released code's edge sentence)
            anchors = [[] for _ in titles]
            for (source, target), numbers in title_mentions(titles, paragraphs).items():
                anchors[target] += [paragraphs[source][i].strip() for i in numbers if paragraphs[source][i].strip()]
            anchors = [list(dict.fromkeys(found)) for found in anchors]
        feature.update(input_ids=[], global_attention_mask=[], sentence_starts=[], sentence_ends=[])
        feature.update(sentence_labels=[], start_positions=-100, end_positions=-100)
        for node, (title, sentences, text) in enumerate(zip(titles, paragraphs, texts, strict=True)):
            node_query = question_ids
            if anchors[node]:  # FullWiki (paper sec. 3): question </s> anchor texts of the links into this paragraph
                anchor_ids = self._tokens(_whitespace_to_spaces("; ".join(anchors[node])), leading_space=False)
                room = self.max_query_length - len(question_ids) - 1  # question and anchors within the query cap
                if room > 0:
                    node_query = question_ids + [self.tokenizer.sep_token_id] + anchor_ids[:room]
            cursor, ranges = len(title) + 2, []
            for sentence in sentences:
                start = cursor + len(sentence) - len(sentence.lstrip())
                end = max(start, cursor + len(sentence.rstrip()))
                ranges.append((start, end))
                cursor += len(sentence)
            pieces, owner, answer_piece = [], [], None
            for index, (start, end) in enumerate(ranges):
                cuts = [start, end]
                if node == relevant and answer_span is not None and start <= answer_span[0] < answer_span[1] <= end:
                    cuts = sorted({start, *answer_span, end})
                for a, b in zip(cuts, cuts[1:], strict=False):
                    a += len(text[a:b]) - len(text[a:b].lstrip())  # whitespace stays outside: a leading space
                    if b > a:
                        if node == relevant and answer_span is not None and (a, b) == tuple(answer_span):
                            answer_piece = len(pieces)
                        pieces.append((a, b))
                        owner.append(index)
            text_ids, positions = self._encode_with_spans(text, pieces, markers=False)
            ids, global_mask, offset = self._node(node_query, text_ids)
            last = len(ids) - 2  # ids[-1] is </s>
            starts, ends = [-1] * len(sentences), [-1] * len(sentences)
            for index, words in zip(owner, positions, strict=True):
                kept = [offset + w for w in words if offset + w <= last]
                if kept:
                    starts[index] = kept[0] if starts[index] < 0 else starts[index]
                    ends[index] = kept[-1]
            self.stats["truncated_sentences"] += starts.count(-1)
            if answer_piece is not None and positions[answer_piece]:
                first, final = offset + positions[answer_piece][0], offset + positions[answer_piece][-1]
                if final <= last:
                    feature["start_positions"], feature["end_positions"] = first, final
                else:
                    self._count("truncated_answers")
            feature["input_ids"].append(ids)
            feature["global_attention_mask"].append(global_mask)
            feature["sentence_starts"].append(starts)
            feature["sentence_ends"].append(ends)
            feature["sentence_labels"].append(
                [int((title, i) in gold) if starts[i] >= 0 else -100 for i in range(len(sentences))]
            )
        feature["answer_type"] = answer_type_of(answer)
        if feature["answer_type"] == 0 and feature["start_positions"] < 0 and answer:
            self._count("answers_not_found")
        return feature

    # ------------------------------------------------------------------ the paper's HotpotQA system (A.3)

    def with_edges(self, hotpot_edges: str) -> XhTaskProcessor:
        """This processor with another `hotpot_edges` (the paper system's graph per question type), counting its caps
        in this one's `stats`."""
        processor = type(self)(self.tokenizer, **{**self.settings(), "hotpot_edges": hotpot_edges}, pages=self.pages)
        processor.stats = self.stats
        return processor

    @staticmethod
    def question_type_id(row: Mapping[str, Any], required: bool) -> int:
        """The row's HotpotQA `type` as an index of `HOTPOT_QUESTION_TYPES` (-100 when absent and not `required`);
        another value (or none where `required`) is an `InputError` naming the row and the field."""
        kind = row.get("type")
        if kind in HOTPOT_QUESTION_TYPES:
            return HOTPOT_QUESTION_TYPES.index(kind)
        if kind is None and not required:
            return -100
        problem = "no type" if kind is None else f"type {kind!r}"
        raise InputError(
            f"{problem}: the paper system trains one model per question type and needs 'type' to be one of "
            f"{list(HOTPOT_QUESTION_TYPES)}",
            row.get("location"),
            record="HotpotQA question",
            record_id=row.get("id"),
            fix="use HotpotQA's released files (every question has its type), leave 'type' out of an evaluation "
            "question (the classifier types it), or use --system joint",
        )

    def encode_question_types(self, rows: Iterable[Mapping[str, Any]], required: bool) -> list[dict[str, Any]]:
        """A.3.1: one single-node graph per question, `<s> question </s>`, `labels` its type id."""
        features = []
        for row in rows:
            question = self._tokens(" ".join(str(row["question"]).split()), leading_space=False)
            question = question[: self.max_query_length]
            ids = [self.tokenizer.cls_token_id, *question, self.tokenizer.sep_token_id]
            features.append({"input_ids": [ids], "global_attention_mask": [[1] + [2] * len(question) + [0]],
                             "node_adjacency": [[0]], "labels": self.question_type_id(row, required),
                             "example_id": str(row["id"])})  # fmt: skip
        return features

    def encode_paper_graphs(
        self, rows: Sequence[Mapping[str, Any]]
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The graphs of the paper system's two per-type models, the questions encoded once: the answer model's
        (`XhForHotpotQA`: relevance, span and answer type, no sentences) and A.3.2's (`XhForSupportingFacts`:
        sentence boundaries and labels, `node_labels` 1 on the documents holding a supporting fact)."""
        answers, supporting = [], []
        for feature, row in zip(self.encode_hotpot_rows(rows), rows, strict=True):
            facts = row.get("supporting_facts") or {}
            titles = set(facts.get("title", [])) if isinstance(facts, Mapping) else {fact[0] for fact in facts}
            sentence_keys = ("sentence_starts", "sentence_ends", "sentence_labels")
            answers.append({k: v for k, v in feature.items() if k not in sentence_keys})
            supporting.append({**{k: v for k, v in feature.items() if k not in SUPPORTING_ONLY},
                               "node_labels": [int(title in titles) for title in feature["titles"]]})  # fmt: skip
        return answers, supporting

    # ------------------------------------------------------------------ FEVER

    def fever_candidates(
        self, claim: Mapping[str, Any], pages: Mapping[str, Mapping[int, str]], include_gold: bool
    ) -> list[tuple[str, int]]:
        """The claim's candidate evidence sentences `(page, line)`, at most `max_nodes` (see module docstring)."""
        ordered: list[tuple[str, int]] = []
        if include_gold:
            for group in claim.get("evidence", []):
                for entry in group:
                    if entry[2] is None:
                        continue
                    if entry[2] not in pages or entry[3] not in pages[entry[2]]:
                        raise InputError(
                            f"gold evidence [{entry[2]!r}, {entry[3]}] is not in the wiki pages given",
                            claim.get("location"),
                            record="FEVER claim",
                            record_id=claim["id"],
                            fix="pass the wiki-pages files that hold it",
                        )
                    ordered.append((entry[2], entry[3]))
        for page, line in claim.get("predicted_sentences", []):
            ordered.append((page, int(line)))
        candidate_pages = claim.get("predicted_pages")
        if candidate_pages is None:
            candidate_pages = self.pages_named_in(claim["claim"], pages)
        for page in candidate_pages:
            ordered += [(page, line) for line, sentence in sorted(pages.get(page, {}).items()) if sentence.strip()]
        unique = list(dict.fromkeys(p for p in ordered if p[0] in pages and p[1] in pages[p[0]]))
        if self.max_nodes is not None and len(unique) > self.max_nodes:
            self._count("truncated_candidates")
            unique = unique[: self.max_nodes]
        return unique

    def pages_named_in(self, claim: str, pages: Mapping[str, Mapping[int, str]]) -> list[str]:
        """The pages whose title (`records_xh.page_title`, case-insensitive) is a run of whole words of `claim`,
        longest first: one dictionary look-up per word n-gram, so a full wiki dump costs no scan per claim."""
        index = self._title_index
        if index is None or index[0] is not pages:
            table: dict[str, list[str]] = {}
            longest = 1
            for page in pages:
                words = _WORD.findall(page_title(page).lower())
                if words:
                    table.setdefault(" ".join(words), []).append(page)
                    longest = max(longest, len(words))
            index = self._title_index = (pages, table, longest)
        _, table, longest = index
        words = _WORD.findall(claim.lower())
        found: list[str] = []
        for size in range(min(longest, len(words)), 0, -1):
            for start in range(len(words) - size + 1):
                found += table.get(" ".join(words[start : start + size]), [])
        return list(dict.fromkeys(found))

    def encode_fever_claims(
        self,
        claims: Iterable[Mapping[str, Any]],
        pages: Mapping[str, Mapping[int, str]],
        include_gold: bool = False,
    ) -> list[dict[str, Any]]:
        """One fully connected evidence graph per claim (`records_xh.read_fever_claims` rows)."""
        return self._reported(self.encode_fever_claim(claim, pages, include_gold) for claim in claims)

    def encode_fever_claim(
        self, claim: Mapping[str, Any], pages: Mapping[str, Mapping[int, str]], include_gold: bool = False
    ) -> dict[str, Any]:
        """The XH evidence graph of one claim: claim + page title + sentence per node, fully connected."""
        candidates = self.fever_candidates(claim, pages, include_gold)
        claim_ids = self._tokens(_whitespace_to_spaces(claim["claim"]), leading_space=False)
        if len(claim_ids) > self.max_query_length:
            self._count("truncated_queries")
            claim_ids = claim_ids[: self.max_query_length]
        nodes = candidates or [None]
        feature: dict[str, Any] = {"input_ids": [], "global_attention_mask": []}
        for candidate in nodes:
            text = "" if candidate is None else f"{page_title(candidate[0])}: {pages[candidate[0]][candidate[1]]}"
            ids, global_mask, _ = self._node(claim_ids, self._tokens(_whitespace_to_spaces(text), False))
            feature["input_ids"].append(ids)
            feature["global_attention_mask"].append(global_mask)
        count = len(nodes)
        gold = {(e[2], e[3]) for group in claim.get("evidence", []) for e in group if e[2] is not None}
        feature.update(
            node_adjacency=[[int(a != b) for b in range(count)] for a in range(count)],
            node_labels=[int(c is not None and c in gold) for c in nodes],
            candidates=[None if c is None else [c[0], c[1]] for c in nodes],
            example_id=str(claim["id"]),
        )
        if claim.get("label") is not None:
            feature["fever_label"] = FEVER_LABEL_IDS[claim["label"].upper()]
        return feature


XhTaskProcessor.register_for_auto_class("AutoProcessor")

__all__ = ["ANSWER_TYPES", "FEVER_LABEL_IDS", "SUPPORTING_ONLY", "XhTaskCollator", "XhTaskProcessor", "answer_type_of"]
