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
"""Does the graph help? Train ablation presets on synthetic multi-hop cloze tasks and compare their curves.

Everything is built here, offline: the tasks (``synthetic_gesa``), a byte-level BPE trained on them, a random tiny
LUKE (width 64, 4 layers, 4 heads by default) saved like a Hub checkpoint, and from it one GESA per preset
(``from_luke_pretrained``), trained with ``Trainer`` on ``GesaProcessor`` features. It prints, per preset and label
init, the training loss every ``--logging_steps``, the step at which the loss leaves the constant-score level and the
dev exact match per hop count (mean and spread over ``--seeds``) with a verdict against LUKE per hop count
("inconclusive" while a run has not learned the one-hop control), and saves the curves as a PNG.

Constant-score level: the training loss of a model giving every candidate the same score, i.e. the binary entropy
``H(p)`` of the training features' positive rate ``p`` (0.234 for one answer among 16 candidates). A run *leaves* it at
the first logging step whose logged training loss is below ``(1 - --leave_margin) * H(p)``.

    OMP_NUM_THREADS=1 python bench/diagnose_graph.py --output_dir diagnostic_out/defaults

runs `luke`, `full` and `no_question_mentions` on seeds 0, 1, 2 (600 steps each, the one-hop control beside two
hops) and prints the number of runs and a time estimate first. ``--output_dir`` is required.

``--inits``: ``old`` = every label row at ``initializer_range`` (the init before the entity rows were scaled);
``new`` = the default: entity label rows at ``ENTITY_LABEL_LOGIT_STD``, mention rows turned towards the ``[MASK]``
entity's queries (``GesaPreTrainedModel.align_mention_label_rows``); a number = that label-logit std, mention rows
turned. ``luke`` has no label tables: it runs once.
"""

from __future__ import annotations

import json
import logging
import math
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import torch
from datasets import Dataset
from transformers import HfArgumentParser, LukeConfig, LukeModel, LukeTokenizer, Trainer, TrainingArguments
from transformers.trainer_callback import PrinterCallback
from transformers.utils import logging as hf_logging

from gesa.configuration_gesa import ABLATION_PRESETS
from gesa.conversion_gesa import convert_luke_checkpoint
from gesa.modeling_gesa import ENTITY_LABEL_LOGIT_STD, GesaForEntitySpanQA, GesaPreTrainedModel
from gesa.processing_gesa import GesaProcessor
from gesa.synthetic_gesa import generate_records, hop_count

ENTITY_VOCAB = {"[PAD]": 0, "[UNK]": 1, "[MASK]": 2, "[MASK2]": 3}
SPECIAL_TOKENS = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
EVAL_COLUMNS = ("example_id", "candidate_texts", "answers")


