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
"""The entity-task heads: with ablation="luke" each equals its transformers.Luke* head (logits and loss), LUKE's
fine-tuned head weights are copied, and a saved head reloads with trust_remote_code."""

import pytest
import torch
import transformers
from transformers import AutoModelForSequenceClassification

from gesa.modeling_gesa_entity import (
    GesaForEntityClassification,
    GesaForEntityPairClassification,
    GesaForEntitySpanClassification,
    GesaForMaskedLM,
)

B, L, E, NUM_LABELS = 2, 9, 3, 5


def _inputs():
    generator = torch.Generator().manual_seed(0)
    input_ids = torch.randint(5, 100, (B, L), generator=generator)
    attention_mask = torch.ones(B, L, dtype=torch.long)
    attention_mask[1, -2:] = 0
    entity_position_ids = torch.full((B, E, 4), -1)
    entity_position_ids[:, 0, :2] = torch.tensor([1, 2])
    entity_position_ids[:, 1, :1] = 4
    entity_position_ids[:, 2, :3] = torch.tensor([5, 6, 7])
    inputs = dict(
        input_ids=input_ids,
        attention_mask=attention_mask,
        entity_ids=torch.tensor([[2, 3, 1], [2, 1, 0]]),
        entity_attention_mask=torch.tensor([[1, 1, 1], [1, 1, 0]]),
        entity_position_ids=entity_position_ids,
    )
    mlm_labels = torch.where(torch.rand(B, L, generator=generator) < 0.4, input_ids, -100)
    return inputs, {
        "LukeForEntityClassification": dict(labels=torch.tensor([[1, 0, 0, 1, 0], [0, 1, 1, 0, 0]])),
        "LukeForEntityPairClassification": dict(labels=torch.tensor([1, 3])),
        "LukeForEntitySpanClassification": dict(
            labels=torch.tensor([[1, 0, 2], [3, 4, -100]]),
            entity_start_positions=torch.tensor([[1, 4, 5], [1, 4, 0]]),
            entity_end_positions=torch.tensor([[2, 4, 7], [2, 4, 0]]),
        ),
        "LukeForMaskedLM": dict(labels=mlm_labels, entity_labels=torch.tensor([[-100, 1, 0], [1, -100, -100]])),
    }


HEADS = {
    "LukeForEntityClassification": GesaForEntityClassification,
    "LukeForEntityPairClassification": GesaForEntityPairClassification,
    "LukeForEntitySpanClassification": GesaForEntitySpanClassification,
    "LukeForMaskedLM": GesaForMaskedLM,
}


def fine_tuned_luke(tiny_luke_dir, tmp_path, luke_name):
    """A LUKE head checkpoint whose head weights are random and far from the init (so copying them is tested)."""
    luke_class = getattr(transformers, luke_name)
    kwargs = {} if luke_name == "LukeForMaskedLM" else dict(num_labels=NUM_LABELS)
    luke = luke_class.from_pretrained(tiny_luke_dir, **kwargs)
    generator = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for name, parameter in luke.named_parameters():
            if not name.startswith("luke."):
                parameter.copy_(torch.randn(parameter.shape, generator=generator) * 0.5)
    path = tmp_path / luke_name
    luke.save_pretrained(path)
    return path, luke_class.from_pretrained(path).eval()


@pytest.mark.parametrize("luke_name", list(HEADS))
def test_luke_ablation_head_equals_transformers_luke_head(tiny_luke_dir, tmp_path, luke_name):
    path, luke = fine_tuned_luke(tiny_luke_dir, tmp_path, luke_name)
    model = HEADS[luke_name].from_luke_pretrained(path, ablation="luke").eval()
    assert model.luke_conversion_info["missing_keys"] == []
    inputs, extra = _inputs()
    with torch.no_grad():
        expected, got = luke(**inputs, **extra[luke_name]), model(**inputs, **extra[luke_name])
    torch.testing.assert_close(got.logits, expected.logits, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(got.loss, expected.loss, atol=1e-5, rtol=1e-5)
    if luke_name == "LukeForMaskedLM":
        torch.testing.assert_close(got.entity_logits, expected.entity_logits, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(got.mep_loss, expected.mep_loss, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(got.mlm_loss, expected.mlm_loss, atol=1e-5, rtol=1e-5)


def test_head_from_plain_luke_checkpoint_starts_fresh_and_reports_it(tiny_luke_dir):
    model = GesaForEntityClassification.from_luke_pretrained(tiny_luke_dir, num_labels=NUM_LABELS)
    assert "classifier.weight" in model.luke_conversion_info["missing_keys"]
    assert model.config.use_entity_aware_attention  # GESA proper: the four typed queries


def test_fine_tuned_label_names_are_taken(tiny_luke_dir, tmp_path):
    luke = transformers.LukeForEntityPairClassification.from_pretrained(
        tiny_luke_dir, id2label={0: "no_relation", 1: "per:title"}
    )
    luke.save_pretrained(tmp_path / "tacred")
    model = GesaForEntityPairClassification.from_luke_pretrained(tmp_path / "tacred")
    assert model.config.id2label == {0: "no_relation", 1: "per:title"}
    torch.testing.assert_close(model.classifier.weight, luke.classifier.weight)


def test_head_reloads_with_trust_remote_code(tiny_luke_dir, tmp_path):
    model = GesaForEntityPairClassification.from_luke_pretrained(tiny_luke_dir, num_labels=3).eval()
    model.save_pretrained(tmp_path / "saved")
    reloaded = AutoModelForSequenceClassification.from_pretrained(tmp_path / "saved", trust_remote_code=True).eval()
    assert type(reloaded).__name__ == "GesaForEntityPairClassification"
    inputs, _ = _inputs()
    with torch.no_grad():
        torch.testing.assert_close(reloaded(**inputs).logits, model(**inputs).logits)


def test_pair_head_refuses_a_single_entity(tiny_luke_dir):
    model = GesaForEntityPairClassification.from_luke_pretrained(tiny_luke_dir, num_labels=3)
    inputs, _ = _inputs()
    inputs = {k: v[:, :1] if k.startswith("entity") else v for k, v in inputs.items()}
    with pytest.raises(ValueError, match="head entity first, the tail entity second"):
        model(**inputs)


def test_span_head_refuses_positions_of_another_shape(tiny_luke_dir):
    model = GesaForEntitySpanClassification.from_luke_pretrained(tiny_luke_dir, num_labels=3)
    inputs, _ = _inputs()
    with pytest.raises(ValueError, match="entity_start_positions must have entity_ids' shape"):
        model(**inputs, entity_start_positions=torch.zeros(B, 1, dtype=torch.long), entity_end_positions=None)


def test_masked_lm_keeps_the_entity_decoder_rows_of_the_entity_rows_kept(tiny_luke_dir, tmp_path):
    path, luke = fine_tuned_luke(tiny_luke_dir, tmp_path, "LukeForMaskedLM")
    rows = [0, 1, 2, 3, 1, 2]  # the specials, then two entities started from [UNK] and [MASK]
    model = GesaForMaskedLM.from_luke_pretrained(path, entity_rows=rows, ablation="luke")
    expected = luke.entity_predictions
    torch.testing.assert_close(model.entity_predictions.bias.detach(), expected.bias.detach()[rows])
    torch.testing.assert_close(
        model.entity_predictions.decoder.weight.detach(), expected.decoder.weight.detach()[rows]
    )
    assert "entity_predictions" not in {key.split(".")[0] for key in model.luke_conversion_info["missing_keys"]}
