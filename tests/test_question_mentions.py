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
"""The mention label reaches the question (paper 3.3): an entity is linked to every word of every string-matched
occurrence of its string in the word input `[CLS] Q [SEP] [SEP] D [SEP]`, the query's included.

Checked: the text matcher (whole words, same normalisation, a name that opens the query, never `@placeholder`); the
processor's `question_string_ids` against the synthetic one-hop query; the e2w labels against a plain loop over the
features; one set of weights under `full` and `no_question_mentions` (equal logits exactly where the query names no
candidate of the window); `luke` and the entity position embeddings untouched by question occurrences; the same on the
held-out real ReCoRD queries of ../shared.
"""

from __future__ import annotations

import pytest
import torch
from model_helpers import lukes_own_queries, randomize_label_tables
from record_fixtures import features_of, project_records, read_jsonl
from tiny_luke import RECORD_DIR
from transformers import AutoTokenizer
from wikihop_fixtures import velmor_record

from gesa import GesaConfig, GesaForEntitySpanQA
from gesa.candidates_gesa import normalize_entity_string, string_occurrences
from gesa.processing_gesa import GesaProcessor
from gesa.structure_gesa import RelativeLabels, build_entity_word_labels, entity_defaults
from gesa.training.synthetic_cloze import generate_records

HELD_OUT_FILES = ("fewglue_dev32.jsonl", "explorer_dev60.jsonl")
LABEL_STD = 30.0  # as test_ablation_ranking: label terms q . r / sqrt(d) of a few units, like trained logits
# float32 rounding moves the tiny model's logits by ~1e-7 (test_ablation_ranking); a window that names no candidate
# runs the very same operations under both presets, so its logits are equal exactly
CLEARLY_DIFFERENT = 1e-5


def occurrences(text: str, candidates: list[str], excluded=()) -> list[tuple[str, int]]:
    ids = {}
    string_ids = [ids.setdefault(normalize_entity_string(c), len(ids)) for c in candidates]
    return [(text[start:end], i) for start, end, i in string_occurrences(text, candidates, string_ids, excluded)]


def test_occurrences_are_whole_words_under_the_candidates_normalisation():
    query = "Barack Obama's aide met the Beatles, U.S. officials and Obamacare fans in @placeholder; Obama-era"
    placeholder = query.index("@placeholder")
    found = occurrences(
        query,
        ["Barack Obama", "Obama", "The Beatles", "U.S.", "Placeholder", "Care"],
        [(placeholder, placeholder + len("@placeholder"))],
    )
    # longest first: "Barack Obama" is one occurrence, not "Obama" inside it; "Obamacare" holds no whole word
    # "Obama"; the article joins the normalised string; "@placeholder" is never a mention
    assert found == [("Barack Obama", 0), ("the Beatles", 2), ("U.S", 3), ("Obama", 1)]
    assert occurrences("Obama lives in @placeholder.", ["Obama"]) == [("Obama", 0)]  # opens the text
    assert occurrences("Nobody lives there.", ["Obama"]) == []


def one_hop_processor(tokenizer) -> GesaProcessor:
    return GesaProcessor(tokenizer, max_seq_length=128, doc_stride=64, max_query_length=40)


def test_a_name_that_opens_the_query_is_linked_on_its_tokens(tiny_luke_dir):
    """The synthetic one-hop query `{x} lives in @placeholder.`: x's tokens, and only they, carry x's string id,
    although byte-level BPE gives the first word of the query no leading-space token."""
    tokenizer = AutoTokenizer.from_pretrained(tiny_luke_dir)
    record = generate_records(1, hops=(1,), seed=3)[0]
    name = record["qas"][0]["query"].split(" lives in ")[0]
    features = features_of(one_hop_processor(tokenizer).encode_records([record]))
    assert features
    for feature in features:
        question_length = sum(value == 2 for value in feature["global_attention_mask"])
        name_tokens = tokenizer(name, add_special_tokens=False)["input_ids"]
        assert feature["input_ids"][1 : 1 + len(name_tokens)] == name_tokens
        strings = {
            text: string_id
            for text, string_id in zip(feature["candidate_texts"], feature["entity_string_ids"], strict=True)
            if text
        }
        expected = [strings[name]] * len(name_tokens) + [-1] * (question_length - len(name_tokens))
        assert feature["question_string_ids"][1 : 1 + question_length] == expected
        assert set(feature["question_string_ids"][1 + question_length :]) == {-1}  # the passage: entity positions
        assert feature["question_string_ids"][0] == -1


