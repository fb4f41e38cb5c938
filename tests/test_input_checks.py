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
"""Input checks (`checks_gesa`) as a caller meets them: fractional masks, dtype mismatches, a head without
candidates, concurrent calls, and checkpoints of another variant."""

from __future__ import annotations

import threading

import pytest
import torch
from model_helpers import TINY

from gesa import (
    GesaConfig,
    GesaForEntitySpanQA,
    GesaModel,
    KarConfig,
    KarForEntitySpanQA,
    LukeGraphConfig,
    LukeGraphForEntitySpanQA,
)


def qa_batch(batch_size: int = 2, words: int = 10, entities: int = 3) -> dict[str, torch.Tensor]:
    """A valid head batch: entity 0 the placeholder (on a question word), the others candidates."""
    g = torch.Generator().manual_seed(0)
    global_attention_mask = torch.zeros(batch_size, words, dtype=torch.long)
    global_attention_mask[:, 0], global_attention_mask[:, 1:3] = 1, 2
    entity_position_ids = torch.full((batch_size, entities, 2), -1)
    for e in range(entities):
        entity_position_ids[:, e, 0] = 2 if e == 0 else 3 + e
    placeholder = torch.zeros(batch_size, entities, dtype=torch.long)
    placeholder[:, 0] = 1
    return dict(
        input_ids=torch.randint(5, 64, (batch_size, words), generator=g),
        attention_mask=torch.ones(batch_size, words, dtype=torch.long),
        global_attention_mask=global_attention_mask,
        entity_ids=torch.full((batch_size, entities), 2),
        entity_attention_mask=torch.ones(batch_size, entities, dtype=torch.long),
        entity_position_ids=entity_position_ids,
        placeholder_entity_mask=placeholder,
    )


@pytest.mark.parametrize("mask", ["attention_mask", "entity_attention_mask", "placeholder_entity_mask"])
def test_a_mask_of_one_half_is_refused_not_rounded(mask):
    model = GesaModel(GesaConfig(**TINY)).eval()
    batch = qa_batch()
    batch[mask] = batch[mask].float()
    batch[mask][1, 1] = 0.5
    with pytest.raises(ValueError, match=rf"{mask} must hold 0 or 1; got 0.5 at flat index"):
        model(**batch)


def test_float_masks_of_zeros_and_ones_still_work():
    model = GesaModel(GesaConfig(**TINY)).eval()
    batch = qa_batch()
    expected = model(**batch).last_hidden_state
    batch["attention_mask"] = batch["attention_mask"].float()
    torch.testing.assert_close(model(**batch).last_hidden_state, expected)


def test_inputs_embeds_of_another_dtype_than_the_model_are_refused_naming_both():
    model = GesaModel(GesaConfig(**TINY)).eval().half()
    batch = qa_batch()
    embeds = torch.randn(2, 10, TINY["hidden_size"])  # float32 into a float16 model
    batch.pop("input_ids")
    with pytest.raises(ValueError, match=r"inputs_embeds has dtype torch.float32 but the model computes in "):
        model(inputs_embeds=embeds, **batch)
    # the suggested fix works
    assert model(inputs_embeds=embeds.half(), **batch).last_hidden_state.dtype == torch.float16


@pytest.mark.parametrize("entities, found", [(0, "no entity"), (1, "only the placeholder entity, no candidate")])
def test_a_head_without_candidates_is_refused(entities, found):
    model = GesaForEntitySpanQA(GesaConfig(**TINY)).eval()
    batch = qa_batch(entities=max(entities, 1))
    if entities == 0:
        for name in ("entity_ids", "entity_attention_mask", "placeholder_entity_mask"):
            batch[name] = batch[name][:, :0]
        batch["entity_position_ids"] = batch["entity_position_ids"][:, :0]
    with pytest.raises(ValueError, match=rf"{found}, so nothing to score"):
        model(**batch, labels=torch.zeros(2, entities))


def test_base_model_checks_its_inputs_while_other_threads_run_the_head():
    """Whether the base model checks its inputs is decided per call, not by state on the model: a thread calling
    the base model with bad ids always gets the input error, however the head's calls in other threads interleave."""
    model = GesaForEntitySpanQA(GesaConfig(**TINY)).eval()
    good = qa_batch()
    bad = dict(good, input_ids=torch.full_like(good["input_ids"], 500))  # beyond vocab_size
    stop = threading.Event()
    outcomes: list[str] = []
    failures: list[BaseException] = []

    def run_head() -> None:
        try:
            while not stop.is_set():
                model(**good)
        except BaseException as error:  # noqa: BLE001 - reported below
            failures.append(error)

    def call_base_with_bad_ids() -> None:
        for _ in range(60):
            try:
                model.gesa(**bad)
                outcomes.append("no error")
            except ValueError as error:
                outcomes.append("checked" if "input_ids must be in" in str(error) else f"other: {error}")
            except Exception as error:  # noqa: BLE001 - the crash the check must prevent
                outcomes.append(f"unchecked: {type(error).__name__}")

    heads = [threading.Thread(target=run_head) for _ in range(2)]
    for thread in heads:
        thread.start()
    try:
        call_base_with_bad_ids()
    finally:
        stop.set()
        for thread in heads:
            thread.join()
    assert not failures
    assert outcomes == ["checked"] * 60, sorted(set(outcomes))


def tiny_kar_head() -> KarForEntitySpanQA:
    return KarForEntitySpanQA(KarConfig(**TINY, kar_layer=1))


@pytest.mark.parametrize(
    "save, load, names",
    [
        (lambda: tiny_kar_head(), GesaForEntitySpanQA, "KarForEntitySpanQA"),
        (lambda: GesaForEntitySpanQA(GesaConfig(**TINY)), KarForEntitySpanQA, "GesaForEntitySpanQA"),
        (lambda: GesaForEntitySpanQA(GesaConfig(**TINY)), LukeGraphForEntitySpanQA, "GesaForEntitySpanQA"),
        (
            lambda: LukeGraphForEntitySpanQA(LukeGraphConfig(**TINY)),
            GesaForEntitySpanQA,
            "LukeGraphForEntitySpanQA",
        ),
    ],
    ids=["kar-into-gesa", "gesa-into-kar", "gesa-into-luke-graph", "luke-graph-into-gesa"],
)
def test_a_checkpoint_of_another_variant_is_refused_naming_the_class_to_use(tmp_path, save, load, names):
    save().save_pretrained(tmp_path)
    with pytest.raises(ValueError, match=rf"checkpoint \({names}\), not a .*Load it with {names}.from_pretrained"):
        load.from_pretrained(tmp_path)


def test_a_checkpoint_loads_into_its_own_class(tmp_path):
    tiny_kar_head().save_pretrained(tmp_path)
    assert isinstance(KarForEntitySpanQA.from_pretrained(tmp_path), KarForEntitySpanQA)
