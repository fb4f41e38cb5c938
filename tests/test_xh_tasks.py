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
"""Transformer-XH on HotpotQA and FEVER: sentence features, the supporting-fact / answer-type heads against a plain
loop, and a tiny model that trains (loss falls), predicts and writes files the official scorers read."""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
import transformers
from hotpot_fever_fixtures import FEVER_PAGES, fever_fixture_claims, hotpot_fixture_rows
from model_helpers import TINY
from tiny_luke import HOTPOT_DIR, build_luke_tokenizer
from transformers import Trainer, TrainingArguments
from variant_inputs import randomise_hops

from gesa.modeling_xh_tasks import XhForHotpotQA, decode_fever
from gesa.pipeline_xh_tasks import XhHotpotQAPipeline  # (importing it registers the xh pipelines)
from gesa.processing_xh_tasks import XhTaskProcessor
from gesa.records_xh import read_hotpot_file, read_wiki_pages
from gesa.training.driver import predict_task
from gesa.training.xh import FEVER, HOTPOTQA, xh_task_config

OFFICIAL = os.environ.get("GESA_OFFICIAL_SCORERS")


def _write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


@pytest.fixture(scope="module")
def xh_task_processor():
    """The HotpotQA/FEVER processor on the offline tiny LUKE tokenizer (64-token nodes, 24-token queries)."""
    return XhTaskProcessor(build_luke_tokenizer(), max_node_length=64, max_query_length=24)


def _tiny(task, xh_task_processor, hop_attention: bool = True, seed: int = 0):
    torch.manual_seed(seed)
    config = xh_task_config(
        task,
        hop_attention=hop_attention,
        **{**TINY, "vocab_size": len(xh_task_processor.tokenizer), "max_relative_position": 8, "xh_num_hop_layers": 1},
        classifier_dropout=0.0,
    )
    return task.head_for("xh")(config)


def _mean_loss(model, collator, features) -> float:
    model.eval()
    with torch.no_grad():
        return float(model(**collator(features)).loss)


def _train(model, collator, features, tmp_path, steps: int) -> tuple[float, float]:
    before = _mean_loss(model, collator, features)
    args = TrainingArguments(
        output_dir=str(tmp_path / "out"),
        max_steps=steps,
        per_device_train_batch_size=4,
        learning_rate=3e-3,
        warmup_steps=0,
        lr_scheduler_type="constant",
        remove_unused_columns=False,
        report_to=[],
        use_cpu=True,
        save_strategy="no",
        logging_strategy="no",
        seed=0,
    )
    Trainer(model=model, args=args, train_dataset=features, data_collator=collator).train()
    return before, _mean_loss(model, collator, features)


# ---- features --------------------------------------------------------------------------------------------------
def test_hotpot_sentence_features_cover_each_sentence_and_the_answer(tmp_path, xh_task_processor):
    path = tmp_path / "hotpot.json"
    path.write_text(json.dumps(hotpot_fixture_rows()))
    rows = read_hotpot_file(path)
    features = xh_task_processor.encode_hotpot_rows(rows)
    tokenizer = xh_task_processor.tokenizer
    for row, feature in zip(rows, features, strict=True):
        for node, sentences in enumerate(row["context"]["sentences"]):
            ids = feature["input_ids"][node]
            for s, (start, end) in enumerate(
                zip(feature["sentence_starts"][node], feature["sentence_ends"][node], strict=True)
            ):
                assert tokenizer.decode(ids[start : end + 1]).strip() == sentences[s].strip()
            gold = {(t, i) for t, i in zip(*row["supporting_facts"].values(), strict=True)}
            title = row["context"]["title"][node]
            assert feature["sentence_labels"][node] == [int((title, i) in gold) for i in range(len(sentences))]
        if row["answer"] in ("yes", "no"):
            assert feature["answer_type"] == ("yes", "no").index(row["answer"]) + 1
        else:
            ids = feature["input_ids"][feature["relevant_node"]]
            span = ids[feature["start_positions"] : feature["end_positions"] + 1]
            assert feature["answer_type"] == 0 and tokenizer.decode(span).strip() == row["answer"]


