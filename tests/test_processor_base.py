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
"""Every processor stands on ``processing_base_gesa.ProcessorBase`` (``ProcessorMixin``): its settings round-trip
through ``save_pretrained`` / ``AutoProcessor.from_pretrained(..., trust_remote_code=True)`` and through pickling,
a damaged ``processor_config.json`` is one error naming the file and the fix, and every cap an encode call applies is
counted and logged."""

from __future__ import annotations

import json
import logging
import pickle
import sys

import pytest
from transformers import AutoProcessor, LukeTokenizer

from gesa.processing_base_gesa import ProcessorBase, load_processor_settings
from gesa.processing_entity import EntityTaskProcessor
from gesa.processing_gesa import GesaProcessor
from gesa.processing_wikihop import WikihopProcessor
from gesa.processing_xh import XhProcessor
from gesa.processing_xh_tasks import XhTaskProcessor

PAGES = {"Lyon": {0: "Lyon is a city in France."}}
# each processor with settings other than its defaults, the field a test damages and a wrong value for it
PROCESSORS = {
    "GesaProcessor": (GesaProcessor, {"max_seq_length": 96, "doc_stride": 32, "max_query_length": 24,
                                      "ner_labels": ["PERSON"], "skip_invalid": True}, "max_seq_length", "96"),
    "WikihopProcessor": (WikihopProcessor, {"max_seq_length": 300, "max_query_length": 20, "max_entities": 64},
                         "max_entities", 1),
    "XhProcessor": (XhProcessor, {"max_node_length": 80, "max_query_length": 20, "max_nodes": 6,
                                  "hotpot_edges": "full"}, "hotpot_edges", "sideways"),
    "XhTaskProcessor": (XhTaskProcessor, {"max_node_length": 80, "max_query_length": 20, "max_nodes": 5,
                                          "task": "fever", "pages": PAGES}, "task", "squad"),
    "EntityTaskProcessor": (EntityTaskProcessor, {"task": "ner", "label_names": ["O", "LOC"], "max_length": 64,
                                                  "max_span_length": 4}, "label_names", ["LOC", "O"]),
}  # fmt: skip


def build(name: str, luke_dir) -> ProcessorBase:
    cls, settings, _, _ = PROCESSORS[name]
    return cls(LukeTokenizer.from_pretrained(luke_dir), **settings)


@pytest.mark.parametrize("name", sorted(PROCESSORS))
def test_every_processor_is_a_processor_base_whose_settings_round_trip(name, tiny_luke_dir, tmp_path):
    processor = build(name, tiny_luke_dir)
    assert isinstance(processor, ProcessorBase)
    processor.save_pretrained(tmp_path)
    saved = json.loads((tmp_path / "processor_config.json").read_text())
    module = type(processor).__module__.split(".")[-1]
    assert saved["auto_map"] == {"AutoProcessor": f"{module}.{name}"} and saved["processor_class"] == name
    assert (tmp_path / f"{module}.py").is_file() and (tmp_path / "processing_base_gesa.py").is_file()
    assert "pages" not in saved and "stats" not in saved and "_backend" not in saved
    for loaded in (
        type(processor).from_pretrained(tmp_path),
        AutoProcessor.from_pretrained(tmp_path, trust_remote_code=True),
    ):
        assert type(loaded).__name__ == name
        expected = {key: value for key, value in processor.settings().items()}
        assert json.loads(json.dumps(loaded.settings())) == json.loads(json.dumps(expected))
        assert len(loaded.tokenizer) == len(processor.tokenizer)
    copy = pickle.loads(pickle.dumps(processor))
    assert copy.settings() == processor.settings() and copy.stats == {} and copy._unpickled_copy


