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
"""GESA on long inputs: step time and peak memory vs length with the hard `attention_window` and global question tokens.

Prints, for words = 512 ... 8192 (forward + backward, every label family on): seconds per step, tokens/s, peak
memory, and the ratio of each to the previous length (linear growth is ~2x per doubling). `--dense-up-to N` adds
the dense (no window) model up to N words for contrast, and checks that up to N words the windowed path gives the
dense masked computation's outputs (largest difference printed).

    python bench/bench_scaling.py                                   # CPU fp32, 2 layers, batch 1, window = k = 150
    python bench/bench_scaling.py --window 256 --k 256 --dense-up-to 2048
    python bench/bench_scaling.py --device cuda --dtype bfloat16 --layers 24 --batch 2   # GPU: tokens/s and MFU

On CPU every length is timed under glibc's malloc as it comes and with heap reuse (`--malloc`, see
`bench/common.py`): past ~4096 words a step's activations cross glibc's 32 MiB mmap threshold and page-fault on
every step, which bends the time curve of any model; heap reuse shows the model's own growth.

Timing: medians over `--repeats` steps after a warm-up step (`--clock thread`: the main thread's CPU time, robust to
other jobs on the cores; see `bench_encoder.py`). Peak memory: as in `bench_encoder.py` (each length in a
fresh subprocess; CPU: RSS high-water mark of one step over the resident model; CUDA: max_memory_allocated).
"""

from __future__ import annotations

import argparse
import math

import common
import torch
from common import median

