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
"""The pipelines below the scripts refuse what they would answer wrongly: a list names its bad item's position (a
non-dict item included); ``top_k``, ``threshold`` and ``max_length`` are checked; a diverged (NaN) checkpoint gives
no answer; a relation pipeline refuses a typing checkpoint; a text longer than the model's 512 tokens keeps the words
around its mentions (LUKE's tokenizer cannot truncate with entities), as the entity-task processor does, which also
logs what it cut and the NER gold spans longer than ``max_span_length``."""

from __future__ import annotations

import logging

import pytest
import torch
from transformers import AutoTokenizer, LukeTokenizer
from variant_inputs import xh_config

from gesa.configuration_gesa import GesaConfig
from gesa.modeling_gesa_entity import GesaForEntityClassification, GesaForEntityPairClassification
from gesa.modeling_gesa_multiple_choice import GesaForEntityMultipleChoice
from gesa.modeling_xh import XhForFactVerification
from gesa.modeling_xh_tasks import XhForHotpotQA
from gesa.pipeline_entity import EntityTypingPipeline, RelationClassificationPipeline
from gesa.pipeline_wikihop import WikihopPipeline
from gesa.pipeline_xh_tasks import XhFactVerificationPipeline, XhHotpotQAPipeline
from gesa.processing_entity import EntityTaskProcessor
from gesa.processing_wikihop import WikihopProcessor
from gesa.processing_xh_tasks import XhTaskProcessor
from gesa.records_entity import NerExample, RelationExample, TypingExample

TEXT = "Alice Smith , the chief engineer , resigned ."
TYPING = {"text": TEXT, "entity_span": [0, 11]}
RELATION = {"text": TEXT, "head_span": [0, 11], "tail_span": [18, 32]}
WIKIHOP = {"query": "country velmor", "supports": ["Velmor is in France."], "candidates": ["france", "spain"]}


@pytest.fixture(scope="module")
def tokenizer(tiny_luke_dir):
    return AutoTokenizer.from_pretrained(tiny_luke_dir)


@pytest.fixture(scope="module")
def typing(tiny_luke_dir, tokenizer):
    model = GesaForEntityClassification.from_luke_pretrained(tiny_luke_dir, num_labels=3).eval()
    return EntityTypingPipeline(model=model, tokenizer=tokenizer)


@pytest.fixture(scope="module")
def relation(tiny_luke_dir, tokenizer):
    model = GesaForEntityPairClassification.from_luke_pretrained(tiny_luke_dir, num_labels=3).eval()
    return RelationClassificationPipeline(model=model, tokenizer=tokenizer)


# ----------------------------------------------------------------------------------------------- lists


def test_entity_pipeline_list_names_the_bad_items_position(typing):
    with pytest.raises(ValueError, match=r"inputs\[1\] \(of 3\): entity-typing: 'entity_span' must be"):
        typing([TYPING, {"text": TEXT, "entity_span": [5, 500]}, TYPING])
    with pytest.raises(ValueError, match=r"inputs\[0\] \(of 1\): entity-typing: each input must be a dict"):
        typing([[1, 2]])


def test_wikihop_pipeline_list_names_the_bad_items_position_and_a_non_dict(tiny_luke_dir):
    tokenizer = LukeTokenizer.from_pretrained(tiny_luke_dir)
    config = GesaConfig(vocab_size=2100, entity_vocab_size=4, hidden_size=32, entity_emb_size=16, num_hidden_layers=1,
                        num_attention_heads=4, intermediate_size=37, max_position_embeddings=600,
                        attention_window=16)  # fmt: skip
    runner = WikihopPipeline(
        model=GesaForEntityMultipleChoice(config).eval(),
        tokenizer=tokenizer,
        processor=WikihopProcessor(tokenizer, max_seq_length=256, max_query_length=16),
    )
    with pytest.raises(ValueError, match=r"inputs\[1\] \(of 2\): wikihop.*each input must be a dict.*got tuple"):
        runner([WIKIHOP, ("query", "x")])
    with pytest.raises(ValueError, match=r"inputs\[1\] \(of 2\): .*'candidates' must be a non-empty list"):
        runner([WIKIHOP, {**WIKIHOP, "candidates": []}])
    with pytest.raises(ValueError, match="top_k must be a positive integer"):
        runner(WIKIHOP, top_k=True)


