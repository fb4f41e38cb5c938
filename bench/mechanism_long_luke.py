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
"""Does the long variant read text more than 4,000 words away? A mechanism check at toy size (seed 002, 4.1.1).

The task (generated here): a document names its main entity first, and states every entity's attribute far away::

    <s> N_x . filler ... (4,000+ words) ... N_x is C_x . filler ... N_x is C_x . filler </s>

The answer is the attribute of the title's entity N_x (one of `--attributes` values, chance 1 / that), classified by a
linear head from the title word's last state. The statement lies more than `--distance` words after the title,
written `--mentions` times at different places there (a stronger signal for a tiny model's first steps); with
`--entities` above 1 each place also states other entities' attributes, drawn independently, so the title's word
must reach the statement that names it. Rows, each from one tiny random LUKE built here per seed (`LukeModel.save_pretrained`, then the
conversion users run, `from_luke_pretrained`):

- `long`: `LongLukeModel`, windows `--window`, the title word (a task token, `global_attention_mask` 2) and `<s>`,
  `</s>` global, no random keys: the path is title -> its name in the statement (global attention), which read the
  attribute beside it through the window;
- `long_random`: no global word, BigBird's random key blocks (`--random_blocks` of 64) in every layer;
- `long_dilation`: no global word, no random keys, the top layer dilated (`--dilation`) so that the window stack's
  reach exceeds the distance;
- `control`: the long variant with global and random attention off (no global word, no random keys): the window
  stack reaches `sum(w / 2)` words, less than the distance, so it cannot (chance expected);
- `pieces`: LUKE (`--variant luke`: GESA's `ablation="luke"`) on the document's 512-token pieces, as SciREX's
  baselines read it: the title's piece (the other pieces are encoded apart and cannot reach the title's state, so
  only its piece is computed); chance expected;
- `pieces_near`: the easy case: the same task with the statements inside the title's piece (within 300 words): LUKE on
  pieces must learn it, or its far-row chance says nothing.

Each run trains `--steps` steps (AdamW, `--learning_rate`, batch `--batch_size`) on documents of its seed and scores
`--eval_size` documents of another seed; a run "learned" when its accuracy is at least halfway between chance and
100%. Results are written to `OUTPUT_DIR/results.json` as each run finishes.

    OMP_NUM_THREADS=1 python bench/mechanism_long_luke.py --output_dir mechanism_long_out
    python bench/mechanism_long_luke.py --from_results mechanism_long_out/results.json
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import tempfile
import time
from pathlib import Path

import torch
from torch import nn

ROWS = ("long", "control", "pieces", "pieces_near", "long_random", "long_dilation")
# token ids of the generated documents: LUKE's specials, then the words of the task
BOS, PAD, EOS, IS, STOP = 0, 1, 2, 5, 6
NAMES, ATTRIBUTES, FILLER = range(10, 60), range(60, 76), range(100, 300)
VOCAB = 300
PIECE = 512


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output_dir", default="", help="where results.json goes (required unless --from_results)")
    parser.add_argument("--rows", default="long,control,pieces,pieces_near", help=f"comma-separated rows of {ROWS}")
    parser.add_argument("--seeds", default="0,1,2,3,4")
    parser.add_argument(
        "--distance", type=int, default=4000, help="the statements lie farther than this from the title"
    )
    parser.add_argument("--length", type=int, default=4200, help="words per document (with <s> and </s>)")
    parser.add_argument("--entities", type=int, default=1,
                        help="statements per document, far from the title: one names the title's entity, the others "
                        "other entities (>1: the title must also match its name)")  # fmt: skip
    parser.add_argument("--attributes", type=int, default=4, help="attribute values (chance = 1 / this)")
    parser.add_argument("--mentions", type=int, default=4,
                        help="how many times the statements are written, each time at another place beyond the "
                        "distance (a stronger signal for the tiny model's first steps)")  # fmt: skip
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--batch_size", type=int, default=8)
    parser.add_argument("--learning_rate", type=float, default=1e-2)
    parser.add_argument("--eval_size", type=int, default=128)
    parser.add_argument("--hidden_size", type=int, default=32)
    parser.add_argument("--heads", type=int, default=2)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--window", type=int, default=64, help="the long rows' attention_window (w / 2 each side)")
    parser.add_argument("--random_blocks", type=int, default=3)
    parser.add_argument("--dilation", type=int, default=128, help="the top layer's dilation of long_dilation")
    parser.add_argument("--log_every", type=int, default=0, help="print the mean loss every N steps (0: never)")
    parser.add_argument("--from_results", default="", help="print a results.json written before, no training")
    args = parser.parse_args(argv)
    args.row_list = [row for row in args.rows.split(",") if row]
    unknown = sorted(set(args.row_list) - set(ROWS))
    if unknown:
        raise SystemExit(f"mechanism_long_luke.py: --rows: unknown {unknown}; choose from {list(ROWS)}")
    args.seed_list = [int(seed) for seed in args.seeds.split(",") if seed]
    if not args.from_results and not args.output_dir:
        raise SystemExit("mechanism_long_luke.py: --output_dir is required (where results.json goes)")
    if args.length < args.distance + 5 * args.entities + 4:
        raise SystemExit("mechanism_long_luke.py: --length must leave room for the statements beyond --distance")
    return args


# ----------------------------------------------------------------------------------------------- the task


def make_documents(count: int, seed: int, args: argparse.Namespace, near: bool = False) -> tuple[torch.Tensor, ...]:
    """`count` documents `(count, length)` and their answers `(count,)` (attribute indices): `<s>`, the title name,
    `.`, filler, the statements (beyond `distance` words from the title, or within 300 with `near`), filler, `</s>`."""
    rng = random.Random(seed)
    documents = torch.empty(count, args.length, dtype=torch.long)
    answers = torch.empty(count, dtype=torch.long)
    attributes = list(ATTRIBUTES)[: args.attributes]
    for n in range(count):
        names = rng.sample(list(NAMES), args.entities)
        values = [rng.randrange(args.attributes) for _ in names]
        words = [rng.choice(FILLER) for _ in range(args.length)]
        words[0], words[1], words[2], words[-1] = BOS, names[0], STOP, EOS
        span = 4 * args.entities
        low, high = (10, 300 - span) if near else (args.distance + 2, args.length - span - 2)
        # the statements' places: `mentions` slots of `span` words, apart, between low and high
        slots = sorted(rng.sample(range((high - low) // span), args.mentions))
        for slot in slots:
            start = low + slot * span
            order = list(range(args.entities))
            rng.shuffle(order)
            for place, e in enumerate(order):
                words[start + 4 * place : start + 4 * place + 4] = [names[e], IS, attributes[values[e]], STOP]
        documents[n] = torch.tensor(words)
        answers[n] = values[0]
    return documents, answers


# ----------------------------------------------------------------------------------------------- the models


def build_luke(folder: Path, args: argparse.Namespace, seed: int) -> Path:
    """A tiny random LUKE saved as a Hub checkpoint (luke-large's layout: 514 positions, LUKE's own init),
    initialised by `seed`."""
    from transformers import LukeConfig, LukeModel

    torch.manual_seed(seed)
    config = LukeConfig(
        vocab_size=VOCAB, entity_vocab_size=4, hidden_size=args.hidden_size, entity_emb_size=args.hidden_size,
        num_hidden_layers=args.layers, num_attention_heads=args.heads, intermediate_size=2 * args.hidden_size,
        max_position_embeddings=514, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
    )  # fmt: skip
    LukeModel(config).save_pretrained(folder)
    return folder


class TitleClassifier(nn.Module):
    """The encoder, then a linear head on the title word's last state (position 1)."""

    def __init__(self, encoder: nn.Module, attributes: int, global_title: bool, pieces: bool) -> None:
        super().__init__()
        self.encoder, self.head = encoder, nn.Linear(encoder.config.hidden_size, attributes)
        self.global_title, self.pieces = global_title, pieces

    def forward(self, documents: torch.Tensor) -> torch.Tensor:
        if self.pieces:  # the title's piece: <s> + 510 words + </s>
            piece = documents[:, : PIECE - 1]
            ids = torch.cat([piece, torch.full_like(piece[:, :1], EOS)], dim=1)
            states = self.encoder(input_ids=ids).last_hidden_state
        else:
            mask = torch.zeros_like(documents)
            if self.global_title:  # <s>, </s> and the title word (a task token)
                mask[:, 0], mask[:, -1], mask[:, 1] = 1, 1, 2
            states = self.encoder(input_ids=documents, global_attention_mask=mask).last_hidden_state
        return self.head(states[:, 1])


