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
"""Document-level information extraction on SciREX (seed 002's long-document task) with LUKE, end to end: typed
mentions (Method, Task, Metric, Material), salient entity clusters and 4-ary relations, trained as SciREX's pipeline
with the 🤗 ``Trainer``, in the shape of transformers' run_qa.py.

Run with no arguments, the script trains a tiny model converted from a tiny random LUKE (byte-level BPE trained
offline) on invented papers in SciREX's release format that it writes, and evaluates it before and after training: a
pipeline check, not a benchmark (about 25 s on one idle core, a minute with ``--variant long_luke``). Typical use::

    python examples/run_document_ie.py --model_name_or_path studio-ousia/luke-large --variant luke \\
        --train_file scirex/train.jsonl --validation_file scirex/dev.jsonl --do_train --do_eval \\
        --output_dir out/scirex-luke

``--variant luke`` reads each document in 512-token pieces (``--max_seq_length``), each alone, as the baselines seed
002 cites do; ``--variant long_luke`` (LUKE with Longformer/BigBird attention, ``gesa.modeling_long_luke``) reads it
whole, in one pass (up to 16,384 tokens). Writes the model with its processor and pipeline code, ``all_results.json`` (every official metric in
percent) and ``eval_predictions/{ner,clusters,relations}.jsonl`` (``predict_predictions/`` with ``--do_predict``): the
three files SciREX's ``scirex_relation_evaluate.py`` reads; the three metric groups are printed. The task is
``gesa.training.document_ie.SCIREX``; the run is ``gesa.training.driver``'s.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from transformers import TrainingArguments

from gesa.training.document_ie import SCIREX
from gesa.training.driver import BaseDataArguments, BaseModelArguments, ExampleScript
from gesa.training.synthetic_scirex import make_scirex_sample
from gesa.training.wikihop import build_demo_luke


@dataclass
class ModelArguments(BaseModelArguments):
    variant: str = field(
        default="luke",
        metadata={"help": "The backbone: luke (512-token pieces, each alone) or long_luke (LUKE with Longformer/BigBird "
                  "attention: the whole document in one pass).", "choices": list(SCIREX.heads)},
    )  # fmt: skip
    mention_representation: str = field(
        default="entities",
        metadata={"help": "entities: LUKE's span representation (a [MASK] entity per mention, a second pass); "
                  "words: SciREX's (first, last and mean word states, one pass).", "choices": ["entities", "words"]},
    )  # fmt: skip


@dataclass
class DataArguments(BaseDataArguments):
    max_seq_length: int | None = field(
        default=None,
        metadata={"help": "Tokens per piece the backbone reads at once, <s> and </s> included (default: 512 for "
                  "--variant luke, LUKE's positions; 16384 for long_luke, the whole document)."},
    )  # fmt: skip
    max_document_words: int | None = field(
        default=20000, metadata={"help": "Longest document accepted, in words (a longer one is an error naming it)."}
    )


USAGE = (
    "%(prog)s [--variant luke] [--model_name_or_path DIR] [--train_file F] [--validation_file F] [--test_file F] "
    "[--do_train] [--do_eval] [--do_predict] [--output_dir DIR] [FLAG VALUE ...]"
)
DEMO_ARGS = [
    "--do_train", "--do_eval", "--num_train_epochs", "20", "--per_device_train_batch_size", "1",
    "--per_device_eval_batch_size", "1", "--learning_rate", "5e-3", "--logging_steps", "16", "--eval_on_start",
    "true", "--save_strategy", "no", "--overwrite_output_dir", "true", "--report_to", "none", "--seed", "0",
    "--disable_tqdm", "true",
]  # fmt: skip
# --variant luke's demo pieces (the invented papers are ~250 tokens: pieces of 128 make it read them in pieces, as a
# real paper is read in 512-token pieces); --variant long_luke reads each paper whole
DEMO_PIECES = ["--max_seq_length", "128"]


# the demo's papers: (count, seed) per split, and their method and experiments sentences
DEMO_DOCUMENTS = {"train": (16, 1), "dev": (4, 2)}
DEMO_BODY = 8


def demo_argv(directory: Path, output_dir: str | None = None, extra: list[str] | None = None) -> list[str]:
    """The demo: invented papers (16 to train, 4 to evaluate, about 180 words each) in SciREX's release format and a tiny LUKE built
    offline in ``directory``; ``extra``: the demo flags the command line gave (``--variant``)."""
    files = {}
    for split, (count, seed) in DEMO_DOCUMENTS.items():
        files[split] = directory / f"{split}.jsonl"
        files[split].write_text(make_scirex_sample(count, seed, body_sentences=DEMO_BODY), encoding="utf-8")
    texts = [path.read_text(encoding="utf-8") for path in files.values()]
    luke = build_demo_luke(directory / "tiny-luke", texts)
    return ["--model_name_or_path", str(luke), "--train_file", str(files["train"]), "--validation_file",
            str(files["dev"]), "--output_dir", output_dir or "outputs/luke-tiny-scirex", *(extra or []),
            *DEMO_ARGS, *([] if "long_luke" in (extra or []) else DEMO_PIECES)]  # fmt: skip


def write_demo(folder: Path, model_args: Any, data_args: Any, output_dir: str, argv: list[str]) -> list[str]:
    """The demo with the demo flags the command line gave besides ``--output_dir``."""
    extra = [arg for i, arg in enumerate(argv) if not {arg, argv[i - 1] if i else ""} & {"--output_dir"}
             and not arg.startswith("--output_dir=")]  # fmt: skip
    return demo_argv(folder, output_dir, extra)


SCRIPT = ExampleScript(
    "run_document_ie.py",
    (ModelArguments, DataArguments, TrainingArguments),
    __doc__,
    USAGE,
    tasks={SCIREX.name: SCIREX},
    task=SCIREX,
    demo_output=lambda model_args, data_args: f"outputs/{model_args.variant}-tiny-scirex",
    demo=write_demo,
    demo_flags=("output_dir", "variant", "mention_representation"),
    demo_seconds={"scirex": 25, "scirex:long_luke": 60},  # CPU time with OMP_NUM_THREADS=1, measured: README "Tasks"
)
wants_demo, parse_args = SCRIPT.wants_demo, SCRIPT.parse_args


def main(argv: list[str] | None = None) -> dict[str, float]:
    """Command-line entry point; argument and input errors end the run with one ``error:`` line (exit status 2)."""
    return SCRIPT.main(argv)


if __name__ == "__main__":
    main()
