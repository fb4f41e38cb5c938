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
"""GESA's WikiHop mechanism check (bench/mechanism_gesa_wikihop.py): its two-document query needs exactly the town's
document and the one its region leads to (checked by a plain reader of the text), its control the town's document
alone; a row whose control is not learned makes a comparison "inconclusive"; results are kept per run, so a stopped
run loses nothing and a repeated command trains only what is missing."""

from __future__ import annotations

import json

import pytest
from script_helpers import ROOT, load_script

from gesa.records_wikihop import to_wikihop_examples

BENCH = load_script(ROOT / "bench" / "mechanism_gesa_wikihop.py", "mechanism_gesa_wikihop_under_test")


def test_the_country_query_needs_two_documents_and_the_control_one():
    records = BENCH.make_bridge_task(300, seed=7)
    to_wikihop_examples(records)  # valid WikiHop records
    kinds = {"task": 0, "control": 0}
    for record in records:
        readings = BENCH.bridge_task_solvers(record)
        assert len(record["candidates"]) == 6 and record["answer"] in record["candidates"]
        assert len(readings["countries"]) == 3 and len(readings["town_document"]) == 1
        if record["id"].startswith("task_"):
            # the town's document names a region, never the answer; the region's other document names the answer
            assert record["answer"] not in readings["town_document"]
            assert readings["two_documents"] == {record["answer"]} and record["answer"] in readings["countries"]
            assert record["query"].startswith("country ")
        else:
            assert readings["town_document"] == {record["answer"]}
        kinds[record["id"].split("_")[0]] += 1
        # every region in two documents, every country in one: only the query's town singles the answer out
        mentions = [sum(f" {name} " in f" {text.lower().rstrip('.')} " for text in record["supports"])
                    for name in record["candidates"]]  # fmt: skip
        assert sorted(mentions) == [1, 1, 1, 2, 2, 2]
    assert kinds == {"task": 150, "control": 150}
    # the answer's place among the sorted candidates and its support's place among the supports carry no hint
    tasks = [record for record in records if record["id"].startswith("task_")]
    assert len({record["candidates"].index(record["answer"]) for record in tasks}) >= 4
    assert len({next(i for i, text in enumerate(record["supports"]) if text.lower().endswith(f"{record['answer']}."))
                for record in tasks}) == 6  # fmt: skip
    assert BENCH.make_bridge_task(5, seed=7) == records[:5]  # a seed gives the same records


def run(row: str, seed: int, task: float, control: float) -> dict:
    return {"row": row, "seed": seed, "task": task, "control": control, "seconds": 1.0}


def results(rows: dict[str, tuple[list[float], list[float]]]) -> dict:
    runs = {f"{row} s{seed}": run(row, seed, task, control)
            for row, (tasks, controls) in rows.items()
            for seed, (task, control) in enumerate(zip(tasks, controls, strict=True))}  # fmt: skip
    arguments = {"eval_size": 128, "epochs": 12, "train_size": 800, "chains": 3, "control_accuracy": 0.0}
    return {"arguments": arguments, "runs": runs}


def verdict(lines: list[str], other: str) -> str:
    prefix = f"does gesa answer the two-document query better than {other}? "
    return next(line[len(prefix) :] for line in lines if line.startswith(prefix))


def test_a_comparison_needs_both_controls_learned_and_three_seeds():
    learned, missed = [90.0, 95.0, 100.0], [30.0, 80.0, 95.0]
    lines = BENCH.table(results({"gesa": ([90.0, 92.0, 94.0], learned), "luke": ([30.0] * 3, missed),
                                 "gesa_e2e_local": ([40.0, 45.0, 50.0], learned)}))  # fmt: skip
    assert verdict(lines, "luke") == "inconclusive (one-document control below 58.3333: luke s0)"
    assert verdict(lines, "gesa_e2e_local") == "yes"
    assert "| gesa | 0,1,2 | 92.0 ± 2.0 | 90.0, 92.0, 94.0 | 3/3 | 95.0 ± 5.0 |" in "\n".join(lines)
    lines = BENCH.table(results({"gesa": ([50.0, 90.0, 40.0], learned), "luke": ([45.0, 50.0, 55.0], learned)}))
    assert verdict(lines, "luke") == "no"
    lines = BENCH.table(results({"gesa": ([90.0, 92.0], learned[:2]), "luke": ([30.0] * 2, learned[:2])}))
    assert verdict(lines, "luke") == "inconclusive (gesa: 2 seed(s), a verdict needs 3)"


def test_runs_written_to_two_folders_print_as_one_table_when_their_settings_agree(tmp_path, capsys):
    learned = [90.0, 95.0, 100.0]
    first, second = results({"gesa": ([90.0, 92.0, 94.0], learned)}), results({"luke": ([30.0] * 3, learned)})
    for name, saved in (("a", first), ("b", second)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "results.json").write_text(json.dumps(saved))
    paths = f"{tmp_path / 'a' / 'results.json'},{tmp_path / 'b' / 'results.json'}"
    merged = BENCH.main(["--from_results", paths])
    assert sorted(merged["runs"]) == sorted([*first["runs"], *second["runs"]])
    assert verdict(capsys.readouterr().out.splitlines(), "luke") == "yes"
    second["arguments"]["epochs"] = 20
    (tmp_path / "b" / "results.json").write_text(json.dumps(second))
    with pytest.raises(SystemExit, match=r"other settings than .* \(epochs\)"):
        BENCH.main(["--from_results", paths])


def test_bad_flags_are_one_clear_error():
    with pytest.raises(SystemExit, match="--rows: unknown"):
        BENCH.main(["--output_dir", "x", "--rows", "gesa,bert"])
    with pytest.raises(SystemExit, match="--extra_rows"):
        BENCH.main(["--output_dir", "x", "--extra_rows", '{"mine": "--variant luke"}'])
    with pytest.raises(SystemExit, match="--output_dir is required"):
        BENCH.main([])


@pytest.mark.slow
def test_a_toy_run_writes_each_run_as_it_finishes_and_a_second_call_trains_only_what_is_missing(tmp_path, capsys):
    argv = ["--output_dir", str(tmp_path), "--train_size", "8", "--eval_size", "4", "--epochs", "1", "--hidden_size",
            "16", "--num_hidden_layers", "1", "--seeds", "0"]  # fmt: skip
    first = BENCH.main([*argv, "--rows", "gesa,luke"])
    out = capsys.readouterr().out
    assert out.startswith("2 runs to train (2 rows x 1 seeds)")
    assert sorted(first["runs"]) == ["gesa s0", "luke s0"]
    for entry in first["runs"].values():
        assert 0.0 <= entry["task"] <= 100.0 and 0.0 <= entry["control"] <= 100.0
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["runs"] == first["runs"]
    # the same command with one more row: the two runs are kept, the new row trained
    second = BENCH.main([*argv, "--rows", "gesa,luke,gesa_e2e_local"])
    out = capsys.readouterr().out
    assert out.startswith("1 runs to train (3 rows x 1 seeds, 2 already in")
    assert {key: second["runs"][key] for key in first["runs"]} == first["runs"]
    assert "| gesa_e2e_local | 0 |" in out
