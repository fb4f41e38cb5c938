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
"""KnowBERT-KAR's linker learns what it is for: an alias table's lines become one candidate per (alias, entity), best
first (a repeated pair used to be two candidates, which split the gold's probability and held ``L_EL`` at ln 2 per
mention: the flat ``linking_loss``); on the synthetic corpus (``gesa.training.synthetic_kb``) the trained linker beats the prior
on the mentions whose prior is wrong, ``linking_loss`` falls, and ERNIE's dEA beats chance after pre-training
(``bench/knowledge_checks.py`` at toy size)."""

from __future__ import annotations

import json
import logging
import math

import pytest
import torch
import transformers
from kb_helpers import ENTITIES, sentence_batch, write_kb
from script_helpers import ROOT, load_script

from gesa.checks_gesa import KAR_NULL_CANDIDATE
from gesa.configuration_variants import KarConfig
from gesa.modeling_kar import KarModel
from gesa.processing_kb import EntityCandidateGenerator, KnowledgeInputBuilder
from gesa.records_kb import load_knowledge_files
from gesa.training.knowledge_base import linking_report
from gesa.training.synthetic_kb import (
    NAMES,
    TYPING_GENERATORS,
    alias_table,
    generate_sentences,
    kb_entity,
    typing_rows,
    typing_swap,
    write_typing_corpus,
)

BENCH = ROOT / "bench" / "knowledge_checks.py"


# ---------------------------------------------------------------------------------------------------- the candidates


def test_case_and_punctuation_variants_merge_into_one_alias_sorted_by_prior():
    table = {"paris": [(1, 0.05)], "Paris.": [(0, 0.9)], "PARIS": [(2, 0.5)]}
    generator = EntityCandidateGenerator(alias_table=table)
    assert generator("Paris") == [(0, 0.9), (2, 0.5), (1, 0.05)]
    assert EntityCandidateGenerator(alias_table=table, max_candidates=1)("paris") == [(0, 0.9)]


def test_a_repeated_alias_entity_pair_is_one_candidate_with_its_highest_prior(tmp_path, caplog):
    aliases = "Paris\tParis_Hilton\t0.3\nParis\tParis\t0.6\nparis\tParis\t0.7\nParis\tParis_Hilton\t0.3\n"
    alias_path, vectors_path, _ = write_kb(tmp_path, aliases)
    with caplog.at_level(logging.WARNING, logger="gesa.records_kb"):
        files = load_knowledge_files(alias_path, vectors_path)
    assert files.candidate_generator(None)("Paris") == [(0, 0.7), (1, 0.3)]
    assert "2 line(s) repeat an (alias, entity) pair" in caplog.text and "line 3" in caplog.text


def test_ernie_links_the_highest_prior_entity_after_merging(tiny_luke_dir, tmp_path):
    """A lower-case line listed first must not make the 0.1-prior entity ERNIE's link."""
    tokenizer = transformers.AutoTokenizer.from_pretrained(tiny_luke_dir)
    alias_path, vectors_path, _ = write_kb(tmp_path, "paris\tParis_Hilton\t0.1\nParis\tParis\t0.9\n")
    files = load_knowledge_files(alias_path, vectors_path)
    builder = KnowledgeInputBuilder(tokenizer, files.candidate_generator(None), "ernie")
    batch = builder(sentence_batch(tokenizer, "Paris is large .", (0, 5)))
    assert batch["ernie_entity_ids"][0].tolist() == [ENTITIES.index("Paris")]


