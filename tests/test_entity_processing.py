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
"""The entity-task features carry GESA's graph inputs: every mention in the example's one sentence (sentence edges),
equal mention texts matched (match edges); GESA reads them, LUKE (``ablation="luke"``) does not."""

from __future__ import annotations

import torch
from transformers import AutoTokenizer

from gesa.modeling_gesa_entity import GesaForEntitySpanClassification
from gesa.processing_entity import EntityTaskProcessor, graph_inputs
from gesa.records_entity import NerExample


def test_graph_inputs_put_mentions_in_one_sentence_and_match_equal_texts():
    assert graph_inputs(["Paris", "the mayor", "paris", "The  Mayor"]) == {
        "entity_sentence_ids": [0, 0, 0, 0],
        "entity_string_ids": [0, 1, 0, 1],
    }


def ner_batch(tiny_luke_dir):
    tokenizer = AutoTokenizer.from_pretrained(tiny_luke_dir)
    tokens = ["Paris", "met", "Paris", "."]
    example = NerExample(
        id="s", tokens=tokens, tags=["B-LOC", "O", "B-LOC", "O"], spans=[(0, 1, "LOC"), (2, 3, "LOC")]
    )
    processor = EntityTaskProcessor(tokenizer, "ner", ["O", "LOC"], max_span_length=1, max_entities=3)
    features = processor.encode(example)
    return features, processor(features)


def test_ner_candidates_of_equal_text_share_a_string_id_and_padding_gets_minus_one(tiny_luke_dir):
    features, batch = ner_batch(tiny_luke_dir)
    assert [f["spans"] for f in features] == [[(0, 1), (1, 2), (2, 3)], [(3, 4)]]
    assert [f["entity_string_ids"] for f in features] == [[0, 1, 0], [0]]  # "Paris", "met", "Paris" | "."
    assert [f["entity_sentence_ids"] for f in features] == [[0, 0, 0], [0]]
    assert batch["entity_string_ids"].tolist() == [[0, 1, 0], [0, -1, -1]]
    assert batch["entity_sentence_ids"].tolist() == [[0, 0, 0], [0, -1, -1]]


def test_gesa_reads_the_graph_inputs_and_luke_ignores_them(tiny_luke_dir):
    features, batch = ner_batch(tiny_luke_dir)
    plain = {k: v for k, v in batch.items() if k not in ("labels", "entity_sentence_ids", "entity_string_ids")}
    with_graph = {k: v for k, v in batch.items() if k != "labels"}
    for ablation, differs in ((None, True), ("luke", False)):
        kwargs = {} if ablation is None else {"ablation": ablation}
        model = GesaForEntitySpanClassification.from_luke_pretrained(tiny_luke_dir, num_labels=2, **kwargs).eval()
        with torch.no_grad():
            gap = (model(**plain).logits - model(**with_graph).logits).abs().max()
        assert (gap > 1e-6) == differs
