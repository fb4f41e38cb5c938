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
"""Render the model card (``README.md``) of a trained checkpoint from the shipped ``model_cards/template.md``.

Used by ``examples/run_record.py`` after training/evaluation; also usable on its own, to re-render the card of an
output folder::

    python -m gesa.training.cards OUTPUT_DIR [--model_name NAME] [--base_model ID] [--dataset_name super_glue ...]

The YAML metadata (``library_name``, ``tags``, ``datasets``, ``base_model``, ``model-index`` with the ReCoRD exact
match and F1 read from ``all_results.json``) is produced by ``huggingface_hub.ModelCardData`` so that the Hub parses
it; the body is the Jinja template ``model_cards/template.md``, which gesa installs beside its modules
(``training.resources.shipped_file``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

from huggingface_hub import EvalResult, ModelCard, ModelCardData

from .resources import shipped_file

TEMPLATE = "model_cards/template.md"  # shipped with the package
BASE_TAGS = ["gesa", "luke", "record", "reading-comprehension", "custom_code"]

VARIANTS: dict[str, dict[str, Any]] = {
    "gesa": {
        "title": "GESA (Graph-Enhanced Self-Attention)",
        "tags": [],
        "limitations": (
            "GESA's distance labels reach at most `max_relative_position` tokens (k = 150) and its entity graph "
            "links the entities of one window only: evidence in different windows is combined only through each "
            "candidate's best window score."
        ),
        "description": (
            "GESA (Foolad & Kiani, 2023) replaces LUKE's absolute position embeddings with relative-position labels "
            "inside LUKE's entity-aware self-attention: word pairs get CLS-global, question-global or clipped-distance "
            "labels; word-entity pairs get placeholder-question, mention or non-mention labels; entity pairs follow a "
            "heterogeneous graph (placeholder, same-sentence and string-match edges). Each label adds `q_i . r_ij` to "
            "the attention score."
        ),
    },
    "luke": {
        "title": "LUKE (entity-aware self-attention, GESA code path)",
        "tags": [],
        "limitations": ("This is the baseline without a graph: entities relate only through attention."),
        "description": (
            "LUKE (Yamada et al., 2020) run through GESA's code with the `luke` ablation: absolute position "
            "embeddings on and no relative-position labels, which reproduces `transformers.LukeModel` exactly. It is "
            "the baseline GESA is compared with."
        ),
    },
    "luke_graph": {
        "title": "LUKE-Graph (LUKE + gated relational graph network)",
        "tags": ["luke-graph"],
        "limitations": (
            "The graph network reads the entity tokens once, after the encoder, on the same window-local graph as"
            " GESA: evidence in different windows is combined only through each candidate's best window score."
        ),
        "description": (
            "LUKE-Graph (Foolad & Kiani, 2023): LUKE, then a two-layer relational graph network over the entity "
            "tokens on the same heterogeneous graph as GESA (placeholder, same-sentence and string-match edges), each "
            "layer followed by a question-aware gate; the layer is `graph_layer`'s (configuration table): the released "
            "code's R-GCN (`rgcn`) or the relational graph attention the paper names (`rgat`). GESA's paper compares "
            "itself with it in its Table 2."
        ),
        "citation": (
            "@article{foolad2023lukegraph,\n"
            "  title   = {{LUKE-Graph}: A Transformer-based Approach with Gated Relational Graph Attention for "
            "Cloze-style Reading Comprehension},\n"
            "  author  = {Foolad, Shima and Kiani, Kourosh},\n"
            "  journal = {arXiv preprint arXiv:2303.06675},\n"
            "  year    = {2023}\n"
            "}"
        ),
    },
    "kar": {
        "title": "LUKE + KnowBERT-KAR",
        "tags": ["knowbert"],
        "limitations": (
            "Its knowledge base is LUKE's entity embedding table unless you supply one with an alias table; "
            "mentions are linked by alias priors and a threshold, so an entity the alias table lacks gets no "
            "knowledge and a wrong link feeds a wrong entity into the passage states."
        ),
        "description": (
            "LUKE with KnowBERT's Knowledge Attention and Recontextualization (Peters et al., 2019) inserted between "
            "two encoder layers: mention spans are linked to knowledge-base entity embeddings and the word states are "
            "recontextualised with word-to-entity-span attention."
        ),
        "citation": (
            "@inproceedings{peters2019knowbert,\n"
            "  title     = {Knowledge Enhanced Contextual Word Representations},\n"
            "  author    = {Peters, Matthew E. and Neumann, Mark and Logan, Robert and Schwartz, Roy and Joshi, Vidur "
            "and Singh, Sameer and Smith, Noah A.},\n"
            "  booktitle = {Proceedings of EMNLP-IJCNLP 2019},\n"
            "  pages     = {43--54},\n"
            "  year      = {2019},\n"
            "  doi       = {10.18653/v1/D19-1005}\n"
            "}"
        ),
    },
    "xh": {
        "title": "LUKE + Transformer-XH",
        "tags": ["transformer-xh"],
        "limitations": (
            "Each passage sentence is a node and hop attention links only sentences that share a normalised "
            "entity string, so a pronoun or a paraphrase adds no edge; every sentence is a window of its own, "
            "which makes a step several times LUKE's."
        ),
        "description": (
            "LUKE with Transformer-XH's eXtra Hop attention (Zhao et al., 2020) in its top layers: each passage "
            "sentence is a node (with the query) and the node hubs attend to the hubs of sentences that share an "
            "entity string."
        ),
        "citation": (
            "@inproceedings{zhao2020transformerxh,\n"
            "  title     = {Transformer-{XH}: Multi-Evidence Reasoning with eXtra Hop Attention},\n"
            "  author    = {Zhao, Chen and Xiong, Chenyan and Rosset, Corby and Song, Xia and Bennett, Paul and "
            "Tiwary, Saurabh},\n"
            "  booktitle = {International Conference on Learning Representations (ICLR)},\n"
            "  year      = {2020}\n"
            "}"
        ),
    },
    "ernie": {
        "title": "LUKE + ERNIE information fusion",
        "tags": ["ernie"],
        "limitations": (
            "Knowledge enters at the first token of each mention from the linked knowledge-base entity: an entity"
            " the knowledge base lacks gets none, and a wrong link feeds a wrong entity into the token stream."
        ),
        "description": (
            "LUKE with ERNIE's knowledgeable-encoder fusion (Zhang et al., 2019) in its top layers: a token stream and "
            "an entity stream, each with its own attention, exchange information through a fusion layer at the first "
            "token of every mention."
        ),
        "citation": (
            "@inproceedings{zhang2019ernie,\n"
            "  title     = {{ERNIE}: Enhanced Language Representation with Informative Entities},\n"
            "  author    = {Zhang, Zhengyan and Han, Xu and Liu, Zhiyuan and Jiang, Xin and Sun, Maosong and Liu, Qun},\n"
            "  booktitle = {Proceedings of the 57th Annual Meeting of the Association for Computational Linguistics},\n"
            "  pages     = {1441--1451},\n"
            "  year      = {2019},\n"
            "  doi       = {10.18653/v1/P19-1139}\n"
            "}"
        ),
    },
}

INTENDED_USES = (
    "Intended use: answering cloze-style queries about an English passage, where the query holds one `@placeholder` "
    "and the answer is one of the passage's candidate entity mentions (the ReCoRD task), and research on "
    "entity-aware and graph-enhanced reading comprehension (ablations, comparisons with LUKE).\n\n"
    "Limitations: the model only ranks the candidates it is given. It cannot answer with text that is not a candidate "
    "mention, and it never abstains: every query gets an answer, and `score` is the model's probability for that "
    "candidate, not a guarantee. From raw text the candidates come from spaCy's English NER, so an entity the NER "
    "misses cannot be the answer. It is trained on English news (ReCoRD: CNN and Daily Mail articles) on top of "
    "LUKE's English Wikipedia pre-training; other languages and domains are untested. Long passages are read in "
    "windows of `max_seq_length` tokens and a query's answer is its candidates' best score over the windows. "
)
BIAS_RISKS = (
    "The model inherits the biases of its data: LUKE's pre-training on English Wikipedia and ReCoRD's news articles "
    "(CNN and Daily Mail, 2007-2015), which over-represent some people, places and viewpoints, so its answers about "
    "people can reflect associations found there (which person goes with a role, a crime or a nationality). It picks "
    "an entity even when the passage supports none, so a confident wrong answer can attribute an act or a statement "
    "to the wrong named person. Names that are rare in its training data are split into more word pieces and may be "
    "missed more often by spaCy's NER.\n\n"
    "Recommendations: do not use it to make decisions about people or as a source of facts without a person checking "
    "the passage; evaluate it on your own data before relying on it, and show users the evidence "
    "(`reader(inputs, return_html=True)` highlights every candidate mention with its score). A checkpoint made by "
    "the no-argument demo of `examples/run_record.py` (a tiny random model) checks the pipeline; it is not a reader."
)


def limitations_sections(variant: str) -> str:
    """The Hub template's "Intended uses & limitations" and "Bias, risks, and limitations" sections of a variant.

    The same text is in the generated card (``template.md``) and in the static card ``model_cards/<variant>.md``.
    """
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; known: {sorted(VARIANTS)}")
    return (
        "## Intended uses & limitations\n\n"
        + INTENDED_USES
        + VARIANTS[variant]["limitations"]
        + "\n\n## Bias, risks, and limitations\n\n"
        + BIAS_RISKS
        + "\n"
    )


# (label in the card, TrainingArguments field)
_TRAINING_FIELDS = [
    ("learning rate", "learning_rate"),
    ("train batch size (per device)", "per_device_train_batch_size"),
    ("eval batch size (per device)", "per_device_eval_batch_size"),
    ("gradient accumulation steps", "gradient_accumulation_steps"),
    ("epochs", "num_train_epochs"),
    ("max steps", "max_steps"),
    ("optimizer", "optim"),
    ("Adam beta1", "adam_beta1"),
    ("Adam beta2", "adam_beta2"),
    ("Adam epsilon", "adam_epsilon"),
    ("weight decay", "weight_decay"),
    ("lr scheduler", "lr_scheduler_type"),
    ("warmup steps (a value < 1 is a fraction of training)", "warmup_steps"),
    ("max grad norm", "max_grad_norm"),
    ("seed", "seed"),
]
_DATA_FIELDS = [
    ("max sequence length (words)", "max_seq_length"),
    ("document stride", "doc_stride"),
    ("max query length", "max_query_length"),
    ("max train samples", "max_train_samples"),
    ("max eval samples", "max_eval_samples"),
]
_CONFIG_FIELDS = [
    "num_hidden_layers",
    "hidden_size",
    "num_attention_heads",
    "intermediate_size",
    "entity_emb_size",
    "vocab_size",
    "entity_vocab_size",
    "use_absolute_position_embeddings",
    "use_relative_labels",
    "max_relative_position",
    "use_value_labels",
    "attention_window",
    "ablation",
    "graph_num_layers",
    "graph_layer",
    "kar_layer",
    "kar_entity_threshold",
    "xh_num_hop_layers",
    "ernie_num_fusion_layers",
]


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    if hasattr(value, "value") and not isinstance(value, str | int | bool):  # enums (optim, scheduler)
        return str(value.value)
    return str(value)


def training_hyperparameters(training_args: Mapping[str, Any] | None, world_size: int = 1) -> list[tuple[str, str]]:
    """``(name, value)`` rows of the training hyper-parameters worth publishing, from ``TrainingArguments``."""
    if not training_args:
        return []
    rows = []
    for label, field in _TRAINING_FIELDS:
        value = training_args.get(field)
        if value is None or (field == "max_steps" and value is not None and value <= 0):
            continue
        rows.append((label, _fmt(value)))
    per_device = training_args.get("per_device_train_batch_size")
    accumulation = training_args.get("gradient_accumulation_steps") or 1
    if per_device is not None:
        rows.append(("total train batch size", str(per_device * accumulation * max(world_size, 1))))
    rows.append(("processes", str(max(world_size, 1))))
    precision = "bf16" if training_args.get("bf16") else "fp16" if training_args.get("fp16") else "fp32"
    rows.append(("mixed precision", precision))
    if training_args.get("gradient_checkpointing"):
        rows.append(("gradient checkpointing", "yes"))
    for name in ("deepspeed", "fsdp"):
        if training_args.get(name):
            rows.append((name, _fmt(training_args[name])))
    return rows


def data_hyperparameters(data_args: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    """``(name, value)`` rows of the preprocessing settings (window length, stride, query length, limits)."""
    if not data_args:
        return []
    return [(label, _fmt(data_args[field])) for label, field in _DATA_FIELDS if data_args.get(field) is not None]


def config_rows(config: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    """``(name, value)`` rows of the architecture fields present in ``config`` (a ``config.to_dict()``).

    Config fields are returned in backticks; the two summaries of ``label_switches`` are plain text.
    """
    if not config:
        return []
    rows = [(f"`{field}`", _fmt(config[field])) for field in _CONFIG_FIELDS if field in config]
    switches = config.get("label_switches")
    if isinstance(switches, Mapping):
        off = sorted(name for name, on in switches.items() if not on and name != "single_edge_label")
        rows.append(("label switches off", ", ".join(off) if off else "none"))
        rows.append(("single edge label", _fmt(bool(switches.get("single_edge_label", False)))))
    return rows


def _framework_versions() -> list[tuple[str, str]]:
    rows = [("Python", platform.python_version())]
    for package in ("torch", "transformers", "tokenizers", "datasets", "accelerate", "evaluate"):
        try:
            rows.append((package, metadata.version(package)))
        except metadata.PackageNotFoundError:
            continue
    return rows


def _dataset_description(
    dataset_name: str | None, dataset_config_name: str | None, train_files: list[str], eval_files: list[str]
) -> tuple[str, str, str]:
    """(type for the model-index, human-readable name, markdown sentence) of the training/evaluation data."""
    if dataset_name:
        pretty = "ReCoRD (SuperGLUE)" if dataset_config_name == "record" else dataset_name
        config = f", config `{dataset_config_name}`" if dataset_config_name else ""
        return dataset_name, pretty, f"the Hub dataset `{dataset_name}`{config}"

    def listed(files: list[str]) -> str:
        return ", ".join(f"`{name}`" for name in dict.fromkeys(Path(f).name for f in files))

    parts = []
    if train_files:
        parts.append(f"training data {listed(train_files)}")
    if eval_files:
        parts.append(f"evaluation data {listed(eval_files)}")
    sentence = "ReCoRD-format local files (" + "; ".join(parts) + ")" if parts else "ReCoRD-format local files"
    return "json", "ReCoRD-format JSON lines", sentence


def render_model_card(
    model_name: str,
    results: Mapping[str, Any] | None = None,
    config: Mapping[str, Any] | None = None,
    training_args: Mapping[str, Any] | None = None,
    data_args: Mapping[str, Any] | None = None,
    base_model: str | None = None,
    dataset_name: str | None = None,
    dataset_config_name: str | None = None,
    train_files: list[str] | None = None,
    eval_files: list[str] | None = None,
    eval_split: str = "validation",
    variant: str = "gesa",
    repo_id: str | None = None,
    world_size: int = 1,
    license: str = "apache-2.0",
    template_path: str | os.PathLike | None = None,
) -> str:
    """The full ``README.md`` text (YAML metadata + body) of one trained checkpoint.

    Args:
        model_name: name shown in the card and the ``model-index``.
        results: ``all_results.json`` content; ``eval_exact_match`` / ``eval_f1`` (percent) become the
            ``model-index`` results, ``eval_samples`` the number of evaluated queries.
        config: the model config as a dict (``config.to_dict()``).
        training_args: ``TrainingArguments.to_dict()``.
        data_args: the data arguments (``max_seq_length``, ``doc_stride``, ``max_query_length``, ...).
        base_model: the checkpoint training started from (a Hub id becomes ``base_model`` metadata).
        dataset_name / dataset_config_name: Hub dataset used (e.g. ``super_glue`` / ``record``), else
        train_files / eval_files: the local data files.
        eval_split: split name reported in the ``model-index``.
        variant: ``gesa``, ``luke``, ``kar``, ``xh`` or ``ernie``.
        repo_id: id used in the loading snippet (defaults to ``model_name``).
        world_size: number of training processes (for the total batch size).
        license: license identifier for the metadata.
        template_path: the Jinja template (default: the shipped ``model_cards/template.md``).
    """
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; known: {sorted(VARIANTS)}")
    info = VARIANTS[variant]
    results = dict(results or {})
    train_files, eval_files = list(train_files or []), list(eval_files or [])
    dataset_type, dataset_pretty, dataset_sentence = _dataset_description(
        dataset_name, dataset_config_name, train_files, eval_files
    )
    eval_results = []
    for key, metric_type, metric_name in (("eval_exact_match", "exact_match", "Exact Match"), ("eval_f1", "f1", "F1")):
        if results.get(key) is not None:
            eval_results.append(
                EvalResult(
                    task_type="question-answering",
                    task_name="Cloze-style question answering (ReCoRD)",
                    dataset_type=dataset_type,
                    dataset_name=dataset_pretty,
                    dataset_config=dataset_config_name if dataset_name else None,
                    dataset_split=eval_split,
                    metric_type=metric_type,
                    metric_name=metric_name,
                    metric_value=round(float(results[key]), 2),
                )
            )
    is_hub_id = bool(base_model) and not Path(base_model).exists() and base_model.count("/") == 1
    card_data = ModelCardData(
        model_name=model_name,
        library_name="transformers",
        license=license,
        tags=BASE_TAGS + [t for t in info["tags"] if t not in BASE_TAGS],
        datasets=[dataset_name] if dataset_name else None,
        base_model=base_model if is_hub_id else None,
        metrics=["exact_match", "f1"],
        eval_results=eval_results or None,
    )
    card = ModelCard.from_template(
        card_data,
        template_path=str(template_path or shipped_file(TEMPLATE)),
        model_name=model_name,
        repo_id=repo_id or model_name,
        variant=variant,
        variant_title=info["title"],
        variant_description=info["description"],
        variant_citation=info.get("citation"),
        limitations_sections=limitations_sections(variant),
        base_model=base_model,
        dataset_sentence=dataset_sentence,
        eval_split=eval_split,
        exact_match=None if results.get("eval_exact_match") is None else f"{float(results['eval_exact_match']):.2f}",
        f1=None if results.get("eval_f1") is None else f"{float(results['eval_f1']):.2f}",
        eval_samples=results.get("eval_samples"),
        train_loss=None if results.get("train_loss") is None else f"{float(results['train_loss']):.4f}",
        config_rows=config_rows(config),
        training_rows=training_hyperparameters(training_args, world_size),
        data_rows=data_hyperparameters(data_args),
        framework_rows=_framework_versions(),
    )
    return str(card)


def write_model_card(output_dir: str | os.PathLike, **kwargs: Any) -> Path:
    """Render the card for ``output_dir`` and write it to ``output_dir/README.md``.

    ``results`` defaults to ``output_dir/all_results.json`` and ``config`` to ``output_dir/config.json`` when they
    exist; ``model_name`` defaults to the folder name. Other keyword arguments go to :func:`render_model_card`.
    """
    output_dir = Path(output_dir)
    for key, filename in (("results", "all_results.json"), ("config", "config.json")):
        if kwargs.get(key) is None and (output_dir / filename).is_file():
            kwargs[key] = json.loads((output_dir / filename).read_text(encoding="utf-8"))
    kwargs.setdefault("model_name", output_dir.resolve().name)
    path = output_dir / "README.md"
    path.write_text(render_model_card(**kwargs), encoding="utf-8")
    return path


def main(argv: list[str] | None = None) -> Path:
    """Command line: re-render the card of an existing output folder and say what was written (the card, its variant:
    ``--variant``, else the one the folder's ``config.json`` names, and the scores it shows)."""
    parser = argparse.ArgumentParser(prog="python -m gesa.training.cards", description=__doc__.split("\n")[0])
    parser.add_argument("output_dir")
    parser.add_argument("--model_name")
    parser.add_argument("--repo_id")
    parser.add_argument("--base_model")
    parser.add_argument("--dataset_name")
    parser.add_argument("--dataset_config_name")
    parser.add_argument("--variant", choices=sorted(VARIANTS),
                        help="the model family (default: the one the folder's config.json names)")  # fmt: skip
    args = parser.parse_args(argv)
    folder = Path(args.output_dir)
    if not (folder / "config.json").is_file():
        parser.error(f"{folder} holds no config.json: give the output folder of a run_record.py training run")
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        parser.error(f"{folder / 'config.json'} cannot be read ({error}); save the model again")
    kwargs = {k: v for k, v in vars(args).items() if k != "output_dir" and v is not None}
    if "variant" not in kwargs:
        from .registry import variant_of

        variant = variant_of(config.get("model_type"), config.get("ablation")) if isinstance(config, dict) else None
        if variant not in VARIANTS:
            parser.error(f"{folder / 'config.json'} names model_type {config.get('model_type')!r}, which has no card: "
                         f"give --variant (one of {', '.join(sorted(VARIANTS))})")  # fmt: skip
        kwargs["variant"] = variant
    path = write_model_card(folder, **kwargs)
    results = folder / "all_results.json"
    scores = json.loads(results.read_text(encoding="utf-8")) if results.is_file() else {}
    names = (("eval_exact_match", "exact match"), ("eval_f1", "F1"))
    shown = [f"{name} {float(scores[key]):.2f}" for key, name in names if scores.get(key) is not None]
    if shown:
        where = f"scores from {results.name}: {', '.join(shown)}"
    else:
        where = f"no evaluation scores in {results.name}" if results.is_file() else "no all_results.json: no scores"
    print(f"cards: wrote {path}, the {VARIANTS[kwargs['variant']]['title']} card ({where})")
    return path


if __name__ == "__main__":
    main()
