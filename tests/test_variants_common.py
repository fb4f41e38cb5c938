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
"""What the three variants share: the `training/registry.py` registry, gradients reaching the new parameters, and
gradient checkpointing where blocks repeat."""

from __future__ import annotations

import dataclasses
import inspect
import json
from pathlib import Path

import pytest
import torch
from model_helpers import TINY, config_error, record_like_batch
from transformers.dynamic_module_utils import get_relative_imports
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS
from variant_helpers import reload_each_in_fresh_process
from variant_inputs import (
    ENTITY_IDS,
    POSITIONS,
    collate,
    ernie_batch,
    ernie_config,
    graph_feature,
    kar_batch,
    kar_config,
    model_inputs,
    variant_models,
    xh_config,
)

from gesa import GesaConfig, GesaForEntitySpanQA
from gesa.checks_gesa import KAR_NULL_CANDIDATE
from gesa.configuration_variants import ErnieConfig, KarConfig, XhConfig
from gesa.modeling_ernie import (
    ErnieForDenoisingEntityAutoencoder,
    ErnieForEntitySpanQA,
    ErnieModel,
    corrupt_entity_alignments,
)
from gesa.modeling_kar import KarForEntitySpanQA, KarModel
from gesa.modeling_xh import XhForEntitySpanQA, XhForFactVerification, XhForMultiHopQA, XhModel
from gesa.training import registry

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def load_registry():
    """The package's variant registry (``gesa.training.registry``), the one the scripts and pipelines read."""
    return registry


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
# training/registry.py: the one variant registry
# ---------------------------------------------------------------------------------------------


def test_registry_lists_every_variant_with_a_qa_class():
    registry = load_registry()
    assert set(registry.VARIANTS) == {"gesa", "luke", "luke_graph", "kar", "xh", "ernie", "context_graph", "long_luke"}
    assert registry.VARIANTS["luke"].config_overrides == {"ablation": "luke"}
    assert registry.VARIANTS["luke_graph"].config_overrides == {"ablation": "luke"}
    assert not registry.VARIANTS["kar"].shrink_entity_table and registry.VARIANTS["gesa"].shrink_entity_table
    assert not registry.VARIANTS["xh"].uses_gesa_features
    scratch = dict(TINY, max_position_embeddings=40)
    batch = record_like_batch()
    for name in ("gesa", "luke", "luke_graph", "kar", "ernie", "long_luke"):
        model = registry.VARIANTS[name].from_scratch(**scratch).eval()
        assert isinstance(model, registry.VARIANTS[name].model_class)
        with torch.no_grad():
            assert model(**batch).logits.shape == (2, 5)
    assert registry.VARIANTS["luke"].from_scratch(**scratch).config.use_absolute_position_embeddings
    xh = registry.VARIANTS["xh"].from_scratch(**scratch)
    assert xh.config.xh_num_hop_layers == 2  # K = 3 capped at the depth of a 2-layer model


