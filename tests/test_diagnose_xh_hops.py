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
"""XH's hop mechanism check (bench/diagnose_xh_hops.py): the synthetic bridge task holds its answer where only the
hop from the named paragraph can find it, the verdict needs three seeds and a learned control, one tiny run."""

from __future__ import annotations

import json

import pytest
from script_helpers import ROOT, load_script
from tiny_luke import build_luke_tokenizer

from gesa.processing_xh_tasks import XhTaskProcessor
from gesa.records_xh import to_hotpot_row

SCRIPT = ROOT / "bench" / "diagnose_xh_hops.py"


@pytest.fixture(scope="module")
def bench():
    return load_script(SCRIPT, "diagnose_xh_hops")


def test_the_answer_lies_only_in_the_paragraph_the_named_one_links_to(bench):
    rows = bench.make_bridge_questions(40, seed=3, people=3)
    assert [row["type"] for row in rows[:4]] == ["bridge", "control", "bridge", "control"]
    for row in rows:
        texts = {title: "".join(sentences) for title, sentences in row["context"]}
        person = row["question"].removeprefix("Which city is the employer of ").removesuffix(" based in?")
        holding = [title for title, text in texts.items() if row["answer"] in text]
        if row["type"] == "control":  # the named paragraph alone answers
            assert holding == [person] and len(texts) == 3
            continue
        company = row["supporting_facts"][1][0]
        assert holding == [company] and len(texts) == 6
        assert company in texts[person]  # the named paragraph links to the answer paragraph ...
        assert all(person not in text for title, text in texts.items() if title != person)  # ... nothing else names X
        others = [title for title in texts if title not in (person, company) and " is a company." in texts[title]]
        assert len(others) == 2 and all(row["answer"] not in texts[title] for title in others)


@pytest.mark.parametrize("edges, company_reads_person", [("title_mention", True), ("title_mention_eq7", False)])
def test_the_answer_paragraph_reads_the_named_one_only_along_the_released_direction(
    bench, edges, company_reads_person
):
    row = to_hotpot_row(bench.make_bridge_questions(1, seed=5)[0], "generated", "q-0")
    processor = XhTaskProcessor(build_luke_tokenizer(), max_node_length=64, max_query_length=40, hotpot_edges=edges)
    feature = processor.encode_hotpot_rows([row])[0]
    titles = feature["titles"]
    person, company = (titles.index(title) for title in row["supporting_facts"]["title"])
    assert feature["node_adjacency"][company][person] == int(company_reads_person)
    assert feature["node_adjacency"][person][company] == int(not company_reads_person)
    # the company's anchor sentence ("He works for ...") names no one
    anchor = processor.tokenizer.decode(feature["input_ids"][company])
    assert "works for" in anchor and titles[person] not in anchor.split("</s>", 2)[1]


def _rows(bridge: dict[str, list[float]], control: dict[str, list[float]]) -> dict[str, dict]:
    return {name: {"seeds": list(range(len(bridge[name]))), "em": {"bridge": bridge[name], "control": control[name]},
                   "seconds": [1.0] * len(bridge[name])} for name in bridge}  # fmt: skip


def test_the_verdict_needs_three_seeds_and_a_learned_control(bench):
    learned = {"hops": [90.0, 95.0, 100.0], "no_hops": [80.0, 85.0, 90.0]}
    rows = _rows({"hops": [90.0, 92.0, 94.0], "no_hops": [30.0, 35.0, 40.0]}, learned)
    assert bench.verdict(rows, "hops", "no_hops", 50.0) == "yes"
    assert bench.verdict(rows, "no_hops", "hops", 50.0) == "no"
    overlapping = _rows({"hops": [40.0, 60.0, 90.0], "no_hops": [30.0, 35.0, 50.0]}, learned)
    assert bench.verdict(overlapping, "hops", "no_hops", 50.0) == "no"  # means apart, spreads overlap
    unlearned = _rows({"hops": [90.0, 92.0, 94.0], "no_hops": [30.0, 35.0, 40.0]},
                      {"hops": [90.0, 95.0, 100.0], "no_hops": [80.0, 10.0, 90.0]})  # fmt: skip
    assert bench.verdict(unlearned, "hops", "no_hops", 50.0) == "inconclusive (control below 50 EM: no_hops s1)"
    two = _rows({"hops": [90.0, 92.0], "no_hops": [30.0, 35.0]}, {"hops": [90.0, 95.0], "no_hops": [80.0, 85.0]})
    assert bench.verdict(two, "hops", "no_hops", 50.0).startswith("inconclusive (hops: 2 seed(s)")
    assert bench.verdict(rows, "hops", "reversed", 50.0) == "inconclusive (reversed did not run)"


@pytest.mark.slow
def test_one_command_trains_the_three_systems_and_prints_the_table(bench, tmp_path, capsys):
    rows = bench.main(["--seeds", "0", "--max_steps", "3", "--train_size", "12", "--eval_size", "6",
                       "--hidden_size", "16", "--num_hidden_layers", "2", "--hop_layers", "1",
                       "--output_dir", str(tmp_path)])  # fmt: skip
    assert list(rows) == ["hops", "no_hops", "reversed"]
    printed = capsys.readouterr().out
    assert "| hops |" in printed and "| reversed |" in printed and "(choosing a company at random: 33 EM)" in printed
    assert "do the hops carry the answer? (hops vs no_hops): inconclusive (hops: 1 seed(s)" in printed
    saved = json.loads((tmp_path / "results.json").read_text())
    assert [run["system"] for run in saved["runs"]] == ["hops", "no_hops", "reversed"]
    assert all(set(run["em"]) == {"bridge", "control"} for run in saved["runs"])
