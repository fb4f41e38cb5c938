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
"""Helpers shared by the tests of the variants (KAR, XH, ERNIE): ReCoRD features of the project's own sample, a short
training loop and a fresh-process reload with `trust_remote_code`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import zlib
from pathlib import Path

import torch
from tiny_luke import SAMPLE_DIR

TRAIN_FILE = SAMPLE_DIR / "record_sample_train.jsonl"


def record_rows(count: int) -> list[dict]:
    """The first `count` records (passages with their queries) of the project's ReCoRD training sample."""
    lines = TRAIN_FILE.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines[:count]]


def gesa_features(tokenizer, count: int = 4, max_seq_length: int = 128) -> tuple[list[dict], object]:
    """`GesaProcessor` features of the project's sample (windows of `max_seq_length`) and the processor."""
    from gesa.processing_gesa import GesaProcessor

    processor = GesaProcessor(tokenizer, max_seq_length=max_seq_length, doc_stride=64, max_query_length=40)
    columns = processor.encode_records(record_rows(count))
    features = [dict(zip(columns, values, strict=True)) for values in zip(*columns.values(), strict=True)]
    # keep windows that hold a gold answer, so that every batch has a positive
    features = [feature for feature in features if any(feature["labels"])]
    return features, processor


def hashed_alias_table(texts, kb_size: int, per_alias: int = 3) -> dict[str, list[tuple[int, float]]]:
    """A deterministic alias table: every text gets `per_alias` KB rows (by CRC32) with priors summing to 1."""
    table = {}
    priors = [0.6, 0.3, 0.1][:per_alias]
    for text in texts:
        if not text:
            continue
        seed = zlib.crc32(text.encode())
        table[text] = [((seed + 7 * k) % kb_size, prior) for k, prior in enumerate(priors)]
    return table


def train_steps(model, batches: list[dict], steps: int = 12, lr: float = 3e-3) -> tuple[float, float]:
    """AdamW for `steps` steps cycling over `batches`; returns the mean loss over `batches` (eval mode) before/after."""

    def mean_loss() -> float:
        model.eval()
        with torch.no_grad():
            return sum(float(model(**batch).loss) for batch in batches) / len(batches)

    before = mean_loss()
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    model.train()
    for step in range(steps):
        loss = model(**batches[step % len(batches)]).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    return before, mean_loss()


def reload_in_fresh_process(
    out_dir: Path,
    inputs: dict,
    tmp_path: Path,
    auto_class: str,
    expected_class: str,
    base_class: str,
    also: str = "",
) -> torch.Tensor:
    """Load `out_dir` with `auto_class.from_pretrained(trust_remote_code=True)` in a clean `python -I` process run
    from elsewhere; returns its `logits` on `inputs`. Also checks `AutoModel` gives `base_class`, then runs `also`
    (more checks, unindented code; `out_dir` is the string `out`, AutoConfig imported)."""
    torch.save(inputs, tmp_path / "inputs.pt")
    script = textwrap.dedent(f"""
        import sys, torch
        assert not any('gesa' in p for p in sys.path if p), sys.path
        import transformers
        from transformers import AutoConfig, AutoModel
        auto = getattr(transformers, {auto_class!r})
        model = auto.from_pretrained({str(out_dir)!r}, trust_remote_code=True).eval()
        assert type(model).__name__ == {expected_class!r}, type(model).__name__
        assert 'transformers_modules' in type(model).__module__, type(model).__module__
        inputs = torch.load({str(tmp_path / "inputs.pt")!r})
        with torch.no_grad():
            logits = model(**inputs).logits
        torch.save(logits, {str(tmp_path / "reloaded_logits.pt")!r})
        base = AutoModel.from_pretrained({str(out_dir)!r}, trust_remote_code=True)
        assert type(base).__name__ == {base_class!r}, type(base).__name__
        out = {str(out_dir)!r}
    """)
    run_isolated(script + also, tmp_path)
    return torch.load(tmp_path / "reloaded_logits.pt")


