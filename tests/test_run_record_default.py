"""``python examples/run_record.py`` with no argument at all: the embedded demo (issue 4, "Embedded default")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "examples" / "run_record.py"
CODE_FILES = ("configuration_gesa.py", "modeling_gesa.py", "processing_gesa.py")


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_embedded_default_runs_offline_with_no_arguments(tmp_path):
    """``python examples/run_record.py`` alone: tiny GESA, offline tokenizer, embedded sample, EM/F1 printed."""
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", HF_HOME=str(tmp_path / "hf"))
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, str(SCRIPT)], cwd=tmp_path, capture_output=True, text=True, env=env,
                          timeout=900)  # fmt: skip
    elapsed = time.perf_counter() - started
    assert proc.returncode == 0, proc.stderr[-3000:]
    print(f"\n[run_record] embedded default: {elapsed:.1f} s wall")
    assert "ReCoRD 16 queries: exact match" in proc.stdout
    output_dir = tmp_path / "outputs" / "gesa-tiny-record"
    results = json.loads((output_dir / "all_results.json").read_text())
    assert {"eval_exact_match", "eval_f1", "train_loss"} <= set(results)
    predictions = json.loads((output_dir / "eval_predictions.json").read_text(encoding="utf-8"))
    sample = _rows(ROOT / "examples" / "data" / "record_sample_dev.jsonl")
    assert set(predictions) == {qa["id"] for row in sample for qa in row["qas"]}
    for name in (*CODE_FILES, "config.json", "model.safetensors", "processor_config.json", "README.md"):
        assert (output_dir / name).is_file(), name
    card = (output_dir / "README.md").read_text(encoding="utf-8")
    assert "library_name: transformers" in card and "record_sample_train.jsonl" in card