def linked_words_by_loop(feature: dict, with_question: bool) -> list[set[int]]:
    """Per entity, the word positions the mention label links it to: every word of every mention (passage rows of
    `entity_position_ids`) of an entity with its string, and (with the question) every query word of its string."""
    strings, rows = feature["entity_string_ids"], feature["entity_position_ids"]
    linked = []
    for e, string in enumerate(strings):
        words = {p for p in rows[e] if p >= 0}
        for other, other_string in enumerate(strings):
            if string >= 0 and other_string == string:
                words |= {p for p in rows[other] if p >= 0}
        if with_question and string >= 0:
            words |= {word for word, s in enumerate(feature["question_string_ids"]) if s == string}
        linked.append(words)
    return linked


@pytest.mark.parametrize("ablation", ["full", "no_question_mentions"])
def test_mention_labels_link_the_words_a_plain_loop_finds(tiny_luke_dir, ablation):
    tokenizer = AutoTokenizer.from_pretrained(tiny_luke_dir)
    processor = one_hop_processor(tokenizer)
    records = project_records()[:6] + generate_records(4, hops=(1, 2), seed=1)
    collate = processor.get_data_collator()
    config = GesaConfig(ablation=ablation, max_relative_position=4)
    mention = RelativeLabels(config.max_relative_position).mention
    named = 0
    for feature in features_of(processor.encode_records(records)):
        batch = collate([feature])
        placeholder, strings, _ = entity_defaults(
            batch["placeholder_entity_mask"], batch["entity_string_ids"], None, 1, len(feature["entity_ids"]), "cpu"
        )
        e2w = build_entity_word_labels(
            config,
            len(feature["input_ids"]),
            batch["global_attention_mask"],
            batch["entity_position_ids"],
            placeholder,
            strings,
            batch["question_string_ids"],
        )[0]
        model_links = [set((e2w[e] == mention).nonzero().flatten().tolist()) for e in range(e2w.size(0))]
        # the placeholder's row (entity 0) carries the PLC-question label on the query: candidates only
        assert model_links[1:] == linked_words_by_loop(feature, with_question=ablation == "full")[1:]
        named += linked_words_by_loop(feature, True) != linked_words_by_loop(feature, False)
    assert named  # some query names a candidate of its window


def converted(tiny_luke_dir, processor, ablation: str) -> GesaForEntitySpanQA:
    with lukes_own_queries():  # LABEL_STD is sized for the tiny LUKE's own queries
        model = GesaForEntitySpanQA.from_luke_pretrained(tiny_luke_dir, ablation=ablation)
    model.init_added_word_embeddings(processor.added_token_sources())
    randomize_label_tables(model, LABEL_STD)
    return model.eval()


def one_set_of_weights(tiny_luke_dir, processor) -> tuple[GesaForEntitySpanQA, GesaForEntitySpanQA]:
    full = converted(tiny_luke_dir, processor, "full")
    with lukes_own_queries():
        without = GesaForEntitySpanQA.from_luke_pretrained(tiny_luke_dir, ablation="no_question_mentions")
    without.init_added_word_embeddings(processor.added_token_sources())
    without.load_state_dict(full.state_dict())
    return full, without.eval()


