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
"""WikiHop (QAngaroo) as a task of the shared driver: ``WIKIHOP``, what ``examples/run_multihop.py --task wikihop``
runs (HotpotQA and FEVER: ``training.xh``).

- read: QAngaroo records (a JSON list as released, or JSON lines), each checked (``records_wikihop``);
- model: the variant's ``...ForEntityMultipleChoice`` (gesa, luke, luke_graph) converted from LUKE or loaded from a
  checkpoint of this task, ``--attention_window`` set, absolute position tables grown to ``--max_seq_length``;
- features: ``WikihopProcessor`` (the supports as one long sequence per query, every candidate and mention an
  entity);
- predictions: every candidate with its probability (softmax over the query's candidates,
  ``WikihopProcessor.rank_candidates``), scored by ``metrics/wikihop`` (accuracy in percent); ``eval_predictions.json``
  is ``{id: candidate}``, ``predict_predictions.json`` ``{id: [{answer, score}, ...]}`` best first.

Also the embedded samples of the demos, written here, copied from nowhere: ``make_wikihop_sample`` (invented towns,
regions and countries: town -> region -> country) and ``make_medhop_sample`` (MedHop-shaped: drugs as DrugBank ids,
proteins as UniProt accessions, query ``interacts_with DB.....?``: drug -> protein -> drug); and ``build_demo_luke`` (a tiny random LUKE with a byte-level BPE trained offline on the sample), used by the
no-argument demo, the tests and the bench.

Flat module: imports its siblings relatively, third-party packages otherwise.
"""

from __future__ import annotations

import functools
import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from datasets import Dataset
from transformers import PreTrainedTokenizerBase

from ..configuration_gesa import ABLATION_PRESETS
from ..loading_gesa import checkpoint_weight_names
from ..modeling_context_graph import ContextGraphForMultipleChoice
from ..modeling_gesa_multiple_choice import (
    ChoiceHeadMismatch,
    GesaForEntityMultipleChoice,
    check_choice_head,
)
from ..modeling_luke_graph_multiple_choice import LukeGraphForEntityMultipleChoice
from ..processing_wikihop import WikihopProcessor
from ..records_wikihop import WikihopExample, examples_to_rows, load_wikihop_file, to_wikihop_examples
from ..structure_gesa import LUKE_MASK_ENTITY_ID
from .context_graph import VARIANT as CONTEXT_GRAPH
from .context_graph import load_context_graph
from .machinery import ScriptArgumentError, disk_full, disk_full_error, featurise_rows, write_json_atomically
from .models import ModelRecipe, graph_layer_overrides, load_for_task
from .resources import load_metric
from .task import LoadedModel, Task, first_output
from .tokenizer import special_entity_rows, train_sample_tokenizer


