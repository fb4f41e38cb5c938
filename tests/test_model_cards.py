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
"""Model cards: the generated card (model_cards/template.md + training/cards.py) and the per-variant Hub cards."""

from __future__ import annotations

import inspect
import json
import re
from pathlib import Path

import pytest
from huggingface_hub import ModelCard

from gesa import ABLATION_PRESETS, DEFAULT_LABEL_SWITCHES, GesaConfig
from gesa.training import cards as render

CARDS = Path(__file__).resolve().parents[1] / "model_cards"
REQUIRED_TAGS = {"gesa", "luke", "record", "reading-comprehension", "custom_code"}


RESULTS = {"eval_exact_match": 91.6123, "eval_f1": 92.1449, "eval_samples": 10000, "train_loss": 0.1234}
TRAINING_ARGS = {
    "learning_rate": 1e-5,
    "per_device_train_batch_size": 2,
    "per_device_eval_batch_size": 8,
    "gradient_accumulation_steps": 4,
    "num_train_epochs": 2.0,
    "max_steps": -1,
    "optim": "adamw_torch",
    "adam_beta1": 0.9,
    "adam_beta2": 0.98,
    "adam_epsilon": 1e-6,
    "weight_decay": 0.01,
    "lr_scheduler_type": "linear",
    "warmup_steps": 0.06,
    "max_grad_norm": 1.0,
    "seed": 42,
    "bf16": True,
    "gradient_checkpointing": True,
}


def test_rendered_card_metadata_parses_like_the_hub():
    config = GesaConfig(ablation="no_match_edges", num_hidden_layers=24).to_dict()
    text = render.render_model_card(
        "gesa-large-record",
        results=RESULTS,
        config=config,
        training_args=TRAINING_ARGS,
        data_args={"max_seq_length": 512, "doc_stride": 128, "max_query_length": 90, "max_train_samples": None},
        base_model="studio-ousia/luke-large",
        dataset_name="super_glue",
        dataset_config_name="record",
        repo_id="someone/gesa-large-record",
        world_size=4,
    )
    card = ModelCard(text)
    data = card.data
    assert data.library_name == "transformers"
    assert REQUIRED_TAGS <= set(data.tags)
    assert data.datasets == ["super_glue"]
    assert data.base_model == "studio-ousia/luke-large"
    results = {r.metric_type: r for r in data.eval_results}
    assert results["exact_match"].metric_value == 91.61 and results["f1"].metric_value == 92.14
    assert results["f1"].dataset_type == "super_glue" and results["f1"].dataset_config == "record"
    assert results["f1"].dataset_split == "validation" and results["f1"].task_type == "question-answering"
    body = card.text
    assert 'repo = "someone/gesa-large-record"' in body
    assert "AutoModel.from_pretrained(repo, trust_remote_code=True)" in body
    assert "AutoProcessor.from_pretrained(repo, trust_remote_code=True)" in body
    assert "| validation | 10000 | 91.61 | 92.14 |" in body
    assert "| total train batch size | 32 |" in body  # 2 per device x 4 accumulation x 4 processes
    assert "| mixed precision | bf16 |" in body and "| gradient checkpointing | yes |" in body
    assert "| `ablation` | no_match_edges |" in body and "| label switches off | match_edges |" in body
    assert "| max steps |" not in body  # -1: not set
    assert "arXiv:2307.10443" in body and "yamada2020luke" in body  # GESA and LUKE citations
    assert not re.search(r"\{\{ ?\w+ ?\}\}|\{%", body)  # no Jinja left over (BibTeX braces are fine)


def test_card_without_results_or_hub_data():
    text = render.render_model_card(
        "tiny", train_files=["/x/record_sample_train.jsonl"], eval_files=["/x/record_sample_dev.jsonl"]
    )
    card = ModelCard(text)
    assert card.data.eval_results is None and card.data.datasets is None and card.data.base_model is None
    assert "This checkpoint was not evaluated." in card.text
    assert "(training data `record_sample_train.jsonl`; evaluation data `record_sample_dev.jsonl`)" in card.text
    local = render.render_model_card("tiny", base_model="/some/local/folder", results={"eval_exact_match": 50.0})
    assert ModelCard(local).data.base_model is None  # a local path is no Hub id
    assert {r.metric_type for r in ModelCard(local).data.eval_results} == {"exact_match"}


