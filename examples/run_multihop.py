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
"""Fine-tune and evaluate on a multi-hop task with the 🤗 ``Trainer``, in the shape of transformers' run_qa.py:
WikiHop and MedHop with GESA, LUKE, LUKE-Graph or the context-graph GNN of Acton 2023 (``--task wikihop|medhop
--variant gesa|luke|luke_graph|context_graph``; docs/wikihop.md), HotpotQA distractor and FEVER with Transformer-XH
(``--task hotpotqa|fever --variant xh``).

Run with no arguments (or with only ``--task``, ``--variant`` and ``--output_dir``), the script trains a tiny model
converted from a tiny random LUKE (byte-level BPE trained offline on the sample) on an embedded sample the project
writes (invented WikiHop records (town -> region -> country), MedHop records of DrugBank and UniProt ids, HotpotQA
bridge/comparison questions, FEVER claims with their wiki pages) and evaluates it before and after training,
printing the metric after and before training and chance: a pipeline check, not a benchmark (HotpotQA and FEVER
about 10 s on one idle core, WikiHop 80 s, MedHop 2 minutes: ``DEMO_SECONDS``). ``--variant`` picks the demo's model
(``--task wikihop --variant luke``); its folder is ``outputs/<variant>-tiny-<task>``. Data files per task:

- ``--task wikihop`` (``--variant gesa|luke|luke_graph``): QAngaroo JSON (a list of ``{id, query, supports,
  candidates, answer}``), or JSON lines;
- ``--task hotpotqa --variant xh``: HotpotQA distractor JSON (the official list of ``{_id, question, answer,
  supporting_facts, context}``, or Hub-layout rows);
- ``--task fever --variant xh``: FEVER shared-task JSON lines ``{id, claim, label, evidence}`` with ``--wiki_pages``
  (the wiki-pages dump's JSON-lines files holding the evidence).

Typical use::

    python examples/run_multihop.py --task wikihop --model_name_or_path studio-ousia/luke-large \\
        --train_file train.json --validation_file dev.json --do_train --do_eval \\
        --max_seq_length 4096 --attention_window 256 --output_dir out/wikihop-gesa

Writes the model with its processor and pipeline code, ``all_results.json`` and the predictions: WikiHop
``eval_predictions.json`` (``{id: candidate}``) and with ``--do_predict --test_file``
``predict_predictions.json`` (``{id: [{"answer", "score"}, ...]}`` best first); HotpotQA and FEVER the official
prediction files (``<split>_predictions.json`` / ``.jsonl``) and every official metric; every metric in percent.
The tasks are ``gesa.training.wikihop.WIKIHOP`` and ``gesa.training.xh.HOTPOTQA`` / ``FEVER``; the run is
``gesa.training.driver``'s.
HotpotQA with ``--system paper`` runs the paper's system instead (question-type classifier, XH per type,
supporting-fact model per type: ``gesa.training.xh_paper``); ``--hotpot_setting fullwiki --corpus_dir DIR`` (either
system) retrieves every question's graph from HotpotQA's Wikipedia abstracts (``gesa.training.xh_fullwiki``).
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from transformers import TrainingArguments

from gesa.configuration_luke_graph import LUKE_GRAPH_LAYERS
from gesa.training.driver import BaseDataArguments, BaseModelArguments, ExampleScript
from gesa.training.fever_retrieval import RerankedFeverTask
from gesa.training.machinery import needs, read_by
from gesa.training.wikihop import (
    MEDHOP,
    WIKIHOP,
    build_demo_luke,
    make_medhop_sample,
    make_wikihop_sample,
    sample_texts,
    write_wikihop_file,
)
from gesa.training.xh import (
    FEVER,
    HOTPOTQA,
    PAPER_NODE_LENGTH,
    make_fever_sample,
    make_hotpot_sample,
    write_json_lines,
)
from gesa.training.xh_fullwiki import FullWikiHotpotQATask, FullWikiPaperHotpotQATask
from gesa.training.xh_paper import SYSTEMS, PaperHotpotQATask

TASKS = {task.name: task for task in (WIKIHOP, MEDHOP, HOTPOTQA, FEVER)}


# the --variant of each task that reads the WikiHop window flags (context_graph reads documents one by one)
WIKIHOP_WINDOW_VARIANTS = "gesa luke luke_graph"


@dataclass
class ModelArguments(BaseModelArguments):
    # the runs that read a flag (the others refuse it: training.machinery.read_by)
    flags_read_by = {
        "attention_window": read_by(task="wikihop medhop"),
        "system": read_by(task="hotpotqa", why="which HotpotQA system: the paper's or the joint model"),
        "graph_preset": read_by(task="wikihop medhop", variant="context_graph"),
        "graph_schedule": read_by(
            task="wikihop medhop", variant="context_graph", why="the thesis's training schedule"
        ),
        "choice_head": read_by(
            task="wikihop medhop",
            variant=WIKIHOP_WINDOW_VARIANTS,
            why="the candidate score of the WikiHop heads; --variant context_graph always scores with eq. 2.62",
        ),
        "graph_layer": read_by(task="wikihop medhop", variant="luke_graph", why="LUKE-Graph's relational layer"),
        "graph_config": read_by(
            task="wikihop medhop",
            variant="context_graph gesa",
            why="the context graph's fields, read by the GNN and by GESA's e2e labels on that graph",
        ),
    }

    model_name_or_path: str | None = field(
        default=None,
        metadata={"help": "A LUKE checkpoint (converted with from_luke_pretrained) or a checkpoint of this script. "
                  "Default: a tiny random LUKE built offline (demo)."},
    )  # fmt: skip
    variant: str = field(
        default="gesa",
        metadata={"help": "; ".join(f"--task {name}: {', '.join(task.heads)}" for name, task in TASKS.items())},
    )
    attention_window: int | None = field(
        default=256, metadata={"help": "WikiHop: local word window (each side); query words and entities are global."}
    )
    system: str = field(
        default="joint",
        metadata={"help": "HotpotQA with --variant xh: 'joint' (this project's one model: answer, answer type and "
                  "supporting facts) or 'paper' (the paper's A.3 system: question-type classifier, XH per type, "
                  "supporting-fact model per type; gesa.training.xh_paper)", "choices": list(SYSTEMS)},
    )  # fmt: skip
    graph_preset: str | None = field(
        default=None,
        metadata={"help": "--variant context_graph: a row of Acton 2023's table 5.1 (hde_base, att_base, bert_base)."},
    )
    graph_schedule: str | None = field(
        default=None,
        metadata={"help": "--variant context_graph: 'thesis' (Acton 2023 table 4.1: SGD, learning rate 0.001 with "
                  "layer weight sharing else 0.01, x0.9 per epoch, a fine-tuned embedder frozen for 5 epochs; "
                  "--optim/--learning_rate/--lr_scheduler_type given replace their part) or 'none' (the Trainer's "
                  "defaults). Default: 'thesis' with --graph_preset, else 'none'", "choices": ["thesis", "none"]},
    )  # fmt: skip
    choice_head: str | None = field(
        default=None,
        metadata={"help": "WikiHop with --variant gesa/luke/luke_graph: the candidate score, 'hde' (Acton 2023 eq. "
                  "2.62, HDE's output; the default for a model converted from LUKE) or 'query_candidate' (a linear "
                  "layer on [query entity; candidate entity]); a trained checkpoint keeps its own",
                  "choices": ["hde", "query_candidate"]},
    )  # fmt: skip
    graph_layer: str | None = field(
        default=None,
        metadata={"help": "WikiHop with --variant luke_graph: its relational layer, 'rgcn' (the released code's R-GCN; "
                  "the default) or 'rgat' (the relational graph attention the LUKE-Graph paper names); a trained "
                  "checkpoint keeps its own", "choices": list(LUKE_GRAPH_LAYERS)},
    )  # fmt: skip
    graph_config: str | None = field(
        default=None,
        metadata={"help": "--variant context_graph: a JSON object of ContextGraphConfig fields, e.g. "
                  '\'{"gnn_core": "sdp", "gnn_num_layers": 9, "sentence_nodes": "all"}\' (docs/wikihop.md); '
                  "--variant gesa: the context graph's rules only (co_document_edges, complement_edges, "
                  "unconnected_edges, co_mention_edges, sentence_nodes)"},
    )  # fmt: skip


@dataclass
class DataArguments(BaseDataArguments):
    flags_read_by = {
        "max_entities": read_by(task="wikihop medhop"),
        "max_mention_length": read_by(task="wikihop medhop", variant=WIKIHOP_WINDOW_VARIANTS),
        "wiki_pages": read_by(task="fever"),
        "max_nodes": read_by(task="hotpotqa fever"),
        "hotpot_setting": read_by(task="hotpotqa"),
        "corpus_dir": read_by(task="hotpotqa", hotpot_setting="fullwiki", why="FullWiki's Wikipedia abstracts"),
        "retrieval_candidates": read_by(task="hotpotqa", hotpot_setting="fullwiki"),
        "retrieval_keep": read_by(task="hotpotqa", hotpot_setting="fullwiki"),
        "retrieval_expand": read_by(task="hotpotqa", hotpot_setting="fullwiki"),
        "ranker_negatives": read_by(
            {"task": "hotpotqa", "hotpot_setting": "fullwiki"}, {"task": "fever", "fever_retrieval": "bm25_rerank"}
        ),  # fmt: skip
        "fever_retrieval": read_by(task="fever"),
        "dataset_name": read_by(system="joint", why="--system paper reads --train_file/--validation_file/--test_file"),
    }
    # the optional library a flag needs (pip install "gesa[retrieval]"), checked before anything loads
    flags_need = {
        "fever_retrieval": needs("bm25s", "bm25", "bm25_rerank"),
        "hotpot_setting": needs("bm25s", "fullwiki"),
    }

    task: str = field(
        default="wikihop",
        metadata={"help": "; ".join(f"{name}: {task.description} ({task.file_format})" for name, task in TASKS.items()),
                  "choices": list(TASKS)},
    )  # fmt: skip
    dataset_name: str | None = field(default=None, metadata={"help": "Hub dataset, e.g. qangaroo or hotpot_qa."})
    dataset_config_name: str | None = field(default=None, metadata={"help": "Hub configuration, e.g. wikihop."})
    max_seq_length: int | None = field(
        default=None,
        metadata={
            "help": "WikiHop: words of the one sequence per query (default 4096); context_graph: tokens per document "
            f"(default 4096); XH: words per node (default {PAPER_NODE_LENGTH}, the paper's BERT limit, or fewer where "
            "the checkpoint's absolute positions hold fewer; longer nodes are cut, counted in the summary line)."
        },
    )
    max_query_length: int = field(default=64, metadata={"help": "Query tokens kept."})
    max_entities: int = field(
        default=1024, metadata={"help": "WikiHop: entities per query (query, candidates, mentions)."}
    )
    max_mention_length: int = field(default=30, metadata={"help": "WikiHop: word positions kept per mention."})
    wiki_pages: str | None = field(
        default=None, metadata={"help": "FEVER: wiki-pages JSON-lines files (comma-separated) holding the evidence."}
    )
    max_nodes: int | None = field(default=None, metadata={"help": "XH tasks: nodes kept per graph (FEVER: 5)."})
    hotpot_setting: str = field(
        default="distractor",
        metadata={"help": "HotpotQA: 'distractor' (the file's paragraphs) or 'fullwiki' (every question's graph "
                  "retrieved from --corpus_dir: BM25 + title-named articles, re-ranked by the backbone, expanded "
                  "along hyperlinks; gesa.training.xh_fullwiki)", "choices": ["distractor", "fullwiki"]},
    )  # fmt: skip
    corpus_dir: str | None = field(
        default=None,
        metadata={"help": "--hotpot_setting fullwiki: the folder of HotpotQA's Wikipedia abstracts "
                  "(enwiki-20171001-pages-meta-current-withlinks-abstracts: AA/wiki_00.bz2, ...)"},
    )  # fmt: skip
    retrieval_candidates: int = field(
        default=100, metadata={"help": "FullWiki: BM25 articles per question re-ranked (the paper's 100 TF-IDF)."}
    )
    retrieval_keep: int = field(
        default=2, metadata={"help": "FullWiki: re-ranked BM25 articles kept (the paper's top 2)."}
    )
    retrieval_expand: int = field(
        default=15, metadata={"help": "FullWiki: re-ranked hyperlinked articles kept (bridge; the paper's 15)."}
    )
    ranker_negatives: int = field(
        default=10,
        metadata={
            "help": "The re-rankers' negatives: FullWiki, BM25 non-supporting articles per training question; "
            "FEVER bm25_rerank, non-evidence sentences per training claim."
        },
    )
    fever_retrieval: str = field(
        default="title",
        metadata={"help": "FEVER claims without predicted_pages/predicted_sentences: 'title' (pages whose title the "
                  "claim names), 'bm25' (BM25 document retrieval then sentence selection; pip install "
                  "'gesa[retrieval]') or 'bm25_rerank' (BM25 documents, sentences re-ranked by the backbone trained "
                  "on --train_file's evidence; gesa.training.fever_retrieval)",
                  "choices": ["title", "bm25", "bm25_rerank"]},
    )  # fmt: skip

    def __post_init__(self) -> None:
        if self.max_seq_length is None and self.task in ("wikihop", "medhop"):
            self.max_seq_length = 4096  # the paper's WikiHop sequences; XH's default is the checkpoint's (training.xh)


# the flags every demo runs with (the tasks' own follow in demo_argv)
DEMO_ARGS = [
    "--do_train", "--do_eval", "--per_device_train_batch_size", "8", "--learning_rate", "3e-3",
    "--logging_steps", "10", "--eval_on_start", "true", "--save_strategy", "no", "--overwrite_output_dir", "true",
    "--report_to", "none", "--seed", "0", "--disable_tqdm", "true",
]  # fmt: skip
# how long each demo takes on one idle core: its CPU time with OMP_NUM_THREADS=1, measured (README "Tasks")
DEMO_SECONDS = {"wikihop": 80, "wikihop:context_graph": 75, "medhop": 105, "hotpotqa": 10, "fever": 10}
USAGE = (
    "%(prog)s [--task wikihop|medhop|hotpotqa|fever] [--variant V] [--model_name_or_path DIR] [--train_file F] "
    "[--validation_file F] [--test_file F] [--wiki_pages F] [--do_train] [--do_eval] [--do_predict] [--output_dir DIR] "
    "[FLAG VALUE ...]"
)


def demo_argv(
    directory: Path, task: str = "wikihop", output_dir: str | None = None, variant: str | None = None
) -> list[str]:
    """Arguments of a task's demo: files of its embedded sample and a tiny LUKE built offline in ``directory`` (the
    output folder's ``demo-data``, where the pipeline's inputs stay: FEVER's wiki pages); ``variant``: the model it
    trains (default: ``xh`` for HotpotQA and FEVER, ``gesa`` for WikiHop and MedHop); ``output_dir`` default
    ``outputs/<variant>-tiny-<task>``."""
    variant = variant or ("xh" if task in ("hotpotqa", "fever") else "gesa")
    output = ["--task", task, "--variant", variant, "--output_dir", output_dir or f"outputs/{variant}-tiny-{task}",
              *DEMO_ARGS]  # fmt: skip
    if task == "hotpotqa":
        train, evaluation = make_hotpot_sample(24, seed=1), make_hotpot_sample(8, seed=2)
        texts = [text for row in train + evaluation for text in (row["question"], *(
            " ".join(sentences) for _, sentences in row["context"]))]  # fmt: skip
        (directory / "train.json").write_text(json.dumps(train), encoding="utf-8")
        (directory / "dev.json").write_text(json.dumps(evaluation), encoding="utf-8")
        return ["--model_name_or_path", str(build_demo_luke(directory / "tiny-luke", texts)),
                "--train_file", str(directory / "train.json"), "--validation_file", str(directory / "dev.json"),
                "--max_seq_length", "64", "--max_query_length", "24", "--num_train_epochs", "15", *output]  # fmt: skip
    if task == "fever":
        train, pages = make_fever_sample(24, seed=1)
        evaluation, more_pages = make_fever_sample(9, seed=2)
        texts = [claim["claim"] for claim in train + evaluation] + [page["text"] for page in pages + more_pages]
        return ["--model_name_or_path", str(build_demo_luke(directory / "tiny-luke", texts)),
                "--train_file", str(write_json_lines(directory / "train.jsonl", train)),
                "--validation_file", str(write_json_lines(directory / "dev.jsonl", evaluation)),
                "--wiki_pages", str(write_json_lines(directory / "wiki-001.jsonl", pages + more_pages)),
                "--max_seq_length", "48", "--max_query_length", "16", "--num_train_epochs", "15", *output]  # fmt: skip
    # 200 queries, supports in a random order, for 30 epochs: the tiny model learns on every seed tried (64
    # evaluation queries: a difference of a few queries is not read as learning)
    sample = {"medhop": make_medhop_sample}.get(
        task, functools.partial(make_wikihop_sample, region_pool=12, linked=True)
    )
    train, evaluation = sample(200, seed=1), sample(64, seed=2)
    test = sample(4, seed=3, labelled=False)
    luke = build_demo_luke(directory / "tiny-luke", sample_texts(train + evaluation + test))
    return [
        "--model_name_or_path", str(luke),
        "--train_file", str(write_wikihop_file(directory / "train.json", train)),
        "--validation_file", str(write_wikihop_file(directory / "dev.json", evaluation)),
        "--test_file", str(write_wikihop_file(directory / "test.jsonl", test, json_lines=True)),
        "--do_predict", "--max_seq_length", "512", "--attention_window", "64", "--num_train_epochs", "30", *output,
    ]  # fmt: skip


def choose_task(model_args: ModelArguments, data_args: DataArguments) -> Any:
    """The task the flags name: ``--task``, for HotpotQA with ``--system`` and ``--hotpot_setting``, for FEVER with
    ``--fever_retrieval bm25_rerank`` (its sentence re-ranker trained by the driver as a component of the run)."""
    paper, fullwiki = model_args.system == "paper", data_args.hotpot_setting == "fullwiki"
    if data_args.task == "hotpotqa" and (paper or fullwiki):
        kinds = {(True, False): PaperHotpotQATask, (False, True): FullWikiHotpotQATask,
                 (True, True): FullWikiPaperHotpotQATask}  # fmt: skip
        return kinds[paper, fullwiki]()
    if data_args.task == "fever" and data_args.fever_retrieval == "bm25_rerank":
        return RerankedFeverTask()
    return TASKS[data_args.task]


SCRIPT = ExampleScript(
    "run_multihop.py",
    (ModelArguments, DataArguments, TrainingArguments),
    __doc__,
    USAGE,
    tasks=TASKS,
    choose_task=choose_task,
    demo=lambda folder, model_args, data_args, output_dir, argv: demo_argv(
        folder, data_args.task, output_dir, model_args.variant
    ),
    demo_flags=("task", "output_dir", "variant"),
    demo_seconds=DEMO_SECONDS,
)
wants_demo, parse_args = SCRIPT.wants_demo, SCRIPT.parse_args


def main(argv: list[str] | None = None) -> dict[str, float]:
    """Command-line entry point; argument and input errors end the run with one ``error:`` line (exit status 2)."""
    return SCRIPT.main(argv)


if __name__ == "__main__":
    main()
