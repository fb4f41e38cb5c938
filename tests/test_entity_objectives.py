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
"""Seed 002's pre-training objectives (``--task pretrain --objectives``): ERICA's entity representations, entity and
relation discrimination and KBIR's infilling head against plain loops written from the equations (25-30); the
batches the collator builds (KBI's one ``[MASK]`` per span, KRC's same-type replacements, ERICA's query, pairs and
negatives, MLM kept off the mentions); the bad inputs refused with one line; and a run whose every loss is logged
and falls, whose checkpoint starts a task head."""

from __future__ import annotations

import json
import math

import pytest
import torch
import torch.nn.functional as F
from scirex_fixtures import small_document, write_jsonl
from script_helpers import ENTITY_TASK_FILES, EXAMPLES, load_entity_script, load_script
from tiny_luke import SHARED

from gesa.configuration_gesa import GesaConfig
from gesa.configuration_long_luke import LongLukeConfig
from gesa.loading_gesa import load_tokenizer
from gesa.modeling_gesa_objectives import (
    GesaForEntityPreTraining,
    entity_discrimination,
    entity_representations,
    relation_discrimination,
    roc_auc,
)
from gesa.modeling_long_luke_objectives import LongLukeForEntityPreTraining
from gesa.training import entity_objectives
from gesa.training.entity import (
    LONG_PRETRAIN_LENGTHS,
    build_pretraining_model,
    pretraining_tokenizer,
    pretraining_vocabulary,
)
from gesa.training.entity_documents import (
    Document,
    DocumentEntity,
    KnowledgeGraph,
    docred_record,
    read_scirex_documents,
)
from gesa.training.entity_objectives import EntityObjectivesProcessor
from gesa.training.synthetic_documents import write_objective_corpus

TAU = 0.05


def test_entity_representations_are_the_mean_of_each_mentions_mean():
    torch.manual_seed(0)
    words = torch.randn(2, 7, 4)
    spans = torch.tensor([[[1, 3], [4, 5], [5, 7]], [[0, 2], [-1, -1], [-1, -1]]])
    owners = torch.tensor([[0, 1, 0], [0, -1, -1]])
    entities, present = entity_representations(words, spans, owners)
    m = [words[0, 1:3].mean(0), words[0, 4:5].mean(0), words[0, 5:7].mean(0)]
    assert torch.allclose(entities[0, 0], (m[0] + m[2]) / 2, atol=1e-6)
    assert torch.allclose(entities[0, 1], m[1], atol=1e-6)
    assert torch.allclose(entities[1, 0], words[1, 0:2].mean(0), atol=1e-6)
    assert present.tolist() == [[True, True], [True, False]]


def test_entity_discrimination_is_nt_xent_of_cosines_over_the_documents_other_entities():
    torch.manual_seed(1)
    entities = torch.randn(2, 4, 8)
    present = torch.tensor([[True, True, True, False], [True, True, True, True]])
    loss, hits, candidates = entity_discrimination(entities, present, torch.tensor([0, 2]), torch.tensor([2, 1]), TAU)
    for row, (head, tail) in enumerate([(0, 2), (2, 1)]):
        others = [j for j in range(4) if j != head and present[row, j]]
        scores = torch.stack([F.cosine_similarity(entities[row, head], entities[row, j], dim=0) / TAU for j in others])
        expected = -torch.log_softmax(scores, 0)[others.index(tail)]
        assert loss[row].item() == pytest.approx(expected.item(), rel=1e-5)
        assert bool(hits[row]) == (others[int(scores.argmax())] == tail)
    assert candidates.tolist() == [2, 3]
    assert entity_discrimination(entities, present, torch.tensor([-1, -1]), torch.tensor([-1, -1]), TAU) is None


def test_relation_discrimination_is_ericas_nt_xent_over_pair_representations():
    torch.manual_seed(2)
    entities = torch.randn(2, 3, 6)
    pairs = torch.tensor([[0, 0, 1], [1, 2, 0], [0, 1, 2], [1, 0, 1]])
    partners = torch.tensor([1, 0, -1, -1])
    negatives = torch.tensor([[0, 0, 1, 1], [0, 0, 1, 0], [0, 0, 0, 0], [0, 0, 0, 0]], dtype=torch.bool)
    loss, hits, counts = relation_discrimination(entities, pairs, partners, negatives, TAU)

    def relation(row):
        d, h, t = pairs[row].tolist()
        return torch.cat([entities[d, h], entities[d, t]])

    for anchor, positive in ((0, 1), (1, 0)):
        negs = negatives[anchor].nonzero().flatten().tolist()
        sim = [F.cosine_similarity(relation(anchor), relation(j), dim=0) / TAU for j in [positive, *negs]]
        expected = -(sim[0] - torch.logsumexp(torch.stack(sim), 0))
        assert loss[anchor].item() == pytest.approx(expected.item(), rel=1e-5)
    assert counts.tolist() == [2, 1] and hits.dtype == torch.bool