def _two_paragraphs(a_tail: str = " She worked as a tailor.", b_tail: str = " It has a harbour.") -> dict:
    """A question over paragraph A, which names B's title in its first sentence (A links to B), and paragraph B."""
    return {"id": "q", "question": "Where was Anna Keller born?", "answer": "Lagos", "type": "bridge",
            "supporting_facts": {"title": ["Anna Keller", "Lagos"], "sent_id": [0, 0]},
            "context": {"title": ["Anna Keller", "Lagos"],
                        "sentences": [["Anna Keller was born in Lagos.", a_tail], ["Lagos is a city.", b_tail]]}}  # fmt: skip


def _final_hubs(model, processor, row) -> torch.Tensor:
    with torch.no_grad():
        batch = processor.get_data_collator()(processor.encode_hotpot_rows([row]))
        return model.gesa(**{k: batch[k] for k in ("input_ids", "attention_mask", "node_adjacency")}).hub_states[0]


@pytest.mark.parametrize("edges", ["title_mention", "title_mention_eq7"])
def test_a_linked_paragraph_reads_the_one_linking_to_it_and_the_literal_eq7_option_the_reverse(edges):
    """A links to B (A names B's title). By default (the released code's direction) B's hub changes with A's text
    after one hop layer and A's hub ignores B's text; `hotpot_edges="title_mention_eq7"` (Eq. 7 read literally) is
    the reverse. A's changed sentence is not the one naming B, so only the hop carries it to B."""
    processor = XhTaskProcessor(build_luke_tokenizer(), max_node_length=64, max_query_length=40, hotpot_edges=edges)
    row = _two_paragraphs()
    feature = processor.encode_hotpot_rows([row])[0]
    reads = [[0, 0], [1, 0]] if edges == "title_mention" else [[0, 1], [0, 0]]
    assert feature["node_adjacency"] == reads
    changed_a = _two_paragraphs(a_tail=" She worked as a sailor in Paris.")
    changed_b = _two_paragraphs(b_tail=" It has two bridges and a port.")
    for hops in (1, 0):  # the hop layer is what carries it: without one, neither hub moves
        torch.manual_seed(0)
        config = xh_task_config(HOTPOTQA, **{**TINY, "vocab_size": len(processor.tokenizer),
                                             "max_relative_position": 8, "xh_num_hop_layers": hops})  # fmt: skip
        model = XhForHotpotQA(config).eval()
        randomise_hops(model.gesa)
        hubs = _final_hubs(model, processor, row)
        b_moves = (hubs[1] - _final_hubs(model, processor, changed_a)[1]).abs().max()
        a_moves = (hubs[0] - _final_hubs(model, processor, changed_b)[0]).abs().max()
        if hops == 0:
            assert b_moves < 1e-6 and a_moves < 1e-6
        elif edges == "title_mention":
            assert b_moves > 1e-3 and a_moves < 1e-6
        else:
            assert a_moves > 1e-3 and b_moves < 1e-6


