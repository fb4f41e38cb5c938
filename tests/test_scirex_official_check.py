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
"""bench/scirex_official_check.py: what it reads from the official script's printout (pandas' ``describe().loc['mean']``
blocks) and the errors for a folder that is no SciREX checkout. The official script itself is not shipped: the
comparison runs where a user clones SciREX."""

from __future__ import annotations

import textwrap

import pytest
from script_helpers import ROOT, load_script

OFFICIAL_PRINTOUT = """
Salient Clustering Metrics
p     0.701111
r     0.656920
f1    0.659818
Name: mean, dtype: float64
Relation Metrics n=2
p     0.114671
r     0.355263
f1    0.170635
Name: mean, dtype: float64
Relation Metrics n=4
p     0.032407
r     0.074074
f1    0.043651
Name: mean, dtype: float64
"""


def _checkout(folder):
    script = folder / "scirex" / "evaluation_scripts" / "scirex_relation_evaluate.py"
    script.parent.mkdir(parents=True)
    script.write_text(
        textwrap.dedent(f"""
        import os
        assert os.environ["PYTHONHASHSEED"] == "3"
        print({OFFICIAL_PRINTOUT!r})
    """)
    )
    return folder


def test_the_official_printout_becomes_the_metrics_names(tmp_path):
    bench = load_script(ROOT / "bench" / "scirex_official_check.py", "scirex_official_check")
    scores = bench.official_scores(_checkout(tmp_path / "repo"), ["g", "n", "c", "r"], hash_seed=3)
    assert scores == {
        "cluster_precision": 0.701111, "cluster_recall": 0.65692, "cluster_f1": 0.659818,
        "relation_n2_precision": 0.114671, "relation_n2_recall": 0.355263, "relation_n2_f1": 0.170635,
        "relation_n4_precision": 0.032407, "relation_n4_recall": 0.074074, "relation_n4_f1": 0.043651,
    }  # fmt: skip


def test_a_folder_without_the_official_script_is_one_error(tmp_path, capsys):
    bench = load_script(ROOT / "bench" / "scirex_official_check.py", "scirex_official_check")
    with pytest.raises(SystemExit):
        bench.parse_args(["--scirex_repo", str(tmp_path), "--predictions", str(tmp_path), "--gold_file", "x.jsonl"])
    assert "give a clone of allenai/SciREX" in capsys.readouterr().err
