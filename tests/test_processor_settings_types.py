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
"""A ``processor_config.json`` whose field has the wrong JSON type (a string where the constructor takes an integer, a
string where it takes a list, ``null`` for a required length) is one ``ValueError`` naming the file, the field and the
fix, for every processor and both ways of loading it, never the raw ``TypeError`` of a comparison inside it."""

from __future__ import annotations

import json

import pytest
from transformers import LukeTokenizer

from gesa.processing_entity import EntityTaskProcessor
from gesa.processing_gesa import GesaProcessor
from gesa.processing_wikihop import WikihopProcessor
from gesa.processing_xh import XhProcessor
from gesa.processing_xh_tasks import XhTaskProcessor

CASES = [
    (GesaProcessor, {}, "doc_stride", "64", "an integer"),
    (WikihopProcessor, {}, "max_seq_length", "abc", "an integer"),
    (WikihopProcessor, {}, "max_entities", None, "an integer"),
    (XhProcessor, {}, "max_node_length", [256], "an integer"),
    (XhTaskProcessor, {"task": "fever"}, "max_query_length", "90", "an integer"),
    (EntityTaskProcessor, {"task": "ner", "label_names": ["O", "LOC"]}, "label_names", "O", "a list"),
    (EntityTaskProcessor, {"task": "ner", "label_names": ["O", "LOC"]}, "task", 3, "a string"),
]


@pytest.mark.parametrize("cls, settings, field, wrong, words", CASES)
def test_a_wrongly_typed_saved_setting_names_the_file_and_the_field(
    cls, settings, field, wrong, words, tiny_luke_dir, tmp_path
):
    tokenizer = LukeTokenizer.from_pretrained(tiny_luke_dir)
    cls(tokenizer, **settings).save_pretrained(tmp_path)
    path = tmp_path / "processor_config.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), field: wrong}))
    expected = rf"processor_config\.json: '{field}' must be {words} .*got {wrong!r}\. Fix that field in the file"
    for load in (lambda: cls.from_pretrained(tmp_path), lambda: cls.from_checkpoint(tokenizer, tmp_path)):
        with pytest.raises(ValueError, match=expected.replace("[", r"\[").replace("]", r"\]")):
            load()


def test_an_optional_setting_saved_as_null_still_loads(tiny_luke_dir, tmp_path):
    tokenizer = LukeTokenizer.from_pretrained(tiny_luke_dir)
    XhProcessor(tokenizer, max_nodes=6).save_pretrained(tmp_path)
    path = tmp_path / "processor_config.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "max_nodes": None}))
    assert XhProcessor.from_pretrained(tmp_path).max_nodes is None
