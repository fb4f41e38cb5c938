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
"""WikiHop below the script: mention offsets stay on the right words after a character whose lower-case form is
longer (``İ``, U+0130); two id-less identical queries stay two answers; the ranking refuses a logits row narrower than
its candidates, gives a ``+inf`` logit the whole probability, and refuses a query whose candidates all score ``-inf``
(never a NaN probability)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from transformers import LukeTokenizer

from gesa.answers_gesa import ranked_answers
from gesa.processing_wikihop import WikihopProcessor, find_mentions, normalize_mention

RECORD = {
    "query": "country velmor",
    "supports": ["Velmor is a town in Abo Province.", "Abo Province is a region of France."],
    "candidates": ["france", "spain", "norway"],
}


@pytest.mark.parametrize("text", ["İzmir and Velmor lie in France", "İİİ İ Velmor İstanbul France"])
def test_mentions_after_dotted_capital_i_sit_on_their_own_words(text):
    found = find_mentions(text, ["velmor", "france", "istanbul"])
    words = [text[start:end] for start, end, _ in found]
    assert "Velmor" in words and "France" in words
    assert all(normalize_mention(word) in ("velmor", "france", "istanbul") for word in words)


def test_a_candidate_with_dotted_capital_i_matches_its_lower_case_mention():
    assert normalize_mention("İstanbul") == "istanbul"
    assert [(s, e) for s, e, _ in find_mentions("From istanbul to İstanbul", ["İstanbul"])] == [(5, 13), (17, 25)]


def test_two_identical_queries_without_id_stay_two_queries(tiny_luke_dir):
    processor = WikihopProcessor(LukeTokenizer.from_pretrained(tiny_luke_dir), max_seq_length=256, max_query_length=16)
    batch = processor([dict(RECORD), dict(RECORD)])
    ids = batch["example_id"]
    assert len(set(ids)) == 2
    logits = np.zeros((2, len(batch["candidate_texts"][0])))
    ranked = WikihopProcessor.rank_candidates(ids, batch["candidate_texts"], logits)
    assert list(ranked) == ids and all(len(answers) == 3 for answers in ranked.values())


def test_a_logits_row_narrower_than_its_candidates_is_a_value_error_naming_the_query():
    with pytest.raises(ValueError, match=r"feature 0 \('q'\) has 4 candidate slots but only 2 logits"):
        WikihopProcessor.rank_candidates(["q"], [["", "a", "b", "c"]], np.zeros((1, 2)))


def test_a_positive_infinite_logit_takes_the_whole_probability():
    ranked = WikihopProcessor.rank_candidates(["q"], [["", "a", "b", "c"]], [[0.0, 1.0, math.inf, -math.inf]])["q"]
    assert [(row["answer"], row["score"]) for row in ranked] == [("b", 1.0), ("a", 0.0), ("c", 0.0)]
    tied = ranked_answers(["q"], [["a", "b"]], [[math.inf, math.inf]], first_candidate=0, score="softmax")["q"]
    assert [row["score"] for row in tied] == [0.5, 0.5]


def test_every_candidate_at_minus_infinity_is_refused_not_nan():
    with pytest.raises(ValueError, match=r"every answer of query 'q' scores -inf"):
        WikihopProcessor.rank_candidates(["q"], [["", "a", "b"]], [[0.0, -math.inf, -math.inf]])