def test_duplicate_candidates_hold_the_linking_loss_at_ln2_and_the_builder_makes_none(tiny_luke_dir, tmp_path):
    """The cause of the flat linker: the gold entity twice among the candidates caps its softmax share at 1/2, so
    however the linker trains, L_EL >= ln 2 per mention (2 ln 2 = ln 4 for a relation's two mentions)."""
    torch.manual_seed(0)
    model = KarModel(KarConfig(vocab_size=64, entity_vocab_size=8, hidden_size=32, entity_emb_size=16,
                               num_hidden_layers=2, num_attention_heads=4, intermediate_size=37, kar_layer=1))  # fmt: skip
    batch = {"input_ids": torch.randint(5, 64, (1, 8)), "kar_mention_spans": torch.tensor([[[1, 2]]]),
             "kar_candidate_ids": torch.tensor([[[3, 3, KAR_NULL_CANDIDATE]]]),
             "kar_gold_candidates": torch.tensor([[0]])}  # fmt: skip
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(60):
        loss = model(**batch).linking_loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert float(loss.detach()) == pytest.approx(math.log(2), abs=0.02)
    tokenizer = transformers.AutoTokenizer.from_pretrained(tiny_luke_dir)
    alias_path, vectors_path, _ = write_kb(tmp_path, "Paris\tParis\t1.0\nParis\tParis\t1.0\nparis\tParis\t1.0\n")
    builder = KnowledgeInputBuilder(tokenizer, load_knowledge_files(alias_path, vectors_path).candidate_generator(None),
                                    "kar")  # fmt: skip
    ids = builder(sentence_batch(tokenizer, "Paris is large .", (0, 5)))["kar_candidate_ids"][0, 0]
    assert ids.tolist() == [ENTITIES.index("Paris"), KAR_NULL_CANDIDATE]


# ---------------------------------------------------------------------------------------------------- the corpus


def test_the_synthetic_corpus_holds_the_shares_it_promises():
    rows, links = generate_sentences(400, seed=3, names=6, prior_wrong_share=0.3, null_share=0.2)
    favourite = {}
    for alias, entity, prior in alias_table(NAMES[:6], seed=3):
        if prior > favourite.get(alias, ("", -1.0))[1]:
            favourite[alias] = (entity, prior)
    cues = {"city": ("city", "town"), "company": ("company", "firm"), "river": ("river",)}
    wrong = null = 0
    for row, link in zip(rows, links, strict=True):
        name = " ".join(row["token"][row["obj_start"] : row["obj_end"] + 1])
        start, end, gold = link["links"][1]
        assert (start, end) == (row["obj_start"], row["obj_end"] + 1)  # end exclusive
        assert gold in (None, kb_entity(name, "city"), kb_entity(name, "company"))
        null += gold is None
        wrong += gold is not None and gold != favourite[name][0]
        sense = "river" if gold is None else gold.split("(")[1].rstrip(")")
        assert any(cue in row["token"] for cue in cues[sense]), row  # the context names the sense
    assert abs(null / 400 - 0.2) < 0.06 and abs(wrong / 400 - 0.3) < 0.06


def test_linking_report_counts_accuracy_on_prior_wrong_mentions_and_null():
    rows = [
        {"gold": 1, "linker": 1, "prior": 1, "gold_null": False, "linker_null": False, "prior_null": False},
        {"gold": 2, "linker": 2, "prior": 1, "gold_null": False, "linker_null": False, "prior_null": False},
        {"gold": -2, "linker": -2, "prior": 1, "gold_null": True, "linker_null": True, "prior_null": False},
        {"gold": -2, "linker": 1, "prior": 1, "gold_null": True, "linker_null": False, "prior_null": False},
    ]
    report = linking_report(rows)
    assert report["prior_accuracy"] == 0.25 and report["linker_accuracy"] == 0.75
    assert report["prior_wrong_mentions"] == 3 and report["linker_accuracy_prior_wrong"] == pytest.approx(2 / 3)
    assert report["linker_null_precision"] == 1.0 and report["linker_null_recall"] == 0.5
    assert report["prior_null_precision"] is None and report["prior_null_recall"] == 0.0


# ---------------------------------------------------------------------------------------------------- the check


