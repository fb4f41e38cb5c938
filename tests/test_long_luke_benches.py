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
"""The long variant's benches: the mechanism check's documents put the answer beyond the distance (or, for the easy
case, inside the title's piece); its control cannot read the answer (the title's state does not depend on it at all)
while the long row can; the speed bench's pieces cover the document with each entity in its piece."""

from __future__ import annotations

import pytest
import torch
from script_helpers import ROOT, load_script

MECHANISM = load_script(ROOT / "bench" / "mechanism_long_luke.py", "mechanism_long_luke_under_test")
with pytest.MonkeyPatch.context() as _patch:
    _patch.syspath_prepend(str(ROOT / "bench"))  # as `python bench/bench_long_luke.py` does: its folder's `common`
    SPEED = load_script(ROOT / "bench" / "bench_long_luke.py", "bench_long_luke_under_test")


def test_the_answer_is_stated_beyond_the_distance_and_the_easy_case_inside_the_title_piece():
    args = MECHANISM.parse_args(["--output_dir", "x", "--distance", "400", "--length", "560", "--entities", "3"])
    for near in (False, True):
        documents, answers = MECHANISM.make_documents(50, 3, args, near=near)
        assert documents.shape == (50, 560) and (documents[:, 0] == MECHANISM.BOS).all()
        for words, answer in zip(documents.tolist(), answers.tolist(), strict=True):
            title = words[1]
            where = [i for i in range(3, len(words)) if words[i] == title]
            assert len(where) == args.mentions  # the title's entity is stated that often, nowhere else
            for statement in where:
                assert words[statement + 1] == MECHANISM.IS
                assert words[statement + 2] == list(MECHANISM.ATTRIBUTES)[answer]
                assert (statement < 300) if near else (statement > 400)
            # one attribute per stated entity and mention
            assert sum(w in MECHANISM.ATTRIBUTES for w in words) == 3 * args.mentions
        assert len(set(answers.tolist())) == args.attributes  # every attribute is an answer somewhere


def test_the_control_cannot_read_the_answer_and_the_long_row_can(tmp_path):
    args = MECHANISM.parse_args(["--output_dir", "x", "--distance", "550", "--length", "650", "--window", "32",
                                 "--hidden_size", "16", "--heads", "2"])  # fmt: skip
    documents, _ = MECHANISM.make_documents(4, 0, args)
    other = documents.clone()
    attribute = torch.isin(documents, torch.tensor(list(MECHANISM.ATTRIBUTES)))
    other[attribute] = list(MECHANISM.ATTRIBUTES)[0] + (other[attribute] - list(MECHANISM.ATTRIBUTES)[0] + 1) % 4
    luke = MECHANISM.build_luke(tmp_path / "luke", args, seed=0)
    changes = {}
    for row in ("long", "control", "pieces", "long_random"):
        model = MECHANISM.build_model(row, luke, args).eval()
        with torch.no_grad():
            changes[row] = (model(documents) - model(other)).abs().max().item()
    assert MECHANISM.reach("control", args) < 550 and MECHANISM.PIECE < 550
    assert changes["control"] == 0.0 and changes["pieces"] == 0.0  # outside their reach: exactly independent
    assert changes["long"] > 1e-6


def test_the_table_counts_the_seeds_that_learned():
    args = vars(MECHANISM.parse_args(["--output_dir", "x"]))
    args = {k: v for k, v in args.items() if k not in ("row_list", "seed_list")}
    rows = {"long": {"accuracy": [100.0, 95.0, 30.0, 88.0, 70.0]}, "control": {"accuracy": [25.0, 26.0, 24.0]}}
    lines = MECHANISM.table({"arguments": args, "rows": rows})
    assert any(line.startswith("| long | 76.6") and "| 4/5 |" in line for line in lines)
    assert any(line.startswith("| control |") and "| 0/3 | 64 words |" in line for line in lines)


def test_the_pieces_cover_the_document_with_each_entity_in_its_piece():
    args = SPEED.parse_args(["--words", "1300", "--entities", "9"])
    whole, pieces = SPEED.whole_inputs(args, 1300), SPEED.piece_inputs(args, 1300)
    assert whole["input_ids"].shape == (1, 1302) and pieces["input_ids"].shape == (3, 512)
    real = pieces["attention_mask"].bool()
    words = torch.cat([ids[mask][1:-1] for ids, mask in zip(pieces["input_ids"], real, strict=True)])
    assert torch.equal(words, whole["input_ids"][0, 1:-1])
    assert int(pieces["entity_attention_mask"].sum()) == 9
    for p in range(3):
        for e in range(pieces["entity_ids"].size(1)):
            if pieces["entity_attention_mask"][p, e]:
                first = int(pieces["entity_position_ids"][p, e, 0])
                word = pieces["input_ids"][p, first]
                start = p * 510 + first - 1  # its word in the document
                assert word == whole["input_ids"][0, start + 1]
                assert start in (whole["entity_position_ids"][0, :, 0] - 1).tolist()
