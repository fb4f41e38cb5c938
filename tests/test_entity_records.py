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
"""Entity-task readers (Open Entity, TACRED, CoNLL-2003, Hub rows): canonical examples, one clear error per bad
record; the metrics against hand counts."""

import itertools
import json
from pathlib import Path

import pytest

from gesa.inputs_gesa import InputError
from gesa.records_entity import (
    bio_spans,
    read_conll_file,
    read_hub_rows,
    read_open_entity_file,
    read_tacred_file,
)
from gesa.training.entity_metrics import (
    relation_chance,
    relation_micro_prf,
    span_chance,
    span_f1,
    typing_chance,
    typing_micro_prf,
)

FIXTURES = Path(__file__).parent / "fixtures" / "entity"


def test_open_entity_record_becomes_mention_span_and_types():
    examples = read_open_entity_file(FIXTURES / "open_entity_crowd.json")
    assert len(examples) == 6
    first = examples[0]
    assert first.tokens[first.start : first.end] == ["the", "mayor"]
    assert first.labels == ["person", "official"] and first.id == "oe-1"


def test_tacred_inclusive_ends_become_exclusive():
    example = read_tacred_file(FIXTURES / "tacred.json")[0]
    assert example.tokens[slice(*example.head)] == ["Alice", "Smith"]
    assert example.tokens[slice(*example.tail)] == ["chief", "engineer"]
    assert (example.relation, example.head_type, example.tail_type) == ("per:title", "PERSON", "TITLE")


def test_conll_file_sentences_and_spans():
    examples = read_conll_file(FIXTURES / "conll2003.txt")
    assert [len(e.tokens) for e in examples] == [5, 5, 7]
    assert examples[1].spans == [(0, 2, "PER"), (3, 4, "LOC")]
    assert examples[2].id == "conll2003.txt:17"


def test_bio_and_iob1_tags_give_the_same_spans():
    assert bio_spans(["B-PER", "I-PER", "O", "B-LOC"]) == [(0, 2, "PER"), (3, 4, "LOC")]
    assert bio_spans(["I-PER", "I-PER", "O", "I-LOC"]) == [(0, 2, "PER"), (3, 4, "LOC")]
    assert bio_spans(["I-PER", "B-PER", "I-ORG"]) == [(0, 1, "PER"), (1, 2, "PER"), (2, 3, "ORG")]


