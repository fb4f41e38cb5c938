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
"""Gold entity links of an entity-task file (``run_entity_tasks.py --entity_links FILE``), which train KnowBERT-KAR's
linker with ``L_EL`` beside the task.

The file (``read_entity_links``): JSON lines, a JSON list, or an object holding the list under ``"data"``; one record
per example of the task files, ``{"id": <the example's id>, "links": [[start, end, entity], ...]}``: word spans of
the example's tokens (end exclusive, as the NER predictions) and the gold entity's name (an entity of the KB:
``--kb_entity_vectors``' names or LUKE's titles), or ``null`` for a mention that links to no KB entity (KnowBERT's
NULL). The ids are the readers': Open Entity's ``annot_id``, TACRED's ``id``, ``<file name>:<first line>`` for a
CoNLL-2003 sentence, a Hub row's ``id``. Every problem is one ``inputs_gesa.InputError`` naming the file, the line
or item, the record and the fix.

Flat module: imports its siblings relatively (the input layer), third-party packages otherwise.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from ..inputs_gesa import InputError, Location, read_json_file

LINKS_FIX = 'give {"id": example id, "links": [[start, end, entity or null], ...]} records, word spans end exclusive'


@dataclasses.dataclass(frozen=True)
class EntityLink:
    """One gold link: the word span ``[start, end)`` of an example and its entity's name (``None``: NULL)."""

    start: int
    end: int
    entity: str | None
    location: Location


def read_entity_links(path: str | Path, where: str | None = None) -> dict[str, list[EntityLink]]:
    """Example id -> its gold links, in file order (module docstring); an ``InputError`` at the first bad record."""
    links: dict[str, list[EntityLink]] = {}
    seen: dict[str, Location] = {}
    for location, item in read_json_file(path, where, fix=LINKS_FIX):
        record_id = item.get("id") if isinstance(item, dict) else None

        def fail(problem: str, location: Location = location, record_id: object = record_id) -> InputError:
            return InputError(problem, location, record="entity links", record_id=record_id, fix=LINKS_FIX)

        if not isinstance(item, dict):
            raise fail(f"a record must be a JSON object, got {type(item).__name__}")
        if not isinstance(record_id, (str, int)) or isinstance(record_id, bool) or str(record_id) == "":
            raise fail(f"'id' must be the example's id (a string), got {record_id!r}")
        key = str(record_id)
        if key in seen:
            raise fail(f"'id' {key!r} is listed twice (first at {seen[key].place}); merge its links into one record")
        seen[key] = location
        rows = item.get("links")
        if not isinstance(rows, list):
            raise fail(f"'links' must be a list of [start, end, entity] (got {type(rows).__name__})")
        spans = set()
        example_links = []
        for index, row in enumerate(rows):
            ok = (
                isinstance(row, list)
                and len(row) == 3
                and all(isinstance(v, int) and not isinstance(v, bool) for v in row[:2])
                and 0 <= row[0] < row[1]
                and (row[2] is None or (isinstance(row[2], str) and row[2].strip()))
            )
            if not ok:
                raise fail(
                    f"links[{index}] must be [start, end, entity] with 0 <= start < end word indices and an entity "
                    f"name or null, got {row!r}"
                )
            if (row[0], row[1]) in spans:
                raise fail(f"links[{index}] links the span [{row[0]}, {row[1]}) a second time; keep one gold entity")
            spans.add((row[0], row[1]))
            example_links.append(EntityLink(row[0], row[1], None if row[2] is None else row[2].strip(), location))
        links[key] = example_links
    return links


__all__ = ["EntityLink", "LINKS_FIX", "read_entity_links"]
