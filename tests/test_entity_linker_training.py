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
"""KnowBERT's linker loss from gold links (``--entity_links``): ``L_EL = -sum_m log softmax_k(psi_mk)[gold_m]`` (the
seed's log-likelihood form) against a plain loop over the linker's scores; the gold links of a file become each
mention's gold candidate (an entity, NULL, or none); a KAR run given the file logs ``linking_loss`` beside the task's.
"""

from __future__ import annotations

import json
import math

import pytest
import torch
import transformers
from kb_helpers import ENTITIES, write_kb
from script_helpers import ENTITY_SCRIPT, ENTITY_TASK_FILES, run_entity_task, script_error_lines
from tiny_luke import build_tiny_luke
from variant_inputs import kar_batch, kar_config

from gesa.checks_gesa import KAR_NULL_CANDIDATE
from gesa.modeling_kar import KarModel
from gesa.modeling_kar_entity import KarForEntityClassification
from gesa.processing_kb import KnowledgeCollator, KnowledgeInputBuilder
from gesa.records_kb import load_knowledge_files
from gesa.training.entity_links import read_entity_links


def plain_linking_loss(scores: torch.Tensor, candidate_ids: torch.Tensor, gold: torch.Tensor) -> float:
    """The seed's L_EL, one mention and one candidate at a time, averaged over the batch's examples."""
    total = 0.0
    for b in range(scores.size(0)):
        for m in range(scores.size(1)):
            g = int(gold[b, m])
            if g < 0:
                continue
            real = [k for k in range(scores.size(2)) if int(candidate_ids[b, m, k]) != -1]
            normaliser = math.log(sum(math.exp(float(scores[b, m, k])) for k in real))
            total -= float(scores[b, m, g]) - normaliser
    return total / scores.size(0)


def test_linking_loss_is_the_papers_log_likelihood_over_the_candidates():
    torch.manual_seed(0)
    model = KarModel(kar_config()).eval()
    batch = kar_batch()
    gold = torch.full((2, 5), -1)
    gold[0, 1], gold[0, 3], gold[1, 1] = 2, 0, 1  # the third of three, the first of two, the second of two
    with torch.no_grad():
        out = model(**batch, kar_gold_candidates=gold)
    expected = plain_linking_loss(out.linking_scores, batch["kar_candidate_ids"], gold)
    assert expected > 0
    assert float(out.linking_loss) == pytest.approx(expected, rel=1e-5)
    with torch.no_grad():  # no supervised mention: no loss to learn from
        assert float(model(**batch, kar_gold_candidates=torch.full((2, 5), -1)).linking_loss) == 0.0


def test_a_kar_head_adds_the_weighted_linking_loss_and_logs_both(tmp_path):
    torch.manual_seed(0)
    config = kar_config(num_labels=3, kar_linking_loss_weight=0.5)
    model = KarForEntityClassification(config)
    batch = {k: v for k, v in kar_batch().items() if k not in ("placeholder_entity_mask",)}
    gold = torch.full((2, 5), -1)
    gold[0, 1] = 2
    labels = torch.tensor([[1.0, 0.0, 0.0], [0.0, 1.0, 1.0]])
    model.train()
    torch.manual_seed(1)
    with_gold = model(**batch, labels=labels, kar_gold_candidates=gold)
    torch.manual_seed(1)
    encoded = model.gesa(**batch, kar_gold_candidates=gold)
    torch.manual_seed(1)
    task_only = model(**batch, labels=labels)
    torch.testing.assert_close(with_gold.loss, task_only.loss + 0.5 * encoded.linking_loss)
    logged = model.pop_logged_losses()
    assert set(logged) == {"task_loss", "linking_loss"}
    assert logged["linking_loss"] == pytest.approx(float(encoded.linking_loss.detach()), rel=1e-5)
    assert model.pop_logged_losses() == {}


@pytest.fixture(scope="module")
def luke_dir(tmp_path_factory):
    return build_tiny_luke(tmp_path_factory.mktemp("linker-luke"))


