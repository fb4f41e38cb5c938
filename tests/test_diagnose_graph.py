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
"""The multi-hop diagnostic (bench/diagnose_graph.py): its levels and leave steps, the share of seeds, its files, the
leakage checks, its argument errors and help, tiny end-to-end runs."""

from __future__ import annotations

import json
import math
import re
import statistics

import pytest
import torch
from datasets import Dataset
from script_helpers import ROOT, load_script

SCRIPT = ROOT / "bench" / "diagnose_graph.py"


@pytest.fixture(scope="module")
def diagnose():
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(ROOT / "bench"))  # as `python bench/diagnose_graph.py` does: its folder's `common`
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
         "--seeds", "0", "--headline_seeds", "0,1", "--output_dir", str(tmp_path)]
    )  # fmt: skip
    assert [(row["preset"], row["init"]) for row in rows] == [("luke", "-"), ("full", "old"), ("full", "new")]
    assert [row["seeds"] for row in rows] == [[0], [0, 1], [0, 1]]  # the headline on its own seeds
    assert all(row["steps"] == [2, 4] and set(row["em"]) == {1, 2} for row in rows)
    captured = capsys.readouterr()
    printed = captured.out
    assert "| luke | - |" in printed and "constant-score level" in printed and "city level" in printed
    assert "Loading weights" not in captured.err and "is not used by" not in captured.err
    # the time estimate comes before the first run; one conversion line per preset, no warning per unused weight
    assert printed.index("5 training runs of 4 steps") < printed.index("[seed 0]")
    assert "luke: 1 seed(s), full: 2 seed(s)" in printed
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
    assert "| full | new | 0/2 (not s0, s1) | 25.0 ± 0.0 [25, 25] | 20 (s0: 20, s1: 20) |" in printed
    assert "init new: later than LUKE: ['no_match_edges (seeds [0])']" in printed
    assert "init old: later than LUKE: ['full (seeds [0])']" in printed
    assert (tmp_path / "curves.png").stat().st_size > 1000


def test_a_file_that_is_no_results_json_is_named(diagnose, tmp_path, capsys):
    (tmp_path / "results.json").write_text("{}")
    with pytest.raises(SystemExit) as stop:
        diagnose.main(["--from_results", str(tmp_path / "results.json"), "--output_dir", str(tmp_path)])
    assert stop.value.code == 2
    assert "error: --from_results" in capsys.readouterr().err


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
    with pytest.raises(ValueError, match="curriculum_steps"):
        diagnose.DiagnosticArguments(max_steps=100, curriculum_steps=100)


@pytest.mark.slow
def test_a_curriculum_run_logs_one_curve_over_both_phases(diagnose, tmp_path, capsys):
    rows = diagnose.main(
        ["--presets", "luke,full", "--inits", "new", "--seeds", "0", "--headline_seeds", "0", "--max_steps", "4",
         "--curriculum_steps", "2",
         "--logging_steps", "2", "--train_size", "32", "--eval_size", "8", "--hidden_size", "32",
         "--num_hidden_layers", "1", "--output_dir", str(tmp_path)]
    )  # fmt: skip
    assert all(row["steps"] == [2, 4] and set(row["em"]) == {1, 2} for row in rows)
    assert "2-hop: inconclusive" in capsys.readouterr().out


def error_line(diagnose, argv, capsys) -> str:
    """The one line a refused command line prints (exit status 2, nothing on stdout)."""
    with pytest.raises(SystemExit) as stop:
        diagnose.main(argv)
    captured = capsys.readouterr()
    assert stop.value.code == 2 and not captured.out
    (line,) = captured.err.strip().splitlines()
    assert line.startswith("diagnose_graph.py: error: ")
    return line


def test_the_output_folder_is_never_a_silent_default(diagnose, tmp_path, capsys):
    line = error_line(diagnose, ["--presets", "full"], capsys)
    assert re.match(r"diagnose_graph.py: error: --output_dir: .*e\.g\. --output_dir \S+", line)
    a_file = tmp_path / "results"
    a_file.write_text("")
    assert "is a file, not a folder" in error_line(diagnose, ["--output_dir", str(a_file)], capsys)
    assert not (tmp_path / "diagnostic_out").exists()


