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
"""KnowBERT's pre-training of KAR (``--task pretrain --variant kar``: MLM + NSP + ``L_EL``, each logged) and what
starts from it: the entity heads and the ReCoRD head load the pre-trained KAR block (only the task head is new);
ERNIE's pre-training evaluation reports dEA accuracy beside chance on the same words (against a plain loop)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from script_helpers import RECORD_SAMPLE_DEV, RECORD_SAMPLE_TRAIN, load_entity_script, record_script
from transformers import AutoTokenizer

from gesa.modeling_ernie import DEA_ALIGNMENT_KINDS, dea_accuracy_by_alignment, dea_accuracy_counts
from gesa.modeling_kar import KarForEntitySpanQA
from gesa.modeling_kar_entity import KarForEntityPairClassification, linking_accuracy_counts
from gesa.training.entity import make_entity_sample
from gesa.training.registry import VARIANTS
from gesa.training.wikihop import build_demo_luke

DATA = Path(__file__).resolve().parents[1] / "examples" / "data"
KB_FLAGS = [
    "--kb_alias_table",
    str(DATA / "kb_aliases.tsv"),
    "--kb_entity_vectors",
    str(DATA / "kb_entity_vectors.txt"),
]
COMMON = ["--per_device_train_batch_size", "8", "--logging_steps", "5", "--max_seq_length", "64", "--save_strategy",
          "no", "--report_to", "none", "--seed", "0", "--use_cpu", "true", "--dataloader_pin_memory", "false",
          "--disable_tqdm", "true"]  # fmt: skip


def write_demo_split(folder: Path, task: str, split: str, count: int, seed: int) -> Path:
    """A demo sample file as run_entity_tasks.py's demo writes it (``examples/data/kb_links.jsonl`` names its ids)."""
    path = folder / f"{split}.{'txt' if task == 'ner' else 'json'}"
    path.write_text(make_entity_sample(task, count, seed), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def kar_pretrained(tmp_path_factory):
    """A tiny LUKE (entity width 16, the demo KB's) and KAR pre-trained from it on the NER demo sample (documents:
    NSP) with the demo KB and its gold links."""
    folder = tmp_path_factory.mktemp("kar-pretrain")
    (folder / "ner").mkdir()
    train = write_demo_split(folder / "ner", "ner", "train", 36, 1)
    dev = write_demo_split(folder / "ner", "ner", "dev", 12, 2)
    luke = build_demo_luke(folder / "luke", [train.read_text(), dev.read_text()])
    output = folder / "kar-pre"
    argv = ["--task", "pretrain", "--variant", "kar", "--model_name_or_path", str(luke), "--train_file", str(train),
            "--validation_file", str(dev), *KB_FLAGS, "--entity_links", str(DATA / "kb_links.jsonl"), "--do_train",
            "--do_eval", "--num_train_epochs", "6", "--learning_rate", "1e-2", "--output_dir", str(output), *COMMON]  # fmt: skip
    results = load_entity_script().main(argv)
    return luke, output, results


@pytest.mark.slow
def test_kar_pretraining_logs_mlm_nsp_and_linking_losses(kar_pretrained):
    _, output, results = kar_pretrained
    history = json.loads((output / "trainer_state.json").read_text())["log_history"]
    logged = [entry for entry in history if "loss" in entry and "mlm_loss" in entry]
    assert logged and all({"mlm_loss", "nsp_loss", "linking_loss"} <= set(entry) for entry in logged)
    for name in ("mlm_loss", "linking_loss"):
        assert logged[-1][name] < logged[0][name], name
    config = json.loads((output / "config.json").read_text())
    assert config["architectures"] == ["KarForPreTraining"] and config["backbone"] == "luke"
    assert (output / "kb_entities.txt").is_file() and (output / "kb_alias_table.tsv").is_file()
    assert 0.0 <= results["eval_linking_accuracy"] <= 100.0 and "eval_linking_prior_accuracy" in results


@pytest.mark.slow
def test_an_entity_head_starts_from_the_pretrained_kar_layer(kar_pretrained, tmp_path):
    _, output, _ = kar_pretrained
    model, info = KarForEntityPairClassification.from_pretrained(output, num_labels=3, output_loading_info=True)
    assert info["missing_keys"] and all(key.startswith("classifier.") for key in info["missing_keys"])
    saved = load_file(output / "model.safetensors")
    kar = {name: tensor for name, tensor in saved.items() if name.startswith("gesa.kar.")}
    assert kar and all(torch.equal(model.state_dict()[name], tensor) for name, tensor in kar.items())
    data = write_demo_split(tmp_path, "relation_classification", "train", 36, 1)
    argv = ["--task", "relation_classification", "--variant", "kar", "--model_name_or_path", str(output),
            "--train_file", str(data), "--entity_links", str(DATA / "kb_links.jsonl"), "--do_train", "--max_steps", "3",
            "--learning_rate", "1e-3", "--output_dir", str(tmp_path / "tacred"), *COMMON, "--logging_steps", "1"]  # fmt: skip
    load_entity_script().main(argv)
    tuned = json.loads((tmp_path / "tacred" / "config.json").read_text())
    assert tuned["architectures"] == ["KarForEntityPairClassification"] and tuned["kb_size"] == saved[
        "gesa.knowledge_base.embeddings"
    ].size(0)
    history = json.loads((tmp_path / "tacred" / "trainer_state.json").read_text())["log_history"]
    assert any("linking_loss" in entry for entry in history)


@pytest.mark.slow
def test_the_record_kar_reads_the_pretrained_kar_layer(kar_pretrained, tmp_path):
    """``run_record.py --variant kar`` from the pre-training checkpoint: every KAR weight is the pre-trained one (a
    run with learning rate 0 saves them unchanged); only the QA head is new."""
    _, output, _ = kar_pretrained
    assert VARIANTS["kar"].is_pretraining_checkpoint(json.loads((output / "config.json").read_text()))
    _, info = KarForEntitySpanQA.from_pretrained(output, output_loading_info=True)
    assert not [key for key in info["missing_keys"] if ".kar." in key or key.startswith("gesa.")]
    argv = ["--variant", "kar", "--model_name_or_path", str(output), "--train_file", str(RECORD_SAMPLE_TRAIN),
            "--validation_file", str(RECORD_SAMPLE_DEV), "--do_train", "--max_steps", "1", "--learning_rate", "0",
            "--max_seq_length", "64", "--doc_stride", "32", "--max_query_length", "24", "--save_strategy", "no",
            "--report_to", "none", "--disable_tqdm", "true", "--output_dir", str(tmp_path / "record")]  # fmt: skip
    record_script().main(argv)
    before, after = load_file(output / "model.safetensors"), load_file(tmp_path / "record" / "model.safetensors")
    kar = [name for name in before if name.startswith("gesa.kar.")]
    assert kar and all(torch.equal(before[name], after[name]) for name in kar)
    assert json.loads((tmp_path / "record" / "config.json").read_text())["architectures"] == ["KarForEntitySpanQA"]


@pytest.mark.slow
def test_kar_pretraining_goes_on_from_its_own_checkpoint_with_its_kb_files(kar_pretrained, tmp_path):
    """``--task pretrain --variant kar --model_name_or_path <a KAR pre-training run>``, no KB flag: the run loads the
    checkpoint (at learning rate 0 every weight is saved unchanged) and keeps its KB files."""
    luke, output, _ = kar_pretrained
    train = write_demo_split(tmp_path, "ner", "train", 12, 3)
    argv = ["--task", "pretrain", "--variant", "kar", "--model_name_or_path", str(output), "--train_file", str(train),
            "--entity_links", str(DATA / "kb_links.jsonl"), "--do_train", "--max_steps", "1", "--learning_rate", "0",
            "--output_dir", str(tmp_path / "more"), *COMMON]  # fmt: skip
    load_entity_script().main(argv)
    before, after = load_file(output / "model.safetensors"), load_file(tmp_path / "more" / "model.safetensors")
    assert before.keys() == after.keys() and all(torch.equal(before[name], after[name]) for name in before)
    for name in ("kb_entities.txt", "kb_alias_table.tsv"):
        assert (tmp_path / "more" / name).read_text() == (output / name).read_text()


@pytest.mark.slow
def test_ernie_pretraining_goes_on_from_its_own_checkpoint_with_its_entity_vocabulary(tmp_path):
    train = write_demo_split(tmp_path, "ner", "train", 12, 1)
    luke = build_demo_luke(tmp_path / "luke", [train.read_text()])
    common = ["--task", "pretrain", "--variant", "ernie", "--train_file", str(train), "--do_train", "--max_steps",
              "1", *COMMON]  # fmt: skip
    load_entity_script().main([*common, "--model_name_or_path", str(luke), "--output_dir", str(tmp_path / "first")])
    (tmp_path / "more").mkdir()
    more = write_demo_split(tmp_path / "more", "ner", "train", 12, 4)  # other mentions: the vocabulary stays
    argv = [*common, "--model_name_or_path", str(tmp_path / "first"), "--learning_rate", "0", "--output_dir",
            str(tmp_path / "second")]  # fmt: skip
    argv[argv.index(str(train))] = str(more)
    load_entity_script().main(argv)
    before = load_file(tmp_path / "first" / "model.safetensors")
    after = load_file(tmp_path / "second" / "model.safetensors")
    assert all(torch.equal(before[name], after[name]) for name in before)
    vocabulary = [AutoTokenizer.from_pretrained(tmp_path / run).entity_vocab for run in ("first", "second")]
    assert len(vocabulary[0]) > 4 and vocabulary[0] == vocabulary[1]


# ---------------------------------------------------------------------------------------------------- the metrics


def test_dea_accuracy_and_chance_match_a_plain_loop():
    torch.manual_seed(0)
    candidates = torch.tensor([[5, 7, 5, -1], [9, 4, -1, -1]])  # entity 5 aligned twice in the first sequence
    logits = torch.randn(2, 6, 4)
    labels = torch.full((2, 6), -100)
    labels[0, 1], labels[0, 3], labels[0, 4], labels[1, 0], labels[1, 2] = 0, 1, 2, 1, 0
    hits = chance = words = 0
    for b in range(2):
        valid = [k for k in range(4) if candidates[b, k] >= 0]
        for i in range(6):
            if labels[b, i] == -100:
                continue
            gold = int(candidates[b, labels[b, i]])
            best = max(valid, key=lambda k: float(logits[b, i, k]))
            hits += int(candidates[b, best]) == gold
            chance += sum(int(candidates[b, k]) == gold for k in valid) / len(valid)
            words += 1
    assert dea_accuracy_counts(logits, candidates, labels) == pytest.approx((hits, chance, words))


def test_dea_accuracy_split_by_kept_masked_and_replaced_alignments_matches_a_plain_loop():
    torch.manual_seed(1)
    candidates = torch.tensor([[5, 7, 8, -1], [9, 4, 6, -1]])
    given = torch.tensor([[5, -1, 3, -1], [9, 4, -1, -1]])  # slot 1 masked, slot 2 replaced; row 2: kept, kept, masked
    logits = torch.randn(2, 5, 4)
    labels = torch.full((2, 5), -100)
    labels[0, 0], labels[0, 2], labels[0, 4], labels[1, 1], labels[1, 3], labels[1, 4] = 0, 1, 2, 0, 1, 2
    expected = {kind: [0.0, 0.0, 0] for kind in DEA_ALIGNMENT_KINDS}
    for b in range(2):
        valid = [k for k in range(4) if candidates[b, k] >= 0]
        for i in range(5):
            if labels[b, i] == -100:
                continue
            slot = int(labels[b, i])
            kind = "masked" if given[b, slot] < 0 else "kept" if given[b, slot] == candidates[b, slot] else "replaced"
            best = max(valid, key=lambda k: float(logits[b, i, k]))
            expected[kind][0] += int(candidates[b, best] == candidates[b, slot])
            expected[kind][1] += 1 / len(valid)
            expected[kind][2] += 1
    split = dea_accuracy_by_alignment(logits, candidates, labels, given)
    assert {kind: pytest.approx(tuple(value)) for kind, value in expected.items()} == split
    assert [split[kind][2] for kind in DEA_ALIGNMENT_KINDS] == [3, 2, 1]
    total = dea_accuracy_counts(logits, candidates, labels)
    assert sum(value[0] for value in split.values()) == total[0] and sum(v[2] for v in split.values()) == total[2]


def test_linking_accuracy_counts_compare_entities_of_the_linker_and_the_prior():
    ids = torch.tensor([[[3, 4, -2], [6, -2, -1]]])
    scores = torch.tensor([[[0.1, 2.0, 0.5], [0.0, 1.0, 9.0]]])  # 9.0 sits on padding: never picked
    priors = torch.tensor([[[0.8, 0.2, 0.0], [1.0, 0.0, 0.0]]])
    gold = torch.tensor([[1, 1]])  # entity 4 (the prior's second), NULL
    assert linking_accuracy_counts(scores, ids, priors, gold) == {
        "linking_accuracy": (2.0, 2),
        "linking_prior_accuracy": (0.0, 2),
        "linking_null_precision": (1.0, 1),  # the linker's one NULL is right
        "linking_null_recall": (1.0, 1),  # of the one gold NULL
    }
    # no candidate of mention 0 passed the threshold: the forward took the NULL embedding, so the linker linked NULL
    counts = linking_accuracy_counts(scores, ids, priors, gold, null_mask=torch.tensor([[True, False]]))
    assert counts["linking_accuracy"] == (1.0, 2) and counts["linking_null_precision"] == (1.0, 2)


@pytest.mark.slow
def test_ernie_pretraining_reports_dea_accuracy_beside_chance(tmp_path, capsys):
    train = write_demo_split(tmp_path, "ner", "train", 36, 1)
    dev = write_demo_split(tmp_path, "ner", "dev", 12, 2)
    luke = build_demo_luke(tmp_path / "luke", [train.read_text(), dev.read_text()])
    argv = ["--task", "pretrain", "--variant", "ernie", "--model_name_or_path", str(luke), "--train_file", str(train),
            "--validation_file", str(dev), "--do_train", "--do_eval", "--eval_on_start", "true", "--num_train_epochs",
            "10", "--learning_rate", "1e-2", "--output_dir", str(tmp_path / "ernie"), *COMMON]  # fmt: skip
    results = load_entity_script().main(argv)
    assert results["eval_dea_accuracy"] > results["eval_dea_chance"] > 0
    assert results["eval_dea_chance_kept"] > 0  # the split by alignment kind (a kind with no dev word is left out)
    assert set(results) >= {"eval_dea_accuracy_kept", "eval_dea_chance_kept"}
    history = json.loads((tmp_path / "ernie" / "trainer_state.json").read_text())["log_history"]
    start = next(entry for entry in history if entry.get("step") == 0 and "eval_loss" in entry)
    assert "eval_dea_accuracy" in start and "eval_dea_chance" in start
    summary = capsys.readouterr().out.strip().splitlines()[-1]
    assert "dEA accuracy" in summary and "dEA chance" in summary and "before training:" in summary