def test_registry_builds_each_variant_from_luke_and_collates(tiny_luke_dir):
    from transformers import LukeModel, LukeTokenizer

    luke_query = LukeModel.from_pretrained(tiny_luke_dir).encoder.layer[1].attention.self.query.weight
    registry = load_registry()
    for name, spec in registry.VARIANTS.items():
        model = spec.from_luke(tiny_luke_dir)
        assert type(model) is spec.model_class, name
        assert isinstance(model.config, spec.config_class)
        attention = model.gesa.encoder.layer[1].attention.self
        assert torch.equal(attention.w2w_query.weight, luke_query), name
        for query in ("w2e_query", "e2w_query", "e2e_query"):  # LUKE's query copied, scaled up to unit gain at most
            weight = getattr(attention, query).weight
            factor = (weight.norm() / luke_query.norm()).item()
            assert factor >= 1 and torch.allclose(weight, luke_query * factor, rtol=1e-5, atol=0), (name, query)
    assert registry.VARIANTS["xh"].from_luke(tiny_luke_dir).config.xh_num_hop_layers == 2
    assert isinstance(registry.VARIANTS["gesa"].from_luke(tiny_luke_dir), GesaForEntitySpanQA)
    with pytest.raises(ValueError, match="do not shrink it"):
        registry.VARIANTS["kar"].from_luke(tiny_luke_dir, entity_rows=[0, 1, 2, 3])
    refused = r"a config override has kb_size=10 .*it carries no KB files .*--variant ernie's candidate ids"
    with pytest.raises(ValueError, match=refused):
        registry.VARIANTS["ernie"].from_luke(tiny_luke_dir, kb_size=10)
    tokenizer = LukeTokenizer.from_pretrained(tiny_luke_dir)
    tokenizer.entity_vocab = {**tokenizer.entity_vocab, "Tobias": 3}
    batch = {k: v for k, v in record_like_batch(vocab_size=1000).items()}
    batch["input_ids"][0, 9] = tokenizer.convert_tokens_to_ids("ĠTobias")
    assert batch["input_ids"][0, 9] != tokenizer.unk_token_id  # one word token of the offline-trained vocabulary
    kar_collate = registry.VARIANTS["kar"].wrap_collator(lambda features: dict(batch), tokenizer)
    ernie_collate = registry.VARIANTS["ernie"].wrap_collator(lambda features: dict(batch), tokenizer)
    assert registry.VARIANTS["gesa"].wrap_collator(len, tokenizer) is len
    kar_inputs, ernie_inputs = kar_collate([]), ernie_collate([])
    assert kar_inputs["kar_mention_spans"][0, 2].tolist() == [9, 9]
    assert kar_inputs["kar_candidate_ids"][0, 2].tolist() == [3, KAR_NULL_CANDIDATE]  # the title, then NULL
    assert (kar_inputs["kar_candidate_ids"][1] == -1).all()
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


# ---------------------------------------------------------------------------------------------
# Every public model class saves its code and reloads in a fresh process with trust_remote_code
# ---------------------------------------------------------------------------------------------


def public_model_cases() -> list[dict]:
    """Each public model class of the three variants (tiny config), its auto class and inputs, the outputs to compare."""
    ernie_inputs = ernie_batch()
    dea_inputs = {k: ernie_inputs[k] for k in ("input_ids", "attention_mask", "entity_ids", "entity_attention_mask")}
    dea_inputs["entity_position_ids"] = ernie_inputs["entity_position_ids"]
    dea_inputs.update(
        corrupt_entity_alignments(
            ENTITY_IDS, POSITIONS, 14, 4, generator=torch.Generator().manual_seed(1), special_ids=()
        )
    )
    graphs = collate([graph_feature(3, [9, 7, 11], seed=1), graph_feature(2, [8, 10], seed=2)])
    graphs["node_adjacency"][0] = 1 - torch.eye(3, dtype=torch.long)
    graphs["node_adjacency"][1, 0, 1] = 1
    xh_qa_inputs = {k: v for k, v in graphs.items() if k != "labels"}
    qa = "AutoModelForQuestionAnswering"
    return [
        dict(name="kar", model=KarModel(kar_config()), auto_class="AutoModel", inputs=kar_batch(),
             outputs=["last_hidden_state", "linking_scores"]),
        dict(name="kar_qa", model=KarForEntitySpanQA(kar_config()), auto_class=qa, inputs=kar_batch(),
             outputs=["logits"]),
        dict(name="ernie", model=ErnieModel(ernie_config(ernie_num_fusion_layers=2)), auto_class="AutoModel",
             inputs=ernie_inputs, outputs=["last_hidden_state", "knowledge_last_hidden_state"]),
        dict(name="ernie_qa", model=ErnieForEntitySpanQA(ernie_config()), auto_class=qa, inputs=ernie_batch(),
             outputs=["logits"]),
        dict(name="ernie_dea", model=ErnieForDenoisingEntityAutoencoder(ernie_config()),
             auto_class="AutoModelForPreTraining", inputs=dea_inputs, outputs=["logits", "loss"]),
        dict(name="xh", model=XhModel(xh_config()), auto_class="AutoModel", inputs=model_inputs(graphs),
             outputs=["last_hidden_state", "hub_states"]),
        dict(name="xh_qa", model=XhForEntitySpanQA(xh_config()), auto_class=qa, inputs=xh_qa_inputs,
             outputs=["logits"]),
        dict(name="xh_multihop", model=XhForMultiHopQA(xh_config()), auto_class=qa, inputs=model_inputs(graphs),
             outputs=["relevance_logits", "start_logits"]),
        dict(name="xh_fever", model=XhForFactVerification(xh_config()),
             auto_class="AutoModelForSequenceClassification", inputs=model_inputs(graphs), outputs=["logits"]),
    ]  # fmt: skip