def test_the_run_count_and_time_are_estimated_up_front(diagnose):
    from gesa.configuration_gesa import ABLATION_PRESETS

    args = diagnose.DiagnosticArguments(presets="luke,full,no_question_mentions", inits="new", seeds="0,1,2")
    runs, seconds = diagnose.time_estimate(args)  # full on ten seeds (the headline), the others on three
    assert runs == 16 and seconds == pytest.approx(16 * args.max_steps * diagnose.SECONDS_PER_STEP)
    wide = diagnose.DiagnosticArguments(presets="all", inits="old,new", seeds="0-2", headline="", hidden_size=128)
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
    assert "| 25.0 ± 0.0 [25, 25] | never (s0: never, s1: never) | 1 |" in printed  # luke
    assert "| 25.0 ± 0.0 [25, 25] | never on 1 of 2 seeds (s0: never, s1: 20) | 1 |" in printed  # full
    assert "inf" not in printed
    # seed 1: full left and LUKE never did (earlier); seed 0: neither left, nothing to compare
    assert (
        "init new: every GESA preset leaves no later than LUKE (LUKE leaves the constant-score level at s0: never, "
        "s1: never" in printed
    )


def test_no_leave_verdict_when_no_run_left(diagnose, tmp_path, capsys):
    args = diagnose.DiagnosticArguments(seeds="0", max_steps=30, logging_steps=10, output_dir=str(tmp_path))
    rows = diagnose.summarise(args, [run("luke", "-", 0, None), run("full", "new", 0, None)], 0.234)
    lines = diagnose.leave_comparison(rows, rows[0])
    assert lines == [
        "init new: no run of LUKE or of any preset left the constant-score level (LUKE leaves the constant-score "
        "level at s0: never; seed by seed)"
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


# ----------------------------------------------------------------------------------------------- the city level


def test_the_city_level_is_chance_among_the_windows_possible_answers(diagnose):
    """A one-hop window of the generator: 4 people, 4 cities, one city the answer: 4 H(1/4) over 8 candidates."""
    features = {
        "candidate_texts": [["", "Adler", "Aldmoor", "Bexley", "Brenvik", "Corran", "Caldera", "Dunmore", "Jorvik"]],
        "labels": [[0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0]],
        "entity_attention_mask": [[1] * 9],
        "placeholder_entity_mask": [[1] + [0] * 8],
    }
    cities = {"Aldmoor", "Brenvik", "Caldera", "Jorvik"}
    h = -(0.25 * math.log(0.25) + 0.75 * math.log(0.75))
    assert diagnose.city_level_loss(features, cities) == pytest.approx(4 * h / 8)
    # a two-hop window doubles the people (16 candidates): the same cities, half the level
    features["candidate_texts"][0] += ["Elwin", "Farrow", "Gaskell", "Hollis", "Adler", "Bexley", "Corran", "Dunmore"]
    features["labels"][0] += [0.0] * 8
    features["entity_attention_mask"][0] += [1] * 8
    features["placeholder_entity_mask"][0] += [0] * 8
    assert diagnose.city_level_loss(features, cities) == pytest.approx(4 * h / 16)


def test_the_city_leave_step_tells_the_runs_that_learned_from_the_ones_that_did_not(diagnose):
    """Both runs leave the constant-score level at step 50; only the one that learned leaves the city level."""
    args = diagnose.DiagnosticArguments(seeds="0,1", headline="", max_steps=200, logging_steps=50)
    plateau = [(50, 0.20), (100, 0.19), (150, 0.19), (200, 0.19)]
    learned = [(50, 0.20), (100, 0.19), (150, 0.12), (200, 0.09)]
    runs = [
        {"preset": "full", "init": "new", "seed": 0, "curve": learned, "em": {1: 100.0, 2: 25.0}, "seconds": 1.0},
        {"preset": "full", "init": "new", "seed": 1, "curve": plateau, "em": {1: 27.0, 2: 25.0}, "seconds": 1.0},
    ]
    (row,) = diagnose.summarise(args, runs, level=0.287, city_level=0.187)
    assert row["leave_steps"] == [50, 50]
    assert row["city_leave_steps"] == [150, None]
    assert row["learned"] == [True, False]
    assert diagnose.learned_cell(row, 50.0) == "1/2 (not s1)"


def test_the_table_prints_the_share_of_seeds_the_threshold_and_every_seed(diagnose, capsys):
    args = diagnose.DiagnosticArguments(seeds="0-9", headline="", max_steps=10, logging_steps=10, control_em=90.0)
    control = [100.0, 100.0, 26.0, 100.0, 100.0, 100.0, 100.0, 100.0, 100.0, 95.0]
    runs = [
        {"preset": "full", "init": "new", "seed": seed, "curve": [(10, 0.1 if em > 50 else 0.19)],
         "em": {1: em, 2: 25.0}, "seconds": 1.0}
        for seed, em in enumerate(control)
    ]  # fmt: skip
    rows = diagnose.summarise(args, runs, 0.287, 0.187)
    diagnose.print_table(args, rows, 0.287, 0.187)
    printed = capsys.readouterr().out
    assert "at or above 90 (--control_em)" in printed and "city level = 0.187" in printed
    mean = statistics.mean(control)
    assert f"| full | new | 9/10 (not s2) | {mean:.1f} ± {statistics.stdev(control):.1f} [100, 100, 26, " in printed
    assert "never on 1 of 10 seeds (s0: 10, s1: 10, s2: never," in printed


# ----------------------------------------------------------------------------------------------- files


def write_split(tmp_path, name, records, hops=None):
    from gesa.training.synthetic_cloze import write_jsonl

    records = json.loads(json.dumps(records))
    for record in records:
        for qa in record["qas"]:
            qa["id"] = f"{name}-{record['idx']}"  # ids without the generator's -h<N> suffix
            if hops is not None:
                qa["hops"] = hops(record)
    return write_jsonl(records, tmp_path / f"{name}.jsonl")


def test_files_give_their_hop_counts_by_field_or_by_file(diagnose, tmp_path):
    from gesa.training.synthetic_cloze import generate_records

    train = write_split(tmp_path, "train", generate_records(6, (1, 2), 0), hops=lambda r: 1 + r["idx"] % 2)
    one = write_split(tmp_path, "one", generate_records(3, (1,), 1))
    two = write_split(tmp_path, "two", generate_records(3, (2,), 2))
    args = diagnose.DiagnosticArguments(train_file=str(train), validation_file=f"1:{one},2:{two}")
    tasks = diagnose.load_tasks(args)
    assert tasks.dev_hops == {**{f"one-{i}": 1 for i in range(3)}, **{f"two-{i}": 2 for i in range(3)}}
    assert sorted(set(tasks.train_hops.values())) == [1, 2] and len(tasks.train) == 6
    # one file whose queries carry a hops field
    mixed = write_split(tmp_path, "mixed", generate_records(4, (1, 2), 3), hops=lambda r: 1 + r["idx"] % 2)
    args = diagnose.DiagnosticArguments(train_file=str(train), validation_file=str(mixed))
    assert diagnose.load_tasks(args).dev_hops == {"mixed-0": 1, "mixed-1": 2, "mixed-2": 1, "mixed-3": 2}


@pytest.mark.parametrize(
    ("validation", "message"),
    [
        ("plain", r"--validation_file .*plain.jsonl: query 'plain-0' has no hop count: give each query .*'hops'"),
        ("2:two", r"no one-hop query: the one-hop control must run beside the task"),
        ("missing", r"--validation_file .*missing.jsonl: does not exist"),
    ],
)
def test_a_file_without_what_the_diagnostic_needs_is_one_error_line(diagnose, tmp_path, capsys, validation, message):
    from gesa.training.synthetic_cloze import generate_records

    train = write_split(tmp_path, "train", generate_records(4, (1, 2), 0))
    write_split(tmp_path, "plain", generate_records(2, (1,), 1))
    write_split(tmp_path, "two", generate_records(2, (2,), 1))
    given = ",".join(f"{part.split(':')[0]}:{tmp_path / part.split(':')[1]}.jsonl" if ":" in part
                     else f"{tmp_path / part}.jsonl" for part in validation.split(","))  # fmt: skip
    argv = ["--train_file", str(train), "--validation_file", given, "--output_dir", str(tmp_path / "out")]
    assert re.search(message, error_line(diagnose, argv, capsys))
    assert not (tmp_path / "out").exists()  # refused before anything was written


def test_a_record_without_entity_annotations_is_refused(diagnose, tmp_path, capsys):
    row = {"passage": "Adler lives in Aldmoor.", "query": "Adler lives in @placeholder.", "answers": ["Aldmoor"]}
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps(row) + "\n")
    argv = ["--train_file", str(path), "--validation_file", str(path), "--output_dir", str(tmp_path / "out")]
    assert "line 1: the diagnostic needs ReCoRD records with annotated entities" in error_line(diagnose, argv, capsys)