def test_boundary_infilling_predicts_each_token_from_both_boundaries_and_its_position():
    config = GesaConfig(vocab_size=30, entity_vocab_size=6, hidden_size=8, entity_emb_size=4, num_hidden_layers=1,
                        num_attention_heads=2, intermediate_size=12, ablation="luke",
                        pretraining_objectives={"objectives": ["kbi"], "kbi_max_span_length": 3, "kbi_position_size": 5})  # fmt: skip
    head = GesaForEntityPreTraining(config).infill.eval()
    boundaries = torch.randn(2, 16)
    tokens, lengths = head(boundaries)
    assert tokens.shape == (2, 3, 30) and lengths.shape == (2, 3)
    for slot in range(3):
        x = torch.cat([boundaries[1], head.position_embeddings.weight[slot]])
        hidden = head.mlp.layer_norm1(F.gelu(head.mlp.dense1(x)))
        hidden = head.mlp.layer_norm2(F.gelu(head.mlp.dense2(hidden)))
        assert torch.allclose(tokens[1, slot], head.decoder(hidden) + head.bias, atol=1e-5)
    assert torch.allclose(lengths, head.length_classifier(boundaries))


def test_krc_loss_weighs_replaced_items_by_krc_replaced_weight_and_reports_roc_auc():
    """L_KRC with `krc_replaced_weight` w: sum_i w_{y_i} nll_i / sum_i w_{y_i} (w_0 = 1), a plain loop over the items,
    reading the words around the span (`krc_readout="boundary"`) or its own first and last words (`"span"`); the
    evaluation's `krc_auc` equals a pairwise count over (replaced, kept) pairs, ties half."""
    torch.manual_seed(0)
    for weight, readout in ((1.0, "boundary"), (9.0, "span")):
        config = GesaConfig(vocab_size=30, entity_vocab_size=6, hidden_size=8, entity_emb_size=4, num_hidden_layers=1,
                            num_attention_heads=2, intermediate_size=12, ablation="luke",
                            pretraining_objectives={"objectives": ["krc"], "krc_replaced_weight": weight,
                                                    "krc_readout": readout})  # fmt: skip
        model = GesaForEntityPreTraining(config).eval()
        input_ids = torch.randint(3, 30, (2, 9))
        boundaries = torch.tensor([[[0, 3], [3, 6], [5, 8]], [[1, 4], [2, 5], [1, 0]]])
        labels = torch.tensor([[1, 0, 0], [0, 1, -100]])
        with torch.no_grad():
            outputs = model(
                input_ids=input_ids, krc_boundaries=boundaries, krc_labels=labels, output_hidden_states=True
            )
            words = outputs.hidden_states[-1]
            total, norm, scores, targets = 0.0, 0.0, [], []
            for b in range(2):
                for k in range(3):
                    if labels[b, k] == -100:
                        continue
                    left, right = boundaries[b, k].tolist()
                    if readout == "span":  # the span (left, right) exclusive: its first and last words
                        left, right = left + 1, right - 1
                    logits = model.replacement_classifier(torch.cat([words[b, left], words[b, right]]))
                    w = weight if labels[b, k] == 1 else 1.0
                    total += w * -torch.log_softmax(logits, -1)[labels[b, k]].item()
                    norm += w
                    scores.append((logits[1] - logits[0]).item())
                    targets.append(int(labels[b, k]))
        assert outputs.krc_loss.item() == pytest.approx(total / norm, rel=1e-5)
        pairs = [(p, n) for p, t in zip(scores, targets, strict=True) if t == 1
                 for n, u in zip(scores, targets, strict=True) if u == 0]  # fmt: skip
        expected = sum(1.0 if p > n else 0.5 if p == n else 0.0 for p, n in pairs) / len(pairs)
        assert model.pop_evaluation_metrics()["krc_auc"] == pytest.approx(100 * expected, rel=1e-5)
    assert roc_auc([0.3, 0.3, 0.1, 0.9], [1, 0, 0, 1]) == pytest.approx((1 + 0.5 + 1 + 1) / 4)
    assert roc_auc([0.1, 0.2], [0, 0]) == 0.5  # one class only: no pair to order


