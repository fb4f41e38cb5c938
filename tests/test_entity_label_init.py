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
"""The start that does not stall: entity label rows start large, word rows (and a converted LUKE's words) unchanged."""

from __future__ import annotations

import pytest
import torch
from transformers import LukeConfig, LukeModel

from gesa.modeling_gesa import GesaForEntitySpanQA, GesaModel, GesaPreTrainedModel
from gesa.structure_gesa import CONTEXT_EDGE_KINDS, CONTEXT_NO_EDGE_KINDS, RelativeLabels

K = 8  # max_relative_position of the tiny models
# the graph-edge rows turned like the mention row (GesaPreTrainedModel.turn_edge_label_rows)
EDGE_ROWS = ("plc_edge", "sent_edge", "match_edge", "any_edge")


@pytest.fixture(scope="module")
def luke_dir(tmp_path_factory):
    torch.manual_seed(0)
    config = LukeConfig(vocab_size=120, entity_vocab_size=4, hidden_size=32, entity_emb_size=16, num_hidden_layers=2,
                        num_attention_heads=4, intermediate_size=37, max_position_embeddings=80,
                        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)  # fmt: skip
    path = tmp_path_factory.mktemp("luke")
    LukeModel(config).save_pretrained(path)
    return path


def convert(luke_dir, std, monkeypatch, seed=0):
    monkeypatch.setattr(GesaPreTrainedModel, "entity_label_logit_std", std)
    torch.manual_seed(seed)
    return GesaModel.from_luke_pretrained(luke_dir, max_relative_position=K).eval()


def entity_inputs(entities: int = 6, length: int = 30) -> dict[str, torch.Tensor]:
    generator = torch.Generator().manual_seed(1)
    positions = torch.full((1, entities, 2), -1)
    for e in range(entities):
        positions[0, e, 0] = 4 + 4 * e  # one distinct one-word mention per candidate
    return dict(
        input_ids=torch.randint(5, 120, (1, length), generator=generator),
        entity_ids=torch.full((1, entities), 2),  # every candidate is [MASK]
        entity_position_ids=positions,
        entity_sentence_ids=torch.arange(entities).view(1, -1) // 2,
        entity_string_ids=torch.arange(entities).view(1, -1) % 3,
    )


def test_word_rows_keep_the_old_init_and_entity_graph_rows_are_rescaled(luke_dir, monkeypatch):
    """Word rows and e2e_local's entity-index distance rows keep their draw; the entity graph's rows are rescaled."""
    old, new = convert(luke_dir, None, monkeypatch), convert(luke_dir, 2.0, monkeypatch)
    labels = RelativeLabels(K)
    first, distances = labels.plc_question, labels.entity_distance_offset
    assert (first, distances) == (new.entity_graph_label_rows().start, new.entity_graph_label_rows().stop)
    for old_layer, new_layer in zip(old.encoder.layer, new.encoder.layer, strict=True):
        old_table = old_layer.attention.self.label_embeddings.weight
        new_table = new_layer.attention.self.label_embeddings.weight
        torch.testing.assert_close(new_table[:first], old_table[:first], rtol=0, atol=0)
        torch.testing.assert_close(new_table[distances:], old_table[distances:], rtol=0, atol=0)
        assert new_table.shape[0] - distances >= 2 * K + 1  # the entity-index distance rows are compared too
        turned = [labels.mention, *(getattr(labels, name) for name in EDGE_ROWS)]
        graph_rows = [row for row in range(first, distances) if row not in turned]
        ratio = new_table[graph_rows] / old_table[graph_rows]
        torch.testing.assert_close(ratio, torch.full_like(ratio, ratio.mean().item()), rtol=1e-4, atol=0)
        assert ratio.mean().item() > 10  # one factor per table: the rows' draw is kept, only rescaled
        # the mention and edge rows are rescaled by the same factor, then turned (tests below)
        norms = new_table[turned].norm(dim=-1) / old_table[turned].norm(dim=-1)
        torch.testing.assert_close(norms, torch.full_like(norms, ratio.mean().item()), rtol=1e-4, atol=0)