def names_a_window_candidate(feature: dict) -> bool:
    return bool({s for s in feature["question_string_ids"] if s >= 0} & set(feature["entity_string_ids"]))


def compare_presets(full, without, processor, records, minimum: float = CLEARLY_DIFFERENT) -> dict[str, int]:
    """Run both presets on every window; equal logits exactly on windows whose query names none of its candidates,
    logits apart by more than ``minimum`` on the others."""
    collate = processor.get_data_collator()
    seen = {"named": 0, "not_named": 0, "opens": 0}
    for feature in features_of(processor.encode_records(records)):
        batch = {k: v for k, v in collate([feature]).items() if isinstance(v, torch.Tensor)}
        batch.pop("labels", None)
        with torch.no_grad():
            a, b = full(**batch).logits, without(**batch).logits
        candidates = batch["entity_attention_mask"].bool() & ~batch["placeholder_entity_mask"].bool()
        difference = (a - b)[candidates].abs().max().item()
        if names_a_window_candidate(feature):
            assert difference > minimum, feature["example_id"]
            seen["named"] += 1
            seen["opens"] += feature["question_string_ids"][1] in feature["entity_string_ids"]
        else:
            assert difference == 0.0, feature["example_id"]
            seen["not_named"] += 1
    return seen


def test_one_set_of_weights_differs_exactly_where_the_query_names_a_candidate(tiny_luke_dir):
    tokenizer = AutoTokenizer.from_pretrained(tiny_luke_dir)
    processor = one_hop_processor(tokenizer)
    full, without = one_set_of_weights(tiny_luke_dir, processor)
    records = project_records()[:4] + generate_records(4, hops=(1, 2), seed=2)
    seen = compare_presets(full, without, processor, records)
    assert seen["named"] and seen["not_named"] and seen["opens"], seen


def test_question_occurrences_never_reach_luke_or_the_entity_positions(tiny_luke_dir):
    """`luke` (and `no_mention_label`, which adds LUKE's entity position embeddings) read no question occurrence:
    with and without `question_string_ids` their logits are identical."""
    tokenizer = AutoTokenizer.from_pretrained(tiny_luke_dir)
    processor = one_hop_processor(tokenizer)
    features = features_of(processor.encode_records(generate_records(2, hops=(1,), seed=4)))
    batch = {k: v for k, v in processor.get_data_collator()(features).items() if isinstance(v, torch.Tensor)}
    batch.pop("labels", None)
    assert (batch["question_string_ids"] >= 0).any()
    without_question = {k: v for k, v in batch.items() if k != "question_string_ids"}
    for ablation in ("luke", "no_mention_label"):
        model = converted(tiny_luke_dir, processor, ablation)
        with torch.no_grad():
            assert torch.equal(model(**batch).logits, model(**without_question).logits), ablation


@pytest.mark.needs_shared
def test_held_out_real_record_queries(roberta_luke_dir):
    """The held-out real ReCoRD queries of ../shared (FewGLUE dev32, explorer dev60) on RoBERTa's own BPE: many name
    a passage candidate, some as their first words; one set of weights differs under the two presets exactly there."""
    tokenizer = AutoTokenizer.from_pretrained(roberta_luke_dir)
    processor = GesaProcessor(tokenizer, max_seq_length=256, doc_stride=128, max_query_length=64)
    records = [record for name in HELD_OUT_FILES for record in read_jsonl(RECORD_DIR / name)]
    full, without = one_set_of_weights(roberta_luke_dir, processor)
    # same weights and inputs give bitwise-equal logits, so any difference is the question links' (on long real
    # passages a random tiny model's links move the logits by as little as ~1e-6)
    seen = compare_presets(full, without, processor, records, minimum=0.0)
    assert seen["named"] >= 20 and seen["not_named"] >= 20 and seen["opens"] >= 2, seen