def test_hub_conll_rows_with_classlabel_ids():
    names = ["O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "B-MISC", "I-MISC"]
    (example,) = read_hub_rows("ner", [{"id": "0", "tokens": ["EU", "rejects"], "ner_tags": [3, 0]}], names)
    assert example.spans == [(0, 1, "ORG")]
    with pytest.raises(InputError, match=r"row 0: .*ner_tags\[0\] = 3 is an id with no name; pass tag_names"):
        read_hub_rows("ner", [{"tokens": ["EU", "rejects"], "ner_tags": [3, 0]}])


def test_bad_open_entity_line_names_file_line_and_field(tmp_path):
    path = tmp_path / "oe.json"
    good = json.dumps(dict(left_context_token=[], mention_span="x", right_context_token=[], y_str=["t"]))
    bad = json.dumps(dict(left_context_token=[], mention_span="x", right_context_token=[], y_str=[]))
    path.write_text(good + "\n" + bad + "\n")
    with pytest.raises(InputError, match=rf"{path}, line 2: .*'y_str' must be a non-empty list"):
        read_open_entity_file(path)


def test_bad_tacred_span_names_record_id_and_fix(tmp_path):
    path = tmp_path / "tacred.json"
    row = json.loads((FIXTURES / "tacred.json").read_text())[1]
    row["obj_end"] = 40
    path.write_text(json.dumps([row]))
    with pytest.raises(
        InputError, match=rf"{path}, item 1: TACRED record 't2': .*obj_end=40 outside its 9 tokens.*inclusive"
    ):
        read_tacred_file(path)


def test_a_tacred_record_whose_subject_and_object_are_one_span_is_refused(tmp_path):
    path = tmp_path / "tacred.json"
    row = json.loads((FIXTURES / "tacred.json").read_text())[1]
    row.update(obj_start=row["subj_start"], obj_end=row["subj_end"])
    path.write_text(json.dumps([row]))
    with pytest.raises(InputError, match=rf"{path}, item 1: TACRED record 't2': has its subject and object on the same "
                       r"span.*give the object its own obj_start/obj_end, or remove the record"):  # fmt: skip
        read_tacred_file(path)


def test_bad_conll_line_names_line_and_columns(tmp_path):
    path = tmp_path / "conll.txt"
    path.write_text("EU NNP B-NP B-ORG\nrejects VBZ O\n")
    with pytest.raises(InputError, match=rf"{path}, line 2: .*3 columns where .* 4"):
        read_conll_file(path)
    path.write_text("EU NNP B-NP X-ORG\n")
    with pytest.raises(InputError, match=rf"{path}, line 1: .*tag 'X-ORG' of token 0"):
        read_conll_file(path)


def test_typing_micro_prf_hand_count():
    # correct: {a} + {b, c} = 3; predicted: 2 + 2 + 1 = 5; gold: 1 + 3 + 1 = 5
    scores = typing_micro_prf([["a", "x"], ["b", "c"], ["y"]], [["a"], ["b", "c", "d"], ["z"]])
    assert scores == pytest.approx({"precision": 3 / 5, "recall": 3 / 5, "f1": 3 / 5})


def test_relation_micro_prf_excludes_no_relation_hand_count():
    predictions = ["per:title", "no_relation", "org:founded_by", "per:title", "no_relation"]
    references = ["per:title", "per:title", "no_relation", "per:title", "no_relation"]
    # correct non-negative: items 0 and 3 = 2; predicted non-negative: 0, 2, 3 = 3; gold non-negative: 0, 1, 3 = 3
    scores = relation_micro_prf(predictions, references)
    assert scores == pytest.approx({"precision": 2 / 3, "recall": 2 / 3, "f1": 2 / 3})


def test_span_f1_hand_count():
    predictions = [[(0, 1, "ORG"), (2, 3, "PER")], [(0, 2, "PER")]]
    references = [[(0, 1, "ORG"), (2, 3, "MISC")], [(0, 2, "PER"), (3, 4, "LOC")]]
    # correct 2 of 3 predicted, of 4 gold: P = 2/3, R = 1/2, F1 = 2 * (1/3) / (7/6) = 4/7
    assert span_f1(predictions, references) == pytest.approx({"precision": 2 / 3, "recall": 1 / 2, "f1": 4 / 7})


def _f1_of_expected_counts(guesses, score):
    """F1 of the mean (correct, predicted, gold) counts over every equally likely guess (a plain loop)."""
    totals = [0.0, 0.0, 0.0]
    guesses = list(guesses)
    for guess in guesses:
        for i, count in enumerate(score(guess)):
            totals[i] += count / len(guesses)
    correct, predicted, gold = totals
    precision, recall = correct / predicted, correct / gold
    return 2 * precision * recall / (precision + recall)


def test_chance_levels_are_the_f1_of_a_guessing_models_expected_counts():
    """Each chance level against every guess enumerated: a coin per (example, type), a uniform relation, a uniform
    label (a type or none) per span of the sentence."""
    typing = [["a"], ["a", "b"], ["b", "c"]]
    types = sorted({t for labels in typing for t in labels})
    pairs = [(i, t) for i in range(len(typing)) for t in types]

    def typing_counts(coins):
        chosen = {pair for pair, on in zip(pairs, coins, strict=True) if on}
        gold = {(i, t) for i, labels in enumerate(typing) for t in labels}
        return len(chosen & gold), len(chosen), len(gold)

    expected = _f1_of_expected_counts(itertools.product((0, 1), repeat=len(pairs)), typing_counts)
    assert typing_chance(typing) == pytest.approx(expected)
    relations = ["per:title", "no_relation", "org:founded_by", "per:title"]
    names = sorted(set(relations))

    def relation_counts(guess):
        return (sum(g == r != "no_relation" for g, r in zip(guess, relations, strict=True)),
                sum(g != "no_relation" for g in guess), sum(r != "no_relation" for r in relations))  # fmt: skip

    expected = _f1_of_expected_counts(itertools.product(names, repeat=len(relations)), relation_counts)
    assert relation_chance(relations) == pytest.approx(expected)
    gold = [[(0, 1, "PER")], [(1, 3, "LOC"), (0, 1, "PER")]]
    lengths = [2, 3]
    spans = [(n, s, e) for n, length in enumerate(lengths) for s in range(length) for e in range(s + 1, length + 1)
             if e - s <= 2]  # fmt: skip
    labels = ["PER", "LOC", None]

    def span_counts(guess):
        chosen = {(n, s, e, label) for (n, s, e), label in zip(spans, guess, strict=True) if label}
        truth = {(n, *span) for n, sentence in enumerate(gold) for span in sentence}
        return len(chosen & truth), len(chosen), len(truth)

    expected = _f1_of_expected_counts(itertools.product(labels, repeat=len(spans)), span_counts)
    assert span_chance(gold, lengths, max_span_length=2) == pytest.approx(expected)