def test_every_public_model_saves_its_code_and_reloads_in_a_fresh_process(tmp_path):
    torch.manual_seed(0)
    cases = public_model_cases()
    expected = {}
    for case in cases:
        model = case["model"].eval()
        with torch.no_grad():  # move every parameter off its initialisation, so that each one must be loaded
            for parameter in model.parameters():
                parameter.add_(torch.randn_like(parameter) * 0.05)
            out = model(**case["inputs"])
        expected[case["name"]] = {key: getattr(out, key) for key in case["outputs"]}
        case["folder"] = tmp_path / case["name"]
        model.save_pretrained(case["folder"])
        case["expected_class"] = type(model).__name__
        # the folder carries every module its auto_map names, and every module those import (relatively)
        auto_map = json.loads((case["folder"] / "config.json").read_text())["auto_map"]
        assert auto_map[case["auto_class"]] == f"{type(model).__module__.split('.')[-1]}.{type(model).__name__}"
        files = {f"{reference.split('.')[0]}.py" for reference in auto_map.values()}
        for name in sorted(files):
            assert (case["folder"] / name).is_file(), (
                case["name"],
                name,
                sorted(p.name for p in case["folder"].iterdir()),
            )
        for path in case["folder"].glob("*.py"):
            for module in get_relative_imports(str(path)):
                assert (case["folder"] / f"{module}.py").is_file(), (case["name"], path.name, module)
    reloaded = reload_each_in_fresh_process(cases, tmp_path)
    assert sorted(reloaded) == sorted(expected)
    for name, outputs in expected.items():
        for key, value in outputs.items():
            torch.testing.assert_close(reloaded[name][key], value, atol=1e-5, rtol=0, msg=f"{name}.{key}")


# ---------------------------------------------------------------------------------------------
# The knowledge base is frozen: KB lookups send no gradient into LUKE's entity table
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["kar", "ernie", "ernie_dea"])
def test_default_knowledge_base_is_frozen_but_used(name):
    """Rows of the entity table that are only KB lookups (never a LUKE entity token) get no gradient, although they
    change the output; the row used by the LUKE entity tokens (2, [MASK]) still trains."""
    torch.manual_seed(0)
    if name == "kar":
        model, batch = KarModel(kar_config()).train(), kar_batch()  # candidates: rows 0-3
    elif name == "ernie":
        model, batch = ErnieModel(ernie_config(ernie_num_fusion_layers=2)).train(), ernie_batch()  # rows 1, 2, 3
    else:
        model = ErnieForDenoisingEntityAutoencoder(ernie_config()).train()
        batch = {k: v for k, v in ernie_batch().items() if k not in ("entity_string_ids", "entity_sentence_ids")}
        batch = {k: v for k, v in batch.items() if k not in ("global_attention_mask", "placeholder_entity_mask")}
        batch["dea_labels"] = corrupt_entity_alignments(ENTITY_IDS, POSITIONS, 14, 4, special_ids=())["dea_labels"]
    assert (batch["entity_ids"] == 2).all()  # the LUKE entity tokens use row 2 only
    table = model.base_model.get_entity_embeddings().weight
    with torch.no_grad():  # distinct rows, so that each KB lookup matters
        table.normal_()

    probe = torch.randn(batch["input_ids"].shape + (TINY["hidden_size"],), generator=torch.Generator().manual_seed(3))

    def scalar(out):
        return out.loss if name == "ernie_dea" else (out.last_hidden_state * probe).sum()

    scalar(model(**batch)).backward()
    assert table.grad is not None and table.grad[2].abs().sum() > 0  # the entity tokens' row trains
    assert (table.grad[[0, 1, 3]] == 0).all(), table.grad  # KB-only rows: no gradient through the KB lookups
    # the control: the KB rows do reach the output (a trainable KB would receive gradient here)
    with torch.no_grad():
        before = scalar(model.eval()(**batch))
        table[3] += torch.randn(table.size(1), generator=torch.Generator().manual_seed(4))
        after = scalar(model(**batch))
    assert abs(float(after) - float(before)) > 1e-4


