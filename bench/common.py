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
"""What the GESA benchmarks share: the clock, the matmul limit, one training step, peak memory, the allocator, and
the random LUKE checkpoints the diagnostics draw.

The allocator matters on CPU: glibc's `malloc` serves every block above its mmap threshold (at most 32 MiB) with
a fresh `mmap`, so each such tensor page-faults and is zeroed by the kernel on first touch, every step. Tensors
cross 32 MiB at a size that depends on the model and the length, which bends time curves (a whole transformer
step at 8192 words, dense attention scores at 512). `use_heap_reuse()` keeps freed memory in the heap for reuse
(as jemalloc or tcmalloc do, which PyTorch's CPU tuning guide recommends), so the benchmarks can show both.
"""

from __future__ import annotations

import ctypes
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]

# mallopt parameters (malloc.h)
_M_TRIM_THRESHOLD, _M_MMAP_MAX = -1, -4
MALLOC_MODES = {
    "glibc": "glibc malloc as it comes (blocks > its mmap threshold are fresh pages every time)",
    "reuse": "heap reuse (mallopt M_MMAP_MAX=0, M_TRIM_THRESHOLD=2 GiB: freed blocks stay for reuse)",
}


def import_gesa():
    """The installed `gesa` package (`pip install -e .` or `pip install .` in the checkout), or one clear exit."""
    try:
        import gesa
    except ModuleNotFoundError as error:
        if error.name != "gesa":
            raise
        raise SystemExit(f"the benchmarks need gesa installed in this Python: pip install -e {ROOT}") from None
    return gesa


def threads_from_argv() -> None:
    """`--clock thread` needs idle OpenMP threads to sleep, not spin; OpenMP reads this before torch starts it."""
    argv = " ".join(sys.argv[1:]).replace("=", " ").split()
    if "--clock" in argv and argv[argv.index("--clock") + 1 :][:1] == ["thread"]:
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def use_heap_reuse() -> None:
    """Keep freed memory in the heap: no mmap'd blocks, no trimming (process-wide, from now on)."""
    libc = ctypes.CDLL("libc.so.6")
    if not (libc.mallopt(_M_MMAP_MAX, 0) and libc.mallopt(_M_TRIM_THRESHOLD, 2**31 - 1)):
        raise RuntimeError("mallopt refused the heap-reuse settings (is this glibc?)")


now = time.perf_counter  # the clock of every timing (`set_clock`)


def set_clock(clock: str, device: str) -> None:
    """`wall`: elapsed time; `thread`: CPU time of the main thread (CPU only, robust to other jobs on the cores)."""
    global now
    if clock == "thread" and device.startswith("cuda"):
        raise SystemExit("--clock thread measures CPU time; use the wall clock on a GPU")
    now = time.thread_time if clock == "thread" else time.perf_counter


def add_model_size_arguments(parser, layers: int, hidden: int, heads: int, ffn: int) -> None:
    """`--layers`, `--hidden`, `--heads`, `--ffn`: the timed model's size, with this benchmark's defaults."""
    parser.add_argument("--layers", type=int, default=layers)
    parser.add_argument("--hidden", type=int, default=hidden)
    parser.add_argument("--heads", type=int, default=heads)
    parser.add_argument("--ffn", type=int, default=ffn)


def encoder_sizes(args) -> dict:
    """The GESA config sizes of the encoder benchmarks' model: `--layers`, `--hidden`, `--heads`, `--ffn`, 256-wide
    entity embeddings, a 1000-word vocabulary, LUKE's dropout 0.1 unless `--no-dropout`."""
    dropout = 0.0 if args.no_dropout else 0.1
    sizes = dict(vocab_size=1000, entity_vocab_size=4, hidden_size=args.hidden, entity_emb_size=256)
    sizes.update(num_hidden_layers=args.layers, num_attention_heads=args.heads, intermediate_size=args.ffn)
    return dict(sizes, hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout)


def add_common_arguments(parser) -> None:
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument(
        "--clock",
        default="wall",
        choices=["wall", "thread"],
        help="wall: elapsed time; thread: CPU time of the main thread (CPU only, robust to other jobs on the cores)",
    )
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    parser.add_argument(
        "--malloc",
        default="both",
        choices=["glibc", "reuse", "both"],
        help="CPU allocator behaviour to time under (see bench/common.py); both: each, side by side",
    )


def fall_back_to_cpu(args, argv: list[str]) -> list[str]:
    """A CUDA run on a machine without one runs the CPU variant, saying so."""
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print("no CUDA device here: running the CPU variant instead (--device cpu --dtype float32)")
        args.device, args.dtype = "cpu", "float32"
        argv = [*argv, "--device", "cpu", "--dtype", "float32"]
    return argv


