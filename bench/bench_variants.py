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
"""Every model family's ReCoRD training step side by side: LUKE, LUKE-Graph, GESA, KAR, XH, ERNIE, as ratios to LUKE.

One step = forward of the `...ForEntitySpanQA` model with `labels` (the BCE over candidates), backward, gradients
cleared; dropout 0.1, train mode; same dims for every model; the batch is real processor output: the ReCoRD sample in
`../shared/data/record/` through `GesaProcessor` (windows of `--words` word tokens), the same collated batch for LUKE,
LUKE-Graph, GESA, KAR and ERNIE (plus their knowledge inputs, from `KnowledgeCollator` with a hashed alias table:
three KB candidates per mention). XH reads its own features: `XhProcessor` sentence graphs of the same queries
(`--xh-node-length` tokens per node), so its token count is printed beside it.

    python bench/bench_variants.py                       # CPU fp32: 4 layers, hidden 1024, batch 2 x 512 words
    python bench/bench_variants.py --layers 24 --repeats 3 --skip-memory
    python bench/bench_variants.py --device cuda --dtype bfloat16 --layers 24 --batch 8

`luke` is LUKE itself through this library (`GesaForEntitySpanQA`, `ablation="luke"`: tested equal to
`transformers.LukeModel`); `--hf-luke` also times `transformers.LukeModel` under the same head. `luke_graph` is the
library's LUKE-Graph; `luke_graph_published` the same weights with the gate's `W_s` applied to every (node, question
token) pair as the released LUKE-Graph code does (same function: the run prints the logit difference), the cost the
paper's "reducing execution time" was measured against. GFLOP: each model's matrix-product FLOPs of one step
(`torch.utils.flop_counter`), with the extra over LUKE split per layer for GESA (its label terms run in every layer)
and once per step for LUKE-Graph (its graph module runs after the encoder). Timing: after warm-up
steps, rounds of one step of each model (order reversed every other round); medians over rounds, ratios as the median
of per-round ratios. Peak memory: each model in a fresh subprocess (`common.peak_step_memory`).
"""

from __future__ import annotations

import argparse
import json
import zlib

import common
import torch
from common import median

common.threads_from_argv()

