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
"""Pictures of what the entity cloze QA pipeline saw and answered, drawn with spaCy's ``displacy``.

- ``render_html(examples, rankings, mentions)``: one HTML page; per query, the query with ``[PLC]`` (labelled with the
  answer) and the passage with every candidate mention highlighted, shaded by its answer's score (pale to orange)
  and labelled with the score; the shade is the score relative to the best one's; the mentions of the top answer are green and labelled ``ANSWER``.
  ``pipeline(...)(inputs, return_html=True)`` returns this page.
- ``render_entity_graph(feature, candidate_texts, query=, answer=, score=, window=, windows=)``: the entity graph of
  one GESA window (placeholder, candidates and their PLC / SENT / MATCH edges, ``candidates_gesa.build_entity_graph``)
  as an SVG (displacy's arc diagram; each entity is tagged with its sentence), with a title (query, answer, score,
  window k of n), the answer's nodes in green and a legend of the sentence tags and edge kinds.
  ``EntityClozeQAPipeline.entity_graph_svg(input)`` answers the input and draws the window holding its answer.

spaCy is needed to draw (``pip install "gesa[data]"``), not to answer.

Flat module: copied next to every saved checkpoint, so it imports third-party packages and its siblings only.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

from .candidates_gesa import EDGE_MATCH, EDGE_PLC, EDGE_SENT, build_entity_graph, normalize_entity_string
from .extras_gesa import require
from .records_gesa import RECORD_PLACEHOLDER
from .windows_gesa import PLACEHOLDER_TOKEN

ANSWER_COLOR = "#7bd88f"
_ANSWER_INK = "#1a7f37"  # the answer's nodes in the entity graph
EDGE_NAMES = {EDGE_PLC: "PLC", EDGE_SENT: "SENT", EDGE_MATCH: "MATCH"}
PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>body {{ font-family: -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif; margin: 1.5em; }}
h2 {{ font-size: 1.1em; margin: 1.2em 0 0.3em; }} .gesa-query {{ margin-bottom: 0.4em; }}</style></head>
<body>
{body}
</body></html>
"""


def _displacy() -> Any:
    return require("spacy.displacy", "drawing the answers (return_html)")


def score_color(shade: float) -> str:
    """The highlight of a candidate whose score is ``shade`` times the best one's: pale (0) to solid orange (1)."""
    alpha = 0.08 + 0.92 * min(max(shade, 0.0), 1.0)
    return f"rgba(255, 140, 0, {alpha:.2f})"


def render_html(
    examples: Sequence[Any],
    rankings: Sequence[Sequence[Mapping[str, Any]]],
    mentions: Sequence[Sequence[tuple[int, int]]],
    title: str = "GESA entity cloze QA",
) -> str:
    """One HTML page: per query (``records_gesa.RecordExample``), its ranked answers (every candidate, best first:
    ``answer``, ``score``) and the exclusive character spans of its candidate mentions in the passage."""
    displacy = _displacy()
    sections = []
    for number, (example, ranking, spans) in enumerate(zip(examples, rankings, mentions, strict=True)):
        scores = {normalize_entity_string(entry["answer"]): entry["score"] for entry in ranking}
        best = normalize_entity_string(ranking[0]["answer"]) if ranking else None
        top = ranking[0]["score"] if ranking else 0.0
        colors: dict[str, str] = {}
        entities = []
        for start, end in sorted(set(spans)):
            key = normalize_entity_string(example.passage[start:end])
            score = scores.get(key, 0.0)
            label = f"ANSWER {score:.2f}" if key == best else f"{score:.2f}"
            colors[label] = ANSWER_COLOR if key == best else score_color(score / top if top > 0 else 0.0)
            entities.append({"start": start, "end": end, "label": label})
        query = example.query.replace(RECORD_PLACEHOLDER, PLACEHOLDER_TOKEN)
        position = query.find(PLACEHOLDER_TOKEN)
        answer = ranking[0]["answer"] if ranking else "?"
        plc_label = f"= {answer}"
        colors[plc_label] = ANSWER_COLOR
        query_doc = {
            "text": query,
            "ents": [] if position < 0 else [{"start": position, "end": position + len(PLACEHOLDER_TOKEN),
                                             "label": plc_label}],
        }  # fmt: skip
        passage_doc = {"text": example.passage, "ents": entities}
        options = {"colors": colors, "ents": list(colors)}
        heading = f"Query {number + 1}: answer {html.escape(answer)}"
        if ranking:
            heading += f" (score {ranking[0]['score']:.2f})"
        heading += f' <small style="color: #888">{html.escape(example.example_id)}</small>'
        sections.append(
            f'<section id="query-{number}"><h2>{heading}</h2><div class="gesa-query">'
            + displacy.render(query_doc, style="ent", manual=True, page=False, options=options)
            + "</div>"
            + displacy.render(passage_doc, style="ent", manual=True, page=False, options=options)
            + "</section>"
        )
    return PAGE.format(title=html.escape(title), body="\n".join(sections))


LEGEND_EDGES = (
    ("PLC", "the placeholder [PLC] and a candidate"),
    ("SENT", "two candidates in the same sentence"),
    ("MATCH", "the same normalised string in different sentences"),
)
_TITLE_LINE = 20  # px per line of the title and the legend
_ARC_LABEL = 22  # px above the highest arc kept for its label
_MAX_NODE_CHARS = (
    28  # a longer candidate text is cut (with an ellipsis) in its node; the title gives the answer in full
)


