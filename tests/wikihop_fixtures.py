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
"""A small WikiHop record the project writes itself (``query`` "relation subject", ``supports``, ``candidates``,
``answer``), for the tests of the WikiHop processors and heads."""

from __future__ import annotations

# Three supports: the subject (Velmor), its province, a second province; candidates named in them and one not.
VELMOR_SUPPORTS = [
    "Velmor is a small town in Abo Province. It lies near France and Spain.",
    "Abo Province is a region of France. Velmor is old.",
    "Kastrel Province is a region of Spain. Spain borders France.",
]


def velmor_record(example_id: str, answer: str = "france", supports: list[str] = VELMOR_SUPPORTS, **fields) -> dict:
    """The WikiHop record "country velmor" with candidates france, spain, norway (`fields` replace any key)."""
    record = {"id": example_id, "query": "country velmor", "supports": list(supports), "answer": answer}
    return {**record, "candidates": ["france", "spain", "norway"], **fields}