def start(parse_args: Callable, argv: list[str] | None) -> tuple:
    """A benchmark's first steps: its flags (`sys.argv` when `argv` is None) parsed, torch's threads set, a CUDA run
    fallen back to the CPU where there is none, the clock chosen; returns the flags and the argv a probe reruns."""
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    argv = fall_back_to_cpu(args, argv)
    set_clock(args.clock, args.device)
    return args, argv


def answered_probe(args, probe: Callable) -> bool:
    """In a probe process (`--probe FIRST WORDS LAST`, see `run_probe`): print `probe(args, FIRST, WORDS, LAST)` as
    one JSON line and say so; False in the main run."""
    if not args.probe:
        return False
    first, words, last = args.probe
    print(json.dumps(probe(args, first, int(words), last)))
    return True


def malloc_modes(args) -> list[str]:
    """The allocator modes to time under: only CPU runs have a choice."""
    if args.device.startswith("cuda"):
        return ["glibc"]
    return ["glibc", "reuse"] if args.malloc == "both" else [args.malloc]


def synchronize(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def step(model: torch.nn.Module, inputs: dict) -> None:
    """One training step's work: forward, a loss over word and entity states, backward."""
    out = model(**inputs)
    (out.last_hidden_state.float().mean() + out.entity_last_hidden_state.float().mean()).backward()
    model.zero_grad(set_to_none=True)


def timed_step(model: torch.nn.Module, inputs: dict, device: str) -> float:
    synchronize(device)
    start = now()
    step(model, inputs)
    synchronize(device)
    return now() - start


def matmul_gflops(device: str, dtype: str, size: int = 4096, repeats: int = 5) -> list[float]:
    """GFLOP/s of a plain `size x size` matmul in the run's dtype: the machine's practical limit."""
    a = torch.randn(size, size, device=device, dtype=getattr(torch, dtype))
    b = torch.randn(size, size, device=device, dtype=getattr(torch, dtype))
    a @ b
    rates = []
    for _ in range(repeats):
        synchronize(device)
        start = now()
        a @ b
        synchronize(device)
        rates.append(2 * size**3 / (now() - start) / 1e9)
    return rates


def count_flops(model: torch.nn.Module, inputs: dict, run: Callable | None = None) -> int:
    """FLOPs of one step, `run(model, inputs)` (default `step`): matrix products, as GFLOP/s is usually reported."""
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter:
        (run or step)(model, inputs)
    return counter.get_total_flops()


def peak_step_memory(model: torch.nn.Module, inputs: dict, device: str) -> dict:
    """The most memory one step ever held beyond what was resident before it (run after a warm-up step).

    CUDA: `max_memory_allocated`. CPU has no allocator statistics: free heap goes back to the OS
    (`malloc_trim`), the kernel's resident high-water mark is reset (`/proc/self/clear_refs`), and the peak is
    `VmHWM` after the step minus `VmRSS` before it. Run it in a fresh process per model, under glibc as it comes.
    """
    if device.startswith("cuda"):
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
        step(model, inputs)
        torch.cuda.synchronize()
        return {"peak_bytes": torch.cuda.max_memory_allocated() - before, "method": "cuda max_memory_allocated"}
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    Path("/proc/self/clear_refs").write_text("5")
    before = _proc_status("VmRSS")
    step(model, inputs)
    return {"peak_bytes": _proc_status("VmHWM") - before, "method": "RSS high-water mark (VmHWM - VmRSS before)"}


def _proc_status(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"{field} not in /proc/self/status")


def run_probe(script: str, argv: list[str], probe: list[str], threads: int, what: str) -> dict:
    """Run `script` again in a fresh process with `probe` appended (a memory or scaling probe) and return the JSON
    object its last output line holds; a failure raises with the probe's stderr."""
    import subprocess

    command = [sys.executable, script, *argv, *probe]
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    result = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"{what} failed:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def median(values: list[float]) -> float:
    return statistics.median(values)


def save_random_luke(config, tokenizer, seed: int, path: Path) -> Path:
    """A `transformers.LukeModel` drawn from `config` with `seed`, its entity-aware queries (w2e, e2w, e2e) set to the
    word query as LUKE's released checkpoints leave them, saved at `path` with `tokenizer` like a Hub checkpoint."""
    from transformers import LukeModel

    torch.manual_seed(seed)
    model = LukeModel(config)
    with torch.no_grad():
        for layer in model.encoder.layer:
            attention = layer.attention.self
            for name in ("w2e_query", "e2w_query", "e2e_query"):
                getattr(attention, name).weight.copy_(attention.query.weight)
                getattr(attention, name).bias.copy_(attention.query.bias)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path
