"""examples/run_record.py end to end (issue 4): train, evaluate, publish, reload, resume, two processes, bad input.

(The no-argument embedded demo has its own file, tests/test_run_record_default.py.)

One tiny LUKE checkpoint (random weights, RoBERTa BPE from ../shared) is fine-tuned once per module on
``fewglue_train32.jsonl``; the other tests reuse that run. Runs happen in this process through
``run_record.main(argv)`` except where a fresh process is the point (reload, embedded default, two processes).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from test_metric import ref_evaluate
from tiny_luke import RECORD_DIR, ROBERTA_DIR, build_luke_tokenizer, tiny_luke_config
from transformers import LukeModel

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "examples" / "run_record.py"
TRAIN32 = RECORD_DIR / "fewglue_train32.jsonl"
DEV60 = RECORD_DIR / "explorer_dev60.jsonl"
CODE_FILES = ("configuration_gesa.py", "modeling_gesa.py", "processing_gesa.py")
TRAIN_STEPS = 200
RESUME_STEP = 150  # the checkpoint an interrupted run leaves behind


def _load_script():
    spec = importlib.util.spec_from_file_location("run_record_under_test", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the file executes
    spec.loader.exec_module(module)
    return module


run_record = _load_script()


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _common(cache_dir: Path) -> list[str]:
    return [
        "--max_seq_length", "256", "--doc_stride", "128",
        "--per_device_eval_batch_size", "16",
        "--report_to", "none", "--disable_tqdm", "true", "--dataloader_pin_memory", "false",
        "--seed", "0", "--cache_dir", str(cache_dir),
    ]  # fmt: skip


def _train_args(luke_dir: Path, output_dir: Path, cache_dir: Path) -> list[str]:
    return [
        "--model_name_or_path", str(luke_dir),
        "--train_file", str(TRAIN32), "--validation_file", str(TRAIN32),
        "--output_dir", str(output_dir), "--do_train", "--do_eval",
        "--max_steps", str(TRAIN_STEPS), "--learning_rate", "5e-3", "--warmup_steps", "0.06",
        "--per_device_train_batch_size", "4", "--logging_steps", "20",
        "--save_steps", str(RESUME_STEP),
        "--eval_strategy", "steps", "--eval_steps", str(TRAIN_STEPS), "--eval_on_start", "true",
    ] + _common(cache_dir)  # fmt: skip


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("hf-cache")


@pytest.fixture(scope="module")
def trained(tiny_luke_dir, tmp_path_factory, cache_dir):
    """The tiny LUKE fine-tuned for TRAIN_STEPS steps on the 32 FewGLUE training queries (checkpoint at half-way)."""
    output_dir = tmp_path_factory.mktemp("run") / "trained"
    argv = _train_args(tiny_luke_dir, output_dir, cache_dir)
    started = time.perf_counter()
    results = run_record.main(argv)
    print(f"\n[run_record] {TRAIN_STEPS} training steps + 2 evaluations: {time.perf_counter() - started:.1f} s")
    return output_dir, results, argv


@pytest.mark.needs_shared
def test_training_lowers_loss_and_raises_em(trained):
    output_dir, results, _ = trained
    history = json.loads((output_dir / "trainer_state.json").read_text())["log_history"]
    losses = [entry["loss"] for entry in history if "loss" in entry]
    evals = [entry for entry in history if "eval_exact_match" in entry]
    untrained_em, trained_em = evals[0]["eval_exact_match"], results["eval_exact_match"]
    assert evals[0]["step"] == 0
    print(f"\n[run_record] training loss {losses[0]:.4f} -> {losses[-1]:.4f}; "
          f"EM on the 32 training queries: untrained {untrained_em:.2f} -> trained {trained_em:.2f}")  # fmt: skip
    assert len(losses) == TRAIN_STEPS // 20
    assert losses[-1] < losses[0] - 0.05, losses
    assert trained_em >= untrained_em + 15.0, (untrained_em, trained_em)
    assert results["eval_samples"] == 32


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


@pytest.mark.needs_shared
def test_reload_in_fresh_process_reproduces_predictions(trained):
    output_dir, _, _ = trained
    code = f"""
