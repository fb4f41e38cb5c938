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
"""The reader of HotpotQA's FullWiki corpus: the released Wikipedia abstracts with their hyperlinks.

The layout (hotpotqa.github.io/wiki-readme.html, ``enwiki-20171001-pages-meta-current-withlinks-abstracts``): a
folder of sub-folders (``AA/``, ``AB/``, ...) of bzip2-compressed JSON-lines files (``wiki_00.bz2``, ...; a plain,
decompressed file reads the same), one article per line::

    {"id": "12", "url": "https://en.wikipedia.org/wiki?curid=12", "title": "Anarchism",
     "text": ["Anarchism is a political philosophy ...", " These are often ..."],
     "text_with_links": ["Anarchism is a <a href=\\"political%20philosophy\\">political philosophy</a> ...", ...],
     "charoffset": [...], "charoffset_with_links": [...]}

``text`` is the article's first paragraph as its sentences (HotpotQA's ``context`` sentences: a supporting fact's
``sent_id`` indexes this list); ``text_with_links`` the same sentences with the hyperlinks as ``<a href="target">anchor
text</a>`` (the target a URL-quoted title, resolved by ``resolve_title``: as written, with its first letter
upper-cased, or case-insensitively where one title fits; titles that differ in case, "Red Dwarf" and "Red dwarf",
are two articles). ``charoffset*`` (token offsets) are not read. ``read_abstracts_corpus(folder)`` gives an
``AbstractsCorpus``: the articles by title and, per article, its links to other articles of the corpus with their
anchor texts (links to pages outside the corpus are left out, as the abstracts hold no page for them). Every bad
line is ONE ``InputError`` naming the file and the line.

Flat module: imports only the standard library and the input layer.
"""

from __future__ import annotations

import html
import logging
import re
import urllib.parse
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..inputs_gesa import InputError, read_json_file

logger = logging.getLogger(__name__)

ABSTRACTS_FIX = (
    "give HotpotQA's abstracts layout: JSON lines {id, url, title, text: [sentences], text_with_links: [sentences "
    'with <a href="title">anchor</a>]} (wiki-readme at hotpotqa.github.io)'
)
_LINK = re.compile(r'<a\s+href="([^"]*)"\s*>(.*?)</a>', re.IGNORECASE | re.DOTALL)
_TAG = re.compile(r"<[^>]+>")


@dataclass
class Article:
    """One abstract: ``sentences`` (``text``), the hyperlinks ``[(target title, anchor text, sentence index)]`` in
    text order (targets as the corpus spells them once resolved), where it was read (``location``)."""

    title: str
    sentences: list[str]
    links: list[tuple[str, str, int]] = field(default_factory=list)
    location: str = ""

    @property
    def text(self) -> str:
        return "".join(self.sentences)


@dataclass
class AbstractsCorpus:
    """The articles by title; ``linked_from[title]``: the titles of the articles linking to it."""

    articles: dict[str, Article]
    linked_from: dict[str, list[str]]

    def __len__(self) -> int:
        return len(self.articles)

    def __contains__(self, title: object) -> bool:
        return title in self.articles

    def neighbours(self, title: str) -> list[str]:
        """The articles ``title`` links to, then those linking to it (each once, itself left out)."""
        out = [target for target, _, _ in self.articles[title].links]
        return [t for t in dict.fromkeys(out + self.linked_from.get(title, [])) if t != title]

    def anchors(self, source: str, target: str) -> list[str]:
        """The anchor texts of ``source``'s links to ``target``, each once, in text order."""
        return list(dict.fromkeys(anchor for t, anchor, _ in self.articles[source].links if t == target))


def parse_links(sentence: str) -> list[tuple[str, str]]:
    """``[(target title, anchor text)]`` of one ``text_with_links`` sentence (target URL-unquoted, anchor without
    tags and HTML entities)."""
    found = []
    for href, inner in _LINK.findall(sentence):
        target = " ".join(urllib.parse.unquote(html.unescape(href)).replace("_", " ").split())
        anchor = " ".join(html.unescape(_TAG.sub("", inner)).split())
        if target:
            found.append((target, anchor))
    return found