# ----------------------------------------------------------------------------------------------- the batches


def documents():
    words = "Ana Velmor founded Acmora in Ostrel . Later Acmora hired Bram Kastrel , and Velmor met Kastrel .".split()
    entities = (
        DocumentEntity("Ana Velmor", "person", ((0, 2), (14, 15))),
        DocumentEntity("Acmora", "firm", ((3, 4), (8, 9))),
        DocumentEntity("Ostrel", "town", ((5, 6),)),
        DocumentEntity("Bram Kastrel", "person", ((10, 12), (16, 17))),
    )
    relations = ((1, "founded_by", 0), (3, "works_for", 1), (1, "based_in", 2))
    first = Document("d1", words, entities, relations)
    second = Document("d2", "Cleo Dunabo works for Velcom in Brenmor .".split(),
                      (DocumentEntity("Cleo Dunabo", "person", ((0, 2),)), DocumentEntity("Velcom", "firm", ((4, 5),)),
                       DocumentEntity("Brenmor", "town", ((6, 7),))), ((0, "works_for", 1), (1, "based_in", 2)))  # fmt: skip
    return [first, second, first, second]


def processor_for(tiny_luke_dir, objectives, max_length=128, **settings):
    vocabulary = pretraining_vocabulary(documents())
    tokenizer = pretraining_tokenizer(str(tiny_luke_dir), vocabulary)
    processor = EntityObjectivesProcessor(tokenizer, {"objectives": objectives, **settings}, max_length, seed=0)
    return processor, processor.encode_all(documents())


def test_a_long_document_becomes_windows_that_never_cut_a_mention(tiny_luke_dir):
    processor, features = processor_for(tiny_luke_dir, ["kbir"], max_length=20)
    assert len(features) > len(documents())
    for feature in features:
        assert len(feature["word_ids"]) <= 18
        spans = zip(feature["mention_starts"], feature["mention_ends"], strict=True)
        assert all(0 <= start < end <= len(feature["word_ids"]) for start, end in spans)
    kept = sum(len(f["mention_starts"]) for f in features)
    assert kept == sum(len(e.mentions) for d in documents() for e in d.entities)  # no mention lost at a cut


def test_kbi_puts_one_mask_per_span_and_targets_its_original_tokens(tiny_luke_dir, monkeypatch):
    monkeypatch.setattr(entity_objectives, "KBI_PROBABILITY", 1.0)
    processor, features = processor_for(tiny_luke_dir, ["kbi"])
    batch = processor.get_data_collator()(features[:1])
    ids, feature = batch["input_ids"][0], features[0]
    mask = processor.tokenizer.mask_token_id
    spans = list(zip(feature["mention_starts"], feature["mention_ends"], strict=True))
    masks = (ids == mask).nonzero().flatten().tolist()
    filled = [(left, right) for left, right in batch["kbi_boundaries"][0].tolist() if right > left]
    assert len(filled) == len(spans) and all(right == left + 2 and left + 1 in masks for left, right in filled)
    for (start, end), labels, length in zip(
        spans, batch["kbi_labels"][0], batch["kbi_length_labels"][0], strict=False
    ):
        original = feature["word_ids"][start:end]
        assert labels[: len(original)].tolist() == original and (labels[len(original) :] == -100).all()
        assert length == len(original)
    assert ((batch["labels"][0] != -100) & torch.isin(torch.arange(len(ids)), torch.tensor(masks))).sum() == 0


def test_krc_replaces_an_entity_by_another_of_its_type(tiny_luke_dir):
    processor, features = processor_for(tiny_luke_dir, ["krc"], krc_probability=1.0)
    batch = processor.get_data_collator()(features[:1])
    names = {kind: {key: tokens for key, tokens in members.items()} for kind, members in processor.universe.items()}
    ids = batch["input_ids"][0].tolist()
    for (left, right), label in zip(batch["krc_boundaries"][0].tolist(), batch["krc_labels"][0].tolist(), strict=True):
        if label == 1:
            inserted = ids[left + 1 : right]
            kinds = [kind for kind, members in names.items() if inserted in members.values()]
            assert kinds, f"{inserted} is no typed entity's name"
    assert 1 in batch["krc_labels"][0].tolist()  # every entity with a same-type other is replaced


