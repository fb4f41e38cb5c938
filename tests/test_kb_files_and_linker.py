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
"""A knowledge base given as files (an alias table, entity vectors) and KnowBERT's linker over it: every span of the
input that matches an alias is a candidate mention with its K candidates, their priors p(e|m) and the NULL entity;
the linker's choice follows the prior at initialisation; ERNIE aligns every such mention; bad files are one error
naming the file, the line and the fix; the scripts take the files by path."""

from __future__ import annotations

import json
import re

import pytest
import torch
import transformers
from kb_helpers import ALIASES, ENTITIES, ENTITY_WIDTH, sentence_batch, write_kb
from script_helpers import ENTITY_TASK_FILES, run_entity_task
from tiny_luke import build_tiny_luke

from gesa.checks_gesa import KAR_NULL_CANDIDATE
from gesa.inputs_gesa import InputError
from gesa.modeling_kar import KarModel
from gesa.processing_kb import KnowledgeInputBuilder
from gesa.records_kb import entity_key, load_knowledge_files, read_alias_table, read_entity_vectors


@pytest.fixture(scope="module")
def luke_dir(tmp_path_factory):
    return build_tiny_luke(tmp_path_factory.mktemp("kb-linker-luke"))


def span_text(tokenizer, batch, span) -> str:
    return tokenizer.decode(batch["input_ids"][0, span[0] : span[1] + 1]).strip()


# ---------------------------------------------------------------------------------------------------- the files


def test_kb_files_resolve_aliases_to_the_rows_of_the_vectors_file(tmp_path):
    alias_path, vectors_path, vectors = write_kb(tmp_path)
    names, read = read_entity_vectors(vectors_path)
    assert names == ENTITIES  # the wikipedia2vec word line is skipped, ENTITY/ dropped, underscores read as spaces
    torch.testing.assert_close(read, vectors, atol=1e-5, rtol=0)
    assert [(row.alias, row.entity, row.prior) for row in read_alias_table(alias_path)] == [
        ("Paris", "Paris", 0.7),
        ("Paris", "Paris_Hilton", 0.3),
    ]
    files = load_knowledge_files(alias_path, vectors_path)
    assert files.aliases == {"Paris": [(0, 0.7), (1, 0.3)]} and files.entities == ENTITIES
    generator = files.candidate_generator(entity_vocab=None)
    assert generator("paris") == [(0, 0.7), (1, 0.3)]
    assert generator("Siemens") == [(3, 1.0)]  # an entity name of the KB is its own alias (prior 1)
    assert generator("Lyon") == []
    # without vectors the KB is LUKE's entity table: the aliases resolve to entity-vocabulary ids
    luke_titles = {"[PAD]": 0, "[UNK]": 1, "Paris": 7, "Paris Hilton": 9}
    assert load_knowledge_files(alias_path, entity_vocab=luke_titles).aliases == {"Paris": [(7, 0.7), (9, 0.3)]}
    assert entity_key("ENTITY/New_York_City") == "New York City"


