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
"""The multi-hop diagnostic (bench/diagnose_graph.py): constant-score level, leave step, one tiny end-to-end run."""

from __future__ import annotations

import json
import math
import statistics

import pytest
from datasets import Dataset
from script_helpers import ROOT, load_script

SCRIPT = ROOT / "bench" / "diagnose_graph.py"


@pytest.fixture(scope="module")
def diagnose():
    return load_script(SCRIPT, "diagnose_graph")


def test_constant_score_loss_is_the_entropy_of_the_positive_rate(diagnose):
    # placeholder first (not a candidate), then 16 candidates of which one is the answer
    features = Dataset.from_dict({"labels": [[0.0] + [1.0] + [0.0] * 15], "entity_attention_mask": [[1] * 17]})
    p = 1 / 16
    assert diagnose.constant_score_loss(features) == pytest.approx(-(p * math.log(p) + (1 - p) * math.log(1 - p)))
    assert diagnose.constant_score_loss(features) == pytest.approx(0.234, abs=1e-3)  # the plateau


def test_leave_step_is_the_first_logged_loss_below_the_margin(diagnose):
    curve = [(100, 0.266), (200, 0.234), (300, 0.226), (400, 0.150)]
    assert diagnose.leave_step(curve, 0.234, 0.05) == 400
    assert diagnose.leave_step(curve, 0.234, 0.0) == 300
    assert diagnose.leave_step(curve[:2], 0.234, 0.05) is None


@pytest.mark.slow
def test_one_command_trains_prints_the_table_and_saves_the_plot(diagnose, tmp_path, capsys, caplog):
    rows = diagnose.main(
        ["--presets", "luke,full", "--inits", "old,new", "--max_steps", "4", "--logging_steps", "2",
         "--train_size", "32", "--eval_size", "8", "--hidden_size", "32", "--num_hidden_layers", "1",
         "--output_dir", str(tmp_path)]
    )  # fmt: skip
    assert [(row["preset"], row["init"]) for row in rows] == [("luke", "-"), ("full", "old"), ("full", "new")]
    assert all(row["steps"] == [2, 4] and set(row["em"]) == {1, 2} for row in rows)
    captured = capsys.readouterr()
    printed = captured.out
    assert "| luke | - |" in printed and "constant-score loss" in printed
    assert "Loading weights" not in captured.err and "is not used by" not in captured.err
    # the time estimate comes before the first run; one conversion line per preset, no warning per unused weight
    assert printed.index("9 training runs of 4 steps") < printed.index("[seed 0]")
    assert printed.count("converted from the tiny LUKE") == 2 and "is not used by" not in caplog.text
    assert (tmp_path / "curves.png").stat().st_size > 1000
    assert len(json.loads((tmp_path / "results.json").read_text())["rows"]) == 3


def run(preset, init, seed, leave):
    curve = [(10, 0.30), (20, 0.20 if leave == 20 else 0.234), (30, 0.20 if leave in (20, 30) else 0.234)]
    return {"preset": preset, "init": init, "seed": seed, "curve": curve, "em": {2: 25.0}, "seconds": 1.0}


def test_saved_results_reprint_and_compare_each_seed_with_luke(diagnose, tmp_path, capsys):
    """A stopped run's results.json prints its table; a preset is late when it leaves after LUKE on the same seed."""
    args = diagnose.DiagnosticArguments(seeds="0,1", max_steps=30, logging_steps=10, output_dir=str(tmp_path))
    runs = [run("luke", "-", 0, 20), run("full", "new", 0, 20), run("no_match_edges", "new", 0, 30),
            run("luke", "-", 1, 30), run("full", "new", 1, 20), run("no_match_edges", "new", 1, 20),
            run("full", "old", 0, None)]  # fmt: skip
    rows = diagnose.summarise(args, runs, 0.234)
    saved = {"args": diagnose.asdict(args), "constant_score_loss": 0.234, "rows": rows}
    (tmp_path / "results.json").write_text(json.dumps(saved))
    reprinted = diagnose.main(["--from_results", str(tmp_path / "results.json"), "--output_dir", str(tmp_path)])
    assert [row["leave_steps"] for row in reprinted] == [[20, 30], [20, 20], [30, 20], [None]]
    printed = capsys.readouterr().out
    assert "| full | new | 20 (s0: 20, s1: 20) |" in printed
    assert "init new: later than LUKE: ['no_match_edges (seeds [0])']" in printed
    assert "init old: later than LUKE: ['full (seeds [0])']" in printed
    assert (tmp_path / "curves.png").stat().st_size > 1000