@pytest.mark.parametrize("rule", ["any", "other_type"])
def test_krc_replacement_any_or_other_type_draws_entities_of_other_types(tiny_luke_dir, rule):
    """``krc_replacement="any"`` (KBIR's released code): the replacement is any other entity of the universe, so over
    a few batches some replaced span holds a name of another type than the entity it replaced; ``"other_type"`` (the
    easy control): every one does."""
    processor, features = processor_for(tiny_luke_dir, ["krc"], krc_probability=1.0, krc_replacement=rule)
    kind_of = {tuple(tokens): kind for kind, members in processor.universe.items() for tokens in members.values()}
    crossed = total = 0
    for _ in range(5):
        batch = processor.get_data_collator()(features[:1])
        ids = batch["input_ids"][0].tolist()
        original = features[0]
        spans = zip(original["mention_starts"], original["mention_ends"], original["mention_entities"], strict=True)
        kinds = [original["entity_types"][entity] for _, _, entity in spans]
        replaced = [(k, (left, right)) for k, ((left, right), label) in enumerate(
            zip(batch["krc_boundaries"][0].tolist(), batch["krc_labels"][0].tolist(), strict=True)) if label == 1]  # fmt: skip
        for item, (left, right) in replaced:
            assert tuple(ids[left + 1 : right]) in kind_of  # a typed entity's name
            crossed += kind_of[tuple(ids[left + 1 : right])] != kinds[item]
            total += 1
    assert crossed > 0 and (crossed == total) == (rule == "other_type")


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"krc_probability": 1.5}, r"pretraining_objectives\['krc_probability'\] must be a finite number in \[0, 1\]"),
        (
            {"krc_replaced_weight": -1.0},
            r"pretraining_objectives\['krc_replaced_weight'\] must be a finite number >= 0",
        ),
        ({"krc_replacement": "other"}, r"pretraining_objectives\['krc_replacement'\] must be one of"),
        ({"krc_readout": "middle"}, r"pretraining_objectives\['krc_readout'\] must be one of"),
    ],
)
def test_bad_krc_settings_are_refused_by_the_config(settings, message):
    with pytest.raises(Exception, match=message):
        GesaConfig(pretraining_objectives={"objectives": ["kbir"], **settings})


def test_erica_batch_asks_ed_after_the_query_and_pairs_rd_relations_across_documents(tiny_luke_dir):
    processor, features = processor_for(tiny_luke_dir, ["erica"])
    batch = processor.get_data_collator()(features)
    tokenizer = processor.tokenizer
    # documents 0 and 2 are ED documents: <s> relation words + head mention </s> words </s>
    for row in (0, 2):
        head, tail = batch["ed_heads"][row].item(), batch["ed_tails"][row].item()
        assert (head, tail) in {
            (h, t) for h, t in zip(features[row]["relation_heads"], features[row]["relation_tails"], strict=True)
        }
        ids = batch["input_ids"][row].tolist()
        assert ids[0] == tokenizer.cls_token_id and tokenizer.sep_token_id in ids[1:-1]
    assert (batch["ed_heads"][[1, 3]] == -1).all()
    pairs, partners, negatives = batch["rd_pairs"], batch["rd_partners"], batch["rd_negatives"]
    assert set(pairs[:, 0].tolist()) <= {1, 3}  # only the RD documents give pairs
    relation = {}
    for row, (document, head, tail) in enumerate(pairs.tolist()):
        found = [r for h, r, t in zip(features[document]["relation_heads"], features[document]["relation_ids"],
                                      features[document]["relation_tails"], strict=True) if (h, t) == (head, tail)]  # fmt: skip
        relation[row] = found[0] if found else 0
    for anchor in (partners >= 0).nonzero().flatten().tolist():
        assert relation[anchor] == relation[partners[anchor].item()] != 0
        assert partners[anchor].item() != anchor and pairs[anchor, 0] != pairs[partners[anchor], 0]
        for negative in negatives[anchor].nonzero().flatten().tolist():
            assert relation[negative] != relation[anchor]
            same = pairs[negative, 0] == pairs[anchor, 0]
            assert not (same and (pairs[negative, 1] == pairs[anchor, 1] or pairs[negative, 2] == pairs[anchor, 2]))
    # MLM never masks a mention word when ERICA is on; entity inputs are [MASK] without LUKE's objective
    for row in range(len(features)):
        spans = batch["erica_mention_spans"][row]
        for start, end in spans.tolist():
            if start >= 0:
                assert (batch["labels"][row, start:end] == -100).all()
    assert (batch["entity_ids"][batch["entity_attention_mask"].bool()] == tokenizer.entity_vocab["[MASK]"]).all()


