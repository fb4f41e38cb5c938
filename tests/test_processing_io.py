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
"""GesaProcessor plumbing: save/load and AutoProcessor from a saved folder, collator, datasets.map, Trainer.

Runs on the project's own records (``record_fixtures``) and the offline-trained tiny LUKE tokenizer."""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
import textwrap

import multiprocess
import pytest
import torch
from datasets import Dataset, load_dataset
from record_fixtures import NER_MODEL, RAW_PASSAGE, RAW_QUERY, features_of, hub_rows, project_records
from tiny_luke import TINY_SIZES, offline_bpe_dir
from transformers import RobertaTokenizer, Trainer, TrainingArguments

from gesa import GesaConfig, GesaForEntitySpanQA
from gesa.processing_gesa import MODEL_INPUT_NAMES, GesaDataCollator, GesaProcessor

TINY_GESA = dict(TINY_SIZES, entity_vocab_size=4)


@pytest.fixture(scope="module")
def records() -> list[dict]:
    return project_records()


def test_save_and_from_pretrained_round_trip(gesa_processor, records, tmp_path):
    gesa_processor.save_pretrained(tmp_path)
    saved = json.loads((tmp_path / "processor_config.json").read_text())
    assert saved["max_seq_length"] == 256 and saved["spacy_model"] == NER_MODEL
    assert saved["auto_map"] == {"AutoProcessor": "processing_gesa.GesaProcessor"}
    assert (tmp_path / "processing_gesa.py").read_text() == open(sys.modules[GesaProcessor.__module__].__file__).read()
    reloaded = GesaProcessor.from_pretrained(tmp_path)
    assert len(reloaded.tokenizer) == len(gesa_processor.tokenizer)
    assert reloaded.added_token_sources() == gesa_processor.added_token_sources()
    assert reloaded.entity_mask_id == gesa_processor.entity_mask_id == 2
    assert reloaded.encode_records(records[:8]) == gesa_processor.encode_records(records[:8])
    assert GesaProcessor.from_pretrained(tmp_path, max_seq_length=128).max_seq_length == 128


