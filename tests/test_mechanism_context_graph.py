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
"""The context graph's mechanism check (bench/mechanism_context_graph.py): its task needs two documents and word
order (checked by plain readers of the text), its control needs one document, a row whose control is not learned
makes the verdict "inconclusive", the two held-out tasks need what their docstring says (both of the person's
documents; the person's relay followed through two documents) and report the share of seeds learned, and a toy-size
run prints the table with three seeds per row."""

from __future__ import annotations

import re

import pytest
from script_helpers import ROOT, load_script

from gesa.records_wikihop import to_wikihop_examples

BENCH = load_script(ROOT / "bench" / "mechanism_context_graph.py", "mechanism_context_graph_under_test")


def test_the_task_needs_two_documents_and_their_word_order():
    records = BENCH.make_order_task(200, seed=7)
    to_wikihop_examples(records)  # valid WikiHop records
    for record in records:
        readings = BENCH.order_task_solvers(record)
        assert readings["both"] == {record["answer"]}
        # one document with its order, or two documents without it, or the town's document alone: never the answer
        # alone (at best one in two)
        assert record["answer"] in readings["one_document"] and len(readings["one_document"]) == 3
        assert readings["no_order"] == {record["answer"], *readings["no_order"]} and len(readings["no_order"]) == 2
        assert len(readings["town_document"]) == 1 and record["answer"] not in readings["town_document"]
    # the answer's place in the sorted candidates and the supports' order carry no hint
    assert len({record["candidates"].index(record["answer"]) for record in records}) == 4
    assert len({next(i for i, text in enumerate(record["supports"]) if text.lower().endswith(f"{record['answer']}."))
                for record in records}) == 5  # fmt: skip


def test_the_control_needs_one_document():
    for record in BENCH.make_order_task(100, seed=3, control=True):
        town = record["query"].split()[1]
        together = {word.strip(".") for text in record["supports"] if town in text.lower()
                    for word in text.lower().split()} & set(record["candidates"])  # fmt: skip
        assert together == {record["answer"]}


def test_the_intersection_answer_is_the_one_candidate_in_both_of_the_persons_documents():
    records = BENCH.make_intersection_task(200, seed=7)
    to_wikihop_examples(records)
    for record in records:
        person = record["query"].split()[1]
        assert len(record["supports"]) == 4 and len(record["candidates"]) == 4
        documents = [set(re.findall(r"[a-z]+", text.lower())) for text in record["supports"]]
        assert sum(person in names for names in documents) == 2
        assert all(len(names - {"and", "travelled", "together"}) == 4 for names in documents)
        for candidate in record["candidates"]:  # every candidate in two documents
            assert sum(candidate in names for names in documents) == 2
        readings = BENCH.intersection_readings(record)
        assert readings["both"] == {record["answer"]}
        # a node alone sees "travelled with the person once": three candidates, the answer among them
        assert record["answer"] in readings["one_document"] and len(readings["one_document"]) == 3
    assert len({record["candidates"].index(record["answer"]) for record in records}) == 4


def test_the_chain_answer_needs_the_persons_relay_followed_through_two_documents():
    records = BENCH.make_chain_task(200, seed=7)
    to_wikihop_examples(records)
    for record in records:
        person = record["query"].split()[1]
        readings = BENCH.chain_readings(record)
        assert readings["relay"] == {record["answer"]} and len(record["candidates"]) == 6
        assert not any(person in text.lower() and record["answer"] in text.lower() for text in record["supports"])
        assert record["answer"] in readings["chain_ends"] and len(readings["chain_ends"]) == 3
        assert record["answer"] in readings["one_document"] and len(readings["one_document"]) == 5
    assert len({record["candidates"].index(record["answer"]) for record in records}) == 6
    # no name of the held-out tasks is one of the order task's
    order_names = {name for record in BENCH.make_order_task(50, seed=1) for name in record["candidates"]}
    assert not order_names & {name for record in records for name in record["candidates"]}