@pytest.mark.slow
def test_the_linker_beats_the_prior_where_it_is_wrong_and_dea_beats_chance(tmp_path, capsys):
    bench = load_script(BENCH, "knowledge_checks_under_test")
    (run,) = bench.main(["--output_dir", str(tmp_path), "--seeds", "0", "--train_size", "160", "--eval_size", "60",
                         "--names", "6", "--epochs", "8", "--logging_steps", "5", "--learning_rate", "3e-3",
                         "--checks", "linking,dea"])  # fmt: skip
    assert run["prior_wrong_mentions"] >= 10 and run["prior_accuracy_prior_wrong"] == 0.0
    assert run["linker_accuracy_prior_wrong"] >= 0.5  # the context, not the prior
    assert run["linker_accuracy"] > run["prior_accuracy"]
    assert run["linking_loss"][-1] < 0.5 * run["linking_loss"][0]
    assert run["dea_accuracy"] > run["dea_chance"] > 0  # ERNIE's pre-training on the same corpus
    printed = capsys.readouterr().out
    assert "dEA accuracy above chance after pre-training in 1 of 1 seeds" in printed
    assert "| linking accuracy, mentions the prior gets wrong | 0.0 |" in printed
    assert "| kept |" in printed and "| masked |" in printed  # dEA split by what the corruption did
    assert json.loads((tmp_path / "knowledge_checks.json").read_text())["runs"][0]["seed"] == 0


def test_typing_corpus_types_come_from_the_kb_only(tmp_path):
    """The KB-only typing generators: the sentences are the same templates for every type (the text names no type),
    the dev entities are in no training sentence, every entity's KB neighbours are of its own type, and the swap
    control gives each dev entity one of another type."""
    for generator in TYPING_GENERATORS:
        paths = write_typing_corpus(tmp_path / generator, generator, seed=1, per_type=12, dev_per_type=3)
        info = json.loads(paths["types"].read_text())
        types = info["types"]
        split = {
            name: [json.loads(line) for line in paths[name].read_text().splitlines()] for name in ("train", "dev")
        }
        assert {row["mention_span"] for row in split["dev"]} == set(info["dev"])
        assert set(info["dev"]).isdisjoint(row["mention_span"] for row in split["train"])
        templates: dict[str, set] = {}
        for row in typing_rows(generator, list(types), types, len(TYPING_GENERATORS[generator].templates), 1, "all"):
            context = (tuple(row["left_context_token"]), tuple(row["right_context_token"]))
            templates.setdefault(row["y_str"][0], set()).add(context)
        assert len(templates) == len(TYPING_GENERATORS[generator].types)
        assert len({frozenset(used) for used in templates.values()}) == 1
        for line in paths["triples"].read_text().splitlines():
            head, _, tail = line.split("\t")
            assert types.get(tail, types[head]) == types[head]  # a neighbour entity is of the same type
        swap = typing_swap(types, info["dev"], seed=1)
        assert all(types[swap[name]] != types[name] for name in info["dev"])


@pytest.mark.slow
def test_the_typing_check_reports_kar_ernie_luke_and_the_swap_control(tmp_path, capsys):
    pytest.importorskip("pykeen", reason="the typing check trains TransE vectors: pip install 'gesa[kge]'")
    bench = load_script(BENCH, "knowledge_checks_typing_under_test")
    (run,) = bench.main(["--output_dir", str(tmp_path), "--seeds", "0", "--checks", "typing", "--typing_per_type",
                         "6", "--typing_dev_per_type", "2", "--transe_epochs", "20", "--typing_epochs", "1",
                         "--typing_hidden_size", "32", "--typing_num_hidden_layers", "2", "--typing_entity_size",
                         "16"])  # fmt: skip
    assert {
        "typing_exact_kar",
        "typing_exact_ernie",
        "typing_exact_luke",
        "swap_exact_kar",
        "swap_follows_ernie",
    } <= set(run)
    assert 0.0 <= run["typing_probe"] <= 1.0
    printed = capsys.readouterr().out
    assert "KB-only typing (hubs: 4 types, chance 25.0" in printed and "| --variant ernie, swap control |" in printed