def _graph_title(
    query: str | None, answer: str | None, score: float | None, window: int | None, windows: int | None
) -> list[str]:
    lines = []
    if query is not None:
        lines.append("Query: " + query.replace(RECORD_PLACEHOLDER, PLACEHOLDER_TOKEN))
    facts = []
    if answer is not None:
        facts.append(f"answer {answer}" + ("" if score is None else f" (score {score:.2f})"))
    if window is not None:
        facts.append(f"window {window + 1} of {windows}" if windows else f"window {window + 1}")
    if facts:
        lines.append("Entity graph: " + ", ".join(facts))
    return lines


def render_entity_graph(
    feature: Mapping[str, Sequence[Any]],
    candidate_texts: Sequence[str],
    *,
    query: str | None = None,
    answer: str | None = None,
    score: float | None = None,
    window: int | None = None,
    windows: int | None = None,
) -> str:
    """The entity graph of one GESA window as an SVG: a node per entity (``[PLC]`` first, tagged ``query``; each
    candidate tagged with its sentence ``S<i>``) and an arc per PLC / SENT / MATCH edge (``build_entity_graph``).

    Above the graph, a title: the query, the answer and its score, and ``window k of n`` (each line only when given);
    the candidates whose text is the answer are drawn in green bold and tagged ``answer``. Below it, a legend of the
    sentence tags and the three edge kinds. The SVG is cropped to what is drawn (no blank band above the arcs)."""
    displacy = _displacy()
    from spacy.displacy.render import DependencyRenderer

    graph = build_entity_graph(
        feature["entity_sentence_ids"],
        feature["entity_string_ids"],
        feature["placeholder_entity_mask"],
        feature.get("entity_attention_mask"),
    )
    answer_key = None if answer is None else normalize_entity_string(answer)
    words, answer_nodes = [], []
    for index, placeholder in enumerate(feature["placeholder_entity_mask"]):
        text = PLACEHOLDER_TOKEN if placeholder else candidate_texts[index]
        tag = "query" if placeholder else f"S{feature['entity_sentence_ids'][index]}"
        if not placeholder and answer_key is not None and normalize_entity_string(text) == answer_key:
            tag += " answer"
            answer_nodes.append(index)
        words.append({"text": text, "tag": tag})
    arcs = [
        {"start": first, "end": second, "label": EDGE_NAMES[int(graph[first, second])], "dir": "right"}
        for first in range(len(words))
        for second in range(first + 1, len(words))
        if int(graph[first, second]) in EDGE_NAMES
    ]
    # room for the longest node text (14 px Arial: under 8 px a character), up to _MAX_NODE_CHARS characters
    longest = min(max((len(word["text"]) for word in words), default=0), _MAX_NODE_CHARS)
    options = {"compact": True, "distance": max(110, round(7.5 * longest) + 24), "offset_x": 40, "bg": "#ffffff"}
    for word in words:
        if len(word["text"]) > _MAX_NODE_CHARS:
            word["text"] = word["text"][: _MAX_NODE_CHARS - 1] + "\u2026"
    svg = displacy.render({"words": words, "arcs": arcs}, style="dep", manual=True, page=False, options=options)

    # displacy reserves distance / 2 per arc level above the words but, compact, draws its arcs in a third of it
    renderer = DependencyRenderer(options)
    highest = max(renderer.get_levels(arcs).values(), default=0)
    offset_y = renderer.distance / 2 * highest + renderer.arrow_stroke
    top = max(offset_y - highest * renderer.distance / 6 - _ARC_LABEL, 0)
    width = renderer.offset_x + len(words) * renderer.distance
    # the words sit one word_spacing below the arcs, their tags 2em under them: the last third is empty too
    graph_height = offset_y + 2 * renderer.word_spacing + 8 - top

    tokens = svg.split('<text class="displacy-token"')
    for index in answer_nodes:  # tokens[0] is the opening tag; word i is tokens[i + 1]
        tokens[index + 1] = tokens[index + 1].replace(
            'class="displacy-word" fill="currentColor"',
            f'class="displacy-word" fill="{_ANSWER_INK}" font-weight="bold"',
            1,
        )
    svg = '<text class="displacy-token"'.join(tokens)
    opening = svg[: svg.index(">") + 1]
    inner = svg[len(opening) : svg.rindex("</svg>")]

    title = _graph_title(query, answer, score, window, windows)
    legend = [
        "Nodes: [PLC] (query) is the placeholder; S0, S1, ...: the passage sentence of each candidate mention"
        + (" (green: the answer)" if answer_nodes else ""),
        *(f"Edge {name}: {meaning}" for name, meaning in LEGEND_EDGES),
    ]
    title_height = _TITLE_LINE * len(title) + (8 if title else 0)
    legend_width = 8 * max(len(line) for line in legend + title)  # 14 px Arial: under 8 px a character
    total_width = max(width, legend_width + 32)
    total_height = title_height + graph_height + _TITLE_LINE * len(legend) + 8

    def text_lines(lines: list[str], y0: float, weight: str) -> str:
        return "".join(
            f'<text x="16" y="{y0 + _TITLE_LINE * (number + 1) - 5:.0f}" font-weight="{weight}">'
            f"{html.escape(line)}</text>"
            for number, line in enumerate(lines)
        )

    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" class="gesa-entity-graph" '
        f'width="{total_width:.0f}" height="{total_height:.0f}" viewBox="0 0 {total_width:.0f} {total_height:.0f}" '
        f'font-family="Arial, Helvetica, sans-serif" font-size="14" style="background: #ffffff; max-width: 100%; height: auto">'
        + text_lines(title, 4, "bold")
        + f'<svg x="0" y="{title_height}" width="{width:.0f}" height="{graph_height:.0f}" '
        f'viewBox="0 {top:.0f} {width:.0f} {graph_height:.0f}" style="color: #000000; font-family: Arial">'
        + inner
        + "</svg>"
        + text_lines(legend, title_height + graph_height, "normal")
        + "</svg>"
    )


__all__ = ["render_entity_graph", "render_html", "score_color"]