@pytest.mark.parametrize("name", sorted(PROCESSORS))
def test_a_damaged_processor_config_is_named_with_the_fix(name, tiny_luke_dir, tmp_path):
    cls, _, field, wrong = PROCESSORS[name]
    processor = build(name, tiny_luke_dir)
    processor.save_pretrained(tmp_path)
    path = tmp_path / "processor_config.json"
    settings = json.loads(path.read_text())
    path.write_text("{not json")
    for load in (lambda: cls.from_pretrained(tmp_path), lambda: cls.from_checkpoint(processor.tokenizer, tmp_path)):
        with pytest.raises(ValueError, match=r"processor_config\.json: not valid JSON.*save_pretrained"):
            load()
    path.write_text("[1, 2]")
    with pytest.raises(ValueError, match=r"processor_config\.json: must hold a JSON object"):
        load_processor_settings(tmp_path)
    path.write_text(json.dumps({**settings, field: wrong}))
    for load in (lambda: cls.from_pretrained(tmp_path), lambda: cls.from_checkpoint(processor.tokenizer, tmp_path)):
        with pytest.raises(ValueError, match=rf"processor_config\.json: .*{field}.*Fix that field in the file"):
            load()


def test_from_checkpoint_takes_the_saved_settings_over_the_defaults_and_ignores_other_processors(
    tiny_luke_dir, tmp_path
):
    build("XhTaskProcessor", tiny_luke_dir).save_pretrained(tmp_path)
    tokenizer = LukeTokenizer.from_pretrained(tmp_path)
    loaded = XhTaskProcessor.from_checkpoint(tokenizer, tmp_path, max_node_length=512, max_nodes=9)
    assert (loaded.max_node_length, loaded.max_nodes, loaded.task, loaded.pages) == (80, 5, "fever", {})
    other = GesaProcessor.from_checkpoint(LukeTokenizer.from_pretrained(tmp_path), tmp_path)  # no GESA setting there
    assert other.max_seq_length == 512 and other.max_query_length == 20  # the one shared name is taken


def test_xh_caps_are_counted_and_logged_by_name(tiny_luke_dir, caplog):
    processor = XhProcessor(LukeTokenizer.from_pretrained(tiny_luke_dir), max_node_length=30, max_query_length=8)
    passage = "Anna Keller met Tobias Wren in Berlin on a long and rainy Sunday afternoon. " * 3
    record = {"passage": passage, "query": "Nobody ever thanked @placeholder in Berlin for the long rainy walk.",
              "entity_spans": [{"start": 0, "end": 11}, {"start": 31, "end": 37}], "answers": ["Berlin"]}  # fmt: skip
    with caplog.at_level(logging.WARNING):
        processor.encode_record_graphs([record])
    assert processor.stats["truncated_queries"] == 1 and processor.stats["truncated_nodes"] >= 1
    assert "XhProcessor: 1 queries cut to max_query_length=8 tokens" in caplog.text
    assert f"XhProcessor: {processor.stats['truncated_nodes']} node texts cut to max_node_length=30" in caplog.text


def test_a_copy_in_a_worker_says_so_in_its_log_lines(tiny_luke_dir, caplog):
    worker = pickle.loads(pickle.dumps(build("WikihopProcessor", tiny_luke_dir)))
    worker._report({"mentions_over_max_entities": 3})
    assert "WikihopProcessor (copy in process" in caplog.text and "3 mentions dropped beyond max_entities=64" in (
        caplog.text
    )
    assert worker.stats["mentions_over_max_entities"] == 3


def test_processors_share_one_base_and_write_no_settings_file_of_their_own():
    """The settings file, the tokenizer backend, pickling and the report are written once, in the base."""
    import inspect

    for cls in (GesaProcessor, WikihopProcessor, XhProcessor, XhTaskProcessor, EntityTaskProcessor):
        source = inspect.getsource(sys.modules[cls.__module__])
        for own in (
            "def _tokenizer_backend",
            "def __getstate__",
            "def _report(",
            'processor_config.json")',
            "def save_pretrained",
        ):
            assert own not in source, (cls.__name__, own)
