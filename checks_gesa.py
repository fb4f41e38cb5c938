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
"""Input checks of GESA and its variants: one clear `ValueError` naming the input and the fix, never a crash deep
inside torch or a silently wrong answer.

`check_model_inputs` checks `GesaModel.forward`'s inputs (ranks, shapes and dtypes on the host; every value range
read back in one host sync through `InputValueChecks`); the heads add `check_candidate_labels` and
`check_one_placeholder` to the same sync; `check_kb_ids`, `check_shape` and `check_kar_inputs` serve the
knowledge variants. `inputs_checked_by_head` tells a base model that the head running it has just checked the same
inputs: per thread and per call (a context variable), never state on the model. The accepted inputs themselves:
`GesaInputs` (what `check_unknown_inputs` accepts), `with_inputs_of` (a forward's signature naming them) and
`refuse_span_positions` (the extractive-QA inputs the entity heads refuse).

Flat module: copied next to every saved checkpoint; it imports torch and transformers only.
"""

from __future__ import annotations

import contextlib
import contextvars
import inspect
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import torch
from torch import nn
from transformers.utils import TransformersKwargs


# Inputs that index tables or positions: a float tensor there is a caller's mistake, not a value to round.
class GesaInputs(TransformersKwargs, total=False):
    """`GesaModel.forward`'s inputs after `input_ids` (README "Model inputs") and transformers' own keywords
    (`output_attentions`, `output_hidden_states`, ...): what the heads and the variants' models pass on."""

    attention_mask: torch.Tensor | None
    token_type_ids: torch.LongTensor | None
    entity_ids: torch.LongTensor | None
    entity_attention_mask: torch.Tensor | None
    entity_token_type_ids: torch.LongTensor | None
    entity_position_ids: torch.LongTensor | None
    global_attention_mask: torch.LongTensor | None
    placeholder_entity_mask: torch.Tensor | None
    entity_string_ids: torch.LongTensor | None
    entity_sentence_ids: torch.LongTensor | None
    question_string_ids: torch.LongTensor | None
    entity_graph_edges: torch.LongTensor | None
    inputs_embeds: torch.Tensor | None


def own_inputs(inputs: type[Mapping[str, Any]]) -> dict[str, Any]:
    """The inputs a `TypedDict` of a head's inputs adds to `GesaInputs` (its base), in declaration order, with their
    annotations (as text under postponed evaluation)."""
    return {
        name: getattr(hint, "__forward_arg__", hint)
        for name, hint in inputs.__annotations__.items()
        if name not in GesaInputs.__annotations__
    }


def with_inputs_of(*forwards: Callable, own: type[Mapping[str, Any]] | None = None) -> Callable[[Callable], Callable]:
    """Decorator: the decorated `forward`'s signature also names the inputs of `forwards`, which reach it through
    `**kwargs` (Trainer keeps the dataset columns a model's signature names; `help()` shows them).

    `own`: a `TypedDict` (over `GesaInputs`) of the inputs this forward adds (labels, a variant's knowledge inputs);
    they come first after `input_ids`, keyword-only, default None, and the body reads them with `pop_inputs`. A
    head thus declares only what differs from its base model's forward."""

    def decorate(forward: Callable) -> Callable:
        signature = inspect.signature(forward)
        own_parameters = [
            inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=hint)
            for name, hint in (own_inputs(own) if own is not None else {}).items()
        ]
        parameters = [p for p in signature.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
        own_parameters = parameters + own_parameters
        rest = [p for p in signature.parameters.values() if p.kind is inspect.Parameter.VAR_KEYWORD]
        names = {p.name for p in own_parameters}
        for other in forwards:
            for p in inspect.signature(other).parameters.values():
                if p.name not in names and p.name != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL):
                    own_parameters.append(p.replace(kind=inspect.Parameter.KEYWORD_ONLY))
                    names.add(p.name)
        forward.__signature__ = signature.replace(parameters=own_parameters + rest)
        return forward

    return decorate


