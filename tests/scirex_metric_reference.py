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
"""A plain reading of SciREX's ``scirex_relation_evaluate.py`` (and the functions it imports) and of allennlp's
``SpanBasedF1Measure``, written out step by step in their order: the gold documents mutated in place by the method
merge, the predicted-to-gold span map, the cluster intersection table, the per-(types, document) relation rows and
pandas' mean over the rows. It imports nothing from the metric module it checks (training/metrics/scirex) nor from
the package. One choice where the official code has none: ties between gold clusters go to the first in the gold
file's order (the official script's order is Python's set order)."""

from __future__ import annotations

import copy
from itertools import combinations

import pandas as pd

USED_ENTITIES = ["Material", "Metric", "Task", "Method"]


def ref_merge_method_subrelations(doc):
    """In place, as the official helper: sub-methods' mentions appended to the method, then only the entities the
    relations name (here in the order they appear in ``coref``, for the tie rule above)."""
    true_entities = set(r[e] for r in doc["n_ary_relations"] for e in USED_ENTITIES)
    for m, subnames in doc["method_subrelations"].items():
        for sm in subnames:
            if m != sm[1]:
                doc["coref"][m] += doc["coref"][sm[1]]
    new_clusters = {}
    for e in doc["coref"]:
        if e in true_entities:
            new_clusters[e] = list(set(tuple(x) for x in doc["coref"][e]))
    del doc["method_subrelations"]
    doc["coref"] = new_clusters


def ref_iou(a, b):
    return (min(a[1], b[1]) - max(a[0], b[0])) / (max(a[1], b[1]) - min(a[0], b[0]))


def ref_span_map(predicted_spans, gold_spans):
    out = {}
    for p in predicted_spans:
        out[(p[0], p[1])] = (p[0], p[1])
        for g in gold_spans:
            if ref_iou((p[0], p[1]), (g[0], g[1])) > 0.5:
                out[(p[0], p[1])] = (g[0], g[1])
                break
    return out


def ref_match_clusters(predicted_clusters, gold_clusters, span_map):
    predicted = {k: set(span_map[tuple(x)] for x in v) for k, v in predicted_clusters.items()}
    gold = {k: set(tuple(x) for x in v) for k, v in gold_clusters.items()}
    table = {}
    for k, p in predicted.items():
        table[k] = {}
        for j, g in gold.items():
            score = len(p & g) / len(p)
            if score > 0:
                table[k][j] = score
    matched = {}
    for k in table:
        if len(table[k]) > 0:
            g, v = max(list(table[k].items()), key=lambda x: x[1])
            if v > 0.5:
                matched[k] = g
    metrics = {
        "p": len(matched) / (len(predicted_clusters) + 1e-7),
        "r": len(set(matched.values())) / (len(gold_clusters) + 1e-7),
    }
    metrics["f1"] = 2 * metrics["p"] * metrics["r"] / (metrics["p"] + metrics["r"] + 1e-7)
    return metrics, matched


def ref_mentions(gold_data, ner_rows):
    """allennlp's SpanBasedF1Measure with exact typed spans: per-label true/false positives and false negatives
    counted with a list of the gold spans, each found one removed."""
    tp, fp, fn = {}, {}, {}
    for doc in gold_data:
        predicted = [tuple(x[:3]) for x in ner_rows[doc["doc_id"]]["ner"]]
        gold = [tuple(x[:3]) for x in doc["ner"]]
        for span in set(predicted):
            if span in gold:
                tp[span[2]] = tp.get(span[2], 0) + 1
                gold.remove(span)
            else:
                fp[span[2]] = fp.get(span[2], 0) + 1
        for span in gold:
            fn[span[2]] = fn.get(span[2], 0) + 1

    def prf(t, f, n):
        p = t / (t + f + 1e-13)
        r = t / (t + n + 1e-13)
        return p, r, 2 * p * r / (p + r + 1e-13)

    tags = set(tp) | set(fp) | set(fn)
    out = dict(zip(("mention_precision", "mention_recall", "mention_f1"),
                   prf(sum(tp.values()), sum(fp.values()), sum(fn.values())), strict=True))  # fmt: skip
    per = [prf(tp.get(t, 0), fp.get(t, 0), fn.get(t, 0))[2] for t in tags]
    out["mention_macro_f1"] = sum(per) / len(per) if per else 0.0
    return out


def ref_scirex(gold_rows, ner_rows, cluster_rows, relation_rows):
    """The official ``main`` on rows (lists of dicts), returning the printed numbers by name."""
    gold_data = copy.deepcopy(gold_rows)
    for d in gold_data:
        ref_merge_method_subrelations(d)
        d["clusters"] = d["coref"]
    predicted_ner = {x["doc_id"]: x for x in copy.deepcopy(ner_rows)}
    predicted_clusters = {x["doc_id"]: x for x in copy.deepcopy(cluster_rows)}
    for doc in predicted_clusters.values():
        if "clusters" not in doc:
            ref_merge_method_subrelations(doc)
            doc["clusters"] = {x: v for x, v in doc["coref"].items() if len(v) > 0}
    predicted_relations = {x["doc_id"]: x for x in copy.deepcopy(relation_rows)}
    out = ref_mentions(gold_rows, predicted_ner)

    span_maps = {doc["doc_id"]: ref_span_map(predicted_ner[doc["doc_id"]]["ner"], doc["ner"]) for doc in gold_data}
    rows, mappings = [], {}
    for doc in gold_data:
        metrics, mapping = ref_match_clusters(predicted_clusters[doc["doc_id"]]["clusters"], doc["coref"],
                                              span_maps[doc["doc_id"]])  # fmt: skip
        mappings[doc["doc_id"]] = mapping
        rows.append(metrics)
    means = pd.DataFrame(rows).describe().loc["mean"]
    out.update(cluster_precision=means["p"], cluster_recall=means["r"], cluster_f1=means["f1"])

    for n in [2, 4]:
        rows = []
        for types in combinations(USED_ENTITIES, n):
            for doc in gold_data:
                mapping = mappings[doc["doc_id"]]
                relations = list(set([
                    tuple([mapping.get(v, v) for v in x[0]])
                    for x in predicted_relations[doc["doc_id"]]["predicted_relations"]
                    if x[2] == 1
                ]))  # fmt: skip
                relations = [dict(zip(USED_ENTITIES, x, strict=True)) for x in relations]
                relations = set([tuple((t, x[t]) for t in types) for x in relations])
                gold_relations = [tuple((t, x[t]) for t in types) for x in doc["n_ary_relations"]]
                gold_relations = set([x for x in gold_relations if all(len(doc["clusters"][y[1]]) > 0 for y in x)])
                matched = relations & gold_relations
                metrics = {
                    "p": len(matched) / (len(relations) + 1e-7),
                    "r": len(matched) / (len(gold_relations) + 1e-7),
                }
                metrics["f1"] = 2 * metrics["p"] * metrics["r"] / (metrics["p"] + metrics["r"] + 1e-7)
                if len(gold_relations) > 0:
                    rows.append(metrics)
        means = pd.DataFrame(rows).describe().loc["mean"]
        out.update({f"relation_n{n}_precision": means["p"], f"relation_n{n}_recall": means["r"],
                    f"relation_n{n}_f1": means["f1"]})  # fmt: skip
    return out
