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
"""Readers for Transformer-XH's own tasks: HotpotQA questions and FEVER claims with their Wikipedia pages.

* HotpotQA: the official release (a JSON list of ``{"_id", "question", "answer", "supporting_facts": [[title,
  sent_id]], "context": [[title, [sentences]]]}``) or the Hub layout (``hotpot_qa``/``distractor`` rows, JSON list or
  JSON lines: ``{"id"?, "question", "answer", "supporting_facts": {"title", "sent_id"}, "context": {"title",
  "sentences"}}``; a retrieved FullWiki graph may add ``hyperlinks`` ``[[from title, to title]]`` and ``anchors``,
  one list of anchor texts per paragraph) -> one canonical Hub-layout row per question, with an ``id`` (the file's,
  or ``dev-<index>``-style ``<stem>-<index>`` when the Hub rows carry none) and its ``location``.
* FEVER: the shared task's JSON lines (``{"id", "claim", "label", "evidence": [[[annotation_id, evidence_id, page,
  line]]]}``; ``label``/``evidence`` absent in a blind test file) and the wiki-pages dump (JSON lines ``{"id",
  "text", "lines"}``, ``lines`` holding ``"N\\tsentence[\\tlink...]"`` rows separated by newlines).

Files are read by the input layer (``inputs_gesa.read_json_file``: UTF-8, a BOM dropped, lines and items counted from
1). Every problem is ONE ``InputError`` naming the file, the line or item, the record's id when it has one, what is
wrong and the fix; nothing is dropped silently.

Flat module: copied next to every saved checkpoint, so it imports only the standard library and the input layer.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from .inputs_gesa import InputError, read_json_file

logger = logging.getLogger(__name__)

FEVER_LABELS = ("SUPPORTS", "REFUTES", "NOT ENOUGH INFO")
HOTPOT_FIX = (
    "give HotpotQA questions as the official JSON list (_id, question, answer, supporting_facts, context) or Hub rows "
    "(question, answer, supporting_facts{title, sent_id}, context{title, sentences})"
)


def read_json_items(path: str | Path, fix: str, where: str | None = None) -> Iterator[tuple[str, Any]]:
    """``(location, item)`` of a JSON list (``f.json, item N``) or JSON lines (``f.jsonl, line N``) file, counted
    from 1 (``inputs_gesa.read_json_file``: UTF-8, a BOM dropped; ``where`` names the file, default its path)."""
    return ((str(location), item) for location, item in read_json_file(path, where, fix=fix, list_field=None))


# ----------------------------------------------------------------------------------------------- HotpotQA


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def to_hotpot_row(item: Any, location: str, default_id: str, with_context: bool = True) -> dict[str, Any]:
    """One HotpotQA question (official or Hub layout) -> the canonical Hub-layout row (plus ``id``, ``location``).
    ``with_context=False`` (FullWiki, whose paragraphs are retrieved): the row's ``context`` is not read, so it need not
    hold the supporting paragraphs (nor be there: an empty one)."""
    if not isinstance(item, Mapping):
        raise InputError(
            f"a HotpotQA question must be a JSON object, got {type(item).__name__}", location, fix=HOTPOT_FIX
        )
    question_id = item.get("_id", item.get("id", default_id))
    if not isinstance(question_id, (str, int)) or isinstance(question_id, bool):
        raise InputError(f"'_id' must be a string, got {question_id!r}", location, record="HotpotQA question")

    def fail(problem: str, fix: str | None = None) -> InputError:
        return InputError(problem, location, record="HotpotQA question", record_id=question_id, fix=fix)

    if not isinstance(item.get("question"), str) or not item["question"].strip():
        raise fail("'question' must be a non-empty string", "add the question text")
    answer = item.get("answer")
    if answer is not None and not isinstance(answer, str):
        raise fail(f"'answer' must be a string (yes/no or a span), got {answer!r}")
    if answer is not None and not answer.strip():
        answer = None  # a blank answer (a test row) is no answer: predicted, never scored against ""
    context = item.get("context") if with_context else {"title": [], "sentences": []}
    if isinstance(context, Mapping):
        titles, sentences = context.get("title"), context.get("sentences")
    elif isinstance(context, list):
        if any(not isinstance(c, list) or len(c) != 2 for c in context):
            raise fail("'context' in the official layout is a list of [title, [sentences]] pairs", "fix the pairs")
        titles, sentences = [c[0] for c in context], [c[1] for c in context]
    else:
        raise fail("'context' is missing or not a list/object", HOTPOT_FIX)
    if not _strings(titles) or not isinstance(sentences, list) or len(titles) != len(sentences):
        raise fail("'context' needs as many titles (strings) as sentence lists", "fix the paragraph titles")
    for title, paragraph in zip(titles, sentences, strict=True):
        if not _strings(paragraph):
            raise fail(f"paragraph {title!r}: 'sentences' must be a list of strings")
    if len(set(titles)) != len(titles):
        raise fail(
            "two paragraphs share a title, so supporting facts [title, sent_id] would be ambiguous",
            "give every paragraph its own title",
        )
    facts = item.get("supporting_facts", [])
    if isinstance(facts, Mapping):
        fact_titles, fact_ids = facts.get("title", []), facts.get("sent_id", [])
        if not isinstance(fact_titles, list) or not isinstance(fact_ids, list) or len(fact_titles) != len(fact_ids):
            raise fail("'supporting_facts' needs as many 'title' as 'sent_id' entries")
        pairs = list(zip(fact_titles, fact_ids, strict=True))
    elif isinstance(facts, list) and all(isinstance(f, list) and len(f) == 2 for f in facts):
        pairs = [(f[0], f[1]) for f in facts]
    else:
        raise fail("'supporting_facts' must be [[title, sent_id], ...] or {title: [...], sent_id: [...]}")
    for title, sent_id in pairs:
        if not isinstance(title, str) or not isinstance(sent_id, int) or isinstance(sent_id, bool) or sent_id < 0:
            raise fail(f"supporting fact {[title, sent_id]!r} must be [title <str>, sent_id <int >= 0>]")
        if title not in titles and with_context:
            raise fail(f"supporting fact title {title!r} is none of the context titles", "fix the title")
    lengths = dict(zip(titles, map(len, sentences), strict=True))
    beyond = [[title, sent_id] for title, sent_id in pairs if sent_id >= lengths.get(title, sent_id + 1)]
    if beyond:
        # the official release has a few: kept for the official metric (never predictable), said once per question
        logger.warning(
            f"{location}: HotpotQA question {question_id!r}: supporting facts {beyond} point past the last sentence "
            f"of their paragraph ({', '.join(f'{t!r} has {lengths[t]}' for t, _ in beyond)}): no sentence can be "
            "labelled or predicted for them; they still count as gold facts in the metric"
        )
    row = {
        "id": str(question_id),
        "question": item["question"],
        "answer": answer,
        "type": item.get("type"),
        "level": item.get("level"),
        "supporting_facts": {"title": [t for t, _ in pairs], "sent_id": [s for _, s in pairs]},
        "context": {"title": list(titles), "sentences": [list(s) for s in sentences]},
        "location": location,
    }
    # a retrieved (FullWiki) graph: its hyperlinks between the paragraphs and each paragraph's anchor texts
    links = item.get("hyperlinks")
    if links is not None:
        if not isinstance(links, list) or any(not _strings(link) or len(link) != 2 or not set(link) <= set(titles)
                                              for link in links):  # fmt: skip
            raise fail("'hyperlinks' must be [[from title, to title], ...] between titles of 'context'")
        row["hyperlinks"] = [list(link) for link in links]
    anchors = item.get("anchors")
    if anchors is not None:
        if not isinstance(anchors, list) or len(anchors) != len(titles) or not all(map(_strings, anchors)):
            raise fail(f"'anchors' must hold one list of anchor texts (strings) per paragraph ({len(titles)})")
        row["anchors"] = [list(texts) for texts in anchors]
    return row


def read_hotpot_file(path: str | Path, where: str | None = None, with_context: bool = True) -> list[dict[str, Any]]:
    """All questions of a HotpotQA file (official JSON or Hub-layout JSON / JSON lines), checked, in file order
    (``where`` names the file in errors, default its path; ``with_context=False``: FullWiki, see ``to_hotpot_row``)."""
    path = Path(path)
    rows, seen = [], {}
    for index, (location, item) in enumerate(read_json_items(path, HOTPOT_FIX, where)):
        row = to_hotpot_row(item, location, default_id=f"{path.stem}-{index}", with_context=with_context)
        if row["id"] in seen:
            raise InputError(
                f"question id {row['id']!r} repeats {seen[row['id']]}", location, fix="give every question its own id"
            )
        seen[row["id"]] = location
        rows.append(row)
    return rows


def hotpot_supporting_facts(row: Mapping[str, Any]) -> list[list[Any]]:
    """The ``[[title, sent_id], ...]`` of a canonical row (the metric's and the official file's form)."""
    facts = row["supporting_facts"]
    return [[t, s] for t, s in zip(facts["title"], facts["sent_id"], strict=True)]


# ----------------------------------------------------------------------------------------------- FEVER

FEVER_FIX = "give FEVER claims as JSON lines {id, claim, label, evidence} (the shared task's format)"
WIKI_FIX = 'give wiki pages as JSON lines {id, text, lines} with lines "0\\tsentence\\n1\\tsentence..."'


def to_fever_claim(item: Any, location: str) -> dict[str, Any]:
    """One shared-task claim, checked: ``{id, claim, label (or None), evidence (groups of [page, line])}``."""
    if not isinstance(item, Mapping):
        raise InputError("a FEVER claim must be a JSON object", location, fix=FEVER_FIX)
    claim_id = item.get("id")
    if claim_id is None or isinstance(claim_id, bool) or not isinstance(claim_id, (int, str)):
        raise InputError("'id' is missing or not an int/string", location, fix=FEVER_FIX)

    def fail(problem: str, fix: str | None = None) -> InputError:
        return InputError(problem, location, record="FEVER claim", record_id=claim_id, fix=fix)

    if not isinstance(item.get("claim"), str) or not item["claim"].strip():
        raise fail("'claim' must be a non-empty string")
    label = item.get("label")
    if label is not None and (not isinstance(label, str) or label.upper() not in FEVER_LABELS):
        raise fail(f"'label' {label!r} is none of {FEVER_LABELS}")
    evidence = item.get("evidence", [])
    groups = []
    if not isinstance(evidence, list):
        raise fail("'evidence' must be a list of groups of [annotation_id, evidence_id, page, line]")
    for g, group in enumerate(evidence):
        if not isinstance(group, list) or any(not isinstance(e, list) or len(e) != 4 for e in group):
            raise fail(f"evidence group {g} must be a list of [annotation_id, evidence_id, page, line] entries")
        for entry in group:
            page, line = entry[2], entry[3]
            if (page is None) != (line is None) or (
                page is not None
                and (not isinstance(page, str) or not isinstance(line, int) or isinstance(line, bool) or line < 0)
            ):
                raise fail(f"evidence {entry!r} needs page <str> and line <int >= 0> (both null for NOT ENOUGH INFO)")
        groups.append([list(e) for e in group])
    if label is not None and label.upper() != FEVER_LABELS[2]:
        if not any(e[2] is not None for group in groups for e in group):
            raise fail(f"a {label} claim needs at least one evidence [page, line]", "add its evidence")
    pages = item.get("predicted_pages")
    if pages is not None and (not isinstance(pages, list) or not all(isinstance(p, str) for p in pages)):
        raise fail(
            f"'predicted_pages' must be a list of wiki page ids, got {pages!r}",
            f"write it as a list, e.g. [{pages!r}]" if isinstance(pages, str) else None,
        )
    sentences = item.get("predicted_sentences")
    if sentences is not None and (
        not isinstance(sentences, list)
        or not all(
            isinstance(s, list)
            and len(s) == 2
            and isinstance(s[0], str)
            and isinstance(s[1], int)
            and not isinstance(s[1], bool)
            and s[1] >= 0
            for s in sentences
        )
    ):
        raise fail(f"'predicted_sentences' must be a list of [page <str>, line <int >= 0>] pairs, got {sentences!r}")
    return {
        "id": claim_id,
        "claim": item["claim"],
        "label": None if label is None else label.upper(),
        "evidence": groups,
        "location": location,
        **{k: item[k] for k in ("predicted_pages", "predicted_sentences") if k in item},
    }


def read_fever_claims(path: str | Path, where: str | None = None) -> list[dict[str, Any]]:
    """All claims of a shared-task JSON-lines file, checked, in file order (``where`` names the file in errors)."""
    claims, seen = [], {}
    for location, item in read_json_items(path, FEVER_FIX, where):
        claim = to_fever_claim(item, location)
        key = str(claim["id"])  # 100 and "100" are one id in every prediction file and metric
        if key in seen:
            raise InputError(
                f"claim id {claim['id']!r} repeats {seen[key]} (ids are compared as text)",
                location,
                fix="give every claim its own id",
            )
        seen[key] = location
        claims.append(claim)
    return claims


def parse_wiki_lines(lines: str, where: str, page_id: str | None = None) -> dict[int, str]:
    """``"N\\tsentence[\\tlinks...]"`` rows -> ``{N: sentence}`` (empty sentences kept as ``""``); ``where`` and
    ``page_id`` name the page in errors."""
    out: dict[int, str] = {}
    if not lines:
        return out
    for row in lines.split("\n"):
        if not row.strip():
            continue
        number, _, rest = row.partition("\t")
        if not number.isdigit():
            raise InputError(
                f"the 'lines' row {row[:40]!r} does not start with 'N\\t'",
                where,
                record=None if page_id is None else "wiki page",
                record_id=page_id,
                fix=WIKI_FIX,
            )
        if int(number) in out:
            raise InputError(
                f"line number {int(number)} appears twice in 'lines' (the later row would replace "
                f"{out[int(number)]!r:.40})",
                where,
                record=None if page_id is None else "wiki page",
                record_id=page_id,
                fix="give every sentence its own line number",
            )
        out[int(number)] = rest.split("\t", 1)[0]
    return out


def read_wiki_pages(
    paths: str | Path | Iterable[str | Path], keep: set[str] | None = None
) -> dict[str, dict[int, str]]:
    """``{page id: {line: sentence}}`` from wiki-pages JSON-lines files (``keep``: only these page ids)."""
    if isinstance(paths, (str, Path)):
        paths = [paths]
    pages: dict[str, dict[int, str]] = {}
    read_at: dict[str, str] = {}
    for path in paths:
        for location, item in read_json_items(path, WIKI_FIX):
            if not isinstance(item, Mapping) or not isinstance(item.get("id"), str):
                raise InputError("a wiki page needs a string 'id'", location, fix=WIKI_FIX)
            if keep is not None and item["id"] not in keep:
                continue
            if item["id"] in read_at:
                raise InputError(
                    f"page {item['id']!r} was already read at {read_at[item['id']]} (the later copy would replace it)",
                    location,
                    fix="keep one copy of every page",
                )
            read_at[item["id"]] = location
            if not isinstance(item.get("lines", ""), str):
                raise InputError("'lines' must be a string", location, "wiki page", item["id"], fix=WIKI_FIX)
            pages[item["id"]] = parse_wiki_lines(item.get("lines", ""), location, item["id"])
    return pages


def page_title(page_id: str) -> str:
    """A wiki page id as text: underscores to spaces, ``-LRB-``/``-RRB-`` and the like to brackets."""
    text = page_id.replace("_", " ")
    for token, char in (("-LRB-", "("), ("-RRB-", ")"), ("-LSB-", "["), ("-RSB-", "]"), ("-COLON-", ":")):
        text = text.replace(token, char)
    return text


__all__ = [
    "FEVER_LABELS",
    "InputError",
    "hotpot_supporting_facts",
    "page_title",
    "parse_wiki_lines",
    "read_fever_claims",
    "read_hotpot_file",
    "read_json_items",
    "read_wiki_pages",
    "to_fever_claim",
    "to_hotpot_row",
]
