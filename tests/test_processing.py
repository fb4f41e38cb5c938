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
"""GesaProcessor on ReCoRD records: every query processed and every mention positioned, the entity graph, three input
shapes giving identical features, raw text through spaCy NER, and one clear error for each kind of bad input.

The records are the project's own (``record_fixtures``: the ReCoRD sample of ``examples/data`` and a probe record);
the real ReCoRD samples of ``../shared`` run the same checks again as an extra (``needs_shared``)."""

from __future__ import annotations

import bisect
import copy
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
from record_fixtures import (
    NER_MODEL,
    PROBE_ANSWER,
    PROBE_QUERY,
    RAW_PASSAGE,
    RAW_QUERY,
    features_of,
    hub_rows,
    probe_record,
    project_records,
    shared_records,
)
from tiny_luke import TINY_SIZES
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


@pytest.fixture(scope="module")
def records() -> list[dict]:
    """The project's ReCoRD sample (test_real_samples_pass_the_same_checks runs the checks on ../shared's)."""
    return project_records()


@pytest.fixture(scope="module")
def project() -> list[dict]:
    return project_records()


@pytest.fixture(scope="module")
def probe() -> dict:
    return probe_record()


@pytest.fixture(scope="module")
def tokenizer(tiny_luke_dir):
    """LUKE's word tokenizer as saved with a (tiny) LUKE checkpoint, loaded like users load it."""
    return AutoTokenizer.from_pretrained(tiny_luke_dir)


@pytest.fixture(scope="module")
def default_processor(tokenizer) -> GesaProcessor:
    """GesaProcessor with its default windows (LUKE's 512 tokens) and spaCy NER candidates."""
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
    assert len(examples) == sum(len(record["qas"]) for record in records)
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


def test_caps_are_counted_and_logged(default_processor, project, caplog):
    record = dict(project[0], qas=project[0]["qas"][:1])  # one query: the worker below maps its one Hub row
    first = record["passage"]["entities"][0]
    long_query = " ".join(["word"] * 80) + " @placeholder " + " ".join(["more"] * 80) + "."
    default_processor.stats.clear()
    with caplog.at_level(logging.WARNING):
        columns = default_processor(
            record["passage"]["text"], long_query, entity_spans=[[(first["start"], first["end"] + 1)]]
        )
    query_ids = columns["input_ids"][0][1 : columns["input_ids"][0].index(default_processor.tokenizer.sep_token_id)]
    assert len(query_ids) == default_processor.max_query_length
    assert default_processor.placeholder_token_id in query_ids
    assert default_processor.stats["query_truncated"] == 1
    assert "max_query_length=90" in caplog.text

    # the entity cap splits windows: counted, and logged at WARNING like the other caps
    capped = GesaProcessor(default_processor.tokenizer, max_entities=4)
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


def test_graph_invariants(default_processor, records, sentencizer):
    columns = default_processor.encode_records(records, return_candidate_spans=True)
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
    modeling = pytest.importorskip("gesa.structure_gesa", reason="structure_gesa.py (the label builders) not present")
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
    batch = default_processor.get_data_collator()(features)
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


def spot_check_graph(processor, record):
    """The entity graph of a record's first window and a finder: entity index of the n-th occurrence of a string."""
    feature = features_of(processor.encode_records([record], return_candidate_spans=True))[0]
    graph = build_entity_graph(
        feature["entity_sentence_ids"], feature["entity_string_ids"], feature["placeholder_entity_mask"]
    )
    text = record["passage"]["text"]

    def entity(mention: str, occurrence: int = 0) -> int:
        start = [match.start() for match in re.finditer(re.escape(mention), text)][occurrence]
        return [span[0] for span in feature["candidate_spans"]].index(start)

    return feature, graph, entity


def test_graph_spot_check_by_hand(default_processor, project):
    """record_sample_train #0 (the Cornwall lighthouse keeper), read by hand."""
    feature, graph, entity = spot_check_graph(default_processor, project[0])
    # "Tobias Wren, 58, spotted the group from the tower of the Pendrick Point lighthouse ..."
    assert graph[entity("Tobias Wren"), entity("Pendrick Point")] == EDGE_SENT
    # "The kayakers, students from Exeter, were treated for mild hypothermia at Truro hospital."
    assert graph[entity("Exeter"), entity("Truro")] == EDGE_SENT
    # the body's "Tobias Wren" and the first highlight's; "Cornwall" in the first sentence and in the second highlight
    assert graph[entity("Tobias Wren"), entity("Tobias Wren", 1)] == EDGE_MATCH
    assert graph[entity("Cornwall"), entity("Cornwall", 1)] == EDGE_MATCH
    # "Wren" alone is another string than "Tobias Wren"; two highlight lines are two sentences
    assert graph[entity("Wren", 1), entity("Tobias Wren", 1)] == EDGE_NONE
    assert graph[entity("Exeter", 1), entity("Cornwall", 1)] == EDGE_SENT
    assert graph[entity("Exeter", 1), entity("Truro", 1)] == EDGE_NONE
    assert feature["entity_sentence_ids"][entity("Exeter", 1)] != feature["entity_sentence_ids"][entity("Truro", 1)]


