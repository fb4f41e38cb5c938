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
hop from the named paragraph can find it, the verdict needs three seeds and a learned control, the time estimate
scales a timed probe, a stopped command keeps the runs it finished, one tiny run."""

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


def fake_run(system: str, seed: int, seconds: float = 10.0) -> dict:
    return {"system": system, "seed": seed, "em": {"bridge": 50.0, "control": 90.0}, "loss": [1.0], "seconds": seconds,
            "featurise_seconds": 2.0, "predict_seconds": 1.0}  # fmt: skip


def test_the_time_estimate_scales_a_timed_probe_to_every_run(bench, tmp_path, monkeypatch):
    args = bench.XhHopsArguments(seeds="0,1", max_steps=100, batch_size=4, probe_steps=5, output_dir=str(tmp_path))
    probes = []

    def probe(args, luke, tokenizer, system, seed, train, dev, workdir, max_steps=None):
        probes.append((system, len(train), len(dev), max_steps))
        return fake_run(system, seed, seconds=1.0)  # 0.2 s per step; 2 s featurising, 1 s predicting 8 questions

    monkeypatch.setattr(bench, "run_one", probe)
    monkeypatch.setattr(bench, "build_luke", lambda *a: tmp_path)
    estimate = bench.estimate_seconds(args, None, [{}] * 80, [{}] * 16, tmp_path)
    assert probes == [("hops", 8, 8, 5)]
    assert estimate["seconds_per_step"] == pytest.approx(0.2)
    assert estimate["seconds_per_run"] == pytest.approx(2.0 * 10 + 1.0 * 2 + 0.2 * 100)  # 42 s per run
    assert estimate["total_seconds"] == pytest.approx(6 * 42.0)  # 2 seeds x 3 systems


def test_a_stopped_command_keeps_the_runs_it_finished(bench, tmp_path, monkeypatch):
    finished = []

    def run_or_stop(args, luke, tokenizer, system, seed, train, dev, workdir, max_steps=None):
        if len(finished) == 2:
            raise KeyboardInterrupt  # the user stops the command during the third run
        finished.append(system)
        return fake_run(system, seed)

    monkeypatch.setattr(bench, "run_one", run_or_stop)
    monkeypatch.setattr(bench, "build_luke", lambda *a: tmp_path)
    with pytest.raises(KeyboardInterrupt):
        bench.main(["--seeds", "0", "--train_size", "4", "--eval_size", "2", "--probe_steps", "0",
                    "--output_dir", str(tmp_path)])  # fmt: skip
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["complete"] is False and [run["system"] for run in saved["runs"]] == ["hops", "no_hops"]
    assert saved["runs"][0]["em"] == {"bridge": 50.0, "control": 90.0}


@pytest.mark.slow
def test_one_command_trains_the_three_systems_and_prints_the_table(bench, tmp_path, capsys):
    rows = bench.main(["--seeds", "0", "--max_steps", "3", "--train_size", "12", "--eval_size", "6",
                       "--hidden_size", "16", "--num_hidden_layers", "2", "--hop_layers", "1", "--probe_steps", "2",
                       "--output_dir", str(tmp_path)])  # fmt: skip
    assert list(rows) == ["hops", "no_hops", "reversed"]
    printed = capsys.readouterr().out
    first, second = printed.splitlines()[:2]
    assert first.startswith("3 runs of 3 steps") and second.startswith("time estimate on this machine (")
    assert "s per training step over 2 probe steps)" in second
    assert "| hops |" in printed and "| reversed |" in printed and "(choosing a company at random: 33 EM)" in printed
    assert "do the hops carry the answer? (hops vs no_hops): inconclusive (hops: 1 seed(s)" in printed
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["complete"] is True and [run["system"] for run in saved["runs"]] == ["hops", "no_hops", "reversed"]
    assert all(set(run["em"]) == {"bridge", "control"} for run in saved["runs"])