def test_converted_luke_words_compute_the_same_without_entities(luke_dir, monkeypatch):
    """Entity-free inputs use only the word rows (w2w distances, CLS, question): the new init changes no word output."""
    inputs = entity_inputs()
    words = {"input_ids": inputs["input_ids"], "global_attention_mask": torch.zeros_like(inputs["input_ids"])}
    words["global_attention_mask"][0, :1] = 1
    words["global_attention_mask"][0, 1:5] = 2
    old, new = convert(luke_dir, None, monkeypatch), convert(luke_dir, 2.0, monkeypatch)
    with torch.no_grad():
        expected = old(**words).last_hidden_state
        actual = new(**words).last_hidden_state
    torch.testing.assert_close(actual, expected, rtol=0, atol=0)


def test_converted_entity_rows_fit_the_loaded_queries(luke_dir, monkeypatch):
    """The label logits `q . r / sqrt(d)` of a converted model's entity rows have about the chosen std."""
    model = convert(luke_dir, 2.0, monkeypatch)
    attention = model.encoder.layer[0].attention.self
    inputs = torch.nn.functional.layer_norm(torch.randn(4000, 32), (32,))
    queries = attention.e2w_query(inputs).view(4000, 4, 8)
    logits = queries @ attention.label_embeddings.weight[model.entity_graph_label_rows()].T / 8**0.5
    assert 1.2 < logits.std().item() < 3.0


def test_candidates_start_apart_with_the_new_init(luke_dir, monkeypatch):
    """All candidates are the same [MASK]: their initial states differ only through their labels."""

    def spread(model):
        with torch.no_grad():
            states = model(**entity_inputs()).entity_last_hidden_state[0]
        return (states - states.mean(0)).norm(dim=-1).mean().item() / states.norm(dim=-1).mean().item()

    old, new = spread(convert(luke_dir, None, monkeypatch)), spread(convert(luke_dir, 2.0, monkeypatch))
    assert new > 10 * old


def test_loaded_checkpoint_keeps_its_label_tables(luke_dir, monkeypatch, tmp_path):
    model = convert(luke_dir, 2.0, monkeypatch)
    model.save_pretrained(tmp_path / "gesa")
    loaded = GesaModel.from_pretrained(tmp_path / "gesa")
    for saved, back in zip(model.encoder.layer, loaded.encoder.layer, strict=True):
        a, b = saved.attention.self.label_embeddings.weight, back.attention.self.label_embeddings.weight
        torch.testing.assert_close(b, a, rtol=0, atol=0)


def test_fresh_heads_get_the_new_init_too(monkeypatch):
    monkeypatch.setattr(GesaPreTrainedModel, "entity_label_logit_std", 2.0)
    from gesa.configuration_gesa import GesaConfig

    config = GesaConfig(vocab_size=50, entity_vocab_size=4, hidden_size=32, entity_emb_size=16, num_hidden_layers=1,
                        num_attention_heads=4, intermediate_size=37, max_relative_position=K)  # fmt: skip
    model = GesaForEntitySpanQA(config)
    table = model.gesa.encoder.layer[0].attention.self.label_embeddings.weight
    labels = RelativeLabels(K)
    first, distances = labels.plc_question, labels.entity_distance_offset
    assert table[1:first].std().item() < 0.05 and table[distances:].std().item() < 0.05
    # logit std 2 for a fresh query: 2 * sqrt(8) / (0.02 * sqrt(8 * 32)) = 17.7
    assert model.entity_label_std() == pytest.approx(2.0 * 8**0.5 / (0.02 * (8 * 32) ** 0.5))
    assert table[first:distances].std().item() == pytest.approx(model.entity_label_std(), rel=0.25)


