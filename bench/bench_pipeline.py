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
"""Throughput of the entity cloze QA pipeline beside the bare processor + model loop doing the same work, on CPU.

Two random GESA checkpoints (a tiny one and one of luke-base's size: 12 layers, hidden 768, 12 heads, FFN 3072) are
saved with their processor and loaded back with ``pipeline(model=dir, trust_remote_code=True)``. Both sides answer
the real ReCoRD queries of ``../shared/data/record/explorer_dev60.jsonl`` (annotated candidates) in groups of
``--batch-size`` queries: the bare loop calls ``processor.encode_records`` on the group, the collator, the model under
``torch.inference_mode`` ``--batch-size`` windows at a time, and ``GesaProcessor.rank_answers``; the pipeline does the
same behind ``reader(records, batch_size=..., top_k=...)``. The answers are checked to be the same before anything is
timed; rounds alternate between the two sides and the median is reported.

    python bench/bench_pipeline.py [--queries 60] [--base-queries 12] [--batch-size 8] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import torch
from common import import_gesa

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"

SIZES = {
    "tiny": dict(
        hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128, entity_emb_size=32
    ),
    "luke-base": dict(
        hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072, entity_emb_size=256
    ),
}


def build_checkpoint(size: str, folder: Path, max_seq_length: int) -> Path:
    """A random GESA of ``size`` with LUKE's tokenizer (RoBERTa BPE from ../shared) and a processor, saved."""
    gesa = import_gesa()
    from transformers import LukeTokenizer

    tokenizer = LukeTokenizer(
        vocab=str(SHARED / "tokenizers" / "roberta-base" / "vocab.json"),
        merges=str(SHARED / "tokenizers" / "roberta-base" / "merges.txt"),
        entity_vocab={"[PAD]": 0, "[UNK]": 1, "[MASK]": 2, "[MASK2]": 3},
        task=None,
    )
    processor = gesa.GesaProcessor(tokenizer, max_seq_length=max_seq_length, doc_stride=128, max_query_length=64)
    config = gesa.GesaConfig(
        vocab_size=len(tokenizer),
        entity_vocab_size=4,
        max_position_embeddings=514,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        **SIZES[size],
    )
    torch.manual_seed(0)
    model = gesa.GesaForEntitySpanQA(config).eval()
    model.save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder


def bare_loop(model, processor, collator, records: list[dict], batch_size: int, top_k: int) -> list[list[dict]]:
    """The processor + model loop a user writes without the pipeline (README "Preparing ReCoRD")."""
    gesa = import_gesa()
    results = []
    for start in range(0, len(records), batch_size):
        columns = processor.encode_records(records[start : start + batch_size], return_candidate_spans=True)
        names = [name for name in processor.model_input_names if name in columns]
        features = [dict(zip(names, row, strict=True)) for row in zip(*(columns[n] for n in names), strict=True)]
        rows = []
        with torch.inference_mode():
            for first in range(0, len(features), batch_size):
                rows.extend(model(**collator(features[first : first + batch_size])).logits.float().tolist())
        width = max(len(row) for row in rows)
        ranked = gesa.GesaProcessor.rank_answers(
            columns["example_id"],
            columns["candidate_texts"],
            [row + [float("-inf")] * (width - len(row)) for row in rows],
            candidate_spans=columns["candidate_spans"],
        )
        results.extend(answers[:top_k] for answers in ranked.values())
    return results


def measure(size: str, records: list[dict], args: argparse.Namespace) -> dict[str, float]:
    from transformers import pipeline

    with tempfile.TemporaryDirectory() as folder:
        path = build_checkpoint(size, Path(folder), args.max_seq_length)
        reader = pipeline(model=str(path), trust_remote_code=True)
        processor, collator, model = reader.gesa_processor, reader.collator, reader.model

        def run_pipeline():
            return reader(records, batch_size=args.batch_size, top_k=args.top_k)

        def run_bare():
            return bare_loop(model, processor, collator, records, args.batch_size, args.top_k)

        piped, bare = run_pipeline(), run_bare()  # warm-up, and the same answers on both sides
        assert [[a["answer"] for a in q] for q in piped] == [[a["answer"] for a in q] for q in bare]
        timings: dict[str, list[float]] = {"pipeline": [], "bare": []}
        for _ in range(args.repeats):
            for name, function in (("bare", run_bare), ("pipeline", run_pipeline)):
                started = time.perf_counter()
                function()
                timings[name].append(time.perf_counter() - started)
    bare_time, pipe_time = statistics.median(timings["bare"]), statistics.median(timings["pipeline"])
    return {
        "queries": len(records),
        "bare_qps": len(records) / bare_time,
        "pipeline_qps": len(records) / pipe_time,
        "ratio": pipe_time / bare_time,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=60, help="queries for the tiny model")
    parser.add_argument("--base-queries", type=int, default=12, help="queries for the luke-base-sized model")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--top-k", type=int, default=5)
    parser.add_argument("--max-seq-length", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sizes", nargs="+", default=list(SIZES), choices=list(SIZES))
    args = parser.parse_args()
    lines = (SHARED / "data" / "record" / "explorer_dev60.jsonl").read_text(encoding="utf-8").splitlines()
    print(f"CPU, {torch.get_num_threads()} threads, batch size {args.batch_size}, top_k {args.top_k}, windows of "
          f"{args.max_seq_length} tokens, median of {args.repeats} alternating rounds")  # fmt: skip
    print("| model | queries | bare loop (queries/s) | pipeline (queries/s) | pipeline / bare (time) |")
    print("|---|---|---|---|---|")
    for size in args.sizes:
        count = args.queries if size == "tiny" else args.base_queries
        records = [json.loads(line) for line in lines[:count]]
        result = measure(size, records, args)
        print(f"| {size} | {result['queries']} | {result['bare_qps']:.1f} | {result['pipeline_qps']:.1f} | "
              f"{result['ratio']:.3f}x |", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
