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
"""bfloat16 numerics of each GESA attention path against a float64 reference: outputs and every gradient.

One GESA encoder (luke-large's width by default: hidden 1024, 16 heads, FFN 4096; every label family on, a
ReCoRD-shaped batch), its weights drawn once. The reference is the `"eager"` path (Eq. 1 written plainly) with the
model in float64. Each path then runs the same step in bfloat16, in two ways a user trains:
- `pure`: the model cast to bfloat16 (`model.to(torch.bfloat16)`, what `bench_encoder.py --dtype bfloat16` times);
- `autocast`: float32 weights under `torch.autocast("cpu", torch.bfloat16)` (what `TrainingArguments(bf16=True)`
  does), the gradients landing in float32.
For every tensor (the word and entity states, each parameter's gradient) the error is
`||x - x_ref|| / ||x_ref||` (Frobenius; and the largest entry's error relative to the largest reference entry), and
gradients are grouped (label table, the four queries, key, value, attention output, FFN, LayerNorms, embeddings),
the worst tensor of a group shown. A path loses precision where its error stands well above the `eager` path's in
the same dtype (the same arithmetic without a kernel); `luke` (transformers' `LukeModel`, same sizes, sdpa) is
bf16's floor for the architecture without labels.

    python bench/bf16_numerics.py                       # 2 layers, 2 x (512 words + 32 entities), dense and window
    python bench/bf16_numerics.py --layers 24 --batch 1 # the depth users fine-tune at (float64 on CPU: minutes)
    python bench/bf16_numerics.py --device cuda --layers 24 --batch 8   # on a GPU (the reference stays float64)

Window paths (`--attention-window`, default 128) have their own float64 eager reference with the same window.
FlexAttention has no backward on CPU and is measured on CUDA only.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import sys
from collections import defaultdict

import torch
from common import import_gesa

GROUPS = (
    ("label table", ("label_embeddings",)),
    ("queries", ("w2w_query", "w2e_query", "e2w_query", "e2e_query")),
    ("key", ("attention.self.key",)),
    ("value", ("attention.self.value",)),
    ("attention output", ("attention.output.dense",)),
    ("FFN", ("intermediate.dense", "output.dense")),
    ("LayerNorm", ("LayerNorm",)),
    ("embeddings", ("embeddings",)),
)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--hidden", type=int, default=1024)
    parser.add_argument("--heads", type=int, default=16)
    parser.add_argument("--ffn", type=int, default=4096)
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--words", type=int, default=512)
    parser.add_argument("--entities", type=int, default=32)
    parser.add_argument("--question", type=int, default=24, help="question words (global), one is the placeholder")
    parser.add_argument("--attention-window", type=int, default=128, help="the window paths' window (0: none)")
    parser.add_argument("--modes", nargs="+", default=["pure", "autocast"], choices=["pure", "autocast"])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args(argv)


def gesa_config(gesa, args: argparse.Namespace, window: int | None):
    return gesa.GesaConfig(
        vocab_size=1000,
        entity_vocab_size=4,
        hidden_size=args.hidden,
        entity_emb_size=256,
        num_hidden_layers=args.layers,
        num_attention_heads=args.heads,
        intermediate_size=args.ffn,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        attention_window=window,
    )


def make_inputs(args: argparse.Namespace) -> tuple[dict, dict]:
    """A ReCoRD-shaped batch (LUKE's inputs, and GESA's with globals, the placeholder and the graph's ids)."""
    g = torch.Generator().manual_seed(args.seed)
    B, L, E, Q = args.batch, args.words, args.entities, args.question
    global_attention_mask = torch.zeros(B, L, dtype=torch.long)
    global_attention_mask[:, 0] = 1
    global_attention_mask[:, 1 : 1 + Q] = 2
    entity_position_ids = torch.full((B, E, 4), -1)
    entity_position_ids[:, 0, 0] = Q // 2
    starts = torch.randint(Q + 3, L - 3, (B, E), generator=g)
    for offset in range(2):
        entity_position_ids[:, 1:, offset] = starts[:, 1:] + offset
    luke = dict(
        input_ids=torch.randint(5, 1000, (B, L), generator=g),
        attention_mask=torch.ones(B, L, dtype=torch.long),
        entity_ids=torch.full((B, E), 2),
        entity_attention_mask=torch.ones(B, E, dtype=torch.long),
        entity_position_ids=entity_position_ids,
    )
    gesa = dict(
        luke,
        global_attention_mask=global_attention_mask,
        placeholder_entity_mask=(torch.arange(E) == 0).long().expand(B, E).clone(),
        entity_string_ids=torch.randint(0, max(1, E // 3), (B, E), generator=g),
        entity_sentence_ids=starts * 20 // L,
    )
    return luke, gesa


def spread_label_table(model: torch.nn.Module, generator: torch.Generator) -> None:
    """Label rows of a trained model's size (the default init starts most rows at zero, which hides their error)."""
    for layer in model.encoder.layer:
        table = layer.attention.self.label_embeddings
        if table is not None:
            with torch.no_grad():
                table.weight.normal_(0.0, 0.5, generator=generator)


def step(model: torch.nn.Module, inputs: dict, weights: dict, mode: str | None, device: str) -> dict:
    """One forward + backward of a fixed random weighting of the word and entity states; the states and every
    parameter gradient in float64."""
    model.zero_grad(set_to_none=True)
    autocast = torch.autocast(device.split(":")[0], torch.bfloat16) if mode == "autocast" else contextlib.nullcontext()
    with autocast:
        out = model(**inputs)
    words, entities = out.last_hidden_state, out.entity_last_hidden_state
    loss = (words.double() * weights["words"]).sum() + (entities.double() * weights["entities"]).sum()
    loss.backward()
    results = {"word states": words.detach().double().cpu(), "entity states": entities.detach().double().cpu()}
    for name, parameter in model.named_parameters():
        if parameter.grad is not None:
            results[name] = parameter.grad.detach().double().cpu()
    return results


def errors(result: dict, reference: dict) -> dict[str, tuple[float, float]]:
    """Per tensor: (||x - ref|| / ||ref||, max |x - ref| / max |ref|)."""
    out = {}
    for name, ref in reference.items():
        got = result.get(name)
        if got is None:
            out[name] = (math.inf, math.inf)
            continue
        scale, peak = ref.norm().item(), ref.abs().max().item()
        diff = got - ref
        out[name] = (diff.norm().item() / max(scale, 1e-300), diff.abs().max().item() / max(peak, 1e-300))
    return out


def grouped(per_tensor: dict[str, tuple[float, float]]) -> dict[str, tuple[float, float]]:
    """The worst tensor of each group (outputs kept by name)."""
    groups: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for name, value in per_tensor.items():
        if name.endswith("states"):
            groups[name].append(value)
            continue
        for group, keys in GROUPS:
            if any(key in name for key in keys):
                groups[group].append(value)
                break
        else:
            groups["other"].append(value)
    return {group: (max(v[0] for v in values), max(v[1] for v in values)) for group, values in groups.items()}


def build(gesa, args: argparse.Namespace, window: int | None) -> torch.nn.Module:
    torch.manual_seed(args.seed)
    model = gesa.GesaModel(gesa_config(gesa, args, window), add_pooling_layer=False)
    spread_label_table(model, torch.Generator().manual_seed(args.seed + 1))
    return model.train()


def run_setting(gesa, args: argparse.Namespace, window: int | None, paths: list[str], inputs: dict) -> dict:
    """Every path's grouped errors in every mode, against the float64 eager reference with the same window."""
    base = build(gesa, args, window)
    state = {k: v.clone() for k, v in base.state_dict().items()}
    device = args.device
    inputs = {k: v.to(device) for k, v in inputs.items()}
    g = torch.Generator().manual_seed(args.seed + 2)
    B, L, E = args.batch, args.words, args.entities
    weights = {
        "words": torch.randn(B, L, args.hidden, generator=g, dtype=torch.float64).to(device),
        "entities": torch.randn(B, E, args.hidden, generator=g, dtype=torch.float64).to(device),
    }
    reference_model = base.to(device, torch.float64)
    reference_model.set_attn_implementation("eager")
    reference = step(reference_model, inputs, weights, None, device)
    del reference_model
    results = {}
    for mode in args.modes:
        for path in paths:
            model = build(gesa, args, window)
            model.load_state_dict(state)
            model = model.to(device, torch.bfloat16 if mode == "pure" else torch.float32)
            model.set_attn_implementation(path)
            results[(mode, path)] = grouped(errors(step(model, inputs, weights, mode, device), reference))
            print(f"  measured {mode:<8} {path}", file=sys.stderr, flush=True)
    return results


def run_luke(args: argparse.Namespace, inputs: dict) -> dict:
    """transformers' LukeModel (entity-aware attention, sdpa) at the same sizes: bf16's floor without labels."""
    from transformers import LukeConfig, LukeModel

    torch.manual_seed(args.seed)
    config = LukeConfig(
        vocab_size=1000,
        entity_vocab_size=4,
        hidden_size=args.hidden,
        entity_emb_size=256,
        num_hidden_layers=args.layers,
        num_attention_heads=args.heads,
        intermediate_size=args.ffn,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        max_position_embeddings=max(514, args.words + 2),
        use_entity_aware_attention=True,
    )
    base = LukeModel(config, add_pooling_layer=False).train()
    state = {k: v.clone() for k, v in base.state_dict().items()}
    device = args.device
    inputs = {k: v.to(device) for k, v in inputs.items()}
    g = torch.Generator().manual_seed(args.seed + 2)
    weights = {
        "words": torch.randn(args.batch, args.words, args.hidden, generator=g, dtype=torch.float64).to(device),
        "entities": torch.randn(args.batch, args.entities, args.hidden, generator=g, dtype=torch.float64).to(device),
    }
    reference = step(base.to(device, torch.float64), inputs, weights, None, device)
    results = {}
    for mode in args.modes:
        model = LukeModel(config, add_pooling_layer=False).train()
        model.load_state_dict(state)
        model = model.to(device, torch.bfloat16 if mode == "pure" else torch.float32)
        results[(mode, "luke")] = grouped(errors(step(model, inputs, weights, mode, device), reference))
    return results


def print_table(title: str, results: dict, modes: list[str]) -> None:
    columns = sorted({path for _, path in results}, key=lambda p: (p != "luke", p != "eager", p))
    rows = [row for row in ["word states", "entity states"] + [g for g, _ in GROUPS] + ["other"]]
    rows = [row for row in rows if any(row in table for table in results.values())]
    for mode in modes:
        print(f"\n{title}, {mode}: ||x - x64|| / ||x64|| (max-entry error / max entry)")
        print(f"  {'tensor':<17}" + "".join(f"{c:>22}" for c in columns))
        for row in rows:
            cells = []
            for column in columns:
                value = results.get((mode, column), {}).get(row)
                cells.append("-" if value is None else f"{value[0]:.2e} ({value[1]:.1e})")
            print(f"  {row:<17}" + "".join(f"{cell:>22}" for cell in cells))


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    gesa = import_gesa()
    luke_inputs, gesa_inputs = make_inputs(args)
    print(
        f"bf16 vs float64: {args.layers} layers, hidden {args.hidden}, {args.heads} heads, batch {args.batch} x "
        f"({args.words} words + {args.entities} entities), device {args.device}"
    )
    dense_paths = ["eager", "gesa_bias"] + (["gesa_fused"] if args.device == "cpu" else ["flex_attention"])
    print_table("LUKE (transformers LukeModel, sdpa)", run_luke(args, luke_inputs), args.modes)
    print_table("GESA, dense attention", run_setting(gesa, args, None, dense_paths, gesa_inputs), args.modes)
    if args.attention_window:
        window_paths = ["eager", "gesa_bias", "gesa_windowed"]
        results = run_setting(gesa, args, args.attention_window, window_paths, gesa_inputs)
        print_table(f"GESA, attention_window={args.attention_window}", results, args.modes)


if __name__ == "__main__":
    main()
