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
"""The context-graph GNN's sparse and dense message passing (Acton 2023, 4.1.2): memory against edges and nodes.

One GNN layer (`--core`, default the SDP-Core with K-type edge embeddings; GAT-Core, Edge-Core, ...) on a random
graph: forward and backward. Memory is the bytes of the tensors autograd saves for backward (exact, the same on every
device), time the median of `--repeats` steps. Prints, side by side:

1. nodes fixed (`--nodes`, default 1,000), edges doubling (`--edges`, default 4k..32k): sparse memory grows with the
   edges (ratio per doubling ~2), dense memory stays at its `N^2` level;
2. edges per node fixed (`--degree`, default 8), nodes doubling (`--node-counts`, default 250..1,000): sparse memory
   doubles with the nodes (linear), dense memory quadruples (`N^2`);
3. the critical density: the edge density `M / N^2` below which the sparse path needs less memory (thesis fig. 5.2).

    python bench/bench_context_graph.py --threads 1
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from gesa.configuration_context_graph import NUM_EDGE_KINDS, ContextGraphConfig
from gesa.modeling_context_graph import GnnLayer, kind_matrix_of


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--core", default="sdp", choices=["switch", "edge", "sage", "gat", "sdp"])
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--edges", type=int, nargs="+", default=[4000, 8000, 16000, 32000])
    parser.add_argument("--degree", type=int, default=8)
    parser.add_argument("--node-counts", type=int, nargs="+", default=[250, 500, 1000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    return parser.parse_args()


def layer_of(args: argparse.Namespace, message_passing: str) -> GnnLayer:
    torch.manual_seed(0)
    config = ContextGraphConfig(hidden_size=args.hidden, num_attention_heads=args.heads, intermediate_size=2 * args.hidden,
                                gnn_core=args.core, gnn_num_heads=args.heads, summariser_num_heads=args.heads,
                                gnn_message_passing=message_passing, graph_dropout=0.0)  # fmt: skip
    return GnnLayer(config)


def random_graph(nodes: int, edges: int, hidden: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    pairs = torch.randperm(nodes * nodes, generator=generator)[:edges]
    edge_index = torch.stack([pairs // nodes, pairs % nodes])
    edge_type = torch.randint(0, NUM_EDGE_KINDS, (edges,), generator=generator)
    return torch.randn(nodes, hidden, generator=generator, requires_grad=True), edge_index, edge_type


def measure(layer: GnnLayer, nodes: int, edges: int, hidden: int, dense: bool, repeats: int) -> tuple[int, float]:
    """(bytes saved for backward, median seconds of forward + backward)."""
    states, edge_index, edge_type = random_graph(nodes, edges, hidden)
    saved = 0

    def pack(tensor: torch.Tensor) -> torch.Tensor:
        nonlocal saved
        saved += tensor.numel() * tensor.element_size()
        return tensor

    times = []
    for _ in range(repeats):
        saved = 0
        start = time.perf_counter()
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
            kinds = kind_matrix_of(edge_index, edge_type, nodes) if dense else None
            layer(states, edge_index, edge_type, kinds).sum().backward()
        times.append(time.perf_counter() - start)
    return saved, statistics.median(times)


def main() -> None:
    args = parse_args()
    torch.set_num_threads(args.threads)
    sparse, dense = layer_of(args, "sparse"), layer_of(args, "dense")
    mib = 2**20
    print(f"{args.core}-core, hidden {args.hidden}, {args.heads} heads, forward + backward of one layer, "
          f"{args.threads} thread(s)")  # fmt: skip
    print(f"\n1. {args.nodes} nodes, edges doubling")
    print(f"{'edges':>8} {'sparse MiB':>11} {'x':>5} {'dense MiB':>10} {'x':>5} {'sparse ms':>10} {'dense ms':>9}")
    previous = None
    for edges in args.edges:
        s_bytes, s_time = measure(sparse, args.nodes, edges, args.hidden, False, args.repeats)
        d_bytes, d_time = measure(dense, args.nodes, edges, args.hidden, True, args.repeats)
        ratios = ("", "") if previous is None else (f"{s_bytes / previous[0]:.2f}", f"{d_bytes / previous[1]:.2f}")
        print(f"{edges:>8} {s_bytes / mib:>11.1f} {ratios[0]:>5} {d_bytes / mib:>10.1f} {ratios[1]:>5} "
              f"{1e3 * s_time:>10.1f} {1e3 * d_time:>9.1f}")  # fmt: skip
        previous = (s_bytes, d_bytes)
    print(f"\n2. {args.degree} edges per node, nodes doubling")
    print(f"{'nodes':>8} {'sparse MiB':>11} {'x':>5} {'dense MiB':>10} {'x':>5} {'sparse ms':>10} {'dense ms':>9}")
    previous = None
    for nodes in args.node_counts:
        s_bytes, s_time = measure(sparse, nodes, args.degree * nodes, args.hidden, False, args.repeats)
        d_bytes, d_time = measure(dense, nodes, args.degree * nodes, args.hidden, True, args.repeats)
        ratios = ("", "") if previous is None else (f"{s_bytes / previous[0]:.2f}", f"{d_bytes / previous[1]:.2f}")
        print(f"{nodes:>8} {s_bytes / mib:>11.1f} {ratios[0]:>5} {d_bytes / mib:>10.1f} {ratios[1]:>5} "
              f"{1e3 * s_time:>10.1f} {1e3 * d_time:>9.1f}")  # fmt: skip
        previous = (s_bytes, d_bytes)
    nodes = args.node_counts[0]
    one, _ = measure(sparse, nodes, nodes, args.hidden, False, 1)
    two, _ = measure(sparse, nodes, 2 * nodes, args.hidden, False, 1)
    d_bytes, _ = measure(dense, nodes, nodes, args.hidden, True, 1)
    per_edge = (two - one) / nodes  # sparse memory = per-node part + per-edge part
    critical = (d_bytes - (one - per_edge * nodes)) / per_edge
    print(f"\n3. critical density at {nodes} nodes: sparse needs less memory below {critical / nodes**2:.1%} of the "
          f"N^2 pairs ({per_edge / 1024:.1f} KiB per edge)")  # fmt: skip


if __name__ == "__main__":
    main()