def pop_inputs(kwargs: dict[str, Any], own: type[Mapping[str, Any]]) -> list[Any]:
    """Take a forward's `own` inputs (see `with_inputs_of`) out of its `kwargs`, in declaration order (None when not
    given), leaving the base model's."""
    return [kwargs.pop(name, None) for name in own_inputs(own)]


def refuse_span_positions(model: nn.Module, start_positions: torch.Tensor | None, end_positions: torch.Tensor | None):
    """Generic extractive-QA code sends token spans; this head scores entity candidates instead."""
    if start_positions is not None or end_positions is not None:
        raise ValueError(
            f"{type(model).__name__} scores entity candidates, not token spans: it takes labels (batch, entities), "
            "1 for each entity that answers the query, and returns logits (batch, entities); start_positions / "
            "end_positions are not read. Build its inputs with the processor (GesaProcessor), or answer cloze "
            "queries with the entity-cloze pipeline: pipeline(model=<checkpoint>, trust_remote_code=True)."
        )


INTEGER_INPUTS = (
    "input_ids",
    "token_type_ids",
    "position_ids",
    "entity_ids",
    "entity_token_type_ids",
    "entity_position_ids",
    "global_attention_mask",
    "entity_string_ids",
    "entity_sentence_ids",
    "question_string_ids",
    "entity_graph_edges",
)


class InputValueChecks:
    """Value checks on the device, read back in one host sync (each `.item()` would stall an accelerator)."""

    def __init__(self) -> None:
        # (device scalars: bad?, first value or index, second; message from those two values)
        self.pending: list[tuple[torch.Tensor, Callable[[int, int], str]]] = []

    def add(self, bad: torch.Tensor, first: torch.Tensor, second: torch.Tensor, message: Callable[[int, int], str]):
        values = torch.stack([bad.long(), first.long(), second.long()])
        self.pending.append((values, message))

    def within(self, name: str, value: torch.Tensor | None, low: int, high: int, rule: str, hint: str = "") -> None:
        """`value` must lie in `[low, high]`; the error says `rule` and the range found."""
        if value is None or not value.numel() or value.dtype == torch.bool:
            return
        lowest, highest = value.min(), value.max()
        if lowest.is_floating_point():  # masks may be float: NaN is out of range too
            lowest = torch.nan_to_num(lowest, nan=low - 1).floor()
            highest = torch.nan_to_num(highest, nan=high + 1).ceil()
            # a fractional value (a mask of 0.5) is not one of the allowed values: refused, never rounded
            fractional = (value != value.trunc()).reshape(-1)
            flat = fractional.long().argmax()
            self.add(
                fractional.any(),
                flat,
                flat,
                lambda i, _: (
                    f"{rule}; got {value.reshape(-1)[i].item()!r} at flat index {i} (whole numbers only).{hint}"
                ),
            )
        bad = (lowest < low) | (highest > high)
        self.add(bad, lowest, highest, lambda a, b: f"{rule}; got values in [{a}, {b}].{hint}")

    def raise_first(self) -> None:
        if not self.pending:
            return
        device = self.pending[0][0].device
        values = torch.stack([v.to(device) for v, _ in self.pending]).tolist()
        for (bad, first, second), (_, message) in zip(values, self.pending, strict=True):
            if bad:
                raise ValueError(message(first, second))


def check_candidate_labels(
    checks: InputValueChecks, labels: torch.Tensor, batch_size: int, entity_length: int
) -> None:
    """`labels` of the entity-span QA head: `(B, E)`, every entry 0 or 1 (finite)."""
    if tuple(labels.shape) != (batch_size, entity_length):
        raise ValueError(
            f"labels has shape {tuple(labels.shape)}; expected (batch, entities) = {(batch_size, entity_length)}: "
            "1 for each entity that is a right answer, 0 otherwise."
        )
    if not labels.numel():
        return
    wrong = (labels != 0) & (labels != 1)  # NaN and inf compare unequal to both
    flat = wrong.reshape(-1).long().argmax()
    checks.add(
        wrong.any(),
        flat // entity_length,
        flat % entity_length,
        lambda b, e: f"labels must be 0 or 1 (finite), one per entity; labels[{b}, {e}] = {labels[b, e].item()!r}.",
    )


