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
"""A saved checkpoint carries its own code and nothing else: its model's import chain, its processor's and its
pipeline's (the modules each imports relatively, read here from the sources), no other variant's model, configuration,
processor or pipeline and no registry; and it answers through ``pipeline(model=dir, trust_remote_code=True)`` in a
process where ``gesa`` cannot be imported, exactly as the package's pipeline answers with the model in memory."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from model_helpers import WITHOUT_GESA
from tiny_luke import TINY_SIZES
from transformers import AutoModelForQuestionAnswering, LukeTokenizer, pipeline

from gesa.configuration_context_graph import ContextGraphConfig
from gesa.configuration_gesa import GesaConfig
from gesa.configuration_long_luke import LongLukeConfig
from gesa.configuration_luke_graph import LukeGraphConfig
from gesa.configuration_variants import ErnieConfig, KarConfig, XhConfig
from gesa.modeling_context_graph import ContextGraphForMultipleChoice
from gesa.modeling_document_ie import GesaForDocumentIE
from gesa.modeling_ernie import ErnieForEntitySpanQA
from gesa.modeling_ernie_entity import ErnieForEntityPairClassification
from gesa.modeling_gesa import GesaForEntitySpanQA
from gesa.modeling_gesa_entity import GesaForEntityClassification, GesaForEntityPairClassification
from gesa.modeling_gesa_multiple_choice import GesaForEntityMultipleChoice
from gesa.modeling_kar import KarForEntitySpanQA
from gesa.modeling_kar_entity import KarForEntityClassification
from gesa.modeling_long_luke import LongLukeForEntitySpanQA
from gesa.modeling_long_luke_document_ie import LongLukeForDocumentIE
from gesa.modeling_luke_graph import LukeGraphForEntitySpanQA
from gesa.modeling_luke_graph_multiple_choice import LukeGraphForEntityMultipleChoice
from gesa.modeling_xh import XhForEntitySpanQA, XhForFactVerification
from gesa.modeling_xh_tasks import XhForHotpotQA
from gesa.pipeline_context_graph import ContextGraphPipeline
from gesa.pipeline_document_ie import DocumentIEPipeline
from gesa.pipeline_entity import EntityTypingPipeline, RelationClassificationPipeline
from gesa.pipeline_entity_kb import KnowledgeEntityTypingPipeline, KnowledgeRelationClassificationPipeline
from gesa.pipeline_gesa import EntityClozeQAPipeline
from gesa.pipeline_kb import KnowledgeClozeQAPipeline
from gesa.pipeline_wikihop import WikihopPipeline
from gesa.pipeline_xh import XhClozeQAPipeline
from gesa.pipeline_xh_tasks import XhFactVerificationPipeline, XhHotpotQAPipeline
from gesa.processing_context_graph import ContextGraphProcessor
from gesa.processing_document_ie import DocumentIEProcessor
from gesa.processing_entity import EntityTaskProcessor
from gesa.processing_gesa import GesaProcessor
from gesa.processing_wikihop import WikihopProcessor
from gesa.processing_xh import XhProcessor
from gesa.processing_xh_tasks import XhTaskProcessor

ROOT = Path(__file__).resolve().parents[1]
TINY = dict(TINY_SIZES, max_relative_position=16)
PASSAGE = (
    "Anna Keller met Tobias Wren in Berlin on Sunday. Tobias Wren later joined FC Aurora.\n"
    "@highlight\nAnna Keller praised FC Aurora"
)
MENTIONS = ("Anna Keller", "Tobias Wren", "Berlin", "FC Aurora")
CLOZE = {
    "passage": PASSAGE,
    "query": "@placeholder thanked Tobias Wren in Berlin.",
    "entity_spans": sorted(
        (start, start + len(text))
        for text in MENTIONS
        for start in range(len(PASSAGE))
        if PASSAGE.startswith(text, start)
    ),
}
TEXT = "Anna Keller met Tobias Wren in Berlin."
WIKIHOP = {
    "query": "country velmor",
    "supports": ["Velmor is a small town in Abo Province.", "Abo Province is a region of France."],
    "candidates": ["france", "spain", "norway"],
}
HOTPOT = {
    "question": "In which country is the city where Alma Reed was born?",
    "context": [
        ["Alma Reed", ["Alma Reed was born in Lyon.", " She wrote books."]],
        ["Lyon", ["Lyon is an old city.", " It lies in France."]],
    ],
}
PAGES = {"Lyon": {0: "Lyon is a city in France.", 1: "Lyon has two rivers."}, "Turin": {0: "Turin is in Italy."}}
CLAIM = {"claim": "Lyon is in France."}
OTHER_VARIANTS = {
    "gesa": {"modeling_kar", "modeling_ernie", "modeling_xh", "modeling_luke_graph", "configuration_variants",
             "configuration_luke_graph", "processing_kb", "processing_xh", "pipeline_kb", "pipeline_xh"},
    "luke_graph": {"modeling_kar", "modeling_ernie", "modeling_xh", "configuration_variants", "processing_kb",
                   "processing_xh"},
    "kar": {"modeling_ernie", "modeling_xh", "modeling_luke_graph", "configuration_luke_graph", "processing_xh",
            "pipeline_xh"},
    "ernie": {"modeling_kar", "modeling_xh", "modeling_luke_graph", "configuration_luke_graph", "processing_xh",
              "pipeline_xh"},
    "xh": {"modeling_kar", "modeling_ernie", "modeling_luke_graph", "configuration_luke_graph", "processing_gesa",
           "processing_kb", "pipeline_gesa", "pipeline_kb"},
    "context_graph": {"modeling_kar", "modeling_ernie", "modeling_xh", "modeling_luke_graph", "configuration_variants",
                      "configuration_luke_graph", "modeling_gesa_multiple_choice", "pipeline_wikihop", "processing_kb",
                      "processing_xh"},
    "long_luke": {"modeling_kar", "modeling_ernie", "modeling_xh", "modeling_luke_graph", "configuration_variants",
                  "configuration_luke_graph", "processing_kb", "processing_xh", "pipeline_kb", "pipeline_xh"},
}  # fmt: skip
# the long variant's own modules: no other variant's checkpoint carries them
for _name, _others in OTHER_VARIANTS.items():
    if _name != "long_luke":
        _others |= {"modeling_long_luke", "configuration_long_luke"}
# what no checkpoint carries: the training side (the scripts' machinery, the tasks, the registry, metrics, cards)
NEVER = {path.stem for path in (ROOT / "training").glob("*.py")} - {"__init__"}


def relative_imports(name: str) -> set[str]:
    """The sibling modules ``name`` imports (``from .x import``, at any depth of the file), read from its source."""
    tree = ast.parse((ROOT / f"{name}.py").read_text(encoding="utf-8"))
    return {
        node.module.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module
    }


def chain(*names: str) -> set[str]:
    """``names`` and every module they import relatively, at any depth."""
    seen, todo = set(), list(names)
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(relative_imports(name))
    return seen


def tokenizer_of(folder: Path) -> LukeTokenizer:
    return LukeTokenizer.from_pretrained(folder)


def _cloze(name, variant, model_class, config_class, processor_class, pipeline_class, **config):
    def build(luke):
        processor = (
            GesaProcessor(tokenizer_of(luke), max_seq_length=64, doc_stride=24, max_query_length=24)
            if processor_class is GesaProcessor
            else XhProcessor(tokenizer_of(luke), max_node_length=64, max_query_length=24)
        )
        tokens = processor.tokenizer
        model = model_class(config_class(vocab_size=len(tokens), entity_vocab_size=len(tokens.entity_vocab),
                                         **TINY, **config))  # fmt: skip
        return model, processor

    return dict(name=name, variant=variant, build=build, pipeline=pipeline_class, inputs=CLOZE,
                call={"top_k": 100}, task="entity-cloze-qa")  # fmt: skip


def _entity(name, variant, model_class, config_class, pipeline_class, task, inputs, call):
    def build(luke):
        tokens = tokenizer_of(luke)
        labels = ["person", "place", "group"]
        config = config_class(
            vocab_size=len(tokens),
            entity_vocab_size=len(tokens.entity_vocab),
            **TINY,
            id2label=dict(enumerate(labels)),
            label2id={n: i for i, n in enumerate(labels)},
        )
        processor = EntityTaskProcessor(tokens, task.replace("-", "_"), labels)
        return model_class(config), processor

    return dict(name=name, variant=variant, build=build, pipeline=pipeline_class, inputs=inputs, call=call, task=task)


def _wikihop(luke, model_class=GesaForEntityMultipleChoice, config_class=GesaConfig):
    processor = WikihopProcessor(tokenizer_of(luke), max_seq_length=128, max_query_length=16)
    tokens = processor.tokenizer
    model = model_class(config_class(vocab_size=len(tokens), entity_vocab_size=4, **TINY))
    return model, processor


def _wikihop_luke_graph(luke):
    return _wikihop(luke, LukeGraphForEntityMultipleChoice, LukeGraphConfig)


def _context_graph(luke):
    processor = ContextGraphProcessor(tokenizer_of(luke), max_document_length=64, max_query_length=16)
    tokens = processor.tokenizer
    config = ContextGraphConfig(vocab_size=len(tokens), entity_vocab_size=4, gnn_num_layers=2, **TINY)
    return ContextGraphForMultipleChoice(config), processor


PAPER = {
    "words": "document : Zorn Net for image dehazing . We train Zorn Net on Hazy-5 . PSNR grows .".split(),
    "sentences": [[0, 8], [8, 15], [15, 18]],
    "sections": [[0, 8], [8, 18]],
}


def _document_ie(luke):
    processor = DocumentIEProcessor(tokenizer_of(luke), max_seq_length=16)
    tokens = processor.tokenizer
    config = GesaConfig(vocab_size=len(tokens), entity_vocab_size=4, ablation="luke", **TINY_SIZES)
    return GesaForDocumentIE(config), processor


def _document_ie_long(luke):
    processor = DocumentIEProcessor(tokenizer_of(luke), max_seq_length=1024)  # the whole paper in one pass
    tokens = processor.tokenizer
    config = LongLukeConfig(vocab_size=len(tokens), entity_vocab_size=4, attention_window=8, num_random_blocks=0,
                            max_position_embeddings=1026, **TINY_SIZES)  # fmt: skip
    return LongLukeForDocumentIE(config), processor


def _xh_task(model_class, task):
    def build(luke):
        processor = XhTaskProcessor(tokenizer_of(luke), max_node_length=48, max_query_length=16, task=task)
        tokens = processor.tokenizer
        config = XhConfig(vocab_size=len(tokens), entity_vocab_size=4, xh_num_hop_layers=1, **TINY)
        return model_class(config), processor

    return build


CASES = [
    _cloze("record-gesa", "gesa", GesaForEntitySpanQA, GesaConfig, GesaProcessor, EntityClozeQAPipeline),
    _cloze("record-luke-graph", "luke_graph", LukeGraphForEntitySpanQA, LukeGraphConfig, GesaProcessor,
           EntityClozeQAPipeline, ablation="luke"),
    _cloze("record-kar", "kar", KarForEntitySpanQA, KarConfig, GesaProcessor, KnowledgeClozeQAPipeline),
    _cloze("record-long-luke", "long_luke", LongLukeForEntitySpanQA, LongLukeConfig, GesaProcessor,
           EntityClozeQAPipeline, attention_window=16, max_position_embeddings=130),
    _cloze("record-ernie", "ernie", ErnieForEntitySpanQA, ErnieConfig, GesaProcessor, KnowledgeClozeQAPipeline),
    _cloze("record-xh", "xh", XhForEntitySpanQA, XhConfig, XhProcessor, XhClozeQAPipeline, xh_num_hop_layers=1),
    _entity("typing-gesa", "gesa", GesaForEntityClassification, GesaConfig, EntityTypingPipeline, "entity-typing",
            {"text": TEXT, "entity_span": [0, 11]}, {"threshold": 0.0}),
    _entity("relation-gesa", "gesa", GesaForEntityPairClassification, GesaConfig, RelationClassificationPipeline,
            "relation-classification", {"text": TEXT, "head_span": [0, 11], "tail_span": [31, 37]}, {}),
    _entity("typing-kar", "kar", KarForEntityClassification, KarConfig, KnowledgeEntityTypingPipeline,
            "entity-typing", {"text": TEXT, "entity_span": [16, 27]}, {"threshold": 0.0}),
    _entity("relation-ernie", "ernie", ErnieForEntityPairClassification, ErnieConfig,
            KnowledgeRelationClassificationPipeline, "relation-classification",
            {"text": TEXT, "head_span": [16, 27], "tail_span": [31, 37]}, {}),
    dict(name="wikihop-gesa", variant="gesa", build=_wikihop, pipeline=WikihopPipeline, inputs=WIKIHOP, call={},
         task="wikihop-multiple-choice"),
    dict(name="wikihop-luke-graph", variant="luke_graph", build=_wikihop_luke_graph, pipeline=WikihopPipeline,
         inputs=WIKIHOP, call={}, task="wikihop-multiple-choice"),
    dict(name="wikihop-context-graph", variant="context_graph", build=_context_graph, pipeline=ContextGraphPipeline,
         inputs=WIKIHOP, call={}, task="context-graph-multiple-choice"),
    dict(name="hotpotqa-xh", variant="xh", build=_xh_task(XhForHotpotQA, "hotpotqa"), pipeline=XhHotpotQAPipeline,
         inputs=HOTPOT, call={}, task="xh-hotpot-qa"),
    dict(name="scirex-luke", variant="gesa", build=_document_ie, pipeline=DocumentIEPipeline, inputs=PAPER,
         call={"threshold": 0.0}, task="document-information-extraction"),
    dict(name="scirex-long-luke", variant="long_luke", build=_document_ie_long, pipeline=DocumentIEPipeline,
         inputs=PAPER, call={"threshold": 0.0}, task="document-information-extraction"),
    dict(name="fever-xh", variant="xh", build=_xh_task(XhForFactVerification, "fever"),
         pipeline=XhFactVerificationPipeline, inputs=CLAIM, call={}, task="xh-fact-verification",
         init={"pages": PAGES}),
]  # fmt: skip


def module_of(obj: object) -> str:
    return type(obj).__module__.split(".")[-1]


@pytest.fixture(scope="module")
def saved(tiny_luke_dir, tmp_path_factory):
    """Every case saved as the scripts save it (the model's and the processor's ``save_pretrained``), with the
    package's pipeline's answer on the model in memory."""
    root = tmp_path_factory.mktemp("checkpoints")
    out = {}
    for case in CASES:
        torch.manual_seed(0)
        model, processor = case["build"](tiny_luke_dir)
        model.eval()
        folder = root / case["name"]
        model.save_pretrained(folder)
        processor.save_pretrained(folder)
        reader = case["pipeline"](model=model, tokenizer=processor.tokenizer, **case.get("init", {}),
                                  **({} if case["task"].startswith(("entity-typing", "relation")) else
                                     {"processor": processor}))  # fmt: skip
        out[case["name"]] = dict(case, folder=folder, model=model, processor=processor,
                                 expected=reader(case["inputs"], **case["call"]))  # fmt: skip
    return out


@pytest.mark.parametrize("name", [case["name"] for case in CASES])
def test_a_checkpoint_carries_its_model_processor_and_pipeline_chains_only(saved, name):
    case = saved[name]
    folder = case["folder"]
    files = {path.stem for path in folder.glob("*.py")}
    pipeline_module = case["pipeline"].__module__.split(".")[-1]
    own = chain(module_of(case["model"]), module_of(case["processor"]), pipeline_module)
    assert files == own, (sorted(files - own), sorted(own - files))
    assert not files & (NEVER | OTHER_VARIANTS[case["variant"]]), sorted(
        files & (NEVER | OTHER_VARIANTS[case["variant"]])
    )
    config = json.loads((folder / "config.json").read_text())
    assert config["custom_pipelines"] == {
        case["task"]: {
            "impl": f"{pipeline_module}.{case['pipeline'].__name__}",
            "pt": [type(case["model"])._auto_class],
        }
    }
    processor_config = json.loads((folder / "processor_config.json").read_text())
    assert processor_config["auto_map"] == {
        "AutoProcessor": f"{module_of(case['processor'])}.{type(case['processor']).__name__}"
    }
    assert "pages" not in processor_config  # FEVER's wiki pages are data, given to the pipeline, never saved


def test_a_gesa_record_checkpoint_holds_exactly_gesas_own_chain(saved):
    """Its model's, processor's and pipeline's modules and their relative imports, nothing else (27 files with every
    variant and the registry before; GESA's own chain is 26 files since Eq. 1's kernels are one file each: about 7,900
    lines then, 8,501 with the thesis's context-graph labels, eq. 2.62's config and the KB files' loading; 27 files
    with the optional libraries' install hints, extras_gesa; about 9,060 lines since the shared windowed kernel also
    runs the long variant's per-layer patterns: dilation and random key blocks; about 9,310 with the conversion's
    entity-query gain and seed 002's pre-training objectives' config field)."""
    from transformers.dynamic_module_utils import get_relative_import_files

    files = {path.name for path in saved["record-gesa"]["folder"].glob("*.py")}
    chain = set()
    for name in ("modeling_gesa", "processing_gesa", "pipeline_gesa"):
        chain |= {f"{name}.py", *(Path(path).name for path in get_relative_import_files(str(ROOT / f"{name}.py")))}
    assert files == chain, (files - chain, chain - files)
    assert not {name for name in files if name.removesuffix(".py") in NEVER}
    assert (
        len(files) <= 27 and sum(len((ROOT / name).read_text(encoding="utf-8").splitlines()) for name in files) < 9500
    )


FRESH = WITHOUT_GESA + textwrap.dedent("""
    import json, sys

    from transformers import pipeline

    out = {}
    for case in json.load(open(sys.argv[1], encoding="utf-8")):
        init = dict(case["init"])
        if "pages" in init:  # JSON keys are strings; a page's lines are numbered
            init["pages"] = {page: {int(k): v for k, v in lines.items()} for page, lines in init["pages"].items()}
        reader = pipeline(model=case["folder"], trust_remote_code=True, **init)
        assert "transformers_modules" in type(reader).__module__, type(reader).__module__
        out[case["name"]] = {"class": type(reader).__name__, "task": reader.task,
                             "answer": reader(case["inputs"], **case["call"])}
    print(json.dumps(out))