@pytest.mark.parametrize("variant", sorted(render.VARIANTS))
def test_every_variant_renders(variant):
    card = ModelCard(render.render_model_card(f"m-{variant}", results=RESULTS, variant=variant))
    assert REQUIRED_TAGS <= set(card.data.tags)
    assert render.VARIANTS[variant]["title"] in card.text
    if "citation" in render.VARIANTS[variant]:
        key = re.search(r"@\w+\{(\w+),", render.VARIANTS[variant]["citation"]).group(1)
        assert key in card.text


def test_unknown_variant_is_refused():
    with pytest.raises(ValueError, match="unknown variant 'bert'"):
        render.render_model_card("m", variant="bert")


def test_write_model_card_reads_the_output_folder(tmp_path, capsys):
    (tmp_path / "all_results.json").write_text(json.dumps(RESULTS))
    (tmp_path / "config.json").write_text(json.dumps(GesaConfig(num_hidden_layers=3).to_dict()))
    path = render.write_model_card(tmp_path, dataset_name="super_glue", dataset_config_name="record")
    card = ModelCard.load(path)
    assert card.data.model_name == tmp_path.name
    assert {r.metric_value for r in card.data.eval_results} == {91.61, 92.14}
    assert "| `num_hidden_layers` | 3 |" in card.text
    render.main([str(tmp_path), "--model_name", "renamed", "--variant", "xh"])
    assert "README.md" in capsys.readouterr().out
    card = ModelCard.load(path)
    assert card.data.model_name == "renamed" and "transformer-xh" in card.data.tags


def _static_card(name: str) -> ModelCard:
    card = ModelCard.load(CARDS / name)
    assert card.data.library_name == "transformers"
    assert REQUIRED_TAGS <= set(card.data.tags)
    assert card.data.datasets == ["super_glue"]
    assert "trust_remote_code=True" in card.text
    return card


def test_gesa_card_documents_every_config_field_and_ablation():
    text = _static_card("gesa.md").text
    gesa_fields = set(inspect.signature(GesaConfig.__init__).parameters) - set(
        inspect.signature(__import__("transformers").LukeConfig.__init__).parameters
    )
    for name in gesa_fields - {"kwargs"}:
        assert f"`{name}`" in text, name
    for name in ABLATION_PRESETS:
        assert f"`{name}`" in text, name
    for name in DEFAULT_LABEL_SWITCHES:
        assert f"`{name}`" in text, name
    assert "| `max_relative_position` | `150` |" in text


@pytest.mark.parametrize(
    ("name", "fields"),
    [("kar.md", ["kar_layer", "kar_entity_threshold"]), ("xh.md", ["xh_num_hop_layers"]),
     ("ernie.md", ["ernie_num_fusion_layers"]), ("luke_graph.md", ["graph_num_layers"])],
)  # fmt: skip
def test_variant_cards_document_their_parameters(name, fields):
    """Each variant card names its config fields in its configuration table, with a default, and cites LUKE."""
    text = _static_card(name).text
    for field in fields:
        row = re.search(rf"^\| `{field}` \| (.+?) \| (.+) \|$", text, flags=re.MULTILINE)
        assert row, field
        assert row.group(1).strip() and row.group(2).strip(), field
    assert "studio-ousia/luke-large" in text and "yamada2020luke" in text


@pytest.mark.parametrize("variant", sorted(render.VARIANTS))
def test_cards_say_what_the_model_is_for_and_its_risks(variant):
    """The Hub template's "Intended uses & limitations" and "Bias, risks, and limitations" sections: in the generated
    card of every variant and, word for word, in its static card; each names the variant's own limitation."""
    sections = render.limitations_sections(variant)
    assert render.VARIANTS[variant]["limitations"] in sections
    texts = [ModelCard(render.render_model_card(f"m-{variant}", results=RESULTS, variant=variant)).text]
    if (CARDS / f"{variant}.md").is_file():
        texts.append(_static_card(f"{variant}.md").text)
    for text in texts:
        assert sections in text
        intended = text.split("## Intended uses & limitations\n")[1].split("\n## ")[0]
        risks = text.split("## Bias, risks, and limitations\n")[1].split("\n## ")[0]
        assert "@placeholder" in intended and "never abstains" in intended and "English" in intended
        assert "biases" in risks and "Recommendations" in risks
        assert text.index("## Intended uses & limitations") < text.index("## Bias, risks, and limitations")
    assert len(texts) == (1 if variant == "luke" else 2)
