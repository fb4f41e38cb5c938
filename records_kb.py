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
"""The files of a knowledge base for KnowBERT-KAR and ERNIE, read by path (``--kb_alias_table``,
``--kb_entity_vectors``); LUKE's entity table stays the default KB and the default aliases (its titles).

- Alias table (``read_alias_table``): UTF-8 TSV, one candidate per line, ``alias<TAB>entity<TAB>prior`` (KnowBERT's
  ``p(e|m)``, a number in [0, 1]); blank lines and ``#`` comments are skipped, a first line ``alias entity prior`` is a
  header. An alias may have several lines (its candidates). Candidates follow ``processing_kb.MERGE_RULE``: aliases
  equal up to case, spaces, underscores and surrounding punctuation are one alias, a repeated (alias, entity) pair is
  one candidate with the highest of its priors (logged), candidates best first.
- Entity vectors (``read_entity_vectors``): the text format of word2vec / wikipedia2vec / a TransE export, one entity
  per line, ``name v1 ... vD`` (space separated) or ``name<TAB>v1 ... vD`` (a name with spaces); an optional first
  line ``count D``. In a wikipedia2vec file (``ENTITY/`` entries next to words) only the ``ENTITY/`` lines are read.
  The line order is the KB's row order: the entity list.
- ``load_knowledge_files``: both files (or either) resolved into KB rows: ``KnowledgeBaseFiles`` with the entity names,
  the vectors (``None``: the model's entity table, LUKE's) and the alias table as rows with priors, which gives the
  ``processing_kb.EntityCandidateGenerator`` of the collators.

Entity names match after ``entity_key``: Unicode NFC, a wikipedia2vec ``ENTITY/`` prefix dropped, underscores read as
spaces (so ``ENTITY/Barack_Obama`` is ``Barack Obama``, LUKE's title). Aliases, entity names and the mention text are
all compared in Unicode NFC (``processing_kb.UNICODE_FORM``), so a KB file written in NFD links the text as one in
NFC does. Refused, naming the line: an alias or entity name holding an invisible character (a zero-width space, a
soft hyphen, a direction mark: ``invisible_characters``), which no text would match, and two entity names of the
vectors file that differ only in case (the aliases are case-insensitive, so one of the two could never be told
apart). Every problem is one ``inputs_gesa.InputError`` naming the file, the line and the fix.

Flat module: imports its siblings relatively (the input layer, the candidate generator), third-party packages
otherwise.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import unicodedata
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from .inputs_gesa import InputError, Location, read_text_lines
from .loading_gesa import KB_ALIAS_TABLE_FILE, KB_ENTITIES_FILE, knowledge_file
from .processing_kb import (
    UNICODE_FORM,
    EntityCandidateGenerator,
    KnowledgeInputBuilder,
    knowledge_inputs_of,
    normalize_title,
)

logger = logging.getLogger(__name__)

ALIAS_TABLE_FIX = "give one 'alias<TAB>entity<TAB>prior' line per candidate, the prior a number in [0, 1]"
VECTORS_FIX = (
    "give one 'name v1 ... vD' line per entity (word2vec / wikipedia2vec text format, optional 'count D' header)"
)
WIKIPEDIA2VEC_ENTITY = "ENTITY/"


# format characters that are text in some scripts: the zero-width (non-)joiner of Persian, Indic scripts and emoji
JOINERS = ("\u200c", "\u200d")


def entity_key(name: str) -> str:
    """The name an entity is matched by: Unicode NFC, a wikipedia2vec ``ENTITY/`` prefix dropped, underscores as
    spaces."""
    name = unicodedata.normalize(UNICODE_FORM, name)
    if name.startswith(WIKIPEDIA2VEC_ENTITY):
        name = name[len(WIKIPEDIA2VEC_ENTITY) :]
    return " ".join(name.replace("_", " ").split())


def invisible_characters(text: str) -> list[str]:
    """The invisible characters of ``text`` as ``U+200B ZERO WIDTH SPACE``: Unicode format characters (category
    ``Cf``: zero-width space, word joiner, soft hyphen, direction marks, a byte order mark) other than the joiners
    that some scripts write (``JOINERS``)."""
    return [
        f"U+{ord(char):04X} {unicodedata.name(char, 'UNNAMED')}"
        for char in dict.fromkeys(text)
        if unicodedata.category(char) == "Cf" and char not in JOINERS
    ]


def check_visible(text: str, what: str, location: Location) -> None:
    """One ``InputError`` at ``location`` when ``text`` (``what``: "alias 'x'") holds an invisible character."""
    found = invisible_characters(text)
    if found:
        raise InputError(
            f"{what} holds the invisible character(s) {', '.join(found)}, which no text matches",
            location,
            fix="delete them from that line of the file (retype the name if they cannot be seen in an editor)",
        )


@dataclasses.dataclass(frozen=True)
class AliasRow:
    """One candidate line of an alias table: where it is, the alias, the entity's name, the prior ``p(e|m)``."""

    location: Location
    alias: str
    entity: str
    prior: float