def test_knowledge_graph_aligns_relations_and_types_by_name():
    graph = KnowledgeGraph.from_triples([("acmora", "founded_by", "ana_velmor"), ("Ostrel", "instance of", "town")])
    document = Document("d", "Ana Velmor founded Acmora in Ostrel".split(),
                        (DocumentEntity("Ana Velmor", None, ((0, 2),)), DocumentEntity("Acmora", None, ((3, 4),)),
                         DocumentEntity("Ostrel", None, ((5, 6),))))  # fmt: skip
    aligned = graph.align(document)
    assert aligned.relations == ((1, "founded_by", 0),)
    assert [entity.type for entity in aligned.entities] == [None, None, "town"]


# ----------------------------------------------------------------------------------------------- runs and errors


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return write_objective_corpus(tmp_path_factory.mktemp("objectives"), documents=24, task_examples_per_split=(24, 8))


def pretrain_argv(luke, corpus, output_dir, *extra):
    return ["--task", "pretrain", "--pretrain_format", "docred", "--model_name_or_path", str(luke),
            "--train_file", str(corpus / "pretrain.json"), "--validation_file", str(corpus / "pretrain_dev.json"),
            "--kg_triples", str(corpus / "kg.tsv"), "--output_dir", str(output_dir), "--max_seq_length", "96",
            "--report_to", "none", "--save_strategy", "no", "--use_cpu", "true", "--disable_tqdm", "true",
            *extra]  # fmt: skip


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--objectives", "erica,bert"], "--objectives 'erica,bert': unknown objective 'bert'; choose names from"),
        (["--objectives", "kbir", "--gamma", "-1"], "--gamma -1.0: a loss weight must be a finite number >= 0"),
        (["--objectives", "kbir", "--delta", "nan"], "--delta nan: a loss weight must be a finite number >= 0"),
        (["--objectives", "kbir", "--sigma", "abc"], "--sigma"),
        (["--objectives", "erica", "--delta", "2"], "--delta weighs L_KRC, which --objectives erica does not train"),
        (
            ["--objectives", "kbir", "--krc_probability", "1.5"],
            "--krc_probability 1.5: a probability must be a number in [0, 1]",
        ),
        (["--objectives", "kbir", "--krc_replaced_weight", "-2"], "--krc_replaced_weight -2.0: a loss weight must be"),
        (
            ["--objectives", "erica", "--krc_replaced_weight", "9"],
            "--krc_replaced_weight acts on L_KRC, which --objectives erica does not train",
        ),
        (["--objectives", "luke"], "--pretrain_format docred holds documents for --objectives"),
    ],
)
def test_bad_objective_flags_are_one_error_line(tiny_luke_dir, corpus, tmp_path, capsys, flags, message):
    with pytest.raises(SystemExit) as stop:
        load_entity_script().main(pretrain_argv(tiny_luke_dir, corpus, tmp_path / "out", "--do_train", *flags))
    assert stop.value.code == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error.startswith("run_entity_tasks.py: error: ") and message in error
    assert not (tmp_path / "out" / "model.safetensors").exists()


def test_bad_documents_and_graphs_are_one_error_naming_the_file(tiny_luke_dir, corpus, tmp_path, capsys):
    record = docred_record(documents()[0])
    record["labels"].append({"h": 0, "t": 7, "r": "founded_by"})
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([record]))
    empty = tmp_path / "empty.tsv"
    empty.write_text("# nothing\n")
    unrelated = tmp_path / "unrelated.tsv"
    unrelated.write_text("Nobody\tknows\tNothing\n")
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps([{**docred_record(documents()[1]), "labels": []}]))
    cases = [
        (["--train_file", str(bad)], f"--train_file {bad}, item 1: DocRED document 'd1': labels[3] ('founded_by') names "
         "entity t=7, which has no mention"),
        (["--kg_triples", str(empty)], f"--kg_triples {empty}: holds no triple (an empty knowledge graph)"),
        (["--train_file", str(plain), "--kg_triples", str(unrelated)], "none of the 1 documents has a relation"),
    ]  # fmt: skip
    for flags, message in cases:
        argv = pretrain_argv(tiny_luke_dir, corpus, tmp_path / "out", "--do_train", "--objectives", "erica")
        for i in range(0, len(flags), 2):
            argv[argv.index(flags[i]) + 1] = flags[i + 1]
        with pytest.raises(SystemExit):
            load_entity_script().main(argv)
        error = capsys.readouterr().err.strip().splitlines()[-1]
        assert error.startswith("run_entity_tasks.py: error: ") and message in error, error