# ----------------------------------------------------------------------------------------------- leakage checks


def test_rotated_cities_move_the_answer_with_the_passage(diagnose):
    from gesa.training.synthetic_cloze import CITIES, generate_records

    for record in generate_records(10, (1, 2), 4):
        ((rotated, mapping),) = diagnose.rotated_records([record], set(CITIES))
        assert sorted(mapping) == sorted(mapping.values()) and all(key != value for key, value in mapping.items())
        old, new = record["passage"]["text"], rotated["passage"]["text"]
        # the same sentences with each city replaced by the next one: the query's person now lives in the moved city
        assert [re.sub("|".join(CITIES), "C", s) for s in (old, new)] == [re.sub("|".join(CITIES), "C", old)] * 2
        (qa,), (moved,) = record["qas"], rotated["qas"]
        assert {a["text"] for a in moved["answers"]} == {mapping[qa["answers"][0]["text"]]}
        assert all(new[a["start"] : a["end"] + 1] == a["text"] for a in moved["answers"])
        assert [new[e["start"] : e["end"] + 1] for e in rotated["passage"]["entities"]] == [
            mapping.get(s, s) for s in (old[e["start"] : e["end"] + 1] for e in record["passage"]["entities"])
        ]


def test_an_unknown_query_name_is_one_the_passage_never_mentions(diagnose):
    from gesa.training.synthetic_cloze import PEOPLE, generate_records

    records = generate_records(10, (1, 2), 5)
    changed = diagnose.unknown_name_records(records, list(PEOPLE), seed=0)
    assert len(changed) == 10
    for old, new in zip(records, changed, strict=True):
        assert new["passage"] == old["passage"] and new["qas"][0]["answers"] == old["qas"][0]["answers"]
        names = [name for name in PEOPLE if re.search(rf"\b{name}\b", new["qas"][0]["query"])]
        assert len(names) == 1 and names[0] not in old["passage"]["text"]


