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
"""Transformer-XH's own tasks (HotpotQA, FEVER) as task objects for the multi-hop example script.

A task knows its reader, its features, its head class, how the pipeline predicts, how predictions are written in
the official format and scored with the official metric (`metrics/hotpotqa`, `metrics/fever`, shipped
with the package: `resources_gesa.load_metric`):

    task = HotpotQATask()                       # or FeverTask(wiki_pages=["wiki-001.jsonl"])
    rows = task.read("hotpot_dev_distractor_v1.json")
    features = task.features(processor, rows, training=True)   # for Trainer, with processor.get_data_collator()
    predictions = task.predict(model, processor, rows)           # the pipeline's outputs, one per row
    task.write_predictions(predictions, output_dir)              # the official prediction file
    task.compute_metrics(predictions, rows)                      # every official key, fractions of 1

`TASKS` maps `--task` names to the classes; importing this module registers `hotpotqa` and `fever` (variant `xh`)
in `tasks_multihop.MULTIHOP_TASKS` for `examples/run_multihop.py`, which then trains with its `Trainer`, predicts
with the task's pipeline, writes `<split>_predictions.json[l]` in the official format and puts every official metric
in `all_results.json`. The baseline is the same head with `xh_num_hop_layers=0` (`xh_task_config(task,
hop_attention=False)`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import torch

from .configuration_variants import XhConfig
from .modeling_xh import XhForFactVerification
from .modeling_xh_tasks import FEVER_LABELS, XhForHotpotQA
from .pipeline_xh_tasks import XhFactVerificationPipeline, XhHotpotQAPipeline
from .processing_xh_tasks import XhTaskProcessor
from .records_xh import (
    hotpot_supporting_facts,
    read_fever_claims,
    read_hotpot_file,
    read_wiki_pages,
    to_fever_claim,
    to_hotpot_row,
)
from .resources_gesa import load_metric
from .tasks_multihop import MultihopTask, register_task


@dataclass
class HotpotQATask:
    """HotpotQA distractor: answer span / yes / no plus supporting facts (`XhForHotpotQA`)."""

    name: str = "hotpotqa"
    model_class: type = XhForHotpotQA

    def config_overrides(self) -> dict[str, Any]:
        return {}

    def read(self, path: str | Path) -> list[dict[str, Any]]:
        return read_hotpot_file(path)

    def features(self, processor: XhTaskProcessor, rows: Sequence[Mapping[str, Any]], training: bool) -> list[dict]:
        return processor.encode_hotpot_rows(rows)

    def predict(self, model: Any, processor: XhTaskProcessor, rows: Sequence[Mapping[str, Any]]) -> list[dict]:
        runner = XhHotpotQAPipeline(model=model, tokenizer=processor.tokenizer, processor=processor)
        model.eval()
        with torch.no_grad():
            return [runner(dict(row)) for row in rows]

    def write_predictions(
        self, predictions: Sequence[Mapping[str, Any]], output_dir: str | Path, split: str = "eval"
    ) -> Path:
        """`<split>_predictions.json`, the official file `{"answer": {id: text}, "sp": {id: [[title, sent_id]]}}`."""
        payload = {
            "answer": {p["id"]: p["answer"] for p in predictions},
            "sp": {p["id"]: [[t, int(s)] for t, s in p["supporting_facts"]] for p in predictions},
        }
        path = Path(output_dir) / f"{split}_predictions.json"
        path.write_text(json.dumps(payload, ensure_ascii=False), encoding="utf-8")
        return path

    def compute_metrics(
        self, predictions: Sequence[Mapping[str, Any]], rows: Sequence[Mapping[str, Any]]
    ) -> dict[str, float]:
        references = [
            {"id": r["id"], "answer": r["answer"] or "", "supporting_facts": hotpot_supporting_facts(r)} for r in rows
        ]
        by_id = {p["id"]: p for p in predictions}
        ordered = [
            {"id": r["id"], "answer": by_id[r["id"]]["answer"], "sp": by_id[r["id"]]["supporting_facts"]} for r in rows
        ]
        return load_metric("hotpotqa").compute(predictions=ordered, references=references)


@dataclass
class FeverTask:
    """FEVER: claim label (Eqs. 14-16) and evidence from node importance (`XhForFactVerification`)."""

    wiki_pages: Sequence[str | Path] = ()
    pages: dict[str, dict[int, str]] = field(default_factory=dict)
    name: str = "fever"
    model_class: type = XhForFactVerification

    def config_overrides(self) -> dict[str, Any]:
        return {
            "num_labels": len(FEVER_LABELS),
            "id2label": dict(enumerate(FEVER_LABELS)),
            "label2id": {label: i for i, label in enumerate(FEVER_LABELS)},
        }

    def read(self, path: str | Path) -> list[dict[str, Any]]:
        claims = read_fever_claims(path)
        if self.wiki_pages:
            self.pages.update(read_wiki_pages(self.wiki_pages))
        return claims

    def features(self, processor: XhTaskProcessor, rows: Sequence[Mapping[str, Any]], training: bool) -> list[dict]:
        return processor.encode_fever_claims(rows, getattr(processor, "pages", None) or self.pages, training)

    def predict(self, model: Any, processor: XhTaskProcessor, rows: Sequence[Mapping[str, Any]]) -> list[dict]:
        pages = getattr(processor, "pages", None) or self.pages
        runner = XhFactVerificationPipeline(
            model=model, tokenizer=processor.tokenizer, processor=processor, pages=pages
        )
        model.eval()
        with torch.no_grad():
            return [
                {
                    **runner({k: v for k, v in row.items() if k not in ("label", "evidence", "location")}),
                    "id": row["id"],
                }
                for row in rows
            ]

    def write_predictions(
        self, predictions: Sequence[Mapping[str, Any]], output_dir: str | Path, split: str = "eval"
    ) -> Path:
        """`<split>_predictions.jsonl`, the shared task's submission: `{"id", "predicted_label",
        "predicted_evidence"}` per line."""
        path = Path(output_dir) / f"{split}_predictions.jsonl"
        lines = [
            json.dumps({"id": p["id"], "predicted_label": p["label"], "predicted_evidence": p["evidence"]})
            for p in predictions
        ]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return path

    def compute_metrics(
        self, predictions: Sequence[Mapping[str, Any]], rows: Sequence[Mapping[str, Any]]
    ) -> dict[str, float]:
        by_id = {p["id"]: p for p in predictions}
        ordered = [
            {"id": str(r["id"]), "predicted_label": by_id[r["id"]]["label"],
             "predicted_evidence": by_id[r["id"]]["evidence"]}
            for r in rows
        ]  # fmt: skip
        references = [{"id": str(r["id"]), "label": r["label"], "evidence": r["evidence"]} for r in rows]
        return load_metric("fever").compute(predictions=ordered, references=references)


TASKS: dict[str, type] = {"hotpotqa": HotpotQATask, "fever": FeverTask}


# ----------------------------------------------------------------------------------------- run_multihop.py


@dataclass(frozen=True)
class XhExample:
    """One question / claim for `run_multihop.py`: its id and its checked `records_xh` row."""

    example_id: str
    row: dict[str, Any]


def make_xh_processor(
    task: str,
    tokenizer: Any,
    max_seq_length: int = 512,
    max_query_length: int = 64,
    max_nodes: int | None = None,
    wiki_pages: str | None = None,
    entity_mask_id: int | None = None,
) -> XhTaskProcessor:
    """`run_multihop.py`'s processor: `--max_seq_length` words per node, FEVER's `--wiki_pages` (comma-separated
    files) read once, FEVER's graphs at most `--max_nodes` (default 5, the paper's) sentences."""
    pages = {}
    if task == "fever":
        if not wiki_pages:
            raise ValueError("--task fever needs --wiki_pages (the wiki-pages JSON-lines files holding the evidence)")
        pages = read_wiki_pages([part.strip() for part in wiki_pages.split(",") if part.strip()])
        max_nodes = 5 if max_nodes is None else max_nodes
    return XhTaskProcessor(
        tokenizer,
        max_node_length=max_seq_length,
        max_query_length=max_query_length,
        max_nodes=max_nodes,
        entity_mask_id=entity_mask_id,
        task=task,
        pages=pages,
    )


def _register(task: HotpotQATask | FeverTask, description: str, main_metric: str, label_key: str) -> MultihopTask:
    def examples(rows: Sequence[Mapping[str, Any]]) -> list[XhExample]:
        return [XhExample(str(row["id"]), dict(row)) for row in rows]

    def load_rows(rows: Any, where: str) -> list[XhExample]:
        if task.name == "fever":
            return examples([to_fever_claim(row, f"{where}, row {i}") for i, row in enumerate(rows)])
        return examples([to_hotpot_row(row, f"{where}, row {i}", f"row-{i}") for i, row in enumerate(rows)])

    return register_task(
        MultihopTask(
            name=task.name,
            description=description,
            heads={"xh": task.model_class},
            load_file=lambda path, where: examples(task.read(path)),
            load_rows=load_rows,
            to_columns=lambda items: {"example_json": [json.dumps(item.row) for item in items]},
            make_processor=partial(make_xh_processor, task.name),
            rank=None,
            score=None,
            metric_for_best_model=main_metric,
            processor_settings=("max_seq_length", "max_query_length", "max_nodes", "wiki_pages"),
            eval_columns=("example_id", "titles", "answer", "candidates"),
            reference=lambda example: example.row.get(label_key),
            predict=lambda model, processor, items: task.predict(model, processor, [item.row for item in items]),
            score_predictions=lambda predictions, items: task.compute_metrics(predictions, [i.row for i in items]),
            write_predictions=task.write_predictions,
        )
    )


HOTPOTQA = _register(
    HotpotQATask(),
    "HotpotQA distractor with Transformer-XH: answer span / yes / no and supporting facts (official metric)",
    "joint_f1",
    "answer",
)
FEVER = _register(
    FeverTask(),
    "FEVER with Transformer-XH: claim label (Eqs. 14-16) and evidence from node importance (official scorer)",
    "fever_score",
    "label",
)


def xh_task_config(task: HotpotQATask | FeverTask, hop_attention: bool = True, **kwargs: Any) -> XhConfig:
    """An `XhConfig` for `task`; `hop_attention=False` is the paper's ablation (`xh_num_hop_layers=0`)."""
    overrides = {**task.config_overrides(), **kwargs}
    if not hop_attention:
        overrides["xh_num_hop_layers"] = 0
    return XhConfig(**overrides)


__all__ = [
    "FEVER",
    "HOTPOTQA",
    "TASKS",
    "FeverTask",
    "HotpotQATask",
    "XhExample",
    "make_xh_processor",
    "xh_task_config",
]
