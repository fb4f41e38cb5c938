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
"""The ``entity-typing`` and ``relation-classification`` pipelines: a checkpoint trained by ``run_entity_tasks.py``
answers through ``pipeline(task, model=dir, trust_remote_code=True)`` exactly as a direct call of its model, and a bad
input is one ``ValueError`` naming the field."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import transformers
from script_helpers import ENTITY_SCRIPT, load_script

FIXTURES = Path(__file__).parent / "fixtures" / "entity"
TEXT = "Alice Smith , the chief engineer , resigned ."


def train(luke_dir, output_dir, task, data):
    module = load_script(ENTITY_SCRIPT, "run_entity_tasks_pipeline_under_test")
    module.main(["--task", task, "--model_name_or_path", str(luke_dir), "--output_dir", str(output_dir),
                 "--train_file", str(data), "--do_train", "--max_steps", "8", "--learning_rate", "1e-2",
                 "--per_device_train_batch_size", "4", "--save_strategy", "no", "--report_to", "none",
                 "--use_cpu", "true", "--disable_tqdm", "true"])  # fmt: skip
    return output_dir


@pytest.fixture(scope="module")
def checkpoints(tiny_luke_dir, tmp_path_factory):
    root = tmp_path_factory.mktemp("entity-pipelines")
    return {
        "entity-typing": train(tiny_luke_dir, root / "typing", "entity_typing", FIXTURES / "open_entity_crowd.json"),
        "relation-classification": train(
            tiny_luke_dir, root / "relation", "relation_classification", FIXTURES / "tacred.json"
        ),
    }


def direct_logits(checkpoint, spans, entities):
    model = transformers.AutoModelForSequenceClassification.from_pretrained(checkpoint, trust_remote_code=True)
    tokenizer = transformers.AutoTokenizer.from_pretrained(checkpoint)
    inputs = tokenizer(TEXT, entity_spans=spans, entities=entities, return_tensors="pt")
    graph = {"entity_sentence_ids": torch.zeros(1, len(spans), dtype=torch.long),  # one sentence
             "entity_string_ids": torch.arange(len(spans))[None]}  # the mentions' texts differ  # fmt: skip
    with torch.no_grad():
        return model.eval()(**inputs, **graph).logits[0], model.config.id2label


@pytest.mark.slow
def test_entity_typing_pipeline_equals_a_direct_model_call(checkpoints):
    typing = transformers.pipeline("entity-typing", model=str(checkpoints["entity-typing"]), trust_remote_code=True)
    assert type(typing).__module__.startswith("transformers_modules")  # the checkpoint's own copy
    answer = typing({"text": TEXT, "entity_span": [0, 11]}, threshold=0.0)
    logits, id2label = direct_logits(checkpoints["entity-typing"], [(0, 11)], ["[MASK]"])
    expected = sorted(((float(p), id2label[i]) for i, p in enumerate(torch.sigmoid(logits))), key=lambda x: -x[0])
    assert [row["type"] for row in answer] == [label for _, label in expected]
    assert [row["score"] for row in answer] == pytest.approx([score for score, _ in expected], abs=1e-6)
    decided = typing({"text": TEXT, "entity_span": [0, 11]})  # default: the head's own decision, logit > 0
    assert {row["type"] for row in decided} == {id2label[i] for i in (logits > 0).nonzero().flatten().tolist()}


@pytest.mark.slow
def test_relation_pipeline_equals_a_direct_model_call(checkpoints):
    relation = transformers.pipeline(
        "relation-classification", model=str(checkpoints["relation-classification"]), trust_remote_code=True
    )
    answer = relation({"text": TEXT, "head_span": [0, 11], "tail_span": [18, 32]})
    logits, id2label = direct_logits(
        checkpoints["relation-classification"], [(0, 11), (18, 32)], ["[MASK]", "[MASK2]"]
    )
    probabilities = torch.softmax(logits, -1)
    assert answer[0]["relation"] == id2label[int(probabilities.argmax())]
    assert {row["relation"]: row["score"] for row in answer} == pytest.approx(
        {id2label[i]: float(p) for i, p in enumerate(probabilities)}, abs=1e-6
    )
    assert sum(row["score"] for row in answer) == pytest.approx(1.0, abs=1e-5)
    assert len(relation({"text": TEXT, "head_span": [0, 11], "tail_span": [18, 32]}, top_k=2)) == 2


@pytest.mark.slow
@pytest.mark.parametrize(
    "task, inputs, field",
    [
        ("entity-typing", {"text": TEXT}, "'entity_span'"),
        ("entity-typing", {"text": TEXT, "entity_span": [5, 500]}, "'entity_span'"),
        ("entity-typing", {"text": "", "entity_span": [0, 1]}, "'text'"),
        ("entity-typing", "Alice Smith resigned", "each input must be a dict"),
        ("relation-classification", {"text": TEXT, "head_span": [0, 11]}, "'tail_span'"),
        ("relation-classification", {"text": TEXT, "head_span": [3, 3], "tail_span": [18, 32]}, "'head_span'"),
    ],
)
def test_bad_input_is_one_value_error_naming_the_field(checkpoints, task, inputs, field):
    answerer = transformers.pipeline(task, model=str(checkpoints[task]), trust_remote_code=True)
    with pytest.raises(ValueError, match=field) as caught:
        answerer(inputs)
    assert str(caught.value).startswith(f"{task}: ")
