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
"""WikiHop below the script: mention offsets stay on the right words after a character whose lower-case form is
longer (``İ``, U+0130); two id-less identical queries stay two answers, two queries given one id are refused; the ranking refuses a logits row narrower than
its candidates, gives a ``+inf`` logit the whole probability, and refuses a query whose candidates all score ``-inf``
(never a NaN probability); a checkpoint whose config names the other choice head than its weights hold is refused; the metric writes no cache
file, and a full disk while evaluate loads it is one error line."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest
from script_helpers import load_multihop_script, multihop_error_line
from transformers import LukeTokenizer

from gesa.answers_gesa import ranked_answers
from gesa.modeling_gesa_multiple_choice import ChoiceHeadMismatch, GesaForEntityMultipleChoice
from gesa.processing_context_graph import ContextGraphProcessor
from gesa.processing_wikihop import WikihopProcessor, find_mentions, normalize_mention
from gesa.records_wikihop import InputError, to_wikihop_examples
from gesa.training.wikihop import WIKIHOP, make_wikihop_sample, write_wikihop_file

RECORD = {
    "query": "country velmor",
    "supports": ["Velmor is a town in Abo Province.", "Abo Province is a region of France."],
    "candidates": ["france", "spain", "norway"],
}


@pytest.mark.parametrize("text", ["İzmir and Velmor lie in France", "İİİ İ Velmor İstanbul France"])
def test_mentions_after_dotted_capital_i_sit_on_their_own_words(text):
    found = find_mentions(text, ["velmor", "france", "istanbul"])
    words = [text[start:end] for start, end, _ in found]
    assert "Velmor" in words and "France" in words
    assert all(normalize_mention(word) in ("velmor", "france", "istanbul") for word in words)


def test_a_candidate_with_dotted_capital_i_matches_its_lower_case_mention():
    assert normalize_mention("İstanbul") == "istanbul"
    assert [(s, e) for s, e, _ in find_mentions("From istanbul to İstanbul", ["İstanbul"])] == [(5, 13), (17, 25)]


def test_repeated_candidates_are_kept_once_with_a_warning_naming_the_record(caplog):
    records = make_wikihop_sample(3, seed=0)
    records[1]["candidates"] = [*records[1]["candidates"], records[1]["candidates"][0]]
    records[2]["candidates"] = [records[2]["candidates"][1], *records[2]["candidates"]]
    with caplog.at_level("WARNING"):
        examples = to_wikihop_examples(records, where="--train_file t.json")
    assert examples[1].candidates == list(dict.fromkeys(records[1]["candidates"]))
    warned = [record.getMessage() for record in caplog.records if "more than once" in record.getMessage()]
    assert len(warned) == 1, warned
    assert warned[0].startswith(f"--train_file t.json, item 2: WikiHop record {records[1]['id']!r}: lists ")
    assert "(and 1 more records)" in warned[0] and "remove the repeats from 'candidates'" in warned[0]
    with caplog.at_level("WARNING"):
        caplog.clear()
        to_wikihop_examples(make_wikihop_sample(3, seed=0))
    assert not caplog.records


def test_two_identical_queries_without_id_stay_two_queries(tiny_luke_dir):
    processor = WikihopProcessor(LukeTokenizer.from_pretrained(tiny_luke_dir), max_seq_length=256, max_query_length=16)
    batch = processor([dict(RECORD), dict(RECORD)])
    ids = batch["example_id"]
    assert len(set(ids)) == 2
    logits = np.zeros((2, len(batch["candidate_texts"][0])))
    ranked = WikihopProcessor.rank_candidates(ids, batch["candidate_texts"], logits)
    assert list(ranked) == ids and all(len(answers) == 3 for answers in ranked.values())


def test_a_logits_row_narrower_than_its_candidates_is_a_value_error_naming_the_query():
    with pytest.raises(ValueError, match=r"feature 0 \('q'\) has 4 candidate slots but only 2 logits"):
        WikihopProcessor.rank_candidates(["q"], [["", "a", "b", "c"]], np.zeros((1, 2)))


def test_a_positive_infinite_logit_takes_the_whole_probability():
    ranked = WikihopProcessor.rank_candidates(["q"], [["", "a", "b", "c"]], [[0.0, 1.0, math.inf, -math.inf]])["q"]
    assert [(row["answer"], row["score"]) for row in ranked] == [("b", 1.0), ("a", 0.0), ("c", 0.0)]
    tied = ranked_answers(["q"], [["a", "b"]], [[math.inf, math.inf]], first_candidate=0, score="softmax")["q"]
    assert [row["score"] for row in tied] == [0.5, 0.5]


def test_every_candidate_at_minus_infinity_is_refused_not_nan():
    with pytest.raises(ValueError, match=r"every answer of query 'q' scores -inf"):
        WikihopProcessor.rank_candidates(["q"], [["", "a", "b"]], [[0.0, -math.inf, -math.inf]])


@pytest.mark.parametrize(("trained", "named"), [("query_candidate", "hde"), ("hde", "query_candidate")])
def test_a_config_naming_the_other_choice_head_than_its_weights_is_refused(capsys, tiny_luke_dir, tmp_path, trained,
                                                                           named):  # fmt: skip
    """A loaded head is never silently re-initialised: ``from_pretrained`` and ``--do_eval`` refuse the folder,
    naming its config.json, both heads and the fix."""
    model = GesaForEntityMultipleChoice.from_luke_pretrained(str(tiny_luke_dir), choice_head=trained,
                                                              entity_rows=[0, 1, 2])  # fmt: skip
    folder = tmp_path / "checkpoint"
    model.save_pretrained(folder)
    LukeTokenizer.from_pretrained(tiny_luke_dir).save_pretrained(folder)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "choice_head": named}))
    expected = rf"config.json names choice_head='{named}', but its weights hold the '{trained}' head"
    with pytest.raises(ChoiceHeadMismatch, match=expected):
        GesaForEntityMultipleChoice.from_pretrained(folder)
    evaluation = write_wikihop_file(tmp_path / "dev.json", make_wikihop_sample(2, seed=2))
    line = multihop_error_line(capsys, ["--model_name_or_path", str(folder), "--validation_file", str(evaluation),
                                        "--do_eval", "--output_dir", str(tmp_path / "out"), "--report_to", "none"])  # fmt: skip
    assert re.search(expected, line) and f'Set "choice_head": "{trained}"' in line
    assert not (tmp_path / "out" / "eval_results.json").exists()
    (folder / "config.json").write_text(json.dumps({**config, "choice_head": trained}))
    assert GesaForEntityMultipleChoice.from_pretrained(folder).config.choice_head == trained


@pytest.mark.parametrize("processor_class", [WikihopProcessor, ContextGraphProcessor])
def test_two_queries_with_one_explicit_id_are_refused_never_merged(tiny_luke_dir, processor_class):
    tokenizer = LukeTokenizer.from_pretrained(tiny_luke_dir)
    processor = (WikihopProcessor(tokenizer, max_seq_length=256, max_query_length=16)
                 if processor_class is WikihopProcessor else ContextGraphProcessor(tokenizer))  # fmt: skip
    other = {**RECORD, "candidates": ["france", "italy"]}
    with pytest.raises(InputError, match=r"input #1: WikiHop record 'q1': duplicate id: input #0 has the same id"):
        processor([{**RECORD, "id": "q1"}, {**other, "id": "q1"}])
    with pytest.raises(ValueError, match=r"features 0 and 1 have the same query id 'q1'.*own id"):
        processor_class.rank_candidates(["q1", "q1"], [["", "a", "b"], ["", "a", "c"]], np.zeros((2, 3)))
    batch = processor([{**RECORD, "id": "q1"}, {**other, "id": "q2"}], return_tensors="pt")
    assert batch.example_id == ["q1", "q2"] and batch["input_ids"].dim() == 2


def test_scoring_writes_no_file_and_a_full_disk_there_is_one_error_line(capsys, tiny_luke_dir, tmp_path, monkeypatch):
    """WikiHop's metric is computed in memory (evaluate's arrow cache would need disk space at every evaluation); a
    full disk while evaluate copies the metric's module ends the run with one error line naming the file."""
    import builtins
    import errno

    import evaluate

    records = make_wikihop_sample(3, seed=2)
    examples = to_wikihop_examples(records)
    predictions = {example.example_id: [{"answer": example.answer, "score": 1.0}] for example in examples}
    metrics_cache = str(evaluate.config.HF_METRICS_CACHE)
    real_open = builtins.open

    def no_writes_in_the_cache(file, mode="r", *args, **kwargs):
        if any(flag in mode for flag in "wax+") and str(file).startswith(metrics_cache):
            raise OSError(errno.ENOSPC, "No space left on device", str(file))
        return real_open(file, mode, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", no_writes_in_the_cache)
    assert WIKIHOP.score(predictions, examples)["accuracy"] == 100.0
    module = tmp_path / "modules" / "wikihop.py"

    def full_disk(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", str(module))

    evaluation = write_wikihop_file(tmp_path / "dev.json", records)
    common = ["--validation_file", str(evaluation), "--do_eval", "--max_seq_length", "256", "--report_to", "none",
              "--disable_tqdm", "true"]  # fmt: skip
    load_multihop_script().main(["--model_name_or_path", str(tiny_luke_dir), "--train_file", str(evaluation),
                                 "--do_train", "--max_steps", "1", "--save_strategy", "no", "--output_dir",
                                 str(tmp_path / "trained"), *common])  # fmt: skip
    monkeypatch.setattr(evaluate, "load", full_disk)
    line = multihop_error_line(capsys, ["--model_name_or_path", str(tmp_path / "trained"), "--output_dir",
                                        str(tmp_path / "out"), *common])  # fmt: skip
    assert f"no space left on the device of {module.parent} while writing wikihop.py" in line, line


def test_a_full_disk_while_writing_the_model_card_is_one_error_line(capsys, tiny_luke_dir, tmp_path, monkeypatch):
    import builtins
    import errno

    evaluation = write_wikihop_file(tmp_path / "dev.json", make_wikihop_sample(2, seed=2))
    output_dir = tmp_path / "out"
    real_open = builtins.open

    def full_disk(file, mode="r", *args, **kwargs):
        if any(flag in mode for flag in "wax+") and str(file) == str(output_dir / "README.md"):
            raise OSError(errno.ENOSPC, "No space left on device", str(file))
        return real_open(file, mode, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", full_disk)
    capsys.readouterr()
    with pytest.raises(SystemExit) as stopped:
        load_multihop_script().main(["--model_name_or_path", str(tiny_luke_dir), "--train_file", str(evaluation),
                                     "--do_train", "--max_steps", "1", "--max_seq_length", "256", "--output_dir",
                                     str(output_dir), "--save_strategy", "no", "--report_to", "none",
                                     "--disable_tqdm", "true"])  # fmt: skip
    err = capsys.readouterr().err
    assert stopped.value.code == 2 and "Traceback" not in err
    line = err.strip().splitlines()[-1]  # (the weights' save prints transformers' progress bar before it)
    assert line.startswith("run_multihop.py: error: no space left on the device of ")
    assert f"{output_dir} while writing the model card README.md" in line
    assert not (output_dir / "README.md").exists()