""")


def _same(answer, expected, where: str) -> None:
    """Equal outputs, floats to 1e-5."""
    if isinstance(expected, float):
        assert answer == pytest.approx(expected, abs=1e-5), where
    elif isinstance(expected, dict):
        assert sorted(answer) == sorted(expected), where
        for key in expected:
            _same(answer[key], expected[key], f"{where}.{key}")
    elif isinstance(expected, (list, tuple)):
        assert len(answer) == len(expected), where
        for index, (got, want) in enumerate(zip(answer, expected, strict=True)):
            _same(got, want, f"{where}[{index}]")
    else:
        assert answer == expected, where


def test_every_checkpoint_answers_through_its_pipeline_where_gesa_is_not_importable(saved, tmp_path):
    cases = [
        {"name": name, "folder": str(case["folder"]), "inputs": case["inputs"], "call": case["call"],
         "init": case.get("init", {})}
        for name, case in saved.items()
    ]  # fmt: skip
    spec = tmp_path / "cases.json"
    spec.write_text(json.dumps(cases), encoding="utf-8")
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    env.update(HF_HUB_OFFLINE="1", HF_MODULES_CACHE=str(tmp_path / "modules"))
    proc = subprocess.run(
        [sys.executable, "-I", "-c", FRESH, str(spec)], capture_output=True, text=True, cwd=cwd, env=env, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    answers = json.loads(proc.stdout.strip().splitlines()[-1])
    for name, case in saved.items():
        got = answers[name]
        assert (got["class"], got["task"]) == (case["pipeline"].__name__, case["task"]), name
        expected = json.loads(json.dumps(case["expected"]))  # tuples as lists, as they come back
        _same(got["answer"], expected, name)


def test_a_model_loaded_from_its_checkpoint_saves_its_pipeline_again(saved, tmp_path):
    """A model loaded with ``trust_remote_code`` runs a copy of its modeling chain only; saving it again still gives
    the folder its pipeline (found in the checkpoint it came from)."""
    source = saved["record-kar"]["folder"]
    model = AutoModelForQuestionAnswering.from_pretrained(source, trust_remote_code=True)
    model.save_pretrained(tmp_path / "again")
    assert {p.name for p in source.glob("pipeline_*.py")} == {
        p.name for p in (tmp_path / "again").glob("pipeline_*.py")
    }
    config = json.loads((tmp_path / "again" / "config.json").read_text())
    assert config["custom_pipelines"]["entity-cloze-qa"]["impl"] == "pipeline_kb.KnowledgeClozeQAPipeline"


def test_a_head_without_pipeline_drops_an_inherited_custom_pipelines_entry(saved, tmp_path):
    from gesa.modeling_gesa_entity import GesaForMaskedLM

    case = saved["typing-gesa"]
    model = GesaForMaskedLM(case["model"].config)  # pre-training: no pipeline
    model.save_pretrained(tmp_path)
    assert "custom_pipelines" not in json.loads((tmp_path / "config.json").read_text())
    assert not list(tmp_path.glob("pipeline_*.py"))


@pytest.mark.parametrize(("model_name", "expected"), [("record-xh", "XhClozeQAPipeline"),
                                                      ("record-kar", "KnowledgeClozeQAPipeline")])  # fmt: skip
def test_a_pipeline_built_on_a_head_that_names_another_one_is_refused_with_its_name(saved, model_name, expected):
    case = saved[model_name]
    with pytest.raises(ValueError, match=rf"answers through pipeline_\w+\.{expected}, not EntityClozeQAPipeline"):
        pipeline("entity-cloze-qa", model=case["model"], tokenizer=case["processor"].tokenizer)


def long_pretraining(tmp_path: Path) -> Path:
    """A ``--task pretrain --variant long_luke --objectives`` checkpoint (``LongLukeForEntityPreTraining``), saved."""
    from gesa.modeling_long_luke_objectives import LongLukeForEntityPreTraining

    config = LongLukeConfig(vocab_size=40, entity_vocab_size=6, attention_window=8, num_random_blocks=0,
                            max_position_embeddings=130, pretraining_objectives={"objectives": ["luke", "erica"]},
                            **TINY_SIZES)  # fmt: skip
    LongLukeForEntityPreTraining(config).save_pretrained(tmp_path / "long-pretrain")
    return tmp_path / "long-pretrain"


def test_a_long_pretraining_checkpoint_carries_its_head_and_the_long_backbone_only(tmp_path):
    """The long variant's pre-training head (seed 002's objectives) ships its own chain: the objectives' head, the long
    backbone, GESA's shared modules; no other variant's model and no task head."""
    folder = long_pretraining(tmp_path)
    files = {path.stem for path in folder.glob("*.py")}
    assert files == chain("modeling_long_luke_objectives"), sorted(files ^ chain("modeling_long_luke_objectives"))
    assert {"modeling_gesa_objectives", "modeling_long_luke", "configuration_long_luke"} <= files
    assert not files & (NEVER | OTHER_VARIANTS["long_luke"] | {"modeling_long_luke_document_ie"}), sorted(files)
    config = json.loads((folder / "config.json").read_text())
    assert config["auto_map"]["AutoModelForPreTraining"] == (
        "modeling_long_luke_objectives.LongLukeForEntityPreTraining"
    )


def test_the_root_holds_exactly_what_checkpoints_carry(saved, tmp_path):
    """The package root is the code checkpoints ship: every flat module is in some saved checkpoint (these cases, a
    pre-training checkpoint of seed 002's objectives, or the paper system's, whose folder the XH tests save), and no
    checkpoint carries a module of ``training/``."""
    from gesa.configuration_gesa import GesaConfig as Config
    from gesa.modeling_gesa_objectives import GesaForEntityPreTraining

    GesaForEntityPreTraining(Config(**TINY, vocab_size=40, entity_vocab_size=6)).save_pretrained(tmp_path / "pretrain")
    folders = [case["folder"] for case in saved.values()] + [tmp_path / "pretrain", long_pretraining(tmp_path)]
    carried = {path.stem for folder in folders for path in folder.glob("*.py")}
    root = {path.stem for path in ROOT.glob("*.py")} - {"__init__", "setup", "conftest"}
    training = {path.stem for path in (ROOT / "training").glob("*.py")}
    paper = chain("modeling_xh_paper", "configuration_variants", "pipeline_xh_paper")
    assert not root - carried - paper, sorted(root - carried - paper)
    assert not carried & training, sorted(carried & training)