def build_model(row: str, luke: Path, args: argparse.Namespace) -> TitleClassifier:
    from gesa import GesaModel, LongLukeModel

    if row in ("pieces", "pieces_near"):
        encoder = GesaModel.from_luke_pretrained(str(luke), ablation="luke")
        return TitleClassifier(encoder, args.attributes, global_title=False, pieces=True)
    pattern = dict(attention_window=args.window, num_random_blocks=0, special_tokens_global=False)
    if row == "long_random":
        pattern["num_random_blocks"] = args.random_blocks
    elif row == "long_dilation":
        pattern["attention_dilation"] = [1] * (args.layers - 1) + [args.dilation]
    encoder = LongLukeModel.from_luke_pretrained(str(luke), max_position_embeddings=args.length + 2, **pattern)
    return TitleClassifier(encoder, args.attributes, global_title=row == "long", pieces=False)


def reach(row: str, args: argparse.Namespace) -> int:
    """How far the title word's last state can read without global words or random keys: the window stack."""
    dilations = [1] * (args.layers - 1) + [args.dilation if row == "long_dilation" else 1]
    return sum(args.window // 2 * d for d in dilations)


# ----------------------------------------------------------------------------------------------- the runs


def run_one(row: str, seed: int, args: argparse.Namespace, scratch: Path) -> dict:
    luke = build_luke(scratch / f"luke-{seed}", args, seed)
    torch.manual_seed(seed)
    model = build_model(row, luke, args).train()
    near = row == "pieces_near"
    train, train_answers = make_documents(args.steps * args.batch_size, 1000 + seed, args, near)
    dev, dev_answers = make_documents(args.eval_size, 2000 + seed, args, near)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.learning_rate)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1 - step / args.steps)
    start, losses = time.perf_counter(), []
    for step in range(args.steps):
        batch = slice(step * args.batch_size, (step + 1) * args.batch_size)
        loss = nn.functional.cross_entropy(model(train[batch]), train_answers[batch])
        loss.backward()
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()
        losses.append(float(loss.detach()))
        if args.log_every and (step + 1) % args.log_every == 0:
            recent = losses[-args.log_every :]
            print(f"  {row} seed {seed} step {step + 1}: loss {sum(recent) / len(recent):.3f}", flush=True)
    model.eval()
    correct = 0
    with torch.no_grad():
        for first in range(0, args.eval_size, args.batch_size):
            logits = model(dev[first : first + args.batch_size])
            correct += int((logits.argmax(-1) == dev_answers[first : first + args.batch_size]).sum())
    tail = losses[-max(1, args.steps // 10) :]
    return {"accuracy": 100.0 * correct / args.eval_size, "final_loss": sum(tail) / len(tail),
            "seconds": time.perf_counter() - start}  # fmt: skip


def run_all(args: argparse.Namespace) -> dict:
    output = Path(args.output_dir)
    output.mkdir(parents=True, exist_ok=True)
    results = {"arguments": {k: v for k, v in vars(args).items() if k not in ("row_list", "seed_list")}, "rows": {}}
    print(f"{len(args.row_list) * len(args.seed_list)} runs ({len(args.row_list)} rows x {len(args.seed_list)} seeds)")
    with tempfile.TemporaryDirectory(prefix="gesa-long-mechanism-") as scratch:
        for row in args.row_list:
            entry = results["rows"].setdefault(row, {"seeds": [], "accuracy": [], "final_loss": [], "seconds": []})
            for seed in args.seed_list:
                result = run_one(row, seed, args, Path(scratch))
                entry["seeds"].append(seed)
                for key in ("accuracy", "final_loss", "seconds"):
                    entry[key].append(result[key])
                print(f"{row} seed {seed}: accuracy {result['accuracy']:.1f} (final loss {result['final_loss']:.3f}, "
                      f"{result['seconds']:.0f} s)", flush=True)  # fmt: skip
                (output / "results.json").write_text(json.dumps(results, indent=2), encoding="utf-8")
    return results


# ----------------------------------------------------------------------------------------------- the table


def mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else math.nan


def spread(values: list[float]) -> float:
    if len(values) < 2:
        return 0.0
    center = mean(values)
    return math.sqrt(sum((value - center) ** 2 for value in values) / (len(values) - 1))


def table(results: dict) -> list[str]:
    args = results["arguments"]
    chance = 100.0 / args["attributes"]
    learned_at = (chance + 100.0) / 2
    lines = [
        f"accuracy (%) on {args['eval_size']} held-out documents of {args['length']} words (statements beyond "
        f"{args['distance']} words from the title; pieces_near: within 300) after {args['steps']} steps of "
        f"{args['batch_size']}; chance {chance:.1f}; learned: >= {learned_at:.1f}; window {args['window']} "
        f"(w / 2 each side), {args['layers']} layers, width {args['hidden_size']}",
        "",
        "| row | mean ± spread | per seed | learned | reach without global / random |",
        "|---|---|---|---|---|",
    ]
    namespace = argparse.Namespace(**args)
    for name, entry in results["rows"].items():
        accuracy = entry["accuracy"]
        learned = sum(a >= learned_at for a in accuracy)
        far = "-" if name.startswith("pieces") else f"{reach(name, namespace)} words"
        lines.append(f"| {name} | {mean(accuracy):.1f} ± {spread(accuracy):.1f} | "
                     f"{', '.join(f'{a:.1f}' for a in accuracy)} | {learned}/{len(accuracy)} | {far} |")  # fmt: skip
    return lines


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.from_results:
        results = json.loads(Path(args.from_results).read_text(encoding="utf-8"))
    else:
        torch.set_num_threads(max(1, torch.get_num_threads()))
        results = run_all(args)
    print("\n".join(table(results)))


if __name__ == "__main__":
    sys.exit(main())