def test_a_distractor_paragraph_carries_the_sentences_that_name_its_title(xh_task_processor):
    """The node of a linked paragraph reads `question </s> anchor sentences </s> </s> title: paragraph` (paper sec. 3's
    anchor, the released code's edge sentence); a paragraph nothing names has no anchor."""
    processor = XhTaskProcessor(build_luke_tokenizer(), max_node_length=64, max_query_length=40)
    feature = processor.encode_hotpot_rows([_two_paragraphs()])[0]
    question = processor._tokens("Where was Anna Keller born?", leading_space=False)
    anchor = processor._tokens("Anna Keller was born in Lagos.", leading_space=False)
    paragraph = processor._tokens("Lagos: Lagos is a city. It has a harbour.", False)
    expected, _, _ = processor._node(question + [processor.tokenizer.sep_token_id] + anchor, paragraph)
    assert feature["input_ids"][1] == expected
    plain, _, _ = processor._node(question, processor._tokens("Anna Keller: Anna Keller was born in Lagos. She "
                                                              "worked as a tailor.", False))  # fmt: skip
    assert feature["input_ids"][0] == plain
    # the answer span and sentence boundaries point into the paragraphs, never into an anchor
    node = feature["relevant_node"]
    span = feature["input_ids"][node][feature["start_positions"] : feature["end_positions"] + 1]
    assert processor.tokenizer.decode(span).strip() == "Lagos"
    assert feature["start_positions"] > len(question) + 3 + (len(anchor) + 1 if node == 1 else 0)
    first = feature["input_ids"][1][feature["sentence_starts"][1][0] : feature["sentence_ends"][1][0] + 1]
    assert processor.tokenizer.decode(first).strip() == "Lagos is a city."


def test_fever_graph_is_claim_title_sentence_fully_connected(xh_task_processor):
    claim = fever_fixture_claims()[0]
    train = xh_task_processor.encode_fever_claim(claim, FEVER_PAGES, include_gold=True)
    assert train["candidates"] == [["Lyon", 0], ["Lyon", 1]]  # gold first, then the page named in the claim
    assert train["node_labels"] == [1, 0] and train["fever_label"] == 0
    assert train["node_adjacency"] == [[0, 1], [1, 0]]
    text = xh_task_processor.tokenizer.decode(train["input_ids"][0])
    assert "Lyon is in France." in text and "Lyon: Lyon is a city in France." in text
    pages = {**FEVER_PAGES, "Lyon_-LRB-film-RRB-": {0: "A film."}, "Old_Lyon": {0: "A quarter."}}
    named = xh_task_processor.pages_named_in("Old Lyon (film) is in Lyon.", pages)
    assert named == ["Old_Lyon", "Lyon_-LRB-film-RRB-", "Lyon"]  # two-word titles first, in claim order
    assert xh_task_processor.pages_named_in("Lyonnais food.", pages) == []
    lonely = xh_task_processor.encode_fever_claim({"id": 9, "claim": "Nobody knows.", "evidence": []}, FEVER_PAGES)
    assert lonely["candidates"] == [None] and lonely["node_labels"] == [0]


# ---- heads against a plain loop --------------------------------------------------------------------------------
def test_supporting_fact_and_answer_type_heads_follow_appendix_a3(xh_task_processor):
    task = HOTPOTQA
    model = _tiny(task, xh_task_processor).eval()
    rows = [{**r, "id": r["_id"]} for r in hotpot_fixture_rows()[:2]]
    collator = xh_task_processor.get_data_collator()
    batch = collator(xh_task_processor.encode_hotpot_rows(rows))
    with torch.no_grad():
        out = model(**batch)
        states = model.gesa(
            batch["input_ids"], node_adjacency=batch["node_adjacency"], node_mask=batch["node_mask"],
            attention_mask=batch["attention_mask"], global_attention_mask=batch["global_attention_mask"],
        ).last_hidden_state  # fmt: skip
    losses = []
    for g in range(2):
        for n in range(int(batch["node_mask"][g].sum())):
            for s in range(batch["sentence_starts"].size(2)):
                start, end = int(batch["sentence_starts"][g, n, s]), int(batch["sentence_ends"][g, n, s])
                if start < 0:
                    continue
                logit = model.supporting(torch.cat([states[g, n, start], states[g, n, end]]))
                torch.testing.assert_close(out.supporting_logits[g, n, s], logit[0])
                label = batch["sentence_labels"][g, n, s]
                losses.append(F.binary_cross_entropy_with_logits(logit[0], label.float()))
    torch.testing.assert_close(out.supporting_loss, torch.stack(losses).mean())
    node = batch["relevant_node"]
    type_logits = torch.stack([model.answer_type(states[g, node[g], 0]) for g in range(2)])
    torch.testing.assert_close(out.answer_type_loss, F.cross_entropy(type_logits, batch["answer_type"]))
    expected = out.relevance_loss + out.span_loss + out.answer_type_loss + out.supporting_loss
    torch.testing.assert_close(out.loss, expected)
    decoded = XhForHotpotQA.decode_hotpot(out, batch["node_mask"])
    assert all(d["supporting"] and d["answer_type"] in ("span", "yes", "no") for d in decoded)