@pytest.mark.parametrize(
    "aliases, vectors, message",
    [
        ("Paris\tParis\n", None, r"aliases\.tsv, line 1: has 2 tab-separated field\(s\), expected 3 .*alias<TAB>"),
        ("Paris\tParis\t0.7\nParis\tParis_Hilton\t1.5\n", None, r"aliases\.tsv, line 2: prior '1\.5' is not a number"),
        ("# nothing\n", None, r"aliases\.tsv: holds no alias line"),
        ("Lyon\tLyon\t1.0\n", None, r"none of its 1 lines names an entity of the KB \(first: 'Lyon'\)"),
        (ALIASES, "2 3\nA 0.1 0.2 0.3\nB 0.1 x 0.3\n", r"entities\.txt, line 3: entity 'B' has a value that is not a"),
        (ALIASES, "A 0.1 0.2\nB 0.1\n", r"entities\.txt, line 2: entity 'B' has 1 values, expected 2"),
        (ALIASES, "A 0.1 0.2\nA_ 0.3 0.4\n", r"line 2: entity 'A_' is listed twice \(first at line 1\)"),
        (
            ALIASES,
            "3 2\nA 0.1 0.2\nB 0.3 0.4\n",
            r"entities\.txt, line 1: the header promises 3 vectors of 2 values, "
            r"the file has 2 after it.*cut short",
        ),
        (ALIASES, "1 2\nA 0.1 0.2\nB 0.3 0.4\n", r"line 1: the header promises 1 vectors .* has 2 after it"),
    ],
)
def test_bad_kb_files_name_the_file_the_line_and_the_fix(tmp_path, aliases, vectors, message):
    alias_path, vectors_path, _ = write_kb(tmp_path, aliases)
    if vectors is not None:
        vectors_path.write_text(vectors, encoding="utf-8")
    with pytest.raises(InputError, match=message):
        load_knowledge_files(alias_path, vectors_path)


def write_unicode_kb(folder, form: str, alias_extra: str = "", entities: tuple[str, ...] = ("Zürich", "São Paulo")):
    """An alias table and vectors file whose names carry accents, written in Unicode ``form`` (NFC or NFD)."""
    import unicodedata

    folder.mkdir(parents=True, exist_ok=True)
    text = "".join(f"{name}\t{name}\t1.0\n" for name in entities) + "Sao\tSão Paulo\t0.5\n" + alias_extra
    lines = [f"{name}\t" + " ".join(["0.5"] * 4) for name in entities]
    (folder / "aliases.tsv").write_text(unicodedata.normalize(form, text), encoding="utf-8")
    (folder / "entities.txt").write_text(unicodedata.normalize(form, "\n".join(lines) + "\n"), encoding="utf-8")
    return folder / "aliases.tsv", folder / "entities.txt"


def test_kb_files_in_nfd_link_nfc_text_as_files_in_nfc_do(tmp_path):
    import unicodedata

    generators = {}
    for form in ("NFC", "NFD"):
        files = load_knowledge_files(*write_unicode_kb(tmp_path / form, form))
        assert files.entities == ["Zürich", "São Paulo"]  # stored in NFC whatever the file's form
        generators[form] = files.candidate_generator(entity_vocab=None)
    for mention in ("Zürich", "São Paulo", "sao"):
        for text_form in ("NFC", "NFD"):
            text = unicodedata.normalize(text_form, mention)
            assert generators["NFD"](text) == generators["NFC"](text) != []


@pytest.mark.parametrize("character", ["\u200b", "\u00ad", "\u2060", "\ufeff", "\u200e"])
def test_an_invisible_character_in_an_alias_is_refused_naming_the_line(tmp_path, character):
    alias_path, vectors_path = write_unicode_kb(tmp_path, "NFC", alias_extra=f"Zü{character}rich\tZürich\t0.4\n")
    code = re.escape(f"U+{ord(character):04X}")
    with pytest.raises(InputError, match=rf"aliases\.tsv, line 4: alias .* invisible character\(s\) {code}.*delete"):
        load_knowledge_files(alias_path, vectors_path)


def test_a_joiner_that_scripts_write_is_kept_in_an_alias(tmp_path):
    alias_path, vectors_path = write_unicode_kb(tmp_path, "NFC", alias_extra="\u0645\u06cc\u200c\u0631\tZürich\t0.4\n")
    files = load_knowledge_files(alias_path, vectors_path)
    assert files.candidate_generator(entity_vocab=None)("\u0645\u06cc\u200c\u0631") == [(0, 0.4)]


def test_entity_names_that_differ_only_in_case_are_refused_naming_both_lines(tmp_path):
    alias_path, vectors_path = write_unicode_kb(tmp_path, "NFC", entities=("Zürich", "São Paulo", "ZÜRICH"))
    with pytest.raises(InputError, match=r"entities\.txt, line 3: entity 'ZÜRICH' differs only in case from 'Zürich' "
                       r"at line 1.*rename one"):  # fmt: skip
        load_knowledge_files(alias_path, vectors_path)


