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
"""Train TransE entity vectors from a triples file with PyKEEN and write them in the text format
``--kb_entity_vectors`` reads (``gesa.records_kb``): ERNIE's knowledge embeddings (TransE over Wikidata), for any
KG you have as triples::

    pip install 'gesa[kge]'   # PyKEEN
    python examples/train_transe.py --triples kg/triples.tsv --output kb/entities.txt --dim 256 --epochs 100

``--triples``: a TSV of ``head<TAB>relation<TAB>tail`` lines (entity names as the alias table names them; LUKE's
titles to reuse LUKE's candidates). ``--dim`` must be the model's ``entity_emb_size`` (256 for LUKE). The output holds a
``count dim`` header and one ``name v1 ... vD`` line per entity (tab after the name, so names may hold spaces).
Prints the training loss of the first and last epoch.

Run with no argument, it trains on the demo KB's triples (``examples/data/kb_triples.tsv``, the facts of the
entity-task demos) at the demo LUKE's width: the command that made ``examples/data/kb_entity_vectors.txt``::

    python examples/train_transe.py --triples examples/data/kb_triples.tsv \
        --output outputs/transe-demo/kb_entity_vectors.txt --dim 16 --epochs 200
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

try:
    from gesa.extras_gesa import missing, missing_message
    from gesa.inputs_gesa import InputError
    from gesa.training.entity_documents import read_triples
except ImportError as error:  # pragma: no cover - depends on the installation
    raise SystemExit(f"train_transe.py needs the gesa package installed (pip install <gesa repo>): {error}") from None

SCRIPT = "train_transe.py"
DEMO_TRIPLES = Path(__file__).resolve().parent / "data" / "kb_triples.tsv"
# the flags of a run with no argument (the demo KB's vectors, examples/data/kb_entity_vectors.txt)
DEMO_ARGS = ["--triples", str(DEMO_TRIPLES), "--output", "outputs/transe-demo/kb_entity_vectors.txt", "--dim", "16",
             "--epochs", "200"]  # fmt: skip


def train_transe(
    triples: list[tuple[str, str, str]], dim: int, epochs: int, batch_size: int, learning_rate: float, seed: int
) -> tuple[list[str], torch.Tensor, list[float]]:
    """TransE (PyKEEN, sLCWA negative sampling, margin ranking loss) on ``triples``: the entity names, their vectors
    ``(N, dim)`` in the names' order and the loss of each epoch."""
    import numpy as np
    from pykeen.models import TransE
    from pykeen.training import SLCWATrainingLoop
    from pykeen.triples import TriplesFactory

    factory = TriplesFactory.from_labeled_triples(np.array(triples, dtype=str))
    model = TransE(triples_factory=factory, embedding_dim=dim, random_seed=seed)
    loop = SLCWATrainingLoop(model=model, triples_factory=factory, optimizer="Adam",
                             optimizer_kwargs={"lr": learning_rate})  # fmt: skip
    losses = loop.train(triples_factory=factory, num_epochs=epochs, batch_size=batch_size, use_tqdm=False)
    names = sorted(factory.entity_to_id, key=factory.entity_to_id.get)
    with torch.no_grad():
        vectors = model.entity_representations[0](indices=None).detach().cpu().float()
    return names, vectors, list(losses)


def write_vectors(path: str | Path, names: list[str], vectors: torch.Tensor) -> None:
    """``count dim`` then ``name<TAB>v1 ... vD`` per entity (``gesa.records_kb.read_entity_vectors`` reads it)."""
    lines = [f"{len(names)} {vectors.size(1)}"]
    lines += [
        f"{name}\t" + " ".join(f"{value:.6g}" for value in row)
        for name, row in zip(names, vectors.tolist(), strict=True)
    ]
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text("\n".join(lines) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> list[float]:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = argparse.ArgumentParser(
        prog=SCRIPT, description=__doc__, formatter_class=argparse.RawTextHelpFormatter, allow_abbrev=False
    )
    parser.add_argument("--triples", required=True, help="TSV of head<TAB>relation<TAB>tail lines.")
    parser.add_argument("--output", required=True, help="The vectors file to write (--kb_entity_vectors).")
    parser.add_argument("--dim", type=int, default=256, help="Vector size: the model's entity_emb_size (LUKE: 256).")
    parser.add_argument("--epochs", type=int, default=100, help="Passes over the triples (default 100).")
    parser.add_argument("--batch_size", type=int, default=256, help="Triples per training step (default 256).")
    parser.add_argument("--learning_rate", type=float, default=1e-2, help="Adam's learning rate (default 0.01).")
    parser.add_argument("--seed", type=int, default=0, help="Seed of the initial vectors and the negative samples.")
    if not argv:
        argv = list(DEMO_ARGS)
        print(f"{SCRIPT}: no arguments: the demo KB's vectors, i.e. python examples/{SCRIPT} {' '.join(argv)}")
    args = parser.parse_args(argv)
    if args.dim < 1 or args.epochs < 1 or args.batch_size < 1:
        parser.error("--dim, --epochs and --batch_size must be at least 1")
    if missing("pykeen"):  # before any triple is read
        parser.error(missing_message("pykeen", "TransE training"))
    try:
        triples = read_triples(args.triples)
    except InputError as error:
        parser.error(str(error))
    names, vectors, losses = train_transe(
        triples, args.dim, args.epochs, args.batch_size, args.learning_rate, args.seed
    )
    write_vectors(args.output, names, vectors)
    print(f"{SCRIPT}: {len(names)} entities, {len(triples)} triples; loss {losses[0]:.4f} -> {losses[-1]:.4f}; "
          f"wrote {args.output}")  # fmt: skip
    return losses


if __name__ == "__main__":
    main()