import importlib.util, json, sys, torch
from transformers import AutoModel, AutoModelForQuestionAnswering, AutoProcessor
out = sys.argv[1]
processor = AutoProcessor.from_pretrained(out, trust_remote_code=True)
model = AutoModelForQuestionAnswering.from_pretrained(out, trust_remote_code=True).eval()
encoder = AutoModel.from_pretrained(out, trust_remote_code=True)
assert type(model).__name__ == "GesaForEntitySpanQA" and type(encoder).__name__ == "GesaModel"
assert type(processor).__name__ == "GesaProcessor"
spec = importlib.util.spec_from_file_location("metric", {str(ROOT / "metrics" / "record" / "record.py")!r})
metric = importlib.util.module_from_spec(spec); spec.loader.exec_module(metric)
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
print(json.dumps(metric.merge_window_predictions(ids, texts, scores)))
"""
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_MODULES_CACHE=str(output_dir.parent / "modules"))
    proc = subprocess.run(
        [sys.executable, "-c", code, str(output_dir)], capture_output=True, text=True, env=env, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    reloaded = json.loads(proc.stdout.strip().splitlines()[-1])
    saved = json.loads((output_dir / "eval_predictions.json").read_text(encoding="utf-8"))
    assert reloaded == saved


@pytest.mark.needs_shared
def test_resume_from_checkpoint_matches_uninterrupted_run(trained, tmp_path):
    """An interrupted run leaves checkpoint-150 behind; resuming it ends with the uninterrupted run's weights.

    The interrupted run's state is the uninterrupted run's own checkpoint-150 (written at step 150 of the same
    deterministic run), copied into a fresh output folder.
    """
    output_dir, _, argv = trained
    half = f"checkpoint-{RESUME_STEP}"
    resumed_dir = tmp_path / "resumed"
    shutil.copytree(output_dir / half, resumed_dir / half)
    argv = [str(resumed_dir) if arg == str(output_dir) else arg for arg in argv]
    run_record.main(argv + ["--resume_from_checkpoint", str(resumed_dir / half)])
    expected = load_file(output_dir / "model.safetensors")
    got = load_file(resumed_dir / "model.safetensors")
    assert expected.keys() == got.keys()
    for name, tensor in expected.items():
        torch.testing.assert_close(got[name], tensor, rtol=0, atol=1e-6, msg=name)
    state = json.loads((resumed_dir / "trainer_state.json").read_text())
    assert state["global_step"] == TRAIN_STEPS


@pytest.mark.needs_shared
def test_gesa_checkpoint_evaluates_explorer_dev60(trained, tmp_path, cache_dir):
    output_dir, _, _ = trained
    eval_dir = tmp_path / "dev60"
    results = run_record.main(
        ["--model_name_or_path", str(output_dir), "--validation_file", str(DEV60), "--do_eval",
         "--output_dir", str(eval_dir)] + _common(cache_dir)
    )  # fmt: skip
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


@pytest.mark.needs_shared
def test_two_process_run_matches_single_process(tiny_luke_dir, tmp_path, cache_dir):
    """torchrun with 2 CPU processes (gloo) vs 1 process with the same global batch: same metric within noise."""
    base = [
        "--model_name_or_path", str(tiny_luke_dir), "--train_file", str(TRAIN32), "--validation_file", str(TRAIN32),
        "--do_train", "--do_eval", "--max_steps", "40", "--learning_rate", "5e-3", "--save_strategy", "no",
        "--logging_steps", "10", "--use_cpu", "true",
    ] + _common(cache_dir)  # fmt: skip
    single = run_record.main(base + ["--output_dir", str(tmp_path / "one"), "--per_device_train_batch_size", "4"])
    env = dict(os.environ, OMP_NUM_THREADS="1")
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", "29531",
               str(SCRIPT), *base, "--output_dir", str(tmp_path / "two"), "--per_device_train_batch_size", "2"]  # fmt: skip
    proc = subprocess.run(command, capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, (proc.stdout[-2000:], proc.stderr[-3000:])
    assert "Process rank 1 of 2" in proc.stdout + proc.stderr
    double = json.loads((tmp_path / "two" / "all_results.json").read_text())
    predictions = json.loads((tmp_path / "two" / "eval_predictions.json").read_text(encoding="utf-8"))
    assert len(predictions) == 32 and double["eval_samples"] == 32
    print(f"\n[run_record] 1 process: EM {single['eval_exact_match']:.2f}, loss {single['train_loss']:.4f}; "
          f"2 processes: EM {double['eval_exact_match']:.2f}, loss {double['train_loss']:.4f}")  # fmt: skip
    assert abs(double["eval_exact_match"] - single["eval_exact_match"]) <= 12.5
    assert abs(double["train_loss"] - single["train_loss"]) <= 0.05


@pytest.mark.needs_shared
@pytest.mark.parametrize(
    ("extra", "ablation", "absolute_positions"),
    [([], None, False), (["--variant", "luke"], "luke", True), (["--ablation", "e2e_local"], "e2e_local", False)],
)
def test_luke_conversion_variant_and_ablation(tiny_luke_dir, tmp_path, extra, ablation, absolute_positions):
    """--variant/--ablation reach the converted config; the entity table shrinks; [HL] [PLC] [ENT] copy @ # *."""
    model_args, data_args, _ = run_record.parse_args(
        ["--model_name_or_path", str(tiny_luke_dir), "--output_dir", str(tmp_path), *extra]
    )
    model, processor = run_record.build_model_and_processor(model_args, data_args, [])
    assert model.config.ablation == ablation
    assert model.config.use_absolute_position_embeddings is absolute_positions
    assert model.config.entity_vocab_size == 4 and model.config.vocab_size == len(processor.tokenizer)
    assert processor.entity_mask_id == 2
    weights = model.get_input_embeddings().weight
    sources = processor.added_token_sources()
    assert sorted(processor.tokenizer.convert_ids_to_tokens(list(sources))) == ["[ENT]", "[HL]", "[PLC]"]
    for new_id, source_id in sources.items():
        assert torch.equal(weights[new_id], weights[source_id])


