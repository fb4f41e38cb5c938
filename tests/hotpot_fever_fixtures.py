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
"""HotpotQA questions and FEVER claims the project writes itself, in the official layouts, for the Transformer-XH task
tests and the run_multihop.py end-to-end tests.

- ``hotpot_fixture_rows()``: bridge and comparison questions (span and yes/no answers) with their paragraphs, in the
  official layout.
- ``hotpot_records()``: four more questions in the Hub layout (``hotpot_qa``/``distractor``).
- ``FEVER_PAGES`` and ``fever_fixture_claims()``: three wiki pages and claims over them with every label;
  ``write_fever_pages(folder)`` writes the pages as the shared task's ``wiki-pages`` JSON lines.
"""

from __future__ import annotations

import json
from pathlib import Path


def _paragraph(title: str, *sentences: str) -> list:
    return [title, [sentences[0], *(" " + s for s in sentences[1:])]]


def hotpot_fixture_rows() -> list[dict]:
    """Small HotpotQA questions in the official layout, written for these tests (span and yes/no answers)."""
    people = [("Alma Reed", "Lyon", "France"), ("Bo Stone", "Turin", "Italy"), ("Cy Hale", "Porto", "Portugal")]
    rows = []
    for i, (person, city, country) in enumerate(people):
        rows.append(
            {
                "_id": f"bridge-{i}",
                "question": f"In which country is the city where {person} was born?",
                "answer": country,
                "type": "bridge",
                "supporting_facts": [[person, 0], [city, 1]],
                "context": [
                    _paragraph(person, f"{person} was born in {city}.", "She wrote books."),
                    _paragraph(city, f"{city} is an old city.", f"It lies in {country}."),
                    _paragraph("Noise", "Nothing here matters.", "Really nothing."),
                ],
            }
        )
        rows.append(
            {
                "_id": f"compare-{i}",
                "question": f"Were {person} and Dee Lane both writers?",
                "answer": "yes" if i % 2 == 0 else "no",
                "type": "comparison",
                "supporting_facts": [[person, 1], ["Dee Lane", 0]],
                "context": [
                    _paragraph(person, f"{person} was born in {city}.", "She wrote books."),
                    _paragraph("Dee Lane", "Dee Lane wrote poems.", "She lived long."),
                ],
            }
        )
    return rows


FEVER_PAGES = {
    "Lyon": {0: "Lyon is a city in France.", 1: "Lyon has two rivers."},
    "Turin": {0: "Turin is a city in Italy.", 1: "Turin makes cars."},
    "Porto": {0: "Porto is a city in Portugal.", 1: "Porto makes wine."},
}


def write_fever_pages(folder: Path) -> Path:
    """`FEVER_PAGES` as the shared task's `wiki-pages` JSON lines (`folder/wiki-001.jsonl`); returns the path."""
    path = Path(folder) / "wiki-001.jsonl"
    pages = [{"id": p, "text": "", "lines": "\n".join(f"{n}\t{s}" for n, s in lines.items())}
             for p, lines in FEVER_PAGES.items()]  # fmt: skip
    path.write_text("\n".join(json.dumps(page) for page in pages))
    return path


def fever_fixture_claims() -> list[dict]:
    """Shared-task-format claims over `FEVER_PAGES`, every label."""
    claims = []
    for i, (page, country, wrong) in enumerate(
        [("Lyon", "France", "Spain"), ("Turin", "Italy", "Greece"), ("Porto", "Portugal", "Chile")]
    ):
        evidence = [[[i, 3 * i, page, 0]]]
        claims.append({"id": 3 * i, "claim": f"{page} is in {country}.", "label": "SUPPORTS", "evidence": evidence})
        claims.append({"id": 3 * i + 1, "claim": f"{page} is in {wrong}.", "label": "REFUTES", "evidence": evidence})
        claims.append(
            {"id": 3 * i + 2, "claim": f"{page} has a mayor.", "label": "NOT ENOUGH INFO",
             "evidence": [[[i, None, None, None]]]}
        )  # fmt: skip
    return claims


def _hotpot(question: str, answer: str, kind: str, supporting: list[tuple[str, int]], paragraphs: list) -> dict:
    return {
        "question": question,
        "answer": answer,
        "type": kind,
        "level": "easy",
        "supporting_facts": {"title": [t for t, _ in supporting], "sent_id": [s for _, s in supporting]},
        "context": {"title": [t for t, _ in paragraphs], "sentences": [s for _, s in paragraphs]},
    }


def hotpot_records() -> list[dict]:
    """Invented HotpotQA questions in the Hub layout (``hotpot_qa``/``distractor``: ``supporting_facts`` and
    ``context`` as columns of titles and sentence lists, sentences after the first with a leading space): two bridge
    questions with a span answer, a comparison with a span answer and a yes/no comparison. In the first, "Halvard
    Bridge" mentions "Marta Lind" and not the other way round (a directed title-mention edge)."""
    records = [
        _hotpot(
            "In which town was the architect of the Halvard Bridge born?", "Trondvik", "bridge",
            [("Halvard Bridge", 1), ("Marta Lind", 0)],
            [
                ("Elm Valley", ["Elm Valley is a farming district on the river Elm.", " Its main crop is barley."]),
                ("Halvard Bridge", ["The Halvard Bridge is a stone arch bridge over the river Elm.",
                                    " It was designed by Marta Lind and opened in 1891."]),
                ("Marta Lind", ["Marta Lind (1850 – 1921) was an architect born in Trondvik.",
                                " She built eleven bridges in the north."]),
            ],
        ),
        _hotpot(
            "What instrument did the founder of the Northern Orchestra play?", "cello", "bridge",
            [("Northern Orchestra", 0), ("Oskar Brenner", 1)],
            [
                ("Northern Orchestra", ["The Northern Orchestra was founded by Oskar Brenner in 1962.",
                                        " It plays in the Harbour Hall."]),
                ("Harbour Hall", ["Harbour Hall is a concert hall by the sea.", " It seats 1,200 people."]),
                ("Oskar Brenner", ["Oskar Brenner (1921 – 1999) was a conductor.",
                                   " Before he conducted, he played the cello in a string quartet."]),
            ],
        ),
        _hotpot(
            "Which is longer, the river Elm or the river Saltmere?", "river Saltmere", "comparison",
            [("River Elm", 0), ("River Saltmere", 0)],
            [
                ("River Elm", ["The river Elm is 120 kilometres long.", " It flows into Lake Orvin."]),
                ("River Saltmere", ["The river Saltmere is 310 kilometres long, longer than any river near it.",
                                    " Salmon swim up it each autumn."]),
                ("Lake Orvin", ["Lake Orvin is a lake fed by the river Elm.", " Its water is very clear."]),
            ],
        ),
        _hotpot(
            "Are Lake Orvin and Lake Brisk both fed by rivers?", "yes", "comparison",
            [("Lake Orvin", 0), ("Lake Brisk", 0)],
            [
                ("Lake Orvin", ["Lake Orvin is a lake fed by the river Elm.", " Its water is very clear."]),
                ("Lake Brisk", ["Lake Brisk is fed by the river Tarn.", " Ferries cross it in summer."]),
                ("River Tarn", ["The river Tarn rises in the hills.", " It is short and fast."]),
            ],
        ),
    ]  # fmt: skip
    return [{"id": f"gesa-hotpot-{number}", **record} for number, record in enumerate(records)]