def mask_entity_logits(model, layer, row: str | int = "mention", query: str = "e2w_query") -> torch.Tensor:
    """`(H,)` label logits `q_h . r_row / sqrt(d)` of a `[MASK]` candidate's `query`, computed from the weights
    (`row` a `RelativeLabels` name or a row index)."""
    embeddings = model.entity_embeddings
    entity = embeddings.entity_embeddings.weight[2]
    if embeddings.entity_embedding_dense is not None:
        entity = embeddings.entity_embedding_dense(entity)
    entity = embeddings.LayerNorm(entity + embeddings.token_type_embeddings.weight[0])
    attention = layer.attention.self
    queries = getattr(attention, query)(entity).view(attention.num_heads, attention.head_size)
    label = getattr(RelativeLabels(K), row) if isinstance(row, str) else row
    return queries @ attention.label_embeddings.weight[label] / attention.head_size**0.5


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_head_starts_with_a_candidate_pulled_towards_its_own_mentions(luke_dir, monkeypatch, seed):
    """The mention row is turned towards the [MASK] entity's e2w queries: positive in every head of every layer
    (drawn at random, about half the heads would push each candidate away from its own mention words)."""
    model = convert(luke_dir, 3.0, monkeypatch, seed=seed)
    with torch.no_grad():
        for layer in model.encoder.layer:
            assert (mask_entity_logits(model, layer) > 0).all()
    monkeypatch.setattr(GesaPreTrainedModel, "align_entity_label_rows", lambda self, *args, **kwargs: None)
    unturned = convert(luke_dir, 3.0, monkeypatch, seed=seed)
    with torch.no_grad():
        signs = torch.cat([mask_entity_logits(unturned, layer) > 0 for layer in unturned.encoder.layer])
    # only the mention and edge rows differ from a conversion without the turn, each keeping its norm
    labels = RelativeLabels(K)
    turned = [labels.mention, *(getattr(labels, name) for name in EDGE_ROWS)]
    for turned_layer, layer in zip(model.encoder.layer, unturned.encoder.layer, strict=True):
        a, b = turned_layer.attention.self.label_embeddings.weight, layer.attention.self.label_embeddings.weight
        rows = [row for row in range(a.shape[0]) if row not in turned]
        torch.testing.assert_close(a[rows], b[rows], rtol=0, atol=0)
        torch.testing.assert_close(a[turned].norm(dim=-1), b[turned].norm(dim=-1))
    assert signs.numel() == 8 and not signs.all()  # the random draw alone has a negative head (seeds 0-2)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_head_starts_with_a_candidate_attending_along_the_graph(luke_dir, monkeypatch, seed):
    """The edge rows (PLC, SENT-BASED, MATCH, the shared edge label) are turned towards the [MASK] entity's e2e
    queries: each gives the same positive logit in every head of every layer; drawn at random they would not."""
    model = convert(luke_dir, 3.0, monkeypatch, seed=seed)
    monkeypatch.setattr(GesaPreTrainedModel, "turn_edge_label_rows", False)
    mention_only = convert(luke_dir, 3.0, monkeypatch, seed=seed)
    signs = []
    with torch.no_grad():
        for layer, unturned in zip(model.encoder.layer, mention_only.encoder.layer, strict=True):
            for row in EDGE_ROWS:
                logits = mask_entity_logits(model, layer, row, "e2e_query")
                assert (logits > 0).all()
                torch.testing.assert_close(logits, logits.mean().expand_as(logits))  # one logit in every head
                signs.append(mask_entity_logits(mention_only, unturned, row, "e2e_query") > 0)
            # the mention row is turned either way
            torch.testing.assert_close(mask_entity_logits(model, layer), mask_entity_logits(mention_only, unturned))
    assert not torch.cat(signs).all()


def context_edge_logits(model, layer, kind: int) -> torch.Tensor:
    """`(H,)` label logits of a `[MASK]` candidate's e2e query on the context graph's edge-kind `kind` row."""
    return mask_entity_logits(model, layer, RelativeLabels(K).context_edge(kind), "e2e_query")


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_context_graphs_edge_rows_start_with_one_sign_in_every_head(luke_dir, monkeypatch, seed):
    """With `entity_graph="context"` (WikiHop) each edge kind of the thesis's graph is its own e2e row: turned like
    the merged graph's edge rows, a `[MASK]` candidate gives each the same positive logit in every head of every
    layer; the no-edge kinds (`complement`, `unconnected`) keep their draw, as the merged graph's no-edge row does."""
    monkeypatch.setattr(GesaPreTrainedModel, "entity_label_logit_std", 3.0)
    torch.manual_seed(seed)
    model = GesaModel.from_luke_pretrained(luke_dir, max_relative_position=K, entity_graph="context").eval()
    monkeypatch.setattr(GesaPreTrainedModel, "turn_edge_label_rows", False)
    torch.manual_seed(seed)
    unturned = GesaModel.from_luke_pretrained(luke_dir, max_relative_position=K, entity_graph="context").eval()
    edges = [kind for kind, name in enumerate(CONTEXT_EDGE_KINDS) if name not in CONTEXT_NO_EDGE_KINDS]
    assert len(edges) == 10
    signs = []
    with torch.no_grad():
        for layer, plain in zip(model.encoder.layer, unturned.encoder.layer, strict=True):
            for kind in edges:
                logits = context_edge_logits(model, layer, kind)
                assert (logits > 0).all(), (CONTEXT_EDGE_KINDS[kind], logits)
                torch.testing.assert_close(logits, logits.mean().expand_as(logits))  # one logit in every head
                signs.append(context_edge_logits(unturned, plain, kind) > 0)
            a, b = layer.attention.self.label_embeddings.weight, plain.attention.self.label_embeddings.weight
            rows = [RelativeLabels(K).context_edge(kind) for kind in range(len(CONTEXT_EDGE_KINDS))]
            torch.testing.assert_close(a[rows].norm(dim=-1), b[rows].norm(dim=-1))  # rescaled alike, norms kept
            for name in CONTEXT_NO_EDGE_KINDS:
                row = RelativeLabels(K).context_edge(CONTEXT_EDGE_KINDS.index(name))
                torch.testing.assert_close(a[row], b[row], rtol=0, atol=0)
    assert not torch.cat(signs).all()  # drawn at random, some head of some kind starts negative


