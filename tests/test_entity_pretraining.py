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
"""``run_entity_tasks.py --task pretrain``: LUKE's masked words + masked entities for GESA, ERNIE's dEA (token-entity
alignments replaced or masked, the aligned entity predicted) and next-sentence prediction over the sentence pairs of
documents for ``--variant ernie``; the batches the collators make, and the loss falling on the project's fixtures from
a tiny LUKE."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import transformers
from script_helpers import ENTITY_SCRIPT, load_script

from gesa.modeling_ernie_entity import ErnieForPreTraining
from gesa.records_entity import read_task_file
from gesa.training.entity import (
    DeaCollator,
    ErniePretrainingCollator,
    MaskedEntityCollator,
    encode_pretraining,
    encode_pretraining_pairs,
    make_entity_sample,
    mention_spans,
    mention_text,
    pretraining_tokenizer,
    pretraining_vocabulary,
    sentence_pairs,
)

FIXTURES = Path(__file__).parent / "fixtures" / "entity"


def pretraining_batch(tiny_luke_dir, task="ner", name="conll2003.txt"):
    examples = read_task_file(task, FIXTURES / name)
    vocabulary = pretraining_vocabulary(examples)
    tokenizer = pretraining_tokenizer(str(tiny_luke_dir), vocabulary)
    return examples, vocabulary, tokenizer, encode_pretraining(tokenizer, examples, max_length=64)


def test_pretraining_vocabulary_is_lukes_specials_then_the_mentions(tiny_luke_dir):
    examples, vocabulary, tokenizer, features = pretraining_batch(tiny_luke_dir)
    assert list(vocabulary)[:4] == ["[PAD]", "[UNK]", "[MASK]", "[MASK2]"]
    assert {"EU", "Peter Blackburn", "Siemens", "Munich"} <= set(vocabulary)
    assert tokenizer.entity_vocab == vocabulary
    # each mention's entity is the id of its text, in mention order
    assert features[1]["entity_ids"] == [vocabulary["Peter Blackburn"], vocabulary["London"]]
    assert [len(f["entity_ids"]) for f in features] == [len(mention_spans(e)) for e in examples]


def test_masked_entity_batch_masks_words_and_entities_and_keeps_the_originals(tiny_luke_dir):
    _, vocabulary, tokenizer, features = pretraining_batch(tiny_luke_dir)
    batch = MaskedEntityCollator(tokenizer, mlm_probability=0.15, entity_mask_probability=0.15, seed=0)(features)
    original = tokenizer.pad([dict(f) for f in features], return_tensors="pt")
    masked_words = batch["labels"] != -100
    assert masked_words.any(1).all()  # every example has a masked word
    assert torch.equal(batch["labels"][masked_words], original["input_ids"][masked_words])
    masked_entities = batch["entity_labels"] != -100
    assert masked_entities.any(1).all()  # and a masked entity
    assert torch.equal(batch["entity_labels"][masked_entities], original["entity_ids"][masked_entities])
    assert (batch["entity_ids"][masked_entities] == vocabulary["[MASK]"]).all()
    kept = ~masked_entities & original["entity_attention_mask"].bool()
    assert torch.equal(batch["entity_ids"][kept], original["entity_ids"][kept])


def test_dea_batch_aligns_each_entity_to_its_mentions_first_word(tiny_luke_dir):
    _, vocabulary, tokenizer, features = pretraining_batch(tiny_luke_dir)
    kept = DeaCollator(tokenizer, kb_size=len(vocabulary), replace_probability=0.0, mask_probability=0.0)(features)
    assert "entity_ids" not in kept  # ERNIE reads the knowledge entities, not LUKE's entity stream
    first = features[1]
    assert kept["ernie_entity_ids"][1, :2].tolist() == first["entity_ids"]
    assert kept["ernie_entity_positions"][1, :2].tolist() == [row[0] for row in first["entity_position_ids"]]
    for index, position in enumerate(kept["ernie_entity_positions"][1, :2].tolist()):
        assert kept["dea_labels"][1, position] == index  # the aligned word predicts its entity
    assert (kept["dea_labels"] != -100).sum() == sum(len(f["entity_ids"]) for f in features)
    masked = DeaCollator(tokenizer, kb_size=len(vocabulary), replace_probability=0.0, mask_probability=1.0)(features)
    assert (masked["ernie_entity_ids"] == -1).all() and torch.equal(masked["dea_labels"], kept["dea_labels"])
    assert torch.equal(masked["dea_candidate_ids"], kept["ernie_entity_ids"])


def run_pretraining(tiny_luke_dir, output_dir, variant, data_format, data, key="loss"):
    argv = ["--task", "pretrain", "--variant", variant, "--pretrain_format", data_format,
            "--model_name_or_path", str(tiny_luke_dir), "--train_file", str(data), "--do_train",
            "--output_dir", str(output_dir), "--num_train_epochs", "30", "--learning_rate", "2e-2",
            "--per_device_train_batch_size", "4", "--logging_steps", "5", "--save_strategy", "no",
            "--report_to", "none", "--seed", "0", "--use_cpu", "true", "--disable_tqdm", "true"]  # fmt: skip
    load_script(ENTITY_SCRIPT, "run_entity_tasks_pretrain_under_test").main(argv)
    history = json.loads((output_dir / "trainer_state.json").read_text())["log_history"]
    return [entry[key] for entry in history if "loss" in entry]


@pytest.mark.slow
def test_gesa_masked_word_and_entity_pretraining_loss_falls(tiny_luke_dir, tmp_path):
    losses = run_pretraining(tiny_luke_dir, tmp_path / "gesa", "gesa", "ner", FIXTURES / "conll2003.txt")
    assert len(losses) >= 4 and losses[-1] < 0.8 * losses[0]
    model = transformers.AutoModelForMaskedLM.from_pretrained(tmp_path / "gesa", trust_remote_code=True)
    tokenizer = transformers.AutoTokenizer.from_pretrained(tmp_path / "gesa")
    assert model.config.entity_vocab_size == len(tokenizer.entity_vocab) > 4


@pytest.mark.slow
def test_ernie_pretraining_logs_mlm_and_dea_losses_and_both_fall(tiny_luke_dir, tmp_path):
    data = FIXTURES / "tacred.json"
    output_dir = tmp_path / "ernie"
    mlm = run_pretraining(tiny_luke_dir, output_dir, "ernie", "relation_classification", data, key="mlm_loss")
    history = json.loads((output_dir / "trainer_state.json").read_text())["log_history"]
    dea = [entry["dea_loss"] for entry in history if "loss" in entry]
    total = [entry["loss"] for entry in history if "loss" in entry]
    print(f"ERNIE pre-training: mlm {mlm[0]:.3f} -> {mlm[-1]:.3f}, dea {dea[0]:.3f} -> {dea[-1]:.3f}")
    assert len(mlm) >= 4 and mlm[-1] < 0.85 * mlm[0] and dea[-1] < 0.85 * dea[0]
    assert total[0] == pytest.approx(mlm[0] + dea[0], rel=0.05)  # the logged loss is their sum
    model = transformers.AutoModelForPreTraining.from_pretrained(output_dir, trust_remote_code=True)
    assert type(model).__name__ == "ErnieForPreTraining"
    assert model.config.entity_vocab_size == len(
        pretraining_vocabulary(read_task_file("relation_classification", data))
    )


def test_ernie_pretraining_batch_aligns_every_mention_and_masks_words(tiny_luke_dir):
    """Beyond the data's own mentions, every span whose text is an entity of the vocabulary is aligned too."""
    examples, vocabulary, tokenizer, features = pretraining_batch(
        tiny_luke_dir, "relation_classification", "tacred.json"
    )
    batch = ErniePretrainingCollator(tokenizer, kb_size=len(vocabulary), seed=0)(features)
    assert {"ernie_entity_ids", "dea_labels", "dea_candidate_ids", "labels"} <= set(batch)
    assert "entity_ids" not in batch and (batch["labels"] != -100).any(1).all()
    own = torch.tensor([len(f["entity_ids"]) for f in features])
    assert torch.equal((batch["dea_candidate_ids"] >= 0).sum(1), own)  # the fixture repeats no mention elsewhere
    text = "Acme hired Carol in Berlin ."  # only "Acme" annotated; Carol and Berlin are entities of the vocabulary
    feature = dict(tokenizer(text, entity_spans=[(0, 4)], entities=["Acme"]))
    one = ErniePretrainingCollator(tokenizer, kb_size=len(vocabulary), seed=0)([feature])
    assert one["dea_candidate_ids"][0].tolist() == [vocabulary[name] for name in ("Acme", "Carol", "Berlin")]
    assert (one["dea_labels"][0] != -100).sum() == 3  # each aligned word predicts its entity