def test_answers_removed_or_changed_leave_the_model_inputs_alone(diagnose, tmp_path):
    from gesa.processing_gesa import GesaProcessor
    from gesa.training.synthetic_cloze import generate_records

    records = generate_records(6, (1, 2), 6)
    tokenizer = diagnose.train_tokenizer([r["passage"]["text"] for r in records], tmp_path)
    processor = GesaProcessor(tokenizer, **diagnose.WINDOW, candidate_source="annotations")
    reference = processor.encode_records(records)
    for change in (False, True):
        replaced = diagnose.answers_replaced(records, change)
        assert all(bool(qa["answers"]) == change for r in replaced for qa in r["qas"])
        assert all(qa["answers"] != old["answers"] for r, o in zip(replaced, records, strict=True)
                   for qa, old in zip(r["qas"], o["qas"], strict=True))  # fmt: skip
        columns = processor.encode_records(replaced)
        assert all(columns[key] == reference[key] for key in reference if key not in ("labels", "answers"))


# ----------------------------------------------------------------------------------------------- arguments


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["--seeds", "a"], "--seeds: 'a' is not a comma-separated list"),
        (["--headline_seeds", "3-1"], "--headline_seeds: '3-1'"),
        (["--hops", "7"], "--hops: '7': the generators write 1, 2 or 3 hops"),
        (["--eval_size", "0"], "--eval_size must be >= 1, got 0"),
        (["--train_size", "0"], "--train_size must be >= 1, got 0"),
        (["--batch_size", "0"], "--batch_size must be >= 1, got 0"),
        (["--batch_size", "x"], "--batch-size: invalid int value: 'x'"),
        (["--presets", "fulll"], "--presets: unknown preset(s) ['fulll']"),
        (["--headline", "fulll"], "--headline: 'fulll' is no preset"),
        (["--inits", "huge"], "--inits: 'huge' is not 'old', 'new', 'mention', 'copies' or a positive number"),
        (["--learning_rate", "-1"], "--learning_rate must be a finite number > 0"),
        (["--control_em", "0"], "--control_em must be in (0, 100]"),
        (["--pairs", "17"], "--pairs 17: the cities generator has 16 places"),
        (["--pairs", "16", "--hops", "3"], "need 48 names a passage"),
        (["--hidden_size", "30"], "--hidden_size (30) must be a multiple of --num_attention_heads (4)"),
        (["--generator", "atlantis"], "invalid choice: 'atlantis'"),
        (["--train_file", "t.jsonl"], "--validation_file is needed too"),
        (
            ["--pres", "full"],
            "unknown arguments --pres full (flags are spelled out in full, never abbreviated",
        ),  # no prefix abbreviations
    ],
)
def test_every_bad_value_is_one_error_line_before_any_training(diagnose, tmp_path, capsys, argv, named):
    line = error_line(diagnose, [*argv, "--output_dir", str(tmp_path / "out")], capsys)
    assert named in line
    assert not (tmp_path / "out").exists()