def graph_spot_check_on_a_real_record(processor, record):
    """fewglue_train32 #0 (Chelsea v Olimpija Ljubljana), read by hand."""
    feature, graph, entity = spot_check_graph(processor, record)
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


def raw_call_features(processor, examples, **extra) -> dict:
    """The features of one raw processor call on `examples` (passages, queries, answers, ids, then `extra`), less
    the overflow mapping the record paths do not return."""
    from_raw = processor(
        [example.passage for example in examples],
        [example.query for example in examples],
        answers=[example.answers for example in examples],
        example_ids=[example.example_id for example in examples],
        **extra,
    ).data
    del from_raw["overflow_to_sample_mapping"]
    return from_raw


def test_three_input_shapes_give_identical_features(default_processor, records):
    from_records = default_processor.encode_records(records)
    rows = [row for record in records for row in hub_rows(record)]
    from_hub_rows = default_processor.encode_records(rows)
    examples = to_record_examples(records)
    from_raw = raw_call_features(default_processor, examples, entity_spans=[e.entity_spans for e in examples])
    assert from_raw == from_records
    # Hub rows have no query "id": their ids come from idx, like FewGLUE's (which have no "id" either)
    hub_ids = from_hub_rows.pop("example_id")
    record_ids = from_records.pop("example_id")
    assert from_hub_rows == from_records
    # a query's own "id" where the record has one, else "<passage idx>-<query idx>" like the Hub rows
    hub_id_of = {
        qa.get("id") or f"{record['idx']}-{qa['idx']}": f"{record['idx']}-{qa['idx']}"
        for record in records
        for qa in record["qas"]
    }
    assert [hub_id_of[example_id] for example_id in record_ids] == hub_ids


def test_three_input_shapes_give_identical_features_with_ner_candidates(default_processor, records):
    subset = records[:3] + records[-3:]
    from_records = default_processor.encode_records(subset, candidate_source="ner")
    from_hub_rows = default_processor.encode_records(
        [row for r in subset for row in hub_rows(r)], candidate_source="ner"
    )
    from_raw = raw_call_features(default_processor, to_record_examples(subset))
    assert from_raw == from_records
    from_hub_rows.pop("example_id")
    from_records.pop("example_id")
    assert from_hub_rows == from_records
    assert from_records["candidate_texts"] != default_processor.encode_records(subset)["candidate_texts"]


# ---------------------------------------------------------------- 4. raw text: spaCy NER candidates, forward pass


def test_raw_text_gives_ner_candidates_and_runs_the_model(default_processor, tokenizer):
    modeling = pytest.importorskip("gesa.modeling_gesa", reason="modeling_gesa.py (GesaForEntitySpanQA) not present")
    from gesa.configuration_gesa import GesaConfig

    batch = default_processor(RAW_PASSAGE, RAW_QUERY, answers=[["Angela Merkel"]], return_tensors="pt")
    ner = spacy.load(NER_MODEL)
    expected = [
        entity.text
        for entity in ner(RAW_PASSAGE.replace("@highlight", " " * 10)).ents
        if entity.label_ in default_processor.ner_labels
    ]
    assert batch.candidate_texts == [[""] + expected]
    assert "Angela Merkel" in expected and "Paris" in expected
    assert batch["labels"][0].tolist() == [0.0] + [float(text == "Angela Merkel") for text in expected]

    torch.manual_seed(0)
    config = GesaConfig(vocab_size=len(tokenizer), entity_vocab_size=4, **TINY_SIZES)
    model = modeling.GesaForEntitySpanQA(config).eval()
    model.init_added_word_embeddings(default_processor.added_token_sources())
    with torch.no_grad():
        output = model(**batch)
    entity_count = batch["entity_ids"].shape[1]
    assert output.logits.shape == (1, entity_count) == (1, len(expected) + 1)
    assert torch.isfinite(output.logits[0, 1:]).all() and torch.isfinite(output.loss)
    prediction = default_processor.post_process_predictions(batch.example_id, batch.candidate_texts, output.logits)
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
    with pytest.raises(
        ImportError, match="candidate entities in raw text .* needs spacy, which is not installed"
    ) as error:
        processor(RAW_PASSAGE, RAW_QUERY)
    assert install in str(error.value) and f"python -m spacy download {NER_MODEL}" in str(error.value)
    assert "give entity_spans" in str(error.value)
    # annotated records: the sentencizer (SENT-BASED edges) needs spaCy, but no pipeline
    with pytest.raises(ImportError, match="sentence splitting .* needs spacy, which is not installed") as error:
        processor.encode_records(records[:1])
    assert install in str(error.value)
    monkeypatch.undo()
    expected_ids = {qa.get("id") or f"{records[0]['idx']}-{qa['idx']}" for qa in records[0]["qas"]}
    assert set(processor.encode_records(records[:1])["example_id"]) == expected_ids


