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
"""The pipeline of the paper's HotpotQA system (Transformer-XH appendix A.3): a `--system paper` output folder
(`modeling_xh_paper.XhPaperSystemForHotpotQA`) answers through `pipeline(model=dir, trust_remote_code=True)` as the
joint system's does: a HotpotQA question (Hub or official row) -> `{"id", "answer", "score", "supporting_facts",
"type"}`, `type` the classifier's.

`paper_system_predictions` is the system's inference, shared by the pipeline and `run_multihop.py --system paper`'s
evaluation: the classifier's type, that type's XH for the answer, that type's supporting-fact model for the facts.

Flat module: copied next to the system's checkpoint, so it imports only third-party packages and its siblings.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import SimpleNamespace
from typing import Any

from .modeling_xh_paper import QUESTION_TYPES, bridge_supporting_facts, comparison_supporting_facts
from .modeling_xh_tasks import XhForHotpotQA
from .pipeline_xh_tasks import XhHotpotQAPipeline, model_outputs
from .processing_xh_tasks import XhTaskProcessor
from .records_xh import to_hotpot_row


def paper_system_predictions(
    model: Any,
    processors: Mapping[str, XhTaskProcessor],
    rows: Sequence[Mapping[str, Any]],
    batch_size: int = 8,
    retrieve: Callable[[Sequence[Mapping[str, Any]], str], Sequence[Mapping[str, Any]]] | None = None,
) -> dict[str, dict[str, Any]]:
    """The paper's HotpotQA system (A.3) on HotpotQA rows: per question id `{answer, score, supporting_facts, type}`.

    `model` is an `XhPaperSystemForHotpotQA`, `processors` its graph processor per question type (`type_edges`). The
    classifier types each question; that type's XH model gives the answer (`XhForHotpotQA.decode_hotpot`) and its
    supporting-fact model the facts: bridge, the answer document and its most relevant parent in the graph the XH model
    read; comparison, the top-2 documents. `retrieve(rows, kind)` (FullWiki) gives the typed questions their graphs.
    """
    components = model.components
    first = processors[QUESTION_TYPES[0]]
    collator = first.get_data_collator()
    typed = model_outputs(components["question_type"], first.encode_question_types(rows, required=False),
                          collator, batch_size)  # fmt: skip
    kinds = [QUESTION_TYPES[int(out["logits"][0].argmax())] for out in typed]
    predictions: dict[str, dict[str, Any]] = {}
    for kind in QUESTION_TYPES:
        chosen = [row for row, k in zip(rows, kinds, strict=True) if k == kind]
        if not chosen:
            continue
        if retrieve is not None:  # FullWiki: the graph depends on the type (comparison: no expansion, A.1)
            chosen = list(retrieve(chosen, kind))
        processor = processors[kind]
        answers, facts = processor.encode_paper_graphs(chosen)
        answered = model_outputs(components[f"xh_{kind}"], answers, collator, batch_size)
        scored = model_outputs(components[f"supporting_{kind}"], facts, collator, batch_size)
        for feature, answer_out, fact_out in zip(answers, answered, scored, strict=True):
            outputs = SimpleNamespace(supporting_logits=None, **{name: answer_out[name] for name in (
                "relevance_logits", "start_logits", "end_logits", "answer_type_logits")})  # fmt: skip
            decoded = XhForHotpotQA.decode_hotpot(outputs, answer_out["node_mask"])[0]
            nodes = len(feature["input_ids"])  # the batch's padded nodes left out
            relevance = fact_out["relevance_logits"][0, :nodes]
            sentences = fact_out["supporting_logits"][0, :nodes]
            if kind == "bridge":
                adjacency = answer_out["node_adjacency"][:nodes, :nodes]
                pairs = bridge_supporting_facts(decoded["node"], adjacency, relevance, sentences)
            else:
                pairs = comparison_supporting_facts(relevance, sentences)
            prediction = processor.hotpot_prediction(feature, {**decoded, "supporting": pairs})
            predictions[str(feature["example_id"])] = {**prediction, "type": kind}
    return predictions


class XhPaperSystemPipeline(XhHotpotQAPipeline):
    """HotpotQA answers and supporting facts from the paper's system (`XhPaperSystemForHotpotQA`, a `--system paper`
    output folder): `{"id", "answer", "score", "supporting_facts", "type"}`, `type` the classifier's."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.processors = {kind: self.xh_processor.with_edges(edges)
                           for kind, edges in self.model.config.type_edges.items()}  # fmt: skip

    def check_input(self, item: Any) -> None:
        to_hotpot_row(item, "pipeline input", default_id="input")

    def preprocess(self, inputs: Mapping[str, Any]) -> dict[str, Any]:
        return {"row": to_hotpot_row(inputs, "pipeline input", default_id="input")}

    def _forward(self, model_inputs: dict[str, Any]) -> dict[str, Any]:
        row = model_inputs["row"]
        return {
            "row": row,
            "prediction": paper_system_predictions(self.model, self.processors, [row], 1)[str(row["id"])],
        }

    def postprocess(self, model_outputs: dict[str, Any]) -> dict[str, Any]:
        return {**model_outputs["prediction"], "id": model_outputs["row"]["id"]}


__all__ = ["XhPaperSystemPipeline", "paper_system_predictions"]
