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
"""Transformer-XH heads for its own benchmarks: HotpotQA with supporting facts and answer types, FEVER decoding.

`XhForHotpotQA`, this project's joint HotpotQA model, is `modeling_xh.XhForMultiHopQA` (node relevance, Eq. 11; span
inside the node, Eq. 12; same weights, same names) plus two heads trained with it:

- supporting facts: `p(sp | sentence) = sigmoid(Linear([h_first ; h_last]))` on the first and last token states of
  each sentence (the sentence scorer of the paper's separate supporting-fact model, A.3.2, here on the graph model),
  binary cross-entropy over the real sentences;
- answer type: `p(type | tau) = softmax(Linear(h_tau,0))` over span / yes / no on the relevant node's hub, this
  project's own (the paper does not say how yes/no answers are produced; its A.3.1 classifier is bridge vs
  comparison, `modeling_xh_paper.XhForQuestionType`), cross-entropy on the gold relevant node.

`loss = relevance + span (span answers) + answer type + supporting facts`. Inference (`decode_hotpot`): the most
relevant node, its answer type, its best span for span answers; supporting facts are the sentences with
`p >= 0.5` in the answer node and in the most relevant other node, at least the best sentence of each. The paper's
own system (question classifier, XH per type, separate supporting-fact model) is `modeling_xh_paper` /
`training.xh_paper`.

FEVER: `modeling_xh.XhForFactVerification` (Eqs. 14-16) as is; `decode_fever` ranks the nodes by node importance
`p(s | tau)` (Eq. 15) and predicts as evidence the candidates whose importance is at least uniform (`1 / nodes`),
at most five, best first.

The same classes with `xh_num_hop_layers=0` are this project's no-hop baseline (the paper's Table 4 has no such row).

Flat module: copied next to every saved checkpoint, so it imports only its siblings.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from .checks_gesa import check_class_labels
from .configuration_variants import XhConfig
from .loading_gesa import PipelineSpec
from .modeling_xh import (
    XhEncodedGraphs,
    XhFactVerificationOutput,
    XhForMultiHopQA,
    XhMultiHopQAInputs,
    XhMultiHopQAOutput,
    best_span,
    check_graph_labels,
)

ANSWER_TYPES = ("span", "yes", "no")
FEVER_LABELS = ("SUPPORTS", "REFUTES", "NOT ENOUGH INFO")


def sentence_logits(
    scorer: nn.Linear, words: torch.Tensor, sentence_starts: torch.Tensor, sentence_ends: torch.Tensor | None
) -> torch.Tensor:
    """`scorer([h_first ; h_last])` of every sentence (A.3.2's sentence classifier), `(G, N, S)`.

    Args:
        scorer: `Linear(2D, 1)`.
        words: `(G, N, L, D)` token states.
        sentence_starts, sentence_ends: `(G, N, S)` token indices of each sentence's first and last token (-1: no
            sentence); absent sentences get `finfo.min`.
    """
    graphs, nodes, length = words.shape[:3]
    if sentence_ends is None or sentence_ends.shape != sentence_starts.shape:
        raise ValueError("sentence_ends must be given with sentence_starts, with the same (G, N, S) shape.")
    if tuple(sentence_starts.shape[:2]) != (graphs, nodes):
        raise ValueError(
            f"sentence_starts has shape {tuple(sentence_starts.shape)}; expected (graphs, nodes, sentences) "
            f"with (graphs, nodes) = {(graphs, nodes)}."
        )
    if not torch.compiler.is_compiling() and ((sentence_ends >= length) | (sentence_starts >= length)).any():
        raise ValueError(f"sentence_starts/sentence_ends must be token indices below {length} (or -1).")
    index = torch.stack([sentence_starts, sentence_ends], -1).clamp(min=0)  # (G, N, S, 2)
    gathered = torch.gather(words, 2, index.flatten(2)[..., None].expand(-1, -1, -1, words.size(-1)))  # (G, N, 2S, D)
    pairs = gathered.view(graphs, nodes, -1, 2 * words.size(-1))
    present = sentence_starts >= 0
    return scorer(pairs).squeeze(-1).masked_fill(~present, torch.finfo(words.dtype).min)


def supporting_loss(
    supporting_logits: torch.Tensor,
    sentence_labels: torch.Tensor,
    sentence_starts: torch.Tensor,
    node_mask: torch.Tensor,
) -> torch.Tensor | None:
    """Binary cross-entropy of `sentence_labels` `(G, N, S)` (1 supporting, 0 not, -100 ignored) over the real
    sentences of the real nodes; None when none is labelled."""
    if sentence_labels.shape != supporting_logits.shape:
        raise ValueError(
            f"sentence_labels has shape {tuple(sentence_labels.shape)}; expected {tuple(supporting_logits.shape)}"
            " like sentence_starts."
        )
    keep = (sentence_labels != -100) & (sentence_starts >= 0) & node_mask[..., None]
    if not keep.any():
        return None
    return F.binary_cross_entropy_with_logits(supporting_logits[keep].float(), sentence_labels[keep].float())


def supporting_sentences(logits: torch.Tensor, threshold: float = 0.5) -> list[int]:
    """The sentences of one node (`(S,)` sentence logits, absent sentences `finfo.min`) with `p >= threshold`, at
    least the most probable one; none when the node has no sentence."""
    present = logits > torch.finfo(logits.dtype).min / 2
    if not present.any():
        return []
    probs = logits.float().sigmoid().masked_fill(~present, -1.0)
    return [int(s) for s in ((probs >= threshold) & present).nonzero().flatten()] or [int(probs.argmax())]


@dataclass
class XhHotpotQAOutput(XhMultiHopQAOutput):
    """
    Args:
        loss: `relevance_loss + span_loss + answer_type_loss + supporting_loss` (the terms that have labels).
        relevance_logits: `(G, N)`, padded nodes `finfo.min`.
        start_logits, end_logits: `(G, N, L)`, non-context tokens `finfo.min`.
        answer_type_logits: `(G, N, 3)` span / yes / no per node.
        supporting_logits: `(G, N, S)` per sentence (`sentence_starts` given), padded sentences `finfo.min`.
        relevance_loss, span_loss, answer_type_loss, supporting_loss: the loss terms.
        hub_states: `(G, N, D)`.
        hop_attentions: per hop layer `(G, H, N, N)`, with `output_attentions`.
    """


class XhHotpotQAInputs(XhMultiHopQAInputs, total=False):
    """`XhForHotpotQA`'s inputs: `XhForMultiHopQA`'s labels plus `answer_type` `(G,)` (0 span, 1 yes, 2 no, -100
    none), `sentence_starts` / `sentence_ends` `(G, N, S)` each sentence's first and last token (-1: no sentence) and
    `sentence_labels` `(G, N, S)` (1 supporting, 0 not, -100 ignored)."""

    answer_type: torch.LongTensor | None
    sentence_starts: torch.LongTensor | None
    sentence_ends: torch.LongTensor | None
    sentence_labels: torch.LongTensor | None


class XhForHotpotQA(XhForMultiHopQA):
    """HotpotQA (answer + supporting facts) with Transformer-XH; see the module docstring.

    Features: `processing_xh_tasks.XhTaskProcessor.encode_hotpot_rows`. Prediction: `decode_hotpot`.
    """

    pipeline = PipelineSpec("xh-hotpot-qa", "pipeline_xh_tasks.XhHotpotQAPipeline")
    head_inputs = XhHotpotQAInputs

    def __init__(self, config: XhConfig) -> None:
        super().__init__(config)
        self.answer_type = nn.Linear(config.hidden_size, len(ANSWER_TYPES))
        self.supporting = nn.Linear(2 * config.hidden_size, 1)
        self.post_init()

    def score_graphs(self, encoded: XhEncodedGraphs, inputs: XhHotpotQAInputs) -> XhHotpotQAOutput:
        """The joint head: node relevance, the span inside the node, the answer type and the supporting facts;
        `XhHotpotQAInputs` give the loss (`sentence_starts` / `sentence_ends` the supporting facts' logits). Other
        inputs: `XhModel`'s."""
        answer_type, sentence_starts = inputs["answer_type"], inputs["sentence_starts"]
        relevant_node, start_positions = inputs["relevant_node"], inputs["start_positions"]
        step = self.graph_step(encoded)
        answer_type_logits = self.answer_type(step.hubs)
        supporting_logits = None
        if sentence_starts is not None:
            supporting_logits = sentence_logits(self.supporting, step.words, sentence_starts, inputs["sentence_ends"])
        if answer_type is not None:  # 0 span, 1 yes, 2 no (ANSWER_TYPES), -100 none
            check_graph_labels(step.words.size(0), answer_type=answer_type)
            check_class_labels(answer_type, len(ANSWER_TYPES), "answer_type")
            if start_positions is not None:  # a span only for span answers
                start_positions = start_positions.masked_fill(answer_type != 0, -100)
        losses = self.relevance_and_span_losses(step, relevant_node, start_positions, inputs["end_positions"])
        if relevant_node is not None and answer_type is not None:
            rows = (relevant_node != -100).nonzero().squeeze(1)
            typed = answer_type[rows]
            if rows.numel() and (typed != -100).any():
                logits = answer_type_logits[rows, relevant_node[rows]].float()
                losses["answer_type"] = F.cross_entropy(logits, typed, ignore_index=-100)
        if inputs["sentence_labels"] is not None and supporting_logits is not None:
            loss = supporting_loss(supporting_logits, inputs["sentence_labels"], sentence_starts, step.node_mask)
            if loss is not None:
                losses["supporting"] = loss
        return XhHotpotQAOutput(
            loss=sum(losses.values()) if losses else None,
            relevance_logits=step.relevance_logits,
            start_logits=step.start_logits,
            end_logits=step.end_logits,
            answer_type_logits=answer_type_logits,
            supporting_logits=supporting_logits,
            relevance_loss=losses.get("relevance"),
            span_loss=losses.get("span"),
            answer_type_loss=losses.get("answer_type"),
            supporting_loss=losses.get("supporting"),
            hub_states=step.outputs.hub_states,
            hop_attentions=step.outputs.hop_attentions,
        )

    @staticmethod
    def decode_hotpot(
        output: XhHotpotQAOutput, node_mask: torch.Tensor, max_answer_length: int = 30, threshold: float = 0.5
    ) -> list[dict[str, Any]]:
        """Per graph: `{"node", "answer_type", "start", "end", "score", "supporting": [(node, sentence), ...]}`.

        `start`/`end` are token indices inside `node` (None for yes/no); `score` is the probability of the chosen
        node times that of the answer type (times that of the span, for span answers).
        """
        results = []
        for graph in range(output.relevance_logits.size(0)):
            real = node_mask[graph].bool()
            relevance = output.relevance_logits[graph].float().masked_fill(~real, float("-inf")).softmax(-1)
            ranked = [int(n) for n in relevance.argsort(descending=True) if real[n]]
            node = ranked[0]
            types = output.answer_type_logits[graph, node].float().softmax(-1)
            kind = int(types.argmax())
            score = float(relevance[node] * types[kind])
            start = end = None
            if kind == 0:
                start_logits = output.start_logits[graph, node].float()
                end_logits = output.end_logits[graph, node].float()
                start, end = best_span(start_logits, end_logits, max_answer_length)
                score *= float(start_logits.softmax(-1)[start] * end_logits.softmax(-1)[end])
            supporting: list[tuple[int, int]] = []
            if output.supporting_logits is not None:
                for chosen in ranked[:2]:
                    logits = output.supporting_logits[graph, chosen]
                    supporting += [(chosen, s) for s in supporting_sentences(logits, threshold)]
            results.append(
                {"node": node, "answer_type": ANSWER_TYPES[kind], "start": start, "end": end, "score": score,
                 "supporting": supporting}
            )  # fmt: skip
        return results


def decode_fever(
    output: XhFactVerificationOutput,
    candidates: Sequence[Sequence[Sequence[Any] | None]],
    labels: Sequence[str] = FEVER_LABELS,
    max_evidence: int = 5,
) -> list[dict[str, Any]]:
    """Per graph: `{"label", "score", "evidence": [[page, line], ...]}` from Eq. 16 and the node importance.

    Evidence: the candidate nodes (not the claim-only node, `None`) with importance `p(s|tau) >= 1 / nodes`, best
    first, at most `max_evidence`.
    """
    results = []
    for graph, nodes in enumerate(candidates):
        probs = output.probs[graph].float()
        label = int(probs.argmax())
        importance = output.node_importance[graph, : len(nodes)].float()
        order = importance.argsort(descending=True).tolist()
        floor = 1.0 / max(len(nodes), 1)
        evidence = [list(nodes[n]) for n in order if nodes[n] is not None and float(importance[n]) >= floor - 1e-12]
        results.append({"label": labels[label], "score": float(probs[label]), "evidence": evidence[:max_evidence]})
    return results


XhForHotpotQA.register_for_auto_class("AutoModelForQuestionAnswering")

__all__ = [
    "ANSWER_TYPES",
    "FEVER_LABELS",
    "XhForHotpotQA",
    "XhHotpotQAInputs",
    "XhHotpotQAOutput",
    "decode_fever",
    "sentence_logits",
    "supporting_loss",
    "supporting_sentences",
]