# ---------------------------------------------------------------- 5. bad input


PROBE = probe_record()
PROBE_TEXT = PROBE["passage"]["text"]
NAME = PROBE_ANSWER  # "Tobias Wrenfeld", followed by ", 44"
N = PROBE_TEXT.index(NAME)  # where the name starts (exclusive end: N + len(NAME))
PLACE = "Norway"  # the first mention, followed by " praised"
P = PROBE_TEXT.index(PLACE)
SURNAME = PROBE_TEXT.index("Wrenfeld")


def bad_row(probe, **changes) -> dict:
    return {**hub_rows(probe)[0], "id": "bad-example-7", **changes}


def bad_record(probe, entity_end_shift: int = 0, answer_end_shift: int = 0) -> dict:
    """The probe in its original shape (inclusive ``end``), with ends shifted as a user's mistake would."""
    record = copy.deepcopy(probe)
    record["qas"][0]["id"] = "bad-example-7"
    for entity in record["passage"]["entities"]:
        entity["end"] += entity_end_shift
    for answer in record["qas"][0]["answers"]:
        answer["end"] += answer_end_shift
    return record


def spans(*triples) -> dict:
    return {"start": [s for s, _, _ in triples], "end": [e for _, e, _ in triples], "text": [t for _, _, t in triples]}


HIGHLIGHT = PROBE_TEXT.index("@highlight")
END = N + len(NAME)

# case -> (the bad input, made from the probe record; expected message fragments)
BAD_INPUTS = {
    "no-placeholder": (lambda r: bad_row(r, query="Guide Wrenfeld led the climb"), "exactly once, found 0"),
    "two-placeholders": (lambda r: bad_row(r, query="@placeholder met @placeholder"), "exactly once, found 2"),
    "span-past-the-end": (lambda r: bad_row(r, entity_spans=spans((N, 5000, None))), "outside the passage"),
    "negative-span": (lambda r: bad_row(r, entity_spans=spans((-3, 4, None))), "outside the passage"),
    "span-off-by-one": (
        lambda r: bad_row(r, entity_spans=spans((N, END - 1, NAME))),  # inclusive end given as exclusive
        ("not on the character boundaries", "use an EXCLUSIVE end"),
    ),
    "whitespace-span": (lambda r: bad_row(r, entity_spans=spans((N - 1, N, " "))), "covers only whitespace"),
    "span-with-trailing-space": (
        lambda r: bad_row(r, entity_spans=spans((N, N + 7, None))),
        (f"({N}, {N + 7}) = 'Tobias ' ends with whitespace", "use an EXCLUSIVE end"),
    ),
    "span-on-highlight": (
        lambda r: bad_row(r, entity_spans=spans((HIGHLIGHT - 2, HIGHLIGHT + 4, None))),
        "overlaps a '@highlight'",
    ),
    "span-mid-word": (  # "obias" inside "Tobias" (one BPE token): markers would split the word
        lambda r: bad_row(r, entity_spans=spans((N + 1, N + 6, None))),
        (
            f"({N + 1}, {N + 6}) = 'obias' starts inside a word",
            f"no token boundary at character {N + 1}",
            f"({N}, {N + 6}) = 'Tobias'",
        ),
    ),  # fmt: skip
    "span-ends-mid-word": (  # an inclusive end given as exclusive, without a text to compare with
        lambda r: bad_row(r, entity_spans=spans((N, END - 1, None))),
        ("= 'Tobias Wrenfel' ends inside a word", f"({N}, {END}) = 'Tobias Wrenfeld'", "add 1"),
    ),
    "record-exclusive-end": (  # original record, exclusive ends given where ReCoRD's are inclusive
        lambda r: bad_record(r, entity_end_shift=1),
        (
            f"({P}, {P + len(PLACE)}) (inclusive end) = 'Norway ' ends with whitespace",
            "use an INCLUSIVE end",
            "subtract 1",
        ),
    ),  # fmt: skip
    "record-answer-mismatch": (  # the entities are right, the answers' ends are exclusive
        lambda r: bad_record(r, answer_end_shift=1),
        (
            f"answer 'Tobias Wrenfeld' at ({N}, {END}) (inclusive end) does not match the passage",
            f"passage[{N}:{END + 1}] = 'Tobias Wrenfeld,'",
            "use an INCLUSIVE end",
        ),
    ),
    "empty-passage": (lambda r: bad_row(r, passage="   ", entity_spans=spans()), "empty passage"),
    "no-candidates": (lambda r: bad_row(r, entity_spans=spans()), "no candidate entities"),
}