def test_a_missing_matplotlib_is_named_before_training_unless_no_plot(diagnose, tmp_path, capsys, monkeypatch):
    import gesa.extras_gesa as extras

    real = extras.importlib.util.find_spec
    monkeypatch.setattr(
        extras.importlib.util, "find_spec", lambda name, *a: None if name == "matplotlib" else real(name, *a)
    )
    line = error_line(diagnose, ["--output_dir", str(tmp_path)], capsys)
    # one line naming the extra that installs it (extras_gesa), and the way around it
    assert 'pip install "gesa[dev]"' in line and "--no_plot" in line
    diagnose.check_plot_available(diagnose.DiagnosticArguments(no_plot=True))  # no plot, no matplotlib needed


def test_help_says_what_the_script_does_and_explains_every_flag(diagnose, capsys):
    with pytest.raises(SystemExit) as stop:
        diagnose.main(["--help"])
    assert stop.value.code == 0
    printed = capsys.readouterr().out
    # the docstring with its layout: the example command indented on its own line
    assert "Does the graph help?" in printed
    assert "\n    OMP_NUM_THREADS=1 python bench/diagnose_graph.py --output_dir diagnostic_out/cities\n" in printed
    actions = [action for action in diagnose.build_parser()._actions if action.option_strings != ["-h", "--help"]]
    assert actions and all(action.help and action.help.strip() for action in actions)
    assert not diagnose.build_parser().allow_abbrev


@pytest.mark.slow
def test_a_run_on_given_files_with_the_leakage_checks(diagnose, tmp_path, capsys):
    from gesa.training.synthetic_cloze import generate_records

    train = write_split(tmp_path, "train", generate_records(32, (1, 2), 0, world="harbours"))
    one = write_split(tmp_path, "one", generate_records(6, (1,), 1, world="harbours"))
    two = write_split(tmp_path, "two", generate_records(6, (2,), 2, world="harbours"))
    rows = diagnose.main(
        ["--train_file", str(train), "--validation_file", f"1:{one},2:{two}", "--presets", "full", "--seeds", "0",
         "--headline", "", "--max_steps", "4", "--logging_steps", "2", "--hidden_size", "32",
         "--num_hidden_layers", "1", "--leakage_checks", "--no_plot",
         "--output_dir", str(tmp_path / "out")]
    )  # fmt: skip
    printed = capsys.readouterr().out
    assert f"1 training runs of 4 steps on --train_file {train}" in printed
    ((checks,),) = [row["leakage"] for row in rows]
    assert checks["unknown_name_queries"] == 12 and checks["rotated_queries"] == 12
    assert set(checks["unknown_name_em"]) == set(checks["rotated_em"]) == {1, 2}
    for name in ("answers_removed", "answers_changed"):
        assert checks[f"{name}_same_inputs"] and checks[f"{name}_same_predictions"]
    assert "leakage checks (--leakage_checks)" in printed and "answers removed: same inputs and predictions" in printed
    assert not (tmp_path / "out" / "curves.png").exists()
    saved = json.loads((tmp_path / "out" / "results.json").read_text())
    assert 0 < saved["city_level"] < saved["constant_score_loss"]


# ----------------------------------------------------------------------------------------------- run_record.py