IGNORE_INDEX = -100


def check_class_labels(labels: torch.Tensor, num_classes: int, name: str = "labels") -> None:
    """Class-id ``labels``: integers in ``[0, num_classes)`` or -100 (ignored); a ``ValueError`` naming the first bad
    entry and the fix, where torch would fail inside cross-entropy (a device-side assert on a GPU)."""
    if labels.is_floating_point() or labels.is_complex() or labels.dtype == torch.bool:
        raise ValueError(
            f"{name} must hold integer class ids (0..{num_classes - 1}, or -100 to ignore), got {labels.dtype}"
        )
    if torch.compiler.is_compiling() or not labels.numel():
        return
    bad = ((labels != IGNORE_INDEX) & ((labels < 0) | (labels >= num_classes))).nonzero()
    if len(bad):
        where = ", ".join(str(int(i)) for i in bad[0])
        raise ValueError(
            f"{name}[{where}] = {int(labels[tuple(bad[0])])} is not a class id: the head has {num_classes} classes "
            f"(0..{num_classes - 1}); fix the label (or the label list, config.id2label), or give -100 to ignore it"
        )


def check_token_positions(positions: torch.Tensor, length: int, name: str) -> None:
    """Token-index labels (``start_positions`` / ``end_positions`` of a span head): integers below the ``length``
    tokens of the sequence they index, a negative value meaning no span; a ``ValueError`` naming the first bad entry
    and the range, where torch would fail inside cross-entropy (``IndexError``, a device-side assert on a GPU)."""
    if positions.is_floating_point() or positions.is_complex() or positions.dtype == torch.bool:
        raise ValueError(f"{name} must hold integer token indices (0..{length - 1}, or -100: no span), got "
                         f"{positions.dtype}")  # fmt: skip
    if torch.compiler.is_compiling() or not positions.numel():
        return
    bad = (positions >= length).nonzero()
    if len(bad):
        where = ", ".join(str(int(i)) for i in bad[0])
        raise ValueError(
            f"{name}[{where}] = {int(positions[tuple(bad[0])])} is not a token of its node: the nodes hold {length} "
            f"tokens (0..{length - 1}); fix the label, or give -100 for no span"
        )


def check_binary_targets(labels: torch.Tensor, name: str = "labels") -> None:
    """Multi-label targets: probabilities in ``[0, 1]`` (0/1 for a type list); a ``ValueError`` naming the first entry
    that is not (2.0, NaN, inf would train silently on a wrong loss)."""
    if torch.compiler.is_compiling() or not labels.numel():
        return
    values = labels.float()
    bad = (~((values >= 0) & (values <= 1))).nonzero()  # NaN fails both comparisons
    if len(bad):
        where = ", ".join(str(int(i)) for i in bad[0])
        raise ValueError(
            f"{name}[{where}] = {values[tuple(bad[0])].item()!r} is not a target in [0, 1]: multi-label targets are 1 "
            "for each gold type and 0 otherwise"
        )


def ignored_loss(logits: torch.Tensor) -> torch.Tensor:
    """The loss of a batch whose labels are all ignored (-100): 0, still on the graph, never NaN (masked logits may be
    -inf, and a mean over no label is 0/0)."""
    return (torch.nan_to_num(logits.float(), nan=0.0, posinf=0.0, neginf=0.0) * 0.0).sum()  # no overflowing sum