# ---------------------------------------------------------------------------------------------------- the linker


def kar_inputs(luke_dir, tmp_path, aliases=ALIASES):
    tokenizer = transformers.AutoTokenizer.from_pretrained(luke_dir)
    alias_path, vectors_path, vectors = write_kb(tmp_path, aliases)
    files = load_knowledge_files(alias_path, vectors_path)
    builder = KnowledgeInputBuilder(tokenizer, files.candidate_generator(None), "kar")
    text = "Anna Keller visited Paris and Lyon ."
    batch = builder(sentence_batch(tokenizer, text, (0, 11)))
    return tokenizer, builder, batch, vectors


def test_an_ambiguous_alias_gives_both_candidates_and_null_in_kar_inputs(luke_dir, tmp_path):
    tokenizer, builder, batch, _ = kar_inputs(luke_dir, tmp_path)
    spans = batch["kar_mention_spans"][0].tolist()
    texts = [span_text(tokenizer, batch, span) if span[0] >= 0 else None for span in spans]
    assert texts[0] == "Anna Keller"  # slot 0: the task's own mention (its LUKE entity)
    paris = texts.index("Paris")  # over-generated: a span of the input that matches an alias
    assert batch["kar_candidate_ids"][0, paris].tolist() == [0, 1, KAR_NULL_CANDIDATE]
    torch.testing.assert_close(batch["kar_candidate_priors"][0, paris], torch.tensor([0.7, 0.3, 0.0]))
    # a span not in the table gives no mention; the task's mention the table lacks keeps its slot, no candidate
    assert "Lyon" not in texts and (batch["kar_candidate_ids"][0, 0] == -1).all()
    report = builder.report()
    assert report["task_mentions"] == 1 and report["alias_mentions"] == 1 and report["linked_mentions"] == 1
    assert report["candidates_per_mention"] == 2.0


@pytest.mark.parametrize("aliases, chosen", [(ALIASES, 0), ("Paris\tParis\t0.2\nParis\tParis_Hilton\t0.8\n", 1)])
def test_the_linker_follows_the_prior_at_initialisation(luke_dir, tmp_path, aliases, chosen):
    torch.manual_seed(0)
    _, _, batch, vectors = kar_inputs(luke_dir, tmp_path, aliases)
    model = KarModel.from_luke_pretrained(luke_dir, kar_layer=1).eval()
    model.set_knowledge_base(vectors)
    with torch.no_grad():
        out = model(**batch)
    paris = (batch["kar_candidate_ids"][0, :, 0] >= 0).nonzero()[0, 0]
    weights = out.linking_weights[0, paris]
    row = batch["kar_candidate_ids"][0, paris].tolist().index(chosen)
    assert int(weights.argmax()) == row  # the more probable entity, wherever it sits in the list
    assert weights[-1] < weights[:2].min()  # NULL (prior 0) last
    assert not out.null_mask[0, paris]  # every candidate passes delta at the start


def test_ernie_aligns_every_alias_mention_of_the_input(luke_dir, tmp_path):
    tokenizer = transformers.AutoTokenizer.from_pretrained(luke_dir)
    alias_path, vectors_path, _ = write_kb(tmp_path, ALIASES + "Anna Keller\tAlice_Smith\t1.0\n")
    files = load_knowledge_files(alias_path, vectors_path)
    builder = KnowledgeInputBuilder(tokenizer, files.candidate_generator(None), "ernie")
    batch = builder(sentence_batch(tokenizer, "Anna Keller visited Paris and Siemens .", (0, 11)))
    positions = batch["ernie_entity_positions"][0].tolist()
    words = [tokenizer.decode(batch["input_ids"][0, p : p + 1]).strip() for p in positions]
    assert batch["ernie_entity_ids"][0].tolist() == [2, 0, 3]  # Anna Keller -> Alice Smith, Paris (0.7), Siemens
    # each aligned to its mention's first token
    assert words[0] == "Anna" and "Paris".startswith(words[1]) and "Siemens".startswith(words[2]), words