def test_auto_processor_and_model_from_a_saved_folder_in_a_fresh_process(gesa_processor, tmp_path):
    """Users' path: one folder with the model, the tokenizer and the processor, its code copied in by save_pretrained."""
    checkpoint = tmp_path / "gesa-tiny"
    torch.manual_seed(0)
    model = GesaForEntitySpanQA(GesaConfig(vocab_size=len(gesa_processor.tokenizer), **TINY_GESA)).eval()
    model.save_pretrained(checkpoint)
    gesa_processor.save_pretrained(checkpoint)
    batch = gesa_processor(RAW_PASSAGE, RAW_QUERY, return_tensors="pt")
    with torch.no_grad():
        expected = model(**batch).logits
    script = textwrap.dedent(f"""
        import json, torch
        from transformers import AutoModelForQuestionAnswering, AutoProcessor
        processor = AutoProcessor.from_pretrained({str(checkpoint)!r}, trust_remote_code=True)
        assert 'transformers_modules' in type(processor).__module__, type(processor).__module__
        model = AutoModelForQuestionAnswering.from_pretrained({str(checkpoint)!r}, trust_remote_code=True).eval()
        batch = processor({RAW_PASSAGE!r}, {RAW_QUERY!r}, return_tensors="pt")
        with torch.no_grad():
            logits = model(**batch).logits
        print(json.dumps({{"class": type(processor).__name__, "candidates": batch.candidate_texts,
                          "max_seq_length": processor.max_seq_length, "logits": logits.tolist()}}))
    """)
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    env.update(HF_HUB_OFFLINE="1", HF_MODULES_CACHE=str(tmp_path / "modules"), TOKENIZERS_PARALLELISM="false")
    result = subprocess.run(
        [sys.executable, "-I", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    loaded = json.loads(result.stdout.strip().splitlines()[-1])
    assert loaded["class"] == "GesaProcessor" and loaded["max_seq_length"] == 256
    assert loaded["candidates"] == batch.candidate_texts
    torch.testing.assert_close(torch.tensor(loaded["logits"]), expected, atol=1e-5, rtol=0)


def test_collator_pads_words_entities_and_mentions(gesa_processor, records):
    features = features_of(gesa_processor.encode_records(records[:6], return_candidate_spans=True))
    features.sort(key=lambda feature: len(feature["entity_ids"]))
    batch = GesaDataCollator(pad_token_id=gesa_processor.tokenizer.pad_token_id)(features)
    assert set(batch) == set(MODEL_INPUT_NAMES) | {"labels"}
    word_length = max(len(feature["input_ids"]) for feature in features)
    entity_length = max(len(feature["entity_ids"]) for feature in features)
    mention_length = max(len(row) for feature in features for row in feature["entity_position_ids"])
    assert batch["input_ids"].shape == (len(features), word_length)
    assert batch["entity_ids"].shape == batch["labels"].shape == (len(features), entity_length)
    assert batch["entity_position_ids"].shape == (len(features), entity_length, mention_length)
    assert batch["labels"].dtype == torch.float32 and batch["input_ids"].dtype == torch.long
    padding = {
        "input_ids": gesa_processor.tokenizer.pad_token_id,
        "attention_mask": 0,
        "token_type_ids": 0,
        "global_attention_mask": 0,
        "entity_ids": 0,
        "entity_attention_mask": 0,
        "entity_token_type_ids": 0,
        "placeholder_entity_mask": 0,
        "entity_string_ids": -1,
        "entity_sentence_ids": -1,
        "labels": 0,
    }
    shortest = features[0]
    assert len(shortest["entity_ids"]) < entity_length
    for name, pad in padding.items():
        row = batch[name][0].tolist()
        assert row[: len(shortest[name])] == shortest[name]
        assert set(row[len(shortest[name]) :]) == {pad}, name
    positions = batch["entity_position_ids"][0]
    for entity, row in enumerate(shortest["entity_position_ids"]):
        assert positions[entity].tolist() == row + [-1] * (mention_length - len(row))
    assert (positions[len(shortest["entity_ids"]) :] == -1).all()
    kept = GesaDataCollator(pad_token_id=1, keep_eval_columns=True, pad_to_multiple_of=64)(features)
    assert kept["candidate_texts"] == [feature["candidate_texts"] for feature in features]
    assert kept["example_id"] == [feature["example_id"] for feature in features]
    assert kept["input_ids"].shape[1] % 64 == 0


def test_dataset_map_with_workers_matches_direct_encoding(gesa_processor, records, tmp_path):
    rows = [row for record in records for row in hub_rows(record)]
    expected = gesa_processor.encode_records(rows)
    hub_dataset = Dataset.from_list(rows)
    mapped = gesa_processor.process_dataset(hub_dataset, num_proc=2, batch_size=16)
    assert mapped.num_rows == len(expected["input_ids"])
    assert mapped.to_dict() == expected
    # original SuperGLUE jsonl, as `load_dataset("json")` reads it (one row per passage, queries in `qas`)
    record_file = tmp_path / "records.jsonl"
    record_file.write_text("".join(json.dumps(record) + "\n" for record in records[-6:]), encoding="utf-8")
    json_dataset = load_dataset("json", data_files=str(record_file), split="train", cache_dir=str(tmp_path / "c"))
    mapped_records = gesa_processor.process_dataset(json_dataset, batch_size=4)
    assert mapped_records.to_dict() == gesa_processor.encode_records(records[-6:])


@pytest.mark.skipif(multiprocess.get_start_method() != "fork", reason="the log handler reaches forked workers only")
def test_dataset_map_workers_log_their_caps_at_warning(gesa_processor, records, tmp_path):
    """Under num_proc > 1 each worker's counts stay in the worker, so each worker must log its caps itself."""
    capped = GesaProcessor(gesa_processor.tokenizer, max_entities=4, max_seq_length=256)
    rows = [row for record in records[:8] for row in hub_rows(record)]
    in_process = capped.encode_records(rows)
    splits = capped.stats["entity_cap_window_splits"]
    assert splits > 0
    capped.stats.clear()
    handler = logging.FileHandler(tmp_path / "workers.log", encoding="utf-8")
    handler.setLevel(logging.WARNING)
    module_logger = logging.getLogger(GesaProcessor.__module__)
    module_logger.addHandler(handler)
    try:
        mapped = capped.process_dataset(Dataset.from_list(rows), num_proc=2, batch_size=4)
    finally:
        module_logger.removeHandler(handler)
        handler.close()
    assert mapped.to_dict() == in_process
    assert capped.stats == {}, "documented: worker counts do not reach the main process"
    pattern = (
        r"GesaProcessor \(copy in process (\d+), e\.g\. a Dataset\.map worker; counted there only\): "
        r"(\d+) windows split to keep at most max_entities=4"
    )
    logged = re.findall(pattern, (tmp_path / "workers.log").read_text(encoding="utf-8"))
    assert len({pid for pid, _ in logged}) == 2 and os.getpid() not in {int(pid) for pid, _ in logged}
    assert sum(int(count) for _, count in logged) == splits


def train_two_steps(processor, records, tmp_path, accepts_loss_kwargs: bool | None) -> tuple:
    train = processor.process_dataset(Dataset.from_list([row for r in records[:8] for row in hub_rows(r)]))
    torch.manual_seed(0)
    model = GesaForEntitySpanQA(GesaConfig(vocab_size=len(processor.tokenizer), **TINY_GESA))
    model.init_added_word_embeddings(processor.added_token_sources())
    if accepts_loss_kwargs is not None:
        model.accepts_loss_kwargs = accepts_loss_kwargs
    args = TrainingArguments(
        output_dir=str(tmp_path),
        per_device_train_batch_size=4,
        max_steps=2,
        learning_rate=1e-3,
        report_to=[],
        use_cpu=True,
        save_strategy="no",
        logging_steps=1,
        dataloader_num_workers=0,
    )
    before = [parameter.detach().clone() for parameter in model.classifier.parameters()]
    trainer = Trainer(model=model, args=args, train_dataset=train, data_collator=processor.get_data_collator())
    result = trainer.train()
    changed = any(not torch.equal(b, a) for b, a in zip(before, model.classifier.parameters(), strict=True))
    return result, changed


def test_trainer_trains_on_processed_records(gesa_processor, records, tmp_path):
    # Trainer's `num_items_in_batch` is turned off here: this test is about the dataset and the collator.
    result, changed = train_two_steps(gesa_processor, records, tmp_path, accepts_loss_kwargs=False)
    assert result.global_step == 2 and torch.isfinite(torch.tensor(result.training_loss)) and changed


def test_trainer_trains_with_the_model_as_it_is(gesa_processor, records, tmp_path):
    # the model declines Trainer's num_items_in_batch itself (accepts_loss_kwargs = False)
    result, changed = train_two_steps(gesa_processor, records, tmp_path, accepts_loss_kwargs=None)
    assert result.global_step == 2 and changed


def test_roberta_tokenizer_on_the_same_bpe_files_gives_the_same_tokens(gesa_processor, records, caplog):
    """A plain RoBERTa tokenizer (no entity vocabulary) on the BPE files of the LUKE tokenizer: same features."""
    bpe = offline_bpe_dir()
    roberta = RobertaTokenizer(vocab=str(bpe / "vocab.json"), merges=str(bpe / "merges.txt"))
    roberta_processor = GesaProcessor(roberta, max_seq_length=gesa_processor.max_seq_length)
    assert roberta_processor.entity_mask_id == 2 and "no entity vocabulary" in caplog.text
    luke_columns = gesa_processor.encode_records(records[:10])
    roberta_columns = roberta_processor.encode_records(records[:10])
    for name in set(luke_columns) - {"input_ids"}:
        assert roberta_columns[name] == luke_columns[name], name
    for luke_ids, roberta_ids in zip(luke_columns["input_ids"], roberta_columns["input_ids"], strict=True):
        luke_tokens = gesa_processor.tokenizer.convert_ids_to_tokens(luke_ids)
        assert roberta.convert_ids_to_tokens(roberta_ids) == luke_tokens
    sources = roberta_processor.added_token_sources()
    assert sorted(roberta.convert_ids_to_tokens(list(sources))) == ["[ENT]", "[HL]", "[PLC]"]
    assert roberta.convert_ids_to_tokens([sources[roberta.convert_tokens_to_ids("[HL]")]]) == ["@"]
