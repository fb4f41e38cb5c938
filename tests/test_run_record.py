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
"""examples/run_record.py end to end: train, evaluate, publish, reload, resume, two processes, bad input.

(The no-argument embedded demo has its own file, tests/test_run_record_default.py.)

One tiny LUKE checkpoint (random weights, RoBERTa BPE from ../shared) is fine-tuned once per module on
``fewglue_train32.jsonl``; the other tests reuse that run. Runs happen in this process through
``run_record.main(argv)`` except where a fresh process is the point (reload, two processes, the exact output of
bad input). The conversion, entity-table and bad-input tests use the offline tokenizer and the project's own sample
and run without ../shared.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from record_metric_reference import ref_evaluate
from safetensors.torch import load_file, save_file
from script_helpers import RECORD_SCRIPT, ROOT, record_error_lines, record_script
from tiny_luke import RECORD_DIR, SAMPLE_DIR, build_luke_tokenizer, offline_bpe_dir, tiny_luke_config
from transformers import LukeModel, TrainerCallback

from gesa.training.record import RECORD
from gesa.training.tokenizer import train_sample_tokenizer

TRAIN32 = RECORD_DIR / "fewglue_train32.jsonl"
SAMPLE_TRAIN = (
    SAMPLE_DIR / "record_sample_train.jsonl"
)  # the project's own sample, for the tests that only need a file
DEV60 = RECORD_DIR / "explorer_dev60.jsonl"
CODE_FILES = ("configuration_gesa.py", "modeling_gesa.py", "processing_gesa.py")
TRAIN_STEPS = 300
RESUME_STEP = 150  # the checkpoint an interrupted run leaves behind (--save_steps: checkpoints at 150 and 300)
LOGGING_STEPS = 20
# The tiny model sits at the label prior for a while before it fits the 32 queries; with this seed both the 1- and
# the 2-process run leave that plateau in time and reach 100 EM with eval losses about 0.001, so the two-process
# comparison compares results, not how far each run got up the steep part (seed scan 0-3 of the tiny LUKE in
# tiny_luke.py: seed 0 leaves the 1-process run at 81 EM after 300 steps; seeds 1 and 3 fit both runs).
SEED = 1


run_record = record_script()


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _common(cache_dir: Path) -> list[str]:
    return [
        "--max_seq_length", "256", "--doc_stride", "128",
        "--per_device_eval_batch_size", "16",
        "--report_to", "none", "--disable_tqdm", "true", "--dataloader_pin_memory", "false",
        "--seed", str(SEED), "--cache_dir", str(cache_dir),
    ]  # fmt: skip


def _train_args(luke_dir: Path, output_dir: Path, cache_dir: Path) -> list[str]:
    return [
        "--model_name_or_path", str(luke_dir),
        "--train_file", str(TRAIN32), "--validation_file", str(TRAIN32),
        "--output_dir", str(output_dir), "--do_train", "--do_eval",
        "--max_steps", str(TRAIN_STEPS), "--learning_rate", "5e-3", "--warmup_steps", "0.06",
        "--per_device_train_batch_size", "4", "--logging_steps", str(LOGGING_STEPS),
        "--save_steps", str(RESUME_STEP),
        "--eval_strategy", "steps", "--eval_steps", str(TRAIN_STEPS), "--eval_on_start", "true",
    ] + _common(cache_dir)  # fmt: skip


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("hf-cache")


@pytest.fixture(scope="module")
def trained(roberta_luke_dir, tmp_path_factory, cache_dir):
    """The tiny LUKE fine-tuned for TRAIN_STEPS steps on the 32 FewGLUE training queries (checkpoint at half-way)."""
    output_dir = tmp_path_factory.mktemp("run") / "trained"
    argv = _train_args(roberta_luke_dir, output_dir, cache_dir)
    started = time.perf_counter()
    results = run_record.main(argv)
    print(f"\n[run_record] {TRAIN_STEPS} training steps + 2 evaluations: {time.perf_counter() - started:.1f} s")
    return output_dir, results, argv


@pytest.mark.slow
@pytest.mark.needs_shared
def test_training_lowers_loss_and_raises_em(trained):
    """Evaluation loss and EM on the 32 training queries at step 0 (--eval_on_start) and after TRAIN_STEPS steps;
    training loss: the first logged window vs the mean of the last three (each a mean over LOGGING_STEPS steps)."""
    output_dir, results, _ = trained
    history = json.loads((output_dir / "trainer_state.json").read_text())["log_history"]
    losses = [entry["loss"] for entry in history if "loss" in entry]
    evals = [entry for entry in history if "eval_exact_match" in entry]
    assert [entry["step"] for entry in evals] == [0, TRAIN_STEPS]
    untrained, final = evals
    assert results["eval_exact_match"] == final["eval_exact_match"]  # the closing evaluation sees the same weights
    last_losses = sum(losses[-3:]) / 3
    print(f"\n[run_record] {TRAIN_STEPS} steps on the 32 training queries: eval loss {untrained['eval_loss']:.4f} -> "
          f"{final['eval_loss']:.4f}; training loss (steps 1-{LOGGING_STEPS}) {losses[0]:.4f} -> "
          f"(last {3 * LOGGING_STEPS} steps) {last_losses:.4f}; EM untrained {untrained['eval_exact_match']:.2f} -> "
          f"trained {final['eval_exact_match']:.2f}")  # fmt: skip
    assert len(losses) == TRAIN_STEPS // LOGGING_STEPS
    assert final["eval_loss"] < 0.5 * untrained["eval_loss"], (untrained["eval_loss"], final["eval_loss"])
    assert last_losses < 0.5 * losses[0], losses
    assert final["eval_exact_match"] >= untrained["eval_exact_match"] + 50.0, evals
    assert results["eval_samples"] == 32


@pytest.mark.slow
@pytest.mark.needs_shared
def test_output_folder_is_a_publishable_checkpoint(trained):
    output_dir, results, _ = trained
    config = json.loads((output_dir / "config.json").read_text())
    assert config["model_type"] == "gesa"
    assert config["auto_map"]["AutoModel"] == "modeling_gesa.GesaModel"
    assert config["auto_map"]["AutoModelForQuestionAnswering"] == "modeling_gesa.GesaForEntitySpanQA"
    for name in (*CODE_FILES, "model.safetensors", "processor_config.json", "tokenizer.json", "README.md"):
        assert (output_dir / name).is_file(), name
    processor_config = json.loads((output_dir / "processor_config.json").read_text())
    assert processor_config["auto_map"]["AutoProcessor"] == "processing_gesa.GesaProcessor"
    # The LUKE entity table was shrunk to the four special entities, in the model and in the saved tokenizer.
    assert config["entity_vocab_size"] == 4
    tokenizer_config = json.loads((output_dir / "tokenizer_config.json").read_text())
    assert tokenizer_config["entity_vocab"] == {"[PAD]": 0, "[UNK]": 1, "[MASK]": 2, "[MASK2]": 3}
    # Model card: metadata parsed back as the Hub does, with the run's scores.
    from huggingface_hub import ModelCard

    card = ModelCard.load(output_dir / "README.md")
    assert card.data.library_name == "transformers"
    assert {"gesa", "luke", "record", "reading-comprehension", "custom_code"} <= set(card.data.tags)
    scores = {result.metric_type: result.metric_value for result in card.data.eval_results}
    assert scores == {"exact_match": round(results["eval_exact_match"], 2), "f1": round(results["eval_f1"], 2)}
    assert "trust_remote_code=True" in card.text and "AutoProcessor" in card.text
    assert "| learning rate | 0.005 |" in card.text


@pytest.mark.slow
@pytest.mark.needs_shared
def test_reload_in_fresh_process_reproduces_predictions(trained):
    output_dir, _, _ = trained
    code = f"""