def check_one_placeholder(
    checks: InputValueChecks, placeholder_entity_mask: torch.Tensor | None, entity_attention_mask: torch.Tensor | None
) -> None:
    """Every row with a real entity has exactly one placeholder entity among its real entities (spec section 1)."""
    if placeholder_entity_mask is None or not placeholder_entity_mask.numel():
        return
    placeholder = placeholder_entity_mask.bool()
    real = entity_attention_mask.bool() if entity_attention_mask is not None else torch.ones_like(placeholder)
    counts = (placeholder & real).sum(dim=1)
    wrong = real.any(dim=1) & (counts != 1)
    row = wrong.long().argmax()
    checks.add(
        wrong.any(),
        row,
        counts[row],
        lambda b, n: (
            f"placeholder_entity_mask must mark exactly one real entity per example (the query's "
            f"placeholder); row {b} marks {n}. With none, entity 0 would be scored as a candidate; with two, one would be "
            "ignored. Build the inputs with the processor (GesaProcessor) or fix the mask."
        ),
    )


def check_unknown_inputs(model: nn.Module, kwargs: dict, accepted: type = TransformersKwargs) -> None:
    """Keyword inputs that `accepted` (a TypedDict: transformers' keywords, or `GesaInputs`) does not name are
    refused, naming them (a misspelt input would otherwise be ignored)."""
    unknown = sorted(set(kwargs) - set(accepted.__annotations__))
    if unknown:
        raise ValueError(
            f'{type(model).__name__}.forward got unexpected inputs {unknown}; see README "Model inputs" (and the '
            "variant's model card) for the accepted inputs."
        )


def check_graph_edges_wanted(config: Any, edges: torch.Tensor | None, entity_ids: torch.Tensor | None) -> None:
    """The context graph's edges go with a model whose e2e labels read them (`entity_graph="context"`), and such a
    model needs them: without them every entity pair would silently lose its edge label."""
    graph = getattr(config, "entity_graph", "merged")
    labelled = config.use_relative_labels and config.label_switches["e2e"] and config.label_switches["e2e_graph"]
    if edges is not None and graph != "context":
        raise ValueError(
            f"entity_graph_edges were given to a model with entity_graph={graph!r}, whose e2e labels come from its own "
            "PLC / SENT / MATCH graph and never read them; build the features with WikihopProcessor(entity_graph="
            "'merged') (the model's config.entity_graph), or use a model with entity_graph='context'."
        )
    if edges is None and graph == "context" and labelled and entity_ids is not None and entity_ids.size(1) > 0:
        raise ValueError(
            "this model's e2e labels are the thesis's context graph (entity_graph='context'), but no "
            "entity_graph_edges were given; build the features with WikihopProcessor(entity_graph='context') (the "
            "model's config.entity_graph), which adds them."
        )