def read_alias_table(path: str | Path, where: str | None = None) -> list[AliasRow]:
    """The candidate lines of a TSV alias table (module docstring); an ``InputError`` at the first bad line."""
    rows = []
    for location, text in read_text_lines(path, where, fix=ALIAS_TABLE_FIX):
        if not text.strip() or text.lstrip().startswith("#"):
            continue
        fields = text.split("\t")
        if location.number == 1 and [f.strip().casefold() for f in fields] == ["alias", "entity", "prior"]:
            continue
        if len(fields) != 3:
            raise InputError(
                f"has {len(fields)} tab-separated field(s), expected 3 (alias, entity, prior)", location,
                fix=ALIAS_TABLE_FIX,
            )  # fmt: skip
        alias, entity, prior_text = (unicodedata.normalize(UNICODE_FORM, field.strip()) for field in fields)
        if not alias or not entity:
            raise InputError("the alias and the entity must not be empty", location, fix=ALIAS_TABLE_FIX)
        check_visible(alias, f"alias {alias!r}", location)
        check_visible(entity, f"entity {entity!r}", location)
        try:
            prior = float(prior_text)
        except ValueError:
            prior = math.nan
        if not 0.0 <= prior <= 1.0:
            raise InputError(f"prior {prior_text!r} is not a number in [0, 1]", location, fix=ALIAS_TABLE_FIX)
        rows.append(AliasRow(location, alias, entity, prior))
    if not rows:
        raise InputError("holds no alias line", where or str(path), fix=ALIAS_TABLE_FIX)
    return rows


def read_entity_vectors(path: str | Path, where: str | None = None) -> tuple[list[str], torch.Tensor]:
    """The entity names (the KB's rows, in file order) and their vectors ``(N, D)`` (module docstring)."""
    where = where or str(path)
    lines = [(location, text) for location, text in read_text_lines(path, where, fix=VECTORS_FIX) if text.strip()]
    if not lines:
        raise InputError("the file is empty", where, fix=VECTORS_FIX)
    header = lines[0][1].split()
    dim = None
    if len(header) == 2 and all(part.isdigit() for part in header):
        promised, dim = int(header[0]), int(header[1])
        header_location, lines = lines[0][0], lines[1:]
        if promised != len(lines):  # word2vec's header counts every line after it (wikipedia2vec: words too)
            raise InputError(
                f"the header promises {promised} vectors of {dim} values, the file has {len(lines)} after it",
                header_location,
                fix="the file is cut short or has extra lines: copy or write it again, or correct the 'count D' "
                "header (or drop it)",
            )
    if any(text.startswith(WIKIPEDIA2VEC_ENTITY) for _, text in lines):
        lines = [(location, text) for location, text in lines if text.startswith(WIKIPEDIA2VEC_ENTITY)]
    names: list[str] = []
    vectors: list[list[float]] = []
    seen: dict[str, Location] = {}
    folded: dict[str, tuple[str, Location]] = {}  # case-folded name -> the first name and its line
    for location, text in lines:
        if "\t" in text:
            name, _, values = text.partition("\t")
            fields = values.split()
        else:
            name, *fields = text.split()
        if dim is None:
            dim = len(fields)
        if len(fields) != dim or not fields:
            raise InputError(f"entity {name!r} has {len(fields)} values, expected {dim}", location, fix=VECTORS_FIX)
        try:
            vector = [float(value) for value in fields]
        except ValueError:
            raise InputError(f"entity {name!r} has a value that is not a number", location, fix=VECTORS_FIX) from None
        if not all(math.isfinite(value) for value in vector):
            raise InputError(f"entity {name!r} has a value that is not finite", location, fix=VECTORS_FIX)
        key = entity_key(name)
        check_visible(key, f"entity {name!r}", location)
        if key in seen:
            raise InputError(f"entity {name!r} is listed twice (first at {seen[key].place})", location,
                             fix="keep one vector per entity")  # fmt: skip
        other, first = folded.setdefault(key.casefold(), (key, location))
        if other != key:
            raise InputError(
                f"entity {key!r} differs only in case from {other!r} at {first.place}: aliases are matched "
                "regardless of case, so the two could not be told apart",
                location,
                fix="rename one of the two (e.g. 'Name (kind)'), or keep one vector for both",
            )
        seen[key] = location
        names.append(key)
        vectors.append(vector)
    return names, torch.tensor(vectors, dtype=torch.float32)


