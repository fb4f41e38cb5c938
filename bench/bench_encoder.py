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
"""GESA encoder step (forward + backward, every label family on) vs `transformers.LukeModel` at the same dims.

Prints, measured side by side in one run: step time of each and their ratio, peak memory of each, and the
achieved GFLOP/s of each as a fraction of a plain large matmul measured in the same run.

    python bench/bench_encoder.py                                  # CPU fp32: 2 layers, 512 words + 32 entities, batch 2
    python bench/bench_encoder.py --layers 4 --repeats 9
    python bench/bench_encoder.py --device cuda --dtype bfloat16 --layers 24 --batch 8   # GPU: tokens/s and MFU
    python bench/bench_encoder.py --kernels sdpa gesa_bias eager   # GESA attention implementations against LUKE
    python bench/bench_encoder.py --device cuda --dtype bfloat16 --layers 24 --batch 8 --kernels sdpa flex_attention \
        --no-dropout --compile                                     # every model compiled, LUKE too
    python bench/bench_encoder.py --baseline /path/to/older/gesa   # also an older checkout's GESA (same weights)

`--kernels` names GESA `attn_implementation`s (default `sdpa`: the fused kernel on CPU, the bias + one SDPA call
on accelerators; `gesa_fused`, `gesa_bias`, `eager`, `flex_attention` (no attention dropout: pass `--no-dropout`
to train with it), `gesa_windowed` (needs `--attention-window`)); each runs as its own GESA model with the same
weights, timed side by side with LUKE, every ratio against the same LUKE steps. `--baseline DIR` adds the GESA of
another checkout (its flat modules, imported as a separate package) with the same weights and its own default
path, so that a change is measured against the code before it in one run.

Allocator: on CPU each timing runs under glibc's malloc as it comes, then with heap reuse (`--malloc`; see
`bench/common.py`): LUKE's `(B, H, P, P)` attention tensors cross glibc's 32 MiB mmap threshold at these dims and
page-fault every step, GESA's per-block scores do not, so the first comparison flatters GESA and the second does
not.

Timing: the two models alternate step by step (order flipped every round) after warm-up steps, so both see the
same machine state; reported are medians over rounds, and the ratio is the median of the per-round ratios.
`--clock thread` times the main thread's CPU time instead of elapsed time (OpenMP told to sleep, not spin, while
waiting): on cores shared with other jobs it measures the step's own work, which elapsed time cannot.

Peak memory: CPU has no allocator statistics, so each model runs in a fresh subprocess: one warm-up step, then
`malloc_trim` (free heap back to the OS), reset of the kernel's resident high-water mark (`/proc/self/clear_refs`),
one measured step; peak = `VmHWM` after the step - `VmRSS` before it, i.e. the most memory the step ever held
(activations, gradients and transients; the weights are resident before). On CUDA it is
`torch.cuda.max_memory_allocated` over one step, minus what was allocated before it.

FLOPs: counted per model with `torch.utils.flop_counter.FlopCounterMode` over one step (matrix products, as
GFLOP/s is usually reported): "executed" is what the model runs (GESA's fused product carries two queries per
token, and its label terms), "model" is LUKE's count for both, the work a user asked for.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import common
import torch
from common import median

common.threads_from_argv()


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--hidden", type=int, default=1024)
    parser.add_argument("--heads", type=int, default=16)
    parser.add_argument("--ffn", type=int, default=4096)
    parser.add_argument("--words", type=int, default=512)
    parser.add_argument("--entities", type=int, default=32)
    parser.add_argument("--question", type=int, default=40, help="question tokens (global, after <s>)")
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=7, help="timed rounds (one step of each model per round)")
    parser.add_argument("--warmup", type=int, default=2)
    common.add_common_arguments(parser)
    parser.add_argument("--no-dropout", action="store_true", help="dropout 0 (default: LUKE's 0.1, train mode)")
    parser.add_argument("--ablation", help="GesaConfig ablation preset for GESA (default: every label family on)")
    parser.add_argument(
        "--kernels",
        nargs="+",
        default=["sdpa"],
        choices=["sdpa", "gesa_fused", "gesa_bias", "gesa_windowed", "eager", "flex_attention"],
        help="GESA attn_implementations to time (sdpa: fused on CPU, bias + one SDPA call on accelerators)",
    )
    parser.add_argument("--attention-window", type=int, help="GesaConfig.attention_window")
    parser.add_argument("--baseline", help="folder of another GESA checkout to time too (as `gesa-before`)")
    parser.add_argument("--compile", action="store_true", help="torch.compile every model (LUKE too) before timing")
    parser.add_argument(
        "--sdpa-probe",
        action="store_true",
        help="also print which scaled_dot_product_attention kernel runs (and how fast) for this run's shapes",
    )
    parser.add_argument("--skip-memory", action="store_true")
    parser.add_argument("--memory-probe", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def gesa_name(implementation: str) -> str:
    return f"gesa-{implementation}"


def import_baseline(folder: str):
    """The GESA flat modules of another checkout, imported as the package `gesa_before`."""
    import importlib
    import tempfile

    parent = Path(tempfile.mkdtemp(prefix="gesa-before-"))
    (parent / "gesa_before").symlink_to(Path(folder).resolve())
    sys.path.insert(0, str(parent))
    return importlib.import_module("gesa_before")


def build_models(args: argparse.Namespace) -> dict[str, torch.nn.Module]:
    """LUKE and one GESA per `--kernels` entry (same weights; `--baseline`: one more), in train mode on the run's
    device and dtype."""
    from transformers import LukeConfig, LukeModel

    gesa = common.import_gesa()
    dropout = 0.0 if args.no_dropout else 0.1
    dims = dict(
        vocab_size=1000,
        entity_vocab_size=4,
        hidden_size=args.hidden,
        entity_emb_size=256,
        num_hidden_layers=args.layers,
        num_attention_heads=args.heads,
        intermediate_size=args.ffn,
        hidden_dropout_prob=dropout,
        attention_probs_dropout_prob=dropout,
    )
    torch.manual_seed(0)
    luke = LukeModel(
        LukeConfig(**dims, max_position_embeddings=max(514, args.words + 2), use_entity_aware_attention=True),
        add_pooling_layer=False,
    )
    gesa_dims = dict(dims, ablation=args.ablation, attention_window=args.attention_window)
    model = gesa.GesaModel(gesa.GesaConfig(**gesa_dims), add_pooling_layer=False)
    dtype = getattr(torch, args.dtype)
    model = model.to(args.device, dtype).train()
    models = {"luke": luke.to(args.device, dtype).train()}
    for implementation in args.kernels:
        copy = gesa.GesaModel(gesa.GesaConfig(**gesa_dims), add_pooling_layer=False).to(args.device, dtype).train()
        copy.load_state_dict(model.state_dict())
        copy.set_attn_implementation(implementation)
        models[gesa_name(implementation)] = copy
    if args.baseline:
        before = import_baseline(args.baseline)
        baseline = before.GesaModel(before.GesaConfig(**gesa_dims), add_pooling_layer=False)
        baseline = baseline.to(args.device, dtype).train()
        baseline.load_state_dict(model.state_dict())
        models["gesa-before"] = baseline
    if args.compile:
        models = {name: torch.compile(m) for name, m in models.items()}
    return models


def make_inputs(args: argparse.Namespace) -> tuple[dict, dict]:
    """ReCoRD-shaped batch: `<s>`, question tokens (one is `[PLC]`), passage with entity mentions, no padding."""
    g = torch.Generator().manual_seed(0)
    B, L, E, Q = args.batch, args.words, args.entities, args.question
    input_ids = torch.randint(5, 1000, (B, L), generator=g)
    global_attention_mask = torch.zeros(B, L, dtype=torch.long)
    global_attention_mask[:, 0] = 1
    global_attention_mask[:, 1 : 1 + Q] = 2
    entity_position_ids = torch.full((B, E, 4), -1)
    entity_position_ids[:, 0, 0] = Q // 2  # the placeholder entity on [PLC]
    starts = torch.randint(Q + 3, L - 3, (B, E), generator=g)
    for offset in range(2):
        entity_position_ids[:, 1:, offset] = starts[:, 1:] + offset
    luke_inputs = dict(
        input_ids=input_ids,
        attention_mask=torch.ones(B, L, dtype=torch.long),
        entity_ids=torch.full((B, E), 2),
        entity_attention_mask=torch.ones(B, E, dtype=torch.long),
        entity_position_ids=entity_position_ids,
    )
    gesa_inputs = dict(
        luke_inputs,
        global_attention_mask=global_attention_mask,
        placeholder_entity_mask=(torch.arange(E) == 0).long().expand(B, E).clone(),
        entity_string_ids=torch.randint(0, max(1, E // 3), (B, E), generator=g),
        entity_sentence_ids=starts * 20 // L,
    )
    return (
        {k: v.to(args.device) for k, v in luke_inputs.items()},
        {k: v.to(args.device) for k, v in gesa_inputs.items()},
    )


def sdpa_probe(args: argparse.Namespace) -> None:
    """Which `scaled_dot_product_attention` kernel runs for an additive bias with and without gradient, and with
    dropout, at this run's attention shape (forward + backward). The bias path's training step is the last case."""
    from torch.profiler import profile

    dtype = getattr(torch, args.dtype)
    P, d = args.words + args.entities, args.hidden // args.heads
    shape = (args.batch, args.heads, P, d)
    q, k, v = (torch.randn(shape, device=args.device, dtype=dtype, requires_grad=True) for _ in range(3))
    cases = {
        "no bias": (None, 0.0),
        "bias (B,1,P,P), no grad": (torch.zeros(args.batch, 1, P, P, device=args.device, dtype=dtype), 0.0),
        "bias (B,H,P,P) needing grad": (torch.zeros(*shape[:3], P, device=args.device, dtype=dtype), 0.0),
        "bias (B,1,P,P), dropout 0.1": (torch.zeros(args.batch, 1, P, P, device=args.device, dtype=dtype), 0.1),
    }
    cases["bias (B,H,P,P) needing grad, dropout 0.1"] = (
        torch.zeros(*shape[:3], P, device=args.device, dtype=dtype),
        0.1,
    )
    for name in ("bias (B,H,P,P) needing grad", "bias (B,H,P,P) needing grad, dropout 0.1"):
        cases[name][0].requires_grad_()
    print(f"scaled_dot_product_attention, q/k/v {tuple(shape)}, forward + backward:")
    for name, (bias, dropout) in cases.items():

        def run(bias: torch.Tensor | None = bias, dropout: float = dropout) -> None:
            attention = torch.nn.functional.scaled_dot_product_attention
            attention(q, k, v, attn_mask=bias, dropout_p=dropout).sum().backward()

        run()
        times = []
        for _ in range(3):
            common.synchronize(args.device)
            start = common.now()
            run()
            common.synchronize(args.device)
            times.append(common.now() - start)
        with profile() as prof:
            run()
        kernels = sorted({e.key for e in prof.key_averages() if e.key.startswith("aten::_scaled_dot_product")})
        print(f"  {name:<30} {median(times):7.3f} s  {', '.join(kernels)}")


def agreement_with_eager(models: dict, inputs: dict) -> dict[str, tuple[float, float]]:
    """Each GESA model against the eager path (same weights), on this run's device and dtype, dropout off: the largest
    output difference relative to the output's scale, and the same for layer 0's label-table gradient (which only
    reaches the table through the path's label term: a kernel that dropped its gradient shows about 1). Rounding
    alone moves that gradient by a few 1e-3 in float32 (every path, eager too, against float64), more in bfloat16."""
    gesa_models = {name: model for name, (model, _) in models.items() if name != "luke"}
    if not gesa_models:
        return {}

    def table_of(model: torch.nn.Module) -> torch.nn.Embedding | None:
        return getattr(model, "_orig_mod", model).encoder.layer[0].attention.self.label_embeddings

    def run(model: torch.nn.Module) -> tuple[torch.Tensor, torch.Tensor]:
        out = model(**inputs)
        (out.last_hidden_state.float().pow(2).mean() + out.entity_last_hidden_state.float().pow(2).mean()).backward()
        gradient = table_of(model).weight.grad.float().clone()
        model.zero_grad(set_to_none=True)
        return out.last_hidden_state.float().detach(), gradient

    first = getattr(next(iter(gesa_models.values())), "_orig_mod", None) or next(iter(gesa_models.values()))
    if table_of(first) is None:
        return {}
    for model in gesa_models.values():
        model.eval()
    implementation = first.config._attn_implementation
    first.config._attn_implementation = "eager"
    try:
        reference = run(first)
    finally:
        first.config._attn_implementation = implementation
    result = {}
    for name, model in gesa_models.items():
        if name == "gesa-flex_attention" and inputs["input_ids"].device.type == "cpu":
            continue  # no FlexAttention backward on CPU
        output, gradient = run(model)
        result[name] = tuple(
            float((a - b).abs().max() / b.abs().max().clamp_min(1e-30))
            for a, b in zip((output, gradient), reference, strict=True)
        )
    for model in gesa_models.values():
        model.train()
    return result


def memory_probe(args: argparse.Namespace) -> dict:
    """Peak memory of one step of one model (run in a fresh process; see `common.peak_step_memory`)."""
    model = build_models(args)[args.memory_probe]
    luke_inputs, gesa_inputs = make_inputs(args)
    inputs = luke_inputs if args.memory_probe == "luke" else gesa_inputs
    common.step(model, inputs)
    return common.peak_step_memory(model, inputs, args.device)


def peak_memory(args: argparse.Namespace, which: str, argv: list[str]) -> dict:
    return common.run_probe(__file__, argv, ["--memory-probe", which], args.threads, f"memory probe for {which}")


def time_models(args: argparse.Namespace, models: dict) -> tuple[dict[str, list[float]], list[float]]:
    """Warm-up, then rounds of one step of each model (order flipped every round) and one plain matmul."""
    for _ in range(args.warmup):
        for model, inputs in models.values():
            common.step(model, inputs)
    times: dict[str, list[float]] = {name: [] for name in models}
    matmul: list[float] = []
    for round_index in range(args.repeats):
        order = list(models) if round_index % 2 == 0 else list(models)[::-1]
        for name in order:
            times[name].append(common.timed_step(*models[name], args.device))
        matmul.extend(common.matmul_gflops(args.device, args.dtype, repeats=1))
    matmul.extend(common.matmul_gflops(args.device, args.dtype))
    return times, matmul


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    argv = common.fall_back_to_cpu(args, argv)
    common.set_clock(args.clock, args.device)
    if args.memory_probe:
        print(json.dumps(memory_probe(args)))
        return

    luke_inputs, gesa_inputs = make_inputs(args)
    models = {
        name: (model, luke_inputs if name == "luke" else gesa_inputs) for name, model in build_models(args).items()
    }
    flops = {name: common.count_flops(model, inputs) for name, (model, inputs) in models.items()}
    agreement = agreement_with_eager(models, gesa_inputs)
    # glibc as it comes first: heap reuse, once switched on, stays on for the process
    runs = {}
    for mode in common.malloc_modes(args):
        if mode == "reuse":
            common.use_heap_reuse()
        runs[mode] = time_models(args, models)
    names = list(models)
    del models

    memory = {}
    if not args.skip_memory:
        memory = {name: peak_memory(args, name, argv) for name in names}

    tokens = args.batch * (args.words + args.entities)
    print(
        f"device {args.device} ({torch.get_num_threads()} threads), {args.dtype}, torch {torch.__version__}; "
        f"{args.layers} layers, hidden {args.hidden}, {args.heads} heads, FFN {args.ffn}, batch {args.batch} x "
        f"({args.words} words + {args.entities} entities), dropout {0.0 if args.no_dropout else 0.1}, "
        f"{args.repeats} rounds, {args.clock} clock"
        + (f", GESA ablation {args.ablation}" if args.ablation else "")
        + (", torch.compile" if args.compile else "")
    )
    for mode, (times, matmul) in runs.items():
        if args.device == "cpu":
            print(f"\n[{mode}] {common.MALLOC_MODES[mode]}")
        peak_rate = median(matmul)
        print(f"plain {args.dtype} 4096^3 matmul: median {peak_rate:.1f} GFLOP/s (best {max(matmul):.1f})")
        header = f"{'model':<20} {'step s (median)':>16} {'min':>8} {'tokens/s':>9} {'exec GFLOP':>11}"
        header += f" {'GFLOP/s':>8} {'of matmul':>9} {'model GFLOP/s':>14} {'MFU':>6}"
        print(header)
        seconds = {name: median(values) for name, values in times.items()}
        for name in names:
            executed = flops[name] / seconds[name] / 1e9
            useful = flops["luke"] / seconds[name] / 1e9
            row = f"{name:<20} {seconds[name]:>16.3f} {min(times[name]):>8.3f} {tokens / seconds[name]:>9.0f}"
            row += f" {flops[name] / 1e9:>11.1f} {executed:>8.1f} {executed / peak_rate:>9.1%}"
            row += f" {useful:>14.1f} {useful / peak_rate:>6.1%}"
            print(row)
        for name in names[1:]:
            ratios = [g / lk for g, lk in zip(times[name], times["luke"], strict=True)]
            print(
                f"{name} / luke step time: {median(ratios):.3f}x (median of per-round ratios; "
                f"range {min(ratios):.3f}-{max(ratios):.3f})"
            )
        if "gesa-before" in times:  # this checkout against the older one, round by round
            for name in (n for n in names[1:] if n != "gesa-before"):
                ratios = [g / b for g, b in zip(times[name], times["gesa-before"], strict=True)]
                print(
                    f"{name} / gesa-before step time: {median(ratios):.3f}x (median of per-round ratios; "
                    f"range {min(ratios):.3f}-{max(ratios):.3f})"
                )
    if memory:
        print()
        for name in names:
            print(f"peak memory of one step, {name}: {memory[name]['peak_bytes'] / 2**20:.0f} MiB")
        for name in names[1:]:
            ratio = memory[name]["peak_bytes"] / memory["luke"]["peak_bytes"]
            print(f"{name} / luke peak memory: {ratio:.3f}x ({memory[name]['method']}, glibc as it comes)")
    if agreement:
        print()
        for name, (output, gradient) in agreement.items():
            print(
                f"{name} vs the eager path (dropout off): output max |diff| {output:.1e}, layer-0 label-table "
                f"gradient max |diff| {gradient:.1e} (each relative to the eager value's largest entry)"
            )
    if args.sdpa_probe:
        sdpa_probe(args)


if __name__ == "__main__":
    main()