def test_a_held_out_table_gives_the_share_of_seeds_learned_and_the_no_gnn_bound():
    rows = {"hde_base": {"seeds": [0, 1, 2, 3, 4], "task": [100.0, 98.4, 60.0, 100.0, 96.9], "seconds": 1.0},
            "no_gnn": {"seeds": [0, 1, 2, 3, 4], "task": [28.1, 31.2, 25.0, 29.7, 26.6], "seconds": 1.0}}  # fmt: skip
    arguments = {"task": "intersection", "eval_size": 64, "epochs": 12, "train_size": 240, "gnn_layers": 2,
                 "seeds": "0,1,2,3,4", "learned_accuracy": 70.0}  # fmt: skip
    lines = BENCH.held_out_table({"arguments": arguments, "rows": rows})
    assert (
        "chance 25.0; a node alone (no message passing) reaches at most 33.3; learned: dev accuracy >= 70" in lines[0]
    )
    assert "| hde_base | 91.1 ± 17.4 | 100.0, 98.4, 60.0, 100.0, 96.9 | 4/5 (not s2) |" in lines
    assert "| no_gnn | 28.1 ± 2.5 | 28.1, 31.2, 25.0, 29.7, 26.6 | 0/5 |" in lines
    assert "hde_base: learned on 4 of 5 seeds; beats no_gnn: yes" in lines
    assert "no_gnn: at most 31.2 on any seed (a node alone: 33.3, chance 25.0)" in lines
    assert lines[-1].startswith("verdict (does the GNN read what a node alone cannot?): yes: hde_base")
    rows["hde_base"]["task"] = [30.0, 28.0]
    rows["hde_base"]["seeds"] = [0, 1]
    lines = BENCH.held_out_table({"arguments": arguments, "rows": rows})
    assert lines[-1].endswith("inconclusive: hde_base: inconclusive (hde_base: 2 seed(s), a verdict needs 3)")


def results(task: dict[str, list[float]], control: dict[str, list[float]]) -> dict:
    rows = {name: {"seeds": [0, 1, 2][: len(task[name])], "task": task[name], "control": control[name],
                   "seconds": 1.0} for name in task}  # fmt: skip
    return {"arguments": {"eval_size": 64, "epochs": 12, "train_size": 240, "seeds": "0,1,2"}, "rows": rows}


def test_a_row_without_the_control_learned_is_inconclusive_never_no():
    learned, missed = [90.0, 95.0, 100.0], [30.0, 80.0, 95.0]
    lines = BENCH.table(results({"bert_base": [50.0, 52.0, 48.0], "no_gnn": [50.0, 52.0, 48.0], "luke": [90.0] * 3},
                                {"bert_base": missed, "no_gnn": missed, "luke": missed}))  # fmt: skip
    expected = (
        "bert_base: above chance: yes; beats no_gnn: inconclusive (one-document control below 62.5: bert_base s0)"
    )
    assert any(line.startswith(expected) for line in lines), lines
    assert lines[-1].startswith("verdict (does the GNN add what the question needs?): inconclusive")
    # the baseline without GNN cannot learn the control: only the graph row's control decides; LUKE's counts
    lines = BENCH.table(results({"bert_base": [90.0, 92.0, 94.0], "no_gnn": [50.0, 52.0, 48.0], "luke": [30.0] * 3},
                                {"bert_base": learned, "no_gnn": [25.0] * 3, "luke": missed}))  # fmt: skip
    expected = "bert_base: above chance: yes; beats no_gnn: yes; beats luke: inconclusive (one-document control below"
    assert any(line.startswith(expected) for line in lines), lines
    lines = BENCH.table(results({"bert_base": [90.0, 92.0, 94.0], "no_gnn": [50.0, 52.0, 48.0]},
                                {"bert_base": learned, "no_gnn": learned}))  # fmt: skip
    assert lines[-1].startswith("verdict (does the GNN add what the question needs?): yes: bert_base")
    lines = BENCH.table(results({"bert_base": [50.0, 70.0, 48.0], "no_gnn": [50.0, 52.0, 48.0]},
                                {"bert_base": learned, "no_gnn": learned}))  # fmt: skip
    assert lines[-1].startswith("verdict (does the GNN add what the question needs?): no:")
    two_seeds = BENCH.table(results({"bert_base": [90.0, 92.0], "no_gnn": [50.0, 52.0]},
                                    {"bert_base": learned[:2], "no_gnn": learned[:2]}))  # fmt: skip
    assert "inconclusive (bert_base: 2 seed(s), a verdict needs 3)" in two_seeds[-1]


@pytest.mark.slow
def test_a_toy_run_prints_every_row_with_three_seeds_and_a_verdict(tmp_path, capsys):
    argv = ["--output_dir", str(tmp_path), "--rows", "hde_base,no_gnn,luke", "--train_size", "8", "--eval_size",
            "4", "--epochs", "1", "--gnn_layers", "1"]  # fmt: skip
    results = BENCH.main(argv)
    out = capsys.readouterr().out
    assert out.startswith("18 runs (3 rows x 3 seeds x task and control; task order)")
    for name in ("hde_base", "no_gnn", "luke"):
        assert len(results["rows"][name]["task"]) == len(results["rows"][name]["control"]) == 3
        assert all(0.0 <= value <= 100.0 for value in results["rows"][name]["task"])
        assert f"| {name} | " in out
    assert "verdict (does the GNN add what the question needs?): " in out
    printed = BENCH.table(results)
    assert capsys.readouterr().out == "" and printed[-1] in out
    assert (tmp_path / "results.json").is_file()
