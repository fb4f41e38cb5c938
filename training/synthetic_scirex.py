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
"""Seeded invented papers in SciREX's release format (the document IE demo and tests: data the project writes).

Each paper proposes one method for one task, evaluated on two datasets with one or two metrics: those are its salient
entities, and its relations are every (dataset, metric, task, method) it reports a number for. Prior work brings
non-salient entities (baseline methods, another task, dataset and metric), named in related-work sentences only.
Mentions repeat across the sections (title, abstract, introduction, method, experiments), so a salient entity's
mentions lie far apart in a long paper; ``body_sentences`` sets the length.

Words, sentences, sections, ``ner``, ``coref`` (salient), ``coref_non_salient``, ``n_ary_relations`` and
``method_subrelations`` are written as the release has them (end-exclusive word spans, ``"document :"`` first).

Flat module: imports the standard library only.
"""

from __future__ import annotations

import json
import random
from typing import Any

SYLLABLES = ["Zor", "Ka", "Vel", "Ta", "Bri", "Ode", "Lun", "Mex", "Pra", "Su", "Qui", "Dan", "Fel", "Gro", "Hav",
             "Ix", "Jor", "Nim", "Rho", "Wen"]  # fmt: skip
METHOD_SUFFIXES = ["Net", "Former", "Tree", "GAN", "Flow"]
TASKS = ["image dehazing", "graph matching", "speech tagging", "text ranking", "pose tracking", "scene parsing",
         "code search", "music transcription"]  # fmt: skip
METRICS = ["PSNR", "accuracy", "BLEU", "MAP", "F1 score", "recall", "error rate", "SSIM"]
FILLER = [
    "We describe the setup in detail .", "The results are discussed below .", "This choice keeps the cost low .",
    "Training takes two days on one machine .", "Further details follow in the appendix .",
    "The hyper-parameters are tuned once .", "We repeat each run three times .", "Figure 2 shows the curves .",
]  # fmt: skip


# the invented names: a small pool shared by every paper (as datasets, metrics and well-known methods recur across a
# field's papers), so that a tiny model meets a development paper's names in training
NAMES = [first + second.lower() for first, second in zip(SYLLABLES, SYLLABLES[7:] + SYLLABLES[:7], strict=True)]


def _name(rng: random.Random, used: set[str]) -> str:
    while True:
        name = rng.choice(NAMES)
        if name not in used:
            used.add(name)
            return name


class _Writer:
    """Words, sentences, sections and mentions of one paper, appended sentence by sentence."""

    def __init__(self) -> None:
        self.words: list[str] = []
        self.sentences: list[list[int]] = []
        self.sections: list[list[int]] = []
        self.mentions: list[tuple[int, int, str, str]] = []  # start, end, type, entity key

    def section(self) -> None:
        if self.sentences and (not self.sections or self.sections[-1][1] < len(self.words)):
            start = self.sections[-1][1] if self.sections else 0
            self.sections.append([start, len(self.words)])

    def sentence(self, parts: list[Any]) -> None:
        """``parts``: plain text, or ``(text, type, entity key)`` for a mention."""
        start = len(self.words)
        for part in parts:
            if isinstance(part, tuple):
                text, kind, key = part
                begin = len(self.words)
                self.words.extend(text.split())
                self.mentions.append((begin, len(self.words), kind, key))
            else:
                self.words.extend(part.split())
        self.sentences.append([start, len(self.words)])