def check_model_inputs(
    config: Any,
    inputs: dict[str, torch.Tensor | None],
    batch_size: int | None = None,
    word_length: int | None = None,
    mention_positions_embedded: bool = False,
    embeds_dtype: torch.dtype | None = None,
) -> None:
    """Raise a `ValueError` naming the input, and the fix, for inputs the model would crash on or misread.

    `inputs`: `GesaModel.forward`'s inputs (absent ones count as None); `batch_size`/`word_length` are derived
    from `input_ids`/`inputs_embeds` when not given. A head may add `labels` (`(B, E)`, 0/1) and `scored=True` (one
    placeholder per row with entities, and at least one candidate entity). `mention_positions_embedded`: mention
    positions index the absolute position table too (bounded by `max_position_embeddings`); `embeds_dtype`: the
    dtype `inputs_embeds` must have (the model's; transformers models do not cast inputs, so a mismatch is refused
    here rather than failing inside a layer norm). Ranks, shapes and dtypes are read without touching the device;
    every value range comes back in one host sync.
    """
    get = inputs.get
    input_ids, inputs_embeds, entity_ids = get("input_ids"), get("inputs_embeds"), get("entity_ids")
    if (input_ids is None) == (inputs_embeds is None):
        raise ValueError("Pass exactly one of input_ids (batch, words) or inputs_embeds (batch, words, hidden).")
    for name, value, rank, shape in (
        ("input_ids", input_ids, 2, "(batch, words)"),
        ("inputs_embeds", inputs_embeds, 3, "(batch, words, hidden_size)"),
        ("entity_ids", entity_ids, 2, "(batch, entities)"),
    ):
        if value is not None and value.dim() != rank:
            hint = f"; for one example add the batch dimension ({name}[None])" if value.dim() == rank - 1 else ""
            raise ValueError(f"{name} has shape {tuple(value.shape)}; expected {shape}{hint}.")
    for name in INTEGER_INPUTS:
        value = get(name)
        if value is not None and (value.is_floating_point() or value.is_complex()):
            raise ValueError(
                f"{name} must hold integer ids or positions (torch.long), got dtype {value.dtype}; pass the "
                "processor's output unchanged (or inputs_embeds for word vectors)."
            )
    reference = input_ids if input_ids is not None else inputs_embeds
    batch_size, word_length = reference.shape[:2] if batch_size is None else (batch_size, word_length)
    if inputs_embeds is not None and embeds_dtype is not None and inputs_embeds.dtype != embeds_dtype:
        raise ValueError(
            f"inputs_embeds has dtype {inputs_embeds.dtype} but the model computes in {embeds_dtype}; pass "
            f"inputs_embeds.to({embeds_dtype}) (or load the model in {inputs_embeds.dtype})."
        )
    if inputs_embeds is not None and inputs_embeds.size(-1) != config.hidden_size:
        raise ValueError(
            f"inputs_embeds has shape {tuple(inputs_embeds.shape)}; its last dimension must be "
            f"hidden_size={config.hidden_size}."
        )
    word_shaped = (
        "input_ids",
        "attention_mask",
        "token_type_ids",
        "position_ids",
        "global_attention_mask",
        "question_string_ids",
    )
    entity_shaped = (
        "entity_attention_mask",
        "entity_token_type_ids",
        "placeholder_entity_mask",
        "entity_string_ids",
        "entity_sentence_ids",
    )
    for name in word_shaped:
        value = get(name)
        if value is not None and tuple(value.shape) != (batch_size, word_length):
            raise ValueError(
                f"{name} has shape {tuple(value.shape)}; expected (batch, words) = {(batch_size, word_length)}."
            )
    if get("position_ids") is not None and not config.use_absolute_position_embeddings:
        raise ValueError(
            "position_ids are read only with use_absolute_position_embeddings=True (ablation='luke'); GESA's "
            "relative labels take word order from the input itself. Drop position_ids."
        )
    longest = config.max_position_embeddings - (config.pad_token_id or 0) - 1
    if config.use_absolute_position_embeddings and get("position_ids") is None and word_length > longest:
        raise ValueError(
            f"input_ids has {word_length} words, but absolute positions (use_absolute_position_embeddings=True) "
            f"number at most max_position_embeddings - pad_token_id - 1 = {longest} words "
            f"(config.max_position_embeddings={config.max_position_embeddings}). Shorten the input (the "
            "processor's max_seq_length) or use relative labels instead (use_absolute_position_embeddings=False)."
        )
    entity_length = 0
    check_graph_edges_wanted(config, get("entity_graph_edges"), entity_ids)
    if entity_ids is None:
        for name in (*entity_shaped, "entity_position_ids", "entity_graph_edges"):
            if get(name) is not None:
                raise ValueError(f"{name} was given without entity_ids; pass entity_ids too or drop {name}.")
    else:
        if entity_ids.size(0) != batch_size:
            raise ValueError(
                f"entity_ids has shape {tuple(entity_ids.shape)}; expected (batch={batch_size}, entities)."
            )
        entity_length = entity_ids.size(1)
        for name in entity_shaped:
            value = get(name)
            if value is not None and tuple(value.shape) != (batch_size, entity_length):
                raise ValueError(
                    f"{name} has shape {tuple(value.shape)}; expected (batch, entities) = "
                    f"{(batch_size, entity_length)}."
                )
        positions = get("entity_position_ids")
        if positions is not None and (
            positions.dim() != 3 or tuple(positions.shape[:2]) != (batch_size, entity_length)
        ):
            raise ValueError(
                f"entity_position_ids has shape {tuple(positions.shape)}; expected (batch, entities, "
                f"mention_length) with batch, entities = {(batch_size, entity_length)}."
            )
        edges = get("entity_graph_edges")
        if edges is not None and (edges.dim() != 3 or edges.size(0) != batch_size or edges.size(2) != 3):
            raise ValueError(
                f"entity_graph_edges has shape {tuple(edges.shape)}; expected (batch={batch_size}, edges, 3): rows "
                "(entity i, entity j, edge kind), -1 rows for padding (WikihopProcessor(entity_graph='context'))."
            )
    checks = InputValueChecks()
    if get("entity_graph_edges") is not None and entity_length:
        edges, kinds = get("entity_graph_edges"), config.num_context_edge_kinds
        padded = edges[..., 2] < 0
        checks.within(
            "entity_graph_edges",
            edges[..., :2].masked_fill(padded[..., None], 0),
            0,
            entity_length - 1,
            f"entity_graph_edges rows must name two entities in [0, {entity_length - 1}] (or be -1 rows)",
        )
        checks.within(
            "entity_graph_edges",
            edges[..., 2],
            -1,
            kinds - 1,
            f"entity_graph_edges kinds must be context-graph edge kinds in [0, {kinds - 1}] "
            "(structure_gesa.CONTEXT_EDGE_KINDS), -1 on padding rows",
        )
    vocab, entity_vocab, types = config.vocab_size, config.entity_vocab_size, config.type_vocab_size
    last_position = word_length - 1
    if mention_positions_embedded:  # a mention position indexes LUKE's table too
        last_position = min(last_position, config.max_position_embeddings - 1)
    checks.within(
        "entity_position_ids",
        get("entity_position_ids"),
        -1,
        last_position,
        f"entity_position_ids must be word positions in [0, {last_position}] or -1 for padding"
        + (" (max_position_embeddings bounds entity positions)" if last_position < word_length - 1 else ""),
    )
    checks.within(
        "entity_ids",
        entity_ids,
        0,
        entity_vocab - 1,
        f"entity_ids must be in [0, {entity_vocab - 1}] (entity_vocab_size)",
    )
    checks.within(
        "input_ids",
        input_ids,
        0,
        vocab - 1,
        f"input_ids must be in [0, {vocab - 1}] (vocab_size)",
        " Added tokens need init_added_word_embeddings(processor.added_token_sources()).",
    )
    for name in ("token_type_ids", "entity_token_type_ids"):
        checks.within(name, get(name), 0, types - 1, f"{name} must be in [0, {types - 1}] (type_vocab_size)")
    checks.within(
        "position_ids",
        get("position_ids"),
        0,
        config.max_position_embeddings - 1,
        f"position_ids must be in [0, {config.max_position_embeddings - 1}] (max_position_embeddings)",
    )
    checks.within(
        "global_attention_mask",
        get("global_attention_mask"),
        0,
        2,
        "global_attention_mask must hold 0 (local), 1 (CLS-global) or 2 (question-global)",
    )
    for name in ("attention_mask", "entity_attention_mask", "placeholder_entity_mask"):
        checks.within(name, get(name), 0, 1, f"{name} must hold 0 or 1")
    checks.within(
        "question_string_ids",
        get("question_string_ids"),
        -1,
        torch.iinfo(torch.long).max,
        "question_string_ids must be entity string ids (as entity_string_ids) or -1 on words outside the question's "
        "candidate occurrences",
    )
    if get("labels") is not None:
        check_candidate_labels(checks, get("labels"), batch_size, entity_length)
    if get("scored") and entity_ids is not None:
        check_one_placeholder(checks, get("placeholder_entity_mask"), get("entity_attention_mask"))
    checks.raise_first()