# ---------------------------------------------------------------------------------------------
# The registry refuses user-KB KAR/ERNIE models (its collator's candidate ids are entity-vocabulary ids)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["kar", "ernie"])
def test_registry_refuses_a_user_knowledge_base(name, tmp_path):
    registry = load_registry()
    spec = registry.VARIANTS[name]
    scratch = dict(TINY, max_position_embeddings=40)
    with pytest.raises(ValueError, match=rf"kb_size=8 .*carries no KB files .*--variant {name}'s candidate ids"):
        spec.from_scratch(**scratch, kb_size=8)

    torch.manual_seed(0)
    model = spec.from_scratch(**scratch).eval()
    batch = record_like_batch()
    with torch.no_grad():
        expected = model(**batch).logits
    plain_dir, user_kb_dir = tmp_path / "plain", tmp_path / "user_kb"
    model.save_pretrained(plain_dir)
    model.set_knowledge_base(torch.randn(8, TINY["entity_emb_size"]))
    model.save_pretrained(user_kb_dir)
    with pytest.raises(ValueError, match=r"kb_size=8 \(a user-supplied knowledge base") as error:
        spec.from_checkpoint(str(user_kb_dir))
    assert "processing_kb" in str(error.value) and f"model_cards/{name}.md" in str(error.value)
    # a checkpoint whose KB is the entity table loads, with its weights
    reloaded = spec.from_checkpoint(str(plain_dir)).eval()
    assert type(reloaded) is spec.model_class and reloaded.config.kb_size is None
    with torch.no_grad():
        torch.testing.assert_close(reloaded(**batch).logits, expected)
    # other variants have no knowledge base to check
    registry.VARIANTS["gesa"].check_knowledge_base({"kb_size": 8})


# ---------------------------------------------------------------------------------------------
# One head and one set of conventions for GESA and every variant
# ---------------------------------------------------------------------------------------------

OWN_INPUT = {"kar": "kar_candidate_ids", "ernie": "ernie_entity_ids", "xh": "node_adjacency"}


@pytest.mark.parametrize("name", ["kar", "ernie", "xh"])
def test_variant_heads_are_the_gesa_head_on_their_model(name):
    model, batch = variant_models()[name]
    assert isinstance(model, GesaForEntitySpanQA) and type(model.gesa) is model.base_model_class
    parameters = inspect.signature(model.forward).parameters
    assert {"input_ids", "attention_mask", "position_ids", "inputs_embeds", "labels", OWN_INPUT[name]} <= set(
        parameters
    )
    assert OWN_INPUT[name] in inspect.signature(type(model.gesa).forward).parameters
    model.eval()
    with torch.no_grad():
        out = model(**batch)
        as_tuple = model(**batch, return_dict=False)
    assert torch.equal(as_tuple[0 if out.loss is None else 1], out.logits)
    with pytest.raises(ValueError, match=r"scores entity candidates, not token spans.*labels \(batch, entities\)"):
        model(**batch, start_positions=torch.zeros(2, dtype=torch.long))
    with pytest.raises(ValueError, match=r"unexpected inputs \['entity_graph'\]"):
        model(**batch, entity_graph=torch.ones(1))


