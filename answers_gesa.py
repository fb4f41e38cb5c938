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
"""Per-window candidate scores -> ranked answers per query: the one place that merges window scores and the one
place that turns them into ``{answer, score, start, end}``.

A long passage is split into windows (features) that share one query id. Every candidate mention's score is grouped
by its normalised text (``normalize_entity_string``: the official ReCoRD normalisation), a group keeps the best score
over all its mentions in all windows, and its answer is the surface text of that best mention (ties keep the first
seen): ``rank_window_answers``. ``ranked_answers`` gives each answer its score (``sigmoid`` of the merged logit for
ReCoRD's per-candidate binary cross-entropy, ``softmax`` over the query's answers for WikiHop's cross-entropy) and its
first mention. The evaluation (``run_record.py --do_eval``), ``--do_predict``, the entity cloze and WikiHop pipelines
and ``GesaProcessor.post_process_predictions`` all read this ranking, so they can never disagree on a query's answer.

Flat module: copied next to every saved processor, so it imports only third-party packages and its siblings.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from .candidates_gesa import normalize_entity_string


def _score_rows(logits: Any, caller: str) -> list[np.ndarray]:
    """The scores as one float64 row per feature: a ``(F, E)`` tensor or array, or a list of (possibly ragged) rows."""
    if isinstance(logits, torch.Tensor):
        logits = logits.detach().float().cpu().numpy()
    if isinstance(logits, np.ndarray):
        if logits.ndim != 2:
            raise ValueError(f"{caller}: logits must be 2-D (features, entities), got shape {tuple(logits.shape)}")
        return [row.astype(np.float64) for row in logits]
    if not isinstance(logits, Sequence) or isinstance(logits, (str, bytes)):
        raise TypeError(f"{caller}: logits must be a tensor, an array or a list of rows, got {type(logits).__name__}")
    rows = []
    for number, row in enumerate(logits):
        values = np.asarray(row.detach().float().cpu() if isinstance(row, torch.Tensor) else row, dtype=np.float64)
        if values.ndim != 1:
            raise ValueError(f"{caller}: logits row {number} must be 1-D, got shape {tuple(values.shape)}")
        rows.append(values)
    return rows


def rank_window_answers(
    example_ids: Sequence[str],
    candidate_texts: Sequence[Sequence[str]],
    logits: Any,
    candidate_spans: Sequence[Sequence[Sequence[int]]] | None = None,
    first_candidate: int = 1,
    caller: str = "rank_answers",
    same_answer: Callable[[str], str] | None = normalize_entity_string,
) -> dict[str, list[dict[str, Any]]]:
    """Every answer per query, best first.

    Args:
        example_ids: ``(F,)`` the features' query ids; a query's windows are consecutive.
        candidate_texts: ``(F, E_f)`` per feature, the candidate text of each entity slot (``""``: no candidate).
        logits: ``(F, E)`` tensor / array, or ``F`` rows; a row holds at least ``E_f`` scores (extra slots, e.g.
            batch padding, are ignored). ``-inf`` is a valid score (a candidate the model could not reach).
        candidate_spans: ``(F, E_f, 2)`` exclusive character spans, optional.
        first_candidate: index of the first candidate slot (1: GESA windows, entity 0 is the placeholder; 0: XH).
        caller: the name errors start with.
        same_answer: the key under which mentions count as one answer (``None``: each distinct text its own).

    Returns:
        ``{example_id: [{"answer", "logit", "start", "end"}, ...]}`` in first-seen query order, each list sorted by
        ``logit`` (descending; ties keep the first seen); ``start``/``end``: the answer's first mention (``None``
        without ``candidate_spans``).

    Raises:
        ValueError: the inputs disagree in length or shape; a score is NaN (a diverged model: nothing is ranked);
            a query id comes back after another query's features (two queries share an id); a query has no
            candidate in any of its windows.
    """
    rows = _score_rows(logits, caller)
    if not isinstance(first_candidate, int) or isinstance(first_candidate, bool) or first_candidate not in (0, 1):
        raise ValueError(
            f"{caller}: first_candidate must be 0 (XH graphs) or 1 (GESA windows), got {first_candidate!r}"
        )
    if not (len(example_ids) == len(candidate_texts) == len(rows)):
        raise ValueError(
            f"{caller}: {len(example_ids)} example ids, {len(candidate_texts)} candidate rows and {len(rows)} logit "
            "rows must describe the same features (F, E)"
        )
    if candidate_spans is not None and len(candidate_spans) != len(rows):
        raise ValueError(f"{caller}: {len(candidate_spans)} candidate span rows for {len(rows)} features")
    ranked: dict[str, dict[str, dict[str, Any]]] = {}
    mentions: dict[str, dict[str, tuple[int, int]]] = {}  # query -> surface text -> first mention
    previous = None
    for feature, (example_id, texts, scores) in enumerate(zip(example_ids, candidate_texts, rows, strict=True)):
        if example_id != previous and example_id in ranked:
            raise ValueError(
                f"{caller}: example id {example_id!r} comes back at feature {feature} after other queries' features: "
                "two different queries share this id (give each query its own id), or the features were reordered"
            )
        previous = example_id
        if len(texts) > len(scores):
            raise ValueError(
                f"{caller}: feature {feature} ({example_id!r}) has {len(texts)} candidate slots but only "
                f"{len(scores)} logits"
            )
        spans = None if candidate_spans is None else candidate_spans[feature]
        if spans is not None and len(spans) != len(texts):
            raise ValueError(
                f"{caller}: feature {feature} ({example_id!r}) has {len(texts)} candidate slots but {len(spans)} spans"
            )
        groups = ranked.setdefault(example_id, {})
        first = mentions.setdefault(example_id, {})
        for index in range(first_candidate, len(texts)):
            text = texts[index]
            if not text:
                continue
            score = float(scores[index])
            if math.isnan(score):
                raise ValueError(
                    f"{caller}: query {example_id!r} has NaN scores (feature {feature}, candidate {text!r}): the "
                    "model's output is not finite (diverged training, or fp16 overflow); no answer can be ranked"
                )
            if spans is not None:
                span = (int(spans[index][0]), int(spans[index][1]))
                if text not in first or span < first[text]:
                    first[text] = span
            key = text if same_answer is None else same_answer(text)
            entry = groups.get(key)
            if entry is None:
                groups[key] = {"answer": text, "logit": score}
            elif score > entry["logit"]:
                entry.update(answer=text, logit=score)
    empty = [example_id for example_id, groups in ranked.items() if not groups]
    if empty:
        raise ValueError(f"{caller}: queries {empty[:5]} have no candidate in any window")
    out = {}
    for example_id, groups in ranked.items():
        answers = sorted(groups.values(), key=lambda entry: -entry["logit"])  # stable: ties keep first seen
        for entry in answers:
            entry["start"], entry["end"] = mentions[example_id].get(entry["answer"], (None, None))
        out[example_id] = answers
    return out


SCORES = ("sigmoid", "softmax")


def answer_score(logit: float) -> float:
    """``sigmoid(logit)``, without overflow for large ``|logit|`` (``-inf`` gives 0)."""
    if logit >= 0:
        return 1.0 / (1.0 + math.exp(-logit))
    value = math.exp(logit)
    return value / (1.0 + value)


def ranked_answers(
    example_ids: Sequence[str],
    candidate_texts: Sequence[Sequence[str]],
    logits: Any,
    candidate_spans: Sequence[Sequence[Sequence[int]]] | None = None,
    first_candidate: int = 1,
    top_k: int | None = None,
    score: str = "sigmoid",
    same_answer: Callable[[str], str] | None = normalize_entity_string,
    caller: str = "ranked_answers",
) -> dict[str, list[dict[str, Any]]]:
    """The ranked answers of every query as a pipeline and ``--do_predict`` give them: ``rank_window_answers`` (same
    arguments), each answer with its score, the first ``top_k`` (``None``: all).

    Args:
        score: ``"sigmoid"``: ``sigmoid(logit)``, the model's probability that this candidate answers (ReCoRD's
            per-candidate binary cross-entropy; scores need not sum to 1); ``"softmax"``: over the query's answers
            (WikiHop's cross-entropy over the candidates; they sum to 1). Both rank exactly as the logits. A
            ``+inf`` logit takes the whole softmax probability (shared among ``+inf`` ties); a query whose answers all
            score ``-inf`` is a ``ValueError``.

    Returns:
        ``{example_id: [{"answer", "score", "start", "end"}, ...]}`` best first, in first-seen query order; ``start``
        / ``end`` (the answer's first mention, exclusive end) only with ``candidate_spans``.
    """
    if score not in SCORES:
        raise ValueError(f"{caller}: score must be one of {SCORES}, got {score!r}")
    ranked = rank_window_answers(
        example_ids, candidate_texts, logits, candidate_spans, first_candidate, caller, same_answer
    )
    out = {}
    for example_id, answers in ranked.items():
        if score == "sigmoid":
            scores = [answer_score(entry["logit"]) for entry in answers]
        else:
            logit = np.array([entry["logit"] for entry in answers], dtype=np.float64)
            top = logit.max()
            if top == -math.inf:
                raise ValueError(
                    f"{caller}: every answer of query {example_id!r} scores -inf (the model reaches none of its "
                    "candidates): no probability can be given"
                )
            # +inf: the limit of the softmax, the +inf answers share the probability (exp(inf - inf) would be NaN)
            weights = (logit == top).astype(np.float64) if top == math.inf else np.exp(logit - top)
            scores = (weights / weights.sum()).tolist()
        out[example_id] = [
            {"answer": entry["answer"], "score": value}
            | ({"start": entry["start"], "end": entry["end"]} if candidate_spans is not None else {})
            for entry, value in zip(answers[:top_k], scores, strict=False)
        ]
    return out


def first_mentions(passage: str, spans: Sequence[tuple[int, int]], texts: Sequence[str]) -> list[tuple[int, int]]:
    """Per candidate text, its first mention among ``spans`` (``(-1, -1)``: none); XH graphs list each candidate string
    once, where GESA windows list every mention."""
    first: dict[str, tuple[int, int]] = {}
    for start, end in sorted(spans):
        first.setdefault(passage[start:end], (start, end))
    return [first.get(text, (-1, -1)) for text in texts]


__all__ = ["SCORES", "answer_score", "first_mentions", "rank_window_answers", "ranked_answers"]