# ids of the models whose inputs the head running them in this thread/context has just checked
_CHECKED_BY_HEAD: contextvars.ContextVar[frozenset[int]] = contextvars.ContextVar(
    "gesa_checked_by_head", default=frozenset()
)


@contextlib.contextmanager
def inputs_checked_by_head(model: nn.Module) -> Iterator[None]:
    """While a head runs `model` on inputs it has just checked (with its own), `model` skips its check.

    Held in a context variable, so it holds for this thread's (and this task's) call only: another thread calling
    the same model meanwhile is checked as usual.
    """
    token = _CHECKED_BY_HEAD.set(_CHECKED_BY_HEAD.get() | {id(model)})
    try:
        yield
    finally:
        _CHECKED_BY_HEAD.reset(token)


def inputs_already_checked(model: nn.Module) -> bool:
    """The head running `model` in this context has checked its inputs (`inputs_checked_by_head`)."""
    return id(model) in _CHECKED_BY_HEAD.get()


KAR_NULL_CANDIDATE = -2
"""A `kar_candidate_ids` value: KnowBERT's NULL entity, a candidate of its own whose embedding is KAR's learned NULL
embedding (it lets the linker prefer "no link" over the KB's candidates)."""

ERNIE_HEAD_ENTITY = -2
"""An `ernie_entity_ids` value: the entity slot of a token the task head reads (ERNIE's released fine-tuning code
gives its `[CLS]` one, `ent_mask[0] = 1`): its input is the zero vector, its entity-stream state gathers the sequence's
entities through the entity self-attention, and the fusion writes it into that token."""