@pytest.mark.slow
def test_the_exported_run_record_command_trains_what_the_diagnostic_trains(diagnose, tmp_path, capsys):
    """run_record.py on the exported tiny LUKE, data and flags logs the diagnostic's own loss curve."""
    from script_helpers import record_script
    from transformers import TrainerCallback

    toy = ["--presets", "full", "--headline", "", "--seeds", "1", "--max_steps", "6", "--logging_steps", "2",
           "--train_size", "48", "--eval_size", "8", "--hidden_size", "32", "--num_hidden_layers", "2",
           "--generator", "harbours", "--no_plot"]  # fmt: skip
    (row,) = diagnose.main([*toy, "--output_dir", str(tmp_path / "diagnostic")])
    capsys.readouterr()
    assert diagnose.main([*toy, "--export_run_record", str(tmp_path / "export")]) == []
    printed = capsys.readouterr().out
    (command,) = (tmp_path / "export" / "run_record.sh").read_text().splitlines()[2:]
    assert (
        command.split()[1:]
        == diagnose.run_record_command(diagnose.parse_arguments(toy), tmp_path / "export", "full", 1)
        and command.split(" ", 1)[1] in printed
    )
    assert {path.name for path in (tmp_path / "export").iterdir()} >= {"train.jsonl", "dev_1hop.jsonl", "luke-seed1"}

    losses = []

    class Losses(TrainerCallback):
        def on_log(self, args, state, control, logs=None, **kwargs):
            if logs and "loss" in logs:
                losses.append(logs["loss"])

    argv = command.split()[3:]  # after OMP_NUM_THREADS=1 python examples/run_record.py
    results = record_script().main([*argv, "--disable_tqdm", "true"], callbacks=[Losses()])
    assert losses == pytest.approx(row["loss"], abs=5e-4)
    assert "eval_exact_match" in results


def test_the_tiny_luke_is_drawn_for_its_width(diagnose, tmp_path):
    """Weights at 1/sqrt(width) by default (0.125 at 64), LukeConfig's 0.02 when asked; the entity-aware queries tied."""
    from transformers import LukeModel

    from gesa.training.synthetic_cloze import generate_records

    texts = [r["passage"]["text"] for r in generate_records(20, (1, 2), 0)]
    tokenizer = diagnose.train_tokenizer(texts, tmp_path)
    for given, expected in (("0", 64**-0.5), ("0.02", 0.02)):
        args = diagnose.DiagnosticArguments(initializer_range=float(given))
        luke = LukeModel.from_pretrained(diagnose.build_tiny_luke(args, tokenizer, 0, tmp_path / given))
        attention = luke.encoder.layer[0].attention.self
        assert luke.config.initializer_range == pytest.approx(expected)
        assert attention.value.weight.std().item() == pytest.approx(expected, rel=0.05)
        assert torch.equal(attention.e2e_query.weight, attention.query.weight)


def test_inits_mention_leaves_the_edge_rows_unturned_and_new_turns_them(diagnose, tmp_path):
    """`--inits new` (the default) turns the graph's edge rows with the mention row; `--inits mention` turns the
    mention row only: the two conversions differ in the edge rows alone, and only `new` gives every head of a [MASK]
    candidate's e2e query the same positive logit on each edge row."""
    from gesa.structure_gesa import RelativeLabels
    from gesa.training.synthetic_cloze import generate_records

    args = diagnose.DiagnosticArguments(inits="new,mention", hidden_size=32, num_hidden_layers=2)
    assert [name for name, _ in args.init_list] == ["new", "mention"]
    records = generate_records(20, (1, 2), 0)
    tokenizer = diagnose.train_tokenizer([r["passage"]["text"] for r in records], tmp_path)
    processor = diagnose.GesaProcessor(tokenizer, **diagnose.WINDOW, candidate_source="annotations")
    luke = diagnose.build_tiny_luke(args, tokenizer, 0, tmp_path / "luke")
    models = {
        name: diagnose.convert(luke, "full", std, processor, 0, turn_edges=name != "mention")
        for name, std in args.init_list
    }
    labels = RelativeLabels(models["new"].config.max_relative_position)
    edges = [labels.plc_edge, labels.sent_edge, labels.match_edge]
    embeddings = models["new"].gesa.entity_embeddings
    with torch.no_grad():
        entity = embeddings(torch.full((1, 1), 2), torch.zeros(1, 1, dtype=torch.long), None)[0, 0]
        for new, mention in zip(models["new"].gesa.encoder.layer, models["mention"].gesa.encoder.layer, strict=True):
            a, b = new.attention.self, mention.attention.self
            others = [row for row in range(a.label_embeddings.weight.shape[0]) if row not in edges + [labels.any_edge]]
            assert torch.equal(a.label_embeddings.weight[others], b.label_embeddings.weight[others])
            queries = a.e2e_query(entity).view(a.num_heads, a.head_size)  # the plain q_h . r / sqrt(d) per head
            turned = queries @ a.label_embeddings.weight[edges].T / a.head_size**0.5
            torch.testing.assert_close(turned, turned[:1].expand_as(turned))  # one logit per edge row in every head
            assert (turned > 0).all()
            drawn = b.e2e_query(entity).view(b.num_heads, b.head_size) @ b.label_embeddings.weight[edges].T
            assert not torch.allclose(drawn, drawn[:1].expand_as(drawn))