@dataclass
class DiagnosticArguments:
    presets: str = field(
        default="luke,full,no_question_mentions",
        metadata={"help": "Comma-separated ABLATION_PRESETS names, or 'all' (every preset)."},
    )
    inits: str = field(
        default="new",
        metadata={"help": "Entity label row init per GESA run: 'old' (initializer_range), 'new', or a logit std."},
    )
    seeds: str = field(
        default="0,1,2",
        metadata={"help": "Comma-separated seeds (tiny LUKE, model init, data order); a verdict needs 3 or more."},
    )
    hops: str = field(
        default="1,2",
        metadata={"help": "Hop counts of the tasks (2, 3); the one-hop control (1) always runs beside them."},
    )
    control_em: float = field(
        default=50.0,
        metadata={"help": "Dev EM on the one-hop control a run must reach to count as having learned the task."},
    )
    curriculum_steps: int = field(
        default=0,
        metadata={"help": "Train this many steps on one-hop queries only, then the rest of --max_steps on all hops."},
    )
    pairs: int = field(default=4, metadata={"help": "Chains (cities) per passage."})
    distractors: int = field(default=0, metadata={"help": "'W visited CITY.' sentences per passage."})
    train_size: int = field(default=2000, metadata={"help": "Training records (hop counts cycle)."})
    eval_size: int = field(default=200, metadata={"help": "Dev records (hop counts cycle)."})
    data_seed: int = field(default=0, metadata={"help": "Seed of the generated data (the same for every run)."})
    # at these defaults `full` learns the one-hop control on every seed of 0-5 (docs/diagnostic.md)
    max_steps: int = field(default=600, metadata={"help": "Training steps per run."})
    batch_size: int = field(default=16)
    learning_rate: float = field(default=1e-3, metadata={"help": "Peak learning rate (linear decay to 0)."})
    logging_steps: int = field(default=50)
    leave_margin: float = field(default=0.05, metadata={"help": "Relative margin below the constant-score loss."})
    hidden_size: int = field(default=64)
    num_hidden_layers: int = field(default=4)
    num_attention_heads: int = field(default=4)
    output_dir: str = field(
        default="",
        metadata={"help": "Required: the folder results.json and curves.png are written to (made if missing)."},
    )
    plot_title: str = field(default="")
    from_results: str = field(
        default="",
        metadata={
            "help": "A results.json written before (also by a stopped run): print its table and plot, no training."
        },
    )

    def __post_init__(self) -> None:
        names = list(ABLATION_PRESETS) if self.presets == "all" else self.presets.split(",")
        unknown = [name for name in names if name not in ABLATION_PRESETS]
        if unknown:
            raise SystemExit(
                f"diagnose_graph.py: --presets: unknown {unknown}; choose from {sorted(ABLATION_PRESETS)}"
            )
        self.preset_list = names
        self.init_list = [parse_init(value) for value in self.inits.split(",")]
        self.seed_list = [int(seed) for seed in self.seeds.split(",")]
        # the control beside every multi-hop task: without it a multi-hop failure cannot be read
        self.hop_list = sorted({1, *(int(hop) for hop in self.hops.split(","))})
        if self.leave_margin < 0 or self.max_steps < self.logging_steps:
            raise SystemExit("diagnose_graph.py: --leave_margin must be >= 0 and --max_steps >= --logging_steps")
        if not 0 <= self.curriculum_steps < self.max_steps:
            raise SystemExit("diagnose_graph.py: --curriculum_steps must be in [0, --max_steps)")


def parse_init(value: str) -> tuple[str, float | None]:
    """'old' -> ('old', None); 'new' -> ('new', ENTITY_LABEL_LOGIT_STD); '0.5' -> ('0.5', 0.5)."""
    if value == "old":
        return value, None
    if value == "new":
        return value, ENTITY_LABEL_LOGIT_STD
    try:
        return value, float(value)
    except ValueError:
        raise SystemExit(f"diagnose_graph.py: --inits: {value!r} is not 'old', 'new' or a number") from None


