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
"""The entity-graph picture (``render_gesa.render_entity_graph``): a title (query, answer, score, window k of n), the
answer's nodes marked, a legend of the sentence tags and edge kinds, an arc per graph edge, and no blank band."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ElementTree

import pytest
from record_fixtures import features_of, project_records
from transformers import AutoTokenizer

from gesa.processing_gesa import EDGE_MATCH, EDGE_PLC, EDGE_SENT, GesaProcessor, build_entity_graph
from gesa.render_gesa import LEGEND_EDGES, render_entity_graph

SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def window(tiny_luke_dir):
    """The first window of record_sample_train #0's first query (the Cornwall lighthouse keeper), with its texts."""
    processor = GesaProcessor(AutoTokenizer.from_pretrained(tiny_luke_dir), max_seq_length=128, doc_stride=64)
    record = dict(project_records()[0], qas=project_records()[0]["qas"][:1])
    features = features_of(processor.encode_records([record]))
    assert len(features) > 1  # 128-token windows: the passage takes several
    return record, features[0], len(features)


def test_graph_has_a_title_a_legend_and_the_answer_marked(window):
    record, feature, windows = window
    query = record["qas"][0]["query"]
    svg = render_entity_graph(
        feature, feature["candidate_texts"], query=query, answer="Tobias Wren", score=0.4567, window=0, windows=windows
    )
    root = ElementTree.fromstring(svg)  # well-formed SVG
    texts = [element.text for element in root.iter(f"{SVG}text") if element.text]
    assert texts[0] == "Query: " + query.replace("@placeholder", "[PLC]")
    assert texts[1] == f"Entity graph: answer Tobias Wren (score 0.46), window 1 of {windows}"
    legend = texts[-4:]
    assert legend[0].startswith("Nodes: [PLC] (query) is the placeholder; S0, S1, ...") and "green" in legend[0]
    assert legend[1:] == [f"Edge {name}: {meaning}" for name, meaning in LEGEND_EDGES]
    # every node once, tagged with its sentence; the answer's nodes (and only they) in green bold, tagged "answer"
    words = [span for span in root.iter(f"{SVG}tspan") if span.get("class") == "displacy-word"]
    tags = [span.text for span in root.iter(f"{SVG}tspan") if span.get("class") == "displacy-tag"]
    assert [word.text for word in words] == ["[PLC]", *feature["candidate_texts"][1:]]
    for word, tag, sentence in zip(words[1:], tags[1:], feature["entity_sentence_ids"][1:], strict=True):
        is_answer = word.text == "Tobias Wren"
        assert tag == f"S{sentence}" + (" answer" if is_answer else "")
        assert (word.get("font-weight") == "bold") == is_answer
    assert tags[0] == "query" and any(tag.endswith("answer") for tag in tags)


def test_graph_draws_one_arc_per_edge_and_no_blank_band(window):
    _, feature, _ = window
    svg = render_entity_graph(feature, feature["candidate_texts"])
    graph = build_entity_graph(
        feature["entity_sentence_ids"], feature["entity_string_ids"], feature["placeholder_entity_mask"]
    )
    count = len(feature["entity_ids"])
    expected = {EDGE_PLC: 0, EDGE_SENT: 0, EDGE_MATCH: 0}
    for i in range(count):
        for j in range(i + 1, count):
            if int(graph[i, j]) in expected:
                expected[int(graph[i, j])] += 1
    root = ElementTree.fromstring(svg)
    labels = [path.text for path in root.iter(f"{SVG}textPath")]
    assert {name: labels.count(name) for name in ("PLC", "SENT", "MATCH")} == {
        "PLC": expected[EDGE_PLC], "SENT": expected[EDGE_SENT], "MATCH": expected[EDGE_MATCH]
    }  # fmt: skip
    assert expected[EDGE_PLC] == count - 1 and expected[EDGE_SENT] > 0
    # the graph's viewport starts just above its highest arc: no band of empty space above the arcs
    (inner,) = [element for element in root if element.tag == f"{SVG}svg"]
    top = float(inner.get("viewBox").split()[1])
    arc_tops = [
        min(float(y) for y in re.findall(r"[\d.]+,([\d.]+)", path.get("d")))
        for path in root.iter(f"{SVG}path")
        if path.get("class") == "displacy-arc"
    ]
    assert top > 0 and 0 < min(arc_tops) - top <= 30
    assert not [t for t in root.iter(f"{SVG}text") if t.text and t.text.startswith(("Query:", "Entity graph:"))]
