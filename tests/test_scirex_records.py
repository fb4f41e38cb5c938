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
"""SciREX's release format read into documents (words, sentences, typed mentions, clusters with saliency,
relations), the official gold salient clusters, and one clear error per bad document; the real sample read whole."""

import copy
import json

import pytest
from scirex_fixtures import SCIREX_DEV, SCIREX_TRAIN, small_document, write_jsonl

from gesa.inputs_gesa import InputError
from gesa.records_scirex import ENTITY_TYPES, Mention, read_scirex_file, scirex_document


def test_a_release_record_becomes_words_mentions_clusters_and_relations(tmp_path):
    path = write_jsonl(tmp_path / "docs.jsonl", [small_document("a"), small_document("b")])
    first, second = read_scirex_file(path)
    assert (first.doc_id, second.doc_id, len(first.words)) == ("a", "b", 38)
    assert first.sentences[1] == (8, 19) and first.sections == ((0, 8), (8, 38))
    assert first.mentions[0] == Mention(2, 4, "Method") and first.text(first.mentions[0].span) == "Zorn Net"
    assert [m.type for m in first.mentions].count("Material") == 3
    salient = {c.name for c in first.clusters if c.salient}
    assert "Sharpness" in salient and "0" not in salient  # a salient entity may have no mention in the text
    assert [c.spans for c in first.clusters if not c.salient] == [((30, 31),)]
    assert first.relations[0].names == ("Hazy-5", "PSNR", "Image_Dehazing", "Zorn_Net")
    assert first.relations[0].as_dict()["Method"] == "Zorn_Net" and ENTITY_TYPES[0] == "Material"
    assert first.cluster_type("PSNR") == "Metric" and first.cluster_type("Zorn_block") is None


def test_the_gold_salient_clusters_merge_sub_methods_and_keep_the_entities_relations_name(tmp_path):
    document = scirex_document(small_document())
    gold = document.gold_salient_clusters()
    # SciREX's merge_method_subrelations: the method takes its sub-method's mentions; the sub-method, named by no
    # relation, is dropped; an entity with no mention stays (it counts in the recall)
    assert gold["Zorn_Net"] == [(2, 4), (10, 12), (14, 16), (19, 21)]
    assert set(gold) == {"Zorn_Net", "Image_Dehazing", "Hazy-5", "Fog-2", "PSNR", "Sharpness"}
    assert gold["Sharpness"] == []


def test_a_document_without_annotations_reads_as_unlabelled(tmp_path):
    row = {key: small_document()[key] for key in ("doc_id", "words", "sentences", "sections")}
    document = scirex_document(row)
    assert not document.labelled and document.mentions == () and document.relations == ()


def _broken(change):
    row = copy.deepcopy(small_document("broken"))
    change(row)
    return row


BAD_DOCUMENTS = {
    "span past the words": (lambda r: r["ner"].append([37, 40, "Task"]), r"ner\[11\] = \[37, 40\] is not a span of"),
    "empty document": (lambda r: r.update(words=[]), r"is empty: field 'words' holds no word"),
    "relation names an absent cluster": (
        lambda r: r["n_ary_relations"][1].update(Method="Ghost"),
        r"n_ary_relations\[1\] names the Method 'Ghost', a cluster 'coref' does not hold",
    ),
    "unknown type": (lambda r: r["ner"].__setitem__(0, [2, 4, "Model"]), r"type one of \['Material'"),
    "coref span not a mention": (lambda r: r["coref"]["PSNR"].append([36, 37]), r"\[36, 37\] is not a mention of 'ner'"),
    "sentences leave a gap": (lambda r: r["sentences"].__setitem__(1, [9, 19]), r"sentences\[1\] = \[9, 19\] starts"),
    "overlapping mentions": (lambda r: r["ner"].append([3, 5, "Task"]), r"overlapping mentions \[2, 4\] and \[3, 5\]"),
    "labels in part": (lambda r: r.pop("coref"), r"has ner, n_ary_relations but no coref"),
    "sub-method absent": (
        lambda r: r["method_subrelations"]["Zorn_Net"].append([[0, 2], "Zo"]),
        r"names 'Zo', a cluster 'coref' does not hold",
    ),
    "blank word": (lambda r: r["words"].__setitem__(4, " "), r"words\[4\] is blank"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(BAD_DOCUMENTS))
def test_a_bad_document_is_one_error_naming_the_file_line_document_and_field(tmp_path, case):
    change, message = BAD_DOCUMENTS[case]
    path = write_jsonl(tmp_path / "docs.jsonl", [small_document("good"), _broken(change)])
    with pytest.raises(InputError, match=message) as caught:
        read_scirex_file(path, where=f"--train_file {path}")
    text = str(caught.value)
    assert text.startswith(f"--train_file {path}, line 2: SciREX document 'broken': "), text
    assert len(text.splitlines()) == 1


def test_a_document_longer_than_the_configured_limit_is_refused_with_the_fix(tmp_path):
    path = write_jsonl(tmp_path / "docs.jsonl", [small_document()])
    assert len(read_scirex_file(path, max_words=38)[0].words) == 38
    with pytest.raises(InputError, match=r"has 38 words, more than the configured limit of 37; raise the limit"):
        read_scirex_file(path, max_words=37)


def test_a_doc_id_used_twice_is_refused(tmp_path):
    path = write_jsonl(tmp_path / "docs.jsonl", [small_document("x"), small_document("x")])
    with pytest.raises(InputError, match=r"line 2: SciREX document 'x': doc_id is used twice \(first at line 1\)"):
        read_scirex_file(path)


def test_a_line_that_is_not_json_names_its_line(tmp_path):
    path = tmp_path / "docs.jsonl"
    path.write_text(json.dumps(small_document()) + "\n{not json\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"docs.jsonl, line 2: not valid JSON"):
        read_scirex_file(path)


@pytest.mark.needs_shared
def test_the_real_sample_reads_whole_at_real_lengths():
    documents = read_scirex_file(SCIREX_TRAIN) + read_scirex_file(SCIREX_DEV)
    assert len(documents) == 40
    lengths = [len(document.words) for document in documents]
    assert 5000 < sum(lengths) / len(lengths) < 7000 and max(lengths) > 12000
    for document in documents:
        gold = document.gold_salient_clusters()
        assert all(name in gold for relation in document.relations for name in relation.names)
        assert sum(len(m) for m in (document.mentions,)) > 100
