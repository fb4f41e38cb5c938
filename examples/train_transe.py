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
Prints the training loss of the first and last epoch, and how well the vectors predict each training triple's tail
from its head and relation (hits@10 and mean rank before and after training, beside a guess's: 10/N and (N+1)/2).

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
DEMO_TIME = "about 1 min on one idle core"  # its CPU time with OMP_NUM_THREADS=1, measured: README "Tasks"


def train_transe(
    triples: list[tuple[str, str, str]],
    dim: int,
    epochs: int,
    batch_size: int,
    learning_rate: float,
    seed: int,
    ranks: dict[str, torch.Tensor] | None = None,
) -> tuple[list[str], torch.Tensor, list[float]]:
    """TransE (PyKEEN, sLCWA negative sampling, margin ranking loss) on ``triples``: the entity names, their vectors
    ``(N, dim)`` in the names' order and the loss of each epoch. ``ranks``, when given, gets the tail ranks of the
    triples before and after training (``tail_ranks``: ``"before"``, ``"after"``)."""
    import numpy as np
    from pykeen.models import TransE
    from pykeen.training import SLCWATrainingLoop
    from pykeen.triples import TriplesFactory

    factory = TriplesFactory.from_labeled_triples(np.array(triples, dtype=str))
    model = TransE(triples_factory=factory, embedding_dim=dim, random_seed=seed)
    if ranks is not None:
        ranks["before"] = tail_ranks(model, factory.mapped_triples)
    loop = SLCWATrainingLoop(model=model, triples_factory=factory, optimizer="Adam",
                             optimizer_kwargs={"lr": learning_rate})  # fmt: skip
    losses = loop.train(triples_factory=factory, num_epochs=epochs, batch_size=batch_size, use_tqdm=False)
    if ranks is not None:
        ranks["after"] = tail_ranks(model, factory.mapped_triples)
    names = sorted(factory.entity_to_id, key=factory.entity_to_id.get)
    with torch.no_grad():
        vectors = model.entity_representations[0](indices=None).detach().cpu().float()
    return names, vectors, list(losses)


def tail_ranks(model: torch.nn.Module, mapped_triples: torch.Tensor) -> torch.Tensor:
    """The rank of each triple's tail among all entities given its head and relation (1 = best; ties count half)."""
    model.eval()
    with torch.no_grad():
        scores = model.score_t(mapped_triples[:, :2])  # (T, N), higher is more plausible
    true = scores.gather(1, mapped_triples[:, 2:3])
    return 1.0 + (scores > true).sum(dim=1).float() + 0.5 * ((scores == true).sum(dim=1).float() - 1.0)


def rank_summary(ranks: dict[str, torch.Tensor], entities: int) -> str:
    """Hits@10 (percent) and mean rank of the tails before and after training, with a guess's: ``10 / N`` and
    ``(N + 1) / 2`` among ``entities``."""
    hits = {name: 100.0 * float((value <= 10).float().mean()) for name, value in ranks.items()}
    mean = {name: float(value.mean()) for name, value in ranks.items()}
    return (f"tail prediction on the training triples: hits@10 {hits['after']:.1f} (before training "
            f"{hits['before']:.1f}; chance {100.0 * min(10, entities) / entities:.1f}), mean rank {mean['after']:.1f} "
            f"(before training {mean['before']:.1f}; chance {(entities + 1) / 2:.1f}) among {entities} entities")  # fmt: skip


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
        print(f"{SCRIPT}: no arguments: the demo KB's vectors ({DEMO_TIME}), i.e. python examples/{SCRIPT} "
              f"{' '.join(argv)}")  # fmt: skip
    args = parser.parse_args(argv)
    if args.dim < 1 or args.epochs < 1 or args.batch_size < 1:
        parser.error("--dim, --epochs and --batch_size must be at least 1")
    if missing("pykeen"):  # before any triple is read
        parser.error(missing_message("pykeen", "TransE training"))
    try:
        triples = read_triples(args.triples)
    except InputError as error:
        parser.error(str(error))
    ranks: dict[str, torch.Tensor] = {}
    names, vectors, losses = train_transe(
        triples, args.dim, args.epochs, args.batch_size, args.learning_rate, args.seed, ranks
    )
    write_vectors(args.output, names, vectors)
    print(f"{SCRIPT}: {len(names)} entities, {len(triples)} triples; loss {losses[0]:.4f} -> {losses[-1]:.4f}; "
          f"{rank_summary(ranks, len(names))}; wrote {args.output}")  # fmt: skip
    return losses


if __name__ == "__main__":
    main()