@pytest.mark.slow
def test_every_objective_loss_is_logged_and_falls_and_the_checkpoint_starts_a_task(tiny_luke_dir, corpus, tmp_path):
    output = tmp_path / "all"
    load_entity_script().main(pretrain_argv(
        tiny_luke_dir, corpus, output, "--objectives", "luke,erica,kbir", "--do_train", "--num_train_epochs", "12",
        "--learning_rate", "5e-3", "--per_device_train_batch_size", "8", "--logging_steps", "3", "--seed", "0"))  # fmt: skip
    history = json.loads((output / "trainer_state.json").read_text())["log_history"]
    logged = [entry for entry in history if "loss" in entry]
    for name in ("mlm_loss", "mep_loss", "ed_loss", "rd_loss", "infill_loss", "lp_loss", "krc_loss"):
        values = [entry[name] for entry in logged if name in entry]
        assert len(values) >= 4, name
        tail = values[-max(2, len(values) // 4) :]  # the last quarter's mean: one noisy step (KRC's) decides nothing
        assert sum(tail) / len(tail) < values[0], f"{name}: {values}"
    config = json.loads((output / "config.json").read_text())
    assert config["architectures"] == ["GesaForEntityPreTraining"]
    assert config["pretraining_objectives"]["objectives"] == ["luke", "erica", "kbir"]
    assert not math.isnan(logged[-1]["loss"])
    results = load_entity_script().main([
        "--task", "relation_classification", "--model_name_or_path", str(output), "--train_file",
        str(corpus / "relation_train.json"), "--validation_file", str(corpus / "relation_dev.json"), "--do_train",
        "--do_eval", "--num_train_epochs", "1", "--output_dir", str(tmp_path / "tacred"), "--report_to", "none",
        "--save_strategy", "no", "--use_cpu", "true", "--disable_tqdm", "true"])  # fmt: skip
    assert "eval_f1" in results
    card = (tmp_path / "tacred" / "README.md").read_text()
    assert "pre-trained with" in card and "luke,erica,kbir" in card


@pytest.mark.needs_shared
def test_the_real_scirex_sample_gives_every_objective_a_finite_loss(tiny_luke_dir):
    """SciREX's released papers (../shared): clusters and mentions become entities, N-ary relations binary ones, the
    documents windows of the default 256 tokens; one batch of real windows trains every objective."""
    documents = read_scirex_documents(SHARED / "data" / "scirex" / "dev10.jsonl")
    assert len(documents) == 10 and all(document.entities for document in documents)
    assert sum(len(document.relations) for document in documents) > 0
    vocabulary = pretraining_vocabulary(documents)
    tokenizer = pretraining_tokenizer(str(tiny_luke_dir), vocabulary)
    settings = {"objectives": ["luke", "erica", "kbir"]}
    processor = EntityObjectivesProcessor(tokenizer, settings, 256, seed=0)
    features = processor.encode_all(documents[:2])
    assert len(features) > 10 and all(len(f["word_ids"]) <= 254 - 16 for f in features)
    related = [f for f in features if f["relation_ids"]][:4] + [f for f in features if not f["relation_ids"]][:4]
    batch = processor.get_data_collator()(related)
    config = GesaConfig(vocab_size=len(tokenizer), entity_vocab_size=len(vocabulary), hidden_size=16, entity_emb_size=8,
                        num_hidden_layers=1, num_attention_heads=2, intermediate_size=20, ablation="luke",
                        max_position_embeddings=300, pretraining_objectives=settings)  # fmt: skip
    outputs = GesaForEntityPreTraining(config)(**batch)
    for name in ("mlm_loss", "mep_loss", "ed_loss", "infill_loss", "lp_loss", "krc_loss"):
        assert torch.isfinite(outputs[name]), name


@pytest.mark.slow
def test_the_objectives_demo_ends_with_each_accuracy_beside_its_chance(tmp_path, capsys):
    """`--task pretrain --objectives luke,erica,kbir` with no data: the offline demo trains and its last line is the
    summary, every objective's accuracy before and after training beside its chance (no LUKE-only chance note)."""
    capsys.readouterr()
    output_dir = tmp_path / "objectives-demo"
    load_entity_script().main(
        ["--task", "pretrain", "--objectives", "luke,erica,kbir", "--output_dir", str(output_dir)]
    )
    last = capsys.readouterr().out.splitlines()[-1]
    assert last.startswith("Pre-training 12 sentences: loss "), last
    for name in ("ED accuracy", "ED chance", "RD accuracy", "RD chance", "KBI infilling accuracy",
                 "KBI unigram baseline", "KRC balanced accuracy", "; before training: "):  # fmt: skip
        assert name in last, (name, last)
    assert "a uniform guess of each masked word and entity" not in last


# ----------------------------------------------------------------------------------------------- the long variant


def test_the_long_variant_at_a_covering_window_has_lukes_objective_losses(tiny_luke_dir):
    """`--variant long_luke`'s head, converted from LUKE with a window covering the input and no random keys, gives
    every objective the loss LUKE's (`GesaForEntityPreTraining`, `ablation="luke"`) gives on the same batch; a narrow
    window does not (the comparison can fail)."""
    settings = {"objectives": ["luke", "erica", "kbir"]}
    processor, features = processor_for(tiny_luke_dir, settings["objectives"])
    batch = processor.get_data_collator()(features)
    vocabulary, luke = pretraining_vocabulary(documents()), load_tokenizer(str(tiny_luke_dir))

    def build(variant, **overrides):
        torch.manual_seed(0)
        return build_pretraining_model(variant, str(tiny_luke_dir), vocabulary, luke, pretraining_objectives=settings,
                                       **overrides).eval()  # fmt: skip

    reference = build("luke", keep_entity_aware_queries=True)
    long = build("long_luke", attention_window=512, num_random_blocks=0)
    assert type(long) is LongLukeForEntityPreTraining and long.config.max_position_embeddings > 4096
    # the conversion: the encoder is LUKE's, the position tables grown (LUKE's 512 learned positions kept, copied
    # beyond); the infilling decoder starts as the word table. The heads new to a LukeModel checkpoint start random:
    # the reference's are copied over
    theirs = reference.state_dict()
    for name, value in long.state_dict().items():
        if name.startswith("gesa."):
            rows = 512 if "position_embeddings" in name else theirs[name].size(0)
            torch.testing.assert_close(value[:rows], theirs[name][:rows], atol=0, rtol=0, msg=name)
    assert torch.equal(long.infill.decoder.weight, long.gesa.embeddings.word_embeddings.weight)
    long.load_state_dict({name: value for name, value in theirs.items() if not name.startswith("gesa.")}, strict=False)
    with torch.no_grad():
        expected, actual = reference(**batch), long(**batch)
    for name in ("mlm_loss", "mep_loss", "ed_loss", "rd_loss", "infill_loss", "lp_loss", "krc_loss", "loss"):
        assert expected[name] is not None, name
        torch.testing.assert_close(actual[name], expected[name], atol=1e-5, rtol=0, msg=name)
    narrow = build("long_luke", attention_window=4, num_random_blocks=0)
    with torch.no_grad():
        assert (narrow(**batch).loss - expected.loss).abs() > 1e-4


def test_long_luke_pretrains_every_objective_and_its_checkpoint_starts_scirex(
    tiny_luke_dir, corpus, tmp_path, monkeypatch
):
    """`--task pretrain --variant long_luke --objectives luke,erica,kbir` at its default window length logs every
    loss and saves a `LongLukeForEntityPreTraining` checkpoint carrying its own code, whose encoder then starts
    `run_document_ie.py --variant long_luke` (SciREX's heads new)."""
    output = tmp_path / "long"
    argv = pretrain_argv(tiny_luke_dir, corpus, output, "--variant", "long_luke", "--objectives", "luke,erica,kbir",
                         "--do_train", "--max_steps", "2", "--per_device_train_batch_size", "8", "--logging_steps",
                         "1", "--seed", "0")  # fmt: skip
    del argv[argv.index("--max_seq_length") : argv.index("--max_seq_length") + 2]  # the long variant's default
    lengths = []
    encode_all = EntityObjectivesProcessor.encode_all
    monkeypatch.setattr(EntityObjectivesProcessor, "encode_all",
                        lambda self, examples: lengths.append(self.max_length) or encode_all(self, examples))  # fmt: skip
    load_entity_script().main(argv)
    assert lengths and set(lengths) == {LONG_PRETRAIN_LENGTHS["long_luke"]}
    history = json.loads((output / "trainer_state.json").read_text())["log_history"]
    logged = [entry for entry in history if "loss" in entry]
    for name in ("mlm_loss", "mep_loss", "ed_loss", "rd_loss", "infill_loss", "lp_loss", "krc_loss"):
        assert any(math.isfinite(entry.get(name, math.nan)) for entry in logged), (name, logged)
    config = json.loads((output / "config.json").read_text())
    assert (
        config["architectures"] == ["LongLukeForEntityPreTraining"]
        and config["model_type"] == LongLukeConfig.model_type
    )
    assert config["pretraining_objectives"]["objectives"] == ["luke", "erica", "kbir"]
    assert "modeling_long_luke_objectives.py" in {path.name for path in output.glob("*.py")}
    scirex = write_jsonl(tmp_path / "scirex.jsonl", [small_document("paper-1"), small_document("paper-2")])
    results = load_script(EXAMPLES / "run_document_ie.py", "run_document_ie_from_pretraining").main([
        "--variant", "long_luke", "--model_name_or_path", str(output), "--train_file", str(scirex),
        "--validation_file", str(scirex), "--do_train", "--do_eval", "--max_steps", "1", "--output_dir",
        str(tmp_path / "scirex"), "--report_to", "none", "--save_strategy", "no", "--use_cpu", "true",
        "--disable_tqdm", "true"])  # fmt: skip
    assert "eval_mention_f1" in results
    scirex_config = json.loads((tmp_path / "scirex" / "config.json").read_text())
    assert scirex_config["architectures"] == ["LongLukeForDocumentIE"]
    assert scirex_config["pretraining_objectives"]["objectives"] == ["luke", "erica", "kbir"]


def test_long_luke_pretraining_without_objectives_is_one_error_line(tiny_luke_dir, corpus, tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        load_entity_script().main(pretrain_argv(tiny_luke_dir, corpus, tmp_path / "out", "--variant", "long_luke",
                                                "--do_train"))  # fmt: skip
    assert stop.value.code == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert (
        "--task pretrain --variant long_luke trains seed 002's objectives on whole documents: give --objectives"
        in (error)
    )


@pytest.mark.slow
def test_a_luke_objectives_checkpoint_starts_scirex_and_record_and_goes_on_only_with_objectives(
    tiny_luke_dir, corpus, tmp_path, capsys
):
    """`--variant luke --objectives erica`'s checkpoint (`GesaForEntityPreTraining`): its encoder starts SciREX's heads
    (`run_document_ie.py --variant luke`) and ReCoRD's (`run_record.py --variant luke`); pre-training goes on from it
    with --objectives (its objectives then this run's) and, without them, is one error line naming the fix."""
    run_record = load_script(EXAMPLES / "run_record.py", "run_record_from_erica")
    output = tmp_path / "erica"
    load_entity_script().main(pretrain_argv(tiny_luke_dir, corpus, output, "--variant", "luke", "--objectives",
                                            "erica", "--do_train", "--max_steps", "2"))  # fmt: skip
    assert json.loads((output / "config.json").read_text())["architectures"] == ["GesaForEntityPreTraining"]
    common = ["--report_to", "none", "--save_strategy", "no", "--use_cpu", "true", "--disable_tqdm", "true",
              "--do_train", "--do_eval", "--max_steps", "1"]  # fmt: skip
    scirex = write_jsonl(tmp_path / "scirex.jsonl", [small_document("paper-1"), small_document("paper-2")])
    results = load_script(EXAMPLES / "run_document_ie.py", "run_document_ie_from_erica").main([
        "--variant", "luke", "--model_name_or_path", str(output), "--train_file", str(scirex), "--validation_file",
        str(scirex), "--output_dir", str(tmp_path / "scirex"), *common])  # fmt: skip
    assert "eval_mention_f1" in results
    record = str(EXAMPLES / "data" / "record_cloze_dev.jsonl")
    results = run_record.main(["--variant", "luke", "--model_name_or_path", str(output), "--train_file", record,
                               "--validation_file", record, "--output_dir", str(tmp_path / "record"), *common])  # fmt: skip
    assert "eval_exact_match" in results
    again = pretrain_argv(output, corpus, tmp_path / "again", "--variant", "luke", "--objectives", "kbir", "--do_train",
                          "--max_steps", "1")  # fmt: skip
    load_entity_script().main(again)
    config = json.loads((tmp_path / "again" / "config.json").read_text())
    assert config["pretraining_objectives"]["objectives"] == ["kbir"]
    capsys.readouterr()
    with pytest.raises(SystemExit):
        load_entity_script().main(["--task", "pretrain", "--variant", "luke", "--model_name_or_path", str(output),
                                   "--train_file", str(ENTITY_TASK_FILES["ner"]), "--do_train", "--output_dir",
                                   str(tmp_path / "plain"), "--report_to", "none"])  # fmt: skip
    refused = capsys.readouterr().err
    assert "holds a GesaForEntityPreTraining" in refused and "go on with --objectives" in refused
