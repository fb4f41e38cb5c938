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
"""The long variant (`--variant long_luke`) on one whole document vs LUKE on its 512-token pieces: time and memory.

One document of `--words` words with `--entities` entity mentions, forward + backward (dropout 0.1, train mode):
- `pieces`: LUKE (`--variant luke`, GESA's `ablation="luke"`: on CPU its fused kernel) on the document cut into
  512-token pieces (`<s>` + 510 words + `</s>`), one batch, each entity in the piece of its mention (what SciREX's
  baselines do);
- `long`: `LongLukeModel` at its defaults (windows growing 128 -> 512 over the layers, 3 random blocks of 64,
  `<s>` and `</s>` global) on the whole document at once; `long-dilation`: the same windows with dilation instead of
  random keys (none in the lower half of the layers, 2 then 4 above); `long-512`: Longformer's fine-tuning setting
  (window 512 in every layer, no random keys).
Each model's step is timed round by round in one process (the ratios are measured side by side); its peak memory is
one step's in a fresh process (`common.peak_step_memory`: RSS high-water mark over the resident model). Then the
default long variant's memory (with `--scaling-time` also its step time) at `--scaling` lengths (each doubling's
ratio).

    python bench/bench_long_luke.py                                   # 6,000 words, 2 layers at luke-large's width
    python bench/bench_long_luke.py --layers 4 --scaling 2000 4000 8000 16000
    python bench/bench_long_luke.py --device cuda --dtype bfloat16 --layers 24   # GPU
"""

from __future__ import annotations

import argparse
import math

import common
import torch
from common import median

common.threads_from_argv()

