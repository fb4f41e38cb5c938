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
"""The context graph of thesis 3.1 on a hand-made record: each of rules 1-12 joins exactly the pairs it names."""

from __future__ import annotations

import itertools

import pytest

from gesa.graph_context import (
    CANDIDATE,
    DOCUMENT,
    ENTITY,
    SENTENCE,
    GraphRules,
    build_context_graph,
    split_sentences,
)

# two documents; candidates "paris" and "lyon"; subject "vel"
SUPPORTS = [
    "Vel is a town near Paris. It has a market.",  # entities: vel, paris
    "Paris is large. Lyon is smaller than Paris.",  # entities: paris, lyon, paris
]
CANDIDATES = ["paris", "lyon"]
SUBJECT = "vel"


def graph(**rules):
    return build_context_graph(SUPPORTS, CANDIDATES, SUBJECT, GraphRules(**rules))


def named(g):
    """Readable node names: D0, E<doc>:<string>#k, C:<string>, S<doc>.<k>."""
    names, counts = [], {}
    for node in g.nodes:
        if node.kind == DOCUMENT:
            names.append(f"D{node.source}")
        elif node.kind == ENTITY:
            key = (node.source, node.string)
            counts[key] = counts.get(key, 0) + 1
            names.append(f"E{node.source}:{node.string}#{counts[key]}")
        elif node.kind == CANDIDATE:
            names.append(f"C:{node.string}")
        else:
            key = ("s", node.source)
            counts[key] = counts.get(key, 0) + 1
            names.append(f"S{node.source}.{counts[key]}")
    return names


def pairs_of(g, kind):
    names = named(g)
    return {frozenset((names[i], names[j])) for i, j, k in g.edges if g.kind_of(i, j) == kind}


def pairs(*items):
    return {frozenset(item) for item in items}


def test_nodes_are_documents_entity_mentions_and_candidates():
    g = graph()
    assert named(g) == ["D0", "D1", "E0:vel#1", "E0:paris#1", "E1:paris#1", "E1:lyon#1", "E1:paris#2", "C:paris",
                        "C:lyon"]  # fmt: skip
    entity = g.nodes[3]
    assert SUPPORTS[entity.source][entity.start : entity.end] == "Paris"
    assert g.edges == sorted(set(g.edges)) and all(i < j for i, j, _ in g.edges)


def test_rule_1_documents_join_the_entities_whose_text_they_hold():
    assert pairs_of(graph(), "document_entity") == pairs(
        ("D0", "E0:vel#1"), ("D0", "E0:paris#1"), ("D0", "E1:paris#1"), ("D0", "E1:paris#2"),
        ("D1", "E0:paris#1"), ("D1", "E1:paris#1"), ("D1", "E1:lyon#1"), ("D1", "E1:paris#2"),
    )  # fmt: skip


def test_rule_2_documents_join_the_candidates_they_mention():
    assert pairs_of(graph(), "document_candidate") == pairs(("D0", "C:paris"), ("D1", "C:paris"), ("D1", "C:lyon"))


def test_rule_3_co_mentions_join_entities_of_the_same_text_across_documents():
    assert pairs_of(graph(), "co_mention") == pairs(
        ("E0:paris#1", "E1:paris#1"), ("E0:paris#1", "E1:paris#2"), ("E1:paris#1", "E1:paris#2")
    )


def test_rule_4_entities_join_the_candidate_they_mention():
    assert pairs_of(graph(), "entity_candidate") == pairs(
        ("E0:paris#1", "C:paris"), ("E1:paris#1", "C:paris"), ("E1:paris#2", "C:paris"), ("E1:lyon#1", "C:lyon")
    )


def test_rule_5_every_candidate_pair_is_joined():
    g = build_context_graph(SUPPORTS, ["paris", "lyon", "rome"], SUBJECT)
    assert pairs_of(g, "candidate_candidate") == pairs(("C:paris", "C:lyon"), ("C:paris", "C:rome"),
                                                       ("C:lyon", "C:rome"))  # fmt: skip


def test_rule_6_co_document_is_off_by_default_and_joins_same_document_entities():
    assert pairs_of(graph(), "co_document") == set()
    # same-text pairs are co-mentions already (rule 3 comes first): only the other same-document pairs
    assert pairs_of(graph(co_document=True), "co_document") == pairs(
        ("E0:vel#1", "E0:paris#1"), ("E1:paris#1", "E1:lyon#1"), ("E1:lyon#1", "E1:paris#2")
    )


def test_rule_7_complement_joins_the_entity_pairs_left_unconnected():
    assert pairs_of(graph(), "complement") == set()
    g = graph(complement=True)
    names = named(g)
    entities = [i for i, node in enumerate(g.nodes) if node.kind == ENTITY]
    assert all(g.kind_of(i, j) is not None for i, j in itertools.combinations(entities, 2))
    assert pairs_of(g, "complement") == pairs(
        ("E0:vel#1", "E0:paris#1"), ("E0:vel#1", "E1:paris#1"), ("E0:vel#1", "E1:lyon#1"), ("E0:vel#1", "E1:paris#2"),
        ("E0:paris#1", "E1:lyon#1"), ("E1:paris#1", "E1:lyon#1"), ("E1:lyon#1", "E1:paris#2"),
    )  # fmt: skip
    assert all(names[i].startswith("E") and names[j].startswith("E") for i, j, k in g.edges
               if g.kind_of(i, j) == "complement")  # fmt: skip


