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
"""The multi-hop task interface of ``examples/run_multihop.py``: one ``MultihopTask`` per ``--task``.

A task says how to read its files (``load_file``), which processor makes its features (``make_processor``: one
feature per query, ``map_function`` for ``Dataset.map``, ``get_data_collator``), which head each ``--variant`` trains
(``heads``), how logits become ranked answers (``rank``) and how answers are scored (``score``: the task's metric,
names without the ``eval_`` prefix). ``register_task`` adds one (``hotpotqa``/``fever`` plug in the same way);
``MULTIHOP_TASKS`` holds them.

Also the embedded WikiHop-format sample of the demo (``make_wikihop_sample``: invented towns, regions and countries,
two hops: town -> region -> country; written here, copied from nowhere) and ``build_demo_luke`` (a tiny random LUKE
with a byte-level BPE trained offline on the sample), used by the no-argument demo, the tests and the bench.

Flat module: imports its siblings relatively, third-party packages otherwise.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from transformers import PreTrainedModel, PreTrainedTokenizerBase

from .modeling_gesa_multiple_choice import GesaForEntityMultipleChoice
from .modeling_luke_graph_multiple_choice import LukeGraphForEntityMultipleChoice
from .processing_wikihop import WikihopProcessor
from .records_wikihop import WikihopExample, examples_to_rows, load_wikihop_file, to_wikihop_examples
from .training_tokenizer import train_sample_tokenizer


@dataclass(frozen=True)
class MultihopTask:
    """What ``run_multihop.py --task NAME`` needs to know about one task.

    Args:
        name: the ``--task`` value.
        description: one line for ``--help``.
        heads: ``--variant`` -> head class (the variant registry gives the config overrides and the conversion).
        load_file: ``(path, where) -> examples`` (one error per bad record, naming ``where``, the item and its id).
        load_rows: ``(rows, where) -> examples`` for Hub rows (``datasets``).
        to_columns: examples -> columns for ``datasets.Dataset.from_dict``.
        make_processor: ``(tokenizer, **settings) -> processor``.
        rank: ``(example_ids, candidate_texts, logits) -> {id: [{"answer", "score"}, ...]}`` best first (``None``
            for a task with ``predict``).
        score: ``(predictions {id: answer}, references {id: answer}) -> {metric: value}`` (``None`` with
            ``predict``).
        metric_for_best_model: the main metric's name.
        processor_settings: the processor's keyword arguments the script passes through from its data arguments.
        eval_columns: feature columns that are not model inputs (dropped before the model; ``example_id`` and
            ``candidate_texts`` feed ``rank``).
        reference: an example's gold answer for ``score`` (``None``: unlabelled; it is predicted, never trained on).
        predict: for tasks whose answers are not one ranked candidate (HotpotQA's answer + supporting facts, FEVER's
            label + evidence): ``(model, processor, examples) -> [prediction dict with "id", ...]``; the script then
            scores with ``score_predictions(predictions, examples) -> {metric: value}`` and writes the official
            file with ``write_predictions(predictions, output_dir, split) -> path`` instead of ``rank``/``score``.

    Examples (what the readers return) carry ``example_id``; a processor has ``map_function(batch) -> columns`` and
    ``get_data_collator()``, and is saved with ``save_pretrained`` next to the model.
    """

    name: str
    description: str
    heads: Mapping[str, type[PreTrainedModel]]
    load_file: Callable[[Path | str, str], list[Any]]
    load_rows: Callable[[Any, str], list[Any]]
    to_columns: Callable[[Sequence[Any]], dict[str, list]]
    make_processor: Callable[..., Any]
    rank: Callable[[Sequence[str], Sequence[Sequence[str]], Any], dict[str, list[dict[str, Any]]]] | None
    score: Callable[[Mapping[str, str], Mapping[str, str]], dict[str, float]] | None
    metric_for_best_model: str = "accuracy"
    processor_settings: tuple[str, ...] = field(default_factory=tuple)
    eval_columns: tuple[str, ...] = ("example_id", "candidate_texts", "answers")
    reference: Callable[[Any], Any] = field(default=lambda example: example.answer)
    predict: Callable[[Any, Any, Sequence[Any]], list[dict[str, Any]]] | None = None
    score_predictions: Callable[[Sequence[Mapping[str, Any]], Sequence[Any]], dict[str, float]] | None = None
    write_predictions: Callable[[Sequence[Mapping[str, Any]], Path, str], Path] | None = None

    def head_for(self, variant: str) -> type[PreTrainedModel]:
        if variant not in self.heads:
            raise ValueError(
                f"--task {self.name} has no head for --variant {variant}; choose one of {sorted(self.heads)}"
            )
        return self.heads[variant]


MULTIHOP_TASKS: dict[str, MultihopTask] = {}


def register_task(task: MultihopTask) -> MultihopTask:
    """Add ``task`` to ``MULTIHOP_TASKS`` (a name already taken is an error)."""
    if task.name in MULTIHOP_TASKS:
        raise ValueError(f"multi-hop task {task.name!r} is already registered")
    MULTIHOP_TASKS[task.name] = task
    return task


def wikihop_accuracy(predictions: Mapping[str, str], references: Mapping[str, str]) -> dict[str, float]:
    """Accuracy in percent over the reference queries (a missing prediction is wrong): the ``evaluate`` module
    ``metrics/wikihop`` of the repository."""
    import evaluate

    if not references:
        raise ValueError("wikihop accuracy: no labelled query to evaluate")
    metric = evaluate.load(str(Path(__file__).resolve().with_name("metrics") / "wikihop"))
    return metric.compute(
        predictions=[{"id": key, "prediction_text": predictions.get(key, "")} for key in references],
        references=[{"id": key, "answer": answer} for key, answer in references.items()],
    )


WIKIHOP = register_task(
    MultihopTask(
        name="wikihop",
        description="WikiHop (QAngaroo): multiple choice over candidates, supports read as one long sequence",
        heads={
            "gesa": GesaForEntityMultipleChoice,
            "luke": GesaForEntityMultipleChoice,
            "luke_graph": LukeGraphForEntityMultipleChoice,
        },
        load_file=lambda path, where: load_wikihop_file(path, where),
        load_rows=lambda rows, where: to_wikihop_examples(rows, where=where),
        to_columns=examples_to_rows,
        make_processor=WikihopProcessor,
        rank=WikihopProcessor.rank_candidates,
        score=wikihop_accuracy,
        processor_settings=("max_seq_length", "max_query_length", "max_entities", "max_mention_length"),
    )
)


# ----------------------------------------------------------------------------------------- the embedded sample

_SYLLABLES = ["vel", "mor", "kas", "trel", "dun", "abo", "rin", "ost", "lam", "bre", "ne", "sar", "tho", "quil"]
_COUNTRIES = ["germany", "france", "italy", "spain", "norway", "poland", "greece", "portugal", "austria", "denmark"]
_FILLER = [
    "The area has a mild climate and a long history of farming.",
    "Several roads and a railway line connect it with nearby towns.",
    "Its economy depends on trade, tourism and small workshops.",
    "A weekly market is held in the old square near the church.",
]


def _name(rng: random.Random, parts: int) -> str:
    return "".join(rng.choice(_SYLLABLES) for _ in range(parts))


def make_wikihop_sample(
    count: int, seed: int = 0, filler_sentences: int = 0, num_candidates: int = 4, labelled: bool = True
) -> list[dict[str, Any]]:
    """``count`` invented WikiHop records (QAngaroo fields). Query ``country <town>``; support 1 says the town lies in
    a region, another that the region is in a country (the answer), distractor supports place other regions in the
    other candidate countries. ``filler_sentences`` per support makes long records: the answer's support comes last,
    so its mentions lie far beyond word 512."""
    rng = random.Random(seed)
    records = []
    for index in range(count):
        countries = rng.sample(_COUNTRIES, min(num_candidates, len(_COUNTRIES)))
        answer = countries[0]
        town = _name(rng, 3).capitalize()
        regions = [_name(rng, 2).capitalize() + " Province" for _ in countries]
        filler = " ".join(rng.choice(_FILLER) for _ in range(filler_sentences))
        supports = [f"{town} is a small town in {regions[0]}. {filler}".strip()]
        for region, country in list(zip(regions, countries, strict=True))[1:]:
            supports.append(f"{region} is a region of {country.capitalize()}. {filler}".strip())
        supports.append(f"{filler} {regions[0]} is a region of {answer.capitalize()}.".strip())
        candidates = sorted(countries)
        record = {"id": f"WH_synthetic_{seed}_{index}", "query": f"country {town.lower()}", "supports": supports,
                  "candidates": candidates}  # fmt: skip
        if labelled:
            record["answer"] = answer
        records.append(record)
    return records


def write_wikihop_file(path: Path | str, records: Sequence[Mapping[str, Any]], json_lines: bool = False) -> Path:
    """Write records as the QAngaroo release does (one JSON list) or as JSON lines."""
    path = Path(path)
    if json_lines:
        path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    else:
        path.write_text(json.dumps(list(records)), encoding="utf-8")
    return path


def sample_texts(records: Sequence[Mapping[str, Any]]) -> list[str]:
    return [text for record in records for text in (record["query"], *record["supports"], *record["candidates"])]


def build_demo_luke(path: Path | str, texts: Sequence[str], vocab_size: int = 600, **config: Any) -> Path:
    """A tiny random ``LukeModel`` + ``LukeTokenizer`` (byte-level BPE trained offline on ``texts``) saved at
    ``path``: the starting point of the demo (hidden 32, 2 layers unless ``config`` says otherwise)."""
    import torch
    from transformers import LukeConfig, LukeModel

    path = Path(path)
    tokenizer = train_sample_tokenizer(texts, vocab_size=vocab_size, min_frequency=1)
    settings = dict(vocab_size=len(tokenizer), entity_vocab_size=4, hidden_size=32, entity_emb_size=16,
                    num_hidden_layers=2, num_attention_heads=4, intermediate_size=37, max_position_embeddings=514,
                    hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)  # fmt: skip
    settings.update(config)
    torch.manual_seed(0)
    LukeModel(LukeConfig(**settings)).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def entity_rows(tokenizer: PreTrainedTokenizerBase) -> list[int]:
    """LUKE entity rows the multiple-choice features use: ``[PAD]``, ``[UNK]``, ``[MASK]`` (ids 0, 1, 2 after)."""
    vocab = getattr(tokenizer, "entity_vocab", None) or {}
    missing = [name for name in ("[PAD]", "[UNK]", "[MASK]") if name not in vocab]
    if missing:
        raise ValueError(f"the tokenizer's entity vocabulary lacks {missing}: give a LUKE tokenizer (LukeTokenizer)")
    return [vocab["[PAD]"], vocab["[UNK]"], vocab["[MASK]"]]


__all__ = [
    "MULTIHOP_TASKS",
    "WIKIHOP",
    "MultihopTask",
    "WikihopExample",
    "build_demo_luke",
    "entity_rows",
    "make_wikihop_sample",
    "register_task",
    "sample_texts",
    "wikihop_accuracy",
    "write_wikihop_file",
]