WIKIHOP_NAMING_A_CANDIDATE = {
    "id": "WH_question_0",
    "query": "capital_of abo province",
    "supports": ["Velmor is the capital of Abo Province.", "Kastrel is a town in Abo Province."],
    "candidates": ["velmor", "kastrel", "capital"],
    "answer": "velmor",
}
WIKIHOP_NAMING_NONE = velmor_record(
    "WH_question_1", supports=["Velmor is a small town in Abo Province.", "Abo Province is a region of France."]
)


def test_wikihop_query_words_that_name_a_candidate_are_its_mentions(tiny_luke_dir):
    """WikiHop's query `relation subject`: a candidate named there is linked to those words (the supports' matching
    rule, longest match first); the subject's own words were already linked through the query entity. One set of
    weights: `full` and `no_question_mentions` differ exactly on the query that names a candidate."""
    from gesa.modeling_gesa_multiple_choice import GesaForEntityMultipleChoice
    from gesa.processing_wikihop import WikihopProcessor

    tokenizer = AutoTokenizer.from_pretrained(tiny_luke_dir)
    processor = WikihopProcessor(tokenizer, max_seq_length=256, max_query_length=32)
    naming = processor(WIKIHOP_NAMING_A_CANDIDATE)
    ids, strings = naming["input_ids"][0], naming["entity_string_ids"][0]
    question = naming["question_string_ids"][0]
    named = [p for p, s in enumerate(question) if s == strings[3]]  # the candidate "capital"
    assert tokenizer.decode([ids[p] for p in named]).strip().lower() == "capital"
    subject = [p for p, s in enumerate(question) if s == strings[0]]  # the query entity's own string
    assert tokenizer.decode([ids[p] for p in subject]).strip().lower() == "abo province"
    assert all(naming["global_attention_mask"][0][p] == 2 for p in named + subject)  # query words
    assert processor(WIKIHOP_NAMING_NONE)["question_string_ids"][0].count(-1) < len(
        processor(WIKIHOP_NAMING_NONE)["input_ids"][0]
    )  # the subject "velmor" only

    torch.manual_seed(0)
    config = dict(vocab_size=len(tokenizer), entity_vocab_size=4, hidden_size=32, entity_emb_size=16,
                  num_hidden_layers=2, num_attention_heads=4, intermediate_size=37, max_relative_position=8,
                  hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)  # fmt: skip
    full = GesaForEntityMultipleChoice(GesaConfig(ablation="full", **config)).eval()
    with torch.no_grad():
        for layer in full.gesa.encoder.layer:
            layer.attention.self.label_embeddings.weight.normal_(0.0, LABEL_STD)
    without = GesaForEntityMultipleChoice(GesaConfig(ablation="no_question_mentions", **config)).eval()
    without.load_state_dict(full.state_dict())
    for record, differs in ((WIKIHOP_NAMING_A_CANDIDATE, True), (WIKIHOP_NAMING_NONE, False)):
        batch = dict(processor(record, return_tensors="pt"))
        batch.pop("labels", None)
        with torch.no_grad():
            a, b = full(**batch).logits, without(**batch).logits
        candidates = batch["candidate_entity_mask"].bool()
        difference = (a - b)[candidates].abs().max().item()
        assert (difference > CLEARLY_DIFFERENT) if differs else (difference == 0.0), (record["id"], difference)


# ---------------------------------------------------------------------------------------------
# Transformer-XH: every node `<s> Q' </s> </s> S' </s>` carries the query
# ---------------------------------------------------------------------------------------------


def xh_processor(tokenizer):
    from gesa.processing_xh import XhProcessor

    return XhProcessor(tokenizer, max_node_length=96, max_query_length=40)