def test_ernie_pairs_the_sentences_of_a_document_for_next_sentence_prediction(tiny_luke_dir, tmp_path):
    (tmp_path / "docs.txt").write_text(
        make_entity_sample("ner", 12, seed=1) + (FIXTURES / "conll2003.txt").read_text(), encoding="utf-8"
    )
    examples = read_task_file("ner", tmp_path / "docs.txt")  # a document of 12 sentences, then two of 2 and 1
    assert len({example.document for example in examples}) == 3
    pairs = sentence_pairs(examples, seed=0)
    documents = [example.document for example in examples]
    assert pairs is not None and [first for first, _, _ in pairs] == list(range(len(examples)))
    for first, second, label in pairs:  # 0: the next sentence of the same document; 1: any sentence but that one
        follows = second == first + 1 and documents[first] == documents[second]
        assert (label == 0) == follows and second != first
    assert {label for *_, label in pairs} == {0, 1}
    vocabulary = pretraining_vocabulary(examples)
    tokenizer = pretraining_tokenizer(str(tiny_luke_dir), vocabulary)
    features = encode_pretraining_pairs(tokenizer, examples, pairs, max_length=64)
    first, second, label = pairs[0]
    expected = tokenizer(" ".join(examples[first].tokens), " ".join(examples[second].tokens))["input_ids"]
    assert features[0]["input_ids"] == expected and features[0]["next_sentence_label"] == label
    names = [mention_text(examples[i], span) for i in (first, second) for span in mention_spans(examples[i])]
    assert features[0]["entity_ids"] == [vocabulary[name] for name in names]
    for row, entity in zip(features[0]["entity_position_ids"], names, strict=True):  # each mention on its words
        words = tokenizer.decode([features[0]["input_ids"][p] for p in row if p >= 0]).strip()
        assert words == entity
    batch = ErniePretrainingCollator(tokenizer, kb_size=len(vocabulary), seed=0)(features[:4])
    assert batch["next_sentence_label"].tolist() == [label for *_, label in pairs[:4]]
    # single sentences (TACRED): no pairs, no NSP
    assert sentence_pairs(read_task_file("relation_classification", FIXTURES / "tacred.json")) is None