@pytest.mark.parametrize("name", ["kar", "ernie"])
def test_variant_heads_take_inputs_embeds(name):
    model, batch = variant_models()[name]
    model.eval()
    embeds = model.get_input_embeddings()(batch["input_ids"])
    with torch.no_grad():
        expected = model(**batch)
        actual = model(**{**batch, "input_ids": None}, inputs_embeds=embeds)
    torch.testing.assert_close(actual.logits, expected.logits)
    torch.testing.assert_close(actual.loss, expected.loss)


@pytest.mark.parametrize("name", ["kar", "ernie"])
def test_variant_heads_check_entities_labels_and_placeholder(name):
    model, batch = variant_models()[name]
    labels = batch["labels"].clone()
    labels[0, 1] = float("nan")
    with pytest.raises(ValueError, match=r"labels must be 0 or 1 \(finite\).*labels\[0, 1\] = nan"):
        model(**{**batch, "labels": labels})
    placeholder = torch.zeros_like(batch["placeholder_entity_mask"])
    with pytest.raises(ValueError, match="placeholder_entity_mask must mark exactly one real entity.*row 0 marks 0"):
        model(**{**batch, "placeholder_entity_mask": placeholder})
    with pytest.raises(ValueError, match="no entity, so nothing to score"):
        model(**{**batch, "entity_ids": batch["entity_ids"][:, :0]})


def test_xh_head_checks_graph_labels():
    model, batch = variant_models()["xh"]
    labels = torch.zeros(batch["input_ids"].size(0), int(batch["entity_string_ids"].max()) + 1)
    labels[0, 0] = 2.0
    with pytest.raises(ValueError, match=r"labels must be 0 or 1 \(finite\).*labels\[0, 0\] = 2.0"):
        model(**{**batch, "labels": labels})


VARIANT_ATTENTION = {"kar": "KarAttention", "ernie": "ErnieEntityAttention", "xh": "XhHopLayer"}


@pytest.mark.parametrize("name", ["kar", "ernie", "xh"])
def test_variant_attention_dispatches_through_transformers_functions(name, monkeypatch):
    """KAR's span attention, ERNIE's entity stream and XH's hop attention call `ALL_ATTENTION_FUNCTIONS` on
    `config._attn_implementation`; `eager` and `sdpa` give the same model."""
    model, batch = variant_models()[name]
    model.eval()
    callers = []
    sdpa = ALL_ATTENTION_FUNCTIONS["sdpa"]

    def spy(module, *args, **kwargs):
        callers.append(type(module).__name__)
        return sdpa(module, *args, **kwargs)

    monkeypatch.setitem(ALL_ATTENTION_FUNCTIONS, "sdpa", spy)
    logits = {}
    with torch.no_grad():
        for implementation in ("eager", "sdpa"):
            model.config._attn_implementation = implementation
            callers.clear()
            logits[implementation] = model(**batch).logits
            assert (VARIANT_ATTENTION[name] in callers) == (implementation == "sdpa"), callers
    torch.testing.assert_close(logits["eager"], logits["sdpa"], atol=1e-5, rtol=1e-5)


def test_each_task_names_its_head_per_variant_and_refuses_a_variant_without_one():
    from gesa.training.record import RECORD
    from gesa.training.wikihop import WIKIHOP

    assert RECORD.head_for("gesa") is registry.VARIANTS["gesa"].model_class
    assert RECORD.variant_spec("kar").model_class is registry.VARIANTS["kar"].model_class
    assert WIKIHOP.variant_spec("luke").config_overrides == {"ablation": "luke"}
    with pytest.raises(ValueError, match="--task wikihop has no head for --variant xh"):
        WIKIHOP.head_for("xh")
    assert registry.knowledge_variant_of("gesa_kar") == "kar"
    assert registry.knowledge_variant_of("gesa") is None
    assert registry.reads_sentence_graphs("gesa_xh") and not registry.reads_sentence_graphs("gesa")


# ---------------------------------------------------------------------------------------------
# Config checks
# ---------------------------------------------------------------------------------------------