@dataclasses.dataclass
class KnowledgeBaseFiles:
    """A KB read from files.

    Attributes:
        entities: the KB rows' entity names (``None``: the rows are the tokenizer's entity vocabulary, LUKE's table).
        vectors: ``(N, D)`` entity embeddings of those rows, or ``None`` (the model's own entity table).
        aliases: normalised alias -> ``[(KB row, prior), ...]``, or ``None`` (the entity names / titles, prior 1).
        skipped: alias lines whose entity the KB lacks (left out, counted).
        alias_rows: the alias lines kept, ``(alias, entity name, prior)``, one per (alias, entity) up to case and
            punctuation (``processing_kb.MERGE_RULE``), as a checkpoint saves them (``save``).
    """

    entities: list[str] | None
    vectors: torch.Tensor | None
    aliases: dict[str, list[tuple[int, float]]] | None
    skipped: int = 0
    alias_rows: list[tuple[str, str, float]] = dataclasses.field(default_factory=list)

    def save(self, directory: str | Path) -> None:
        """Write the KB beside a checkpoint's weights (``loading_gesa.KNOWLEDGE_FILES``): the entity list, one name
        per line in row order (``kb_entities.txt``; the vectors are the weights' ``knowledge_base``), and the alias
        table's kept lines (``kb_alias_table.tsv``, the format ``--kb_alias_table`` reads)."""
        directory = Path(directory)
        if self.entities is not None:
            text = "".join(f"{name}\n" for name in self.entities)
            (directory / KB_ENTITIES_FILE).write_text(text, encoding="utf-8")
        if self.alias_rows:
            lines = [f"{alias}\t{entity}\t{prior!r}\n" for alias, entity, prior in self.alias_rows]
            (directory / KB_ALIAS_TABLE_FILE).write_text("alias\tentity\tprior\n" + "".join(lines), encoding="utf-8")

    def candidate_generator(
        self, entity_vocab: Mapping[str, int] | None, max_candidates: int = 30
    ) -> EntityCandidateGenerator:
        """The collators' candidates: this KB's aliases, then its entity names (or the tokenizer's titles)."""
        titles = entity_vocab if self.entities is None else {name: row for row, name in enumerate(self.entities)}
        return EntityCandidateGenerator(titles, self.aliases, max_candidates)


def load_knowledge_files(
    alias_table: str | Path | None = None,
    entity_vectors: str | Path | None = None,
    entity_vocab: Mapping[str, int] | None = None,
    alias_where: str | None = None,
    vectors_where: str | None = None,
) -> KnowledgeBaseFiles:
    """Read the KB files and resolve the alias table's entities into KB rows: the vectors file's entity list when
    given, else ``entity_vocab`` (LUKE's titles, matched as given or after ``entity_key``).

    An alias line whose entity the KB lacks is left out (counted in ``skipped``, the first logged); a table none of
    whose entities the KB has is an ``InputError``.
    """
    entities, vectors = None, None
    if entity_vectors is not None:
        entities, vectors = read_entity_vectors(entity_vectors, vectors_where)
    if alias_table is None:
        return KnowledgeBaseFiles(entities, vectors, None)
    return resolve_alias_table(alias_table, entities, vectors, entity_vocab, alias_where)