def train_tokenizer(texts: list[str], directory: Path) -> LukeTokenizer:
    """A byte-level BPE (RoBERTa's layout) trained on the generated texts, as LUKE's tokenizer."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(
        vocab_size=600,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    backend.train_from_iterator(texts, trainer=trainer)
    model = json.loads(backend.to_str())["model"]
    merges = [" ".join(merge) if isinstance(merge, list) else merge for merge in model["merges"]]
    (directory / "vocab.json").write_text(json.dumps(model["vocab"]), encoding="utf-8")
    (directory / "merges.txt").write_text("#version: 0.2\n" + "\n".join(merges) + "\n", encoding="utf-8")
    return LukeTokenizer(
        vocab=str(directory / "vocab.json"),
        merges=str(directory / "merges.txt"),
        entity_vocab=dict(ENTITY_VOCAB),
        task=None,
    )


def build_tiny_luke(args: DiagnosticArguments, tokenizer: LukeTokenizer, seed: int, path: Path) -> Path:
    """A random LUKE saved like a Hub checkpoint; entity-aware queries tied to the word query as in released LUKE."""
    config = LukeConfig(
        vocab_size=len(tokenizer),
        entity_vocab_size=len(ENTITY_VOCAB),
        hidden_size=args.hidden_size,
        entity_emb_size=args.hidden_size // 2,
        num_hidden_layers=args.num_hidden_layers,
        num_attention_heads=args.num_attention_heads,
        intermediate_size=4 * args.hidden_size,
        max_position_embeddings=260,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
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


def constant_score_loss(features: Dataset) -> float:
    """Binary entropy of the positive rate over real candidates (the placeholder is no candidate)."""
    positives = sum(sum(labels[1:]) for labels in features["labels"])
    candidates = sum(sum(mask[1:]) for mask in features["entity_attention_mask"])
    p = positives / candidates
    return -(p * math.log(p) + (1 - p) * math.log(1 - p))


def convert(luke_dir: Path, preset: str, std: float | None, processor: GesaProcessor, seed: int) -> Any:
    previous = GesaPreTrainedModel.entity_label_logit_std
    GesaPreTrainedModel.entity_label_logit_std = std
    try:
        torch.manual_seed(seed)
        model = GesaForEntitySpanQA.from_luke_pretrained(luke_dir, ablation=preset)
    finally:
        GesaPreTrainedModel.entity_label_logit_std = previous
    model.init_added_word_embeddings(processor.added_token_sources())
    return model


def exact_match_per_hop(trainer: Trainer, dev: Dataset, dev_columns: dict[str, list]) -> dict[int, float]:
    logits = trainer.predict(dev).predictions
    predicted = GesaProcessor.post_process_predictions(
        dev_columns["example_id"], dev_columns["candidate_texts"], logits
    )
    answers = dict(zip(dev_columns["example_id"], dev_columns["answers"], strict=True))
    per_hop: dict[int, list[float]] = {}
    for example_id, text in predicted.items():
        per_hop.setdefault(hop_count(example_id), []).append(float(text in answers[example_id]))
    return {hop: 100.0 * sum(hits) / len(hits) for hop, hits in sorted(per_hop.items())}


def run_one(
    args, luke_dir, processor, train, dev, dev_columns, preset, std, seed, workdir, one_hop_train=None
) -> dict[str, Any]:
    """Train one model; with `--curriculum_steps`, first that many steps on `one_hop_train`, then the rest on
    `train` (a second `Trainer` on the same model: the learning rate schedule starts again)."""
    model = convert(luke_dir, preset, std, processor, seed)
    phases = [(train, args.max_steps)]
    if args.curriculum_steps:
        phases = [(one_hop_train, args.curriculum_steps), (train, args.max_steps - args.curriculum_steps)]
    curve: list[tuple[int, float]] = []
    start, done = time.perf_counter(), 0
    for data, steps in phases:
        trainer = make_trainer(args, model, processor, data, steps, seed, workdir)
        trainer.train()
        curve += [(done + entry["step"], entry["loss"]) for entry in trainer.state.log_history if "loss" in entry]
        done += steps
    seconds = time.perf_counter() - start
    em = exact_match_per_hop(trainer, dev, dev_columns)
    conversion = getattr(model, "luke_conversion_info", {"missing_keys": [], "unexpected_keys": []})
    return {"curve": curve, "em": em, "seconds": seconds, "conversion": conversion}


def make_trainer(args, model, processor, train, max_steps: int, seed: int, workdir: Path) -> Trainer:
    training_args = TrainingArguments(
        output_dir=str(workdir / "trainer"),
        max_steps=max_steps,
        per_device_train_batch_size=args.batch_size,
        per_device_eval_batch_size=64,
        learning_rate=args.learning_rate,
        logging_steps=args.logging_steps,
        save_strategy="no",
        eval_strategy="no",
        report_to="none",
        seed=seed,
        use_cpu=True,
        disable_tqdm=True,
        remove_unused_columns=False,
        dataloader_num_workers=0,
    )
    trainer = Trainer(
        model=model, args=training_args, train_dataset=train, data_collator=processor.get_data_collator()
    )
    trainer.remove_callback(PrinterCallback)  # the table below reports the losses
    return trainer


def leave_step(curve: list[tuple[int, float]], level: float, margin: float) -> int | None:
    return next((step for step, loss in curve if loss < (1.0 - margin) * level), None)


def summarise(args: DiagnosticArguments, runs: list[dict[str, Any]], level: float) -> list[dict[str, Any]]:
    rows = []
    for key in dict.fromkeys((run["preset"], run["init"]) for run in runs):
        group = [run for run in runs if (run["preset"], run["init"]) == key]
        steps = [step for step, _ in group[0]["curve"]]
        mean_curve = [sum(run["curve"][i][1] for run in group) / len(group) for i in range(len(steps))]
        leaves = [leave_step(run["curve"], level, args.leave_margin) for run in group]
        hops = sorted(group[0]["em"])
        rows.append(
            {
                "preset": key[0],
                "init": key[1],
                "seeds": [run["seed"] for run in group],
                "steps": steps,
                "loss": mean_curve,
                "leave_steps": leaves,
                # a mean step only when every seed left: a run that never left has no step to average
                "leave_mean": None if None in leaves else sum(leaves) / len(leaves),
                "em": {hop: sum(run["em"][hop] for run in group) / len(group) for hop in hops},
                "em_per_seed": {hop: [run["em"][hop] for run in group] for hop in hops},
                "em_spread": {hop: spread([run["em"][hop] for run in group]) for hop in hops},
                "seconds": sum(run["seconds"] for run in group) / len(group),
            }
        )
    return rows


def spread(values: list[float]) -> float:
    """Sample standard deviation over seeds (0 for one seed)."""
    if len(values) < 2:
        return 0.0
    mean = sum(values) / len(values)
    return math.sqrt(sum((value - mean) ** 2 for value in values) / (len(values) - 1))


MIN_SEEDS = 3


def per_seed(row: dict[str, Any], hop: int) -> list[float] | None:
    """A row's dev EM per seed on `hop`, or None when the row has no `hop`-hop queries."""
    values = (row.get("em_per_seed") or {}).get(hop)
    if values is None and hop in row["em"]:  # a results.json written before per-seed EM: the mean for every seed
        values = [row["em"][hop]] * len(row["seeds"])
    return values


