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
"""``--input_format ernie|knowbert``: ERNIE's ([ENT], [HD]/[TL]) and KnowBERT's ([E1] [/E1] [E2] [/E2]) markers around
the mentions of typing and relation classification, the heads reading the opening markers' word states; the pipeline
of such a checkpoint marks its input the same way."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
import transformers
from script_helpers import ENTITY_TASK_FILES, run_entity_task

from gesa.modeling_gesa_entity import GesaForEntityPairClassification
from gesa.processing_entity_markers import MarkedEntityTaskProcessor, input_format_of, mark_text
from gesa.records_entity import read_task_file
from gesa.training.entity import ENTITY_TASKS, entity_task_processor
from gesa.training.machinery import ScriptArgumentError


@pytest.mark.parametrize(
    "input_format, expected",
    [
        ("ernie", "[HD] Alice Smith [HD] , the [TL] chief engineer [TL] , resigned ."),
        ("knowbert", "[E1] Alice Smith [/E1] , the [E2] chief engineer [/E2] , resigned ."),
    ],
)
def test_relation_markers_surround_head_and_tail_and_the_head_reads_them(tiny_luke_dir, input_format, expected):
    tokenizer = transformers.AutoTokenizer.from_pretrained(tiny_luke_dir)
    examples = read_task_file("relation_classification", ENTITY_TASK_FILES["relation_classification"])
    labels = ENTITY_TASKS["relation_classification"].label_names(examples)
    processor = MarkedEntityTaskProcessor(tokenizer, "relation_classification", labels, input_format=input_format)
    feature = processor.encode(examples[0])[0]
    assert (
        tokenizer.decode(feature["input_ids"], skip_special_tokens=False)
        .replace("<s>", "")
        .replace("</s>", "")
        .strip()
        == expected
    )
    head, tail = feature["marker_positions"]
    opening = processor.pairs
    assert feature["input_ids"][head] == tokenizer.convert_tokens_to_ids(opening[0][0])
    assert feature["input_ids"][tail] == tokenizer.convert_tokens_to_ids(opening[1][0])
    # the mentions keep their LUKE entities, on the mention words (inside the markers)
    words = [p for p in feature["entity_position_ids"][0] if p >= 0]
    assert tokenizer.decode([feature["input_ids"][p] for p in words]).strip() == "Alice Smith"
    # the head reads the markers' word states
    model = GesaForEntityPairClassification.from_luke_pretrained(tiny_luke_dir, num_labels=len(labels)).eval()
    model.init_added_word_embeddings(processor.added_token_sources())
    batch = processor([feature])
    with torch.no_grad():
        out = model(**{k: v for k, v in batch.items() if k != "labels"}, output_hidden_states=True)
        words_state = out.hidden_states[-1][0]
        expected_logits = model.classifier(torch.cat([words_state[head], words_state[tail]]))
    torch.testing.assert_close(out.logits[0], expected_logits, atol=1e-5, rtol=0)


def test_mark_text_moves_the_character_spans():
    text, spans = mark_text("Alice met Bob .", [(10, 13), (0, 5)], [("[HD]", "[HD]"), ("[TL]", "[TL]")])
    assert text == "[TL] Alice [TL] met [HD] Bob [HD] ."
    assert [text[s:e] for s, e in spans] == ["Bob", "Alice"]


@pytest.mark.slow
def test_ernie_format_trains_and_its_pipeline_marks_the_input(tiny_luke_dir, tmp_path, capsys):
    output_dir = tmp_path / "typing-ernie"
    run_entity_task(tiny_luke_dir, output_dir, "entity_typing", extra=["--input_format", "ernie", "--max_steps", "4"])
    typing = transformers.pipeline("entity-typing", model=str(output_dir), trust_remote_code=True)
    text = "Yesterday , the mayor opened the new bridge ."
    inputs = typing.preprocess({"text": text, "entity_span": [16, 21]})
    assert inputs["marker_positions"].tolist() == [[inputs["input_ids"][0].tolist().index(
        typing.tokenizer.convert_tokens_to_ids("[ENT]"))]]  # fmt: skip
    assert typing({"text": text, "entity_span": [16, 21]}, threshold=0.0)
    with pytest.raises(SystemExit):
        run_entity_task(tiny_luke_dir, tmp_path / "ner", "ner", extra=["--input_format", "ernie"])
    assert "--task ner does not read --input_format (only --task entity_typing|relation_classification" in (
        capsys.readouterr().err
    )


@pytest.mark.parametrize(
    "variant, flag, task, expected",
    [
        ("ernie", None, "relation_classification", "ernie"),
        ("kar", None, "entity_typing", "knowbert"),
        ("gesa", None, "relation_classification", "luke"),
        ("luke", None, "entity_typing", "luke"),
        ("ernie", None, "ner", "luke"),  # NER has no markers
        ("ernie", "luke", "relation_classification", "luke"),  # an explicit flag wins
        ("kar", "ernie", "entity_typing", "ernie"),
    ],
)
def test_each_variant_defaults_to_its_papers_input_format(tiny_luke_dir, variant, flag, task, expected):
    tokenizer = transformers.AutoTokenizer.from_pretrained(tiny_luke_dir)
    data_args = SimpleNamespace(input_format=flag, max_seq_length=64, max_span_length=4, max_entities=16)
    labels = ["O", "PER"] if task == "ner" else ["a", "b"]
    processor = entity_task_processor(tokenizer, task, labels, data_args, variant, converted=True)
    assert getattr(processor, "input_format", "luke") == expected
    assert input_format_of(tokenizer, task) == ("luke" if task == "ner" else expected)


def test_a_checkpoint_without_markers_keeps_lukes_format_when_the_flag_is_left_out(tiny_luke_dir):
    tokenizer = transformers.AutoTokenizer.from_pretrained(tiny_luke_dir)  # a checkpoint's tokenizer: no markers
    data_args = SimpleNamespace(input_format=None, max_seq_length=64, max_span_length=4, max_entities=16)
    processor = entity_task_processor(tokenizer, "entity_typing", ["a"], data_args, "ernie", converted=False)
    assert not hasattr(processor, "input_format") and input_format_of(tokenizer, "entity_typing") == "luke"


@pytest.mark.parametrize(("trained", "asked"), [("ernie", "knowbert"), ("knowbert", "ernie"), ("luke", "ernie")])
def test_another_input_format_on_a_checkpoint_is_one_error_naming_its_format(tiny_luke_dir, trained, asked):
    """A checkpoint's word table has rows for its own markers only: another format is refused before any batch."""
    tokenizer = transformers.AutoTokenizer.from_pretrained(tiny_luke_dir)
    if trained != "luke":  # what a run converted with those markers saves
        settings = SimpleNamespace(input_format=trained, max_seq_length=64, max_span_length=4, max_entities=16)
        entity_task_processor(tokenizer, "relation_classification", ["a"], settings, "ernie", converted=True)
    data_args = SimpleNamespace(input_format=asked, max_seq_length=64, max_span_length=4, max_entities=16)
    with pytest.raises(ScriptArgumentError, match=rf"--input_format {asked}: the checkpoint was trained with "
                       rf"--input_format {trained} .*drop --input_format"):  # fmt: skip
        entity_task_processor(tokenizer, "relation_classification", ["a"], data_args, "ernie", converted=False)
    data_args.input_format = trained  # its own format, given explicitly, is fine
    entity_task_processor(tokenizer, "relation_classification", ["a"], data_args, "ernie", converted=False)