def test_gold_links_become_the_gold_candidate_of_each_mention(luke_dir, tmp_path):
    tokenizer = transformers.AutoTokenizer.from_pretrained(luke_dir)
    alias_path, vectors_path, _ = write_kb(tmp_path)
    files = load_knowledge_files(alias_path, vectors_path)
    builder = KnowledgeInputBuilder(tokenizer, files.candidate_generator(None), "kar")
    text = "Paris met Paris in Lyon ."
    spans = [(0, 5), (10, 15), (19, 23)]
    feature = dict(tokenizer(text, entity_spans=spans, entities=["[UNK]"] * 3))
    # Paris (0) -> Paris Hilton, the second by prior; Paris (1) -> NULL; Lyon (2): no candidate, no supervision
    gold_rows = [ENTITIES.index("Paris Hilton"), KAR_NULL_CANDIDATE, ENTITIES.index("Siemens")]
    collate = KnowledgeCollator(lambda features: dict(tokenizer.pad(features, return_tensors="pt")), builder)
    batch = collate([dict(feature, kar_gold_entities=gold_rows), dict(feature)])
    assert "kar_gold_entities" not in batch
    assert batch["kar_candidate_ids"][0, :2].tolist() == [[0, 1, KAR_NULL_CANDIDATE]] * 2
    assert batch["kar_gold_candidates"][0, :3].tolist() == [1, 2, -1]
    assert (batch["kar_gold_candidates"][1] == -1).all()  # an example without links is not supervised
    assert builder.report()["gold_mentions"] == 2


@pytest.mark.parametrize(
    "text, message",
    [
        ('{"id": "t1", "links": [[0, 2]]}\n', r"line 1: entity links 't1': links\[0\] must be \[start, end, entity\]"),
        ('{"id": "t1", "links": [[2, 1, "A"]]}\n', r"links\[0\] must be .*got \[2, 1, 'A'\]"),
        (
            '{"id": "t1", "links": []}\n{"id": "t1", "links": []}\n',
            r"line 2: .*'t1' is listed twice \(first at line 1",
        ),
        ('{"links": []}\n', r"'id' must be the example's id"),
    ],
)
def test_bad_entity_link_files_name_the_line_and_the_fix(tmp_path, text, message):
    path = tmp_path / "links.jsonl"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        read_entity_links(path)


@pytest.mark.slow
def test_a_kar_run_with_gold_links_logs_the_linking_loss(luke_dir, tmp_path, capsys):
    alias_path, vectors_path, _ = write_kb(tmp_path)
    links = tmp_path / "links.jsonl"
    rows = [{"id": "t1", "links": [[0, 2, "Alice Smith"]]}, {"id": "t3", "links": []}]
    links.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    flags = ["--variant", "kar", "--kb_alias_table", str(alias_path), "--kb_entity_vectors", str(vectors_path),
             "--entity_links", str(links), "--max_steps", "4", "--logging_steps", "1"]  # fmt: skip
    output_dir = tmp_path / "kar"
    run_entity_task(luke_dir, output_dir, "relation_classification", extra=flags)
    history = json.loads((output_dir / "trainer_state.json").read_text())["log_history"]
    logged = [entry for entry in history if "linking_loss" in entry]
    assert all("task_loss" in entry for entry in logged) and any(entry["linking_loss"] > 0 for entry in logged)
    with pytest.raises(SystemExit):
        run_entity_task(luke_dir, tmp_path / "ernie", "relation_classification",
                        extra=["--variant", "ernie", "--entity_links", str(links)])  # fmt: skip
    assert "--task relation_classification --variant ernie does not read --entity_links" in capsys.readouterr().err
    links.write_text('{"id": "t1", "links": [[0, 40, "Alice Smith"]]}\n', encoding="utf-8")
    with pytest.raises(SystemExit):
        run_entity_task(luke_dir, tmp_path / "bad", "relation_classification", extra=flags)
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error.startswith(f"run_entity_tasks.py: error: --entity_links {links}, line 1: entity links 't1': the span")


def test_links_naming_no_training_example_are_refused_before_any_weight_loads(luke_dir, tmp_path):
    """Ids of another dataset (or a typo) used to train the linker on nothing (linking_loss 0) without a word."""
    alias_path, vectors_path, _ = write_kb(tmp_path)
    links = tmp_path / "links.jsonl"
    links.write_text('{"id": "other-1", "links": []}\n{"id": "other-2", "links": []}\n', encoding="utf-8")
    argv = ["--task", "relation_classification", "--variant", "kar", "--model_name_or_path", str(luke_dir),
            "--train_file", str(ENTITY_TASK_FILES["relation_classification"]), "--do_train",
            "--kb_alias_table", str(alias_path), "--kb_entity_vectors", str(vectors_path), "--entity_links", str(links),
            "--output_dir", str(tmp_path / "out")]  # fmt: skip
    (line,) = script_error_lines(ENTITY_SCRIPT, [argv], tmp_path)
    assert f"--entity_links {links}: none of its 2 ids ('other-1', 'other-2', ...) names a training example" in line
    assert "(their ids: 't1', 't2', ...)" in line and "give each record the 'id' of its example" in line
    assert not (tmp_path / "out" / "model.safetensors").exists()