@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_bad_input_raises_a_clear_error_naming_the_example(default_processor, tokenizer, probe, case):
    make_input, messages = BAD_INPUTS[case]
    # what the cases bend: "Tobias" is one BPE token, "Wrenfeld" ends in a token of two characters or more
    assert PROBE_TEXT[N - 1 : END + 1] == " Tobias Wrenfeld," and tokenizer.tokenize(" Tobias") == ["\u0120Tobias"]
    assert len(tokenizer.tokenize(" Wrenfeld")[-1]) >= 2
    assert PROBE_TEXT[P : P + len(PLACE) + 1] == "Norway " and probe["passage"]["entities"][0]["start"] == P
    with pytest.raises(ValueError) as error:
        default_processor.encode_records([make_input(probe)])
    assert "'bad-example-7'" in str(error.value)
    for message in (messages,) if isinstance(messages, str) else messages:
        assert message in str(error.value)


def test_word_boundary_rule_on_the_samples(default_processor, tokenizer, records):
    """No real span boundary splits a run of letters/digits, and the processor accepts every span."""
    for record in records:
        text = record["passage"]["text"]
        for entity in record["passage"]["entities"]:
            for index in entity["start"], entity["end"] + 1:
                before, after = text[index - 1 : index] if index else "", text[index : index + 1]
                assert not (before.isalnum() and after.isalnum()), text[max(index - 9, 0) : index + 9]
    columns = default_processor.encode_records(records, return_candidate_spans=True)
    candidates = {text for texts in columns["candidate_texts"] for text in texts}
    mentions = {r["passage"]["text"][e["start"] : e["end"] + 1] for r in records for e in r["passage"]["entities"]}
    assert candidates - {""} == mentions


@pytest.mark.needs_shared
def test_word_boundary_rule_accepts_spans_roberta_glues_to_punctuation(roberta_luke_dir):
    """On the real samples with RoBERTa's own BPE: spans ending where a BPE token continues ("U.S." before "-based",
    ".-" and ".:" are one token) are still accepted."""
    tokenizer = AutoTokenizer.from_pretrained(roberta_luke_dir)
    processor = GesaProcessor(tokenizer, spacy_model=NER_MODEL)
    records = shared_records()
    boundaries_inside_tokens = []
    for record in records:
        text = record["passage"]["text"]
        offsets = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
        # older releases' LUKE tokenizer (transformers 5.10.1) counts a leading space in offsets; trim it
        starts = [start + (len(text[start:end]) - len(text[start:end].lstrip())) for start, end in offsets]
        token_boundaries = set(starts) | {end for _, end in offsets}
        for entity in record["passage"]["entities"]:
            for index in entity["start"], entity["end"] + 1:
                if index not in token_boundaries:
                    boundaries_inside_tokens.append(text[entity["start"] : index] + "|" + text[index])
    assert sum(len(record["passage"]["entities"]) for record in records) == 2145
    assert boundaries_inside_tokens == ["U.S.|-", "U.S.|-", "U.S.|:"]
    columns = processor.encode_records(records, return_candidate_spans=True)
    candidates = {text for texts in columns["candidate_texts"] for text in texts}
    assert "U.S." in candidates


