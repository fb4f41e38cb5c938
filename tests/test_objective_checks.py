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
"""The generated documents of seed 002's objective checks (both generators: stated facts, neutral sentences, the
downstream labels another sentence gives) and ``bench/objective_checks.py`` at toy size."""

from __future__ import annotations

import json

import pytest
from script_helpers import ROOT, load_script

from gesa.records_entity import read_figer_file, read_tacred_file
from gesa.training.entity_documents import read_docred_file
from gesa.training.synthetic_documents import GENERATORS, write_objective_corpus

BENCH = ROOT / "bench" / "objective_checks.py"


def sentences_of(tokens):
    """The word spans of a generated document's sentences (each ends with '.')."""
    spans, start = [], 0
    for index, token in enumerate(tokens):
        if token == ".":
            spans.append((start, index + 1))
            start = index + 1
    return spans


@pytest.mark.parametrize("generator", sorted(GENERATORS))
def test_generated_tasks_label_a_neutral_sentence_by_a_fact_stated_elsewhere(tmp_path, generator):
    spec = GENERATORS[generator]
    corpus = write_objective_corpus(tmp_path, generator, seed=3, documents=12, task_examples_per_split=(20, 6))
    documents = read_docred_file(corpus / "pretrain.json")
    assert len(documents) == 12 and all(len(d.entities) >= 3 and not d.relations for d in documents)
    assert "instance of" in (corpus / "kg.tsv").read_text()
    neutral = [{w for w in template.split() if "{" not in w} for template in spec.neutral]
    examples = read_tacred_file(corpus / "relation_train.json")
    assert 0 < sum(e.relation != "no_relation" for e in examples) < len(examples)
    for example in examples:
        spans = sentences_of(example.tokens)
        labelled = next(span for span in spans if span[0] <= example.head[0] < span[1])
        assert labelled[0] <= example.tail[0] < labelled[1]
        words = set(example.tokens[labelled[0] : labelled[1]])
        assert any(fixed <= words for fixed in neutral), "the labelled sentence is a neutral one"
        names = [" ".join(example.tokens[s:e]) for s, e in (example.head, example.tail)]
        elsewhere = [span for span in spans if span != labelled
                     and all(name in " ".join(example.tokens[span[0] : span[1]]) for name in names)]  # fmt: skip
        assert bool(elsewhere) == (example.relation != "no_relation"), "only a related pair is stated elsewhere"
    local = read_tacred_file(corpus / "relation_local_train.json")
    assert all(e.relation != "no_relation" for e in local)  # the control: the statement itself is labelled
    roles = {r.role for r in spec.relations if r.role}
    typing = read_figer_file(corpus / "typing_train.json")
    assert {label.rsplit("/", 1)[1] for e in typing for label in e.labels if label.count("/") == 2} == roles


@pytest.mark.slow
def test_the_objective_bench_reports_erica_and_krc_against_chance_at_toy_size(tmp_path, capsys):
    """ERICA's rows beside chance; a KRC condition (the easy control, ``kbir_other``) with its ROC AUC and how much
    its classifier's input moves when the span is masked (a percentage, measured on the saved checkpoint)."""
    load_script(BENCH, "objective_checks_under_test").main([
        "--output_dir", str(tmp_path), "--generators", "firms", "--seeds", "0", "--objectives", "erica,kbir_other",
        "--checks", "mechanism", "--documents", "24", "--pretrain_epochs", "2", "--hidden_size", "16", "--layers",
        "1", "--initializer_range", "0.25"])  # fmt: skip
    printed = capsys.readouterr().out
    assert "| erica: ED accuracy (chance: a uniform guess) |" in printed
    assert "| kbir_other: KRC ROC AUC (chance 50) |" in printed
    assert "| kbir_other: KRC: change of the boundary words when the span is masked" in printed
    report = json.loads((tmp_path / "objective_checks.json").read_text())
    after = report["firms"]["0"]["pretrain"]["erica"]["after"]
    assert after["eval_ed_chance"] > 0 and "eval_rd_accuracy" in after
    krc = report["firms"]["0"]["pretrain"]["kbir_other"]["after"]
    assert 0 <= krc["eval_krc_auc"] <= 100 and krc["eval_krc_boundary_sensitivity"] > 0
    config = json.loads((tmp_path / "firms" / "seed-0" / "pre-kbir_other" / "config.json").read_text())
    assert config["pretraining_objectives"]["krc_replacement"] == "other_type"
    assert config["initializer_range"] == 0.25  # the tiny LUKE drawn at --initializer_range


@pytest.mark.parametrize("value", ["0", "-1", "nan"])
def test_the_objective_bench_refuses_an_initializer_range_that_is_not_positive(tmp_path, value):
    with pytest.raises(SystemExit, match=r"--initializer_range must be a number > 0 \(e\.g\. 0\.02\)"):
        load_script(BENCH, "objective_checks_under_test").main(
            ["--output_dir", str(tmp_path), "--initializer_range", value]
        )


def test_the_objective_bench_refuses_to_mix_runs_of_a_tiny_luke_drawn_at_another_initializer_range(tmp_path):
    """A kept output folder's tiny LUKE is reused; one drawn at another std would mix two experiments' runs."""
    luke = tmp_path / "firms" / "seed-0" / "tiny-luke"
    luke.mkdir(parents=True)
    (luke / "config.json").write_text(json.dumps({"initializer_range": 0.02}))
    with pytest.raises(
        SystemExit, match="drawn at initializer_range 0.02, not --initializer_range 0.125; give another"
    ):
        load_script(BENCH, "objective_checks_under_test").main([
            "--output_dir", str(tmp_path), "--generators", "firms", "--seeds", "0", "--documents", "12",
            "--task_size", "8,4", "--initializer_range", "0.125"])  # fmt: skip
    assert json.loads((luke / "config.json").read_text()) == {"initializer_range": 0.02}  # nothing overwritten