def test_rule_8_unconnected_makes_the_graph_complete():
    g = graph(unconnected=True)
    n = len(g.nodes)
    assert len(g.edges) == n * (n - 1) // 2
    assert pairs(("D0", "D1"), ("D0", "C:lyon"), ("E0:vel#1", "C:paris")) <= pairs_of(g, "unconnected")
    assert pairs_of(graph(), "unconnected") == set()


def test_sentences_split_at_sentence_ends():
    assert [SUPPORTS[1][a:b] for a, b in split_sentences(SUPPORTS[1])] == ["Paris is large.",
                                                                           "Lyon is smaller than Paris."]  # fmt: skip


def test_rule_9_sentences_join_their_document():
    g = graph(sentences="all")
    assert named(g)[-4:] == ["S0.1", "S0.2", "S1.1", "S1.2"]
    assert pairs_of(g, "sentence_document") == pairs(("S0.1", "D0"), ("S0.2", "D0"), ("S1.1", "D1"), ("S1.2", "D1"))


def test_restricted_sentences_keep_only_those_holding_an_entity():
    g = graph(sentences="restricted")
    assert [named(g)[i] for i in g.indices(SENTENCE)] == ["S0.1", "S1.1", "S1.2"]


def test_rule_10_sentences_join_every_entity_whose_text_they_hold_in_any_document():
    assert pairs_of(graph(sentences="all"), "sentence_entity") == pairs(
        ("S0.1", "E0:vel#1"),
        *(("S0.1", e) for e in ("E0:paris#1", "E1:paris#1", "E1:paris#2")),
        *(("S1.1", e) for e in ("E0:paris#1", "E1:paris#1", "E1:paris#2")),
        *(("S1.2", e) for e in ("E0:paris#1", "E1:paris#1", "E1:paris#2", "E1:lyon#1")),
    )


def test_rule_11_sentences_join_the_next_sentence_of_their_document():
    assert pairs_of(graph(sentences="all"), "sentence_sequence") == pairs(("S0.1", "S0.2"), ("S1.1", "S1.2"))


def test_rule_12_sentences_join_other_documents_whose_entities_they_mention():
    # every sentence mentioning paris reaches the other document (both hold a paris); S0.2 mentions nothing
    assert pairs_of(graph(sentences="all"), "sentence_cross_document") == pairs(
        ("S0.1", "D1"), ("S1.1", "D0"), ("S1.2", "D0")
    )


def test_no_sentence_nodes_without_the_switch_and_bad_switches_are_refused():
    assert graph().indices(SENTENCE) == []
    with pytest.raises(ValueError, match="sentences must be one of"):
        GraphRules(sentences="some")
    with pytest.raises(ValueError, match="complement must be True or False"):
        GraphRules(complement="yes")


def test_max_entities_keeps_the_first_mentions_in_reading_order():
    g = build_context_graph(SUPPORTS, CANDIDATES, SUBJECT, max_entities=2)
    assert named(g) == ["D0", "D1", "E0:vel#1", "E0:paris#1", "C:paris", "C:lyon"]


def test_directed_edges_carry_every_edge_both_ways():
    g = graph()
    senders, receivers, kinds = g.directed_edges()
    assert len(senders) == 2 * len(g.edges)
    assert set(zip(senders, receivers, strict=True)) == {(i, j) for i, j, _ in g.edges} | {
        (j, i) for i, j, _ in g.edges
    }
    assert kinds[::2] == [kind for _, _, kind in g.edges]


def test_rule_3_can_be_switched_off():
    g = graph(co_mention=False)
    assert pairs_of(g, "co_mention") == set()
    assert pairs_of(g, "entity_candidate") == pairs_of(graph(), "entity_candidate")


def test_a_medhop_query_drug_is_found_in_the_supports_without_its_question_mark():
    """MedHop asks ``interacts_with DB01171?``: the drug's mentions (``( DB01171 )``) are entity nodes, as a WikiHop
    subject's are; the query text keeps its question mark."""
    from gesa.graph_context import ENTITY, GraphRules
    from gesa.records_wikihop import to_wikihop_examples

    record = {"id": "MH_dev_x", "query": "interacts_with DB01171?", "candidates": ["DB00786", "DB04844"],
              "supports": ["[ Moclobemide ( DB01171 ) , the first P21397 -inhibitor : really something new ? ] .",
                           "DB04844 binds P21397 in vitro ."], "answer": "DB04844"}  # fmt: skip
    example = to_wikihop_examples([record])[0]
    assert example.subject == "DB01171?" and example.subject_mention == "DB01171"
    graph = build_context_graph(example.supports, example.candidates, example.subject_mention, GraphRules())
    drug = [node for node in graph.nodes if node.kind == ENTITY and node.string == "db01171"]
    assert len(drug) == 1 and record["supports"][0][drug[0].start : drug[0].end] == "DB01171"