import json, sys, torch
from transformers import AutoModel, AutoModelForQuestionAnswering, AutoProcessor
out = sys.argv[1]
processor = AutoProcessor.from_pretrained(out, trust_remote_code=True)
model = AutoModelForQuestionAnswering.from_pretrained(out, trust_remote_code=True).eval()
encoder = AutoModel.from_pretrained(out, trust_remote_code=True)
assert type(model).__name__ == "GesaForEntitySpanQA" and type(encoder).__name__ == "GesaModel"
assert type(processor).__name__ == "GesaProcessor"
records = [json.loads(line) for line in open({str(TRAIN32)!r}, encoding="utf-8")]
columns = processor.encode_records(records)
features = [dict(zip(columns, values)) for values in zip(*columns.values())]
collator = processor.get_data_collator()
ids, texts, scores = [], [], []
with torch.no_grad():
    for start in range(0, len(features), 8):
        chunk = features[start:start + 8]
        logits = model(**collator(chunk)).logits
        for feature, row in zip(chunk, logits.tolist()):
            ids.append(feature["example_id"]); texts.append(feature["candidate_texts"]); scores.append(row)
print(json.dumps(processor.post_process_predictions(ids, texts, scores)))
"""
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_MODULES_CACHE=str(output_dir.parent / "modules"))
    proc = subprocess.run(
        [sys.executable, "-c", code, str(output_dir)], capture_output=True, text=True, env=env, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    reloaded = json.loads(proc.stdout.strip().splitlines()[-1])
    saved = json.loads((output_dir / "eval_predictions.json").read_text(encoding="utf-8"))
    assert reloaded == saved


class _Interrupted(Exception):
    """Stands for a crash or a kill of the training process."""


class _InterruptAfterSave(TrainerCallback):
    """Ends the run by an exception right after the checkpoint of ``step`` is written (``on_save`` follows the save)."""

    def __init__(self, step: int) -> None:
        self.step = step

    def on_save(self, args, state, control, **kwargs):
        if state.global_step == self.step:
            raise _Interrupted(f"interrupted after saving checkpoint-{self.step}")


class _StepCounter(TrainerCallback):
    """Counts the optimisation steps a run really executes, and the step it starts from."""

    def __init__(self) -> None:
        self.steps = 0
        self.first_step: int | None = None

    def on_step_begin(self, args, state, control, **kwargs):
        if self.first_step is None:
            self.first_step = state.global_step + 1

    def on_step_end(self, args, state, control, **kwargs):
        self.steps += 1


def _max_difference(left: dict[str, torch.Tensor], right: dict[str, torch.Tensor]) -> float:
    assert left.keys() == right.keys()
    return max(float((left[name] - right[name]).abs().max()) for name in left)


@pytest.mark.slow
@pytest.mark.needs_shared
def test_resume_from_checkpoint_matches_uninterrupted_run(trained, tmp_path):
    """A run interrupted right after its checkpoint at step RESUME_STEP, resumed with --resume_from_checkpoint,
    executes only the remaining steps and ends with the uninterrupted run's weights; resuming a perturbed copy of
    the checkpoint ends elsewhere, so the checkpoint's state is what the resumed run continues from."""
    output_dir, _, argv = trained
    expected = load_file(output_dir / "model.safetensors")
    interrupted_dir = tmp_path / "interrupted"
    interrupted_argv = [str(interrupted_dir) if arg == str(output_dir) else arg for arg in argv]
    with pytest.raises(_Interrupted):
        run_record.main(interrupted_argv, callbacks=[_InterruptAfterSave(RESUME_STEP)])
    checkpoint = interrupted_dir / f"checkpoint-{RESUME_STEP}"
    assert sorted(path.name for path in interrupted_dir.iterdir()) == [checkpoint.name]  # no final model, no card
    assert json.loads((checkpoint / "trainer_state.json").read_text())["global_step"] == RESUME_STEP
    # The interruption happened in the very run the uninterrupted one makes: same checkpoint.
    half = load_file(checkpoint / "model.safetensors")
    assert _max_difference(half, load_file(output_dir / checkpoint.name / "model.safetensors")) <= 1e-6
    assert _max_difference(half, expected) > 1e-3  # and the second half of training still changes the weights

    perturbed = tmp_path / "perturbed" / checkpoint.name
    shutil.copytree(checkpoint, perturbed)

    counter = _StepCounter()
    run_record.main(interrupted_argv + ["--resume_from_checkpoint", str(checkpoint)], callbacks=[counter])
    assert (counter.first_step, counter.steps) == (RESUME_STEP + 1, TRAIN_STEPS - RESUME_STEP)
    assert json.loads((interrupted_dir / "trainer_state.json").read_text())["global_step"] == TRAIN_STEPS
    got = load_file(interrupted_dir / "model.safetensors")
    assert expected.keys() == got.keys()
    for name, tensor in expected.items():
        torch.testing.assert_close(got[name], tensor, rtol=0, atol=1e-6, msg=name)

    weights = {name: tensor.clone() for name, tensor in half.items()}
    generator = torch.Generator().manual_seed(0)
    for tensor in weights.values():
        if tensor.is_floating_point():
            tensor.add_(torch.randn(tensor.shape, generator=generator), alpha=0.05)
    save_file(weights, perturbed / "model.safetensors", metadata={"format": "pt"})
    perturbed_argv = [str(perturbed.parent) if arg == str(output_dir) else arg for arg in argv]
    run_record.main(perturbed_argv + ["--resume_from_checkpoint", str(perturbed)])
    elsewhere = _max_difference(load_file(perturbed.parent / "model.safetensors"), expected)
    print(
        f"\n[run_record] resumed at step {RESUME_STEP}: {counter.steps} steps run, final weights equal the "
        f"uninterrupted run's; from a perturbed checkpoint they differ by up to {elsewhere:.3f}"
    )
    assert elsewhere > 1e-2


