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
"""SciREX's end-to-end metrics (Jain et al. 2020): mention identification, salient clusters and N-ary relations
(n = 2 and n = 4), on the three prediction files SciREX's ``scirex_relation_evaluate.py`` reads.

The files (JSON lines, one object per document, every gold document present):

- ner: ``{"doc_id", "ner": [[start, end, type], ...]}`` (word spans, end exclusive; ``words`` etc. may come too);
- clusters: ``{"doc_id", "clusters": {name: [[start, end], ...]}}`` (every span one of the ner file's spans), or a
  release-format record (then its ``coref``, merged as the gold is, its empty clusters dropped: the official rule);
- relations: ``{"doc_id", "predicted_relations": [[[material, metric, task, method], score, label], ...]}`` (names
  of the clusters file's clusters, ``null`` for a missing type; ``label`` 1 = predicted).

What is computed, as the official code does (``scirex/evaluation_scripts/scirex_relation_evaluate.py`` and what it
imports; read, not copied):

- gold: each method takes its sub-methods' mentions (``method_subrelations``), then only the entities some relation
  names are kept (``merge_method_subrelations``);
- mentions: each predicted span maps to the first gold span (gold ``ner`` order) whose IoU ``(min end - max start) /
  (max end - min start)`` is > 0.5, else to itself (``map_predicted_spans_to_gold``);
- salient clusters, per document: a predicted cluster's spans mapped, as a set ``P``; its score with a gold cluster
  ``G`` is ``|P & G| / |P|``; it matches the best gold cluster when that score is > 0.5 (ties: the first in the gold
  file's order; the official script's order is Python's set order); precision = matched / predicted clusters, recall
  = distinct gold clusters matched / gold clusters (those without mentions included), F1 = 2PR / (P + R), each
  denominator + 1e-7; the printed numbers are means over the gold documents;
- relations, for n in (2, 4): for every n-combination of the types (``Material, Metric, Task, Method``) and every
  gold document: the predicted relations with label 1, their names mapped to the matched gold names (an unmatched
  name kept), projected onto the n types, as a set; the gold relations projected likewise, keeping those whose n
  clusters all have a mention; P = |matched| / (|predicted| + 1e-7), R = |matched| / (|gold| + 1e-7), F1 = 2PR / (P
  + R + 1e-7); only the pairs (types, document) with a gold relation count; the printed numbers are means over them;
- mention identification (not printed by that script; SciREX's training metric with its default ``em=false``: the
  allennlp ``SpanBasedF1Measure``): predicted ``(start, end, type)`` equal to a gold one, micro P/R/F1 over all
  documents (``tp / (tp + fp + 1e-13)``, ...), and per type, with their mean (``mention_macro_f1``: seed 002's
  Table 3 header says macro-F1).

Scores are fractions of 1 (the official scale). Where the official script would stop on a Python error (a gold
document missing from a prediction file, a cluster span the ner file does not hold, a cluster without spans),
this module raises one ``ValueError`` naming the file, the document and the fix. Where the official script has no
number (no gold relation with all mentions in any document: pandas describes an empty table), the scores are 0 and
``relation_n{n}_count`` says 0.

Use as an ``evaluate`` module (each document's rows as JSON strings), as plain functions (``scirex_scores`` on rows,
``evaluate_files`` on the four files), or from the command line with the official script's flags::

    python scirex.py --gold-file test.jsonl --ner-file ner.jsonl --clusters-file clusters.jsonl \\
        --relations-file relations.jsonl
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable, Mapping, Sequence
from itertools import combinations
from pathlib import Path
from typing import Any

import datasets
import evaluate

ENTITY_TYPES = ("Material", "Metric", "Task", "Method")
EPSILON = 1e-7  # the official script's denominators
SPAN_EPSILON = 1e-13  # allennlp's SpanBasedF1Measure's

_CITATION = """\
@inproceedings{jain2020scirex,
  title={{SciREX}: A Challenge Dataset for Document-Level Information Extraction},
  author={Jain, Sarthak and van Zuylen, Madeleine and Hajishirzi, Hannaneh and Beltagy, Iz},
  booktitle={ACL}, pages={7506--7516}, year={2020}
}
"""
_DESCRIPTION = (
    "SciREX end-to-end metrics: mention P/R/F1 (exact typed spans, micro), salient-cluster P/R/F1 and N-ary relation "
    "P/R/F1 for n=2 and n=4 (means over documents), as SciREX's scirex_relation_evaluate.py computes them."
)
_KWARGS_DESCRIPTION = """
Args:
    predictions: one dict per document: 'doc_id', and the JSON strings 'ner' (its ner-file row), 'clusters' (its
        clusters-file row) and 'relations' (its relations-file row).
    references: one dict per gold document: 'doc_id' and 'document', its release-format record as a JSON string.
