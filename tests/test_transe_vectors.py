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
"""``examples/train_transe.py``: TransE vectors trained with PyKEEN from a triples file, written in the format
``--kb_entity_vectors`` reads; the trained vectors put true triples closer (``||h + r - t||``) than corrupted ones.
Skipped without PyKEEN (``pip install 'gesa[kge]'``)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch
from script_helpers import load_script

from gesa.records_kb import read_entity_vectors

pytest.importorskip("pykeen", reason="TransE training needs PyKEEN: pip install 'gesa[kge]'")

SCRIPT = Path(__file__).resolve().parents[1] / "examples" / "train_transe.py"
PEOPLE = ["Alice Smith", "Bob Jones", "Carol", "Dan Brown", "Eve Stone", "Frank"]
CITIES = ["Paris", "Berlin", "Madrid"]


def test_transe_vectors_load_as_a_kb_and_score_true_triples_better(tmp_path):
    triples = [(person, "lives_in", CITIES[i % 3]) for i, person in enumerate(PEOPLE)]
    triples += [(person, "knows", PEOPLE[(i + 1) % len(PEOPLE)]) for i, person in enumerate(PEOPLE)]
    path = tmp_path / "triples.tsv"
    path.write_text("".join(f"{h}\t{r}\t{t}\n" for h, r, t in triples), encoding="utf-8")
    output = tmp_path / "entities.txt"
    script = load_script(SCRIPT, "train_transe_under_test")
    losses = script.main(["--triples", str(path), "--output", str(output), "--dim", "16", "--epochs", "60",
                          "--batch_size", "4", "--seed", "0"])  # fmt: skip
    assert losses[-1] < losses[0]
    names, vectors = read_entity_vectors(output)
    assert sorted(names) == sorted(PEOPLE + CITIES) and vectors.shape == (len(names), 16)
    row = {name: i for i, name in enumerate(names)}
    # h + r ~ t: r estimated from the vectors alone, the true tail beats every other city
    lives = torch.stack([vectors[row[CITIES[i % 3]]] - vectors[row[p]] for i, p in enumerate(PEOPLE)]).mean(0)
    hits = 0
    for i, person in enumerate(PEOPLE):
        distances = {city: float((vectors[row[person]] + lives - vectors[row[city]]).norm()) for city in CITIES}
        hits += min(distances, key=distances.get) == CITIES[i % 3]
    assert hits >= 4, hits


def test_a_bad_triples_line_is_one_error_naming_file_and_line(tmp_path, capsys):
    path = tmp_path / "triples.tsv"
    path.write_text("Alice\tknows\tBob\nAlice\tknows\n", encoding="utf-8")
    with pytest.raises(SystemExit):
        load_script(SCRIPT, "train_transe_bad").main(["--triples", str(path), "--output", str(tmp_path / "o.txt")])
    assert f"--triples {path}, line 2: has 2 non-empty tab-separated field(s), expected 3" in capsys.readouterr().err


def test_every_flag_has_help_abbreviations_are_refused_and_the_docstring_keeps_its_layout(capsys):
    script = load_script(SCRIPT, "train_transe_help")
    with pytest.raises(SystemExit):
        script.main(["--help"])
    text = capsys.readouterr().out
    entries: dict[str, str] = {}  # flag -> what --help prints after "--flag METAVAR"
    for line in text.split("options:")[1].splitlines():
        if line.lstrip().startswith("--"):
            flag, _, rest = line.strip().partition(" ")
            entries[flag] = rest.split(maxsplit=1)[1] if len(rest.split(maxsplit=1)) > 1 else ""
        elif entries and line.strip():
            entries[flag] += " " + line.strip()
    flags = ("--triples", "--output", "--dim", "--epochs", "--batch_size", "--learning_rate", "--seed")
    assert set(flags) <= set(entries) and all(entries[flag].strip() for flag in flags), entries
    assert "    pip install 'gesa[kge]'   # PyKEEN\n" in text  # the docstring's own lines, not reflowed
    with pytest.raises(SystemExit):
        script.main(["--triple", "t.tsv", "--output", "o.txt"])  # a prefix is not taken for --triples
    assert "the following arguments are required: --triples" in capsys.readouterr().err


def test_with_no_argument_it_trains_the_shipped_demo_triples(tmp_path, monkeypatch, capsys):
    """No argument: the demo KB's triples at the demo LUKE's width; the shipped vectors hold the same entities."""
    script = load_script(SCRIPT, "train_transe_demo")
    assert Path(script.DEMO_TRIPLES).is_file()
    monkeypatch.chdir(tmp_path)
    epochs = script.DEMO_ARGS.index("--epochs") + 1
    short = [*script.DEMO_ARGS[:epochs], "2", *script.DEMO_ARGS[epochs + 1 :]]
    monkeypatch.setattr(script, "DEMO_ARGS", short)
    script.main([])
    printed = capsys.readouterr().out
    assert "no arguments: the demo KB's vectors (about " in printed and "on one idle core)" in printed
    assert re.search(r"hits@10 [\d.]+ \(before training [\d.]+; chance 13\.0\), mean rank [\d.]+ \(before training "
                     r"[\d.]+; chance 39\.0\) among 77 entities", printed), printed  # fmt: skip
    names, vectors = read_entity_vectors(tmp_path / "outputs" / "transe-demo" / "kb_entity_vectors.txt")
    shipped, shipped_vectors = read_entity_vectors(Path(script.DEMO_TRIPLES).with_name("kb_entity_vectors.txt"))
    assert names == shipped and vectors.shape == shipped_vectors.shape == (len(names), 16)