@pytest.mark.slow
@pytest.mark.needs_shared
def test_gesa_checkpoint_evaluates_explorer_dev60(trained, tmp_path, cache_dir, capfd):
    output_dir, _, _ = trained
    eval_dir = tmp_path / "dev60"
    results = run_record.main(
        ["--model_name_or_path", str(output_dir), "--validation_file", str(DEV60), "--do_eval",
         "--output_dir", str(eval_dir)] + _common(cache_dir)
    )  # fmt: skip
    # reading the GESA checkpoint's tokenizer (its config.json names remote code) neither prompts nor warns
    captured = capfd.readouterr()
    assert "custom code" not in captured.out + captured.err
    assert "to instantiate a model of type" not in captured.out + captured.err
    dataset = _rows(DEV60)
    predictions = json.loads((eval_dir / "eval_predictions.json").read_text(encoding="utf-8"))
    assert set(predictions) == {qa["id"] for row in dataset for qa in row["qas"]}
    for row in dataset:
        text = row["passage"]["text"]
        candidates = {text[e["start"] : e["end"] + 1] for e in row["passage"]["entities"]}
        for qa in row["qas"]:
            assert predictions[qa["id"]] in candidates, qa["id"]
    want = ref_evaluate(dataset, predictions)  # the plain official formulas from tests/test_metric.py
    assert results["eval_exact_match"] == pytest.approx(want["exact_match"], abs=1e-9)
    assert results["eval_f1"] == pytest.approx(want["f1"], abs=1e-9)
    assert results["eval_samples"] == 60