def check_kb_ids(name: str, ids: torch.Tensor, kb_size: int, special: tuple[int, str] | None = None) -> None:
    """`ids` must be KB rows in `[0, kb_size)` or -1 for padding (or `special`'s value, named by its text); raise a
    `ValueError` naming `name` otherwise."""
    if torch.compiler.is_compiling() or not ids.numel():
        return
    if ids.dtype in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
        raise ValueError(f"{name} must be integer KB ids, got dtype {ids.dtype}.")
    checked = ids if special is None else ids[ids != special[0]]
    low, high = (int(checked.min()), int(checked.max())) if checked.numel() else (0, 0)
    if low < -1 or high >= kb_size:
        also = "" if special is None else f", {special[0]} for {special[1]}"
        raise ValueError(
            f"{name} must be knowledge-base rows in [0, {kb_size - 1}] (kb_size) or -1 for padding{also}; got values "
            f"in [{low}, {high}]. Candidate ids index the KB table: the entity vocabulary when kb_size is None, else "
            "the rows given to set_knowledge_base."
        )


def check_shape(name: str, value: torch.Tensor | None, expected: tuple[int, ...], meaning: str) -> None:
    """Raise a `ValueError` naming the input when `value` is present and not of shape `expected`."""
    if value is not None and tuple(value.shape) != tuple(expected):
        raise ValueError(f"{name} has shape {tuple(value.shape)}; expected {meaning} = {tuple(expected)}.")