def test_a_fresh_context_graph_model_starts_with_its_edge_rows_turned(monkeypatch):
    """A model built from its config (no LUKE) turns the context graph's edge rows too."""
    monkeypatch.setattr(GesaPreTrainedModel, "entity_label_logit_std", 3.0)
    from gesa.configuration_gesa import GesaConfig
    from gesa.modeling_gesa_multiple_choice import GesaForEntityMultipleChoice

    config = GesaConfig(vocab_size=50, entity_vocab_size=4, hidden_size=32, entity_emb_size=16, num_hidden_layers=2,
                        num_attention_heads=4, intermediate_size=37, max_relative_position=K,
                        entity_graph="context")  # fmt: skip
    torch.manual_seed(0)
    model = GesaForEntityMultipleChoice(config)
    with torch.no_grad():
        for layer in model.gesa.encoder.layer:
            for kind, name in enumerate(CONTEXT_EDGE_KINDS):
                if name not in CONTEXT_NO_EDGE_KINDS:
                    assert (context_edge_logits(model.gesa, layer, kind) > 0).all(), name


def test_a_cut_entity_table_turns_towards_its_mask_row(luke_dir, monkeypatch):
    """`entity_rows` moves LUKE's [MASK] row; the turn follows it (here to row 0)."""
    monkeypatch.setattr(GesaPreTrainedModel, "entity_label_logit_std", 3.0)
    torch.manual_seed(0)
    model = GesaModel.from_luke_pretrained(luke_dir, max_relative_position=K, entity_rows=[2, 0, 1]).eval()
    luke = LukeModel.from_pretrained(luke_dir)
    torch.testing.assert_close(model.entity_embeddings.entity_embeddings.weight[0],
                               luke.entity_embeddings.entity_embeddings.weight[2])  # fmt: skip
    with torch.no_grad():
        model.entity_embeddings.entity_embeddings.weight[2] = model.entity_embeddings.entity_embeddings.weight[0]
        for layer in model.encoder.layer:
            assert (mask_entity_logits(model, layer) > 0).all()


def test_fresh_models_start_with_candidates_pulled_towards_their_mentions(monkeypatch):
    monkeypatch.setattr(GesaPreTrainedModel, "entity_label_logit_std", 3.0)
    from gesa.configuration_gesa import GesaConfig

    config = GesaConfig(vocab_size=50, entity_vocab_size=4, hidden_size=32, entity_emb_size=16, num_hidden_layers=2,
                        num_attention_heads=4, intermediate_size=37, max_relative_position=K)  # fmt: skip
    for seed in range(3):
        torch.manual_seed(seed)
        model = GesaForEntitySpanQA(config)
        with torch.no_grad():
            for layer in model.gesa.encoder.layer:
                assert (mask_entity_logits(model.gesa, layer) > 0).all()