@pytest.mark.slow
@pytest.mark.needs_shared
def test_hub_rows_and_release_json_give_the_same_predictions(trained, tmp_path, cache_dir):
    """The same 8 queries as Hub ``super_glue/record`` rows (exclusive ends) and as the original release's
    ``{"data": [...]}`` JSON give the predictions of the SuperGLUE jsonl run, under the same query ids."""
    output_dir, _, _ = trained
    records = _rows(TRAIN32)[:8]
    hub_rows = []
    for record in records:
        text = record["passage"]["text"]
        spans = [{"text": text[e["start"] : e["end"] + 1], "start": e["start"], "end": e["end"] + 1}
                 for e in record["passage"]["entities"]]  # fmt: skip
        for qa in record["qas"]:
            hub_rows.append(
                {"passage": text, "query": qa["query"], "entities": sorted({s["text"] for s in spans}),
                 "entity_spans": spans, "answers": sorted({a["text"] for a in qa["answers"]}),
                 "idx": {"passage": record["idx"], "query": qa["idx"]}}
            )  # fmt: skip
    files = {"hub.jsonl": "".join(json.dumps(row) + "\n" for row in hub_rows),
             "release.json": json.dumps({"version": "v1.0", "data": records}, indent=1)}  # fmt: skip
    saved = json.loads((output_dir / "eval_predictions.json").read_text(encoding="utf-8"))
    for name, content in files.items():
        (tmp_path / name).write_text(content, encoding="utf-8")
        run_record.main(
            ["--model_name_or_path", str(output_dir), "--validation_file", str(tmp_path / name), "--do_eval",
             "--output_dir", str(tmp_path / f"out-{name}")] + _common(cache_dir)
        )  # fmt: skip
        got = json.loads((tmp_path / f"out-{name}" / "eval_predictions.json").read_text(encoding="utf-8"))
        assert got == {query_id: saved[query_id] for query_id in got} and len(got) == 8, name


