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
``--variant ernie``), with the 🤗 ``Trainer``, in the shape of transformers' run_qa.py::

    python examples/run_entity_tasks.py --task relation_classification --model_name_or_path studio-ousia/luke-base \
        --train_file tacred/train.json --validation_file tacred/dev.json --do_train --do_eval --output_dir out/tacred

Data: Open Entity crowd JSON lines (``entity_typing``), TACRED JSON (``relation_classification``), CoNLL-2003 column
files (``ner``), or a Hub dataset in those fields (``--dataset_name``). ``--task pretrain`` reads any of them
(``--pretrain_format``) for its mentions. Writes the model, ``all_results.json`` (micro P/R/F1 as fractions) and
``eval_predictions.json`` / ``predict_predictions.json`` (``[{"id", "prediction", "reference"}, ...]``). The tasks are
``gesa.tasks_entity``'s; the run (argument checks, the output-folder lock, resuming, the divergence guard, atomic
result files, the one error line, the summary line) is ``gesa.training_driver``'s.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

from transformers import HfArgumentParser, TrainingArguments

from gesa.tasks_entity import ENTITY_TASKS, PRETRAIN, LoggedLossesCallback
from gesa.tasks_kb import KB_ALIAS_TABLE_HELP, KB_ENTITY_VECTORS_HELP
from gesa.training_driver import BaseDataArguments, BaseModelArguments, run_task
from gesa.training_gesa import explicit_flags, one_error_line, parse_script_args

SCRIPT = "run_entity_tasks.py"
TASKS = {**ENTITY_TASKS, PRETRAIN.name: PRETRAIN}


@dataclass
class ModelArguments(BaseModelArguments):
    variant: str = field(
        default="gesa",
        metadata={"help": "; ".join(f"--task {name}: {', '.join(task.heads)}" for name, task in TASKS.items())},
    )
    kb_alias_table: str | None = field(default=None, metadata={"help": KB_ALIAS_TABLE_HELP})
    kb_entity_vectors: str | None = field(default=None, metadata={"help": KB_ENTITY_VECTORS_HELP})


@dataclass
class DataArguments(BaseDataArguments):
    task: str = field(
        default="entity_typing",
        metadata={"help": "; ".join(f"{name}: {task.description} ({task.file_format})" for name, task in TASKS.items()),
                  "choices": list(TASKS)},
    )  # fmt: skip
    pretrain_format: str = field(
        default="ner", metadata={"help": f"--task pretrain: the format of its files, one of {sorted(ENTITY_TASKS)}."}
    )
    input_format: str = field(
        default="luke",
        metadata={"help": "entity_typing / relation_classification inputs: luke (the [MASK] entities' states), ernie "
                  "([ENT] / [HD] [TL] markers) or knowbert ([E1] [/E1] [E2] [/E2]); with markers the head reads "
                  "the opening markers' states.", "choices": ["luke", "ernie", "knowbert"]},
    )  # fmt: skip
    max_seq_length: int = field(default=256, metadata={"help": "Word tokens per feature."})
    max_span_length: int = field(default=16, metadata={"help": "NER: longest candidate span, in words."})
    max_entities: int = field(default=128, metadata={"help": "NER: candidate spans per feature."})
    mlm_probability: float = field(default=0.15, metadata={"help": "--task pretrain: share of words masked."})
    entity_mask_probability: float = field(default=0.15, metadata={"help": "pretrain: share of entities masked."})


def parse_args(argv: list[str]) -> tuple[ModelArguments, DataArguments, TrainingArguments]:
    """HfArgumentParser over the three dataclasses (or a JSON file of flags); bad flags are one error line."""
    parser = HfArgumentParser((ModelArguments, DataArguments, TrainingArguments), description=__doc__)
    return parse_script_args(parser, argv, SCRIPT)


def main(argv: list[str] | None = None) -> dict[str, float]:
    """Command-line entry point; argument and input errors end the run with one ``error:`` line (exit status 2)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    with one_error_line(SCRIPT):
        model_args, data_args, args = parse_args(argv)
        return run_task(TASKS[data_args.task], model_args, data_args, args, SCRIPT,
                        callbacks=[LoggedLossesCallback()], explicit=explicit_flags(argv))  # fmt: skip


if __name__ == "__main__":
    main()
