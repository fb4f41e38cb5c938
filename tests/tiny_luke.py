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
"""Build tiny, random LUKE checkpoints offline, the way users' real ones are laid out.

The checkpoint is saved with ``save_pretrained`` (weights, config and a ``LukeTokenizer`` built from
the shared RoBERTa BPE files) so that tests load it through the very code path used for
``studio-ousia/luke-large``.
"""

from __future__ import annotations

import os
from pathlib import Path

import torch
from transformers import LukeConfig, LukeModel, LukeTokenizer

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
ROBERTA_DIR = SHARED / "tokenizers" / "roberta-base"
RECORD_DIR = SHARED / "data" / "record"
HOTPOT_DIR = SHARED / "data" / "hotpotqa"
ENTITY_VOCAB = {"[PAD]": 0, "[UNK]": 1, "[MASK]": 2, "[MASK2]": 3}


def shared_available() -> bool:
    return ROBERTA_DIR.is_dir() and RECORD_DIR.is_dir()


def build_luke_tokenizer() -> LukeTokenizer:
    """LUKE's word tokenizer (RoBERTa BPE) with the four special entities only."""
    return LukeTokenizer(
        vocab=str(ROBERTA_DIR / "vocab.json"),
        merges=str(ROBERTA_DIR / "merges.txt"),
        entity_vocab=dict(ENTITY_VOCAB),
        task=None,
    )


def tiny_luke_config(vocab_size: int, **overrides) -> LukeConfig:
    kwargs = dict(
        vocab_size=vocab_size,
        entity_vocab_size=len(ENTITY_VOCAB),
        hidden_size=32,
        entity_emb_size=16,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=37,
        max_position_embeddings=600,
        type_vocab_size=1,
        layer_norm_eps=1e-5,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    kwargs.update(overrides)
    return LukeConfig(**kwargs)


def build_tiny_luke(
    path: str | os.PathLike, seed: int = 0, tie_entity_queries: bool = True, **config_overrides
) -> Path:
    """Save a random tiny ``LukeModel`` + ``LukeTokenizer`` under ``path`` and return it.

    ``tie_entity_queries`` sets w2e/e2w/e2e queries equal to the word query, as in the released
    LUKE checkpoints (LUKE is pre-trained without entity-aware attention).
    """
    path = Path(path)
    tokenizer = build_luke_tokenizer()
    model = LukeModel(tiny_luke_config(len(tokenizer), **config_overrides)).eval()
    _initialise(model, seed)
    torch.manual_seed(seed)  # callers may draw from the global RNG next: same state on every release
    if tie_entity_queries:
        with torch.no_grad():
            for layer in model.encoder.layer:
                attn = layer.attention.self
                for name in ("w2e_query", "e2w_query", "e2e_query"):
                    getattr(attn, name).weight.copy_(attn.query.weight)
                    getattr(attn, name).bias.copy_(attn.query.bias)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def _initialise(model: LukeModel, seed: int) -> None:
    """LUKE's initialisation scheme drawn from our own generator in parameter-name order.

    ``LukeModel``'s own init consumes the global RNG in an order that changes between transformers releases, so
    the same seed would give a different tiny LUKE (and different training curves) on each release.
    """
    generator = torch.Generator().manual_seed(seed)
    std = model.config.initializer_range
    with torch.no_grad():
        for name, parameter in sorted(model.named_parameters()):
            if parameter.dim() >= 2:
                parameter.copy_(torch.randn(parameter.shape, generator=generator) * std)
            elif name.endswith("LayerNorm.weight"):
                parameter.fill_(1.0)
            else:
                parameter.zero_()  # biases, as in LUKE's _init_weights
        for module in model.modules():
            if isinstance(module, torch.nn.Embedding) and module.padding_idx is not None:
                module.weight[module.padding_idx].zero_()
