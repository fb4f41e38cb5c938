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

The checkpoint is saved with ``save_pretrained`` (weights, config and a ``LukeTokenizer``) so that tests load it
through the very code path used for ``studio-ousia/luke-large``. Its word tokenizer is a byte-level BPE in RoBERTa's
layout (``vocab.json`` + ``merges.txt``, ``<s> <pad> </s> <unk> <mask>``) trained here, offline, on sentences this
module writes itself and on the project's own ReCoRD sample (``examples/data``), so a clone without ``../shared``
runs every test that does not truly need third-party data. ``tokenizer="roberta"`` builds the same checkpoint on the
real RoBERTa BPE files of ``../shared`` instead (tests that need RoBERTa's own tokens are marked ``needs_shared``).

``GESA_SHARED_DIR`` overrides where the third-party data lives (default: ``shared`` beside the repository);
``GESA_SHARED_DIR=/nonexistent`` simulates a clone without it.
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import random
import shutil
import tempfile
from pathlib import Path

import torch
from transformers import LukeConfig, LukeModel, LukeTokenizer

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("GESA_SHARED_DIR") or ROOT.parent / "shared")
ROBERTA_DIR = SHARED / "tokenizers" / "roberta-base"
RECORD_DIR = SHARED / "data" / "record"
HOTPOT_DIR = SHARED / "data" / "hotpotqa"
SAMPLE_DIR = ROOT / "examples" / "data"
ENTITY_VOCAB = {"[PAD]": 0, "[UNK]": 1, "[MASK]": 2, "[MASK2]": 3}
SPECIAL_TOKENS = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]  # RoBERTa's ids 0-3; <mask> follows them here
OFFLINE_VOCAB_SIZE = 2000
# The sizes the tests build tiny LUKE and GESA models at (an odd FFN width catches a transposed weight; no dropout,
# so two runs compare exactly); a test adds its vocabularies and `max_relative_position`.
TINY_SIZES = dict(hidden_size=32, entity_emb_size=16, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37)
TINY_SIZES.update(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)


def shared_available() -> bool:
    return ROBERTA_DIR.is_dir() and RECORD_DIR.is_dir()


# Word lists of the synthetic sentences (invented for the project; every ASCII class, digits, accents, apostrophes).
_PEOPLE = ["Anna Keller", "Tobias Wren", "Mara Oyelaran", "Jonas Berg", "Zoë Lindqvist", "Priya Natarajan",
           "Sean O'Neil", "Lucía Fernández", "Mr. Hale", "Dr. Ines Okafor", "Kenji Morita", "Eliska Novak"]  # fmt: skip
_PLACES = ["Berlin", "Paris", "Cornwall", "Exeter", "Lagos", "Osaka", "São Paulo", "the Alps", "Lake Bled",
           "New York", "Cape Town", "Reykjavík", "the river Elbe", "Truro"]  # fmt: skip
_GROUPS = ["the city council", "the coastguard", "FC Aurora", "the Northern Orchestra", "Helix Labs",
           "the university", "the ministry", "Blue Harbour Ltd"]  # fmt: skip
_VERBS = ["met", "visited", "thanked", "rescued", "interviewed", "joined", "left", "praised", "criticised",
          "called", "beat", "signed with"]  # fmt: skip
_WHEN = ["on Sunday", "last week", "in 2019", "on 12 March", "after the storm", "at dawn", "during the match",
         "in the 1990s", "this morning", "two years ago"]  # fmt: skip
_TAILS = ["and said it was the best day of the year.", "before the rain started.", ", officials confirmed.",
          "; nobody was hurt.", "(the third time in a row).", "- a first for the club!", "with 3,400 fans watching.",
          "as \"a matter of trust\", she said.", "for €2.5m.", "at 7:45pm."]  # fmt: skip


def synthetic_sentences(count: int = 400, seed: int = 0) -> list[str]:
    """``count`` invented news sentences, ``@highlight`` lines and ``@placeholder`` queries (deterministic)."""
    rng = random.Random(seed)
    sentences = []
    for index in range(count):
        who, whom = rng.sample(_PEOPLE, 2)
        where, group, verb, when, tail = (rng.choice(pool) for pool in (_PLACES, _GROUPS, _VERBS, _WHEN, _TAILS))
        kind = index % 4
        if kind == 0:
            sentences.append(f"{who} {verb} {whom} in {where} {when} {tail}")
        elif kind == 1:
            sentences.append(f"@highlight\n{group.capitalize()} {verb} {who} {when}")
        elif kind == 2:
            sentences.append(f"@placeholder {verb} {group} in {where} {when}")
        else:
            sentences.append(f"{who.upper()}: {where} is {rng.randint(2, 9_999)} km from {rng.choice(_PLACES)}.")
    return sentences


