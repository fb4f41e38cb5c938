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
"""SciREX document IE: the processor's pieces, word positions and gold columns (SciREX's reader's clusters and relation
candidates), the heads' entity inputs against LUKE's tokenizer, complete linkage against a plain loop, the training
loss and the predictions' shapes, and the real sample's documents at real length."""

import itertools
import random

import pytest
import torch
from scirex_fixtures import SCIREX_DEV, small_document
from transformers import AutoTokenizer

from gesa.modeling_document_ie import DocumentIESettings, GesaForDocumentIE, bio_spans, complete_linkage
from gesa.modeling_long_luke_document_ie import LongLukeForDocumentIE
from gesa.processing_document_ie import BIO_LABELS, DocumentIEProcessor, bio_tags, training_clusters
from gesa.records_scirex import read_scirex_file, scirex_document
from gesa.training.tokenizer import special_entity_rows


@pytest.fixture(scope="module")
def tokenizer(tiny_luke_dir):
    return AutoTokenizer.from_pretrained(tiny_luke_dir)


@pytest.fixture(scope="module")
def model(tiny_luke_dir, tokenizer):
    torch.manual_seed(0)
    return GesaForDocumentIE.from_luke_pretrained(
        str(tiny_luke_dir), ablation="luke", entity_rows=special_entity_rows(tokenizer, "tiny", count=3)
    )


def test_pieces_hold_whole_sentences_within_max_seq_length_and_every_word_maps_to_its_tokens(tokenizer):
    document = scirex_document(small_document())
    sentence_tokens = [len(tokenizer(" ".join(document.words[s:e]), add_special_tokens=False)["input_ids"])
                       for s, e in document.sentences]  # fmt: skip
    length = max(sentence_tokens) + 4  # every sentence fits a piece, the document does not
    processor = DocumentIEProcessor(tokenizer, max_seq_length=length)
    feature = processor.encode(document)
    assert all(len(piece) <= length for piece in feature["input_ids"]) and len(feature["input_ids"]) > 1
    starts = {start for start, _ in document.sentences}
    for index in range(1, len(document.words)):  # a new piece starts at a sentence
        if feature["word_piece"][index] != feature["word_piece"][index - 1]:
            assert index in starts
    cut = DocumentIEProcessor(tokenizer, max_seq_length=12).encode(document)  # sentences longer than a piece
    assert all(len(piece) <= 12 for piece in cut["input_ids"])
    mention_inside = {i for m in document.mentions for i in range(m.start + 1, m.end)}
    assert not any(cut["word_piece"][i] != cut["word_piece"][i - 1] for i in mention_inside)
    for index, word in enumerate(document.words):
        piece = feature["input_ids"][feature["word_piece"][index]]
        tokens = piece[feature["word_start"][index] : feature["word_end"][index] + 1]
        assert tokenizer.decode(tokens).strip() == word
    whole = DocumentIEProcessor(tokenizer, max_seq_length=512).encode(document)
    assert len(whole["input_ids"]) == 1  # a long backbone's setting: the whole document in one piece


def test_gold_columns_follow_scirex_reader(tokenizer):
    document = scirex_document(small_document())
    names, spans, kinds = training_clusters(document)
    # the sub-method no relation names joins its method; a salient entity without mentions keeps its relation type
    assert "Zorn_block" not in names and spans[names.index("Zorn_Net")] == [(2, 4), (10, 12), (14, 16), (19, 21)]
    assert kinds[names.index("Sharpness")] == 1 and kinds[names.index("Fog-2")] == 0
    feature = DocumentIEProcessor(tokenizer).encode(document)
    assert [BIO_LABELS[t] for t in feature["ner_labels"][2:5]] == ["B-Method", "I-Method", "O"]
    assert (
        feature["saliency_labels"][document.mentions.index(next(m for m in document.mentions if m.start == 30))] == 0
    )
    assert sum(feature["saliency_labels"]) == 10
    # candidates: every product of one cluster per type (2 materials x 2 metrics x 1 task x 1 method), the two gold
    # relations labelled 1
    assert len(feature["relation_clusters"]) == 4 and sum(feature["relation_labels"]) == 2
    batch = DocumentIEProcessor(tokenizer)([feature, feature])
    assert batch["mention_clusters"].shape == (2, 11, len(names)) and batch["word_positions"].shape == (2, 38)
    assert int(batch["word_positions"][1, 0]) == batch["input_ids"].size(1) + 1  # the second document's first piece