def run_isolated(script: str, tmp_path: Path, cwd: Path | None = None) -> None:
    """Run `script` in a clean ``python -I`` process from `cwd` (default `tmp_path`): no PYTHONPATH, offline, the
    remote code's module cache under `tmp_path`; a failure shows the end of its stderr."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(HF_HUB_OFFLINE="1", HF_MODULES_CACHE=str(tmp_path / "modules"))
    result = subprocess.run([sys.executable, "-I", "-c", script], cwd=cwd or tmp_path, env=env, capture_output=True,
                            text=True, timeout=300)  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]


def knowledge_record_batches(model, tokenizer, variant: str) -> list[dict]:
    """Up to two batches of four features of the project's ReCoRD sample for the knowledge variant `model` ("kar" or
    "ernie"): its added word rows initialised, a random 50-row knowledge base set, each mention's candidates from a
    hashed alias table of the features' candidate texts."""
    from gesa.processing_kb import EntityCandidateGenerator, KnowledgeCollator, KnowledgeInputBuilder

    features, processor = gesa_features(tokenizer, count=3)
    model.init_added_word_embeddings(processor.added_token_sources())
    model.set_knowledge_base(torch.randn(50, model.config.entity_emb_size))
    alias_table = hashed_alias_table({t for f in features for t in f["candidate_texts"]}, kb_size=50)
    builder = KnowledgeInputBuilder(tokenizer, EntityCandidateGenerator(alias_table=alias_table), variant)
    collate = KnowledgeCollator(processor.get_data_collator(), builder)
    return [collate(features[i : i + 4]) for i in range(0, min(len(features), 8), 4)]


def assert_qa_model_reloads(model, inputs: dict, tmp_path: Path, module: str, qa_class: str, base_class: str) -> dict:
    """Save `model` under `tmp_path / <module minus "modeling_">`: its config maps AutoModelForQuestionAnswering to
    `module.qa_class` and AutoModel to `module.base_class`, and reloaded in a fresh process with trust_remote_code it
    gives the logits it gives here on `inputs` (atol 1e-5). Returns the saved config."""
    model.eval()
    with torch.no_grad():
        expected = model(**inputs).logits
    out_dir = tmp_path / module.removeprefix("modeling_")
    model.save_pretrained(out_dir)
    saved = json.loads((out_dir / "config.json").read_text())
    assert saved["auto_map"]["AutoModelForQuestionAnswering"] == f"{module}.{qa_class}"
    assert saved["auto_map"]["AutoModel"] == f"{module}.{base_class}"
    reloaded = reload_in_fresh_process(
        out_dir, inputs, tmp_path, "AutoModelForQuestionAnswering", qa_class, base_class
    )
    torch.testing.assert_close(reloaded, expected, atol=1e-5, rtol=0)
    return saved


def variant_on_its_backbone(variant_class, config, own_prefix: str, **overrides):
    """Seed 0, a tiny `GesaModel(config())` and a `variant_class(config(**overrides))` given its weights (eval mode
    both); only the variant's own keys (under `own_prefix`) stay missing. Returns the variant model and the backbone."""
    from gesa import GesaModel

    torch.manual_seed(0)
    backbone = GesaModel(config()).eval()
    model = variant_class(config(**overrides)).eval()
    missing = same_backbone(model, backbone)
    assert missing and all(key.startswith(own_prefix) for key in missing), missing
    return model, backbone


def same_backbone(variant_model, gesa_model) -> None:
    """Copy `gesa_model`'s weights into the backbone of `variant_model`; every other key must be the variant's own."""
    missing, unexpected = variant_model.load_state_dict(gesa_model.state_dict(), strict=False)
    assert not unexpected, unexpected
    return missing


def reload_each_in_fresh_process(cases: list[dict], tmp_path: Path) -> dict[str, dict[str, torch.Tensor]]:
    """Reload several saved folders in one clean `python -I` process run from elsewhere, each with its auto class and
    `trust_remote_code`; returns, per case name, the requested outputs on the case's inputs.

    Each case: `name`, `folder`, `auto_class` (e.g. "AutoModelForPreTraining"), `expected_class` (the class the auto
    class must give, from the folder's own code), `inputs` (dict of tensors) and `outputs` (output field names).
    """
    plan = []
    for case in cases:
        inputs_file = tmp_path / f"{case['name']}_inputs.pt"
        torch.save(case["inputs"], inputs_file)
        plan.append({**{k: case[k] for k in ("name", "auto_class", "expected_class", "outputs")}})
        plan[-1].update(folder=str(case["folder"]), inputs=str(inputs_file))
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    results_file = tmp_path / "reloaded_outputs.pt"
    script = textwrap.dedent(f"""
        import json, sys, torch
        assert not any('gesa' in p for p in sys.path if p), sys.path
        import transformers
        results = {{}}
        for case in json.load(open({str(tmp_path / "plan.json")!r})):
            auto = getattr(transformers, case['auto_class'])
            model = auto.from_pretrained(case['folder'], trust_remote_code=True).eval()
            assert type(model).__name__ == case['expected_class'], (case['name'], type(model).__name__)
            assert 'transformers_modules' in type(model).__module__, type(model).__module__
            with torch.no_grad():
                out = model(**torch.load(case['inputs']))
            results[case['name']] = {{key: getattr(out, key) for key in case['outputs']}}
        torch.save(results, {str(results_file)!r})
    """)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(exist_ok=True)
    run_isolated(script, tmp_path, cwd=elsewhere)
    return torch.load(results_file)
