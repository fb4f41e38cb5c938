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
"""Fine-tune GESA (or LUKE exactly, ``--variant luke``; KnowBERT-KAR, ERNIE) on entity typing, relation
classification or NER, or pre-train it with masked words + masked entities (``--task pretrain``; ERNIE's dEA with
``--variant ernie``), with the 🤗 ``Trainer``, in the shape of transformers' run_qa.py.

Run with no arguments (or with only ``--task`` and ``--output_dir``), the script trains a tiny model converted from a
tiny random LUKE (byte-level BPE trained offline) on an embedded sample the project writes (invented people, towns
and firms in the task's public format) and evaluates it before and after training, printing the metric after and
before training and chance: a pipeline check, not a benchmark (about 10 s on one idle core: ``DEMO_SECONDS``). Typical
use::

    python examples/run_entity_tasks.py --task relation_classification --model_name_or_path studio-ousia/luke-base \\
        --train_file tacred/train.json --validation_file tacred/dev.json --do_train --do_eval --output_dir out/tacred

Data: Open Entity crowd JSON lines (``entity_typing``), TACRED JSON (``relation_classification``), CoNLL-2003 column
files (``ner``), or a Hub dataset in those fields (``--dataset_name``). ``--task pretrain`` reads any of them
(``--pretrain_format``) for its mentions. Writes the model, ``all_results.json`` (micro P/R/F1 in percent) and
``eval_predictions.json`` / ``predict_predictions.json`` (``[{"id", "prediction", "reference"}, ...]``). The tasks are
``gesa.training.entity``'s; the run (argument checks, the output-folder lock, resuming, the divergence guard, atomic
result files, the one error line, the summary line) is ``gesa.training.driver``'s.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from transformers import TrainingArguments

from gesa.training.driver import BaseDataArguments, BaseModelArguments, ExampleScript
from gesa.training.entity import ENTITY_TASKS, PRETRAIN, LoggedLossesCallback, make_entity_sample
from gesa.training.entity_objectives import (
    KG_TRIPLES_HELP,
    KRC_SETTINGS,
    OBJECTIVE_RUNS,
    OBJECTIVES_HELP,
    OBJECTIVES_WHY,
    WEIGHTS,
)
from gesa.training.knowledge_base import (
    ENTITY_LINKS_HELP,
    KB_ALIAS_TABLE_HELP,
    KB_ENTITY_VECTORS_HELP,
    KB_WHY,
    NER_MODEL_HELP,
    NER_WHY,
)
from gesa.training.machinery import explicit_flags, needs, read_by
from gesa.training.synthetic_documents import corpus_texts, write_objective_corpus
from gesa.training.wikihop import build_demo_luke

TASKS = {**ENTITY_TASKS, PRETRAIN.name: PRETRAIN}
FINE_TUNING = " ".join(ENTITY_TASKS)  # the tasks with a head to fine-tune (not pretrain)
KNOWLEDGE_BASE_RUNS = {"task": FINE_TUNING, "variant": "kar ernie"}
PRETRAIN_KAR = {"task": "pretrain", "variant": "kar"}  # KnowBERT's pre-training reads the KB (ERNIE's: the data's)


@dataclass
class ModelArguments(BaseModelArguments):
    # the runs that read a flag (the others refuse it: training.machinery.read_by) and the library a flag needs
    flags_read_by = {
        "kb_alias_table": read_by(KNOWLEDGE_BASE_RUNS, PRETRAIN_KAR, why=KB_WHY),
        "kb_entity_vectors": read_by(KNOWLEDGE_BASE_RUNS, PRETRAIN_KAR, why=KB_WHY),
        "ner_model": read_by(variant="ernie", why=NER_WHY),
    }
    flags_need = {"ner_model": needs("spacy")}

    variant: str = field(
        default="gesa",
        metadata={"help": "; ".join(f"--task {name}: {', '.join(task.heads)}" for name, task in TASKS.items())},
    )
    kb_alias_table: str | None = field(default=None, metadata={"help": KB_ALIAS_TABLE_HELP})
    kb_entity_vectors: str | None = field(default=None, metadata={"help": KB_ENTITY_VECTORS_HELP})
    ner_model: str | None = field(default=None, metadata={"help": NER_MODEL_HELP})


@dataclass
class DataArguments(BaseDataArguments):
    flags_read_by = {
        "pretrain_format": read_by(task="pretrain"),
        "input_format": read_by(task="entity_typing relation_classification"),
        "entity_links": read_by(variant="kar"),  # L_EL when fine-tuning and in KnowBERT's pre-training
        "max_span_length": read_by(task="ner"),
        "max_entities": read_by(task="ner"),
        "mlm_probability": read_by(task="pretrain"),
        "entity_mask_probability": read_by(task="pretrain"),
        **dict.fromkeys(
            ("objectives", "kg_triples", *WEIGHTS, *KRC_SETTINGS), read_by(OBJECTIVE_RUNS, why=OBJECTIVES_WHY)
        ),
    }

    task: str = field(
        default="entity_typing",
        metadata={"help": "; ".join(f"{name}: {task.description} ({task.file_format})" for name, task in TASKS.items()),
                  "choices": list(TASKS)},
    )  # fmt: skip
    pretrain_format: str = field(
        default="ner",
        metadata={"help": f"--task pretrain: the format of its files, one of {sorted(PRETRAIN.formats())} (docred: "
                  "DocRED documents with entities and relations; scirex: SciREX's release, its clusters and N-ary "
                  "relations; both for --objectives)."},
    )  # fmt: skip
    input_format: str | None = field(
        default=None,
        metadata={"help": "entity_typing / relation_classification inputs: luke (the [MASK] entities' states), ernie "
                  "([ENT] / [HD] [TL] markers) or knowbert ([E1] [/E1] [E2] [/E2]); with markers the head reads "
                  "the opening markers' states. Default: each paper's own, ernie for --variant ernie, knowbert for "
                  "--variant kar, luke otherwise (a checkpoint of this script keeps its own).",
                  "choices": ["luke", "ernie", "knowbert"]},
    )  # fmt: skip
    entity_links: str | None = field(default=None, metadata={"help": ENTITY_LINKS_HELP})
    max_seq_length: int = field(default=256, metadata={"help": "Word tokens per feature."})
    max_span_length: int = field(default=16, metadata={"help": "NER: longest candidate span, in words."})
    max_entities: int = field(default=128, metadata={"help": "NER: candidate spans per feature."})
    mlm_probability: float = field(default=0.15, metadata={"help": "--task pretrain: share of words masked."})
    entity_mask_probability: float = field(default=0.15, metadata={"help": "pretrain: share of entities masked."})
    objectives: str = field(default="luke", metadata={"help": OBJECTIVES_HELP})
    alpha: float | None = field(default=None, metadata={"help": "--objectives: weight of L_MLM (eq. 29; default 1)."})
    gamma: float | None = field(
        default=None, metadata={"help": "--objectives: weight of L_Infill (eq. 29; default 1)."}
    )
    sigma: float | None = field(default=None, metadata={"help": "--objectives: weight of L_LP (eq. 29; default 1)."})
    delta: float | None = field(default=None, metadata={"help": "--objectives: weight of L_KRC (eq. 30; default 1)."})
    krc_probability: float | None = field(
        default=None, metadata={"help": "--objectives with KRC: share of its items replaced (KBIR's 0.1 by default)."}
    )
    krc_replaced_weight: float | None = field(
        default=None,
        metadata={"help": "--objectives with KRC: L_KRC's weight of a replaced item, an option of ours (default 1, "
                  "KBIR's plain cross-entropy; (1 - p) / p, e.g. 9, weighs both classes equally)."},
    )  # fmt: skip
    krc_replacement: str | None = field(
        default=None,
        metadata={"help": "--objectives with KRC: what replaces an entity: same_type (another entity of its type, "
                  "seed 002's rule, the default), any (any other entity, KBIR's released code) or other_type (an entity of "
                  "another type: a control, the sentence alone shows the replacement).",
                  "choices": ["same_type", "any", "other_type"]},
    )  # fmt: skip
    krc_readout: str | None = field(
        default=None,
        metadata={"help": "--objectives with KRC: the words its classifier reads: boundary (the words around the "
                  "span, KBIR's, the default) or span (the span's own first and last words, an option of ours).",
                  "choices": ["boundary", "span"]},
    )  # fmt: skip
    kg_triples: str | None = field(default=None, metadata={"help": KG_TRIPLES_HELP})


USAGE = (
    "%(prog)s [--task entity_typing|relation_classification|ner|pretrain] [--variant V] [--model_name_or_path DIR] "
    "[--train_file F] [--validation_file F] [--test_file F] [--do_train] [--do_eval] [--do_predict] "
    "[--output_dir DIR] [FLAG VALUE ...]"
)
# the flags every demo runs with
DEMO_ARGS = [
    "--do_train", "--do_eval", "--num_train_epochs", "20", "--per_device_train_batch_size", "8",
    "--learning_rate", "1e-2", "--logging_steps", "10", "--eval_on_start", "true", "--save_strategy", "no",
    "--overwrite_output_dir", "true", "--report_to", "none", "--seed", "0", "--disable_tqdm", "true",
]  # fmt: skip


# the flags a demo takes (``wants_demo``); the others name a real run's data and model
# how long each demo takes on one idle core: its CPU time with OMP_NUM_THREADS=1, measured (README "Tasks")
DEMO_SECONDS = {"entity_typing": 10, "figer": 10, "relation_classification": 10, "ner": 10, "pretrain": 10}
DEMO_FLAGS = ("task", "output_dir", "variant", "kb_alias_table", "kb_entity_vectors", "entity_links", "ner_model",
              "input_format", "objectives", *WEIGHTS, *KRC_SETTINGS)  # fmt: skip
# the demo KB (examples/data/build_kb_sample.py) a --variant kar / ernie demo reads unless given its own files
DEMO_KB = Path(__file__).resolve().parent / "data"
DEMO_KB_FLAGS = {"kb_alias_table": DEMO_KB / "kb_aliases.tsv", "kb_entity_vectors": DEMO_KB / "kb_entity_vectors.txt",
                 "entity_links": DEMO_KB / "kb_links.jsonl"}  # fmt: skip


def knowledge_demo_flags(variant: str, task: str, given: set[str]) -> list[str]:
    """The demo KB's flags for a ``--variant kar`` / ``ernie`` demo that names no KB file of its own: the alias table
    and the TransE vectors, and for KAR the gold links (``L_EL``); none for the other variants and for ERNIE's
    pre-training (its KB is the data's entity table)."""
    if variant not in ("kar", "ernie") or given & set(DEMO_KB_FLAGS) or (variant, task) == ("ernie", PRETRAIN.name):
        return []
    names = ["kb_alias_table", "kb_entity_vectors"] + (["entity_links"] if variant == "kar" else [])
    return [arg for name in names for arg in (f"--{name}", str(DEMO_KB_FLAGS[name]))]


def demo_argv(
    directory: Path, task: str = "entity_typing", output_dir: str | None = None, extra: list[str] | None = None
) -> list[str]:
    """Arguments of a task's demo: its embedded sample (``--task pretrain``: the NER one) and a tiny LUKE built
    offline in ``directory`` (the output folder's ``demo-data``); ``output_dir`` default
    ``outputs/<variant>-tiny-<task>``; ``extra``: the demo flags the command line gave (``--variant``, the knowledge
    flags), then the demo KB's (``knowledge_demo_flags``)."""
    extra = list(extra or [])
    variant = parse_args(["--task", task, *extra])[0].variant
    extra += knowledge_demo_flags(variant, task, explicit_flags(extra))
    data_task = "ner" if task == PRETRAIN.name else task
    files = {}
    if task == PRETRAIN.name and parse_args(["--task", task, *extra])[1].objectives != "luke":
        # seed 002's objectives: the generated documents (entities, mentions) and their knowledge graph
        corpus = write_objective_corpus(directory / "documents", documents=48, task_examples_per_split=(8, 8))
        files = {"train": corpus / "pretrain.json", "dev": corpus / "pretrain_dev.json"}
        extra += ["--pretrain_format", "docred", "--kg_triples", str(corpus / "kg.tsv")]
        texts = corpus_texts(corpus)
    else:
        for split, count, seed in (("train", 36, 1), ("dev", 12, 2)):
            files[split] = directory / f"{split}.{'txt' if data_task == 'ner' else 'json'}"
            files[split].write_text(make_entity_sample(data_task, count, seed), encoding="utf-8")
        texts = [path.read_text(encoding="utf-8") for path in files.values()]
    luke = build_demo_luke(directory / "tiny-luke", texts)
    return ["--task", task, "--model_name_or_path", str(luke), "--train_file", str(files["train"]),
            "--validation_file", str(files["dev"]), "--output_dir", output_dir or f"outputs/{variant}-tiny-{task}",
            "--max_seq_length", "64", *extra, *DEMO_ARGS]  # fmt: skip


def write_demo(folder: Path, model_args: Any, data_args: Any, output_dir: str, argv: list[str]) -> list[str]:
    """The demo of ``--task`` (``demo_argv``) with the demo flags the command line gave besides ``--task`` and
    ``--output_dir``."""
    extra = [arg for i, arg in enumerate(argv) if not {arg, argv[i - 1] if i else ""} & {"--task", "--output_dir"}
             and not arg.startswith(("--task=", "--output_dir="))]  # fmt: skip
    return demo_argv(folder, data_args.task, output_dir, extra)


SCRIPT = ExampleScript(
    "run_entity_tasks.py",
    (ModelArguments, DataArguments, TrainingArguments),
    __doc__,
    USAGE,
    tasks=TASKS,
    demo=write_demo,
    demo_seconds=DEMO_SECONDS,
    demo_flags=DEMO_FLAGS,
    callbacks=lambda: [LoggedLossesCallback()],
)
wants_demo, parse_args = SCRIPT.wants_demo, SCRIPT.parse_args


def main(argv: list[str] | None = None) -> dict[str, float]:
    """Command-line entry point; argument and input errors end the run with one ``error:`` line (exit status 2)."""
    return SCRIPT.main(argv)


if __name__ == "__main__":
    main()