def resolve_title(target: str, articles: Mapping[str, Any], folded: Mapping[str, list[str]]) -> str | None:
    """The corpus title a link names: the same title, else with its first letter upper-cased (Wikipedia's titles
    differ only there), else the one title equal but for case (none when several are)."""
    if target in articles:
        return target
    capital = target[:1].upper() + target[1:]
    if capital in articles:
        return capital
    same = folded.get(target.casefold(), [])
    return same[0] if len(same) == 1 else None


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def to_article(item: Any, location: str) -> tuple[Article, list[tuple[str, str, int]]]:
    """One line of the corpus, checked: the article and its raw links (targets not yet resolved)."""
    if not isinstance(item, Mapping):
        raise InputError(f"an article must be a JSON object, got {type(item).__name__}", location, fix=ABSTRACTS_FIX)
    title = item.get("title")
    if not isinstance(title, str) or not title.strip():
        raise InputError("'title' must be a non-empty string", location, record="article", record_id=item.get("id"),
                         fix=ABSTRACTS_FIX)  # fmt: skip

    def fail(problem: str) -> InputError:
        return InputError(problem, location, record="article", record_id=title, fix=ABSTRACTS_FIX)

    text = item.get("text")
    if not _strings(text):
        raise fail("'text' must be the list of the abstract's sentences (strings)")
    linked = item.get("text_with_links")
    if linked is not None and (not _strings(linked) or len(linked) != len(text)):
        raise fail(f"'text_with_links' must be a list of {len(text)} sentences, one per sentence of 'text'")
    links = [(target, anchor, index) for index, sentence in enumerate(linked or []) for target, anchor
             in parse_links(sentence)]  # fmt: skip
    return Article(title, list(text), [], location), links


def _corpus_files(folder: Path, where: str) -> list[Path]:
    if not folder.is_dir():
        raise InputError(
            "is not a folder" if folder.exists() else "does not exist",
            where,
            fix="give the folder of the abstracts (enwiki-...-abstracts: AA/wiki_00.bz2, ...)",
        )
    hidden = {p for p in folder.rglob("*") if any(part.startswith(".") for part in p.relative_to(folder).parts)}
    files = sorted(p for p in folder.rglob("*") if p.is_file() and p not in hidden)
    if not files:
        raise InputError("holds no file", where, fix="give the folder of the abstracts (AA/wiki_00.bz2, ...)")
    return files


def read_abstracts_corpus(folder: str | Path, flag: str | None = None) -> AbstractsCorpus:
    """Every article of the abstracts folder (every non-hidden file below it, ``.bz2`` read decompressed), checked
    (see the module docstring); ``flag`` (``"--corpus_dir"``) comes before the folder's or file's path in errors.

    Raises:
        InputError: a missing or empty folder, a line that is not JSON or not an article (file and line named), two
            articles with one title.
    """
    folder = Path(folder)
    prefix = f"{flag} " if flag else ""
    articles: dict[str, Article] = {}
    raw_links: dict[str, list[tuple[str, str, int]]] = {}
    folded: dict[str, list[str]] = {}
    empty = 0
    for path in _corpus_files(folder, f"{prefix}{folder}"):
        name = f"{prefix}{path}"
        for location, item in read_json_file(path, name, fix=ABSTRACTS_FIX, list_field=None):
            article, links = to_article(item, str(location))
            if not article.sentences:
                empty += 1  # a page without a first paragraph: nothing to retrieve or read
                continue
            if article.title in articles:
                raise InputError(
                    f"the title {article.title!r} is also the title of the article at "
                    f"{articles[article.title].location}",
                    str(location),
                    record="article",
                    record_id=article.title,
                    fix="keep one article per title",
                )
            folded.setdefault(article.title.casefold(), []).append(article.title)
            articles[article.title] = article
            raw_links[article.title] = links
    if empty:
        logger.warning(f"{prefix}{folder}: {empty} articles without sentences left out")
    linked_from: dict[str, list[str]] = {}
    for title, links in raw_links.items():
        for target, anchor, index in links:
            resolved = resolve_title(target, articles, folded)
            if resolved is None or resolved == title:
                continue  # a page outside the corpus, or the article itself
            articles[title].links.append((resolved, anchor, index))
            linked_from.setdefault(resolved, [])
            if title not in linked_from[resolved]:
                linked_from[resolved].append(title)
    return AbstractsCorpus(articles, linked_from)


def abstracts_line(index: int, title: str, sentences: Iterable[str], links: Mapping[int, list[tuple[int, int, str]]]
                   ) -> dict[str, Any]:  # fmt: skip
    """One article in the abstracts layout: ``links`` maps a sentence index to ``(start, end, target title)``
    character spans of that sentence, written as ``<a href="quoted target">...</a>`` in ``text_with_links``."""
    sentences = list(sentences)
    linked = []
    for number, sentence in enumerate(sentences):
        pieces, cursor = [], 0
        for start, end, target in sorted(links.get(number, [])):
            href = urllib.parse.quote(target)
            pieces += [sentence[cursor:start], f'<a href="{href}">{sentence[start:end]}</a>']
            cursor = end
        linked.append("".join(pieces) + sentence[cursor:])
    return {"id": str(index), "url": f"https://en.wikipedia.org/wiki?curid={index}", "title": title,
            "text": sentences, "text_with_links": linked}  # fmt: skip


__all__ = ["ABSTRACTS_FIX", "AbstractsCorpus", "Article", "abstracts_line", "parse_links", "read_abstracts_corpus",
           "resolve_title", "to_article"]  # fmt: skip