# ---------------------------------------------------------------------------------------------------- the scripts


def test_entity_script_takes_the_kb_files_by_path(luke_dir, tmp_path, capsys):
    alias_path, vectors_path, vectors = write_kb(tmp_path)
    output_dir = tmp_path / "kar"
    flags = ["--variant", "kar", "--kb_alias_table", str(alias_path), "--kb_entity_vectors", str(vectors_path),
             "--max_steps", "2", "--num_train_epochs", "1"]  # fmt: skip
    run_entity_task(luke_dir, output_dir, "relation_classification", extra=flags)
    config = json.loads((output_dir / "config.json").read_text())
    assert config["kb_size"] == len(ENTITIES)
    from safetensors.torch import load_file

    saved = load_file(output_dir / "model.safetensors")
    kb = next(value for key, value in saved.items() if key.endswith("knowledge_base.embeddings"))
    torch.testing.assert_close(kb, vectors, atol=1e-5, rtol=0)  # the file's vectors, frozen through training
    vectors_path.write_text("Paris 0.1 0.2\nParis_Hilton 0.3 0.4\n", encoding="utf-8")  # 2-d, not 16-d
    with pytest.raises(SystemExit):
        run_entity_task(luke_dir, tmp_path / "bad", "relation_classification", extra=flags)
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error.startswith(f"run_entity_tasks.py: error: --kb_entity_vectors {vectors_path}: its vectors have 2")
    assert ENTITY_TASK_FILES["relation_classification"].is_file()


def test_record_script_takes_the_kb_files_by_path(luke_dir, tmp_path, capsys):
    from script_helpers import RECORD_SAMPLE_TRAIN, RECORD_SCRIPT, load_script

    alias_path, vectors_path, vectors = write_kb(tmp_path)
    run_record = load_script(RECORD_SCRIPT, "run_record_kb_under_test")
    argv = ["--model_name_or_path", str(luke_dir), "--variant", "kar", "--train_file", str(RECORD_SAMPLE_TRAIN),
            "--max_train_samples", "2", "--do_train", "--max_steps", "2", "--max_seq_length", "96",
            "--max_query_length", "32", "--doc_stride", "48", "--per_device_train_batch_size", "2",
            "--save_strategy", "no", "--report_to", "none", "--disable_tqdm", "true", "--seed", "0",
            "--kb_alias_table", str(alias_path), "--kb_entity_vectors", str(vectors_path)]  # fmt: skip
    run_record.main([*argv, "--output_dir", str(tmp_path / "kar")])
    assert json.loads((tmp_path / "kar" / "config.json").read_text())["kb_size"] == len(ENTITIES)
    with pytest.raises(SystemExit):
        run_record.main([*argv, "--output_dir", str(tmp_path / "gesa"), "--variant", "gesa"])
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert (
        "ReCoRD --variant gesa does not read --kb_alias_table (the knowledge base of KnowBERT-KAR and ERNIE" in error
    )
    assert vectors.shape == (len(ENTITIES), ENTITY_WIDTH)


def test_pipelines_refuse_a_model_with_a_user_kb(luke_dir):
    """The pipelines generate candidates from the tokenizer's titles: they would index a user KB's rows wrongly."""
    from gesa.processing_kb import knowledge_inputs_of

    model = KarModel.from_luke_pretrained(luke_dir, kar_layer=1)
    assert knowledge_inputs_of(model, "KnowledgeClozeQAPipeline") == "kar"
    model.set_knowledge_base(torch.zeros(4, ENTITY_WIDTH))
    with pytest.raises(ValueError, match=r"reads a user-supplied KB \(kb_size=4\)"):
        knowledge_inputs_of(model, "KnowledgeClozeQAPipeline")