@pytest.mark.parametrize(
    "label, value, message",
    [
        ("answer_type", 3, r"answer_type\[1\] = 3 is not a class id: the head has 3 classes \(0..2\)"),
        ("answer_type", -2, r"answer_type\[1\] = -2 is not a class id"),
        ("start_positions", 999, r"start_positions\[1\] = 999 is not a token of its node: the nodes hold \d+ tokens"),
        ("end_positions", 999, r"end_positions\[1\] = 999 is not a token of its node"),
    ],
)
def test_out_of_range_hotpot_labels_are_one_value_error_naming_the_label_and_its_range(
    xh_task_processor, label, value, message
):
    model = _tiny(HOTPOTQA, xh_task_processor).eval()
    rows = [{**r, "id": r["_id"]} for r in hotpot_fixture_rows()[:2]]
    batch = xh_task_processor.get_data_collator()(xh_task_processor.encode_hotpot_rows(rows))
    batch["answer_type"] = torch.zeros(2, dtype=torch.long)  # both span answers, so the span labels are read
    batch["start_positions"], batch["end_positions"] = torch.tensor([3, 3]), torch.tensor([4, 4])
    batch[label] = torch.tensor([0 if label == "answer_type" else 3, value])
    with pytest.raises(ValueError, match=message):
        model(**batch)


def test_hotpot_decoding_takes_the_answer_node_and_the_next_most_relevant_one():
    from gesa.modeling_xh_tasks import XhHotpotQAOutput

    low = torch.finfo(torch.float32).min
    start = torch.full((1, 3, 6), -5.0)
    end = torch.full((1, 3, 6), -5.0)
    start[0, 2, 3], end[0, 2, 4] = 5.0, 5.0
    supporting = torch.tensor([[[3.0, -3.0, low], [-3.0, -2.0, low], [-1.0, 2.0, 1.0]]])
    output = XhHotpotQAOutput(
        relevance_logits=torch.tensor([[1.0, 0.0, 3.0]]),
        start_logits=start,
        end_logits=end,
        answer_type_logits=torch.tensor([[[0.0, 9.0, 0.0], [0.0, 0.0, 9.0], [9.0, 0.0, 0.0]]]),
        supporting_logits=supporting,
    )
    decoded = XhForHotpotQA.decode_hotpot(output, torch.ones(1, 3, dtype=torch.bool))[0]
    assert (decoded["node"], decoded["answer_type"], decoded["start"], decoded["end"]) == (2, "span", 3, 4)
    # node 2: sentences 1 and 2 above 0.5; node 0 (second most relevant): sentence 0; node 1 is not looked at
    assert decoded["supporting"] == [(2, 1), (2, 2), (0, 0)]
    output.answer_type_logits[0, 2] = torch.tensor([0.0, 0.0, 9.0])
    assert XhForHotpotQA.decode_hotpot(output, torch.ones(1, 3, dtype=torch.bool))[0]["answer_type"] == "no"


def test_fever_evidence_is_the_nodes_with_above_uniform_importance():
    class Output:
        probs = torch.tensor([[0.2, 0.7, 0.1]])
        node_importance = torch.tensor([[0.1, 0.5, 0.3, 0.1]])

    candidates = [[["A", 0], ["B", 1], ["C", 2], None]]
    assert decode_fever(Output, candidates) == [{"label": "REFUTES", "score": pytest.approx(0.7),
                                                 "evidence": [["B", 1], ["C", 2]]}]  # fmt: skip