def test_ernie_next_sentence_loss_is_the_cross_entropy_of_the_pooled_first_token(tiny_luke_dir):
    torch.manual_seed(0)
    model = ErnieForPreTraining.from_luke_pretrained(str(tiny_luke_dir)).eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(tiny_luke_dir)
    batch = dict(tokenizer(["Alice met Bob .", "It rained ."], ["Bob left .", "Acme grew ."], padding=True,
                           return_tensors="pt"))  # fmt: skip
    labels = torch.tensor([0, 1])
    with torch.no_grad():
        out = model(**batch, next_sentence_label=labels)
        words = model.gesa(**batch).last_hidden_state
        logits = model.seq_relationship(torch.tanh(model.nsp_pooler.dense(words[:, 0])))
    torch.testing.assert_close(out.nsp_logits, logits)
    torch.testing.assert_close(out.nsp_loss, torch.nn.functional.cross_entropy(logits, labels))
    torch.testing.assert_close(out.loss, out.nsp_loss)  # the only loss given


@pytest.mark.slow
def test_ernie_pretraining_on_documents_logs_mlm_nsp_and_dea(tiny_luke_dir, tmp_path):
    output_dir = tmp_path / "ernie-nsp"
    run_pretraining(tiny_luke_dir, output_dir, "ernie", "ner", FIXTURES / "conll2003.txt")
    history = json.loads((output_dir / "trainer_state.json").read_text())["log_history"]
    logged = [entry for entry in history if "loss" in entry]
    assert logged and all({"mlm_loss", "nsp_loss", "dea_loss"} <= set(entry) for entry in logged)
    first = logged[0]
    assert first["loss"] == pytest.approx(first["mlm_loss"] + first["nsp_loss"] + first["dea_loss"], rel=0.05)