@pytest.mark.slow
@pytest.mark.needs_shared
def test_two_process_run_matches_single_process(trained, tmp_path):
    """torchrun with 2 CPU processes (gloo) on the command line of the single-process ``trained`` run, the global batch
    kept (2 per process instead of 4): both clearly beat the untrained model, and they agree within noise.

    Same seed, same starting model, same global batch; the runs differ only in how a batch's loss is averaged (over
    each half's candidates, then over the halves, instead of over the batch's candidates) and in float summation
    order. Both fit the 32 queries well before TRAIN_STEPS (see SEED), so they may differ by a query at most
    (3.125 points), far below the gain over the untrained model asserted first (50 points); the mean training loss,
    mostly the plateau both cross, may differ by 0.03.
    """
    output_dir, single, argv = trained
    two_dir = tmp_path / "two"
    argv = [str(two_dir) if arg == str(output_dir) else arg for arg in argv]
    argv += ["--per_device_train_batch_size", "2", "--save_strategy", "no", "--use_cpu", "true"]  # last flag wins
    env = dict(os.environ, OMP_NUM_THREADS="1")
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node",
        "2",
        str(RECORD_SCRIPT),
        *argv,
    ]
    proc = subprocess.run(command, capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, (proc.stdout[-2000:], proc.stderr[-3000:])
    log = proc.stdout + proc.stderr
    ranks = re.findall(r"Process rank (\d) of (\d), device cpu[:\d]*, distributed (\w+) \(backend (\w+)\)", log)
    assert sorted(ranks) == [("0", "2", "MULTI_CPU", "gloo"), ("1", "2", "MULTI_CPU", "gloo")], ranks
    assert "Total train batch size (w. parallel, distributed & accumulation) = 4" in log
    double = json.loads((two_dir / "all_results.json").read_text())
    predictions = json.loads((two_dir / "eval_predictions.json").read_text(encoding="utf-8"))
    assert len(predictions) == 32 and double["eval_samples"] == 32
    untrained = {}
    for name, folder in (("one", output_dir), ("two", two_dir)):
        state = json.loads((folder / "trainer_state.json").read_text())
        assert state["global_step"] == TRAIN_STEPS
        untrained[name] = next(
            entry for entry in state["log_history"] if entry.get("step") == 0 and "eval_loss" in entry
        )
    start = untrained["one"]["eval_exact_match"]
    print(f"\n[run_record] {TRAIN_STEPS} steps, EM on the 32 training queries (untrained {start:.2f}): 1 process "
          f"{single['eval_exact_match']:.2f} (train loss {single['train_loss']:.4f}, eval loss "
          f"{single['eval_loss']:.4f}); 2 processes {double['eval_exact_match']:.2f} (train loss "
          f"{double['train_loss']:.4f}, eval loss {double['eval_loss']:.4f})")  # fmt: skip
    assert untrained["two"]["eval_exact_match"] == start  # the same starting model
    for results in (single, double):
        assert results["eval_exact_match"] >= start + 50.0, (start, results)
    assert abs(double["eval_exact_match"] - single["eval_exact_match"]) <= 100 / 32 + 1e-9
    assert abs(double["train_loss"] - single["train_loss"]) <= 0.03
    assert abs(double["eval_loss"] - single["eval_loss"]) <= 0.05


@pytest.mark.parametrize(
    ("extra", "ablation", "absolute_positions"),
    [([], None, False), (["--variant", "luke"], "luke", True), (["--ablation", "e2e_local"], "e2e_local", False)],
)
def test_luke_conversion_variant_and_ablation(tiny_luke_dir, tmp_path, extra, ablation, absolute_positions):
    """--variant/--ablation reach the converted config; the entity table shrinks; [HL] [PLC] [ENT] copy @ # *."""
    model_args, data_args, _ = run_record.parse_args(
        ["--model_name_or_path", str(tiny_luke_dir), "--output_dir", str(tmp_path), *extra]
    )
    loaded = RECORD.load(model_args, data_args, {}, None)
    model, processor = loaded.model, loaded.processor
    assert model.config.ablation == ablation
    assert model.config.use_absolute_position_embeddings is absolute_positions
    assert model.config.entity_vocab_size == 4 and model.config.vocab_size == len(processor.tokenizer)
    assert processor.entity_mask_id == 2
    weights = model.get_input_embeddings().weight
    sources = processor.added_token_sources()
    assert sorted(processor.tokenizer.convert_ids_to_tokens(list(sources))) == ["[ENT]", "[HL]", "[PLC]"]
    for new_id, source_id in sources.items():
        assert torch.equal(weights[new_id], weights[source_id])


def test_entity_table_shrinks_to_the_special_entities(tmp_path):
    """A LUKE checkpoint with real entities: the model keeps the rows of [PAD] [UNK] [MASK] [MASK2], in that order,
    and the saved tokenizer's entity vocabulary is shrunk to match."""
    from transformers import LukeTokenizer

    entity_vocab = {"[PAD]": 0, "Paris": 1, "[UNK]": 2, "Obama": 3, "[MASK]": 4, "Lyon": 5, "[MASK2]": 6}
    tokenizer = LukeTokenizer(
        vocab=str(offline_bpe_dir() / "vocab.json"),
        merges=str(offline_bpe_dir() / "merges.txt"),
        entity_vocab=entity_vocab,
    )
    luke = LukeModel(tiny_luke_config(len(tokenizer), entity_vocab_size=len(entity_vocab)))
    luke.save_pretrained(tmp_path / "luke")
    tokenizer.save_pretrained(tmp_path / "luke")
    model_args, data_args, _ = run_record.parse_args(
        ["--model_name_or_path", str(tmp_path / "luke"), "--output_dir", str(tmp_path / "out")]
    )
    loaded = RECORD.load(model_args, data_args, {}, None)
    model, processor = loaded.model, loaded.processor
    table = luke.entity_embeddings.entity_embeddings.weight
    kept = model.base_model.entity_embeddings.entity_embeddings.weight
    torch.testing.assert_close(kept, table[[0, 2, 4, 6]])
    assert processor.entity_mask_id == 2
    processor.save_pretrained(tmp_path / "saved")
    reloaded = LukeTokenizer.from_pretrained(tmp_path / "saved")
    assert reloaded.entity_vocab == {"[PAD]": 0, "[UNK]": 1, "[MASK]": 2, "[MASK2]": 3}


def _sample_lines() -> list[str]:
    return (ROOT / "examples" / "data" / "record_sample_train.jsonl").read_text(encoding="utf-8").splitlines()


def test_bad_input_files_give_one_error_line(tmp_path):
    """Missing files, files in no known shape, and files whose first record is fine but a later one is not: one
    line naming the flag, the file, where in it (line or item) and the fix; exit status 2; nothing else printed."""
    records = [json.loads(line) for line in _sample_lines()[:4]]
    broken = dict(records[2], passage=None)  # the third record: 'passage' missing its object
    files = {
        "nope.jsonl": None,
        "qa.jsonl": json.dumps({"question": "Who?", "context": "Nobody."}) + "\n",
        "rows.json": json.dumps({"version": 1, "rows": []}),
        "late.jsonl": "".join(json.dumps(record) + "\n" for record in [records[0], records[1], broken, records[3]]),
        "late-json.jsonl": "\n".join(_sample_lines()[:4] + [_sample_lines()[4][:80], _sample_lines()[5]]) + "\n",
        "late-list.json": json.dumps([records[0], broken], indent=1),
        "late-release.json": json.dumps({"version": "v1.0", "data": [records[0], records[1], broken]}, indent=1),
        "mixed.jsonl": "".join(json.dumps(item) + "\n" for item in [records[0], {"passage": "P.", "query": "Q?"}]),
    }
    for name, content in files.items():
        if content is not None:
            (tmp_path / name).write_text(content, encoding="utf-8")
    out = ["--output_dir", str(tmp_path / "out")]
    cases = [
        ["--train_file", "nope.jsonl", "--validation_file", "nope.jsonl", "--do_train", *out],
        ["--train_file", "late.jsonl", "--validation_file", "nope.jsonl", "--do_train", "--do_eval", *out],
        ["--validation_file", "qa.jsonl", "--do_eval", *out],
        ["--validation_file", "rows.json", "--do_eval", *out],
        ["--train_file", "late.jsonl", "--do_train", *out],
        ["--validation_file", "late-json.jsonl", "--do_eval", *out],
        ["--validation_file", "late-list.json", "--do_eval", *out],
        ["--train_file", "late-release.json", "--do_train", *out],
        ["--validation_file", "mixed.jsonl", "--do_eval", *out],
    ]
    lines = record_error_lines(cases, cwd=tmp_path)
    passage_problem = "'passage' must be an object with 'text' (a string) and 'entities', got None; fix or remove"
    expected = [
        ("--train_file nope.jsonl: does not exist", "give the path of an existing ReCoRD"),
        ("--train_file late.jsonl, line 3: ReCoRD record ", passage_problem),
        ("--validation_file qa.jsonl, line 1: an object with keys ['context', 'question'] is neither", "+ qas"),
        ("--validation_file rows.json, line 1: an object with keys", "'rows', 'version'"),
        ("--train_file late.jsonl, line 3: ReCoRD record ", passage_problem),
        ("--validation_file late-json.jsonl, line 5: not valid JSON", "fix or remove it"),
        ("--validation_file late-list.json, item 2: ReCoRD record ", passage_problem),
        ("--train_file late-release.json, item 3 of 'data': ReCoRD record ", passage_problem),
        ("--validation_file mixed.jsonl, line 2: a row in a file of records", "use one shape per file"),
    ]
    for line, (where, fix) in zip(lines, expected, strict=True):
        assert where in line and fix in line, line


def test_bad_input_luke_vocab_mismatch(tmp_path):
    """A LUKE checkpoint saved with a tokenizer that is not its own (and the same with a foreign --tokenizer_name):
    one error line, before any data is loaded or training starts."""
    tokenizer = build_luke_tokenizer()
    tokenizer_size = len(tokenizer)
    luke_dir = tmp_path / "luke"
    LukeModel(tiny_luke_config(tokenizer_size + 7)).save_pretrained(luke_dir)
    tokenizer.save_pretrained(luke_dir)
    foreign = tmp_path / "foreign-tokenizer"
    foreign_tokenizer = train_sample_tokenizer(["a few words of text", "more words"] * 10)
    foreign_tokenizer.save_pretrained(foreign)
    cases = [
        ["--model_name_or_path", str(luke_dir), *extra, "--train_file", str(SAMPLE_TRAIN), "--validation_file",
         str(SAMPLE_TRAIN), "--do_train", "--do_eval", "--output_dir", str(tmp_path / "out")]
        for extra in ([], ["--tokenizer_name", str(foreign)])
    ]  # fmt: skip
    lines = record_error_lines(cases, cwd=tmp_path)
    for line, size in zip(lines, (tokenizer_size, len(foreign_tokenizer)), strict=True):
        assert f"--model_name_or_path {luke_dir}: the LUKE checkpoint has vocab_size={tokenizer_size + 7}" in line
        assert f"has {size} word tokens" in line and "do not belong together" in line, line
    assert not (tmp_path / "out").exists()


def test_bad_input_user_knowledge_base_checkpoint(tmp_path):
    """A KAR checkpoint with a user-supplied KB (`kb_size` set): run_record's candidate ids index LUKE's entity
    vocabulary, not that KB's rows, so it is refused with one line before any weight or data is loaded."""
    from gesa import KarConfig, KarForEntitySpanQA

    tokenizer = build_luke_tokenizer()
    config = KarConfig(vocab_size=len(tokenizer), entity_vocab_size=4, hidden_size=32, entity_emb_size=16,
                       num_hidden_layers=2, num_attention_heads=4, intermediate_size=37, kar_layer=0)  # fmt: skip
    model = KarForEntitySpanQA(config)
    model.set_knowledge_base(torch.randn(8, 16))
    kar_dir = tmp_path / "kar-user-kb"
    model.save_pretrained(kar_dir)
    tokenizer.save_pretrained(kar_dir)
    case = ["--model_name_or_path", str(kar_dir), "--variant", "kar", "--validation_file", str(SAMPLE_TRAIN),
            "--do_eval", "--output_dir", str(tmp_path / "out")]  # fmt: skip
    (line,) = record_error_lines([case], cwd=tmp_path)
    assert f"--model_name_or_path {kar_dir} has kb_size=8" in line and "carries no KB files" in line
    assert not (tmp_path / "out").exists()


def test_paper_defaults_fill_only_unset_flags():
    argv = run_record.apply_paper_defaults(["--paper_defaults", "--learning_rate", "3e-5", "--output_dir", "x"])
    model_args, data_args, training_args = run_record.parse_args(argv)
    assert model_args.paper_defaults
    assert training_args.learning_rate == 3e-5  # given on the command line: kept
    assert (data_args.max_seq_length, data_args.max_query_length, data_args.doc_stride) == (512, 90, 128)
    assert (training_args.adam_beta2, training_args.adam_epsilon, training_args.weight_decay) == (0.98, 1e-6, 0.01)
    assert training_args.warmup_steps == 0.06 and training_args.per_device_train_batch_size == 2
    assert run_record.apply_paper_defaults(["--output_dir", "x"]) == ["--output_dir", "x"]