def test_bio_tags_round_trip_and_an_orphan_inside_tag_opens_a_mention():
    document = scirex_document(small_document())
    tags = bio_tags(len(document.words), document.mentions)
    assert [(m.start, m.end) for m in document.mentions] == [(s, e) for s, e, _ in bio_spans(tags, 100)]
    assert bio_spans([0, 2, 2, 0, 1, 4, 0], 10) == [(1, 3, 0), (4, 5, 0), (5, 6, 1)]


def reference_complete_linkage(probabilities, threshold):
    """The textbook loop: clusters as sets, the pair of clusters with the highest minimum pair probability merged
    while it is above the threshold."""
    clusters = [{i} for i in range(len(probabilities))]
    while len(clusters) > 1:
        best, pair = None, None
        for a, b in itertools.combinations(range(len(clusters)), 2):
            link = min(probabilities[i][j] for i in clusters[a] for j in clusters[b])
            if best is None or link > best:
                best, pair = link, (a, b)
        if best <= threshold:
            break
        a, b = pair
        clusters[a] |= clusters.pop(b)
    return sorted(sorted(c) for c in clusters)


@pytest.mark.parametrize("seed", range(5))
def test_complete_linkage_equals_the_textbook_loop(seed):
    rng = random.Random(seed)
    count = 9
    matrix = [[0.0] * count for _ in range(count)]
    for i, j in itertools.combinations(range(count), 2):
        matrix[i][j] = matrix[j][i] = rng.random()
    labels = complete_linkage(torch.tensor(matrix), 0.4)
    ours = sorted(sorted(i for i in range(count) if labels[i] == c) for c in set(labels))
    assert ours == reference_complete_linkage(matrix, 0.4)
    firsts = [labels.index(c) for c in sorted(set(labels))]
    assert firsts == sorted(firsts)  # numbered in reading order


def test_each_mention_entity_reads_its_own_tokens_as_lukes_tokenizer_places_them(model, tokenizer):
    document = scirex_document(small_document())
    processor = DocumentIEProcessor(tokenizer, max_seq_length=512)
    batch = processor([processor.encode(document)])
    spans = [[m.span for m in document.mentions]]
    entities, index = model.mention_entities(spans, batch["word_positions"], batch["word_end_positions"], 1,
                                             batch["input_ids"].size(1))  # fmt: skip
    text = " ".join(document.words)
    offsets = [sum(len(w) + 1 for w in document.words[:i]) for i in range(len(document.words))]
    luke = tokenizer(text, entity_spans=[(offsets[s], offsets[e - 1] + len(document.words[e - 1])) for s, e in spans[0]],
                     max_mention_length=30)  # fmt: skip
    assert luke["input_ids"] == batch["input_ids"][0].tolist()
    assert entities["entity_position_ids"][0].tolist() == luke["entity_position_ids"]
    assert index[0].tolist() == list(range(len(spans[0])))


def test_training_loss_falls_on_one_document_and_evaluation_predicts_every_part(model, tokenizer):
    document = scirex_document(small_document())
    processor = DocumentIEProcessor(tokenizer, max_seq_length=24)
    batch = processor([processor.encode(document)])
    model.train()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    losses = []
    for _ in range(25):
        loss = model(**batch).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(float(loss.detach()))
    assert losses[-1] < losses[0] / 2
    model.eval()
    with torch.no_grad():
        out = model(**batch)
    assert out.loss is not None and out.mentions.shape[-1] == 3 and out.relations.shape[-1] == 4
    kept = out.mentions[0][out.mentions[0][:, 0] >= 0]
    assert ((kept[:, 0] < kept[:, 1]) & (kept[:, 1] <= len(document.words))).all()
    clusters = out.mention_clusters[0][: len(kept)]
    assert (
        int(clusters.max()) < out.cluster_salient.size(1)
        and (out.cluster_salient[0][: int(clusters.max()) + 1] >= 0).all()
    )