# every field a variant's config adds to GesaConfig, with a value it must refuse and what the error says
BAD_VARIANT_FIELDS = {
    "kar": [
        ("backbone", "bert", "'bert' is unknown; choose one of \\['luke', 'gesa'\\]"),
        ("kar_num_layers", 2, "must be 0 \\(knowledge off\\) or 1"),
        ("kar_layer", -1, "non-negative integer"),
        ("kar_entity_threshold", float("inf"), "finite number"),
        ("kar_num_attention_heads", 0, "positive integer"),
        ("kar_intermediate_size", "64", "doesn't match any type"),
        ("kar_linker_hidden_size", 0, "positive integer"),
        ("kar_output_init", "eye", "'eye' is unknown"),
        ("kar_linking_loss_weight", -1.0, "finite number >= 0"),
        ("kar_layer_norms", "yes", "expected bool, got str"),
        ("kb_size", 0, "positive integer"),
    ],
    "ernie": [
        ("backbone", "bert", "'bert' is unknown; choose one of \\['luke', 'gesa'\\]"),
        ("ernie_num_fusion_layers", -1, "non-negative integer"),
        ("ernie_entity_num_attention_heads", 0, "positive integer"),
        ("ernie_fusion_output", "tanh", "'tanh' is unknown"),
        ("ernie_head_entity", "yes", "expected bool, got str"),
        ("kb_size", 1.5, "doesn't match any type"),
    ],
    "xh": [
        ("xh_num_hop_layers", -1, "non-negative integer"),
        ("xh_num_hop_attention_heads", 0, "positive integer"),
        ("xh_hop_dropout", 1.0, "dropout probability in \\[0, 1\\)"),
        ("backbone", "bert", "choose one of \\['luke', 'gesa'\\]"),
        ("xh_hop_attention", "gat", "choose one of \\['paper', 'released_gat'\\]"),
    ],
}
# values valid alone that the rest of the (tiny) config refuses, with the field and fix the error names
BAD_VARIANT_VALUES = {
    "kar": [
        ({"kar_layer": 3}, "kar_layer=3", "must be in \\[0, num_hidden_layers=2\\]"),
        ({"kar_num_attention_heads": 5}, "entity_emb_size=16", "must be a multiple of kar_num_attention_heads=5"),
    ],
    "ernie": [
        ({"ernie_num_fusion_layers": 3}, "ernie_num_fusion_layers=3", "must be in \\[0, num_hidden_layers=2\\]"),
        ({"ernie_entity_num_attention_heads": 3}, "entity_emb_size=16", "must be a multiple of"),
    ],
    "xh": [
        ({"xh_num_hop_layers": 4}, "xh_num_hop_layers=4", "must be in \\[0, num_hidden_layers=3\\]"),
        ({"xh_num_hop_attention_heads": 5}, "hidden_size=32", "must be a multiple of xh_num_hop_attention_heads=5"),
    ],
}
VARIANT_CONFIGS = {"kar": (KarConfig, kar_config), "ernie": (ErnieConfig, ernie_config), "xh": (XhConfig, xh_config)}


@pytest.mark.parametrize("name", VARIANT_CONFIGS)
def test_every_variant_config_field_is_checked(name):
    config_class = VARIANT_CONFIGS[name][0]
    own = {f.name for f in dataclasses.fields(config_class)} - {f.name for f in dataclasses.fields(GesaConfig)}
    assert own == {field for field, _, _ in BAD_VARIANT_FIELDS[name]}


@pytest.mark.parametrize(
    "name, field, value, message",
    [(name, *case) for name, cases in BAD_VARIANT_FIELDS.items() for case in cases],
    ids=[f"{name}-{case[0]}" for name, cases in BAD_VARIANT_FIELDS.items() for case in cases],
)
def test_bad_variant_config_field_raises_an_error_naming_it(name, field, value, message):
    with config_error(field, message):
        VARIANT_CONFIGS[name][1](**{field: value})


@pytest.mark.parametrize(
    "name, kwargs, field, message", [(name, *case) for name, cases in BAD_VARIANT_VALUES.items() for case in cases]
)
def test_bad_variant_config_values_raise_clear_errors(name, kwargs, field, message):
    with config_error(field, message):
        VARIANT_CONFIGS[name][1](**kwargs)
