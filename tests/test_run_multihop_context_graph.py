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
"""``examples/run_multihop.py --task wikihop|medhop --variant context_graph`` end to end from a tiny LUKE: each of
table 5.1's presets trains, evaluates and predicts one of its own candidates for every id; the checkpoint evaluates
again and answers through its pipeline in a fresh process; the processor's node spans are the mentions' tokens."""

from __future__ import annotations

import json

import pytest
import torch
from script_helpers import (
    check_multihop_eval_predictions,
    load_multihop_script,
    logged_losses,
    multihop_error_line,
    multihop_pipeline_elsewhere,
)

from gesa.graph_context import CANDIDATE, DOCUMENT, ENTITY
from gesa.loading_gesa import load_tokenizer
from gesa.processing_context_graph import MODEL_COLUMNS, ContextGraphProcessor
from gesa.records_wikihop import to_wikihop_examples
from gesa.training.wikihop import make_medhop_sample, make_wikihop_sample, write_wikihop_file

TINY_GRAPH = '{"gnn_num_layers": 2}'


@pytest.fixture
def one_thread():
    """The tiny models' ops are microseconds: thread start-up dominates on a shared machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def run_script(luke_dir, tmp_path, train, evaluation, test=None, task="wikihop", extra=(), name="out",
               learning_rate="3e-3"):  # fmt: skip
    files = {"--validation_file": write_wikihop_file(tmp_path / f"{name}-dev.jsonl", evaluation, json_lines=True)}
    if train is not None:
        files["--train_file"] = write_wikihop_file(tmp_path / f"{name}-train.json", train)
    if test is not None:
        files["--test_file"] = write_wikihop_file(tmp_path / f"{name}-test.json", test)
    output_dir = tmp_path / name
    argv = ["--task", task, "--model_name_or_path", str(luke_dir), "--variant", "context_graph",
            "--output_dir", str(output_dir), *(["--do_train"] if train else []), "--do_eval",
            *(["--do_predict"] if test else []), "--per_device_train_batch_size", "4",
            *(["--learning_rate", learning_rate] if learning_rate else []), "--logging_steps", "2", "--save_strategy", "no", "--report_to", "none", "--seed", "0",
            "--use_cpu", "true", "--dataloader_pin_memory", "false", "--max_seq_length", "128", *extra]  # fmt: skip
    for flag, path in files.items():
        argv += [flag, str(path)]
    return output_dir, load_multihop_script().main(argv)


def check_predictions(output_dir, evaluation, test):
    results = check_multihop_eval_predictions(output_dir, evaluation)
    ranked = json.loads((output_dir / "predict_predictions.json").read_text())
    assert set(ranked) == {record["id"] for record in test}
    for record in test:
        assert sorted(entry["answer"] for entry in ranked[record["id"]]) == sorted(record["candidates"])
        assert sum(entry["score"] for entry in ranked[record["id"]]) == pytest.approx(1.0)
    return results


@pytest.mark.parametrize("preset", ["hde_base", "att_base", "bert_base"])
def test_each_table_5_1_preset_trains_evaluates_and_predicts(tiny_luke_dir, tmp_path, one_thread, preset):
    train, evaluation = make_wikihop_sample(12, seed=1), make_wikihop_sample(6, seed=2)
    test = make_wikihop_sample(3, seed=3, labelled=False)
    # AdamW as the mechanism check trains (the thesis's SGD schedule: the next test): 18 SGD steps at 3e-3 move the
    # loss of graph modules drawn at PyTorch's scale by less than its noise
    output_dir, results = run_script(tiny_luke_dir, tmp_path, train, evaluation, test,
                                     extra=["--num_train_epochs", "6", "--graph_preset", preset,
                                            "--graph_config", TINY_GRAPH, "--optim", "adamw_torch"])  # fmt: skip
    losses = logged_losses(output_dir)
    assert len(losses) >= 4 and sum(losses[-2:]) / 2 < sum(losses[:2]) / 2, losses
    assert check_predictions(output_dir, evaluation, test)["eval_accuracy"] == results["eval_accuracy"]
    config = json.loads((output_dir / "config.json").read_text())
    assert config["model_type"] == "gesa_context_graph" and config["graph_preset"] == preset
    assert config["architectures"] == ["ContextGraphForMultipleChoice"] and config["gnn_num_layers"] == 2


def epoch_learning_rates(output_dir):
    state = json.loads((output_dir / "trainer_state.json").read_text())
    return [entry["learning_rate"] for entry in state["log_history"] if "learning_rate" in entry]


@pytest.mark.parametrize(("preset", "rate"), [("hde_base", 1e-3), ("att_base", 1e-2)])
def test_a_preset_trains_with_the_thesis_schedule(tiny_luke_dir, tmp_path, one_thread, preset, rate):
    """Table 4.1: SGD at 0.001 with shared layer weights (HDE-Base), 0.01 without (Att-Base), the rate x0.9 per epoch
    (``trainer_state.json``: one log per epoch of 3 updates, each the rate of that epoch's updates: LR x 0.9^n)."""
    train, evaluation = make_wikihop_sample(12, seed=1), make_wikihop_sample(2, seed=2)
    output_dir, _ = run_script(tiny_luke_dir, tmp_path, train, evaluation, learning_rate=None,
                               extra=["--num_train_epochs", "4", "--graph_preset", preset, "--graph_config",
                                      TINY_GRAPH, "--logging_strategy", "epoch"])  # fmt: skip
    rates = epoch_learning_rates(output_dir)
    assert rates == pytest.approx([rate * 0.9**epoch for epoch in (0, 1, 2, 3)], rel=1e-6)
    assert torch.load(output_dir / "training_args.bin", weights_only=False).optim == "sgd"


def test_flags_given_replace_their_part_of_the_thesis_schedule(tiny_luke_dir, tmp_path, one_thread):
    train, evaluation = make_wikihop_sample(12, seed=1), make_wikihop_sample(2, seed=2)
    base = ["--num_train_epochs", "4", "--graph_preset", "att_base", "--graph_config", TINY_GRAPH,
            "--logging_strategy", "epoch"]  # fmt: skip
    output_dir, _ = run_script(tiny_luke_dir, tmp_path, train, evaluation, learning_rate="0.004", name="rate",
                               extra=[*base, "--optim", "adamw_torch"])  # fmt: skip
    assert epoch_learning_rates(output_dir) == pytest.approx([0.004 * 0.9**epoch for epoch in (0, 1, 2, 3)])
    assert torch.load(output_dir / "training_args.bin", weights_only=False).optim == "adamw_torch"
    output_dir, _ = run_script(tiny_luke_dir, tmp_path, train, evaluation, learning_rate=None, name="linear",
                               extra=[*base, "--lr_scheduler_type", "linear"])  # fmt: skip
    # Trainer's linear decay over 12 updates, each epoch's log the rate of its last update (2, 5, 8, 11)
    assert epoch_learning_rates(output_dir) == pytest.approx([0.01 * (1 - step / 12) for step in (2, 5, 8, 11)])
    output_dir, _ = run_script(tiny_luke_dir, tmp_path, train, evaluation, learning_rate=None, name="off",
                               extra=[*base, "--graph_schedule", "none"])  # fmt: skip
    assert torch.load(output_dir / "training_args.bin", weights_only=False).optim != "sgd"
    assert epoch_learning_rates(output_dir)[0] == pytest.approx(5e-5 * (1 - 2 / 12))  # Trainer's defaults


@pytest.mark.slow
def test_a_fine_tuned_embedder_is_frozen_for_its_first_epochs_then_trained(tiny_luke_dir, tmp_path, one_thread):
    """4.2: "freeze the BERT parameters for the first 5 epochs": the thesis's schedule sets it for a fine-tuned
    embedder; the embedder's weights are those of LUKE after epoch 5 and differ after epoch 6."""
    from transformers import LukeModel

    from gesa.modeling_context_graph import ContextGraphForMultipleChoice

    train, evaluation = make_wikihop_sample(8, seed=1), make_wikihop_sample(2, seed=2)
    luke = LukeModel.from_pretrained(tiny_luke_dir).embeddings.word_embeddings.weight.detach()
    trained = {}
    for epochs in (5, 6):
        output_dir, _ = run_script(tiny_luke_dir, tmp_path, train, evaluation, name=f"tuned-{epochs}",
                                   extra=["--num_train_epochs", str(epochs), "--graph_preset", "bert_base",
                                          "--graph_config", '{"gnn_num_layers": 2, "freeze_word_encoder": false}'])  # fmt: skip
        model = ContextGraphForMultipleChoice.from_pretrained(output_dir)
        assert model.config.freeze_word_encoder_epochs == 5 and not model.config.freeze_word_encoder
        trained[epochs] = model.gesa.embeddings.word_embeddings.weight.detach()
    torch.testing.assert_close(trained[5], luke)
    assert not torch.allclose(trained[6], luke)


@pytest.mark.slow
def test_the_checkpoint_evaluates_again_and_answers_through_its_pipeline_elsewhere(
    tiny_luke_dir, tmp_path, one_thread
):
    train, evaluation = make_wikihop_sample(8, seed=1), make_wikihop_sample(4, seed=2)
    test = make_wikihop_sample(2, seed=3, labelled=False)
    output_dir, results = run_script(tiny_luke_dir, tmp_path, train, evaluation, test,
                                     extra=["--num_train_epochs", "2", "--graph_config",
                                            '{"gnn_num_layers": 2, "gnn_core": "sdp", "sentence_nodes": "all"}'])  # fmt: skip
    again, second = run_script(output_dir, tmp_path, None, evaluation, name="again")
    assert second["eval_accuracy"] == results["eval_accuracy"]
    assert json.loads((again / "eval_predictions.json").read_text()) == json.loads(
        (output_dir / "eval_predictions.json").read_text()
    )
    assert json.loads((output_dir / "processor_config.json").read_text())["sentence_nodes"] == "all"
    ranked = multihop_pipeline_elsewhere(output_dir, evaluation, tmp_path / "elsewhere",
                                         "print(json.dumps(answer(records)))\n")  # fmt: skip
    predictions = json.loads((output_dir / "eval_predictions.json").read_text())
    assert [entry[0]["answer"] for entry in ranked] == [predictions[record["id"]] for record in evaluation]


def test_medhop_reads_the_same_layout(tiny_luke_dir, tmp_path, one_thread):
    train, evaluation = make_medhop_sample(4, seed=1), make_medhop_sample(3, seed=2)
    test = make_medhop_sample(2, seed=3, labelled=False)
    output_dir, _ = run_script(tiny_luke_dir, tmp_path, train, evaluation, test, task="medhop",
                               extra=["--num_train_epochs", "1", "--graph_preset", "hde_base",
                                      "--graph_config", TINY_GRAPH])  # fmt: skip
    check_predictions(output_dir, evaluation, test)


def test_processor_node_spans_are_the_mentions_tokens_and_edges_run_both_ways(tiny_luke_dir):
    tokenizer = load_tokenizer(str(tiny_luke_dir))
    record = make_wikihop_sample(1, seed=4)[0]
    processor = ContextGraphProcessor(tokenizer, max_document_length=64)
    columns = processor.encode_examples(to_wikihop_examples([record]))
    texts = columns["input_ids"][0]
    assert len(texts) == 1 + len(record["supports"]) + len(record["candidates"])
    candidate_nodes = columns["candidate_nodes"][0]
    assert [columns["node_type"][0][n] for n in candidate_nodes] == [CANDIDATE] * len(record["candidates"])
    assert columns["labels"] == [record["candidates"].index(record["answer"])]
    for node, kind in enumerate(columns["node_type"][0]):
        ids = texts[columns["node_text"][0][node]][columns["node_start"][0][node] : columns["node_end"][0][node]]
        words = tokenizer.decode(ids).strip().lower()
        if kind == ENTITY:
            candidate = columns["entity_candidate"][0][node]
            expected = record["candidates"][candidate] if candidate >= 0 else record["query"].split(maxsplit=1)[1]
            assert words == expected
        elif kind == DOCUMENT:
            assert words == record["supports"][columns["node_text"][0][node] - 1].lower()
    senders, receivers = columns["edge_index"][0]
    assert sorted(zip(senders, receivers, strict=True)) == sorted(zip(receivers, senders, strict=True))
    batch = processor.get_data_collator()([{k: columns[k][0] for k in MODEL_COLUMNS}] * 2)
    assert batch["candidate_nodes"][1].tolist() == [n + len(columns["node_text"][0]) for n in candidate_nodes]
    assert batch["query_text"].tolist() == [0, len(texts)]


def test_bad_graph_flags_are_one_error_line(capsys, tiny_luke_dir, tmp_path):
    evaluation = write_wikihop_file(tmp_path / "dev.json", make_wikihop_sample(2, seed=2))
    base = ["--task", "wikihop", "--variant", "context_graph", "--model_name_or_path", str(tiny_luke_dir),
            "--validation_file", str(evaluation), "--do_eval", "--output_dir", str(tmp_path / "out"),
            "--report_to", "none", "--use_cpu", "true"]  # fmt: skip
    assert "--graph_config: ['gnn_cores'] are not graph fields" in multihop_error_line(
        capsys, [*base, "--graph_config", '{"gnn_cores": "sdp"}']
    )
    assert "graph_preset='hde_base' sets gnn_core='edge'" in multihop_error_line(
        capsys, [*base, "--graph_preset", "hde_base", "--graph_config", '{"gnn_core": "sdp"}']
    )
    # a GESA preset is for GESA's embedder: LUKE's (the default) is LUKE as pre-trained
    assert "set token_embedder='gesa'" in multihop_error_line(capsys, [*base, "--ablation", "no_plc_edges"])
    assert "--variant gesa does not read --graph_schedule (the thesis's training schedule" in multihop_error_line(
        capsys, [*[a if a != "context_graph" else "gesa" for a in base], "--graph_schedule", "thesis"]
    )


@pytest.mark.parametrize("summariser", ["transformer", "switch"])
def test_a_graphs_scores_do_not_depend_on_its_batch(tiny_luke_dir, summariser):
    """The collator flattens graphs into one node set, and the co-attention pads every node type's spans together:
    scores of a graph batched with others equal its scores alone."""
    from gesa.modeling_context_graph import ContextGraphForMultipleChoice

    tokenizer = load_tokenizer(str(tiny_luke_dir))
    records = make_wikihop_sample(3, seed=5, filler_sentences=2)
    processor = ContextGraphProcessor(tokenizer, max_document_length=96, sentence_nodes="restricted")
    columns = processor.encode_examples(to_wikihop_examples(records))
    features = [{k: columns[k][i] for k in MODEL_COLUMNS} for i in range(3)]
    torch.manual_seed(0)
    model = ContextGraphForMultipleChoice.from_luke_pretrained(str(tiny_luke_dir), gnn_num_layers=2,
                                                               summariser=summariser).eval()  # fmt: skip
    collate = processor.get_data_collator()
    with torch.no_grad():
        together = model(**collate(features)).logits
        for row, feature in enumerate(features):
            alone = model(**collate([feature])).logits[0]
            width = len(records[row]["candidates"])
            torch.testing.assert_close(together[row, :width], alone[:width], rtol=1e-4, atol=1e-5)
