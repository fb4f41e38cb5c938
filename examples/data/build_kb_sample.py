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
"""Build the small knowledge base of the KnowBERT-KAR / ERNIE demos (``kb_triples.tsv``, ``kb_aliases.tsv``,
``kb_links.jsonl``; ``kb_entity_vectors.txt`` is made from the triples by ``examples/train_transe.py``).

The KB covers the invented people, towns and firms of ``run_entity_tasks.py``'s embedded samples (the demo's
``train`` and ``dev`` files of every task, ``gesa.training.entity.make_entity_sample``), nothing else:

- ``kb_triples.tsv``: ``head<TAB>relation<TAB>tail`` facts: each person is a human, each town a city with a football
  club (``<town> FC``, located in it), each firm a business; the samples' own ``org:founded_by`` facts.
- ``kb_aliases.tsv``: ``alias<TAB>entity<TAB>prior``: each person's and firm's name -> itself (prior 1), each town's
  name -> the town (0.85) or its club (0.15): an ambiguous alias the linker decides from the context.
- ``kb_links.jsonl``: the gold links of the samples' mentions (``--entity_links``: ``{"id": example id, "links":
  [[start, end, entity], ...]}``, word spans end exclusive): KnowBERT's ``L_EL``.

Run ``python examples/data/build_kb_sample.py`` to regenerate the three files, then
``python examples/train_transe.py --triples examples/data/kb_triples.tsv --output examples/data/kb_entity_vectors.txt
--dim 16 --epochs 200`` for the vectors (16: the demo LUKE's entity width).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from gesa.records_entity import read_task_file
from gesa.training.entity import make_entity_sample

HERE = Path(__file__).resolve().parent
# the demo's files (run_entity_tasks.demo_argv): (split, examples, seed), named <split>.json / <split>.txt
DEMO_SPLITS = (("train", 36, 1), ("dev", 12, 2))
TASKS = {"entity_typing": "json", "relation_classification": "json", "ner": "txt"}
TOWN_PRIOR = 0.85  # the town; its club gets the rest


def demo_examples() -> dict[str, list]:
    """Every task's demo examples, read back from their files as the demo writes them (NER ids name the file)."""
    examples: dict[str, list] = {task: [] for task in TASKS}
    with tempfile.TemporaryDirectory() as folder:
        for task, extension in TASKS.items():
            for split, count, seed in DEMO_SPLITS:
                path = Path(folder) / f"{split}.{extension}"
                path.write_text(make_entity_sample(task, count, seed), encoding="utf-8")
                examples[task] += read_task_file(task, path)
    return examples


def mentions(task: str, example) -> list[tuple[int, int, str]]:
    """``(start, end, kind)`` of an example's mentions (end exclusive); kind ``person`` / ``town`` / ``firm`` / ``-``."""
    if task == "ner":
        kinds = {"PER": "person", "LOC": "town", "ORG": "firm"}
        return [(start, end, kinds[label]) for start, end, label in example.spans]
    if task == "relation_classification":
        kinds = {"PERSON": "person", "CITY": "town", "ORGANIZATION": "firm"}
        return [(*span, kinds.get(kind, "-")) for span, kind in ((example.head, example.head_type),
                                                                   (example.tail, example.tail_type))]  # fmt: skip
    kind = "person" if "person" in example.labels else "town" if "city" in example.labels else "firm"
    return [(example.start, example.end, kind)]


def main() -> None:
    examples = demo_examples()
    names: dict[str, set[str]] = {"person": set(), "town": set(), "firm": set()}
    founded: set[tuple[str, str]] = set()
    links = []
    for task, rows in examples.items():
        for example in rows:
            row = []
            for start, end, kind in mentions(task, example):
                text = " ".join(example.tokens[start:end])
                if kind == "-" or (kind == "person" and len(text.split()) < 2):
                    continue  # titles and bare first names are in no KB (their gold is NULL)
                names[kind].add(text)
                row.append([start, end, text])
            if task == "relation_classification" and example.relation == "org:founded_by":
                founded.add((" ".join(example.tokens[slice(*example.head)]),
                             " ".join(example.tokens[slice(*example.tail)])))  # fmt: skip
            links.append({"id": str(example.id), "links": row})
    triples = [(person, "instance of", "human") for person in sorted(names["person"])]
    for town in sorted(names["town"]):
        triples += [(town, "instance of", "city"), (f"{town} FC", "instance of", "association football club"),
                    (f"{town} FC", "located in", town)]  # fmt: skip
    triples += [(firm, "instance of", "business") for firm in sorted(names["firm"])]
    triples += [(firm, "founded by", person) for firm, person in sorted(founded)]
    aliases = [(name, name, 1.0) for kind in ("person", "firm") for name in sorted(names[kind])]
    for town in sorted(names["town"]):
        aliases += [
            (town, town, TOWN_PRIOR),
            (town, f"{town} FC", round(1 - TOWN_PRIOR, 6)),
            (f"{town} FC", f"{town} FC", 1.0),
        ]
    (HERE / "kb_triples.tsv").write_text("".join(f"{h}\t{r}\t{t}\n" for h, r, t in triples), encoding="utf-8")
    (HERE / "kb_aliases.tsv").write_text(
        "alias\tentity\tprior\n" + "".join(f"{a}\t{e}\t{p}\n" for a, e, p in aliases), encoding="utf-8"
    )
    (HERE / "kb_links.jsonl").write_text("".join(json.dumps(row) + "\n" for row in links), encoding="utf-8")
    print(f"{len(triples)} triples, {len(aliases)} alias lines, {len(links)} linked examples in {HERE}")


if __name__ == "__main__":
    main()