@dataclass
class WikihopTask(Task):
    """WikiHop for ``run_task`` (module docstring)."""

    name: str = "wikihop"
    title: str = "WikiHop"
    description: str = "WikiHop (QAngaroo): multiple choice over candidates, supports read as one long sequence"
    file_format: str = "QAngaroo JSON (one list, as released) or JSON lines"
    heads: dict = field(
        default_factory=lambda: {
            "gesa": GesaForEntityMultipleChoice,
            "luke": GesaForEntityMultipleChoice,
            "luke_graph": LukeGraphForEntityMultipleChoice,
            CONTEXT_GRAPH: ContextGraphForMultipleChoice,  # the thesis's GNN (training.context_graph)
        }
    )
    metric_for_best_model: str = "accuracy"
    unit: str = "queries"
    item: str = "query"
    processor_settings: tuple[str, ...] = ("max_seq_length", "max_query_length", "max_entities", "max_mention_length")

    def check_arguments(self, model_args: Any, data_args: Any, args: Any) -> None:
        if model_args.variant == CONTEXT_GRAPH and getattr(model_args, "choice_head", None) is not None:
            raise ScriptArgumentError(
                "--choice_head is for --variant gesa, luke and luke_graph; --variant context_graph always scores with "
                "eq. 2.62"
            )
        window = model_args.attention_window
        if window is not None and window < 1:
            raise ScriptArgumentError(f"--attention_window must be at least 1 word (or none for full attention), got "
                                      f"{window}")  # fmt: skip

    # ------------------------------------------------------------------------------------------- data

    def read_file(self, path: Path, where: str, split: str, data_args: Any, model_args: Any) -> list[WikihopExample]:
        return load_wikihop_file(path, where)

    def read_hub(self, data_args: Any, model_args: Any, split: str) -> list[WikihopExample]:
        import datasets

        rows = datasets.load_dataset(data_args.dataset_name, data_args.dataset_config_name, split=split,
                                     cache_dir=model_args.cache_dir, token=model_args.token)  # fmt: skip
        return to_wikihop_examples(rows, where=f"--dataset_name {data_args.dataset_name} ({split})")

    def reference(self, example: WikihopExample) -> str | None:
        return example.answer

    def chance(self, examples: Sequence[WikihopExample]) -> float:
        """Accuracy of a uniform guess among each query's candidates, in percent."""
        return 100.0 * sum(1.0 / len(example.candidates) for example in examples) / len(examples)

    # ------------------------------------------------------------------------------------------- the model

    def load(
        self, model_args: Any, data_args: Any, examples: Mapping[str, Any], explicit: set[str] | None
    ) -> LoadedModel:
        if model_args.variant == CONTEXT_GRAPH:
            return load_context_graph(self, model_args, data_args, explicit)
        settings = {name: getattr(data_args, name) for name in self.processor_settings}
        window = {"attention_window": model_args.attention_window}
        recipe = ModelRecipe(
            self.variant_spec(model_args.variant),
            f"--task {self.name} --variant {model_args.variant}",
            WikihopProcessor,
            processor_settings={**settings, **graph_config(model_args), "entity_mask_id": LUKE_MASK_ENTITY_ID},
            checkpoint_settings=GRAPH_RULES,  # a trained checkpoint's graph rules are fixed
            model_settings=("entity_graph",),  # the features carry the graph the model's e2e labels read
            overrides={**window, **({} if model_args.ablation is None else {"ablation": model_args.ablation})},
            checkpoint_overrides=window,
            configure=functools.partial(choice_head_overrides, model_args),
            extend_positions=True,  # absolute positions must reach the longest sequence
        )
        return LoadedModel(*load_for_task(recipe, model_args, data_args, explicit))

    # ------------------------------------------------------------------------------------------- features

    def featurise(self, processor: WikihopProcessor, examples: Any, split: str, data_args: Any) -> Dataset:
        rows = Dataset.from_dict(examples_to_rows(examples))
        return featurise_rows(rows, processor.map_function, split)

    # ------------------------------------------------------------------------------------------- predictions

    def decode(
        self, examples: Any, features: Dataset, outputs: Any, processor: Any
    ) -> dict[str, list[dict[str, Any]]]:
        """Every query's candidates, best first, with their probabilities (the processor's ``rank_candidates``)."""
        return processor.rank_candidates(features["example_id"], features["candidate_texts"],
                                         first_output(outputs))  # fmt: skip

    def score(self, predictions: Mapping[str, Any], examples: Sequence[WikihopExample]) -> dict[str, float]:
        """Accuracy in percent over the labelled queries (a missing prediction is wrong): ``metrics/wikihop``."""
        references = {example.example_id: example.answer for example in examples if example.answer is not None}
        try:  # in memory: evaluate's arrow cache files would need disk space at every evaluation
            return load_metric("wikihop", keep_in_memory=True).compute(
                predictions=[{"id": key, "prediction_text": predictions[key][0]["answer"] if predictions.get(key)
                              else ""} for key in references],
                references=[{"id": key, "answer": answer} for key, answer in references.items()],
            )  # fmt: skip
        except OSError as error:  # e.g. evaluate copying the metric's module into its cache on a full disk
            place = Path(error.filename).parent if getattr(error, "filename", None) else Path.cwd()
            if disk_full(error, place):
                name = Path(error.filename).name if error.filename else "the metric's cache"
                raise disk_full_error(
                    error, place, f"writing {name} (evaluate's copy of the WikiHop metric)"
                ) from None
            raise

    def write_predictions(
        self, predictions: Mapping[str, Any], examples: Any, output_dir: str | Path, split: str, data_args: Any
    ) -> Path:
        """``eval_predictions.json``: ``{id: candidate}``; ``predict_predictions.json``: every candidate, ranked."""
        path = Path(output_dir) / f"{split}_predictions.json"
        if split == "eval":
            write_json_atomically(path, {key: ranked[0]["answer"] for key, ranked in predictions.items()})
        else:
            write_json_atomically(path, dict(predictions))
        return path


