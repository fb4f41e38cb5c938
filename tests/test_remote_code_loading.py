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
"""Saved checkpoints reload through the ``Auto*`` classes with ``trust_remote_code`` as their own head, whatever was
loaded before in the process, and the example scripts change no ``Auto*`` mapping when imported."""

from __future__ import annotations

import builtins
import importlib.util
import sys
from pathlib import Path

import pytest
import transformers
from transformers import AutoModelForSequenceClassification

from gesa.loading_gesa import load_tokenizer
from gesa.modeling_gesa_entity import GesaForEntityClassification, GesaForEntityPairClassification

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ("run_record.py", "run_multihop.py", "run_entity_tasks.py")


@pytest.fixture
def two_heads(tiny_luke_dir, tmp_path):
    """A typing head and a relation head (both ``AutoModelForSequenceClassification``) saved in folders of one name,
    as ``Trainer`` names its checkpoints: their code copies become one remote module."""
    typing = tmp_path / "typing" / "checkpoint-8"
    relation = tmp_path / "relation" / "checkpoint-8"
    GesaForEntityClassification.from_luke_pretrained(tiny_luke_dir, num_labels=3).save_pretrained(typing)
    GesaForEntityPairClassification.from_luke_pretrained(tiny_luke_dir, num_labels=5).save_pretrained(relation)
    transformers.AutoTokenizer.from_pretrained(tiny_luke_dir).save_pretrained(typing)
    return typing, relation


@pytest.mark.parametrize("order", [("typing", "relation"), ("relation", "typing")])
def test_checkpoints_in_folders_of_one_name_each_load_as_their_own_head(two_heads, order):
    folders = dict(zip(("typing", "relation"), two_heads, strict=True))
    expected = {"typing": ("GesaForEntityClassification", 3), "relation": ("GesaForEntityPairClassification", 5)}
    config_classes = set()
    for name in order:
        model = AutoModelForSequenceClassification.from_pretrained(folders[name], trust_remote_code=True)
        assert (type(model).__name__, model.config.num_labels) == expected[name]
        assert type(model).__module__.startswith("transformers_modules")  # the checkpoint's own copy
        config_classes.add(type(model.config))
    assert len(config_classes) == 1  # one remote module: the case where transformers' own mapping would mix them up


def test_importing_the_example_scripts_registers_no_auto_class():
    before = dict(transformers.models.auto.configuration_auto.CONFIG_MAPPING._extra_content)
    for script in SCRIPTS:
        spec = importlib.util.spec_from_file_location(f"import_only_{Path(script).stem}", ROOT / "examples" / script)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
    assert transformers.models.auto.configuration_auto.CONFIG_MAPPING._extra_content == before


def test_a_checkpoints_tokenizer_loads_without_asking_to_run_its_code(two_heads, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("asked whether to run the checkpoint's code")

    monkeypatch.setattr(builtins, "input", refuse)
    typing, _ = two_heads
    tokenizer = load_tokenizer(typing)
    assert type(tokenizer).__name__ == "LukeTokenizer"
    assert len(tokenizer) == GesaForEntityClassification.from_pretrained(typing).config.vocab_size


def test_a_checkpoints_processor_loads_without_asking_to_run_its_code(tiny_luke_dir, tmp_path, monkeypatch, caplog):
    """``GesaProcessor.from_pretrained(folder)`` (a trained folder: its config names the folder's code) reads the
    tokenizer and the saved settings without asking whether to run that code and without transformers' "model of
    type `gesa` to instantiate a model of type ``" warning."""
    from gesa import GesaForEntitySpanQA, GesaProcessor

    def refuse(*args, **kwargs):
        raise AssertionError("asked whether to run the checkpoint's code")

    folder = tmp_path / "trained"
    GesaForEntitySpanQA.from_luke_pretrained(tiny_luke_dir).save_pretrained(folder)
    tokenizer = transformers.AutoTokenizer.from_pretrained(tiny_luke_dir)
    GesaProcessor(tokenizer, max_seq_length=96, max_query_length=32).save_pretrained(folder)
    monkeypatch.setattr(builtins, "input", refuse)
    transformers.utils.logging.enable_propagation()
    try:
        with caplog.at_level("WARNING"):
            processor = GesaProcessor.from_pretrained(folder)
    finally:
        transformers.utils.logging.disable_propagation()
    assert processor.max_seq_length == 96 and type(processor.tokenizer).__name__ == "LukeTokenizer"
    assert not [record for record in caplog.records if "to instantiate a model of type" in record.getMessage()]


def test_a_remote_code_checkpoint_saves_back_into_its_own_folder(tiny_luke_dir, tmp_path):
    """Load with ``trust_remote_code``, change, save into the folder it came from: the model, its code and its
    pipeline's code are there, and the change is what reloads (the pipeline files are the folder's own already)."""
    import torch
    from transformers import AutoModelForQuestionAnswering, AutoProcessor

    from gesa import GesaForEntitySpanQA, GesaProcessor

    folder = tmp_path / "qa"
    GesaForEntitySpanQA.from_luke_pretrained(tiny_luke_dir).save_pretrained(folder)
    GesaProcessor(transformers.AutoTokenizer.from_pretrained(tiny_luke_dir)).save_pretrained(folder)
    code_files = sorted(path.name for path in folder.glob("*.py"))
    assert "pipeline_gesa.py" in code_files
    model = AutoModelForQuestionAnswering.from_pretrained(folder, trust_remote_code=True)
    with torch.no_grad():
        next(model.parameters()).fill_(0.25)  # the change a user saves
    model.save_pretrained(folder)  # raised shutil.SameFileError copying pipeline_gesa.py onto itself
    AutoProcessor.from_pretrained(folder, trust_remote_code=True).save_pretrained(folder)
    assert sorted(path.name for path in folder.glob("*.py")) == code_files
    reloaded = AutoModelForQuestionAnswering.from_pretrained(folder, trust_remote_code=True)
    changed = dict(model.named_parameters())
    assert all(torch.equal(changed[name], parameter) for name, parameter in reloaded.named_parameters())
    reader = transformers.pipeline(model=str(folder), trust_remote_code=True)
    assert type(reader).__name__ == "EntityClozeQAPipeline"