def check_kar_inputs(
    kar_mention_spans: torch.Tensor | None,
    kar_candidate_ids: torch.Tensor | None,
    kar_candidate_priors: torch.Tensor | None,
    kar_gold_candidates: torch.Tensor | None,
    batch_size: int,
    word_length: int,
    kb_size: int,
) -> None:
    """KAR's inputs: mention spans `(B, C, 2)` (inclusive word spans, `[-1, -1]` padding), candidate KB ids
    `(B, C, K)` (-1 padding, `KAR_NULL_CANDIDATE` the NULL entity), their priors `(B, C, K)` and gold candidates `(B, C)` (-1 none). Each needs what it
    refers to (candidates their spans, priors and gold their candidates)."""
    if kar_mention_spans is None:
        raise ValueError(
            "kar_candidate_ids was given without kar_mention_spans; pass the mention spans the candidates belong to."
        )
    if kar_mention_spans.dim() != 3 or kar_mention_spans.size(0) != batch_size or kar_mention_spans.size(2) != 2:
        raise ValueError(
            f"kar_mention_spans has shape {tuple(kar_mention_spans.shape)}; expected (batch={batch_size}, "
            "mentions, 2) inclusive word spans."
        )
    num_mentions = kar_mention_spans.size(1)
    if not torch.compiler.is_compiling() and kar_mention_spans.numel():
        start, end = kar_mention_spans[..., 0], kar_mention_spans[..., 1]
        padded = (start == -1) & (end == -1)
        bad = ~padded & ((start < 0) | (end < start) | (end >= word_length))
        if bad.any():
            b, c = (int(i) for i in bad.nonzero()[0])
            raise ValueError(
                f"kar_mention_spans[{b}, {c}] = {kar_mention_spans[b, c].tolist()} is not an inclusive word span in "
                f"[0, {word_length - 1}] (or [-1, -1] for padding)."
            )
    if kar_candidate_priors is not None and kar_candidate_ids is None:
        raise ValueError("kar_candidate_priors was given without kar_candidate_ids.")
    if kar_gold_candidates is not None and kar_candidate_ids is None:
        raise ValueError("kar_gold_candidates was given without kar_candidate_ids.")
    if kar_candidate_ids is None:
        return
    if kar_candidate_ids.dim() != 3 or tuple(kar_candidate_ids.shape[:2]) != (batch_size, num_mentions):
        raise ValueError(
            f"kar_candidate_ids has shape {tuple(kar_candidate_ids.shape)}; expected (batch, mentions, "
            f"candidates) with batch, mentions = {(batch_size, num_mentions)} from kar_mention_spans."
        )
    check_kb_ids(
        "kar_candidate_ids", kar_candidate_ids.masked_fill(kar_candidate_ids == KAR_NULL_CANDIDATE, -1), kb_size
    )
    check_shape(
        "kar_candidate_priors", kar_candidate_priors, tuple(kar_candidate_ids.shape), "(batch, mentions, candidates)"
    )
    if kar_gold_candidates is not None:
        check_shape("kar_gold_candidates", kar_gold_candidates, (batch_size, num_mentions), "(batch, mentions)")
        valid = (kar_candidate_ids >= 0) | (kar_candidate_ids == KAR_NULL_CANDIDATE)
        gold = kar_gold_candidates.clamp(min=0)
        real = kar_gold_candidates >= 0
        if not torch.compiler.is_compiling() and (
            (kar_gold_candidates >= kar_candidate_ids.size(2)).any()
            or (kar_gold_candidates < -1).any()
            or (real & ~valid.gather(2, gold.clamp(max=kar_candidate_ids.size(2) - 1)[..., None])[..., 0]).any()
        ):
            raise ValueError(
                "kar_gold_candidates must index a real candidate of its mention (in [0, candidates)) or be -1."
            )


__all__ = [
    "ERNIE_HEAD_ENTITY",
    "IGNORE_INDEX",
    "INTEGER_INPUTS",
    "KAR_NULL_CANDIDATE",
    "InputValueChecks",
    "check_binary_targets",
    "check_candidate_labels",
    "check_class_labels",
    "check_kar_inputs",
    "check_kb_ids",
    "check_model_inputs",
    "check_one_placeholder",
    "check_shape",
    "check_token_positions",
    "check_unknown_inputs",
    "ignored_loss",
    "inputs_already_checked",
    "inputs_checked_by_head",
]