def unlearned_control(row: dict[str, Any], control_em: float) -> list[str]:
    """The runs of a row (`preset s<seed>`) whose dev EM on the one-hop control is below `control_em` (all of them
    when the control did not run)."""
    control = per_seed(row, 1) or [-math.inf] * len(row["seeds"])
    return [f"{row['preset']} s{seed}" for seed, em in zip(row["seeds"], control, strict=True) if em < control_em]


def hop_verdict(row: dict[str, Any], luke: dict[str, Any] | None, hop: int, control_em: float) -> str:
    """Does this preset answer `hop`-hop queries better than LUKE? "yes", "no", or "inconclusive (why)".

    A run that has not learned the one-hop control (dev EM below `control_em`) cannot say anything about more hops:
    any such run, of the preset or of LUKE, makes the answer "inconclusive", never "no"; so does a row with fewer
    than `MIN_SEEDS` seeds. Otherwise "yes" when the preset's mean minus its spread over seeds lies above LUKE's
    mean plus LUKE's spread, else "no".
    """
    if luke is None:
        return "inconclusive (no luke row to compare with)"
    compared = [row, luke]
    for group in compared:
        if len(group["seeds"]) < MIN_SEEDS:
            return f"inconclusive ({group['preset']}: {len(group['seeds'])} seed(s), a verdict needs {MIN_SEEDS})"
    unlearned = [name for group in compared for name in unlearned_control(group, control_em)]
    if unlearned:
        return f"inconclusive (one-hop control below {control_em:g} EM: {', '.join(unlearned)})"
    mine, theirs = per_seed(row, hop), per_seed(luke, hop)
    low = sum(mine) / len(mine) - spread(mine)
    high = sum(theirs) / len(theirs) + spread(theirs)
    return "yes" if low > high else "no"