def project_sample_texts() -> list[str]:
    """Passages and queries of the project's own ReCoRD sample (examples/data, written for the project)."""
    return record_texts(sorted(SAMPLE_DIR.glob("record_sample_*.jsonl")))


def record_texts(paths: list[Path]) -> list[str]:
    """Each record's passage, then its queries, of the ReCoRD JSON-lines files at `paths` in order."""
    texts = []
    for path in paths:
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            texts.append(record["passage"]["text"])
            texts.extend(qa["query"] for qa in record["qas"])
    return texts


@functools.lru_cache(maxsize=1)
def offline_bpe_dir() -> Path:
    """``vocab.json`` + ``merges.txt`` of a byte-level BPE trained offline (RoBERTa's layout), once per process."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(
        vocab_size=OFFLINE_VOCAB_SIZE,
        min_frequency=2,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    backend.train_from_iterator(synthetic_sentences() + project_sample_texts(), trainer=trainer)
    model = json.loads(backend.to_str())["model"]
    merges = [" ".join(merge) if isinstance(merge, list) else merge for merge in model["merges"]]
    directory = Path(tempfile.mkdtemp(prefix="gesa-offline-bpe-"))
    atexit.register(shutil.rmtree, directory, ignore_errors=True)
    (directory / "vocab.json").write_text(json.dumps(model["vocab"], ensure_ascii=False), encoding="utf-8")
    (directory / "merges.txt").write_text("#version: 0.2\n" + "\n".join(merges) + "\n", encoding="utf-8")
    return directory


def build_luke_tokenizer(tokenizer: str = "offline") -> LukeTokenizer:
    """LUKE's word tokenizer with the four special entities only.

    ``"offline"``: the byte-level BPE trained by ``offline_bpe_dir`` (no third-party file); ``"roberta"``: the real
    RoBERTa BPE files of ``../shared``.
    """
    if tokenizer not in ("offline", "roberta"):
        raise ValueError(f"tokenizer={tokenizer!r}: use 'offline' or 'roberta'")
    directory = ROBERTA_DIR if tokenizer == "roberta" else offline_bpe_dir()
    return LukeTokenizer(
        vocab=str(directory / "vocab.json"),
        merges=str(directory / "merges.txt"),
        entity_vocab=dict(ENTITY_VOCAB),
        task=None,
    )


def tiny_luke_config(vocab_size: int, **overrides) -> LukeConfig:
    kwargs = dict(TINY_SIZES, vocab_size=vocab_size, entity_vocab_size=len(ENTITY_VOCAB), max_position_embeddings=600)
    kwargs.update(type_vocab_size=1, layer_norm_eps=1e-5)
    kwargs.update(overrides)
    return LukeConfig(**kwargs)


def build_tiny_luke(
    path: str | os.PathLike,
    seed: int = 0,
    tie_entity_queries: bool = True,
    tokenizer: str = "offline",
    **config_overrides,
) -> Path:
    """Save a random tiny ``LukeModel`` + ``LukeTokenizer`` under ``path`` and return it.

    ``tie_entity_queries`` sets w2e/e2w/e2e queries equal to the word query, as in the released
    LUKE checkpoints (LUKE is pre-trained without entity-aware attention). ``tokenizer``: see
    ``build_luke_tokenizer``.
    """
    path = Path(path)
    word_tokenizer = build_luke_tokenizer(tokenizer)
    model = LukeModel(tiny_luke_config(len(word_tokenizer), **config_overrides)).eval()
    _initialise(model, seed)
    torch.manual_seed(seed)  # callers may draw from the global RNG next: same state on every release
    if tie_entity_queries:
        for layer in model.encoder.layer:
            attn = layer.attention.self
            for name in ("w2e_query", "e2w_query", "e2e_query"):
                getattr(attn, name).load_state_dict(attn.query.state_dict())  # weight and bias
    model.save_pretrained(path)
    word_tokenizer.save_pretrained(path)
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
