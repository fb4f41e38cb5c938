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
"""``examples/run_document_ie.py`` end to end: the demo trains a tiny LUKE on invented SciREX papers and its metrics
rise; the three prediction files it writes score, through the official metric, exactly what the run reports; the
saved folder answers a raw text through its pipeline; a bad document is one error line."""

from __future__ import annotations

import json

import pytest
from scirex_fixtures import small_document, write_jsonl
from script_helpers import EXAMPLES, load_script
from transformers import pipeline

from gesa.training.resources import metric_module

SCRIPT = EXAMPLES / "run_document_ie.py"


def error_line(capsys, argv):
    capsys.readouterr()
    with pytest.raises(SystemExit) as stopped:
        load_script(SCRIPT, "run_document_ie_under_test").main(argv)
    assert stopped.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("run_document_ie.py: error: "), lines
    return lines[0]


@pytest.mark.slow
def test_the_demo_learns_writes_the_official_files_and_its_folder_answers_a_text(tmp_path, capsys):
    output = tmp_path / "demo"
    results = load_script(SCRIPT, "run_document_ie_under_test").main(["--output_dir", str(output)])
    printed = capsys.readouterr().out
    summary = [line for line in printed.splitlines() if line.startswith("SciREX 4 documents: ")]
    assert summary and "before training: mention F1" in summary[0], printed[-2000:]
    history = json.loads((output / "trainer_state.json").read_text())["log_history"]
    before = next(entry for entry in history if entry.get("step") == 0 and "eval_mention_f1" in entry)
    assert results["eval_mention_f1"] > before["eval_mention_f1"] + 10
    assert results["eval_cluster_f1"] > before["eval_cluster_f1"]
    for group in ("Mention identification: P", "Salient clusters: P", "Relations n=2: P", "Relations n=4: P"):
        assert group in printed
    folder = output / "eval_predictions"
    scores = metric_module("scirex").evaluate_files(output / "demo-data" / "dev.jsonl", folder / "ner.jsonl",
                                                    folder / "clusters.jsonl", folder / "relations.jsonl")  # fmt: skip
    for key, value in scores.items():
        if not key.endswith("_count"):
            assert results[f"eval_{key}"] == pytest.approx(100 * value), key
    pytest.importorskip("spacy")
    reader = pipeline(model=str(output), trust_remote_code=True)
    text = " ".join(json.loads((output / "demo-data" / "dev.jsonl").read_text().splitlines()[0])["words"])
    answer = reader(text, threshold=0.0)
    assert set(answer) == {"mentions", "entities", "relations"} and answer["mentions"]
    assert all({"start", "end", "words", "type", "salience"} == set(m) for m in answer["mentions"])
    assert all(relation["score"] > 0 for relation in answer["relations"])


def test_a_bad_document_is_one_error_line_naming_the_file_line_document_and_field(tmp_path, capsys, tiny_luke_dir):
    row = small_document("broken")
    row["n_ary_relations"][0]["Task"] = "Ghost_Task"
    path = write_jsonl(tmp_path / "train.jsonl", [small_document("fine"), row])
    line = error_line(capsys, ["--model_name_or_path", str(tiny_luke_dir), "--train_file", str(path), "--do_train",
                               "--output_dir", str(tmp_path / "out"), "--report_to", "none"])  # fmt: skip
    assert (
        f"--train_file {path}, line 2: SciREX document 'broken': n_ary_relations[0] names the Task 'Ghost_Task'"
        in line
    )


def test_a_document_past_the_word_limit_is_refused_before_any_weight_loads(tmp_path, capsys):
    path = write_jsonl(tmp_path / "dev.jsonl", [small_document()])
    line = error_line(capsys, ["--model_name_or_path", str(tmp_path / "none"), "--validation_file", str(path),
                               "--do_eval", "--max_document_words", "20", "--output_dir", str(tmp_path / "out")])  # fmt: skip
    assert "has 38 words, more than the configured limit of 20; raise the limit (--max_document_words)" in line


def test_the_chance_level_is_the_mention_f1_of_a_uniform_guess_per_span():
    """SciREX's chance (mention F1): every span of at most 16 words within a sentence guessed one of the types seen
    or "no mention" uniformly; its expected counts, summed by a plain loop over the sentences, give the F1."""
    from gesa.records_scirex import scirex_document
    from gesa.training.document_ie import SCIREX

    documents = [scirex_document(small_document(f"paper-{i}"), f"paper-{i}") for i in (1, 2)]
    types = {mention.type for document in documents for mention in document.mentions}
    correct = predicted = gold = 0.0
    for document in documents:
        for start, end in document.sentences:
            length = end - start
            spans = sum(length - width + 1 for width in range(1, min(16, length) + 1))
            mentions = sum(start <= mention.start < end for mention in document.mentions)
            predicted += spans * len(types) / (len(types) + 1)
            correct += mentions / (len(types) + 1)
            gold += mentions
    precision, recall = correct / predicted, correct / gold
    assert SCIREX.chance(documents) == pytest.approx(100 * 2 * precision * recall / (precision + recall))
    assert SCIREX.chance_metric == "mention_f1" and gold > 0