PIECE = 512  # LUKE's sequence: <s> + 510 words + </s>
KINDS = ("pieces", "long", "long-dilation", "long-512")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--words", type=int, default=6000, help="the document's words (word tokens)")
    parser.add_argument("--entities", type=int, default=32, help="entity mentions in the document")
    parser.add_argument("--kinds", nargs="+", default=list(KINDS), choices=KINDS)
    parser.add_argument("--scaling", type=int, nargs="*", default=[2000, 4000, 8000, 16000],
                        help="the default long variant's lengths for memory per doubling (none: skip)")  # fmt: skip
    common.add_model_size_arguments(parser, layers=2, hidden=1024, heads=16, ffn=4096)
    parser.add_argument("--scaling-time", action="store_true", help="also time a step at each --scaling length")
    parser.add_argument("--skip-comparison", action="store_true", help="only the --scaling lengths (no --kinds table)")
    parser.add_argument("--repeats", type=int, default=3)
    common.add_common_arguments(parser)
    parser.set_defaults(malloc="glibc")
    parser.add_argument("--no-dropout", action="store_true", help="dropout 0 (default: 0.1, train mode)")
    parser.add_argument("--skip-memory", action="store_true")
    parser.add_argument("--probe", nargs=3, metavar=("KIND", "WORDS", "MALLOC"), help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def long_config(args: argparse.Namespace, kind: str, words: int):
    gesa = common.import_gesa()
    layers = args.layers
    pattern = {}
    if kind == "long-dilation":
        low = layers // 2
        pattern = dict(num_random_blocks=0, attention_dilation=[1] * low + [2 ** (1 + i) for i in range(layers - low)])
    elif kind == "long-512":
        pattern = dict(attention_window=512, num_random_blocks=0)
    return gesa.LongLukeConfig(**common.encoder_sizes(args), max_position_embeddings=words + 2 + 2, **pattern)


def document(args: argparse.Namespace, words: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """The document's word ids `(words,)` and its entities' mention starts `(entities,)` (two words each)."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, 1000, (words,), generator=g)
    starts = torch.randint(0, words - 2, (args.entities,), generator=g).sort().values
    return ids, starts


def whole_inputs(args: argparse.Namespace, words: int) -> dict:
    """The long variant's inputs: `<s>` document `</s>` in one sequence, every entity on its mention."""
    ids, starts = document(args, words)
    input_ids = torch.cat([torch.tensor([0]), ids, torch.tensor([2])])[None]
    entity_position_ids = torch.stack([starts + 1, starts + 2], dim=1)[None]
    return dict(
        input_ids=input_ids, entity_ids=torch.full((1, args.entities), 2), entity_position_ids=entity_position_ids
    )


def piece_inputs(args: argparse.Namespace, words: int) -> dict:
    """LUKE's inputs: the document in `<s>` 510 words `</s>` pieces (the last padded), each entity in its piece."""
    ids, starts = document(args, words)
    per = PIECE - 2
    count = math.ceil(words / per)
    input_ids = torch.ones(count, PIECE, dtype=torch.long)
    attention_mask = torch.zeros(count, PIECE, dtype=torch.long)
    piece_of = starts // per
    # a mention across a piece boundary stays in the piece it starts in, cut at its end
    most = int(torch.bincount(piece_of, minlength=count).max())
    entity_position_ids = torch.full((count, most, 2), -1)
    entity_attention_mask = torch.zeros(count, most, dtype=torch.long)
    for p in range(count):
        chunk = ids[p * per : (p + 1) * per]
        input_ids[p, : len(chunk) + 2] = torch.cat([torch.tensor([0]), chunk, torch.tensor([2])])
        attention_mask[p, : len(chunk) + 2] = 1
        mine = starts[piece_of == p] - p * per + 1
        entity_position_ids[p, : len(mine), 0] = mine
        entity_position_ids[p, : len(mine), 1] = torch.where(mine + 1 <= len(chunk), mine + 1, -1)
        entity_attention_mask[p, : len(mine)] = 1
    return dict(
        input_ids=input_ids,
        attention_mask=attention_mask,
        entity_ids=torch.full((count, most), 2),
        entity_attention_mask=entity_attention_mask,
        entity_position_ids=entity_position_ids,
    )


def build(args: argparse.Namespace, kind: str, words: int):
    gesa = common.import_gesa()
    torch.manual_seed(0)
    if kind == "pieces":
        config = gesa.GesaConfig(**common.encoder_sizes(args), ablation="luke", max_position_embeddings=PIECE + 2)
        model, inputs = gesa.GesaModel(config, add_pooling_layer=False), piece_inputs(args, words)
    else:
        config = long_config(args, kind, words)
        model, inputs = gesa.LongLukeModel(config, add_pooling_layer=False), whole_inputs(args, words)
    model = model.to(args.device, getattr(torch, args.dtype)).train()
    return model, {key: value.to(args.device) for key, value in inputs.items()}


def probe(args: argparse.Namespace, kind: str, words: int, malloc: str) -> dict:
    """One model at one length in a fresh process: the peak memory of one step (after a warm-up step), or (kind
    `time:...`) the steps of several models round by round."""
    if kind.startswith("time:"):
        kinds = kind.removeprefix("time:").split(",")
        built = {name: build(args, name, words) for name in kinds}
        for model, inputs in built.values():
            common.step(model, inputs)  # warm-up
        times = {name: [] for name in kinds}
        for _ in range(args.repeats):
            for name, (model, inputs) in built.items():
                times[name].append(common.timed_step(model, inputs, args.device))
        return {"times": times}
    model, inputs = build(args, kind, words)
    common.step(model, inputs)
    tokens = int(inputs["input_ids"].numel())
    return {"peak_bytes": common.peak_step_memory(model, inputs, args.device)["peak_bytes"], "tokens": tokens}


def run_probe(args: argparse.Namespace, argv: list[str], kind: str, words: int) -> dict:
    return common.run_probe(__file__, argv, ["--probe", kind, str(words), "glibc"], args.threads, f"{kind} at {words}")


def main(argv: list[str] | None = None) -> None:
    args, argv = common.start(parse_args, argv)
    if common.answered_probe(args, probe):
        return
    print(
        f"device {args.device} ({args.threads} threads), {args.dtype}, torch {torch.__version__}; {args.layers} "
        f"layers, hidden {args.hidden}, {args.heads} heads, FFN {args.ffn}; one document of {args.words} words, "
        f"{args.entities} entities; dropout {0.0 if args.no_dropout else 0.1}; median of {args.repeats} steps "
        f"(round by round, one process), {args.clock} clock; memory: one step in a fresh process"
    )
    for kind in args.kinds:
        if kind != "pieces":
            config = long_config(args, kind, args.words)
            print(f"  {kind}: windows {config.per_layer('attention_window')}, dilation "
                  f"{config.per_layer('attention_dilation')}, random blocks {config.per_layer('num_random_blocks')} "
                  f"x {config.random_block_size}")  # fmt: skip
    kinds = [] if args.skip_comparison else args.kinds
    times = run_probe(args, argv, "time:" + ",".join(kinds), args.words)["times"] if kinds else {}
    memory = {}
    if not args.skip_memory:
        memory = {kind: run_probe(args, argv, kind, args.words) for kind in kinds}
    base = median(times["pieces"]) if "pieces" in times else None
    if kinds:
        print(f"{'model':<14} {'step s':>8} {'x pieces':>9} {'per round':>16} {'peak MiB':>9} {'x pieces':>9}")
    for kind in kinds:
        seconds = median(times[kind])
        row = f"{kind:<14} {seconds:>8.3f}"
        if base:
            rounds = [t / p for t, p in zip(times[kind], times["pieces"], strict=True)]
            row += f" {seconds / base:>9.3f} {min(rounds):>7.3f}-{max(rounds):<8.3f}"
        if memory:
            peak = memory[kind]["peak_bytes"]
            row += f" {peak / 2**20:>9.0f}"
            if "pieces" in memory:
                row += f" {peak / memory['pieces']['peak_bytes']:>9.3f}"
        print(row, flush=True)
    if args.scaling and not args.skip_memory:
        timed = f"; step time ({args.clock})" if args.scaling_time else ""
        print(f"long (defaults) by length: peak memory of one step and its ratio per doubling{timed}")
        previous = None
        ratios = []
        for words in args.scaling:
            peak = run_probe(args, argv, "long", words)["peak_bytes"]
            seconds = median(run_probe(args, argv, "time:long", words)["times"]["long"]) if args.scaling_time else None
            row = f"  {words:>6} words: {peak / 2**20:>8.0f} MiB"
            if previous:
                ratios.append(peak / previous[0])
                row += f" x{ratios[-1]:.2f} ({words / previous[2]:.1f}x the words)"
            if seconds is not None:
                row += f", step {seconds:.2f} s" + (
                    f" x{seconds / previous[1]:.2f}" if previous and previous[1] else ""
                )
            print(row, flush=True)
            previous = (peak, seconds, words)
        if ratios:
            print(f"memory per doubling: max {max(ratios):.2f}, overall {math.prod(ratios) ** (1 / len(ratios)):.2f}")


if __name__ == "__main__":
    main()
