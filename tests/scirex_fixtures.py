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
"""SciREX-format documents the tests write (release format, end-exclusive spans) and the real sample's paths.

- ``small_document()``: one hand-written paper of 38 words: four salient entities (one method with a sub-method), a
  non-salient one, two relations;
- ``write_jsonl(path, rows)``: rows as JSON lines;
- ``SCIREX_TRAIN`` / ``SCIREX_DEV``: the 40 real SciREX papers of ``../shared`` (tests reading them are marked
  ``needs_shared``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tiny_luke import SHARED

SCIREX_TRAIN = SHARED / "data" / "scirex" / "train30.jsonl"
SCIREX_DEV = SHARED / "data" / "scirex" / "dev10.jsonl"

TEXT = (
    "document : Zorn Net for image dehazing . "  # words 0-8
    "We train Zorn Net and its Zorn block on Hazy-5 . "  # 8-19
    "Zorn Net reaches high PSNR on Hazy-5 and Fog-2 . "  # 19-29
    "The Vell baseline is slower . PSNR grows ."  # 29-38
)


def small_document(doc_id: str = "paper-1") -> dict[str, Any]:
    """A valid SciREX record of 38 words (see the module docstring)."""
    ner = [
        [2, 4, "Method"], [5, 7, "Task"], [10, 12, "Method"], [14, 16, "Method"], [17, 18, "Material"],
        [19, 21, "Method"], [23, 24, "Metric"], [25, 26, "Material"], [27, 28, "Material"], [30, 31, "Method"],
        [35, 36, "Metric"],
    ]  # fmt: skip
    return {
        "doc_id": doc_id,
        "words": TEXT.split(),
        "sentences": [[0, 8], [8, 19], [19, 29], [29, 35], [35, 38]],
        "sections": [[0, 8], [8, 38]],
        "ner": ner,
        "coref": {
            "Zorn_Net": [[2, 4], [10, 12], [19, 21]],
            "Zorn_block": [[14, 16]],
            "Image_Dehazing": [[5, 7]],
            "Hazy-5": [[17, 18], [25, 26]],
            "Fog-2": [[27, 28]],
            "PSNR": [[23, 24], [35, 36]],
            "Sharpness": [],
        },
        "coref_non_salient": {"0": [[30, 31]]},
        "n_ary_relations": [
            {"Material": "Hazy-5", "Metric": "PSNR", "Task": "Image_Dehazing", "Method": "Zorn_Net", "score": "31.2"},
            {"Material": "Fog-2", "Metric": "Sharpness", "Task": "Image_Dehazing", "Method": "Zorn_Net", "score": 0.8},
        ],  # fmt: skip
        "method_subrelations": {"Zorn_Net": [[[0, 8], "Zorn_Net"], [[0, 4], "Zorn_block"]]},
    }


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path