def test_xh_pipelines_list_names_the_bad_items_position(tiny_luke_dir):
    tokenizer = LukeTokenizer.from_pretrained(tiny_luke_dir)
    hotpot = XhHotpotQAPipeline(
        model=XhForHotpotQA(xh_config()).eval(),
        tokenizer=tokenizer,
        processor=XhTaskProcessor(tokenizer, max_node_length=64, max_query_length=24),
    )
    question = {"question": "Where?", "context": [["Paris", ["Paris is a city."]]]}
    with pytest.raises(
        ValueError, match=r"inputs\[1\] \(of 2\): pipeline input: HotpotQA question 'input': 'question'"
    ):
        hotpot([question, {**question, "question": ""}])
    fever = XhFactVerificationPipeline(
        model=XhForFactVerification(xh_config()).eval(),
        tokenizer=tokenizer,
        processor=XhTaskProcessor(tokenizer, max_node_length=64, max_query_length=24, task="fever"),
        pages={"Lyon": {0: "Lyon is a city."}},
    )
    with pytest.raises(ValueError, match=r"inputs\[0\] \(of 1\): xh-fact-verification: each input must be a dict"):
        fever(["Lyon is a city."])
    with pytest.raises(ValueError, match=r"'predicted_pages' must be a list of wiki page ids, got 'Lyon'"):
        fever({"claim": "Lyon is in France.", "predicted_pages": "Lyon"})


def test_a_mention_span_on_whitespace_only_is_refused(typing):
    with pytest.raises(ValueError, match=r"entity-typing: 'entity_span' \[5, 6\] covers only whitespace"):
        typing({"text": TEXT, "entity_span": [5, 6]})


# ----------------------------------------------------------------------------------------------- options


@pytest.mark.parametrize("top_k", [0, False, -1, "x", 1.5])
def test_relation_pipeline_refuses_a_top_k_that_is_no_positive_integer(relation, top_k):
    with pytest.raises(ValueError, match=r"relation-classification: top_k must be a positive integer"):
        relation(RELATION, top_k=top_k)


@pytest.mark.parametrize("threshold", [float("nan"), 2.0, -0.1, "high", True])
def test_typing_pipeline_refuses_a_threshold_that_is_no_probability(typing, threshold):
    with pytest.raises(ValueError, match=r"entity-typing: threshold must be a probability from 0 to 1"):
        typing(TYPING, threshold=threshold)


@pytest.mark.parametrize("max_length", [-5, 0, True, "64", 10**6])
def test_entity_pipeline_refuses_a_max_length_outside_the_models_positions(typing, max_length):
    with pytest.raises(ValueError, match=r"entity-typing: max_length must be an integer from 8 to"):
        typing(TYPING, max_length=max_length)


# ----------------------------------------------------------------------------------------------- models


def test_a_diverged_checkpoint_gives_no_answer(tiny_luke_dir, tokenizer):
    model = GesaForEntityPairClassification.from_luke_pretrained(tiny_luke_dir, num_labels=3).eval()
    with torch.no_grad():
        model.classifier.weight.fill_(float("nan"))
    runner = RelationClassificationPipeline(model=model, tokenizer=tokenizer)
    with pytest.raises(ValueError, match=r"relation-classification: the model's scores are not finite.*diverged"):
        runner(RELATION)


def test_a_relation_pipeline_refuses_a_typing_model(typing, tokenizer):
    with pytest.raises(ValueError, match=r"answers through pipeline_entity.EntityTypingPipeline"):
        RelationClassificationPipeline(model=typing.model, tokenizer=tokenizer)


# ----------------------------------------------------------------------------------------------- long inputs


