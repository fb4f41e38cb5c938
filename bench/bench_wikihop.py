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
"""WikiHop-shaped training steps: GESA vs plain LUKE with the same `attention_window`, and memory as inputs double.

Inputs are real `WikihopProcessor` features of an invented WikiHop record with `--candidates` (default 80)
candidates and supports long enough to fill `--words` words (they are cut to fit, as in training): `<s>` + query
global, one entity per candidate, one per mention. Both models are the multiple-choice head
(`GesaForEntityMultipleChoice`): GESA (every label family) and LUKE (`ablation="luke"`: absolute positions, LUKE's
entity-aware queries, no labels), built from the same config, window and seed; a step is forward, the softmax
cross-entropy loss over the candidates, backward.

Prints (1) GESA's and LUKE's step time at `--words` (default 4,096) side by side, probes alternating, and their
ratio (target <= 1.3x); (2) peak memory of one step at each of `--memory-words` (default 2k/4k/8k) for both models
and the ratio per doubling (target <= 2.2x). Every probe runs in a fresh process (`bench/common.py`).

    python bench/bench_wikihop.py                                  # CPU fp32, hidden 256, 2 layers, window 128
    python bench/bench_wikihop.py --device cuda --dtype bfloat16 --hidden 1024 --heads 16 --ffn 4096 --layers 24 \
        --window 256                                               # GPU: luke-large's shape
"""

from __future__ import annotations

import argparse
import random
import tempfile
from pathlib import Path

import common
import torch
from common import median

common.threads_from_argv()


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--words", type=int, default=4096, help="words of the timed input")
    parser.add_argument("--memory-words", type=int, nargs="+", default=[2048, 4096, 8192])
    parser.add_argument("--candidates", type=int, default=80)
    parser.add_argument(
        "--max-entities", type=int, default=4096, help="entity cap (query + candidates + mentions; default: all)"
    )
    parser.add_argument("--window", type=int, default=128, help="attention_window (each side)")
    parser.add_argument("--k", type=int, default=128, help="GESA's max_relative_position")
    parser.add_argument("--entity_graph", choices=["merged", "context"], default="merged",
                        help="GESA's entity graph: merged (the three ReCoRD labels) or context (the thesis's graph, "
                        "document nodes and one label per edge kind, as run_multihop.py --variant gesa); LUKE keeps "
                        "the merged features (it reads no labels)")  # fmt: skip
    common.add_model_size_arguments(parser, layers=2, hidden=256, heads=4, ffn=1024)
    parser.add_argument("--repeats", type=int, default=3, help="timed steps per probe (median)")
    parser.add_argument("--rounds", type=int, default=2, help="alternating GESA/LUKE probe pairs for the time ratio")
    parser.add_argument("--skip-memory", action="store_true")
    parser.add_argument("--skip-time", action="store_true")
    common.add_common_arguments(parser)
    parser.add_argument("--probe", nargs=3, metavar=("MODEL", "WORDS", "WHAT"), help=argparse.SUPPRESS)
    return parser.parse_args(argv)


_SYLLABLES = ["vel", "mor", "kas", "trel", "dun", "abo", "rin", "ost", "lam", "bre", "sar", "tho", "quil", "zen"]


def wikihop_record(candidates: int, words: int, seed: int = 0) -> dict:
    """An invented WikiHop record: `candidates` place names, supports of ~`words` words mentioning them."""
    rng = random.Random(seed)
    names = []
    while len(names) < candidates:
        name = "".join(rng.choice(_SYLLABLES) for _ in range(3))
        if name not in names:
            names.append(name)
    supports, total = [], 0
    while total < words * 1.3:
        sentences = []
        for _ in range(12):
            a, b = rng.sample(names, 2)
            sentences.append(f"{a.capitalize()} lies near {b.capitalize()} and trades with the towns of the coast.")
        text = " ".join(sentences)
        supports.append(text)
        total += len(text.split())  # a word is at least one token: the processor cuts the excess
    return {"id": "bench", "query": f"located_in velmordun {names[0]}", "supports": supports, "candidates": names,
            "answer": names[0]}  # fmt: skip