Returns:
    mention_precision / _recall / _f1 / _macro_f1, cluster_precision / _recall / _f1, relation_n2_precision /
    _recall / _f1 / _count, relation_n4_... (fractions of 1).
"""


# ----------------------------------------------------------------------------------------------- reading


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """The objects of a JSON-lines file (blank lines skipped); a bad line is a ``ValueError`` naming it."""
    rows = []
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as error:
            raise ValueError(f"{path}, line {number}: not valid JSON ({error.msg}); one object per line") from None
        if not isinstance(row, dict) or "doc_id" not in row:
            raise ValueError(f"{path}, line {number}: every line is an object with a 'doc_id'")
        rows.append(row)
    return rows


def write_jsonl(path: str | Path, rows: Iterable[Mapping[str, Any]]) -> Path:
    """Rows as JSON lines (the official files' shape); returns the path."""
    path = Path(path)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def _by_id(rows: Iterable[Mapping[str, Any]], name: str) -> dict[str, Mapping[str, Any]]:
    out: dict[str, Mapping[str, Any]] = {}
    for row in rows:
        if row["doc_id"] in out:
            raise ValueError(f"the {name} file holds document {row['doc_id']!r} twice; give one line per document")
        out[row["doc_id"]] = row
    return out


def _row_of(rows: Mapping[str, Mapping[str, Any]], doc_id: str, name: str, empty: str) -> Mapping[str, Any]:
    if doc_id not in rows:
        raise ValueError(
            f"the {name} file has no line for gold document {doc_id!r} (the official script stops on it); write one "
            f"for every gold document, e.g. {empty}"
        )
    return rows[doc_id]


# ----------------------------------------------------------------------------------------------- the gold


def merged_clusters(document: Mapping[str, Any]) -> dict[str, list[tuple[int, int]]]:
    """A release record's salient clusters as the official evaluation reads them: each method takes its sub-methods'
    mentions (in ``method_subrelations`` order), then the entities some relation names, each with its distinct spans
    (sorted)."""
    coref = {name: [tuple(span) for span in spans] for name, spans in document.get("coref", {}).items()}
    for method, subs in (document.get("method_subrelations") or {}).items():
        for _, name in subs:
            if name != method:
                coref[method] = coref[method] + coref[name]
    named = {relation[kind] for relation in document.get("n_ary_relations", []) for kind in ENTITY_TYPES}
    return {name: sorted(set(coref[name])) for name in coref if name in named}


def span_iou(first: Sequence[int], second: Sequence[int]) -> float:
    """``(min end - max start) / (max end - min start)`` of two end-exclusive spans (negative when apart)."""
    return (min(first[1], second[1]) - max(first[0], second[0])) / (
        max(first[1], second[1]) - min(first[0], second[0])
    )


def map_spans_to_gold(predicted: Iterable[Sequence[Any]], gold: Sequence[Sequence[Any]]) -> dict[tuple, tuple]:
    """Each predicted span -> the first gold span (in ``gold``'s order) with IoU > 0.5, else itself."""
    mapping = {}
    for span in predicted:
        key = (span[0], span[1])
        mapping[key] = next(((g[0], g[1]) for g in gold if span_iou(key, g) > 0.5), key)
    return mapping


# ----------------------------------------------------------------------------------------------- the three groups


def _prf(tp: int, fp: int, fn: int) -> tuple[float, float, float]:
    precision = tp / (tp + fp + SPAN_EPSILON)
    recall = tp / (tp + fn + SPAN_EPSILON)
    return precision, recall, 2 * precision * recall / (precision + recall + SPAN_EPSILON)


def mention_scores(gold: Sequence[Mapping[str, Any]], ner_rows: Mapping[str, Mapping[str, Any]]) -> dict[str, float]:
    """Exact typed mention P/R/F1, micro over the documents, and per type (allennlp's ``SpanBasedF1Measure``)."""
    counts = {kind: [0, 0, 0] for kind in ENTITY_TYPES}  # tp, fp, fn
    for document in gold:
        predicted = {tuple(m[:3]) for m in _row_of(ner_rows, document["doc_id"], "ner", '{"doc_id": ..., "ner": []}')
                     ["ner"]}  # fmt: skip
        expected = {tuple(m[:3]) for m in document["ner"]}
        for kind in {m[2] for m in predicted | expected}:
            if kind not in counts:
                counts[kind] = [0, 0, 0]
            own, theirs = {m for m in predicted if m[2] == kind}, {m for m in expected if m[2] == kind}
            counts[kind][0] += len(own & theirs)
            counts[kind][1] += len(own - theirs)
            counts[kind][2] += len(theirs - own)
    precision, recall, f1 = _prf(*(sum(c[i] for c in counts.values()) for i in range(3)))
    scores = {"mention_precision": precision, "mention_recall": recall, "mention_f1": f1}
    seen = [kind for kind, c in counts.items() if any(c)]
    for kind in seen:
        scores[f"mention_f1_{kind}"] = _prf(*counts[kind])[2]
    scores["mention_macro_f1"] = sum(scores[f"mention_f1_{kind}"] for kind in seen) / len(seen) if seen else 0.0
    return scores


def predicted_clusters(row: Mapping[str, Any]) -> dict[str, list[tuple[int, int]]]:
    """A clusters-file row's clusters: its ``clusters``, or a release record's merged ``coref`` without the empty
    ones (the official rule for a gold file given as predictions)."""
    if "clusters" in row:
        return {str(name): [tuple(span) for span in spans] for name, spans in row["clusters"].items()}
    return {name: spans for name, spans in merged_clusters(row).items() if spans}


def cluster_scores(
    gold: Sequence[Mapping[str, Any]],
    cluster_rows: Mapping[str, Mapping[str, Any]],
    span_maps: Mapping[str, Mapping[tuple, tuple]],
) -> tuple[dict[str, float], dict[str, dict[str, str]]]:
    """Salient-cluster P/R/F1 (means over the gold documents) and, per document, predicted cluster -> gold name."""
    totals = {"cluster_precision": 0.0, "cluster_recall": 0.0, "cluster_f1": 0.0}
    mappings = {}
    for document in gold:
        doc_id = document["doc_id"]
        row = _row_of(cluster_rows, doc_id, "clusters", '{"doc_id": ..., "clusters": {}}')
        gold_clusters = {name: set(spans) for name, spans in merged_clusters(document).items()}
        span_map = span_maps[doc_id]
        matched = {}
        clusters = predicted_clusters(row)
        for name, spans in clusters.items():
            if not spans:
                raise ValueError(f"document {doc_id!r}: predicted cluster {name!r} has no span (the official script "
                                 "divides by its size); drop it")  # fmt: skip
            missing = [list(span) for span in spans if span not in span_map]
            if missing:
                raise ValueError(
                    f"document {doc_id!r}: predicted cluster {name!r} holds {missing[0]}, which the ner file does "
                    "not predict (the official script looks every cluster span up there); predict it in the ner "
                    "file or drop it from the cluster"
                )
            own = {span_map[span] for span in spans}
            best, score = None, 0.0
            for gold_name, gold_spans in gold_clusters.items():
                overlap = len(own & gold_spans) / len(own)
                if overlap > score:
                    best, score = gold_name, overlap
            if score > 0.5:
                matched[name] = best
        precision = len(matched) / (len(clusters) + EPSILON)
        recall = len(set(matched.values())) / (len(gold_clusters) + EPSILON)
        totals["cluster_precision"] += precision
        totals["cluster_recall"] += recall
        totals["cluster_f1"] += 2 * precision * recall / (precision + recall + EPSILON)
        mappings[doc_id] = matched
    return {key: value / len(gold) for key, value in totals.items()}, mappings


def relation_scores(
    gold: Sequence[Mapping[str, Any]],
    relation_rows: Mapping[str, Mapping[str, Any]],
    mappings: Mapping[str, Mapping[str, str]],
    n: int,
) -> dict[str, float]:
    """N-ary relation P/R/F1 for ``n`` types at a time (means over the (types, document) pairs with a gold relation
    whose clusters all have mentions) and their count."""
    sums, count = [0.0, 0.0, 0.0], 0
    empty = '{"doc_id": ..., "predicted_relations": []}'
    for types in combinations(ENTITY_TYPES, n):
        for document in gold:
            doc_id = document["doc_id"]
            clusters = merged_clusters(document)
            mapping = mappings[doc_id]
            predicted = set()
            for relation in _row_of(relation_rows, doc_id, "relations", empty)["predicted_relations"]:
                if relation[2] != 1:
                    continue
                names = dict(zip(ENTITY_TYPES, (mapping.get(name, name) for name in relation[0]), strict=True))
                predicted.add(tuple((kind, names[kind]) for kind in types))
            projections = {tuple((kind, relation[kind]) for kind in types) for relation in document["n_ary_relations"]}
            expected = {projected for projected in projections if all(clusters[name] for _, name in projected)}
            if not expected:
                continue
            matched = len(predicted & expected)
            precision, recall = matched / (len(predicted) + EPSILON), matched / (len(expected) + EPSILON)
            sums[0] += precision
            sums[1] += recall
            sums[2] += 2 * precision * recall / (precision + recall + EPSILON)
            count += 1
    keys = (f"relation_n{n}_precision", f"relation_n{n}_recall", f"relation_n{n}_f1")
    scores = {key: (total / count if count else 0.0) for key, total in zip(keys, sums, strict=True)}
    scores[f"relation_n{n}_count"] = float(count)
    return scores


def scirex_scores(
    gold: Sequence[Mapping[str, Any]],
    ner_rows: Iterable[Mapping[str, Any]],
    cluster_rows: Iterable[Mapping[str, Any]],
    relation_rows: Iterable[Mapping[str, Any]],
) -> dict[str, float]:
    """Every score of the module docstring from the gold release records and the three files' rows."""
    if not gold:
        raise ValueError("no gold document to score")
    ner, clusters, relations = _by_id(ner_rows, "ner"), _by_id(cluster_rows, "clusters"), _by_id(relation_rows,
                                                                                                   "relations")  # fmt: skip
    scores = mention_scores(gold, ner)
    span_maps = {document["doc_id"]: map_spans_to_gold(ner[document["doc_id"]]["ner"], document["ner"])
                 for document in gold}  # fmt: skip
    cluster, mappings = cluster_scores(gold, clusters, span_maps)
    scores.update(cluster)
    for n in (2, 4):
        scores.update(relation_scores(gold, relations, mappings, n))
    return scores


def evaluate_files(gold_file: str | Path, ner_file: str | Path, clusters_file: str | Path,
                   relations_file: str | Path) -> dict[str, float]:  # fmt: skip
    """``scirex_scores`` of the four files (the official script's ``--gold-file`` etc.)."""
    return scirex_scores(read_jsonl(gold_file), read_jsonl(ner_file), read_jsonl(clusters_file),
                         read_jsonl(relations_file))  # fmt: skip


def report(scores: Mapping[str, float]) -> str:
    """The three metric groups as lines: mention P/R/F1, salient clusters P/R/F1, relations n=2 and n=4 P/R/F1."""
    lines = [
        "Mention identification: P {mention_precision:.4f} R {mention_recall:.4f} F1 {mention_f1:.4f} "
        "(macro F1 {mention_macro_f1:.4f})".format(**scores),
        "Salient clusters: P {cluster_precision:.4f} R {cluster_recall:.4f} F1 {cluster_f1:.4f}".format(**scores),
    ]
    for n in (2, 4):
        lines.append(
            f"Relations n={n}: P {scores[f'relation_n{n}_precision']:.4f} R {scores[f'relation_n{n}_recall']:.4f} "
            f"F1 {scores[f'relation_n{n}_f1']:.4f} ({int(scores[f'relation_n{n}_count'])} type sets x documents)"
        )
    return "\n".join(lines)


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Scirex(evaluate.Metric):
    """``evaluate`` wrapper around :func:`scirex_scores` (each document's rows travel as JSON strings)."""

    def _info(self) -> evaluate.MetricInfo:
        text = datasets.Value("string")
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features(
                {
                    "predictions": {"doc_id": text, "ner": text, "clusters": text, "relations": text},
                    "references": {"doc_id": text, "document": text},
                }
            ),
            codebase_urls=["https://github.com/allenai/SciREX"],
            reference_urls=["https://aclanthology.org/2020.acl-main.670/"],
        )

    def _compute(self, predictions: list[dict], references: list[dict]) -> dict[str, float]:
        gold = [json.loads(reference["document"]) for reference in references]
        rows = [{key: json.loads(prediction[key]) for key in ("ner", "clusters", "relations")}
                for prediction in predictions]  # fmt: skip
        return scirex_scores(gold, [r["ner"] for r in rows], [r["clusters"] for r in rows],
                             [r["relations"] for r in rows])  # fmt: skip


def main(argv: Sequence[str] | None = None) -> dict[str, float]:
    """The official script's command line: prints the three metric groups."""
    parser = argparse.ArgumentParser(description=_DESCRIPTION)
    for name in ("gold-file", "ner-file", "clusters-file", "relations-file"):
        parser.add_argument(f"--{name}", required=True)
    args = parser.parse_args(argv)
    scores = evaluate_files(args.gold_file, args.ner_file, args.clusters_file, args.relations_file)
    print(report(scores))
    return scores


if __name__ == "__main__":
    main()


__all__ = [
    "ENTITY_TYPES",
    "Scirex",
    "cluster_scores",
    "evaluate_files",
    "map_spans_to_gold",
    "mention_scores",
    "merged_clusters",
    "predicted_clusters",
    "read_jsonl",
    "relation_scores",
    "report",
    "scirex_scores",
    "span_iou",
    "write_jsonl",
]
