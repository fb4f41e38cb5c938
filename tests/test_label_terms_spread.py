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
"""`labels_gesa.spread_label_terms`: the e2w / w2e label terms per pair equal a plain gather, values and gradients,
whether one label dominates (the CPU broadcast-and-write path) or not (the gather)."""

from __future__ import annotations

import pytest
import torch

from gesa.labels_gesa import spread_label_terms
from gesa.structure_gesa import RelativeLabels, TokenStructure


def tokens_of(batch_size: int) -> TokenStructure:
    return TokenStructure(torch.ones(batch_size, 1), None, None, None, None, RelativeLabels(2), True, True, None)


@pytest.mark.parametrize("dominant", [True, False])
def test_spread_label_terms_equal_a_gather_with_its_gradient(dominant):
    generator = torch.Generator().manual_seed(0)
    B, H, R, C, K = 2, 3, 17, 11, 4
    if dominant:
        positions = torch.full((B, R, C), 3)
        rare = torch.rand(B, R, C, generator=generator) < 0.1
        positions[rare] = torch.randint(0, 3, (int(rare.sum()),), generator=generator)
    else:
        positions = torch.randint(0, K, (B, R, C), generator=generator)
    terms = torch.randn(B, H, R, K, generator=generator, requires_grad=True)
    upstream = torch.randn(B, H, R, C, generator=generator)
    expected = terms.gather(3, positions[:, None].expand(B, H, R, C))
    (expected_grad,) = torch.autograd.grad(expected, terms, upstream)
    tokens = tokens_of(B)
    actual = spread_label_terms(terms, positions, tokens, "w2e")
    (actual_grad,) = torch.autograd.grad(actual, terms, upstream)
    torch.testing.assert_close(actual, expected)
    torch.testing.assert_close(actual_grad, expected_grad)
    # the plan cached under its name (and the layer's attention pattern, part of every plan's key)
    (plan,) = [value for key, value in tokens.cache.items() if key[:2] == ("spread_label_terms", "w2e")]
    assert (plan is not None) == dominant and (not dominant or plan[0] == 3)