@pytest.mark.parametrize("head", [GesaModel, GesaForEntitySpanQA])
def test_a_model_drawn_from_its_config_equals_one_loaded_with_every_weight_missing(head, monkeypatch):
    """``Model(config)`` and ``from_pretrained(None, state_dict={})`` draw each module from the same seed (as
    transformers' common tests do): every weight equal, the turned mention row included (a head's init runs after its
    base model's; the row is turned once)."""
    from transformers import PreTrainedModel

    from gesa.configuration_gesa import GesaConfig

    drawn = PreTrainedModel._initialize_weights

    def seeded(*args, **kwargs):
        torch.manual_seed(42)
        drawn(*args, **kwargs)

    monkeypatch.setattr(PreTrainedModel, "_initialize_weights", seeded)
    config = GesaConfig(vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=37, entity_vocab_size=10, entity_emb_size=6, max_position_embeddings=512,
                        type_vocab_size=16, max_relative_position=4)  # fmt: skip
    built = head(config).state_dict()
    loaded = head.from_pretrained(None, config=config, state_dict={}).state_dict()
    assert sorted(built) == sorted(loaded)
    assert [name for name in built if not torch.equal(built[name], loaded[name])] == []


def luke_drawn_at(path, initializer_range: float, seed: int = 0):
    torch.manual_seed(seed)
    config = LukeConfig(vocab_size=120, entity_vocab_size=4, hidden_size=32, entity_emb_size=16, num_hidden_layers=2,
                        num_attention_heads=4, intermediate_size=37, max_position_embeddings=80,
                        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                        initializer_range=initializer_range)  # fmt: skip
    luke = LukeModel(config)
    for layer in luke.encoder.layer:  # the entity-aware queries tied to the word query, as in released LUKE
        attention = layer.attention.self
        for name in ("w2e_query", "e2w_query", "e2e_query"):
            getattr(attention, name).load_state_dict(attention.query.state_dict())
    luke.save_pretrained(path)
    return path


def test_the_label_start_does_not_depend_on_the_checkpoints_weight_scale(tmp_path, monkeypatch):
    """A LUKE drawn at LukeConfig's 0.02 and one drawn at 1/sqrt(width) convert to the same start: entity-aware
    queries of about unit gain (the second's kept as exact copies), entity label rows and mention logits of the same
    size. Without the query gain
    (`entity_query_gain=None`) the small checkpoint's rows are 1/gain times larger: what the first optimiser steps on
    its small queries turned into label logits swinging by tens (docs/diagnostic.md)."""
    monkeypatch.setattr(GesaPreTrainedModel, "entity_label_logit_std", 3.0)
    rows, logits = {}, {}
    for scale in (0.02, 32**-0.5):
        model = GesaModel.from_luke_pretrained(luke_drawn_at(tmp_path / str(scale), scale), max_relative_position=K)
        with torch.no_grad():
            for layer in model.encoder.layer:
                attention = layer.attention.self
                for name in ("w2e_query", "e2w_query", "e2e_query"):
                    gain = getattr(attention, name).weight.pow(2).sum(dim=1).mean().sqrt().item()
                    assert gain == pytest.approx(1.0, abs=0.1 if scale == 0.02 else 0.2)
            rows[scale] = torch.stack([layer.attention.self.label_embeddings.weight[model.entity_graph_label_rows()]
                                       .std() for layer in model.encoder.layer])  # fmt: skip
            logits[scale] = torch.cat([mask_entity_logits(model, layer) for layer in model.encoder.layer])
        # scaled at 0.02; at 1/sqrt(width) already near unit gain: exact copies, the conversion as before
        assert bool(model.luke_conversion_info["scaled_queries"]) == (scale == 0.02)
    torch.testing.assert_close(rows[0.02], rows[32**-0.5], rtol=0.25, atol=0)
    assert (logits[0.02] > 0).all() and logits[0.02].mean() == pytest.approx(logits[32**-0.5].mean().item(), rel=0.5)
    monkeypatch.setattr(GesaPreTrainedModel, "entity_query_gain", None)
    copied = GesaModel.from_luke_pretrained(tmp_path / "0.02", max_relative_position=K)
    assert copied.luke_conversion_info["scaled_queries"] == {}
    big = torch.stack([layer.attention.self.label_embeddings.weight[copied.entity_graph_label_rows()].std()
                       for layer in copied.encoder.layer])  # fmt: skip
    assert (big > 5 * rows[0.02]).all()
