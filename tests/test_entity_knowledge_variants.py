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
"""The entity tasks on the knowledge variants (``--variant kar``/``ernie``): the batches carry the KB inputs of the
mentions LUKE's entity vocabulary knows, the heads train from a tiny LUKE whose entity titles include the fixtures'
names, reload with ``trust_remote_code``, and the relation pipeline feeds the same KB inputs as training."""

from __future__ import annotations

import json

import pytest
import torch
import transformers
from script_helpers import ENTITY_TASK_FILES, logged_losses, run_entity_task

from gesa.processing_entity import EntityTaskProcessor
from gesa.processing_kb import EntityCandidateGenerator, KnowledgeInputBuilder
from gesa.records_entity import read_task_file
from gesa.training.entity import ENTITY_TASKS

TITLES = ["[PAD]", "[UNK]", "[MASK]", "[MASK2]", "Paris", "Siemens", "Munich", "London", "Alice Smith", "Berlin"]


@pytest.fixture(scope="module")
def kb_luke_dir(tmp_path_factory):
    """The tiny LUKE with an entity vocabulary of titles the fixtures mention (KAR's and ERNIE's KB), 4 layers: ERNIE
    fuses in the top 2, and only the second one's input words carry the knowledge into the entity states the heads
    read (a layer's entity states come from the previous layer's words)."""
    from tiny_luke import build_tiny_luke

    path = build_tiny_luke(tmp_path_factory.mktemp("kb-luke"), entity_vocab_size=len(TITLES), num_hidden_layers=4)
    vocabulary = {name: index for index, name in enumerate(TITLES)}
    transformers.AutoTokenizer.from_pretrained(path, entity_vocab=vocabulary).save_pretrained(path)
    return path


@pytest.mark.parametrize("variant, key", [("kar", "kar_candidate_ids"), ("ernie", "ernie_entity_ids")])
def test_knowledge_batches_link_the_mentions_the_vocabulary_knows(kb_luke_dir, variant, key):
    tokenizer = transformers.AutoTokenizer.from_pretrained(kb_luke_dir)
    examples = read_task_file("relation_classification", ENTITY_TASK_FILES["relation_classification"])
    labels = ENTITY_TASKS["relation_classification"].label_names(examples)
    processor = EntityTaskProcessor(tokenizer, "relation_classification", labels)
    features = processor.encode_all(examples)
    batch = ENTITY_TASKS["relation_classification"].collator(processor, variant)(features)
    assert "Alice Smith" in " ".join(examples[0].tokens)
    assert (batch[key][0] == TITLES.index("Alice Smith")).any()  # the head mention "Alice Smith" is linked
    assert batch["labels"].tolist()[:1] == [processor.label2id[examples[0].relation]]


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["kar", "ernie"])
def test_knowledge_variant_trains_on_ner_and_reloads(kb_luke_dir, tmp_path, variant):
    output_dir = tmp_path / variant
    results = run_entity_task(kb_luke_dir, output_dir, "ner", extra=["--variant", variant])
    losses = logged_losses(output_dir)
    assert losses[-1] < 0.7 * losses[0] and results["eval_f1"] > 0
    model = transformers.AutoModelForTokenClassification.from_pretrained(output_dir, trust_remote_code=True)
    assert type(model).__name__ == f"{variant.capitalize()}ForEntitySpanClassification"
    assert json.loads((output_dir / "config.json").read_text())["entity_vocab_size"] == len(TITLES)  # the KB, kept


@pytest.mark.slow
def test_ernie_relation_pipeline_feeds_the_kb_inputs_of_training(kb_luke_dir, tmp_path):
    output_dir = tmp_path / "ernie-tacred"
    run_entity_task(
        kb_luke_dir, output_dir, "relation_classification",
        extra=["--variant", "ernie", "--input_format", "luke", "--max_steps", "6"],
    )  # fmt: skip
    relation = transformers.pipeline("relation-classification", model=str(output_dir), trust_remote_code=True)
    text = "Alice Smith , the chief engineer , resigned ."
    answer = relation({"text": text, "head_span": [0, 11], "tail_span": [18, 32]})
    model = transformers.AutoModelForSequenceClassification.from_pretrained(output_dir, trust_remote_code=True).eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(output_dir)
    inputs = dict(
        tokenizer(text, entity_spans=[(0, 11), (18, 32)], entities=["[MASK]", "[MASK2]"], return_tensors="pt")
    )
    inputs.update(entity_sentence_ids=torch.zeros(1, 2, dtype=torch.long), entity_string_ids=torch.tensor([[0, 1]]))
    builder = KnowledgeInputBuilder(tokenizer, EntityCandidateGenerator.from_tokenizer(tokenizer), "ernie")
    inputs = builder(inputs)
    assert inputs["ernie_entity_ids"].tolist() == [[TITLES.index("Alice Smith")]]
    with torch.no_grad():
        probabilities = torch.softmax(model(**inputs).logits[0], -1)
    expected = {model.config.id2label[i]: float(p) for i, p in enumerate(probabilities)}
    assert {row["relation"]: row["score"] for row in answer} == pytest.approx(expected, abs=1e-6)