common.threads_from_argv()


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[512, 1024, 2048, 4096, 8192])
    parser.add_argument("--window", type=int, default=150, help="attention_window")
    parser.add_argument("--k", type=int, default=150, help="max_relative_position")
    common.add_model_size_arguments(parser, layers=2, hidden=1024, heads=16, ffn=4096)
    parser.add_argument("--entities", type=int, default=32)
    parser.add_argument("--question", type=int, default=40, help="question tokens (global, after <s>)")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=3)
    common.add_common_arguments(parser)
    parser.add_argument("--no-dropout", action="store_true", help="dropout 0 (default: 0.1, train mode)")
    parser.add_argument("--dense-up-to", type=int, default=0, help="also the dense model up to this many words")
    parser.add_argument("--skip-memory", action="store_true")
    parser.add_argument("--probe", nargs=3, metavar=("KIND", "WORDS", "MALLOC"), help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def build(args: argparse.Namespace, words: int, windowed: bool):
    gesa = common.import_gesa()
    torch.manual_seed(0)
    config = gesa.GesaConfig(
        **common.encoder_sizes(args), max_relative_position=args.k, attention_window=args.window if windowed else None
    )
    model = gesa.GesaModel(config, add_pooling_layer=False).to(args.device, getattr(torch, args.dtype)).train()
    g = torch.Generator().manual_seed(0)
    B, L, E, Q = args.batch, words, args.entities, args.question
    global_attention_mask = torch.zeros(B, L, dtype=torch.long)
    global_attention_mask[:, 0] = 1
    global_attention_mask[:, 1 : 1 + Q] = 2
    entity_position_ids = torch.full((B, E, 4), -1)
    entity_position_ids[:, 0, 0] = Q // 2
    starts = torch.randint(Q + 3, L - 3, (B, E), generator=g)
    for offset in range(2):
        entity_position_ids[:, 1:, offset] = starts[:, 1:] + offset
    inputs = dict(
        input_ids=torch.randint(5, 1000, (B, L), generator=g),
        global_attention_mask=global_attention_mask,
        entity_ids=torch.full((B, E), 2),
        entity_position_ids=entity_position_ids,
        placeholder_entity_mask=(torch.arange(E) == 0).long().expand(B, E).clone(),
        entity_string_ids=torch.randint(0, max(1, E // 3), (B, E), generator=g),
        entity_sentence_ids=starts * (L // 25) // L,
    )
    return model, {k: v.to(args.device) for k, v in inputs.items()}


def probe(args: argparse.Namespace, kind: str, words: int, malloc: str) -> dict:
    """One length in a fresh process: FLOPs, step times, then (glibc as it comes) the peak memory of one step."""
    if malloc == "reuse":
        common.use_heap_reuse()
    model, inputs = build(args, words, windowed=kind == "windowed")
    flops = common.count_flops(model, inputs)
    times = [common.timed_step(model, inputs, args.device) for _ in range(args.repeats)]
    # the machine's matmul limit now, in this process: the fraction beside it is measured side by side
    matmul = median(common.matmul_gflops(args.device, args.dtype, repeats=3))
    peak = None
    if not args.skip_memory and malloc == "glibc":
        peak = common.peak_step_memory(model, inputs, args.device)["peak_bytes"]
    return {"times": times, "flops": flops, "matmul_gflops": matmul, "peak_bytes": peak}


def agreement(args: argparse.Namespace, words: int) -> float:
    """Largest difference between the windowed path and the dense masked eager computation (the reference) of the
    same model and batch at this length, outputs of both streams, in eval mode (no dropout)."""
    model, inputs = build(args, words, windowed=True)
    model.eval()
    outputs = []
    with torch.no_grad():
        for implementation in ("sdpa", "eager"):  # sdpa: the windowed kernels; eager: dense (B, P, P) masked scores
            model.config._attn_implementation = implementation
            out = model(**inputs)
            outputs.append(torch.cat([out.last_hidden_state, out.entity_last_hidden_state], dim=1).float())
    return (outputs[0] - outputs[1]).abs().max().item()


def run_probe(args: argparse.Namespace, argv: list[str], kind: str, words: int, malloc: str) -> dict:
    probe = ["--probe", kind, str(words), malloc]
    return common.run_probe(__file__, argv, probe, args.threads, f"{kind} at {words} words ({malloc})")


def main(argv: list[str] | None = None) -> None:
    args, argv = common.start(parse_args, argv)
    if common.answered_probe(args, probe):
        return
    print(
        f"device {args.device} ({args.threads} threads), {args.dtype}, torch {torch.__version__}; GESA {args.layers} "
        f"layers, hidden {args.hidden}, {args.heads} heads, FFN {args.ffn}; batch {args.batch}, {args.entities} "
        f"entities, <s> + {args.question} global question tokens; attention_window {args.window}, k {args.k}; "
        f"dropout {0.0 if args.no_dropout else 0.1}; median of {args.repeats} steps, {args.clock} clock"
    )
    modes = common.malloc_modes(args)
    if args.device == "cpu":
        for mode in modes:
            print(f"[{mode}] {common.MALLOC_MODES[mode]}")
    print(f"GFLOP/s of matmul: the step's GFLOP/s over a plain {args.dtype} 4096^3 matmul's, measured after it")
    header = f"{'model':<16} {'words':>6} {'step s':>8} {'x prev':>7} {'tokens/s':>9} {'GFLOP/s':>8} {'of matmul':>9}"
    header += "" if args.skip_memory else f" {'peak MiB':>9} {'x prev':>7}"
    print(header)
    kinds = [("windowed", args.lengths)]
    if args.dense_up_to:
        kinds.append(("dense", [n for n in args.lengths if n <= args.dense_up_to]))
    doubling: dict[str, list[float]] = {}
    for kind, lengths in kinds:
        for mode in modes:
            name, previous = f"{kind} [{mode}]", None
            for words in lengths:
                result = run_probe(args, argv, kind, words, mode)
                seconds = median(result["times"])
                tokens = args.batch * (words + args.entities)
                achieved = result["flops"] / seconds / 1e9
                row = f"{name:<16} {words:>6} {seconds:>8.3f}"
                row += f" {seconds / previous['seconds']:>7.2f}" if previous else f" {'':>7}"
                row += f" {tokens / seconds:>9.0f} {achieved:>8.1f} {achieved / result['matmul_gflops']:>9.1%}"
                peak = result["peak_bytes"]
                if peak is not None:
                    row += f" {peak / 2**20:>9.0f}"
                    row += f" {peak / previous['peak']:>7.2f}" if previous else f" {'':>7}"
                print(row, flush=True)
                if previous and kind == "windowed" and previous["words"] >= 1024:
                    doubling.setdefault(f"{name} time", []).append(seconds / previous["seconds"])
                    if peak is not None:
                        doubling.setdefault(f"{name} memory", []).append(peak / previous["peak"])
                previous = {"words": words, "seconds": seconds, "peak": peak}
    for words in [n for n in args.lengths if n <= args.dense_up_to]:
        print(f"windowed vs dense masked (eager) at {words} words: max |difference| {agreement(args, words):.2e}")
    for name, ratios in doubling.items():
        overall = math.prod(ratios)
        print(
            f"{name} ratio per doubling from 1024 words: max {max(ratios):.2f}, median {median(ratios):.2f}; "
            f"{2 ** len(ratios)}x the words: {overall:.2f}x, i.e. {overall ** (1 / len(ratios)):.2f} per doubling"
        )


if __name__ == "__main__":
    main()
