"""What the three variants share: the `examples/variants.py` registry, gradients reaching the new parameters, and
gradient checkpointing where blocks repeat."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import torch
from test_modeling import TINY, record_like_batch
from test_variants_ernie import ernie_batch
from test_variants_kar import kar_batch
from test_variants_xh import collate, graph_feature, randomise_hops, xh_config

from gesa import GesaForEntitySpanQA
from gesa.configuration_variants import ErnieConfig, KarConfig
from gesa.modeling_ernie import ErnieForEntitySpanQA
from gesa.modeling_kar import KarForEntitySpanQA
from gesa.modeling_xh import XhForEntitySpanQA

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def load_registry():
    spec = importlib.util.spec_from_file_location("gesa_example_variants", EXAMPLES / "variants.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(module)
    return module


def labels_for(batch: dict) -> torch.Tensor:
    labels = torch.zeros(batch["entity_ids"].shape)
    labels[:, 1] = 1
    return labels


def variant_models() -> dict:
    torch.manual_seed(0)
    kar = KarForEntitySpanQA(KarConfig(**{**TINY, "kar_layer": 1, "classifier_dropout": 0.0}))
    ernie = ErnieForEntitySpanQA(ErnieConfig(**{**TINY, "ernie_num_fusion_layers": 2, "classifier_dropout": 0.0}))
    xh = XhForEntitySpanQA(xh_config(classifier_dropout=0.0))
    randomise_hops(xh.gesa, std=0.1)
    xh_batch = collate([graph_feature(3, [9, 10, 11], seed=1), graph_feature(2, [12, 10], seed=2)])
    xh_batch["node_adjacency"][0] = 1 - torch.eye(3, dtype=torch.long)
    xh_batch["node_adjacency"][1, 0, 1] = 1
    return {
        "kar": (kar, {**kar_batch(), "labels": labels_for(kar_batch())}),
        "ernie": (ernie, {**ernie_batch(), "labels": labels_for(ernie_batch())}),
        "xh": (xh, xh_batch),
    }


# ---------------------------------------------------------------------------------------------
# Gradients and checkpointing
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["kar", "ernie", "xh"])
def test_gradients_reach_every_new_parameter(name):
    model, batch = variant_models()[name]
    base = model.gesa.train()
    out = base(**{k: v for k, v in batch.items() if k != "labels"})
    loss = out.last_hidden_state.pow(2).mean() + out.entity_last_hidden_state.pow(2).mean()
    if name == "ernie":
        loss = loss + out.knowledge_last_hidden_state.pow(2).mean()
    loss.backward()
    no_grad = [n for n, p in base.named_parameters() if p.grad is None or not p.grad.any()]
    assert no_grad == [], no_grad


@pytest.mark.parametrize("name", ["kar", "ernie", "xh"])
def test_gradient_checkpointing_matches_plain_backward(name):
    model, batch = variant_models()[name]
    model.train()
    model(**batch).loss.backward()
    plain = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    model.zero_grad()
    if hasattr(model, "activation_checkpointing_enable"):
        model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
    else:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    layer_type = {"kar": "KarLayer", "ernie": "ErnieFusionLayer", "xh": "XhHopLayer"}[name]
    assert any(type(m).__name__ == layer_type and m.gradient_checkpointing for m in model.modules())
    model(**batch).loss.backward()
    for n, p in model.named_parameters():
        if n in plain:
            torch.testing.assert_close(p.grad, plain[n], atol=1e-6, rtol=1e-5, msg=n)


# ---------------------------------------------------------------------------------------------
# examples/variants.py
# ---------------------------------------------------------------------------------------------


def test_registry_lists_every_variant_with_a_qa_class():
    registry = load_registry()
    assert set(registry.VARIANTS) == {"gesa", "luke", "kar", "xh", "ernie"}
    assert registry.VARIANTS["luke"].config_overrides == {"ablation": "luke"}
    assert not registry.VARIANTS["kar"].shrink_entity_table and registry.VARIANTS["gesa"].shrink_entity_table
    assert not registry.VARIANTS["xh"].uses_gesa_features
    scratch = dict(TINY, max_position_embeddings=40)
    batch = record_like_batch()
    for name in ("gesa", "luke", "kar", "ernie"):
        model = registry.VARIANTS[name].from_scratch(**scratch).eval()
        assert isinstance(model, registry.VARIANTS[name].model_class)
        with torch.no_grad():
            assert model(**batch).logits.shape == (2, 5)
    assert registry.VARIANTS["luke"].from_scratch(**scratch).config.use_absolute_position_embeddings
    xh = registry.VARIANTS["xh"].from_scratch(**scratch)
    assert xh.config.xh_num_hop_layers == 2  # K = 3 capped at the depth of a 2-layer model


@pytest.mark.needs_shared
def test_registry_builds_each_variant_from_luke_and_collates(tiny_luke_dir):
    from transformers import LukeModel, LukeTokenizer

    luke_query = LukeModel.from_pretrained(tiny_luke_dir).encoder.layer[1].attention.self.query.weight
    registry = load_registry()
    for name, spec in registry.VARIANTS.items():
        model = spec.from_luke(tiny_luke_dir)
        assert type(model) is spec.model_class, name
        assert isinstance(model.config, spec.config_class)
        attention = model.gesa.encoder.layer[1].attention.self
        for query in ("w2w_query", "w2e_query", "e2w_query", "e2e_query"):  # LUKE's query copied four times
            assert torch.equal(getattr(attention, query).weight, luke_query), (name, query)
    assert registry.VARIANTS["xh"].from_luke(tiny_luke_dir).config.xh_num_hop_layers == 2
    assert isinstance(registry.VARIANTS["gesa"].from_luke(tiny_luke_dir), GesaForEntitySpanQA)
    with pytest.raises(ValueError, match="do not shrink it"):
        registry.VARIANTS["kar"].from_luke(tiny_luke_dir, entity_rows=[0, 1, 2, 3])
    tokenizer = LukeTokenizer.from_pretrained(tiny_luke_dir)
    tokenizer.entity_vocab = {**tokenizer.entity_vocab, "Chelsea": 3}
    batch = {k: v for k, v in record_like_batch(vocab_size=1000).items()}
    batch["input_ids"][0, 9] = tokenizer.convert_tokens_to_ids("ĠChelsea")
    kar_collate = registry.VARIANTS["kar"].wrap_collator(lambda features: dict(batch), tokenizer)
    ernie_collate = registry.VARIANTS["ernie"].wrap_collator(lambda features: dict(batch), tokenizer)
    assert registry.VARIANTS["gesa"].wrap_collator(len, tokenizer) is len
    kar_inputs, ernie_inputs = kar_collate([]), ernie_collate([])
    assert kar_inputs["kar_mention_spans"][0, 2].tolist() == [9, 9]
    assert kar_inputs["kar_candidate_ids"][0, 2].tolist() == [3] and (kar_inputs["kar_candidate_ids"][1] == -1).all()
    assert ernie_inputs["ernie_entity_ids"].tolist() == [[3], [-1]]
    assert ernie_inputs["ernie_entity_positions"].tolist() == [[9], [-1]]
    with pytest.raises(ValueError, match="not XH graphs"):
        registry.VARIANTS["kar"].make_processor(tokenizer)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("name", ["kar", "ernie", "xh"])
def test_half_precision_forward_has_no_nan(name, dtype):
    model, batch = variant_models()[name]
    model = model.to(dtype).eval()
    with torch.no_grad():
        out = model(**batch)
    candidates = out.logits > torch.finfo(out.logits.dtype).min
    assert candidates.any() and not torch.isnan(out.logits).any() and torch.isfinite(out.loss)