def test_a_file_that_is_no_results_json_is_named(diagnose, tmp_path):
    (tmp_path / "results.json").write_text("{}")
    with pytest.raises(SystemExit, match="results.json"):
        diagnose.main(["--from_results", str(tmp_path / "results.json"), "--output_dir", str(tmp_path)])


def seeded_runs(preset, control, two_hop):
    """One run per seed with the given dev EM on the one-hop control and on two hops."""
    return [
        {"preset": preset, "init": "-" if preset == "luke" else "new", "seed": seed, "curve": [(10, 0.2)],
         "em": {1: one, 2: two}, "seconds": 1.0}
        for seed, (one, two) in enumerate(zip(control, two_hop, strict=True))
    ]  # fmt: skip


def rows_of(diagnose, *runs):
    args = diagnose.DiagnosticArguments(max_steps=10, logging_steps=10)
    rows = diagnose.summarise(args, [run for group in runs for run in group], 0.234)
    return {row["preset"]: row for row in rows}


def test_every_row_reports_mean_and_spread_over_its_seeds(diagnose):
    rows = rows_of(diagnose, seeded_runs("full", [48.0, 47.3, 98.0], [20.0, 27.0, 24.0]))
    full = rows["full"]
    assert full["em"][1] == pytest.approx((48.0 + 47.3 + 98.0) / 3)
    assert full["em_per_seed"][1] == [48.0, 47.3, 98.0]
    assert full["em_spread"][1] == pytest.approx(statistics.stdev([48.0, 47.3, 98.0]))
    assert diagnose.spread([25.0]) == 0.0


def test_a_run_that_has_not_learned_the_control_makes_the_answer_inconclusive_never_no(diagnose):
    # the runs at 1,000 steps: neither full (22.5) nor luke (24.0) had learned the one-hop control
    rows = rows_of(
        diagnose,
        seeded_runs("full", [22.5, 70.0, 80.0], [25.0, 25.0, 25.0]),
        seeded_runs("luke", [24.0] * 3, [25.0] * 3),
    )
    answer = diagnose.hop_verdict(rows["full"], rows["luke"], 2, control_em=50.0)
    assert answer.startswith("inconclusive") and "full s0" in answer and "luke s0, luke s1, luke s2" in answer
    assert diagnose.unlearned_control(rows["luke"], 20.0) == []


def test_a_verdict_needs_three_seeds_and_a_luke_row(diagnose):
    rows = rows_of(
        diagnose, seeded_runs("full", [90.0, 90.0], [60.0, 60.0]), seeded_runs("luke", [90.0] * 2, [25.0] * 2)
    )
    assert diagnose.hop_verdict(rows["full"], rows["luke"], 2, 50.0).startswith("inconclusive (full: 2 seed(s)")
    assert diagnose.hop_verdict(rows["full"], None, 2, 50.0).startswith("inconclusive (no luke row")


def test_with_the_control_learned_yes_needs_the_spreads_apart(diagnose):
    luke = seeded_runs("luke", [90.0, 95.0, 92.0], [24.0, 26.0, 25.0])
    ahead = rows_of(diagnose, seeded_runs("full", [96.0, 97.0, 98.0], [60.0, 64.0, 58.0]), luke)
    assert diagnose.hop_verdict(ahead["full"], ahead["luke"], 2, 50.0) == "yes"
    noisy = rows_of(diagnose, seeded_runs("full", [96.0, 97.0, 98.0], [20.0, 45.0, 27.0]), luke)
    assert diagnose.hop_verdict(noisy["full"], noisy["luke"], 2, 50.0) == "no"


def test_the_control_always_runs_and_the_curriculum_fits_in_the_steps(diagnose):
    assert diagnose.DiagnosticArguments(hops="2").hop_list == [1, 2]
    assert diagnose.DiagnosticArguments(seeds="0,1,2").seed_list == [0, 1, 2]
    with pytest.raises(SystemExit, match="curriculum_steps"):
        diagnose.DiagnosticArguments(max_steps=100, curriculum_steps=100)


@pytest.mark.slow
def test_a_curriculum_run_logs_one_curve_over_both_phases(diagnose, tmp_path, capsys):
    rows = diagnose.main(
        ["--presets", "luke,full", "--inits", "new", "--seeds", "0", "--max_steps", "4", "--curriculum_steps", "2",
         "--logging_steps", "2", "--train_size", "32", "--eval_size", "8", "--hidden_size", "32",
         "--num_hidden_layers", "1", "--output_dir", str(tmp_path)]
    )  # fmt: skip
    assert all(row["steps"] == [2, 4] and set(row["em"]) == {1, 2} for row in rows)
    assert "2-hop: inconclusive" in capsys.readouterr().out