RECORD_FILE = common.ROOT.parent / "shared" / "data" / "record" / "fewglue_train32.jsonl"
ROBERTA_DIR = common.ROOT.parent / "shared" / "tokenizers" / "roberta-base"
MODELS = ("luke", "luke_graph", "luke_graph_published", "gesa", "kar", "xh", "ernie")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    common.add_model_size_arguments(parser, layers=4, hidden=1024, heads=16, ffn=4096)
    parser.add_argument("--words", type=int, default=512, help="word tokens per window (--max_seq_length)")
    parser.add_argument("--batch", type=int, default=2, help="windows per batch (XH: graphs)")
    parser.add_argument("--xh-node-length", type=int, default=128, help="XH: word tokens per sentence node")
    parser.add_argument("--entity-vocab", type=int, default=4096, help="entity table rows (KAR/ERNIE's KB)")
    parser.add_argument("--repeats", type=int, default=5, help="timed rounds (one step of each model per round)")
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    parser.add_argument("--hf-luke", action="store_true", help="also time transformers.LukeModel under GESA's head")
    common.add_common_arguments(parser)
    parser.add_argument("--skip-memory", action="store_true")
    parser.add_argument("--skip-flops", action="store_true", help="do not count each step's matmul FLOPs")
    parser.add_argument("--memory-probe", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def tokenizer():
    from transformers import LukeTokenizer

    return LukeTokenizer(
        vocab=str(ROBERTA_DIR / "vocab.json"),
        merges=str(ROBERTA_DIR / "merges.txt"),
        entity_vocab={"[PAD]": 0, "[UNK]": 1, "[MASK]": 2, "[MASK2]": 3},
        task=None,
    )


def hashed_alias_table(texts, kb_size: int) -> dict[str, list[tuple[int, float]]]:
    """Three KB rows per mention text (by CRC32, past the four special entities) with priors 0.6/0.3/0.1."""
    table = {}
    for text in texts:
        seed = zlib.crc32(text.encode())
        table[text] = [(4 + (seed + 7 * k) % (kb_size - 4), prior) for k, prior in enumerate((0.6, 0.3, 0.1))]
    return table


def make_batches(args: argparse.Namespace) -> tuple[dict[str, dict], int]:
    """The collated batches: one per model family (LUKE, LUKE-Graph and GESA share one), tensors only; and the word
    vocabulary size (with the processor's added tokens)."""
    common.import_gesa()
    from gesa.processing_gesa import GesaProcessor
    from gesa.processing_kb import EntityCandidateGenerator, KnowledgeCollator, KnowledgeInputBuilder
    from gesa.processing_xh import XhProcessor

    records = [json.loads(line) for line in RECORD_FILE.read_text(encoding="utf-8").splitlines()]
    words = tokenizer()
    processor = GesaProcessor(words, max_seq_length=args.words, doc_stride=128, max_query_length=90)
    columns = processor.encode_records(records)
    features = [dict(zip(columns, values, strict=True)) for values in zip(*columns.values(), strict=True)]
    # full windows with the most candidates first: the batch a long ReCoRD passage gives
    features.sort(key=lambda f: (-len(f["input_ids"]), -len(f["entity_ids"])))
    chosen = features[: args.batch]
    collate = processor.get_data_collator()

    def tensors(batch: dict) -> dict:
        return {k: v for k, v in batch.items() if isinstance(v, torch.Tensor)}

    batch = collate(chosen)
    # the mention texts exactly as the knowledge builder reads them back, each given three KB candidates
    reader = KnowledgeInputBuilder(words, EntityCandidateGenerator(alias_table={}), "kar")
    texts = {text for row in reader.mentions(batch) for *_, text in row}
    candidates = EntityCandidateGenerator(alias_table=hashed_alias_table(texts, args.entity_vocab))
    batches = {"gesa": tensors(batch)}
    for variant in ("kar", "ernie"):
        knowledge = KnowledgeCollator(collate, KnowledgeInputBuilder(words, candidates, variant))
        batches[variant] = tensors(knowledge(chosen))
    xh = XhProcessor(words, max_node_length=args.xh_node_length, max_query_length=64)
    graphs = xh.encode_record_graphs(records[: args.batch])
    batches["xh"] = tensors(xh.get_data_collator()(graphs))
    return batches, len(words)


def build_models(args: argparse.Namespace, vocab_size: int, names: list[str]) -> dict[str, torch.nn.Module]:
    gesa = common.import_gesa()
    from gesa.configuration_variants import ErnieConfig, KarConfig, XhConfig
    from gesa.modeling_ernie import ErnieForEntitySpanQA
    from gesa.modeling_kar import KarForEntitySpanQA
    from gesa.modeling_xh import XhForEntitySpanQA

    dims = dict(
        vocab_size=vocab_size,
        entity_vocab_size=args.entity_vocab,
        hidden_size=args.hidden,
        num_hidden_layers=args.layers,
        num_attention_heads=args.heads,
        intermediate_size=args.ffn,
        max_position_embeddings=max(514, args.words + 2),
    )
    builders = {
        "luke": lambda: gesa.GesaForEntitySpanQA(gesa.GesaConfig(**dims, ablation="luke")),
        "luke_graph": lambda: gesa.LukeGraphForEntitySpanQA(gesa.LukeGraphConfig(**dims)),
        "luke_graph_published": lambda: with_published_gates(
            gesa.LukeGraphForEntitySpanQA(gesa.LukeGraphConfig(**dims))
        ),
        "gesa": lambda: gesa.GesaForEntitySpanQA(gesa.GesaConfig(**dims)),
        "kar": lambda: KarForEntitySpanQA(KarConfig(**dims)),
        "xh": lambda: XhForEntitySpanQA(XhConfig(**dims, xh_num_hop_layers=min(3, args.layers))),
        "ernie": lambda: ErnieForEntitySpanQA(ErnieConfig(**dims)),
        "hf-luke": lambda: HfLukeForEntitySpanQA(dims),
    }
    dtype = getattr(torch, args.dtype)
    models = {}
    for name in names:
        torch.manual_seed(0)
        models[name] = builders[name]().to(args.device, dtype).train()
    return models


def with_published_gates(model: torch.nn.Module) -> torch.nn.Module:
    """LUKE-Graph whose question-aware gates apply `W_s` to every `[h_i ; q_t]` pair, as the released LUKE-Graph code
    does (`w_gate(cat([h_i, query], -1))` for each node): the same function as the library's factored gate (`main`
    prints the difference), at the published cost. Batched over the nodes: the released code's Python loop over the
    nodes would add its own overhead on top, so this row is a lower bound of the published step."""
    from gesa.modeling_luke_graph import LukeGraphQuestionGate

    class PublishedQuestionGate(LukeGraphQuestionGate):
        def pair_scores(self, nodes: torch.Tensor, question: torch.Tensor) -> torch.Tensor:
            pairs = torch.cat(
                [
                    nodes[:, :, None].expand(-1, -1, question.size(1), -1),
                    question[:, None].expand(-1, nodes.size(1), -1, -1),
                ],
                dim=-1,
            )
            return self.question_attention(pairs)

    for gate in model.gesa.graph.gates:
        gate.__class__ = PublishedQuestionGate  # same parameters, the published product
    return model


def published_gate_difference(models: dict[str, torch.nn.Module], batches: dict) -> float:
    """Largest logit difference between the timed LUKE-Graph with the library's gates and with the published ones
    (both built from seed 0: the same weights), in eval mode."""
    with torch.no_grad():
        logits = [
            models[name].eval()(**batch_of(name, batches)).logits for name in ("luke_graph", "luke_graph_published")
        ]
    real = torch.isfinite(logits[0])
    return float((logits[0] - logits[1])[real].abs().max())


class HfLukeForEntitySpanQA(torch.nn.Module):
    """`transformers.LukeModel` under GESA's head (`score_candidates`), for `--hf-luke`."""

    def __init__(self, dims: dict) -> None:
        from transformers import LukeConfig, LukeModel

        super().__init__()
        self.luke = LukeModel(LukeConfig(**dims, use_entity_aware_attention=True), add_pooling_layer=False)
        self.dropout = torch.nn.Dropout(0.1)
        self.classifier = torch.nn.Linear(2 * dims["hidden_size"], 1)

    def forward(self, labels=None, placeholder_entity_mask=None, **inputs):
        from gesa.modeling_gesa import score_candidates

        keep = ("input_ids", "attention_mask", "entity_ids", "entity_attention_mask", "entity_position_ids")
        states = self.luke(**{k: inputs[k] for k in keep}).entity_last_hidden_state
        logits, loss = score_candidates(
            self.classifier, self.dropout, states, inputs["entity_attention_mask"], placeholder_entity_mask, labels
        )
        return argparse.Namespace(loss=loss, logits=logits)


def batch_of(name: str, batches: dict[str, dict]) -> dict:
    return batches.get(name, batches["gesa"])


def qa_step(model: torch.nn.Module, inputs: dict) -> None:
    """One training step's work: forward with labels, the task loss, backward."""
    model(**inputs).loss.backward()
    model.zero_grad(set_to_none=True)


def timed(model: torch.nn.Module, inputs: dict, device: str) -> float:
    common.synchronize(device)
    start = common.now()
    qa_step(model, inputs)
    common.synchronize(device)
    return common.now() - start


def memory_probe(args: argparse.Namespace) -> dict:
    batches, vocab_size = make_batches(args)
    batches = {k: {n: t.to(args.device) for n, t in v.items()} for k, v in batches.items()}
    model = build_models(args, vocab_size, [args.memory_probe])[args.memory_probe]
    inputs = batch_of(args.memory_probe, batches)
    qa_step(model, inputs)
    common.step = qa_step  # peak_step_memory measures one step of this kind
    return common.peak_step_memory(model, inputs, args.device)


def peak_memory(args: argparse.Namespace, which: str, argv: list[str]) -> dict:
    return common.run_probe(__file__, argv, ["--memory-probe", which], args.threads, f"memory probe for {which}")


def main(argv: list[str] | None = None) -> None:
    args, argv = common.start(parse_args, argv)
    if not RECORD_FILE.is_file() or not ROBERTA_DIR.is_dir():
        raise SystemExit(f"needs the shared ReCoRD sample ({RECORD_FILE}) and RoBERTa tokenizer ({ROBERTA_DIR})")
    if args.memory_probe:
        print(json.dumps(memory_probe(args)))
        return
    names = list(dict.fromkeys(["luke", *args.models] + (["hf-luke"] if args.hf_luke else [])))
    batches, vocab_size = make_batches(args)
    batches = {k: {n: t.to(args.device) for n, t in v.items()} for k, v in batches.items()}
    models = build_models(args, vocab_size, names)
    for _ in range(args.warmup):
        for name in names:
            qa_step(models[name], batch_of(name, batches))
    times: dict[str, list[float]] = {name: [] for name in names}
    for round_index in range(args.repeats):
        for name in names if round_index % 2 == 0 else names[::-1]:
            times[name].append(timed(models[name], batch_of(name, batches), args.device))
    parameters = {name: sum(p.numel() for p in model.parameters()) for name, model in models.items()}
    flops = {}
    if not args.skip_flops:
        for name, model in models.items():
            flops[name] = common.count_flops(model, batch_of(name, batches), qa_step)
    difference = None
    if "luke_graph" in names and "luke_graph_published" in names:
        difference = published_gate_difference(models, batches)
    del models
    memory = {} if args.skip_memory else {name: peak_memory(args, name, argv) for name in names}

    gesa_batch, xh_batch = batches["gesa"], batches["xh"]
    B, L = gesa_batch["input_ids"].shape
    E = gesa_batch["entity_ids"].shape[1]
    G, N, XL = xh_batch["input_ids"].shape
    print(
        f"device {args.device} ({torch.get_num_threads()} threads), {args.dtype}, torch {torch.__version__}; "
        f"{args.layers} layers, hidden {args.hidden}, {args.heads} heads, FFN {args.ffn}, dropout 0.1, train mode; "
        f"{args.repeats} rounds, {args.clock} clock"
    )
    print(
        f"batch: {B} ReCoRD windows x ({L} words + {E} entities) from {RECORD_FILE.name}; "
        f"XH: {G} query graphs x {N} nodes x {XL} words ({int(xh_batch['attention_mask'].sum())} real tokens)"
    )
    header = f"{'model':<20} {'step s':>8} {'min':>8} {'x luke':>7} {'range':>13} {'params M':>9}"
    if flops:
        header += f" {'GFLOP':>8} {'x luke':>7}"
    if memory:
        header += f" {'peak MiB':>9} {'x luke':>7}"
    print(header)
    for name in names:
        ratios = [t / lk for t, lk in zip(times[name], times["luke"], strict=True)]
        row = f"{name:<20} {median(times[name]):>8.3f} {min(times[name]):>8.3f} {median(ratios):>6.3f}x"
        row += f" {min(ratios):>6.3f}-{max(ratios):<6.3f} {parameters[name] / 1e6:>9.1f}"
        if flops:
            row += f" {flops[name] / 1e9:>8.1f} {flops[name] / flops['luke']:>6.3f}x"
        if memory:
            peak = memory[name]["peak_bytes"]
            row += f" {peak / 2**20:>9.0f} {peak / memory['luke']['peak_bytes']:>6.3f}x"
        print(row)
    for graph in ("luke_graph", "luke_graph_published"):
        if "gesa" in names and graph in names:
            per_round = [g / lg for g, lg in zip(times["gesa"], times[graph], strict=True)]
            print(
                f"gesa / {graph} step time: {median(per_round):.3f}x (median of per-round ratios; range "
                f"{min(per_round):.3f}-{max(per_round):.3f})"
            )
    if flops and "gesa" in names and "luke_graph" in names:
        extra = {name: (flops[name] - flops["luke"]) / 1e9 for name in ("gesa", "luke_graph")}
        print(
            f"GFLOP beyond LUKE's step: gesa {extra['gesa']:.2f} ({extra['gesa'] / args.layers:.2f} per layer: its "
            f"label terms), luke_graph {extra['luke_graph']:.2f} (its graph module, once per step)"
        )
    if difference is not None:
        print(f"luke_graph_published vs luke_graph logits (same weights, eval): max difference {difference:.1e}")
    if memory:
        print(f"peak memory: {memory['luke']['method']}")


if __name__ == "__main__":
    main()