WIKIHOP = WikihopTask()
# MedHop ships in the same QAngaroo layout: the same reader, graphs and metric (accuracy)
MEDHOP = WikihopTask(name="medhop", title="MedHop", description="MedHop (QAngaroo): WikiHop's layout on drug "
                     "interactions (Medline abstracts)")  # fmt: skip


# ----------------------------------------------------------------------------------------- the embedded sample

_SYLLABLES = ["vel", "mor", "kas", "trel", "dun", "abo", "rin", "ost", "lam", "bre", "ne", "sar", "tho", "quil"]
_COUNTRIES = ["germany", "france", "italy", "spain", "norway", "poland", "greece", "portugal", "austria", "denmark"]
_FILLER = [
    "The area has a mild climate and a long history of farming.",
    "Several roads and a railway line connect it with nearby towns.",
    "Its economy depends on trade, tourism and small workshops.",
    "A weekly market is held in the old square near the church.",
]


# the context graph's optional rules, a processor setting of GESA's WikiHop features (`--graph_config` with
# --variant gesa; `ContextGraphConfig`'s names)
GRAPH_RULES = ("co_document_edges", "complement_edges", "unconnected_edges", "co_mention_edges", "sentence_nodes")


def choice_head_overrides(model_args: Any, config: dict[str, Any]) -> dict[str, Any]:
    """The WikiHop head's config values, checked against the checkpoint before any weight loads: a trained
    checkpoint's weights must hold the candidate score its config names and keeps it (``--choice_head`` refused);
    GESA reads the thesis's context graph (``entity_graph="context"``) unless the ablation says otherwise, and only
    then ``--graph_config``."""
    path = model_args.model_name_or_path
    overrides: dict[str, Any] = {}
    if config.get("model_type") != "luke" and getattr(model_args, "graph_config", None):
        raise ScriptArgumentError(
            f"--graph_config: {path} is a trained checkpoint; its graph rules are fixed (processor_config.json). "
            "Drop --graph_config, or start from a LUKE checkpoint"
        )
    if config.get("model_type") != "luke":  # the weights must hold the head the config names
        names = checkpoint_weight_names(Path(path))
        try:
            # a config without the field was saved with the linear head (GesaConfig.from_dict)
            named = config.get("choice_head", "query_candidate")
            check_choice_head(named, names or (), f"--model_name_or_path {path}")
        except ChoiceHeadMismatch as error:
            raise ScriptArgumentError(str(error)) from None
    choice_head = getattr(model_args, "choice_head", None)
    if choice_head is not None:
        if config.get("model_type") != "luke" and config.get("choice_head", "hde") != choice_head:
            raise ScriptArgumentError(
                f"--choice_head {choice_head}: {path} is a trained checkpoint whose head is "
                f"{config.get('choice_head', 'hde')!r}; it keeps it. Drop --choice_head, or start from a LUKE "
                "checkpoint"
            )
        overrides["choice_head"] = choice_head
    overrides.update(graph_layer_overrides(model_args, config))  # LUKE-Graph's relational layer
    preset = ABLATION_PRESETS.get(model_args.ablation or "full", {})
    if model_args.variant == "gesa" and "entity_graph" not in preset and preset.get("use_relative_labels", True):
        # GESA reads the thesis's context graph, one label per edge kind (ablation merged_graph: the three labels)
        overrides["entity_graph"] = "context"
    if getattr(model_args, "graph_config", None) and overrides.get("entity_graph") != "context":
        raise ScriptArgumentError(
            "--graph_config: the context graph's rules are read by GESA on that graph (--variant gesa, no "
            "--ablation merged_graph / luke); this model's e2e labels do not read them. Drop --graph_config"
        )
    return overrides


