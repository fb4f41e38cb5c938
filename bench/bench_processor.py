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
"""Throughput of ``GesaProcessor`` on the shared ReCoRD samples, beside a plain per-example Python loop.

The 124 real queries of ``../shared/data/record`` are repeated (each copy gets a distinct passage, so that no
work is shared between copies; real ReCoRD has ~1.5 queries per passage, which the processor would share) and
encoded as flattened Hub rows, in batches of 1000 like ``Dataset.map(batched=True)`` sends them. The plain loop
does the same work one example at a time: per-example tokenizer and spaCy calls, per-token Python loops. Both
produce the same features, which is checked before anything is timed. Rates are projected to the ~100k training
queries of ReCoRD.

    python bench/bench_processor.py [--copies 12] [--plain-copies 4] [--repeats 2] [--num-proc 2] [--tokenizer DIR]

The defaults finish in about one to two minutes on 2 CPU cores; raise ``--copies``/``--repeats`` for steadier
figures on a quiet machine.
"""

from __future__ import annotations

import argparse
import bisect
import json
import os
import re
import time
from pathlib import Path

from gesa.processing_gesa import (
    ENTITY_MARKER_TOKEN,
    HIGHLIGHT_TOKEN,
    PLACEHOLDER_TOKEN,
    GesaProcessor,
    RecordExample,
    normalize_entity_string,
    to_record_examples,
)

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"

SAMPLE_FILES = ("fewglue_train32.jsonl", "fewglue_dev32.jsonl", "explorer_dev60.jsonl")
FULL_RECORD_TRAIN_QUERIES = 100_000


def load_tokenizer(path: str | None):
    """A saved LUKE tokenizer (or checkpoint folder), else LUKE's tokenizer built from the shared RoBERTa files."""
    from transformers import AutoTokenizer, LukeTokenizer

    if path:
        return AutoTokenizer.from_pretrained(path)
    roberta = SHARED / "tokenizers" / "roberta-base"
    entity_vocab = {"[PAD]": 0, "[UNK]": 1, "[MASK]": 2, "[MASK2]": 3}
    return LukeTokenizer(
        vocab=str(roberta / "vocab.json"), merges=str(roberta / "merges.txt"), entity_vocab=entity_vocab
    )


def hub_rows(records: list[dict], copies: int, queries_per_passage: float = 1.0) -> list[dict]:
    """Flattened Hub rows (exclusive ``end``); copy k appends a distinct tail to every passage (spans unchanged).

    With ``queries_per_passage`` > 1, that fraction of extra rows asks the query again (under another id) of the
    same passage, as ReCoRD asks ~1.53 queries per passage; every whole copy has the same ratio.
    """
    rows = []
    extra_every = 1 / (queries_per_passage - 1) if queries_per_passage > 1 else None
    extra_due = 0.0
    for copy in range(copies):
        for record in records:
            text = record["passage"]["text"] + (f" (copy {copy})" if copy else "")
            spans = sorted((e["start"], e["end"] + 1) for e in record["passage"]["entities"])
            qa = record["qas"][0]
            row = {
                "passage": text,
                "query": qa["query"],
                "entity_spans": {
                    "start": [s for s, _ in spans],
                    "end": [e for _, e in spans],
                    "text": [text[s:e] for s, e in spans],
                },
                "answers": sorted({answer["text"] for answer in qa["answers"]}),
                "idx": {"passage": record["idx"] + 100_000 * copy, "query": qa["idx"]},
            }
            rows.append(row)
            if extra_every is not None:
                extra_due += 1
                if extra_due >= extra_every:
                    extra_due -= extra_every
                    rows.append({**row, "idx": {"passage": row["idx"]["passage"], "query": qa["idx"] + 1_000_000}})
    return rows


def as_columns(rows: list[dict]) -> dict[str, list]:
    return {key: [row[key] for row in rows] for key in rows[0]}


