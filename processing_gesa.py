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
"""ReCoRD data pipeline for GESA: ``GesaProcessor`` (windows and features).

This flat module is copied next to every saved checkpoint (``AutoProcessor.from_pretrained(...,
trust_remote_code=True)``), with the siblings it imports relatively (``ProcessorMixin.save_pretrained`` copies them
too): ``records_gesa`` (reading and validating records), ``candidates_gesa`` (spaCy candidates and sentences, string
normalisation, the reference entity graph), ``windows_gesa`` (document windows and the features of one query) and
``collator_gesa`` (feature columns, ``GesaDataCollator``). Their public
names are importable from here as before.

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

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from tokenizers import AddedToken, Tokenizer
from transformers import BatchFeature, PreTrainedTokenizerBase
from transformers.utils import logging

from .answers_gesa import rank_window_answers
from .candidates_gesa import (
    DEFAULT_NER_LABELS,
    EDGE_MATCH,
    EDGE_NONE,
    EDGE_PLC,
    EDGE_SELF,
    EDGE_SENT,
    build_entity_graph,
    ner_candidates,
    normalize_entity_string,
    sentence_starts,
    string_occurrences,
    token_string_ids,
)
from .collator_gesa import (
    CANDIDATE_SPANS_COLUMN,
    EVAL_COLUMNS,
    MODEL_INPUT_NAMES,
    GesaDataCollator,
)
from .inputs_gesa import InputError
from .processing_base_gesa import ProcessorBase
from .records_gesa import (
    HIGHLIGHT_PATTERN,
    RECORD_HIGHLIGHT,
    RECORD_PLACEHOLDER,
    InvalidExample,
    RecordExample,
    check_example,
    content_id,
    end_convention_hint,
    example_error,
    integer_spans,
    parse_answers,
    span_as_given,
    to_record_examples,
)
from .structure_gesa import LUKE_MASK_ENTITY_ID
from .windows_gesa import (
    ADDED_TOKEN_SOURCES,
    ENTITY_MARKER_TOKEN,
    HIGHLIGHT_TOKEN,
    PLACEHOLDER_TOKEN,
    PreparedPassage,
    WindowLayout,
    append_features,
    mark_passage,
)

logger = logging.get_logger(__name__)

CANDIDATE_SOURCES = ("auto", "annotations", "ner")

# Every Unicode whitespace code point becomes one ASCII space: lengths (hence character offsets) are kept, and
# newlines / no-break spaces tokenise like the spaces LUKE was pre-trained on (LUKE replaced "\n" by " ").
# (All of Python's whitespace code points lie below U+3001.)
_WHITESPACE_TO_SPACE = {cp: " " for cp in range(0x3001) if chr(cp).isspace() and chr(cp) != " "}
_HIGHLIGHT_PATTERN = HIGHLIGHT_PATTERN


def _looks_like_one_span(value: Any) -> bool:
    """Whether ``value`` looks like one ``(start, end)`` span (python or numpy numbers), not a list of spans."""
    return (
        isinstance(value, (Sequence, np.ndarray))
        and not isinstance(value, str)
        and len(value) > 0
        and isinstance(value[0], (int, float, np.number))
    )


def _splits_word(text: str, index: int) -> bool:
    """Whether the character boundary ``index`` lies inside a run of letters/digits."""
    return 0 < index < len(text) and text[index - 1].isalnum() and text[index].isalnum()


def _is_integer(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def check_processor_arguments(**arguments: Any) -> None:
    """One ``TypeError``/``ValueError`` naming the first constructor argument of the wrong type or value.

    Sizes are integers (a float or a string is refused, not truncated or parsed), flags are ``bool`` (the string
    ``"false"`` is refused, not read as true), ``ner_labels`` is ``None`` or a list of label strings (one string is
    refused, not split into characters).
    """
    for name in ("max_seq_length", "doc_stride", "max_query_length", "max_entities", "max_mention_length"):
        value = arguments[name]
        if not _is_integer(value):
            raise TypeError(
                f"GesaProcessor: {name} must be an integer, got {type(value).__name__} {value!r}; "
                f"e.g. {name}={int(value) if isinstance(value, float) and value.is_integer() else 512}"
            )
    if not isinstance(arguments["skip_invalid"], (bool, np.bool_)):
        value = arguments["skip_invalid"]
        raise TypeError(f"GesaProcessor: skip_invalid must be True or False, got {type(value).__name__} {value!r}")
    if not isinstance(arguments["spacy_model"], str):
        value = arguments["spacy_model"]
        raise TypeError(
            f"GesaProcessor: spacy_model must be the name of a spaCy pipeline, got {type(value).__name__} {value!r}"
        )
    labels = arguments["ner_labels"]
    if labels is not None and (
        isinstance(labels, (str, bytes, Mapping))
        or not isinstance(labels, (Sequence, set, frozenset))
        or not all(isinstance(label, str) for label in labels)
    ):
        raise TypeError(
            f"GesaProcessor: ner_labels must be None or a list of spaCy entity labels, got {labels!r}; "
            "e.g. ner_labels=['PERSON', 'ORG']"
        )
    if arguments["candidate_source"] not in CANDIDATE_SOURCES:
        raise ValueError(
            f"GesaProcessor: candidate_source must be one of {CANDIDATE_SOURCES}, got {arguments['candidate_source']!r}"
        )
    mask_id = arguments["entity_mask_id"]
    if mask_id is not None and (not _is_integer(mask_id) or mask_id < 0):
        raise TypeError(f"GesaProcessor: entity_mask_id must be None or an entity id >= 0, got {mask_id!r}")


class GesaProcessor(ProcessorBase):
    """Turns ReCoRD examples (three input shapes) into GESA features, one per document window.

    Wraps LUKE's fast word tokenizer (``LukeTokenizer``; a fast RoBERTa tokenizer works too) and adds the word
    tokens ``[HL]``, ``[PLC]``, ``[ENT]`` (in LUKE's order). Feature columns (python lists; ``L`` words, ``E``
    entities incl. the placeholder, ``M`` longest mention of the feature):

    - ``input_ids``, ``attention_mask``, ``token_type_ids`` (zeros), ``global_attention_mask``: ``(L,)``;
      global attention is 1 on ``<s>``, 2 on the question tokens (``[PLC]`` included), 0 elsewhere.
    - ``question_string_ids``: ``(L,)``, on each question token the string id (as ``entity_string_ids``) of the
      passage candidate whose whole-word occurrence in the query it belongs to (matched on text, the same
      normalisation; ``@placeholder`` never), ``-1`` elsewhere: the question's mentions (paper 3.3's mention label).
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

    ``stats`` / ``invalid_examples`` accumulate what the encode calls cut or skipped (each logged, ``ProcessorBase``).
    """

    # every cap and lossy drop at WARNING, so that it shows at the default verbosity
    cap_warnings = {
        "query_truncated": "{query_truncated} queries cut to max_query_length={max_query_length} tokens around [PLC]",
        "mention_truncated": (
            "{mention_truncated} mentions cut to max_mention_length={max_mention_length} word positions"
        ),
        "entity_cap_window_splits": (
            "{entity_cap_window_splits} windows split to keep at most max_entities={max_entities} entities "
            "(placeholder included)"
        ),
        "overlapping_spans_dropped": (
            "{overlapping_spans_dropped} overlapping entity spans dropped (the earlier, longer one is kept)"
        ),
        "answers_not_in_candidates": (
            "{answers_not_in_candidates} queries whose gold answers match no candidate (all labels 0)"
        ),
    }
    cap_notes = {
        "duplicate_spans_dropped": "{duplicate_spans_dropped} duplicate entity spans merged",
        "windows_without_candidates_dropped": (
            "{windows_without_candidates_dropped} windows without any complete candidate mention dropped"
        ),
    }

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
        check_processor_arguments(
            max_seq_length=max_seq_length,
            doc_stride=doc_stride,
            max_query_length=max_query_length,
            max_entities=max_entities,
            max_mention_length=max_mention_length,
            spacy_model=spacy_model,
            ner_labels=ner_labels,
            candidate_source=candidate_source,
            entity_mask_id=entity_mask_id,
            skip_invalid=skip_invalid,
        )
        if max_entities < 2:
            raise ValueError(f"max_entities counts the placeholder and must be >= 2, got {max_entities}")
        if doc_stride < 1 or max_mention_length < 1 or max_query_length < 1:
            raise ValueError("doc_stride, max_mention_length and max_query_length must be positive")
        if max_seq_length < max_query_length + 4 + 3:
            raise ValueError(
                f"max_seq_length={max_seq_length} leaves no room for a passage window after {max_query_length} "
                "query tokens and 4 special tokens"
            )
        vocab = tokenizer.get_vocab()
        missing = [
            source
            for source in ADDED_TOKEN_SOURCES.values()
            if tokenizer.convert_tokens_to_ids(source) in (None, tokenizer.unk_token_id) and source not in vocab
        ]
        if missing:
            raise ValueError(
                f"the tokenizer ({type(tokenizer).__name__}, {len(tokenizer)} tokens) has no word token for "
                f"{missing}: it has no real word vocabulary. A checkpoint folder needs its tokenizer files "
                "(tokenizer.json, or vocab.json + merges.txt); save the processor with save_pretrained, or pass "
                "the tokenizer of the model's base checkpoint"
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
            if entity_spans is not None and (
                isinstance(entity_spans, (str, Mapping))
                or len(entity_spans) == 0
                or _looks_like_one_span(entity_spans[0])
            ):
                entity_spans = [entity_spans]  # (a string or a dict is that example's error)
            if answers is not None and (
                isinstance(answers, (str, Mapping)) or len(answers) == 0 or isinstance(answers[0], str)
            ):
                answers = [answers]
        if isinstance(queries, str):
            queries = [queries]
        if len(passages) != len(queries):
            raise ValueError(f"got {len(passages)} passages but {len(queries)} queries")
        for name, values in (("entity_spans", entity_spans), ("answers", answers), ("example_ids", example_ids)):
            if values is not None and len(values) != len(passages):
                raise ValueError(f"{name} has {len(values)} items for {len(passages)} passages")
        examples, errors = [], {}
        for index, (passage, query) in enumerate(zip(passages, queries, strict=True)):
            if example_ids is not None:
                example_id = str(example_ids[index])
            else:
                example_id = content_id(str(passage), str(query))
            example = RecordExample(example_id=example_id, passage=passage, query=query)
            try:
                given = None if entity_spans is None else entity_spans[index]
                if given is not None:
                    example.entity_spans = integer_spans(given, example_id)
                    example.span_texts = [None] * len(example.entity_spans)
                if answers is not None and answers[index] is not None:
                    example.answers, _ = parse_answers(
                        answers[index],
                        False,
                        lambda message, example_id=example_id: example_error(example_id, message),
                    )
            except ValueError as error:
                errors[index] = error
            examples.append(example)
        columns = self.encode_examples(
            examples,
            candidate_source=candidate_source,
            skip_invalid=skip_invalid,
            return_candidate_spans=return_candidate_spans,
            return_sample_mapping=True,
            errors=errors,
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
        skip = self.skip_invalid if skip_invalid is None else skip_invalid
        malformed: list[InvalidExample] = []
        examples = to_record_examples(records, invalid=malformed if skip else None)
        return self.encode_examples(
            examples,
            candidate_source=candidate_source,
            skip_invalid=skip_invalid,
            return_candidate_spans=return_candidate_spans,
            malformed=malformed,
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
        """Best answer text per query: the top of ``rank_answers`` (scores merged over windows, max per answer).

        Every query of ``example_ids`` gets exactly one answer; see ``rank_answers`` for the shapes and the errors.

        Returns:
            ``{example_id: predicted answer text}``.
        """
        ranked = rank_window_answers(example_ids, candidate_texts, logits, caller="post_process_predictions")
        return {example_id: answers[0]["answer"] for example_id, answers in ranked.items()}

    @staticmethod
    def rank_answers(
        example_ids: Sequence[str],
        candidate_texts: Sequence[Sequence[str]],
        logits: Any,
        candidate_spans: Sequence[Sequence[Sequence[int]]] | None = None,
        first_candidate: int = 1,
    ) -> dict[str, list[dict[str, Any]]]:
        """Every answer per query, best first, merged over windows as the ReCoRD evaluation merges them
        (``rank_window_answers``: the one place that merges window scores)."""
        return rank_window_answers(example_ids, candidate_texts, logits, candidate_spans, first_candidate)

    # ------------------------------------------------------------------ the pipeline

    def encode_examples(
        self,
        examples: Sequence[RecordExample],
        candidate_source: str | None = None,
        skip_invalid: bool | None = None,
        return_candidate_spans: bool = False,
        return_sample_mapping: bool = False,
        errors: Mapping[int, ValueError] | None = None,
        malformed: Sequence[InvalidExample] = (),
    ) -> dict[str, list]:
        """Encode canonical examples (batched tokenizer and spaCy calls; passages shared by queries encoded once).

        ``errors``: index -> the error of an example already found invalid (rejected, or skipped with
        ``skip_invalid``); ``malformed``: items already skipped before they became examples (reported with the rest).

        Returns:
            Columns (dict of lists, one item per feature); see the class docstring. With ``return_sample_mapping``,
            also ``overflow_to_sample_mapping`` ``(F,)``: index in ``examples`` of each feature.
        """
        source = self.candidate_source if candidate_source is None else candidate_source
        if source not in CANDIDATE_SOURCES:
            raise ValueError(f"candidate_source must be one of {CANDIDATE_SOURCES}, got {source!r}")
        skip = self.skip_invalid if skip_invalid is None else skip_invalid
        stats: Counter[str] = Counter()
        invalid: list[InvalidExample] = list(malformed)
        errors = errors or {}

        def reject(index: int, error: ValueError) -> None:
            if not skip:
                raise error
            invalid.append(InvalidExample(examples[index].example_id, str(error)))

        # Decided on the whole input, so that a batch whose examples were all skipped keeps the same columns.
        with_labels = any(example.answers for example in examples)
        first_of_id: dict[str, tuple[str, str]] = {}
        # 1. Validate queries and passages; normalise the annotated candidate spans.
        candidate_spans: dict[int, list[tuple[int, int]] | None] = {}
        for index, example in enumerate(examples):
            try:
                if index in errors:
                    raise errors[index]
                check_example(example)
                self._check_reserved_tokens(example)
                seen = first_of_id.setdefault(example.example_id, (example.passage, example.query))
                if seen != (example.passage, example.query):
                    raise example_error(
                        example,
                        "another query of this input has the same id (with another passage or query); every query "
                        "needs its own id, or its predictions merge with the other's",
                    )
                if with_labels and not example.answers:
                    raise example_error(
                        example,
                        "has no gold answer, but other queries of this input have some: it would train as all "
                        "negative. Give its answers, or remove it (unlabelled data gives no answers at all)",
                    )
                use_ner = source == "ner" or (source == "auto" and example.entity_spans is None)
                if not use_ner and example.entity_spans is None:
                    raise example_error(example, "has no entity annotation and candidate_source is 'annotations'")
                candidate_spans[index] = None if use_ner else self._clean_spans(example, stats)
            except ValueError as error:
                reject(index, error)

        # 2. Candidates from spaCy NER, once per distinct passage.
        ner_passages = sorted({examples[i].passage for i, spans in candidate_spans.items() if spans is None})
        if ner_passages:
            ner_spans = dict(
                zip(ner_passages, ner_candidates(ner_passages, self.spacy_model, self.ner_labels), strict=True)
            )
            for index, spans in candidate_spans.items():
                if spans is None:
                    candidate_spans[index] = ner_spans[examples[index].passage]
        for index in [i for i, spans in candidate_spans.items() if not spans]:
            del candidate_spans[index]
            reject(index, example_error(examples[index], "has no candidate entities in its passage"))

        # 3. Tokenise every distinct (passage, candidates) once, and every query, in batched calls.
        passage_keys: dict[tuple[str, tuple[tuple[int, int], ...]], int] = {}
        example_passage: dict[int, int] = {}
        for index, spans in candidate_spans.items():
            key = (examples[index].passage, tuple(spans))
            example_passage[index] = passage_keys.setdefault(key, len(passage_keys))
        prepared = self._prepare_passages(list(passage_keys))
        queries = self._tokenize_queries([examples[index].query for index in candidate_spans])

        # 4. Windows and features.
        layout = WindowLayout(
            max_seq_length=self.max_seq_length,
            doc_stride=self.doc_stride,
            max_query_length=self.max_query_length,
            max_entities=self.max_entities,
            max_mention_length=self.max_mention_length,
            entity_mask_id=self.entity_mask_id,
            cls_token_id=self.tokenizer.cls_token_id,
            sep_token_id=self.tokenizer.sep_token_id,
            placeholder_token_id=self.placeholder_token_id,
        )
        columns: dict[str, list] = {name: [] for name in MODEL_INPUT_NAMES + EVAL_COLUMNS}
        if with_labels:
            columns["labels"] = []
        if return_candidate_spans:
            columns[CANDIDATE_SPANS_COLUMN] = []
        if return_sample_mapping:
            columns["overflow_to_sample_mapping"] = []
        for index, (ids, marked, offsets) in zip(candidate_spans, queries, strict=True):
            example = examples[index]
            passage = prepared[example_passage[index]]
            try:
                if isinstance(passage, ValueError):
                    raise example_error(example, str(passage))
                placeholders = [(m.start(), m.end()) for m in re.finditer(re.escape(PLACEHOLDER_TOKEN), marked)]
                occurrences = string_occurrences(marked, passage.candidate_texts, passage.string_ids, placeholders)
                count = append_features(
                    layout,
                    columns,
                    example,
                    passage,
                    ids,
                    stats,
                    with_labels,
                    return_candidate_spans,
                    token_string_ids(offsets, occurrences),
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

    @staticmethod
    def _check_reserved_tokens(example: RecordExample) -> None:
        """The added word tokens may not occur in the text: they would be read as markers."""
        for name, text in (("passage", example.passage), ("query", example.query)):
            for token in ADDED_TOKEN_SOURCES:
                if token in text:
                    raise example_error(example, f"{name} contains the reserved token string {token!r}")

    def _clean_spans(self, example: RecordExample, stats: Counter[str]) -> list[tuple[int, int]]:
        """Sorted, de-duplicated, non-overlapping EXCLUSIVE spans of an annotated example (``check_example`` passed).

        Word-boundary rule: a span's start and end must fall on token boundaries of the unmarked passage as the word
        tokenizer sees it, because the ``[ENT]`` markers put around the span would otherwise split a token and change
        the tokens of the text (``"tephan"`` inside ``"Stephan"``). Only a boundary that splits a run of letters/digits
        is checked against the tokenizer's offsets: a boundary next to whitespace, punctuation or a passage end is a
        word edge, and a mention ending there is real ReCoRD data even where byte-level BPE glues punctuation into one
        token (``"U.S."`` before ``"-based"`` or ``":"``, 3 of the 2145 spans of the shared samples). So a boundary is
        rejected exactly when it lies inside a run of letters/digits that the tokenizer keeps in one token.
        """
        passage = example.passage
        hint = end_convention_hint(example)
        token_boundaries: set[int] | None = None  # computed only for a passage with a span that splits a word
        spans = []
        for start, end in example.entity_spans:
            given = span_as_given(example, start, end)
            mention = passage[start:end]
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
                    raise example_error(
                        example,
                        f"entity span {given} = {mention!r} {where} inside a word: the word tokenizer has no token "
                        f"boundary at character {' and '.join(map(str, inside_tokens))}, so the [ENT] markers "
                        f"would split a token of {passage[word_start:word_end]!r}. A candidate must cover whole "
                        f"words: fix the offsets, e.g. {span_as_given(example, word_start, word_end)} = "
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

    def _prepare_passages(
        self, passage_keys: Sequence[tuple[str, tuple[tuple[int, int], ...]]]
    ) -> list[PreparedPassage | ValueError]:
        """Mark, tokenise (one batched call) and annotate every distinct passage; errors are returned, not raised."""
        normalized = [passage.translate(_WHITESPACE_TO_SPACE) for passage, _ in passage_keys]
        marked = [mark_passage(text, spans) for text, (_, spans) in zip(normalized, passage_keys, strict=True)]
        encodings = self._tokenizer_backend().encode_batch(marked, add_special_tokens=False)
        starts_per_passage = sentence_starts(normalized)
        marker_id = self.entity_marker_token_id
        prepared: list[PreparedPassage | ValueError] = []
        for (passage, spans), encoding, starts in zip(passage_keys, encodings, starts_per_passage, strict=True):
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
                PreparedPassage(
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

    def _tokenize_queries(self, queries: Sequence[str]) -> list[tuple[list[int], str, list[tuple[int, int]]]]:
        """Each query with ``@placeholder`` -> ``[PLC]``: its word ids, the marked text and the tokens' character
        offsets in it (``append_features`` cuts the ids to ``max_query_length`` around ``[PLC]``)."""
        marked = [
            query.translate(_WHITESPACE_TO_SPACE).replace(RECORD_PLACEHOLDER, " " + PLACEHOLDER_TOKEN)
            for query in queries
        ]
        encodings = self._tokenizer_backend().encode_batch(marked, add_special_tokens=False)
        return [(encoding.ids, text, encoding.offsets) for encoding, text in zip(encodings, marked, strict=True)]


GesaProcessor.register_for_auto_class("AutoProcessor")


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
    "InputError",
    "InvalidExample",
    "RecordExample",
    "build_entity_graph",
    "normalize_entity_string",
    "to_record_examples",
]