def test_span_inside_a_word_but_on_a_token_boundary_is_accepted(default_processor, tokenizer, probe):
    """The rule is the tokenizer's: " Wrenfeld" is the BPE tokens "ĠWren" + ..., so "Wren" alone is a legal span."""
    text = probe["passage"]["text"]
    pieces = tokenizer.tokenize(" Wrenfeld")
    assert pieces[0] == "\u0120Wren" and len(pieces) > 1
    start = SURNAME
    batch = default_processor(text, "@placeholder climbed", entity_spans=[(start, start + 4)], example_ids=["wren"])
    input_ids = batch["input_ids"][0]
    (position,) = batch["entity_position_ids"][0][1]
    assert batch["candidate_texts"] == [["", "Wren"]]
    assert tokenizer.convert_ids_to_tokens(input_ids[position - 1 : position + 3]) == ["[ENT]", "\u0120Wren", "[ENT]",
                                                                                       pieces[1]]  # fmt: skip
    with pytest.raises(ValueError, match=rf"'wren'.*\({start}, {start + 3}\) = 'Wre' ends inside a word"):
        default_processor(text, "@placeholder climbed", entity_spans=[(start, start + 3)], example_ids=["wren"])


def test_single_passage_spans_may_come_unwrapped(default_processor, probe):
    text = probe["passage"]["text"]
    query = PROBE_QUERY
    place = text.index("Skarvfossen")
    # [] is that one passage's (empty) span list: the "no candidates" error names the example
    with pytest.raises(ValueError, match=r"'raw-2'.*no candidate entities"):
        default_processor(text, query, entity_spans=[], example_ids=["raw-2"])
    given = [(N, END), (place, place + len("Skarvfossen"))]
    expected = default_processor(text, query, entity_spans=given, answers=[NAME]).data
    assert expected["candidate_texts"] == [["", NAME, "Skarvfossen"]]
    assert expected["labels"] == [[0.0, 1.0, 0.0]]
    as_numpy = np.array(given)
    for given in (as_numpy, list(as_numpy), [tuple(row) for row in as_numpy], [as_numpy]):
        assert default_processor(text, query, entity_spans=given, answers=[NAME]).data == expected
    # no gold answer (a test split): no labels (all-zero labels would train the query as all negative)
    unlabelled = default_processor(text, query, entity_spans=[(N, END)], answers=[]).data
    assert "labels" not in unlabelled and unlabelled["answers"] == [[]]
    with pytest.raises(ValueError, match=rf"'raw-3'.*\({N}\.0, {END}\.0\) must hold two integer"):
        default_processor(text, query, entity_spans=[(float(N), float(END))], example_ids=["raw-3"])


def test_raw_passage_without_entities_is_refused(default_processor):
    with pytest.raises(ValueError, match=r"'raw-1'.*no candidate entities"):
        default_processor("the cat sat on the mat.", "@placeholder sat", example_ids=["raw-1"])


def test_skip_invalid_reports_the_bad_example_and_keeps_the_others(default_processor, project, probe, caplog):
    good = hub_rows(project[1])[0] | {"id": "good-1"}
    also_good = hub_rows(project[2])[0] | {"id": "good-2"}
    bad = bad_row(probe, query="no placeholder here")
    with pytest.raises(ValueError, match="bad-example-7"):
        default_processor.encode_records([good, bad, also_good])
    default_processor.invalid_examples.clear()
    with caplog.at_level(logging.WARNING):
        columns = default_processor.encode_records([good, bad, also_good], skip_invalid=True)
    assert sorted(set(columns["example_id"])) == ["good-1", "good-2"]
    assert [item.example_id for item in default_processor.invalid_examples] == ["bad-example-7"]
    assert "exactly once" in default_processor.invalid_examples[0].reason
    assert "bad-example-7" in caplog.text
    expected = default_processor.encode_records([good, also_good])
    assert columns == expected


# ---------------------------------------------------------------- 6. the same checks on real data (extra)


@pytest.mark.needs_shared
def test_real_samples_pass_the_same_checks(tokenizer, default_processor, sentencizer):
    """The checks above on the real ReCoRD samples of ../shared (FewGLUE train32/dev32, explorer dev60): 124
    queries, 2,145 candidate mentions; the graph of fewglue_train32 #0 read by hand."""
    records = shared_records()
    assert sum(len(record["qas"]) for record in records) == 124
    assert sum(len(record["passage"]["entities"]) for record in records) == 2145
    for settings in (dict(), dict(max_seq_length=128), dict(max_seq_length=160, doc_stride=32, max_entities=6)):
        test_every_query_processed_and_every_mention_positioned(tokenizer, records, settings)
    test_plain_normalization_oracle_agrees_on_the_samples_and_by_hand(records)
    test_graph_invariants(default_processor, records, sentencizer)
    graph_spot_check_on_a_real_record(default_processor, records[0])
    test_three_input_shapes_give_identical_features(default_processor, records)
    test_three_input_shapes_give_identical_features_with_ner_candidates(default_processor, records)
    test_word_boundary_rule_on_the_samples(default_processor, tokenizer, records)