@pytest.mark.needs_shared
def test_entity_table_shrinks_to_the_special_entities(tmp_path):
    """A LUKE checkpoint with real entities: the model keeps the rows of [PAD] [UNK] [MASK] [MASK2], in that order,
    and the saved tokenizer's entity vocabulary is shrunk to match."""
    from transformers import LukeTokenizer

    entity_vocab = {"[PAD]": 0, "Paris": 1, "[UNK]": 2, "Obama": 3, "[MASK]": 4, "Lyon": 5, "[MASK2]": 6}
    tokenizer = LukeTokenizer(
        vocab=str(ROBERTA_DIR / "vocab.json"), merges=str(ROBERTA_DIR / "merges.txt"), entity_vocab=entity_vocab
    )
    luke = LukeModel(tiny_luke_config(len(tokenizer), entity_vocab_size=len(entity_vocab)))
    luke.save_pretrained(tmp_path / "luke")
    tokenizer.save_pretrained(tmp_path / "luke")
    model_args, data_args, _ = run_record.parse_args(
        ["--model_name_or_path", str(tmp_path / "luke"), "--output_dir", str(tmp_path / "out")]
    )
    model, processor = run_record.build_model_and_processor(model_args, data_args, [])
    table = luke.entity_embeddings.entity_embeddings.weight
    kept = model.base_model.entity_embeddings.entity_embeddings.weight
    torch.testing.assert_close(kept, table[[0, 2, 4, 6]])
    assert processor.entity_mask_id == 2
    processor.save_pretrained(tmp_path / "saved")
    reloaded = LukeTokenizer.from_pretrained(tmp_path / "saved")
    assert reloaded.entity_vocab == {"[PAD]": 0, "[UNK]": 1, "[MASK]": 2, "[MASK2]": 3}


def _error_line(capsys, argv: list[str]) -> str:
    with pytest.raises(SystemExit) as exit_info:
        run_record.main(argv)
    assert exit_info.value.code == 2
    captured = capsys.readouterr()
    assert "Running training" not in captured.out + captured.err
    lines = [line for line in captured.err.splitlines() if line.strip()]
    assert lines and lines[-1].startswith("run_record.py: error: "), captured.err[-2000:]
    assert "Traceback" not in captured.err
    return lines[-1]


def test_bad_input_missing_file(capsys, tmp_path):
    line = _error_line(
        capsys, ["--train_file", str(tmp_path / "nope.jsonl"), "--validation_file", str(tmp_path / "nope.jsonl"),
                 "--do_train", "--output_dir", str(tmp_path / "out")]
    )  # fmt: skip
    assert "nope.jsonl does not exist" in line


def test_bad_input_unknown_shape(capsys, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"question": "Who?", "context": "Nobody."}) + "\n", encoding="utf-8")
    line = _error_line(capsys, ["--validation_file", str(bad), "--do_eval", "--output_dir", str(tmp_path / "out")])
    assert "no known shape" in line and "context" in line
    whole = tmp_path / "bad.json"
    whole.write_text(json.dumps({"version": 1, "rows": []}), encoding="utf-8")
    line = _error_line(capsys, ["--validation_file", str(whole), "--do_eval", "--output_dir", str(tmp_path / "o2")])
    assert "no known shape" in line


@pytest.mark.needs_shared
def test_bad_input_luke_vocab_mismatch(capsys, tmp_path):
    tokenizer = build_luke_tokenizer()
    tokenizer_size = len(tokenizer)
    luke_dir = tmp_path / "luke"  # a LUKE checkpoint saved with a tokenizer that is not its own
    LukeModel(tiny_luke_config(tokenizer_size + 7)).save_pretrained(luke_dir)
    tokenizer.save_pretrained(luke_dir)
    foreign = tmp_path / "foreign-tokenizer"
    run_record.train_sample_tokenizer(["a few words of text", "more words"] * 10).save_pretrained(foreign)
    for extra in ([], ["--tokenizer_name", str(foreign)]):
        line = _error_line(
            capsys, ["--model_name_or_path", str(luke_dir), *extra, "--validation_file", str(TRAIN32), "--do_eval",
                     "--output_dir", str(tmp_path / "out")]
        )  # fmt: skip
        assert "do not belong together" in line and f"vocab_size={tokenizer_size + 7}" in line


def test_paper_defaults_fill_only_unset_flags():
    argv = run_record.apply_paper_defaults(["--paper_defaults", "--learning_rate", "3e-5", "--output_dir", "x"])
    model_args, data_args, training_args = run_record.parse_args(argv)
    assert model_args.paper_defaults
    assert training_args.learning_rate == 3e-5  # given on the command line: kept
    assert (data_args.max_seq_length, data_args.max_query_length, data_args.doc_stride) == (512, 90, 128)
    assert (training_args.adam_beta2, training_args.adam_epsilon, training_args.weight_decay) == (0.98, 1e-6, 0.01)
    assert training_args.warmup_steps == 0.06 and training_args.per_device_train_batch_size == 2
    assert run_record.apply_paper_defaults(["--output_dir", "x"]) == ["--output_dir", "x"]
