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
"""Tokenizers for runs without a pretrained checkpoint: a byte-level BPE ``LukeTokenizer`` trained offline on the
run's own text (``train_sample_tokenizer``); which rows of a LUKE entity table a fine-tuned head keeps
(``special_entity_rows``, the one rule of every task), and LUKE's entity vocabulary cut to them
(``shrink_entity_vocab``) when a ReCoRD run converts a LUKE checkpoint."""

from __future__ import annotations

import json
from collections.abc import Sequence

from transformers import PreTrainedTokenizerBase

from .machinery import ScriptArgumentError

TINY_TOKENIZER_VOCAB_SIZE = 2000
ENTITY_SPECIAL_ATTRIBUTES = ("entity_pad_token", "entity_unk_token", "entity_mask_token", "entity_mask2_token")
# LUKE's special entities, in the order of the shrunk entity table the fine-tuned heads keep (ids 0-3)
SPECIAL_ENTITIES = ("[PAD]", "[UNK]", "[MASK]", "[MASK2]")


def train_sample_tokenizer(
    texts: Sequence[str], vocab_size: int = TINY_TOKENIZER_VOCAB_SIZE, min_frequency: int = 2
) -> PreTrainedTokenizerBase:
    """A byte-level BPE ``LukeTokenizer`` trained offline on ``texts`` (RoBERTa's special tokens and layout).

    Byte-level BPE never needs ``<unk>``; the entity vocabulary holds LUKE's four special entities. ``min_frequency``:
    how often a pair must occur to be merged (the ReCoRD demo: 2; the tiny WikiHop demo LUKE: 1).
    """
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import LukeTokenizer

    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    backend.train_from_iterator(list(texts), trainer=trainer)
    merges = [
        tuple(m) if isinstance(m, list) else tuple(m.split(" "))
        for m in json.loads(backend.to_str())["model"]["merges"]
    ]
    return LukeTokenizer(
        vocab=backend.get_vocab(),
        merges=merges,
        entity_vocab={"[PAD]": 0, "[UNK]": 1, "[MASK]": 2, "[MASK2]": 3},
    )


def special_entity_rows(tokenizer: PreTrainedTokenizerBase, source: str, count: int = 4) -> list[int]:
    """The rows of a LUKE entity table that a fine-tuned head keeps: the first ``count`` of ``[PAD] [UNK] [MASK]
    [MASK2]``, in that order (``from_luke_pretrained(entity_rows=)``; a LUKE without ``[MASK2]`` gives ``[MASK]``'s
    row for it). ``ScriptArgumentError`` naming ``source`` when the tokenizer has no LUKE entity vocabulary."""
    vocab = getattr(tokenizer, "entity_vocab", None)
    if not isinstance(vocab, dict):
        raise ScriptArgumentError(
            f"the tokenizer of {source} ({type(tokenizer).__name__}) has no LUKE entity vocabulary; use the "
            "checkpoint's LukeTokenizer (or --tokenizer_name of a LUKE tokenizer)"
        )
    missing = [name for name in SPECIAL_ENTITIES[:3] if name not in vocab]
    if missing:
        raise ScriptArgumentError(f"the entity vocabulary of {source} lacks {missing}: give a LUKE tokenizer")
    return [int(vocab.get(name, vocab["[MASK]"])) for name in SPECIAL_ENTITIES[:count]]


def shrink_entity_vocab(tokenizer: PreTrainedTokenizerBase, source: str) -> list[int]:
    """Keep only LUKE's special entities (``[PAD] [UNK] [MASK] [MASK2]``, ids 0-3) in the tokenizer.

    Returns the rows of the checkpoint's entity table to keep, in that order (``special_entity_rows``). ReCoRD uses
    the ``[MASK]`` entity only; the 500k Wikipedia entities of luke-large are dropped from both the model and the
    saved tokenizer.
    """
    rows = special_entity_rows(tokenizer, source)
    names = list(SPECIAL_ENTITIES)
    small = {name: index for index, name in enumerate(names)}
    tokenizer.entity_vocab = small
    if isinstance(getattr(tokenizer, "init_kwargs", None), dict) and "entity_vocab" in tokenizer.init_kwargs:
        tokenizer.init_kwargs["entity_vocab"] = dict(small)
    # The cached entity ids (LukeTokenizer's own entity encoding); written past __setattr__, which would treat a
    # `*_token_id` as a word-vocabulary id. A reload recomputes them from the saved (shrunk) vocabulary.
    for attribute, name in zip(ENTITY_SPECIAL_ATTRIBUTES, names, strict=True):
        if f"{attribute}_id" in vars(tokenizer):
            vars(tokenizer)[f"{attribute}_id"] = small[name]
    return rows


__all__ = [
    "ENTITY_SPECIAL_ATTRIBUTES",
    "SPECIAL_ENTITIES",
    "TINY_TOKENIZER_VOCAB_SIZE",
    "shrink_entity_vocab",
    "special_entity_rows",
    "train_sample_tokenizer",
]