class PlainLoop:
    """The processor's work written as a plain per-example loop (no batching, no numpy, no passage sharing)."""

    def __init__(self, processor: GesaProcessor):
        import spacy

        self.processor = processor
        self.tokenizer = processor.tokenizer
        self.nlp = spacy.blank("en")
        self.nlp.add_pipe("sentencizer")

    def encode(self, example: RecordExample) -> list[dict]:
        processor, tokenizer = self.processor, self.tokenizer
        text = "".join(" " if character.isspace() else character for character in example.passage)
        spans = sorted(set(example.entity_spans))
        highlights = [match.start() for match in re.finditer("@highlight", text)]
        body = text[: highlights[0]] if highlights else text
        sentence_starts = sorted({0, *[sentence.start_char for sentence in self.nlp(body).sents], *highlights})
        marked = text
        edits = [(m.start(), m.end(), 1, " " + HIGHLIGHT_TOKEN) for m in re.finditer("@highlight", text)]
        for start, end in spans:
            opening = start - 1 if start > 0 and text[start - 1] == " " else start
            edits += [(opening, opening, 2, " " + ENTITY_MARKER_TOKEN), (end, end, 0, " " + ENTITY_MARKER_TOKEN)]
        for start, end, _, replacement in sorted(edits, key=lambda edit: (edit[0], edit[2]), reverse=True):
            marked = marked[:start] + replacement + marked[end:]
        doc_ids = tokenizer(marked, add_special_tokens=False)["input_ids"]
        query = "".join(" " if c.isspace() else c for c in example.query).replace("@placeholder", " [PLC]")
        query_ids = tokenizer(query, add_special_tokens=False)["input_ids"]
        plc_id, ent_id = tokenizer.convert_tokens_to_ids([PLACEHOLDER_TOKEN, ENTITY_MARKER_TOKEN])
        plc_index = query_ids.index(plc_id)
        if len(query_ids) > processor.max_query_length:
            first = max(
                0, min(plc_index - processor.max_query_length // 2, len(query_ids) - processor.max_query_length)
            )
            query_ids = query_ids[first : first + processor.max_query_length]
            plc_index -= first
        markers = [index for index, token in enumerate(doc_ids) if token == ent_id]
        opens, closes = markers[0::2], markers[1::2]
        texts = [example.passage[start:end] for start, end in spans]
        normalized = [normalize_entity_string(candidate) for candidate in texts]
        string_ids = [normalized.index(value) for value in normalized]
        first_ids = sorted(set(string_ids))
        string_ids = [first_ids.index(value) for value in string_ids]
        sentences = [bisect.bisect_right(sentence_starts, start) - 1 for start, _ in spans]
        answers = {normalize_entity_string(answer) for answer in example.answers}
        window_length = processor.max_seq_length - len(query_ids) - 4
        features, window_start = [], 0
        while True:
            window_end = min(window_start + window_length, len(doc_ids))
            inside = [i for i in range(len(spans)) if opens[i] >= window_start and closes[i] < window_end]
            if len(inside) > processor.max_entities - 1:
                inside = inside[: processor.max_entities - 1]
                window_end = opens[inside[-1] + 1]
            if inside:
                prefix = [tokenizer.cls_token_id] + query_ids + [tokenizer.sep_token_id] * 2
                input_ids = prefix + doc_ids[window_start:window_end] + [tokenizer.sep_token_id]
                shift = len(prefix) - window_start
                rows = [list(range(opens[i] + 1 + shift, closes[i] + shift)) for i in inside]
                width = min(max(len(row) for row in rows), processor.max_mention_length)
                rows = [[1 + plc_index]] + [row[:width] for row in rows]
                count = len(rows)
                features.append(
                    {
                        "input_ids": input_ids,
                        "attention_mask": [1] * len(input_ids),
                        "token_type_ids": [0] * len(input_ids),
                        "global_attention_mask": [1]
                        + [2] * len(query_ids)
                        + [0] * (len(input_ids) - 1 - len(query_ids)),
                        "entity_ids": [processor.entity_mask_id] * count,
                        "entity_attention_mask": [1] * count,
                        "entity_token_type_ids": [0] * count,
                        "entity_position_ids": [row + [-1] * (width - len(row)) for row in rows],
                        "placeholder_entity_mask": [1] + [0] * (count - 1),
                        "entity_string_ids": [-1] + [string_ids[i] for i in inside],
                        "entity_sentence_ids": [-1] + [sentences[i] for i in inside],
                        "example_id": example.example_id,
                        "candidate_texts": [""] + [texts[i] for i in inside],
                        "answers": list(example.answers),
                        "labels": [0.0] + [float(normalized[i] in answers) for i in inside],
                    }
                )
            if window_end >= len(doc_ids):
                return features
            next_start = min(window_start + processor.doc_stride, window_end)
            cut = [opens[i] for i in range(len(spans)) if opens[i] >= window_start and closes[i] >= window_end]
            window_start = min([next_start] + [start for start in cut if start < next_start])


def best_rates(functions: dict[str, tuple], repeats: int) -> dict[str, float]:
    """Best queries/second of each ``name: (function, queries)``, runs interleaved against drifting machine load."""
    best = {name: float("inf") for name in functions}
    for _ in range(repeats):
        for name, (function, _) in functions.items():
            start = time.perf_counter()
            function()
            best[name] = min(best[name], time.perf_counter() - start)
    return {name: functions[name][1] / best[name] for name in functions}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--copies", type=int, default=12, help="copies of the 124 sample queries for the processor")
    parser.add_argument("--plain-copies", type=int, default=4, help="copies for the plain loop")
    parser.add_argument("--batch-size", type=int, default=1000)
    parser.add_argument("--num-proc", type=int, default=2, help="datasets.map workers for the end-to-end figure")
    parser.add_argument("--repeats", type=int, default=2, help="timed runs of each side; the best one counts")
    parser.add_argument("--tokenizer", default=None, help="saved LUKE tokenizer folder (default: built from shared)")
    args = parser.parse_args()

    records = [json.loads(line) for name in SAMPLE_FILES for line in (SHARED / "data/record" / name).open()]
    assert all(len(record["qas"]) == 1 for record in records)
    processor = GesaProcessor(load_tokenizer(args.tokenizer))
    plain = PlainLoop(processor)
    print(f"machine: {os.cpu_count()} cores; 124 real ReCoRD queries, copies with distinct passages")
    print(
        f"{'scenario':34s}{'queries':>9s}{'processor q/s':>15s}{'plain q/s':>11s}{'ratio':>7s}"
        f"{'100k: processor':>17s}{'plain':>9s}"
    )
    for label, queries_per_passage in (
        ("distinct passages (1 q/passage)", 1.0),
        ("ReCoRD-like (1.53 q/passage)", 1.53),
    ):
        rows = hub_rows(records, args.copies, queries_per_passage)
        plain_rows = hub_rows(records, args.plain_copies, queries_per_passage)
        batches = [as_columns(rows[i : i + args.batch_size]) for i in range(0, len(rows), args.batch_size)]
        plain_examples = to_record_examples(plain_rows)

        # Same features from both, checked before timing (this also warms both up).
        expected = processor.encode_records(plain_rows)
        produced = [feature for example in plain_examples for feature in plain.encode(example)]
        assert len(produced) == len(expected["input_ids"]), "plain loop and processor disagree on the feature count"
        for index, feature in enumerate(produced):
            assert all(feature[key] == expected[key][index] for key in feature), f"feature {index} differs"

        rates = best_rates(
            {
                "processor": (lambda batches=batches: [processor.map_function(b) for b in batches], len(rows)),
                "plain": (
                    lambda rows=plain_rows: [plain.encode(e) for e in to_record_examples(rows)],
                    len(plain_rows),
                ),
            },
            args.repeats,
        )
        minutes = {name: FULL_RECORD_TRAIN_QUERIES / value / 60 for name, value in rates.items()}
        print(
            f"{label:34s}{len(rows):9d}{rates['processor']:15.0f}{rates['plain']:11.0f}"
            f"{rates['processor'] / rates['plain']:6.2f}x{minutes['processor']:13.1f} min{minutes['plain']:5.1f} min"
        )

    from datasets import Dataset, disable_progress_bars

    disable_progress_bars()
    dataset = Dataset.from_list(rows)
    for num_proc in sorted({1, args.num_proc}):
        start = time.perf_counter()
        processor.process_dataset(dataset, num_proc=num_proc, batch_size=args.batch_size, load_from_cache_file=False)
        map_rate = len(rows) / (time.perf_counter() - start)
        print(
            f"datasets.map end to end, num_proc={num_proc}, ReCoRD-like: {map_rate:.0f} q/s -> 100k queries in "
            f"{FULL_RECORD_TRAIN_QUERIES / map_rate / 60:.1f} min"
        )
    print("features of the processor and the plain loop: identical (checked)")


if __name__ == "__main__":
    main()