def build(args: argparse.Namespace, model_name: str, words: int):
    """The model and one batch of real WikiHop features of `words` words."""
    gesa = common.import_gesa()
    from transformers import LukeTokenizer

    from gesa.modeling_gesa_multiple_choice import GesaForEntityMultipleChoice
    from gesa.processing_wikihop import WikihopProcessor
    from gesa.training.wikihop import build_demo_luke

    record = wikihop_record(args.candidates, words)
    with tempfile.TemporaryDirectory() as scratch:
        texts = [record["query"], *record["supports"][:4], *record["candidates"]]
        tokenizer = LukeTokenizer.from_pretrained(build_demo_luke(Path(scratch), texts, vocab_size=800))
    graph = args.entity_graph if model_name == "gesa" else "merged"
    processor = WikihopProcessor(tokenizer, max_seq_length=words, max_entities=args.max_entities, entity_graph=graph)
    inputs = dict(processor(record, return_tensors="pt"))
    torch.manual_seed(0)
    overrides = {"ablation": "luke", "max_position_embeddings": words + 2} if model_name == "luke" else {}
    config = gesa.GesaConfig(
        vocab_size=len(tokenizer), entity_vocab_size=4, hidden_size=args.hidden, entity_emb_size=args.hidden // 4,
        num_hidden_layers=args.layers, num_attention_heads=args.heads, intermediate_size=args.ffn,
        max_relative_position=args.k, attention_window=args.window, entity_graph=graph, **overrides,
    )  # fmt: skip
    model = GesaForEntityMultipleChoice(config).to(args.device, getattr(torch, args.dtype)).train()
    return model, {k: v.to(args.device) for k, v in inputs.items()}


def step(model: torch.nn.Module, inputs: dict) -> None:
    model(**inputs).loss.backward()
    model.zero_grad(set_to_none=True)


def probe(args: argparse.Namespace, model_name: str, words: int, what: str) -> dict:
    model, inputs = build(args, model_name, words)
    shape = {"words": inputs["input_ids"].shape[1], "entities": inputs["entity_ids"].shape[1]}
    if what == "memory":
        step(model, inputs)  # warm-up
        common.step = step  # peak_step_memory runs the module's step: the head's loss here
        return {**shape, "peak_bytes": common.peak_step_memory(model, inputs, args.device)["peak_bytes"]}
    step(model, inputs)
    times = []
    for _ in range(args.repeats):
        common.synchronize(args.device)
        start = common.now()
        step(model, inputs)
        common.synchronize(args.device)
        times.append(common.now() - start)
    return {**shape, "times": times}


def run_probe(args, argv, model_name: str, words: int, what: str) -> dict:
    return common.run_probe(__file__, argv, ["--probe", model_name, str(words), what], args.threads,
                            f"{model_name} {what} at {words} words")  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    args, argv = common.start(parse_args, argv)
    if common.answered_probe(args, probe):
        return
    print(
        f"device {args.device} ({args.threads} threads), {args.dtype}, torch {torch.__version__}; multiple-choice "
        f"head, {args.layers} layers, hidden {args.hidden}, {args.heads} heads, FFN {args.ffn}; {args.candidates} "
        f"candidates; attention_window {args.window} (both models), GESA k {args.k}; {args.clock} clock"
    )
    if not args.skip_time:
        seconds: dict[str, list[float]] = {"gesa": [], "luke": []}
        shape = {}
        for _ in range(args.rounds):
            for model_name in ("gesa", "luke"):
                result = run_probe(args, argv, model_name, args.words, "time")
                seconds[model_name].append(median(result["times"]))
                shape = result
        gesa_s, luke_s = median(seconds["gesa"]), median(seconds["luke"])
        print(f"training step at {shape['words']} words, {shape['entities']} entities (query, candidates, mentions):")
        print(f"  GESA {gesa_s:.3f} s   LUKE {luke_s:.3f} s   GESA / LUKE = {gesa_s / luke_s:.2f}x (target <= 1.3x)")
        fastest = min(seconds["gesa"]) / min(seconds["luke"])
        print(f"  fastest probe of each (least disturbed by other jobs): GESA / LUKE = {fastest:.2f}x")
        print(
            f"  per round: GESA {[round(s, 3) for s in seconds['gesa']]}, LUKE {[round(s, 3) for s in seconds['luke']]}"
        )
    if args.skip_memory:
        return
    print(
        f"peak memory of one step ({'max_memory_allocated' if args.device.startswith('cuda') else 'RSS high-water'}):"
    )
    for model_name in ("gesa", "luke"):
        previous = None
        for words in args.memory_words:
            result = run_probe(args, argv, model_name, words, "memory")
            peak = result["peak_bytes"]
            row = f"  {model_name:<5} {result['words']:>6} words {result['entities']:>5} entities {peak / 2**20:>9.1f} MiB"
            if previous is not None:
                row += f"   x{peak / previous:.2f} per doubling (target <= 2.2x)"
            print(row, flush=True)
            previous = peak


if __name__ == "__main__":
    main()