def resolve_alias_table(
    alias_table: str | Path,
    entities: list[str] | None,
    vectors: torch.Tensor | None,
    entity_vocab: Mapping[str, int] | None,
    alias_where: str | None = None,
) -> KnowledgeBaseFiles:
    """The alias table's lines resolved into the rows of ``entities`` (or ``entity_vocab``'s ids without them)."""
    if entities is not None:
        rows = {name: row for row, name in enumerate(entities)}
    elif entity_vocab is not None:
        rows = {**{entity_key(title): int(i) for title, i in entity_vocab.items()}, **dict(entity_vocab)}
    else:
        raise InputError("has no entity list to resolve its entities in", alias_where or str(alias_table),
                         fix="give --kb_entity_vectors, or a tokenizer with an entity vocabulary (LUKE's)")  # fmt: skip
    aliases: dict[str, list[tuple[int, float]]] = {}
    table = read_alias_table(alias_table, alias_where)
    missing, repeated = [], []
    kept: dict[tuple[str, int], tuple[AliasRow, int, float]] = {}  # (alias key, KB row) -> first line, row, prior
    for row in table:
        kb_row = rows.get(row.entity, rows.get(entity_key(row.entity)))
        if kb_row is None:
            missing.append(row)
            continue
        pair = (normalize_title(row.alias), kb_row)
        if pair in kept:  # one candidate per (alias, entity), its highest prior: processing_kb.MERGE_RULE
            first, _, prior = kept[pair]
            repeated.append((row, first.location))
            kept[pair] = (first, kb_row, max(prior, row.prior))
        else:
            kept[pair] = (row, kb_row, row.prior)
    for row, kb_row, prior in kept.values():
        aliases.setdefault(row.alias, []).append((kb_row, prior))
    if not aliases:
        raise InputError(
            f"none of its {len(table)} lines names an entity of the KB (first: {table[0].entity!r})",
            alias_where or str(alias_table),
            fix="name entities as the KB does (--kb_entity_vectors' names, or LUKE's titles)",
        )
    if repeated:
        row, first = repeated[0]
        logger.warning(
            "%s: %d line(s) repeat an (alias, entity) pair of an earlier line up to case and punctuation (first: %s, "
            "%r -> %r, as at %s): each pair is one candidate, with the highest of its priors",
            alias_where or alias_table, len(repeated), row.location.place, row.alias, row.entity, first.place,
        )  # fmt: skip
    if missing:
        logger.warning(
            "%s: %d alias line(s) name entities the KB lacks and are left out (first: %s, %r)",
            alias_where or alias_table, len(missing), missing[0].location.place, missing[0].entity,
        )  # fmt: skip
    alias_rows = [(row.alias, row.entity, prior) for row, _, prior in kept.values()]
    return KnowledgeBaseFiles(entities, vectors, aliases, skipped=len(missing), alias_rows=alias_rows)


def read_entity_list(path: str | Path, where: str | None = None) -> list[str]:
    """A checkpoint's ``kb_entities.txt``: one entity name per line, the KB's rows in order."""
    names = [text.strip() for _, text in read_text_lines(path, where, fix="save the model again") if text.strip()]
    if not names:
        raise InputError("holds no entity", where or str(path), fix="save the model again with its KB")
    return names


def checkpoint_knowledge_files(
    folder: str | Path | None, entity_vocab: Mapping[str, int] | None = None
) -> KnowledgeBaseFiles | None:
    """The KB a checkpoint (a folder or a Hub repo, ``loading_gesa.knowledge_file``) carries
    (``loading_gesa.KNOWLEDGE_FILES``, written by ``KnowledgeBaseFiles.save``), or ``None`` when it carries none (its
    KB is LUKE's entity table, its aliases the titles). The vectors stay in the weights (``vectors`` is ``None``)."""
    entities_path, aliases_path = knowledge_file(folder, KB_ENTITIES_FILE), knowledge_file(folder, KB_ALIAS_TABLE_FILE)
    if entities_path is None and aliases_path is None:
        return None
    entities = read_entity_list(entities_path) if entities_path is not None else None
    if aliases_path is None:
        return KnowledgeBaseFiles(entities, None, None)
    return resolve_alias_table(aliases_path, entities, None, entity_vocab)


def checkpoint_knowledge_builder(model: Any, tokenizer: Any, user: str) -> KnowledgeInputBuilder:
    """The knowledge inputs of a KAR/ERNIE checkpoint's pipeline (``user``): candidates from the KB files the
    checkpoint carries (``checkpoint_knowledge_files``), else from the tokenizer's entity titles (LUKE's table); a
    user KB (``kb_size``) without its files is refused (``processing_kb.knowledge_inputs_of``)."""
    entity_vocab = getattr(tokenizer, "entity_vocab", None)
    folder = getattr(model.config, "_name_or_path", None)
    carried = knowledge_file(folder, KB_ENTITIES_FILE) is not None
    variant = knowledge_inputs_of(model, user, kb_files=carried)  # a user KB without its entity list: refused
    files = checkpoint_knowledge_files(folder, entity_vocab)
    kb_size = getattr(model.config, "kb_size", None)
    if files is None:
        return KnowledgeInputBuilder.from_tokenizer(tokenizer, variant)
    if kb_size is not None and carried and len(files.entities) != kb_size:
        raise ValueError(
            f"{user}: {model.config._name_or_path}/{KB_ENTITIES_FILE} lists {len(files.entities)} entities, the "
            f"model's KB has kb_size={kb_size} rows: the folder's files belong to another model; save it again"
        )
    return KnowledgeInputBuilder(tokenizer, files.candidate_generator(entity_vocab), variant)


__all__ = [
    "JOINERS",
    "AliasRow",
    "KnowledgeBaseFiles",
    "checkpoint_knowledge_builder",
    "checkpoint_knowledge_files",
    "check_visible",
    "entity_key",
    "invisible_characters",
    "load_knowledge_files",
    "read_alias_table",
    "read_entity_list",
    "read_entity_vectors",
    "resolve_alias_table",
]
