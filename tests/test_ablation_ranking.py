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
"""Every ablation row of the paper (Tables 3 and 4) must be able to rank candidates.

ReCoRD's candidates are all the `[MASK]` entity. Without absolute positions and without the mention label, nothing
ties an entity to its words, so all candidates would get identical states and logits and the row would score at chance
by construction. `GesaConfig.use_entity_position_embeddings` (LUKE's entity position embedding: the mean of the
mention's word position embeddings) gives them that knowledge in the presets that drop the mention label.

The models are converted from a tiny LUKE, whose random weights (std 0.02) keep every attention output small: freshly
converted, the label tables (std 0.02) leave the candidates of every label-only row tied to 1e-7. The label tables
are therefore set to trained-size values (std 30: label terms `q . r / sqrt(d)` of a few units, like trained
attention logits) before the candidates are compared.
"""

from __future__ import annotations

import itertools
import math

import pytest
import torch
from model_helpers import lukes_own_queries, randomize_label_tables
from transformers import AutoTokenizer
from variant_helpers import gesa_features, train_steps

from gesa import ABLATION_PRESETS, GesaForEntitySpanQA

TRAINED_LABEL_STD = 30.0
# float32 rounding alone moves these logits (about 0.1 in size) by ~1e-8; a tied row stays below 1e-7
CLEARLY_DIFFERENT = 1e-4


@pytest.fixture(scope="module")
def sample(tiny_luke_dir):
    """ReCoRD features (windows of 128 tokens that hold a gold answer) of the project's sample, and the processor."""
    tokenizer = AutoTokenizer.from_pretrained(tiny_luke_dir)
    features, processor = gesa_features(tokenizer, count=3, max_seq_length=128)
    collate = processor.get_data_collator()

    def tensors(chunk):
        return {key: value for key, value in collate(chunk).items() if isinstance(value, torch.Tensor)}

    return processor, tensors(features[:1]), [tensors(features[i : i + 2]) for i in range(0, len(features), 2)]


def converted(tiny_luke_dir, processor, **config) -> GesaForEntitySpanQA:
    with lukes_own_queries():  # TRAINED_LABEL_STD is sized for the tiny LUKE's own queries
        model = GesaForEntitySpanQA.from_luke_pretrained(tiny_luke_dir, **config)
    model.init_added_word_embeddings(processor.added_token_sources())
    return model


def set_trained_size_labels(model: GesaForEntitySpanQA) -> None:
    randomize_label_tables(model, TRAINED_LABEL_STD)


def candidate_spread(model: GesaForEntitySpanQA, batch: dict) -> tuple[float, float]:
    """Range of the candidates' logits, and the smallest difference between the final states of two candidates with
    different strings (different mentions, different answers)."""
    with torch.no_grad():
        out = model.eval()(**batch, output_hidden_states=True)
    real = batch["entity_attention_mask"][0].bool() & ~batch["placeholder_entity_mask"][0].bool()
    candidates = real.nonzero().flatten().tolist()
    logits = out.logits[0, candidates]
    states = out.entity_hidden_states[-1][0]
    strings = batch["entity_string_ids"][0]
    gaps = [
        float((states[i] - states[j]).abs().max())
        for i, j in itertools.combinations(candidates, 2)
        if strings[i] != strings[j]
    ]
    assert len(candidates) >= 5 and gaps
    return float(logits.max() - logits.min()), min(gaps)


@pytest.mark.parametrize("ablation", sorted(ABLATION_PRESETS))
def test_every_preset_tells_candidates_apart(ablation, tiny_luke_dir, sample):
    processor, batch, _ = sample
    model = converted(tiny_luke_dir, processor, ablation=ablation)
    set_trained_size_labels(model)
    logit_range, state_gap = candidate_spread(model, batch)
    assert logit_range > CLEARLY_DIFFERENT, (ablation, logit_range)
    assert state_gap > CLEARLY_DIFFERENT, (ablation, state_gap)


def test_without_positions_or_mention_labels_candidates_are_tied(tiny_luke_dir, sample):
    """The trap the presets avoid (and that the check above detects): no mention label, entity positions off."""
    processor, batch, _ = sample
    model = converted(
        tiny_luke_dir,
        processor,
        label_switches={"w2e_e2w": False, "e2e": False},
        use_entity_position_embeddings=False,
    )
    set_trained_size_labels(model)
    logit_range, state_gap = candidate_spread(model, batch)
    assert logit_range < 1e-6 and state_gap < 1e-6, (logit_range, state_gap)
    # the presets switch the positions on, and conversion keeps LUKE's entity position table
    for name in ("no_labels_w2e_e2w_e2e", "no_mention_label"):
        model = converted(tiny_luke_dir, processor, ablation=name)
        assert model.config.use_entity_position_embeddings
        assert "gesa.entity_embeddings.position_embeddings.weight" not in model.luke_conversion_info["missing_keys"]


def tied_loss_bound(batches: list[dict]) -> float:
    """The lowest mean BCE a model with tied candidates can reach (one logit per window: its answer rate)."""
    bounds = []
    for batch in batches:
        candidates = batch["entity_attention_mask"].bool() & ~batch["placeholder_entity_mask"].bool()
        total = count = 0.0
        for row in range(candidates.size(0)):
            n = int(candidates[row].sum())
            p = float(batch["labels"][row][candidates[row]].sum()) / n
            total += 0.0 if p in (0.0, 1.0) else -n * (p * math.log(p) + (1 - p) * math.log(1 - p))
            count += n
        bounds.append(total / count)
    return sum(bounds) / len(bounds)


@pytest.mark.slow
def test_training_a_few_steps_lowers_the_loss_for_every_preset(tiny_luke_dir, sample):
    """Every preset's loss falls. Within these few steps the label-only rows mostly fit the answer rate: their label
    terms reach the entity states through the tiny random LUKE's attention outputs, which its 0.02-std weights damp
    to ~1e-3 (the test above shows the labels do separate the candidates). The rows that rank through LUKE's entity
    positions already beat the best loss tied candidates can reach."""
    processor, _, batches = sample
    losses = {}
    for ablation in sorted(ABLATION_PRESETS):
        torch.manual_seed(0)
        model = converted(tiny_luke_dir, processor, ablation=ablation)
        losses[ablation] = train_steps(model, batches, steps=24, lr=3e-3)
    assert all(after < 0.9 * before for before, after in losses.values()), losses
    bound = tied_loss_bound(batches)
    for name in ("no_labels_w2e_e2w_e2e", "no_mention_label", "luke"):
        assert losses[name][1] < bound, (name, losses[name], bound)