def test_the_output_folder_is_never_a_silent_default(diagnose, tmp_path, capsys):
    with pytest.raises(SystemExit, match=r"^diagnose_graph.py: error: --output_dir: .*e\.g\. --output_dir \S+"):
        diagnose.main(["--presets", "full"])
    a_file = tmp_path / "results"
    a_file.write_text("")
    with pytest.raises(SystemExit, match=r"--output_dir: .*is a file, not a folder"):
        diagnose.main(["--output_dir", str(a_file)])
    assert not (tmp_path / "diagnostic_out").exists()


def test_the_run_count_and_time_are_estimated_up_front(diagnose):
    from gesa.configuration_gesa import ABLATION_PRESETS

    args = diagnose.DiagnosticArguments(presets="luke,full,no_question_mentions", inits="new", seeds="0,1,2")
    runs, seconds = diagnose.time_estimate(args)
    assert runs == 9 and seconds == pytest.approx(9 * args.max_steps * diagnose.SECONDS_PER_STEP)
    wide = diagnose.DiagnosticArguments(presets="all", inits="old,new", seeds="0,1,2", hidden_size=128)
    runs, wide_seconds = diagnose.time_estimate(wide)
    gesa_presets = len(ABLATION_PRESETS) - 1  # every preset but luke runs once per init
    assert runs == 3 * (gesa_presets * 2 + 1)
    assert wide_seconds == pytest.approx(runs * args.max_steps * diagnose.SECONDS_PER_STEP * 4)  # width^2


def test_a_row_that_never_left_shows_no_step(diagnose, tmp_path, capsys):
    args = diagnose.DiagnosticArguments(seeds="0,1", max_steps=30, logging_steps=10, output_dir=str(tmp_path))
    runs = [run("luke", "-", 0, None), run("luke", "-", 1, None), run("full", "new", 0, None),
            run("full", "new", 1, 20)]  # fmt: skip
    rows = diagnose.summarise(args, runs, 0.234)
    assert [row["leave_mean"] for row in rows] == [None, None]
    diagnose.print_table(args, rows, 0.234)
    printed = capsys.readouterr().out
    assert "| luke | - | never (s0: never, s1: never) |" in printed
    assert "| full | new | never on 1 of 2 seeds (s0: never, s1: 20) |" in printed
    assert "inf" not in printed
    # seed 1: full left and LUKE never did (earlier); seed 0: neither left, nothing to compare
    assert "init new: every GESA preset leaves no later than LUKE (LUKE leaves at s0: never, s1: never" in printed


def test_no_leave_verdict_when_no_run_left(diagnose, tmp_path, capsys):
    args = diagnose.DiagnosticArguments(seeds="0", max_steps=30, logging_steps=10, output_dir=str(tmp_path))
    rows = diagnose.summarise(args, [run("luke", "-", 0, None), run("full", "new", 0, None)], 0.234)
    lines = diagnose.leave_comparison(rows, rows[0])
    assert lines == [
        "init new: no run of LUKE or of any preset left the constant-score level (LUKE leaves at s0: never; "
        "compared seed by seed)"
    ]
    late = diagnose.summarise(args, [run("luke", "-", 0, 20), run("full", "new", 0, None)], 0.234)
    assert "later than LUKE: ['full (seeds [0])']" in diagnose.leave_comparison(late, late[0])[0]


def test_the_plot_gives_every_preset_its_own_colour_and_explains_both_lines(diagnose, tmp_path):
    from gesa.configuration_gesa import ABLATION_PRESETS

    args = diagnose.DiagnosticArguments(presets="all", inits="new", seeds="0", max_steps=30, logging_steps=10)
    runs = [run(name, "-" if name == "luke" else "new", 0, 20) for name in ABLATION_PRESETS]
    rows = diagnose.summarise(args, runs, 0.234)
    figure = diagnose.plot(args, rows, 0.234, tmp_path / "curves.png")
    axis = figure.axes[0]
    colours = [tuple(line.get_color()) if not isinstance(line.get_color(), str) else line.get_color()
               for line in axis.get_lines() if line.get_linestyle() == "-"]  # fmt: skip
    assert len(colours) == len(ABLATION_PRESETS) == len(set(colours))
    labels = [text.get_text() for text in axis.get_legend().get_texts()]
    assert any(label.startswith("constant-score loss") for label in labels)
    assert any(label.startswith("leave threshold") for label in labels)
    styles = {line.get_label(): line.get_linestyle() for line in axis.get_lines()}
    assert styles[next(label for label in labels if label.startswith("leave threshold"))] == ":"
