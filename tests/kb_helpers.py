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
"""A small KB written by the tests (an alias table with an ambiguous alias, wikipedia2vec-style entity vectors) and
one-sentence batches, shared by the KB, linker, checkpoint and NER tests."""

from __future__ import annotations

import torch

ENTITY_WIDTH = 16  # the tiny LUKE's entity_emb_size: the KB width
ENTITIES = ["Paris", "Paris Hilton", "Alice Smith", "Siemens"]
ALIASES = "alias\tentity\tprior\n# ambiguous: the city or the person\nParis\tParis\t0.7\nParis\tParis_Hilton\t0.3\n"


def write_kb(folder, aliases: str = ALIASES, width: int = ENTITY_WIDTH, seed: int = 0):
    """An alias table and a wikipedia2vec-style vectors file (a word line, then ``ENTITY/`` lines) under ``folder``."""
    generator = torch.Generator().manual_seed(seed)
    vectors = torch.randn(len(ENTITIES), width, generator=generator)
    alias_path, vectors_path = folder / "aliases.tsv", folder / "entities.txt"
    alias_path.write_text(aliases, encoding="utf-8")
    lines = [f"{len(ENTITIES) + 1} {width}", "paris " + " ".join(["0.5"] * width)]
    lines += [f"ENTITY/{name.replace(' ', '_')} " + " ".join(f"{v:.6f}" for v in row)
              for name, row in zip(ENTITIES, vectors.tolist(), strict=True)]  # fmt: skip
    vectors_path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return alias_path, vectors_path, vectors


def sentence_batch(tokenizer, text: str, mention: tuple[int, int]) -> dict[str, torch.Tensor]:
    """One sentence with one task mention (its LUKE entity), as the processors' batches."""
    encoded = tokenizer(text, entity_spans=[mention], entities=["[UNK]"], return_tensors="pt")
    return dict(encoded)