# ----------------------------------------------------------------------------------------------- a user's checkpoint


@pytest.mark.slow
def test_a_users_luke_checkpoint_is_converted_for_every_seed_and_exported_as_is(diagnose, tiny_luke_dir, tmp_path,
                                                                                capsys):  # fmt: skip
    """--model_name_or_path: no tiny LUKE is drawn; each seed converts the user's checkpoint with its own tokenizer,
    the table reports the share of seeds on it, and the exported run_record.py commands train from it."""
    toy = ["--model_name_or_path", str(tiny_luke_dir), "--presets", "full", "--headline", "", "--seeds", "0,1",
           "--max_steps", "2", "--logging_steps", "2", "--train_size", "16", "--eval_size", "4",
           "--generator", "harbours", "--no_plot"]  # fmt: skip
    rows = diagnose.main([*toy, "--output_dir", str(tmp_path / "out")])
    printed = capsys.readouterr().out
    assert [row["seeds"] for row in rows] == [[0, 1]]
    assert printed.count(f"converted from {tiny_luke_dir}") == 1 and "learned" in printed
    saved = json.loads((tmp_path / "out" / "results.json").read_text())
    assert saved["args"]["model_name_or_path"] == str(tiny_luke_dir)
    assert saved["args"]["hidden_size"] == 32  # the checkpoint's own width, not the tiny LUKE's flag
    diagnose.main([*toy, "--export_run_record", str(tmp_path / "export")])
    commands = (tmp_path / "export" / "run_record.sh").read_text().splitlines()[2:]
    assert len(commands) == 2 and all(f"--model_name_or_path {tiny_luke_dir} " in c for c in commands)
    assert not list((tmp_path / "export").glob("luke-seed*"))


def test_a_users_checkpoint_refuses_the_tiny_luke_flags_and_names_a_bad_folder(diagnose, tiny_luke_dir, tmp_path,
                                                                               capsys):  # fmt: skip
    line = error_line(
        diagnose,
        ["--model_name_or_path", str(tiny_luke_dir), "--initializer_range", "0.02", "--output_dir", str(tmp_path)],
        capsys,
    )
    assert "--initializer_range 0.02: these set the tiny LUKE the diagnostic draws" in line
    (tmp_path / "empty").mkdir()
    line = error_line(
        diagnose, ["--model_name_or_path", str(tmp_path / "empty"), "--output_dir", str(tmp_path / "out")], capsys
    )
    assert f"--model_name_or_path {tmp_path / 'empty'}" in line


def test_inits_copies_keeps_lukes_query_and_new_brings_it_to_unit_gain(diagnose, tmp_path):
    """`--inits new` (the default) starts a small-weight LUKE's entity-aware queries at unit gain; `--inits copies`
    keeps them exact copies of LUKE's word query (the default before)."""
    from transformers import LukeModel

    from gesa.training.synthetic_cloze import generate_records

    args = diagnose.DiagnosticArguments(
        inits="new,copies", hidden_size=32, num_hidden_layers=2, initializer_range=0.02
    )
    records = generate_records(20, (1, 2), 0)
    tokenizer = diagnose.train_tokenizer([r["passage"]["text"] for r in records], tmp_path)
    processor = diagnose.GesaProcessor(tokenizer, **diagnose.WINDOW, candidate_source="annotations")
    luke = diagnose.build_tiny_luke(args, tokenizer, 0, tmp_path / "luke")
    new = diagnose.convert(luke, "full", 3.0, processor, 0)
    copies = diagnose.convert(luke, "full", 3.0, processor, 0, copy_queries=True)
    query = LukeModel.from_pretrained(luke).encoder.layer[0].attention.self.query.weight
    gain = query.pow(2).sum(dim=1).mean().sqrt()
    assert gain < 0.2
    assert torch.equal(copies.gesa.encoder.layer[0].attention.self.e2w_query.weight, query)
    torch.testing.assert_close(new.gesa.encoder.layer[0].attention.self.e2w_query.weight, query / gain)
    assert diagnose.GesaPreTrainedModel.entity_query_gain == 1.0  # the class setting is restored