def make_scirex_document(doc_id: str, seed: int, body_sentences: int = 24) -> dict[str, Any]:
    """One invented paper (module docstring) as a SciREX release record; ``body_sentences``: sentences of the
    method and experiments sections (a paper has about ``body_sentences + 12`` sentences, 9 words each)."""
    rng = random.Random(seed)
    used: set[str] = set()
    method = f"{_name(rng, used)} {rng.choice(METHOD_SUFFIXES)}"
    block = f"{method.split()[0]} block"
    task, other_task = rng.sample(TASKS, 2)
    datasets = [f"{_name(rng, used)}-{rng.randint(2, 9)}" for _ in range(2)]
    other_dataset = f"{_name(rng, used)}-{rng.randint(10, 99)}"
    metrics = rng.sample(METRICS, 3)
    metric_count = rng.choice([1, 2])
    own_metrics, other_metric = metrics[:metric_count], metrics[2]
    baselines = [f"{_name(rng, used)} {rng.choice(METHOD_SUFFIXES)}" for _ in range(2)]

    def m(key: str) -> tuple[str, str, str]:  # a mention of an entity by its key
        kind, text = entities[key]
        return (text, kind, key)

    entities = {
        "method": ("Method", method), "block": ("Method", block), "task": ("Task", task),
        "data0": ("Material", datasets[0]), "data1": ("Material", datasets[1]),
        **{f"metric{i}": ("Metric", text) for i, text in enumerate(own_metrics)},
        "base0": ("Method", baselines[0]), "base1": ("Method", baselines[1]), "other_task": ("Task", other_task),
        "other_data": ("Material", other_dataset), "other_metric": ("Metric", other_metric),
    }  # fmt: skip
    own_metric_keys = [f"metric{i}" for i in range(len(own_metrics))]
    writer = _Writer()
    writer.sentence(["document :", m("method"), "for", m("task")])
    writer.section()
    writer.sentence(["Abstract We propose", m("method"), ", a new model for", m("task"), "."])
    writer.sentence(["On", m("data0"), "and", m("data1"), ", it improves", m(own_metric_keys[0]), "."])
    writer.section()
    writer.sentence(["1 Introduction", m("task"), "is a hard problem ."])
    writer.sentence(["Prior work such as", m("base0"), "studies", m("other_task"), "on", m("other_data"), "."])
    writer.sentence([m("base1"), "reports", m("other_metric"), "on", m("other_data"), "."])
    writer.sentence(["We introduce", m("method"), "with its", m("block"), "."])
    writer.section()
    writer.sentence(["2 Model", m("method"), "stacks one", m("block"), "per layer ."])
    body = [
        lambda: ["The", m("block"), "mixes the features ."],
        lambda: [m("method"), "is trained end to end ."],
        lambda: ["Unlike", m("base0"), ",", m("method"), "needs no labels ."],
        lambda: [rng.choice(FILLER)],
        lambda: [rng.choice(FILLER)],
    ]
    for _ in range(body_sentences // 2):
        writer.sentence(rng.choice(body)())
    writer.section()
    writer.sentence(["3 Experiments We evaluate on the", m("data0"), "dataset and the", m("data1"), "dataset ."])
    experiments = [
        lambda: ["On", m(rng.choice(["data0", "data1"])), ",", m("method"), "reaches a", m(rng.choice(own_metric_keys)),
                 f"of {rng.randint(20, 95)}.{rng.randint(0, 9)} ."],
        lambda: ["Table", str(rng.randint(1, 6)), "compares", m("method"), "with", m("base1"), "on",
                 m(rng.choice(["data0", "data1"])), "."],
        lambda: [m(rng.choice(own_metric_keys)), "is reported for", m("task"), "."],
        lambda: [rng.choice(FILLER)],
    ]  # fmt: skip
    for _ in range(body_sentences - body_sentences // 2):
        writer.sentence(rng.choice(experiments)())
    writer.sentence(["In short ,", m("method"), "sets a new state of the art for", m("task"), "."])
    writer.section()

    salient_keys = ["method", "block", "task", "data0", "data1", *own_metric_keys]
    names = {key: entities[key][1].replace(" ", "_") for key in entities}
    spans: dict[str, list[list[int]]] = {key: [] for key in entities}
    for start, end, _, key in writer.mentions:
        spans[key].append([start, end])
    relations = [
        {"Material": names[data], "Metric": names[metric], "Task": names["task"], "Method": names["method"],
         "score": f"{rng.randint(20, 95)}.{rng.randint(0, 9)}"}
        for data in ("data0", "data1") for metric in own_metric_keys
    ]  # fmt: skip
    non_salient = [key for key in entities if key not in salient_keys]
    return {
        "doc_id": doc_id,
        "words": writer.words,
        "sentences": writer.sentences,
        "sections": writer.sections,
        "ner": [[start, end, kind] for start, end, kind, _ in sorted(writer.mentions)],
        "coref": {names[key]: spans[key] for key in salient_keys},
        "coref_non_salient": {str(i): spans[key] for i, key in enumerate(non_salient)},
        "n_ary_relations": relations,
        # the spans are characters of the method's name (here its whole name, for the block too)
        "method_subrelations": {names["method"]: [[[0, len(names["method"])], names[key]] for key in ("method", "block")]},
    }  # fmt: skip


def make_scirex_sample(count: int, seed: int = 0, body_sentences: int = 24) -> str:
    """``count`` invented papers as the text of a SciREX release file (JSON lines)."""
    return "".join(
        json.dumps(make_scirex_document(f"paper-{seed}-{index}", seed * 1000 + index, body_sentences)) + "\n"
        for index in range(count)
    )


__all__ = ["make_scirex_document", "make_scirex_sample"]