# ---- a tiny XH trains, predicts and writes the official files ----------------------------------------------------
def _official_hotpot(prediction: Path, gold_rows: list[dict], tmp_path: Path) -> dict | None:
    script = Path(OFFICIAL or "") / "hotpot_evaluate_v1.py"
    if not OFFICIAL or not script.is_file():
        return None
    gold = [{"_id": r["id"], "answer": r["answer"], "supporting_facts": [list(f) for f in
             zip(r["supporting_facts"]["title"], r["supporting_facts"]["sent_id"], strict=True)]} for r in gold_rows]  # fmt: skip
    gold_path = tmp_path / "official_gold.json"
    gold_path.write_text(json.dumps(gold))
    run = subprocess.run(
        [sys.executable, str(script), str(prediction), str(gold_path)], capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    return ast.literal_eval(run.stdout.strip().splitlines()[-1])


def _predict(task, model, processor, rows, tmp_path) -> dict:
    """The driver's evaluation path (two features per batch, so that batches are padded to each other)."""
    return predict_task(task, model, processor, rows, batch_size=2)


def _train_and_score_hotpot(rows_train, rows_eval, xh_task_processor, tmp_path, steps, hop_attention=True):
    task = HOTPOTQA
    model = _tiny(task, xh_task_processor, hop_attention=hop_attention)
    collator = xh_task_processor.get_data_collator()
    before, after = _train(
        model, collator, task.featurise(xh_task_processor, rows_train, "train", None), tmp_path, steps
    )
    predictions = _predict(task, model, xh_task_processor, rows_eval, tmp_path)
    path = task.write_predictions(predictions, rows_eval, tmp_path, "eval", None)
    metrics = task.score(predictions, rows_eval)
    return before, after, predictions, path, metrics


def test_tiny_xh_trains_on_hotpot_fixtures_and_writes_the_official_file(tmp_path, xh_task_processor):
    path = tmp_path / "hotpot.json"
    path.write_text(json.dumps(hotpot_fixture_rows()))
    rows = HOTPOTQA.read(path)
    before, after, predictions, written, metrics = _train_and_score_hotpot(
        rows[:4], rows[4:], xh_task_processor, tmp_path, 30
    )
    rows = rows[4:]  # the held-out questions
    assert after < 0.7 * before
    assert set(predictions) == {row["id"] for row in rows}
    assert all({"answer", "score", "supporting_facts", "id"} <= set(p) for p in predictions.values())
    # the pipeline answers each question as the batched evaluation decodes it
    model = _tiny(HOTPOTQA, xh_task_processor)
    runner = XhHotpotQAPipeline(model=model.eval(), tokenizer=xh_task_processor.tokenizer, processor=xh_task_processor)
    batched = _predict(HOTPOTQA, model, xh_task_processor, rows, tmp_path)
    for row in rows:
        single = runner(dict(row))
        assert (single["answer"], single["supporting_facts"]) == (batched[row["id"]]["answer"],
                                                                 batched[row["id"]]["supporting_facts"])  # fmt: skip
        assert single["score"] == pytest.approx(batched[row["id"]]["score"], rel=1e-4)
    payload = json.loads(written.read_text())
    assert set(payload) == {"answer", "sp"} and set(payload["answer"]) == {r["id"] for r in rows}
    assert all(isinstance(t, str) and isinstance(s, int) for facts in payload["sp"].values() for t, s in facts)
    official = _official_hotpot(written, rows, tmp_path)
    if official is not None:
        assert official == pytest.approx(metrics, abs=1e-9)


@pytest.mark.needs_shared
@pytest.mark.slow
def test_tiny_xh_trains_on_80_shared_hotpot_questions_and_scores_the_other_20(tmp_path):
    xh_task_processor = XhTaskProcessor(build_luke_tokenizer(), max_node_length=96, max_query_length=32)
    rows = read_hotpot_file(HOTPOT_DIR / "hotpot_dev_distractor_first100.json")
    before, after, predictions, written, metrics = _train_and_score_hotpot(
        rows[:80], rows[80:], xh_task_processor, tmp_path, steps=40
    )
    assert after < before
    assert len(predictions) == 20 and set(metrics) >= {"em", "sp_f1", "joint_f1"}
    official = _official_hotpot(written, rows[80:], tmp_path)
    if official is not None:
        assert official == pytest.approx(metrics, abs=1e-9)


def test_tiny_xh_trains_on_fever_fixtures_and_writes_the_shared_task_file(tmp_path, xh_task_processor):
    claims_path = _write_jsonl(tmp_path / "train.jsonl", fever_fixture_claims())
    pages = [{"id": page, "text": " ".join(lines.values()), "lines": "\n".join(f"{n}\t{s}" for n, s in lines.items())}
             for page, lines in FEVER_PAGES.items()]  # fmt: skip
    task = FEVER
    fever_processor = XhTaskProcessor(
        xh_task_processor.tokenizer, max_node_length=64, max_query_length=24, max_nodes=5, task="fever",
        pages=read_wiki_pages([_write_jsonl(tmp_path / "wiki-001.jsonl", pages)]),
    )  # fmt: skip
    claims = task.read(claims_path)
    model = _tiny(task, fever_processor)
    collator = fever_processor.get_data_collator()
    before, after = _train(model, collator, task.featurise(fever_processor, claims[:6], "train", None), tmp_path, 40)
    assert after < 0.7 * before
    claims = claims[6:]  # held out: the claims about the third page
    predictions = _predict(task, model, fever_processor, claims, tmp_path)
    assert all({"label", "score", "evidence"} <= set(p) for p in predictions.values())
    metrics = task.score(predictions, claims)
    written = task.write_predictions(predictions, claims, tmp_path, "eval", None)
    submitted = [json.loads(line) for line in written.read_text().splitlines()]
    assert [s["id"] for s in submitted] == [c["id"] for c in claims]
    if OFFICIAL and (Path(OFFICIAL) / "fever/src/fever/scorer.py").is_file():
        spec = importlib.util.spec_from_file_location("official_fever", Path(OFFICIAL) / "fever/src/fever/scorer.py")
        scorer = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(scorer)
        actual = [{"label": c["label"], "evidence": c["evidence"]} for c in claims]
        strict, accuracy, precision, recall, f1 = scorer.fever_score(submitted, actual)
        assert (metrics["fever_score"], metrics["label_accuracy"]) == pytest.approx((strict, accuracy), abs=1e-9)
        assert metrics["evidence_f1"] == pytest.approx(f1, abs=1e-9)


def test_the_registered_pipeline_answers_with_answer_score_and_supporting_facts(xh_task_processor):

    import gesa.pipeline_xh_tasks  # noqa: F401  (registers the tasks)

    model = _tiny(HOTPOTQA, xh_task_processor).eval()
    qa = transformers.pipeline(
        "xh-hotpot-qa", model=model, tokenizer=xh_task_processor.tokenizer, processor=xh_task_processor
    )
    row = hotpot_fixture_rows()[0]
    result = qa({"question": row["question"], "context": row["context"]})
    assert set(result) == {"id", "answer", "score", "supporting_facts"} and 0.0 <= result["score"] <= 1.0
    titles = [c[0] for c in row["context"]]
    assert all(title in titles and isinstance(s, int) for title, s in result["supporting_facts"])
    verify = transformers.pipeline(
        "xh-fact-verification", model=_tiny(FEVER, xh_task_processor).eval(), tokenizer=xh_task_processor.tokenizer,
        processor=xh_task_processor, pages=FEVER_PAGES,
    )  # fmt: skip
    verdict = verify({"claim": "Lyon is in France."})
    assert verdict["label"] in ("SUPPORTS", "REFUTES", "NOT ENOUGH INFO") and len(verdict["evidence"]) <= 5
    assert all(page == "Lyon" for page, _ in verdict["evidence"])


def test_hop_attention_off_is_the_baseline(xh_task_processor):
    task = HOTPOTQA
    baseline = _tiny(task, xh_task_processor, hop_attention=False)
    assert baseline.config.xh_num_hop_layers == 0 and len(baseline.gesa.hop_layers) == 0
    assert len(_tiny(task, xh_task_processor).gesa.hop_layers) == 1


@pytest.mark.slow
def test_a_saved_hotpot_model_reloads_from_its_own_code_in_a_fresh_process(tmp_path, xh_task_processor):
    from variant_helpers import reload_each_in_fresh_process

    model = _tiny(HOTPOTQA, xh_task_processor).eval()
    batch = xh_task_processor.get_data_collator()(
        xh_task_processor.encode_hotpot_rows([{**hotpot_fixture_rows()[0], "id": "a"}])
    )
    inputs = {k: v for k, v in batch.items() if k not in ("relevant_node", "start_positions", "end_positions",
                                                          "answer_type", "sentence_labels")}  # fmt: skip
    model.save_pretrained(tmp_path / "saved")
    with torch.no_grad():
        expected = model(**inputs)
    case = {"name": "hotpot", "folder": tmp_path / "saved", "auto_class": "AutoModelForQuestionAnswering",
            "expected_class": "XhForHotpotQA", "inputs": inputs, "outputs": ["relevance_logits", "supporting_logits"]}  # fmt: skip
    reloaded = reload_each_in_fresh_process([case], tmp_path)["hotpot"]
    torch.testing.assert_close(reloaded["relevance_logits"], expected.relevance_logits)
    torch.testing.assert_close(reloaded["supporting_logits"], expected.supporting_logits)


def test_a_processor_saved_before_the_edge_direction_changed_keeps_the_graph_it_was_trained_on(
    tmp_path, xh_task_processor
):
    # processor_config.json of version 1 (no settings_version key): "title_mention" meant Eq. 7's literal direction
    from gesa.processing_base_gesa import PROCESSOR_CONFIG

    xh_task_processor.save_pretrained(tmp_path / "new")
    saved = json.loads((tmp_path / "new" / PROCESSOR_CONFIG).read_text())
    assert saved["settings_version"] == 2 and saved["hotpot_edges"] == "title_mention"
    assert XhTaskProcessor.from_pretrained(tmp_path / "new").hotpot_edges == "title_mention"
    old = tmp_path / "old"
    xh_task_processor.save_pretrained(old)
    del saved["settings_version"]
    (old / PROCESSOR_CONFIG).write_text(json.dumps(saved))
    tokenizer = xh_task_processor.tokenizer
    for processor in (XhTaskProcessor.from_pretrained(old), XhTaskProcessor.from_checkpoint(tokenizer, old)):
        assert processor.hotpot_edges == "title_mention_eq7"
    row = _two_paragraphs()
    graph = XhTaskProcessor.from_pretrained(old).encode_hotpot_rows([row])[0]["node_adjacency"]
    literal = XhTaskProcessor(tokenizer, max_node_length=64, max_query_length=24, hotpot_edges="title_mention_eq7")
    assert graph == literal.encode_hotpot_rows([row])[0]["node_adjacency"]
    assert graph != xh_task_processor.encode_hotpot_rows([row])[0]["node_adjacency"]  # the directions differ here
    # the script's path: a trained checkpoint's processor reads the saved edges, and saves them in today's terms
    assert HOTPOTQA.saved_graph(xh_task_processor, str(old), {}).hotpot_edges == "title_mention_eq7"
    assert HOTPOTQA.saved_graph(xh_task_processor, str(tmp_path / "new"), {}) is xh_task_processor
