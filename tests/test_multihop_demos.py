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
"""The WikiHop and MedHop demos (``run_multihop.py`` with no data or model) learn: the accuracy after training is
above chance and above the accuracy before training, on 64 evaluation queries; the MedHop demo reads MedHop-shaped
records (DrugBank-id candidates, UniProt proteins), not WikiHop's sample.

Cost: two demos, ~30 s each on one idle core (marked slow); they are the documented-commands check's whole demos."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from script_helpers import load_multihop_script

from gesa.records_wikihop import to_wikihop_examples
from gesa.training.wikihop import make_medhop_sample

SUMMARY = re.compile(r"(\d+) queries: accuracy ([\d.]+); before training: accuracy ([\d.]+); chance ([\d.]+)")


def test_the_medhop_sample_is_shaped_as_the_release():
    records = make_medhop_sample(50, seed=4)
    examples = to_wikihop_examples(records)
    drug, protein = re.compile(r"^DB\d{5}$"), re.compile(r"^[OPQ]\d[A-Z0-9]{3}\d$")
    for record, example in zip(records, examples, strict=True):
        assert record["id"].startswith("MH_") and re.fullmatch(r"interacts_with DB\d{5}\?", record["query"])
        assert record["candidates"] == sorted(record["candidates"]) and all(map(drug.match, record["candidates"]))
        words = {word for text in record["supports"] for word in text.split()}
        assert any(protein.match(word) for word in words)
        # the answer shares a protein with the query drug; no other candidate does
        subject = example.subject_mention

        def proteins_of(name: str, texts=record["supports"]) -> set[str]:
            return {w for text in texts if name in text.split() for w in text.split() if protein.match(w)}

        shared = {name for name in record["candidates"] if proteins_of(name) & proteins_of(subject)}
        assert shared == {record["answer"]}
    assert len({record["candidates"].index(record["answer"]) for record in records}) == 4


@pytest.mark.slow
@pytest.mark.parametrize(("task", "title"), [("wikihop", "WikiHop"), ("medhop", "MedHop")])
def test_the_demo_learns(tmp_path, capsys, monkeypatch, task, title):
    """``python examples/run_multihop.py --task wikihop|medhop`` as documented: it learns, keeps its data in
    ``demo-data`` and leaves a model that predicts, no checkpoint folders."""
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    load_multihop_script().main(["--task", task])
    summary = capsys.readouterr().out.strip().splitlines()[-1]
    found = SUMMARY.search(summary)
    assert summary.startswith(title) and found, summary
    queries, after, before, chance = int(found[1]), float(found[2]), float(found[3]), float(found[4])
    assert queries == 64 and after > chance and after > before, summary
    folder = Path(f"outputs/gesa-tiny-{task}")
    assert f"demo data: {folder / 'demo-data'}" in summary
    assert {"train.json", "dev.json", "test.jsonl", "tiny-luke"} <= {p.name for p in (folder / "demo-data").iterdir()}
    assert (folder / "predict_predictions.json").is_file() and not list(folder.glob("checkpoint-*"))
