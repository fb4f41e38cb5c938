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
    python bench/bench_encoder.py --baseline main                  # also the GESA of commit `main` (same weights)

`--kernels` names GESA `attn_implementation`s (default `sdpa`: the fused kernel on CPU, the bias + one SDPA call
on accelerators; `gesa_fused`, `gesa_bias`, `eager`, `flex_attention` (no attention dropout: pass `--no-dropout`
to train with it), `gesa_windowed` (needs `--attention-window`)); each runs as its own GESA model with the same
weights, timed side by side with LUKE, every ratio against the same LUKE steps.

`--baseline REV` adds `gesa-before`, the GESA of an older commit (`git archive REV` of this checkout, into a temporary
folder; or `--baseline DIR`, the folder of another checkout) with the same weights and its own default path, so that
a change is measured against the code before it in one run. It runs in a child process in which that folder is the
package `gesa` (imported from its `__init__.py` by `importlib`: no `sys.path` entry, no link, no install), stepped in
lockstep with this process: each round times one step of every model here and one of `gesa-before` there, while
the other process waits, and prints each GESA's per-round ratio against it.

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
import importlib.util
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable
from functools import partial
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
    parser.add_argument(
        "--baseline",
        metavar="REV",
        help="also time the GESA of this git revision of the checkout (or of the folder of another checkout), as "
        "`gesa-before`, in a child process stepped in lockstep",
    )
    parser.add_argument("--compile", action="store_true", help="torch.compile every model (LUKE too) before timing")
    parser.add_argument(
        "--sdpa-probe",
        action="store_true",
        help="also print which scaled_dot_product_attention kernel runs (and how fast) for this run's shapes",
    )
    parser.add_argument("--skip-memory", action="store_true")
    parser.add_argument("--memory-probe", help=argparse.SUPPRESS)
    # the child process that runs `--baseline`: the folder to import as `gesa`, the weights to load
    parser.add_argument("--baseline-tree", help=argparse.SUPPRESS)
    parser.add_argument("--baseline-weights", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def gesa_name(implementation: str) -> str:
    return f"gesa-{implementation}"


def export_baseline(baseline: str, into: Path) -> Path:
    """The flat modules of `--baseline`: the folder of another checkout as it is, or a git revision of this checkout
    exported (`git archive`) into `into`."""
    folder = Path(baseline).expanduser()
    if not folder.is_dir():
        checkout = Path(__file__).resolve().parents[1]
        archive = subprocess.run(
            ["git", "-C", str(checkout), "archive", "--format=tar", baseline], capture_output=True, check=False
        )
        if archive.returncode != 0:
            raise SystemExit(
                f"--baseline {baseline}: neither a folder nor a git revision of the checkout at {checkout} "
                f"({archive.stderr.decode().strip()})"
            )
        folder = into / "gesa"
        with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
            # a trusted archive of this repository; the "data" filter where this Python has it
            tar.extractall(folder, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
    if not (folder / "__init__.py").is_file() or not (folder / "modeling_gesa.py").is_file():
        raise SystemExit(f"--baseline {baseline}: {folder} holds no GESA checkout (no __init__.py / modeling_gesa.py)")
    return folder.resolve()


def import_tree_as_gesa(folder: str):
    """Import the flat modules in `folder` as the package `gesa`, in this process only (the `--baseline` child): a
    package spec whose search path is the folder, so every relative import inside it resolves there."""
    if any(name == "gesa" or name.startswith("gesa.") for name in sys.modules):
        raise RuntimeError("the baseline's `gesa` must be imported before any other")
    folder = Path(folder)
    spec = importlib.util.spec_from_file_location(
        "gesa", folder / "__init__.py", submodule_search_locations=[str(folder)]
    )
    package = importlib.util.module_from_spec(spec)
    sys.modules["gesa"] = package
    spec.loader.exec_module(package)
    elsewhere = [
        name
        for name, module in sys.modules.items()
        if (name == "gesa" or name.startswith("gesa.")) and Path(getattr(module, "__file__", "")).parent != folder
    ]
    if elsewhere:
        raise RuntimeError(f"baseline modules imported from outside {folder}: {elsewhere}")
    return package


# a reply line of the `--baseline` child (its other output, warnings included, is not protocol)
REPLY = "@bench_encoder "


class BaselineProcess:
    """`gesa-before`: the baseline GESA in a child process (`--baseline-tree`), asked for one step at a time."""

    def __init__(self, argv: list[str], folder: Path, weights: Path, threads: int) -> None:
        command = [sys.executable, __file__, *argv, "--baseline-tree", str(folder), "--baseline-weights", str(weights)]
        env = dict(os.environ, OMP_NUM_THREADS=str(threads))
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        self.flops = self._reply()["flops"]

    def _reply(self) -> dict:
        for line in self.process.stdout:
            if line.startswith(REPLY):
                return json.loads(line[len(REPLY) :])
        raise RuntimeError(f"the --baseline process ended (exit code {self.process.wait()}); its error is above")

    def ask(self, command: str, **arguments) -> dict:
        self.process.stdin.write(json.dumps(dict(arguments, command=command)) + "\n")
        self.process.stdin.flush()
        return self._reply()

    def timed_step(self) -> float:
        return self.ask("timed_step")["seconds"]

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.stdin.close()
            self.process.wait()


def serve_baseline(args: argparse.Namespace) -> None:
    """The `--baseline` child: the older GESA (`args.baseline_tree` imported as `gesa`) with the parent's weights,
    stepping when asked (JSON lines on stdin, `REPLY` lines on stdout); or, with `--memory-probe`, its peak memory."""
    gesa = import_tree_as_gesa(args.baseline_tree)
    if args.memory_probe:
        print(json.dumps(memory_probe(args, gesa)))
        return
    weights = torch.load(args.baseline_weights, map_location=args.device, weights_only=True)
    model = build_gesa(gesa, args, weights=weights)
    del weights
    _, inputs = make_inputs(args)
    if args.compile:
        model = torch.compile(model)

    def reply(answer: dict) -> None:
        print(REPLY + json.dumps(answer), flush=True)

    reply({"flops": common.count_flops(model, inputs)})
    for line in sys.stdin:
        request = json.loads(line)
        if request["command"] == "timed_step":
            reply({"seconds": common.timed_step(model, inputs, args.device)})
        elif request["command"] == "heap_reuse":
            common.use_heap_reuse()
            reply({})
        elif request["command"] == "agreement":  # dropout off, as for the parent's models
            model.eval()
            torch.save(output_and_table_gradient(model, inputs), request["path"])
            model.train()
            reply({})
        else:
            raise ValueError(f"unknown request {request}")


def gesa_dims(args: argparse.Namespace) -> dict:
    """The GESA config of every GESA model of the run (the baseline's too)."""
    return dict(
        vocab_size=1000,
        entity_vocab_size=4,
        hidden_size=args.hidden,
        entity_emb_size=256,
        num_hidden_layers=args.layers,
        num_attention_heads=args.heads,
        intermediate_size=args.ffn,
        hidden_dropout_prob=0.0 if args.no_dropout else 0.1,
        attention_probs_dropout_prob=0.0 if args.no_dropout else 0.1,
        ablation=args.ablation,
        attention_window=args.attention_window,
    )


def build_luke(args: argparse.Namespace) -> torch.nn.Module:
    """`transformers.LukeModel` at the run's dims, in train mode on the run's device and dtype."""
    from transformers import LukeConfig, LukeModel

    dims = {name: value for name, value in gesa_dims(args).items() if name not in ("ablation", "attention_window")}
    luke = LukeModel(
        LukeConfig(**dims, max_position_embeddings=max(514, args.words + 2), use_entity_aware_attention=True),
        add_pooling_layer=False,
    )
    return luke.to(args.device, getattr(torch, args.dtype)).train()


def build_gesa(
    gesa, args: argparse.Namespace, implementation: str | None = None, weights: dict | None = None
) -> torch.nn.Module:
    """A GESA model of the package `gesa` (this checkout's, or the baseline's in its process) at the run's dims, in
    train mode on the run's device and dtype, with `weights` and the `attn_implementation` given (else its default)."""
    model = gesa.GesaModel(gesa.GesaConfig(**gesa_dims(args)), add_pooling_layer=False)
    if weights is not None:
        model.load_state_dict(weights)
    model = model.to(args.device, getattr(torch, args.dtype)).train()
    if implementation is not None:
        model.set_attn_implementation(implementation)
    return model


def build_models(args: argparse.Namespace) -> tuple[dict[str, torch.nn.Module], dict[str, torch.Tensor]]:
    """LUKE and one GESA per `--kernels` entry (same weights), in train mode on the run's device and dtype; and the
    GESA weights (what `--baseline` loads)."""
    gesa = common.import_gesa()
    torch.manual_seed(0)
    models = {"luke": build_luke(args)}
    weights = build_gesa(gesa, args).state_dict()
    for implementation in args.kernels:
        models[gesa_name(implementation)] = build_gesa(gesa, args, implementation, weights)
    if args.compile:
        models = {name: torch.compile(m) for name, m in models.items()}
    return models, weights


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


def table_of(model: torch.nn.Module) -> torch.nn.Embedding | None:
    """Layer 0's label table of a GESA model (compiled or not), or None without labels."""
    return getattr(model, "_orig_mod", model).encoder.layer[0].attention.self.label_embeddings


def output_and_table_gradient(model: torch.nn.Module, inputs: dict) -> tuple[torch.Tensor, torch.Tensor]:
    """The word states and layer 0's label-table gradient of a loss over word and entity states (float32)."""
    out = model(**inputs)
    (out.last_hidden_state.float().pow(2).mean() + out.entity_last_hidden_state.float().pow(2).mean()).backward()
    gradient = table_of(model).weight.grad.float().clone()
    model.zero_grad(set_to_none=True)
    return out.last_hidden_state.float().detach(), gradient


def agreement_with_eager(
    models: dict, inputs: dict, baseline: BaselineProcess | None = None
) -> dict[str, tuple[float, float]]:
    """Each GESA model (and `gesa-before`) against this checkout's eager path (same weights), on this run's device and
    dtype, dropout off: the largest output difference relative to the output's scale, and the same for layer 0's
    label-table gradient (which only reaches the table through the path's label term: a kernel that dropped its
    gradient shows about 1). Rounding alone moves that gradient by a few 1e-3 in float32 (every path, eager too,
    against float64), more in bfloat16."""
    gesa_models = {name: model for name, (model, _) in models.items() if name != "luke"}
    if not gesa_models:
        return {}
    run = partial(output_and_table_gradient, inputs=inputs)

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
    results = {}
    for name, model in gesa_models.items():
        if name == "gesa-flex_attention" and inputs["input_ids"].device.type == "cpu":
            continue  # no FlexAttention backward on CPU
        results[name] = run(model)
    for model in gesa_models.values():
        model.train()
    if baseline is not None:
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "agreement.pt"
            baseline.ask("agreement", path=str(path))
            results["gesa-before"] = torch.load(path, weights_only=True)
    return {
        name: tuple(
            float((a - b).abs().max() / b.abs().max().clamp_min(1e-30)) for a, b in zip(result, reference, strict=True)
        )
        for name, result in results.items()
    }


def memory_probe(args: argparse.Namespace, gesa=None) -> dict:
    """Peak memory of one step of one model, the only one in a fresh process (see `common.peak_step_memory`);
    `gesa`: the package of the baseline's process."""
    luke_inputs, gesa_inputs = make_inputs(args)
    torch.manual_seed(0)
    if args.memory_probe == "luke":
        model, inputs = build_luke(args), luke_inputs
    elif gesa is not None:
        model, inputs = build_gesa(gesa, args), gesa_inputs
    else:
        model, inputs = build_gesa(common.import_gesa(), args, args.memory_probe.removeprefix("gesa-")), gesa_inputs
    if args.compile:
        model = torch.compile(model)
    common.step(model, inputs)
    return common.peak_step_memory(model, inputs, args.device)


def peak_memory(args: argparse.Namespace, which: str, argv: list[str], baseline_tree: Path | None = None) -> dict:
    probe = ["--memory-probe", which]
    if which == "gesa-before":
        probe += ["--baseline-tree", str(baseline_tree)]
    return common.run_probe(__file__, argv, probe, args.threads, f"memory probe for {which}")


def time_models(
    args: argparse.Namespace, steps: dict[str, Callable[[], float]]
) -> tuple[dict[str, list[float]], list[float]]:
    """Warm-up, then rounds of one timed step of each model (order flipped every round) and one plain matmul.
    `steps` maps each model's name to its timed step (the baseline's runs in its own process)."""
    for _ in range(args.warmup):
        for timed_step in steps.values():
            timed_step()
    times: dict[str, list[float]] = {name: [] for name in steps}
    matmul: list[float] = []
    for round_index in range(args.repeats):
        order = list(steps) if round_index % 2 == 0 else list(steps)[::-1]
        for name in order:
            times[name].append(steps[name]())
        matmul.extend(common.matmul_gflops(args.device, args.dtype, repeats=1))
    matmul.extend(common.matmul_gflops(args.device, args.dtype))
    return times, matmul


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    argv = common.fall_back_to_cpu(args, argv)
    common.set_clock(args.clock, args.device)
    if args.baseline_tree:
        serve_baseline(args)
        return
    if args.memory_probe:
        print(json.dumps(memory_probe(args)))
        return
    with tempfile.TemporaryDirectory(prefix="bench-encoder-") as scratch:
        run_and_report(args, argv, Path(scratch))


def run_and_report(args: argparse.Namespace, argv: list[str], scratch: Path) -> None:
    """Build, time side by side (with `--baseline`, in lockstep with its process), probe memory, print."""
    luke_inputs, gesa_inputs = make_inputs(args)
    built, weights = build_models(args)
    models = {name: (model, luke_inputs if name == "luke" else gesa_inputs) for name, model in built.items()}
    del built
    flops = {name: common.count_flops(model, inputs) for name, (model, inputs) in models.items()}
    steps = {name: partial(common.timed_step, model, inputs, args.device) for name, (model, inputs) in models.items()}
    baseline = baseline_tree = None
    if args.baseline:
        baseline_tree = export_baseline(args.baseline, scratch)
        torch.save(weights, scratch / "weights.pt")
        baseline = BaselineProcess(argv, baseline_tree, scratch / "weights.pt", args.threads)
        flops["gesa-before"] = baseline.flops
        steps["gesa-before"] = baseline.timed_step
    del weights
    try:
        agreement = agreement_with_eager(models, gesa_inputs, baseline)
        # glibc as it comes first: heap reuse, once switched on, stays on for the process
        runs = {}
        for mode in common.malloc_modes(args):
            if mode == "reuse":
                common.use_heap_reuse()
                if baseline is not None:
                    baseline.ask("heap_reuse")
            runs[mode] = time_models(args, steps)
    finally:
        if baseline is not None:
            baseline.close()
    names = list(steps)
    del models, steps

    memory = {}
    if not args.skip_memory:
        memory = {name: peak_memory(args, name, argv, baseline_tree) for name in names}

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