def graph_config(model_args: Any) -> dict[str, Any]:
    """The context graph's rules of GESA's features from ``--graph_config`` (a model converted from LUKE; a trained
    checkpoint's are fixed, ``choice_head_overrides`` refuses the flag)."""
    text = getattr(model_args, "graph_config", None)
    if not text:
        return {}
    try:
        rules = json.loads(text)
    except ValueError as error:
        raise ScriptArgumentError(f"--graph_config is not JSON ({error})") from None
    if not isinstance(rules, dict) or set(rules) - set(GRAPH_RULES):
        raise ScriptArgumentError(
            f"--graph_config with --variant {model_args.variant}: a JSON object of the context graph's rules "
            f'{list(GRAPH_RULES)}, e.g. \'{{"sentence_nodes": "all", "complement_edges": true}}\''
        )
    return rules


def _name(rng: random.Random, parts: int) -> str:
    return "".join(rng.choice(_SYLLABLES) for _ in range(parts))


def make_wikihop_sample(
    count: int,
    seed: int = 0,
    filler_sentences: int = 0,
    num_candidates: int = 4,
    labelled: bool = True,
    region_pool: int | None = None,
    linked: bool = False,
) -> list[dict[str, Any]]:
    """``count`` invented WikiHop records (QAngaroo fields). Query ``country <town>``; support 1 says the town lies in
    a region, another that the region is in a country (the answer), distractor supports place other regions in the
    other candidate countries. ``filler_sentences`` per support makes long records: the answer's support comes last,
    so its mentions lie far beyond word 512. ``region_pool``: the regions come from that many fixed names (the same
    in every sample, as a real corpus repeats its places), else each is invented afresh. ``linked``: the answer's
    support names the town too (``<region>, around <town>, is a region of <answer>.``: a document the town and the
    answer share, which the context graph joins) and the supports come in a random order (the last one is no cue)."""
    rng = random.Random(seed)
    pool_rng = random.Random(20170601)
    pool = list(dict.fromkeys(_name(pool_rng, 2).capitalize() for _ in range(4 * (region_pool or 0))))[
        : region_pool or 0
    ]
    records = []
    for index in range(count):
        countries = rng.sample(_COUNTRIES, min(num_candidates, len(_COUNTRIES)))
        answer = countries[0]
        town = _name(rng, 3).capitalize()
        if region_pool:
            regions = [name + " Province" for name in rng.sample(pool, len(countries))]
        else:
            regions = [_name(rng, 2).capitalize() + " Province" for _ in countries]
        filler = " ".join(rng.choice(_FILLER) for _ in range(filler_sentences))
        supports = [f"{town} is a small town in {regions[0]}. {filler}".strip()]
        for region, country in list(zip(regions, countries, strict=True))[1:]:
            supports.append(f"{region} is a region of {country.capitalize()}. {filler}".strip())
        around = f", around {town}," if linked else ""
        supports.append(f"{filler} {regions[0]}{around} is a region of {answer.capitalize()}.".strip())
        if linked:
            rng.shuffle(supports)
        candidates = sorted(countries)
        record = {"id": f"WH_synthetic_{seed}_{index}", "query": f"country {town.lower()}", "supports": supports,
                  "candidates": candidates}  # fmt: skip
        if labelled:
            record["answer"] = answer
        records.append(record)
    return records


