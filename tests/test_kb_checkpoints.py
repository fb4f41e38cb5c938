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
"""A KnowBERT-KAR / ERNIE checkpoint trained with a user KB (``--kb_alias_table``, ``--kb_entity_vectors``) carries
its alias table and entity list beside the weights, reloads with ``AutoModel`` and the scripts, and answers through
its own pipeline with the KB's candidates; KAR and ERNIE NER checkpoints open their NER pipeline."""

from __future__ import annotations

import shutil

import pytest
import torch
import transformers
from kb_helpers import ENTITIES, write_kb
from script_helpers import run_entity_task
from tiny_luke import build_tiny_luke

from gesa.loading_gesa import KB_ALIAS_TABLE_FILE, KB_ENTITIES_FILE

KB_FLAGS = ["--max_steps", "2", "--num_train_epochs", "1"]


@pytest.fixture(scope="module")
def luke_dir(tmp_path_factory):
    return build_tiny_luke(tmp_path_factory.mktemp("kb-checkpoint-luke"))


@pytest.fixture(scope="module")
def user_kb_checkpoint(luke_dir, tmp_path_factory):
    folder = tmp_path_factory.mktemp("user-kb")
    alias_path, vectors_path, vectors = write_kb(folder)
    output_dir = folder / "kar-tacred"
    flags = ["--variant", "kar", "--kb_alias_table", str(alias_path), "--kb_entity_vectors", str(vectors_path)]
    run_entity_task(luke_dir, output_dir, "relation_classification", extra=[*flags, *KB_FLAGS])
    return output_dir, vectors


def test_a_user_kb_checkpoint_carries_its_alias_table_and_entity_list(user_kb_checkpoint):
    output_dir, _ = user_kb_checkpoint
    assert (output_dir / KB_ENTITIES_FILE).read_text(encoding="utf-8").splitlines() == ENTITIES
    lines = (output_dir / KB_ALIAS_TABLE_FILE).read_text(encoding="utf-8").splitlines()
    assert lines == ["alias\tentity\tprior", "Paris\tParis\t0.7", "Paris\tParis_Hilton\t0.3"]


def test_a_user_kb_checkpoint_reloads_with_auto_model_and_keeps_its_vectors(user_kb_checkpoint, tmp_path):
    output_dir, vectors = user_kb_checkpoint
    base = transformers.AutoModel.from_pretrained(output_dir, trust_remote_code=True)
    assert base.config.kb_size == len(ENTITIES)
    torch.testing.assert_close(base.knowledge_base.embeddings, vectors, atol=1e-5, rtol=0)
    head = transformers.AutoModelForSequenceClassification.from_pretrained(output_dir, trust_remote_code=True)
    head.save_pretrained(tmp_path / "again")  # a reloaded model saved again keeps the KB files of its folder
    for name in (KB_ENTITIES_FILE, KB_ALIAS_TABLE_FILE):
        assert (tmp_path / "again" / name).read_text() == (output_dir / name).read_text()


def test_a_user_kb_checkpoint_answers_through_its_pipeline_with_the_kb_candidates(user_kb_checkpoint, tmp_path):
    output_dir, _ = user_kb_checkpoint
    relation = transformers.pipeline(model=str(output_dir), trust_remote_code=True)
    assert type(relation).__name__ == "KnowledgeRelationClassificationPipeline"
    assert relation.knowledge.candidates("Paris") == [(0, 0.7), (1, 0.3)]  # KB rows, not LUKE's entity ids
    assert relation.knowledge.candidates("Siemens") == [(3, 1.0)]
    text = "Alice Smith moved to Paris ."
    inputs = relation.preprocess({"text": text, "head_span": [0, 11], "tail_span": [21, 26]})
    ids = inputs["kar_candidate_ids"][0]
    assert {tuple(row[row >= 0].tolist()[:2]) for row in ids if (row >= 0).any()} >= {(2,), (0, 1)}
    answer = relation({"text": text, "head_span": [0, 11], "tail_span": [21, 26]})
    assert answer and abs(sum(row["score"] for row in answer) - 1) < 1e-5
    stripped = tmp_path / "no-kb-files"
    shutil.copytree(output_dir, stripped)
    (stripped / KB_ENTITIES_FILE).unlink()
    with pytest.raises(ValueError, match=r"kb_size=4.*carries no KB files"):
        transformers.pipeline(model=str(stripped), trust_remote_code=True)


def test_the_script_reruns_on_a_user_kb_checkpoint(user_kb_checkpoint, luke_dir, tmp_path):
    output_dir, _ = user_kb_checkpoint
    again = ["--variant", "kar", *KB_FLAGS]  # no KB flags: the checkpoint's own KB files
    results = run_entity_task(output_dir, tmp_path / "again", "relation_classification", extra=again)
    assert "eval_f1" in results
    assert (tmp_path / "again" / KB_ENTITIES_FILE).read_text() == (output_dir / KB_ENTITIES_FILE).read_text()