def test_the_settings_are_checked_with_the_field_named():
    with pytest.raises(ValueError, match=r"config.document_ie\['mention_representation'\] must be 'entities' or"):
        DocumentIESettings(mention_representation="spans")
    with pytest.raises(ValueError, match=r"unknown settings \['threshold'\]"):
        DocumentIESettings.of(type("C", (), {"document_ie": {"threshold": 0.3}})())


def test_the_words_representation_reads_one_pass(tiny_luke_dir, tokenizer):
    model = GesaForDocumentIE.from_luke_pretrained(str(tiny_luke_dir), ablation="luke", entity_rows=[0, 1, 2],
                                                   document_ie={"mention_representation": "words"})  # fmt: skip
    calls = []
    model.gesa.register_forward_hook(lambda *args: calls.append(1))
    processor = DocumentIEProcessor(tokenizer)
    document = scirex_document(small_document())
    loss = model(**processor([processor.encode(document)])).loss
    assert torch.isfinite(loss) and len(calls) == 1


def test_the_long_variant_reads_the_document_in_one_pass_through_the_same_heads(model, tiny_luke_dir, tokenizer):
    """With a window covering the document (no random keys) the long backbone is LUKE: the same heads on it give the
    same loss and predictions as on LUKE; with a narrow window they differ (the pattern is read)."""
    document = scirex_document(small_document())
    processor = DocumentIEProcessor(tokenizer, max_seq_length=512)
    batch = processor([processor.encode(document)])
    assert batch["input_ids"].size(0) == 1  # one piece: the whole document

    def long_model(window):
        long = LongLukeForDocumentIE.from_luke_pretrained(str(tiny_luke_dir), entity_rows=[0, 1, 2],
                                                          attention_window=window, num_random_blocks=0)  # fmt: skip
        # the same heads and backbone; the long position tables hold more rows: their first ones are the model's
        same = dict(model.state_dict())
        for key, table in long.state_dict().items():
            if "position_embeddings" in key:
                same[key] = torch.cat([same[key], table[same[key].size(0) :]])
        long.load_state_dict(same)
        return long.eval()

    model.eval()
    with torch.no_grad():
        expected = model(**batch)
        covering = long_model(2 * batch["input_ids"].size(1))(**batch)
        narrow = long_model(4)(**batch)
    assert torch.allclose(covering.loss, expected.loss, atol=1e-5)
    assert torch.allclose(covering.ner_logits, expected.ner_logits, atol=1e-5)
    assert torch.equal(covering.mentions, expected.mentions)
    assert not torch.allclose(narrow.ner_logits, expected.ner_logits, atol=1e-3)


@pytest.mark.needs_shared
def test_a_real_paper_reads_in_512_token_pieces_and_trains(roberta_luke_dir):
    tokenizer = AutoTokenizer.from_pretrained(roberta_luke_dir)
    model = GesaForDocumentIE.from_luke_pretrained(str(roberta_luke_dir), ablation="luke", entity_rows=[0, 1, 2])
    document = read_scirex_file(SCIREX_DEV)[2]  # 4,508 words
    processor = DocumentIEProcessor(tokenizer, max_seq_length=512)
    feature = processor.encode(document)
    assert all(len(piece) <= 512 for piece in feature["input_ids"]) and len(feature["input_ids"]) >= 10
    assert len(feature["word_piece"]) == len(document.words) > 4000
    assert sum(feature["relation_labels"]) == len({r.names for r in document.relations})
    model.train()
    loss = model(**processor([feature])).loss
    loss.backward()
    assert torch.isfinite(loss)