# MedHop-shaped records (invented: written here, copied from nowhere). The release writes drugs as DrugBank ids
# (``DB01171``) and proteins as UniProt accessions (``P21397``) inside Medline-style abstracts; a query is
# ``"interacts_with DB01171?"`` over DrugBank-id candidates, answered through a protein both drugs act on.
_MEDHOP_ACTIONS = ["is a selective inhibitor of", "binds to and activates", "reduces the expression of",
                   "is metabolised by", "competitively blocks"]  # fmt: skip
_MEDHOP_FILLER = [
    "Patients were followed for twelve weeks in a randomised , double-blind trial .",
    "Plasma concentrations were measured by liquid chromatography .",
    "The effect was dose-dependent and reversible after washout .",
    "These findings suggest a new approach to treatment .",
]


def drugbank_id(rng: random.Random) -> str:
    """A DrugBank accession as MedHop writes drugs: ``DB`` and five digits."""
    return f"DB{rng.randint(1, 12000):05d}"


def uniprot_id(rng: random.Random) -> str:
    """A UniProt accession as MedHop writes proteins: ``[OPQ][0-9][A-Z0-9]{3}[0-9]`` (``P21397``, ``Q9H3N8``)."""
    alphanumeric = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    middle = "".join(rng.choice(alphanumeric) for _ in range(3))
    return f"{rng.choice('OPQ')}{rng.randint(0, 9)}{middle}{rng.randint(0, 9)}"


def make_medhop_sample(
    count: int, seed: int = 0, num_candidates: int = 4, filler_sentences: int = 1, labelled: bool = True
) -> list[dict[str, Any]]:
    """``count`` invented MedHop records (QAngaroo fields, ids ``MH_synthetic_<seed>_<n>``). Query
    ``interacts_with <drug>?``; one abstract says the query drug acts on a protein, another that the answer drug acts
    on the same protein, as the query drug does (the abstract the two drugs share, which the context graph joins);
    each other candidate drug acts on a protein of its own in an abstract of its own. Candidates are DrugBank ids in
    sorted order (as released), the supports in a random order. The ids come from fixed pools (40 drugs, 12
    proteins: the same in every sample) so that a small sample repeats them as the release does."""
    pools = random.Random(20170601)
    drug_pool = list(dict.fromkeys(drugbank_id(pools) for _ in range(60)))[:40]
    protein_pool = list(dict.fromkeys(uniprot_id(pools) for _ in range(30)))[:12]
    rng = random.Random(seed)
    records = []
    for index in range(count):
        query_drug, *candidates = rng.sample(drug_pool, num_candidates + 1)
        answer = candidates[0]
        proteins = rng.sample(protein_pool, num_candidates)

        def abstract(drug: str, protein: str, also: str = "") -> str:
            filler = " ".join(rng.choice(_MEDHOP_FILLER) for _ in range(filler_sentences))
            shared = f" , as {also} does" if also else ""
            return f"{drug} {rng.choice(_MEDHOP_ACTIONS)} {protein} in human cells{shared} . {filler}".strip()

        supports = [abstract(query_drug, proteins[0]), abstract(answer, proteins[0], also=query_drug)]
        supports += [abstract(drug, protein) for drug, protein in zip(candidates[1:], proteins[1:], strict=True)]
        rng.shuffle(supports)
        record = {"id": f"MH_synthetic_{seed}_{index}", "query": f"interacts_with {query_drug}?",
                  "supports": supports, "candidates": sorted(candidates)}  # fmt: skip
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
    return special_entity_rows(tokenizer, "the LUKE checkpoint", count=3)


__all__ = [
    "MEDHOP",
    "WIKIHOP",
    "WikihopTask",
    "build_demo_luke",
    "entity_rows",
    "make_medhop_sample",
    "make_wikihop_sample",
    "sample_texts",
    "write_wikihop_file",
]