@pytest.mark.parametrize("variant", ["kar", "ernie"])
def test_knowledge_ner_checkpoints_open_their_ner_pipeline(luke_dir, tmp_path, variant):
    output_dir = tmp_path / f"{variant}-ner"
    run_entity_task(luke_dir, output_dir, "ner", extra=["--variant", variant, *KB_FLAGS])
    ner = transformers.pipeline(model=str(output_dir), trust_remote_code=True)
    assert type(ner).__name__ == "KnowledgeEntitySpanClassificationPipeline"
    sentence = "Peter Blackburn visits London ."
    features = ner.preprocess(sentence)["features"]
    batch = ner.add_inputs(ner.processor.collate(features[:1]))
    assert {"kar": "kar_candidate_ids", "ernie": "ernie_entity_ids"}[variant] in batch
    spans = ner(sentence)
    assert isinstance(spans, list)
    assert all(set(span) == {"start", "end", "words", "type", "score"} for span in spans)


@pytest.mark.slow
def test_a_user_kb_record_checkpoint_reloads_and_answers_with_its_kb(luke_dir, tmp_path):
    from script_helpers import RECORD_SAMPLE_TRAIN, RECORD_SCRIPT, load_script

    alias_path, vectors_path, _ = write_kb(tmp_path)
    run_record = load_script(RECORD_SCRIPT, "run_record_kb_checkpoint_under_test")
    common = ["--variant", "kar", "--max_seq_length", "96", "--max_query_length", "32", "--doc_stride", "48",
              "--report_to", "none", "--disable_tqdm", "true", "--seed", "0"]  # fmt: skip
    output_dir = tmp_path / "kar-record"
    run_record.main([*common, "--model_name_or_path", str(luke_dir), "--train_file", str(RECORD_SAMPLE_TRAIN),
                     "--max_train_samples", "2", "--do_train", "--max_steps", "2", "--per_device_train_batch_size",
                     "2", "--save_strategy", "no", "--kb_alias_table", str(alias_path), "--kb_entity_vectors",
                     str(vectors_path), "--output_dir", str(output_dir)])  # fmt: skip
    assert (output_dir / KB_ENTITIES_FILE).read_text(encoding="utf-8").splitlines() == ENTITIES
    # the script evaluates the checkpoint again without the KB flags: its own KB files
    run_record.main([*common, "--model_name_or_path", str(output_dir), "--validation_file", str(RECORD_SAMPLE_TRAIN),
                     "--max_eval_samples", "2", "--do_eval", "--output_dir", str(tmp_path / "again")])  # fmt: skip
    reader = transformers.pipeline(model=str(output_dir), trust_remote_code=True)
    row = {"passage": "Alice Smith visited Paris . Siemens hired her .", "query": "@placeholder hired Alice Smith .",
           "entity_spans": [(0, 11), (20, 25), (28, 35)]}  # fmt: skip
    answers = reader(row, top_k=3)
    assert {answer["answer"] for answer in answers} == {"Alice Smith", "Paris", "Siemens"}
    assert reader.collator.builder.candidates("Paris") == [(0, 0.7), (1, 0.3)]  # the KB's rows and priors


def test_saving_another_model_into_the_folder_removes_the_earlier_kb_files(user_kb_checkpoint, luke_dir, tmp_path):
    output_dir, _ = user_kb_checkpoint
    folder = tmp_path / "reused"
    shutil.copytree(output_dir, folder)
    from gesa.modeling_kar import KarModel

    KarModel.from_luke_pretrained(str(luke_dir), kar_layer=1).save_pretrained(folder)  # LUKE's table as its KB
    assert not (folder / KB_ENTITIES_FILE).exists() and not (folder / KB_ALIAS_TABLE_FILE).exists()


def test_a_user_kb_checkpoint_on_the_hub_answers_with_its_kb(user_kb_checkpoint, tmp_path):
    """The same checkpoint as a Hub repo id (a Hub cache laid out as ``snapshot_download`` leaves it, read offline):
    its KB files come from the repo like its weights, and its pipeline takes the KB's candidates."""
    import json
    import os
    import subprocess
    import sys

    output_dir, _ = user_kb_checkpoint
    revision = "0" * 40
    repo = tmp_path / "hub" / "models--someone--kar-user-kb"
    shutil.copytree(output_dir, repo / "snapshots" / revision)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(revision)
    code = (
        "import json, transformers\n"
        "relation = transformers.pipeline(model='someone/kar-user-kb', trust_remote_code=True)\n"
        "print(json.dumps([relation.knowledge.candidates('Paris'), relation.model.config.kb_size]))\n"
    )
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_HUB_CACHE=str(tmp_path / "hub"),
               HF_MODULES_CACHE=str(tmp_path / "modules"))  # fmt: skip
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    candidates, kb_size = json.loads(proc.stdout.strip().splitlines()[-1])
    assert candidates == [[0, 0.7], [1, 0.3]] and kb_size == len(ENTITIES)  # KB rows, not LUKE's entity ids
