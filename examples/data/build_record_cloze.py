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
"""Build the sample the ``run_record.py`` demo trains on (``record_cloze_train.jsonl``, ``record_cloze_dev.jsonl``):
the project's one-hop entity cloze (``gesa.training.synthetic_cloze``, world ``cities``), in ReCoRD's SuperGLUE jsonl
shape (inclusive ``end`` offsets).

Each passage holds four facts ``X lives in CITY.`` in a random order; its one query asks ``X lives in
@placeholder.`` for one of them. Every person and city mention is a candidate (eight per passage, so a uniform
guess among them scores 12.5 exact match); every mention of the answer city is an answer. A tiny GESA trained from
scratch learns it within a few hundred steps, so the demo shows a model that learns, where the news-story sample
(``record_sample_*.jsonl``, 42 queries) only shows the pipeline run. Run
``python examples/data/build_record_cloze.py`` to regenerate (the same files every time: fixed seeds).
"""

from __future__ import annotations

from pathlib import Path

from gesa.training.synthetic_cloze import generate_records, write_jsonl

HERE = Path(__file__).resolve().parent
# split -> (queries, generator seed): the dev split is drawn with another seed (other chains and orders)
SPLITS = {"train": (400, 1), "dev": (64, 2)}


def build(split: str) -> list[dict]:
    """The records of ``split`` (one one-hop query each; ids ``cloze-<split>-<n>-h1``)."""
    count, seed = SPLITS[split]
    return generate_records(count, hops=(1,), seed=seed, prefix=f"cloze-{split}")


def main() -> None:
    """Write both splits next to this file."""
    for split in SPLITS:
        path = write_jsonl(build(split), HERE / f"record_cloze_{split}.jsonl")
        print(f"{path.name}: {SPLITS[split][0]} queries")


if __name__ == "__main__":
    main()