def test_xh_nodes_link_the_query_words_that_name_a_candidate(tiny_luke_dir):
    """The one-hop query `{x} lives in @placeholder.` in every node of its XH graph: x's tokens, and only they, carry
    x's graph-wide candidate index; the query's word ids are the tokenizer's, as without the links."""
    tokenizer = AutoTokenizer.from_pretrained(tiny_luke_dir)
    record = generate_records(1, hops=(1,), seed=3)[0]
    query = record["qas"][0]["query"]
    name = query.split(" lives in ")[0]
    feature = xh_processor(tokenizer).encode_record_graphs([record])[0]
    candidate = [normalize_entity_string(text) for text in feature["candidate_texts"]].index(
        normalize_entity_string(name)
    )
    left, right = query.split("@placeholder")
    expected_ids = [
        *tokenizer(left.strip(), add_special_tokens=False)["input_ids"],
        tokenizer.convert_tokens_to_ids("[PLC]"),
        *tokenizer(right.strip(), add_special_tokens=False)["input_ids"],
    ]
    name_length = len(tokenizer(name, add_special_tokens=False)["input_ids"])
    assert len(feature["input_ids"]) > 1
    for ids, strings, global_mask in zip(
        feature["input_ids"], feature["question_string_ids"], feature["global_attention_mask"], strict=True
    ):
        question_length = global_mask.count(2)
        assert ids[1 : 1 + question_length] == expected_ids
        assert strings[1 : 1 + question_length] == [candidate] * name_length + [-1] * (question_length - name_length)
        assert strings[0] == -1 and set(strings[1 + question_length :]) == {-1}  # the sentence: entity positions
        assert len(strings) == len(ids)


def xh_with_random_labels(tiny_luke_dir, processor, ablation: str):
    from gesa.modeling_xh import XhForEntitySpanQA

    backbone = "luke" if ablation == "luke" else "gesa"
    with lukes_own_queries():  # LABEL_STD is sized for the tiny LUKE's own queries
        model = XhForEntitySpanQA.from_luke_pretrained(
            tiny_luke_dir, ablation=ablation, backbone=backbone, xh_num_hop_layers=2, classifier_dropout=0.0
        )
    model.init_added_word_embeddings(processor.added_token_sources())
    randomize_label_tables(model, LABEL_STD)
    return model.eval()


def test_xh_one_set_of_weights_differs_exactly_where_the_query_names_a_candidate(tiny_luke_dir):
    """XH graphs under `full` and `no_question_mentions` with one set of weights: equal logits on graphs whose query
    names no candidate, different ones where it does (a one-hop query opens with the name); `luke` reads no
    question occurrence."""
    tokenizer = AutoTokenizer.from_pretrained(tiny_luke_dir)
    processor = xh_processor(tokenizer)
    full = xh_with_random_labels(tiny_luke_dir, processor, "full")
    without = xh_with_random_labels(tiny_luke_dir, processor, "no_question_mentions")
    without.load_state_dict(full.state_dict())
    luke = xh_with_random_labels(tiny_luke_dir, processor, "luke")
    collate = processor.get_data_collator()
    seen = {"named": 0, "not_named": 0, "opens": 0}
    for feature in processor.encode_record_graphs(project_records()[:4] + generate_records(4, hops=(1, 2), seed=2)):
        batch = {k: v for k, v in collate([feature]).items() if isinstance(v, torch.Tensor)}
        labels = batch.pop("labels")
        with torch.no_grad():
            difference = (full(**batch).logits - without(**batch).logits).abs().max().item()
            without_question = {k: v for k, v in batch.items() if k != "question_string_ids"}
            assert torch.equal(luke(**batch).logits, luke(**without_question).logits)
        assert labels.shape[1] == len(feature["candidate_texts"])
        named = any(s >= 0 for node in feature["question_string_ids"] for s in node)
        if named:
            assert difference > CLEARLY_DIFFERENT, feature["example_id"]
            seen["named"] += 1
            seen["opens"] += feature["question_string_ids"][0][1] >= 0
        else:
            assert difference == 0.0, feature["example_id"]
            seen["not_named"] += 1
    assert seen["named"] and seen["not_named"] and seen["opens"], seen