def test_entity_pipelines_answer_a_text_longer_than_512_tokens(typing, relation):
    filler = " ".join(["word"] * 700)
    long_text = f"{filler} {TEXT} {filler}"
    shift = len(filler) + 1
    assert len(typing.tokenizer(long_text)["input_ids"]) > 1000
    typed = typing({"text": long_text, "entity_span": [shift, shift + 11]}, threshold=0.0)
    assert len(typed) == 3
    ranked = relation({"text": long_text, "head_span": [shift, shift + 11], "tail_span": [shift + 18, shift + 32]})
    assert len(ranked) == 3 and sum(row["score"] for row in ranked) == pytest.approx(1.0, abs=1e-5)
    # the kept window holds the mention: the encoded mention is exactly Alice Smith
    inputs = typing.preprocess({"text": long_text, "entity_span": [shift, shift + 11]}, max_length=32)
    assert inputs["input_ids"].shape[1] <= 32
    positions = [p for p in inputs["entity_position_ids"][0, 0].tolist() if p >= 0]
    assert typing.tokenizer.decode(inputs["input_ids"][0, positions]).strip() == "Alice Smith"


def test_entity_processor_keeps_the_words_around_the_mentions_and_logs_the_cut(tokenizer, caplog):
    words = ["filler"] * 300
    tokens = [*words, "Alice", "Smith", "met", "Bob", *words]
    processor = EntityTaskProcessor(tokenizer, "relation_classification", ["per:friend"], max_length=40)
    with caplog.at_level(logging.WARNING):
        [feature] = processor.encode_all([RelationExample("r1", tokens, (300, 302), (303, 304), "per:friend")])
    assert len(feature["input_ids"]) <= 40
    head = [p for p in feature["entity_position_ids"][0] if p >= 0]
    tail = [p for p in feature["entity_position_ids"][1] if p >= 0]
    assert tokenizer.decode([feature["input_ids"][p] for p in head]).strip() == "Alice Smith"
    assert tokenizer.decode([feature["input_ids"][p] for p in tail]).strip() == "Bob"
    assert "1 examples longer than max_length=40 tokens kept only the words around their mentions" in caplog.text
    typing_processor = EntityTaskProcessor(tokenizer, "entity_typing", ["person"], max_length=40)
    [feature] = typing_processor.encode_all([TypingExample("t1", tokens, 300, 302, ["person"])])
    assert len(feature["input_ids"]) <= 40


def test_ner_gold_spans_longer_than_max_span_length_are_logged(tokenizer, caplog):
    tokens = ["The", "Bank", "of", "New", "York", "opened", "."]
    example = NerExample("s1", tokens, ["O", "B-ORG", "I-ORG", "I-ORG", "I-ORG", "O", "O"], [(1, 5, "ORG")])
    processor = EntityTaskProcessor(tokenizer, "ner", ["O", "ORG"], max_span_length=2)
    with caplog.at_level(logging.WARNING):
        processor.encode_all([example])
    assert "1 gold entity spans are longer than max_span_length=2 words" in caplog.text


@pytest.mark.parametrize("name, value", [("max_length", -5), ("max_span_length", 0), ("max_entities", True)])
def test_entity_processor_refuses_a_bad_length(tokenizer, name, value):
    with pytest.raises(ValueError, match=rf"EntityTaskProcessor: {name} must be an integer"):
        EntityTaskProcessor(tokenizer, "ner", ["O", "ORG"], **{name: value})


def test_pretraining_sentences_longer_than_max_length_keep_their_longest_prefix(tokenizer, caplog):
    from gesa.training.entity import encode_pretraining

    tokens = ["Alice", "met", "Bob", *(["filler"] * 200), "Carol"]
    tags = ["B-PER", "O", "B-PER", *(["O"] * 200), "B-PER"]
    example = NerExample("p1", tokens, tags, [(0, 1, "PER"), (2, 3, "PER"), (203, 204, "PER")])
    with caplog.at_level(logging.WARNING):
        [feature] = encode_pretraining(tokenizer, [example], max_length=24)
    assert len(feature["input_ids"]) <= 24 and len(feature["entity_ids"]) == 2  # Carol lies past the kept prefix
    assert tokenizer.decode(feature["input_ids"]).startswith("<s>Alice met Bob filler")
    assert "1 of 1 pre-training sentences are longer than max_length=24 tokens" in caplog.text