def print_table(args: DiagnosticArguments, rows: list[dict[str, Any]], level: float) -> None:
    hops = sorted({hop for row in rows for hop in row["em"]})
    print(f"constant-score loss H(p) = {level:.3f}; leave = first logged loss < {(1 - args.leave_margin) * level:.3f}")
    print(
        f"loss every {args.logging_steps} steps, mean over the row's seeds; EM on the dev set per hop count, mean ± "
        "spread (sample std) over the seeds; 1-hop is the control"
    )
    header = ["preset", "init", "leave@ (per seed)", *[f"EM {h}-hop" for h in hops], "s/run", "training loss"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        leaves = ", ".join(
            f"s{seed}: {'never' if step is None else step}"
            for seed, step in zip(row["seeds"], row["leave_steps"], strict=True)
        )
        cells = [row["preset"], row["init"], f"{leave_cell(row)} ({leaves})"]
        cells += [f"{row['em'][h]:.1f} ± {spread(per_seed(row, h)):.1f}" for h in hops]
        cells += [f"{row['seconds']:.0f}", " ".join(f"{loss:.3f}" for loss in row["loss"])]
        print("| " + " | ".join(cells) + " |")
    luke = [row for row in rows if row["preset"] == "luke"]
    multi = [hop for hop in hops if hop > 1]
    if multi:
        control_em = getattr(args, "control_em", 50.0)
        print(
            f"does the preset answer more hops than LUKE? (a run below {control_em:g} EM on the control: inconclusive)"
        )
        for row in rows:
            if row["preset"] == "luke":
                continue
            answers = ", ".join(
                f"{hop}-hop: {hop_verdict(row, luke[0] if luke else None, hop, control_em)}" for hop in multi
            )
            print(f"  {row['preset']} ({row['init']}): {answers}")
        if luke:
            missed = unlearned_control(luke[0], control_em)
            print(f"  luke: one-hop control {'not learned by ' + ', '.join(missed) if missed else 'learned'}")
    if luke:
        for line in leave_comparison(rows, luke[0]):
            print(line)


def leave_cell(row: dict[str, Any]) -> str:
    """The leave@ cell's step: the mean over seeds when every seed left, else how many never left (no step)."""
    never = sum(step is None for step in row["leave_steps"])
    if not never:
        return f"{sum(row['leave_steps']) / len(row['leave_steps']):.0f}"
    return "never" if never == len(row["leave_steps"]) else f"never on {never} of {len(row['leave_steps'])} seeds"


def leave_comparison(rows: list[dict[str, Any]], luke: dict[str, Any]) -> list[str]:
    """Per label init, the presets that leave the constant-score level later than LUKE, seed by seed.

    A run that never leaves is later than a LUKE run that leaves; when neither leaves the seed says nothing. With no
    pair where someone left, the line says that no run left, never that every preset left "no later than LUKE".
    """
    bound = dict(zip(luke["seeds"], luke["leave_steps"], strict=True))
    luke_steps = ", ".join(f"s{seed}: {'never' if step is None else step}" for seed, step in bound.items())
    lines = []
    for init in dict.fromkeys(row["init"] for row in rows if row["preset"] != "luke"):
        late, compared = [], 0
        for row in rows:
            if row["init"] != init or row["preset"] == "luke":
                continue
            seeds = []
            for seed, step in zip(row["seeds"], row["leave_steps"], strict=True):
                if seed not in bound or (step is None and bound[seed] is None):
                    continue
                compared += 1
                if step is None or (bound[seed] is not None and step > bound[seed]):
                    seeds.append(seed)
            if seeds:
                late.append(f"{row['preset']} (seeds {seeds})")
        if late:
            verdict = f"later than LUKE: {late}"
        elif compared:
            verdict = "every GESA preset leaves no later than LUKE"
        else:
            verdict = "no run of LUKE or of any preset left the constant-score level"
        lines.append(f"init {init}: {verdict} (LUKE leaves at {luke_steps}; compared seed by seed)")
    return lines


def plot(args: DiagnosticArguments, rows: list[dict[str, Any]], level: float, path: Path) -> Any:
    """Save the mean training curves (one colour per preset, LUKE black) as `path`; returns the figure."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    inits = list(dict.fromkeys(row["init"] for row in rows if row["preset"] != "luke")) or ["luke"]
    colours = preset_colours([row["preset"] for row in rows])
    figure, axes = plt.subplots(1, len(inits), figsize=(6 * len(inits), 4.2), sharey=True, squeeze=False)
    for axis, init in zip(axes[0], inits, strict=True):
        for row in rows:
            if row["init"] == init or row["preset"] == "luke":
                width = 2.5 if row["preset"] == "luke" else 1.4
                axis.plot(
                    row["steps"], row["loss"], label=row["preset"], color=colours[row["preset"]], linewidth=width
                )
        axis.axhline(level, color="grey", linestyle="--", linewidth=1, label=f"constant-score loss H(p) = {level:.3f}")
        axis.axhline(
            (1 - args.leave_margin) * level,
            color="grey",
            linestyle=":",
            linewidth=1,
            label=f"leave threshold (1 - {args.leave_margin:g}) H(p)",
        )
        axis.set_title(f"entity label init: {init}")
        axis.set_xlabel("step")
        axis.grid(alpha=0.3)
    axes[0][0].set_ylabel("training loss (mean over seeds)")
    axes[0][-1].legend(fontsize=7, ncol=2)
    figure.suptitle(args.plot_title or f"hops {args.hop_list}, seeds {args.seeds}: training loss, mean over seeds")
    figure.tight_layout()
    figure.savefig(path, dpi=80)
    return figure


def preset_colours(presets: list[str]) -> dict[str, Any]:
    """One distinct colour per preset (LUKE black; the others from tab10, then tab20 past ten presets)."""
    import matplotlib

    others = [name for name in dict.fromkeys(presets) if name != "luke"]
    palette = matplotlib.colormaps["tab10" if len(others) <= 10 else "tab20"]
    colours: dict[str, Any] = {name: palette(index % palette.N) for index, name in enumerate(others)}
    colours["luke"] = "black"
    return colours


def reprint(path: Path, output: Path) -> list[dict[str, Any]]:
    """The table and plot of a saved results.json, under the arguments it was run with."""
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
        names = {f.name for f in fields(DiagnosticArguments)}
        args = DiagnosticArguments(**{k: v for k, v in saved["args"].items() if k in names and k != "from_results"})
        rows, level = saved["rows"], saved["constant_score_loss"]
        for row in rows:  # JSON made the hop counts strings
            for key in ("em", "em_per_seed", "em_spread"):
                if key in row:
                    row[key] = {int(hop): value for hop, value in row[key].items()}
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise SystemExit(
            f"diagnose_graph.py: --from_results {path}: not a results.json of this script ({error})"
        ) from None
    print_table(args, rows, level)
    plot(args, rows, level, output / "curves.png")
    print(f"plot: {output / 'curves.png'}")
    return rows


def check_output_dir(output_dir: str) -> Path:
    """The folder the results go to: given (never a silent default in the current folder), and a folder."""
    if not output_dir.strip():
        raise SystemExit(
            "diagnose_graph.py: error: --output_dir: required, the folder results.json and curves.png are written to "
            "(made if missing), e.g. --output_dir diagnostic_out/run1"
        )
    output = Path(output_dir)
    if output.exists() and not output.is_dir():
        raise SystemExit(
            f"diagnose_graph.py: error: --output_dir: {output_dir} is a file, not a folder; give a folder, e.g. "
            "--output_dir diagnostic_out/run1"
        )
    return output


# seconds per training step of the default tiny LUKE (64 x 4, batch 16) on one CPU core (OMP_NUM_THREADS=1), the
# mean of GESA's and LUKE's runs of this script (a 600-step `full` run took 82 s, evaluation included); other sizes
# scale it by layers x width^2 x batch, and every finished run prints the time left from the runs so far
SECONDS_PER_STEP = 0.12


def time_estimate(args: DiagnosticArguments) -> tuple[int, float]:
    """(number of training runs, estimated seconds for all of them on one unloaded core)."""
    gesa_rows = sum(preset != "luke" for preset in args.preset_list) * len(args.init_list)
    runs = len(args.seed_list) * (gesa_rows + ("luke" in args.preset_list))
    scale = (args.num_hidden_layers / 4) * (args.hidden_size / 64) ** 2 * (args.batch_size / 16)
    return runs, runs * args.max_steps * SECONDS_PER_STEP * max(scale, 0.25)


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    (args,) = HfArgumentParser(DiagnosticArguments).parse_args_into_dataclasses(args=argv)
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()  # no bar per saved or loaded tiny checkpoint
    # one summary line per conversion below instead of a warning per unused LUKE weight (the pooler, positions)
    logging.getLogger(convert_luke_checkpoint.__module__).setLevel(logging.ERROR)
    output = check_output_dir(args.output_dir)
    output.mkdir(parents=True, exist_ok=True)
    if args.from_results:
        return reprint(Path(args.from_results), output)
    train_records = generate_records(args.train_size, args.hop_list, args.data_seed, args.pairs, args.distractors)
    dev_records = generate_records(
        args.eval_size, args.hop_list, args.data_seed + 10_000, args.pairs, args.distractors, prefix="dev"
    )
    runs = []
    with tempfile.TemporaryDirectory(prefix="gesa-diagnostic-") as tmp:
        workdir = Path(tmp)
        texts = [r["passage"]["text"] for r in train_records] + [r["qas"][0]["query"] for r in train_records]
        tokenizer = train_tokenizer(texts, workdir)
        processor = GesaProcessor(
            tokenizer, max_seq_length=160, doc_stride=64, max_query_length=32, candidate_source="annotations"
        )
        train = Dataset.from_dict(processor.encode_records(train_records)).remove_columns(list(EVAL_COLUMNS))
        dev_all = processor.encode_records(dev_records)
        dev_columns = {name: dev_all[name] for name in EVAL_COLUMNS}
        dev = Dataset.from_dict({k: v for k, v in dev_all.items() if k not in EVAL_COLUMNS})
        one_hop_train = None
        if args.curriculum_steps:
            one_hop = generate_records(args.train_size, [1], args.data_seed + 20_000, args.pairs, args.distractors)
            one_hop_train = Dataset.from_dict(processor.encode_records(one_hop)).remove_columns(list(EVAL_COLUMNS))
        level = constant_score_loss(train)
        total, estimate = time_estimate(args)
        print(
            f"{total} training runs of {args.max_steps} steps ({len(args.seed_list)} seeds x presets x inits): about "
            f"{estimate / 60:.0f} min on one unloaded CPU core (OMP_NUM_THREADS=1); longer on a busy one",
            flush=True,
        )
        for seed in args.seed_list:
            luke_dir = build_tiny_luke(args, tokenizer, seed, workdir / f"luke-{seed}")
            for preset in args.preset_list:
                for init, std in [("-", None)] if preset == "luke" else args.init_list:
                    result = run_one(
                        args, luke_dir, processor, train, dev, dev_columns, preset, std, seed, workdir, one_hop_train
                    )
                    conversion = result.pop("conversion")
                    if any(run["preset"] == preset for run in runs):
                        conversion = None  # one summary line per preset
                    runs.append({"preset": preset, "init": init, "seed": seed, **result})
                    losses = " ".join(f"{loss:.3f}" for _, loss in result["curve"])
                    print(f"[seed {seed}] {preset} init={init}: EM {result['em']} loss {losses}", flush=True)
                    if conversion is not None:
                        print(
                            f"  converted from the tiny LUKE: {len(conversion['missing_keys'])} parameters newly "
                            f"initialised, {len(conversion['unexpected_keys'])} LUKE weights unused",
                            flush=True,
                        )
                    elapsed = sum(run["seconds"] for run in runs)
                    print(
                        f"  run {len(runs)}/{total}: {result['seconds']:.0f} s; about "
                        f"{(total - len(runs)) * elapsed / len(runs) / 60:.0f} min left",
                        flush=True,
                    )
                    rows = summarise(args, runs, level)
                    (output / "results.json").write_text(
                        json.dumps({"args": asdict(args), "constant_score_loss": level, "rows": rows}, indent=1)
                    )
    print_table(args, rows, level)
    plot(args, rows, level, output / "curves.png")
    print(f"plot: {output / 'curves.png'}; results: {output / 'results.json'}")
    return rows


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
