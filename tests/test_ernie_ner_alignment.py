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
"""ERNIE's alignment with spaCy NER (``--ner_model``): the named entities over words no alias matches are mentions
with a NULL entity (they feed ERNIE nothing), found by a spaCy pipeline loaded by name or path; the tests build and
save a tiny rule-based pipeline offline and load it through the same path users give."""

from __future__ import annotations

import pytest
import spacy
import torch
import transformers
from kb_helpers import sentence_batch, write_kb
from script_helpers import ENTITY_TASK_FILES, run_entity_task
from tiny_luke import build_tiny_luke

from gesa.processing_kb import KnowledgeInputBuilder
from gesa.records_kb import load_knowledge_files
from gesa.training.entity import ErniePretrainingCollator
from gesa.training.ner_spacy import SpacyMentionFinder


@pytest.fixture(scope="module")
def ner_dir(tmp_path_factory):
    """A spaCy pipeline saved with nlp.to_disk: a blank English tokenizer and an entity ruler (no download)."""
    nlp = spacy.blank("en")
    ruler = nlp.add_pipe("entity_ruler")
    ruler.add_patterns([{"label": "GPE", "pattern": name} for name in ("Paris", "Lyon", "Berlin")]
                       + [{"label": "PERSON", "pattern": [{"TEXT": "Anna"}, {"TEXT": "Keller"}]}])  # fmt: skip
    path = tmp_path_factory.mktemp("spacy") / "tiny-ner"
    nlp.to_disk(path)
    return path


@pytest.fixture(scope="module")
def luke_dir(tmp_path_factory):
    return build_tiny_luke(tmp_path_factory.mktemp("ner-luke"))


def test_a_saved_spacy_pipeline_loads_by_path_and_finds_character_spans(ner_dir):
    finder = SpacyMentionFinder(str(ner_dir))
    text = "Anna Keller moved from Paris to Lyon ."
    assert [text[s:e] for s, e in finder(text)] == ["Anna Keller", "Paris", "Lyon"]


def test_ner_spans_no_alias_matches_are_null_mentions_that_change_no_input(luke_dir, ner_dir, tmp_path):
    tokenizer = transformers.AutoTokenizer.from_pretrained(luke_dir)
    alias_path, vectors_path, _ = write_kb(tmp_path)
    candidates = load_knowledge_files(alias_path, vectors_path).candidate_generator(None)
    batch = sentence_batch(tokenizer, "Anna Keller visited Paris and Lyon .", (0, 11))
    plain = KnowledgeInputBuilder(tokenizer, candidates, "ernie")(batch)
    builder = KnowledgeInputBuilder(tokenizer, candidates, "ernie", ner=SpacyMentionFinder(str(ner_dir)))
    with_ner = builder(batch)
    for name in ("ernie_entity_ids", "ernie_entity_positions"):  # a NULL entity is no input
        assert torch.equal(with_ner[name], plain[name])
    found = {
        tokenizer.decode(batch["input_ids"][0, first : last + 1]).strip(): (entity, source)
        for first, last, entity, source in builder.alignments[0]
    }
    # Anna Keller is the task's mention (no alias: unlinked), Paris an alias span (the city, 0.7), Lyon NER's, NULL
    assert found == {"Anna Keller": (None, "task"), "Paris": (0, "alias"), "Lyon": (None, "ner")}
    assert builder.report()["ner_mentions"] == 1


def test_ernie_pretraining_batches_align_ner_mentions_with_null(luke_dir, ner_dir):
    vocabulary = {name: i for i, name in enumerate(["[PAD]", "[UNK]", "[MASK]", "[MASK2]", "Acme", "Bolt"])}
    tokenizer = transformers.AutoTokenizer.from_pretrained(luke_dir, entity_vocab=vocabulary)
    collator = ErniePretrainingCollator(tokenizer, kb_size=6, seed=0, ner=SpacyMentionFinder(str(ner_dir)))
    feature = dict(tokenizer("Acme hired Anna Keller in Berlin .", entity_spans=[(0, 4)], entities=["Acme"]))
    batch = collator([feature])
    assert batch["dea_candidate_ids"][0].tolist() == [4]  # only Acme has an entity; the NER mentions are NULL
    assert [source for *_, source in collator.aligner.alignments[0]] == ["task", "ner", "ner"]


def test_a_bad_ner_model_is_one_error_naming_it_and_the_install(luke_dir, tmp_path, capsys):
    blank = tmp_path / "no-ner"
    spacy.blank("en").to_disk(blank)
    for model, message in (
        (str(tmp_path / "missing"), "no spaCy pipeline loads from it"),
        (str(blank), "the pipeline has no named-entity component"),
    ):
        with pytest.raises(SystemExit):
            run_entity_task(luke_dir, tmp_path / "out", "entity_typing", extra=["--variant", "ernie",
                            "--ner_model", model, "--max_steps", "1"])  # fmt: skip
        error = capsys.readouterr().err.strip().splitlines()[-1]
        assert error.startswith(f"run_entity_tasks.py: error: --ner_model {model}: {message}"), error
    with pytest.raises(SystemExit):
        run_entity_task(luke_dir, tmp_path / "out", "entity_typing", extra=["--variant", "kar", "--ner_model", "x"])
    assert "--variant kar does not read --ner_model (it finds ERNIE's mentions that no alias matches" in (
        capsys.readouterr().err
    )
    assert ENTITY_TASK_FILES["entity_typing"].is_file()


@pytest.mark.slow
def test_an_ernie_run_takes_the_ner_model_by_path(luke_dir, ner_dir, tmp_path):
    results = run_entity_task(luke_dir, tmp_path / "ernie", "relation_classification",
                              extra=["--variant", "ernie", "--ner_model", str(ner_dir), "--max_steps", "2"])  # fmt: skip
    assert "eval_f1" in results


@pytest.mark.slow
def test_record_takes_the_ner_model_for_ernie_only(luke_dir, ner_dir, tmp_path, capsys):
    from script_helpers import RECORD_SAMPLE_TRAIN, RECORD_SCRIPT, load_script

    run_record = load_script(RECORD_SCRIPT, "run_record_ner_under_test")
    argv = ["--model_name_or_path", str(luke_dir), "--train_file", str(RECORD_SAMPLE_TRAIN), "--max_train_samples",
            "2", "--do_train", "--max_steps", "2", "--max_seq_length", "96", "--max_query_length", "32",
            "--doc_stride", "48", "--per_device_train_batch_size", "2", "--save_strategy", "no", "--report_to",
            "none", "--disable_tqdm", "true", "--seed", "0", "--ner_model", str(ner_dir)]  # fmt: skip
    run_record.main([*argv, "--variant", "ernie", "--output_dir", str(tmp_path / "ernie")])
    assert (tmp_path / "ernie" / "model.safetensors").is_file()
    with pytest.raises(SystemExit):
        run_record.main([*argv, "--variant", "kar", "--output_dir", str(tmp_path / "kar")])
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error.startswith("run_record.py: error: ReCoRD --variant kar does not read --ner_model (it finds ERNIE's")
