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
"""Fixtures every test module may use: the tiny LUKE checkpoints (offline BPE and ../shared's RoBERTa BPE), the GESA
processor on the offline one, and the skip of ``needs_shared`` tests when ../shared is absent.

Constants and helpers shared by several test modules live in plain modules beside this file (``tiny_luke``,
``model_helpers``, ``record_fixtures``, ``hotpot_fever_fixtures``, ``variant_inputs``, ``variant_helpers``,
``long_helpers``, ``record_metric_reference``, ``script_helpers``); a test module never imports another test module.
"""

import pytest
from record_fixtures import NER_MODEL
from tiny_luke import build_tiny_luke, shared_available
from transformers import AutoTokenizer

from gesa.processing_gesa import GesaProcessor


def pytest_collection_modifyitems(config, items):
    if shared_available():
        return
    skip = pytest.mark.skip(
        reason="../shared (third-party RoBERTa tokenizer files, ReCoRD/HotpotQA data) is not present"
    )
    for item in items:
        if "needs_shared" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def tiny_luke_dir(tmp_path_factory):
    """A random tiny LUKE checkpoint saved like a Hub checkpoint (weights + a byte-level BPE trained offline)."""
    return build_tiny_luke(tmp_path_factory.mktemp("tiny-luke"))


@pytest.fixture(scope="session")
def roberta_luke_dir(tmp_path_factory):
    """The same tiny LUKE on the real RoBERTa BPE files of ../shared (tests using it are marked ``needs_shared``)."""
    if not shared_available():
        pytest.skip("../shared (RoBERTa tokenizer files) is not present")
    return build_tiny_luke(tmp_path_factory.mktemp("tiny-luke-roberta"), tokenizer="roberta")


@pytest.fixture(scope="module")
def gesa_processor(tiny_luke_dir) -> GesaProcessor:
    """GesaProcessor on the tiny LUKE's offline tokenizer: spaCy NER candidates for raw text, 256-token windows."""
    return GesaProcessor(AutoTokenizer.from_pretrained(tiny_luke_dir), spacy_model=NER_MODEL, max_seq_length=256)
