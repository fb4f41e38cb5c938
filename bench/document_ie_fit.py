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
"""How long a SciREX document fits: one training step (forward + backward, gold mentions, the default ``entities``
mention representation) of ``GesaForDocumentIE`` on a document of N words, each size in a fresh process, its peak
resident memory (``ru_maxrss``) and time printed.

The document is a real SciREX paper of ``../shared`` repeated or cut to N words (its mentions kept), read by
``--variant luke`` in 512-token pieces; the model has ``--hidden_size`` / ``--layers`` (luke-large's width with fewer
layers on CPU: activations grow linearly with depth, so 24 layers need about 24 / layers times the activation part).
Random weights: the cost does not depend on them. ::

    OMP_NUM_THREADS=2 python bench/document_ie_fit.py --words 2000 6000 12000 --hidden_size 1024 --layers 2
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

SHARED = Path(os.environ.get("GESA_SHARED_DIR") or Path(__file__).resolve().parents[2] / "shared")

_CHILD = r"""
import json, resource, sys, time
import torch
from gesa.configuration_gesa import GesaConfig
from gesa.modeling_document_ie import GesaForDocumentIE
from gesa.processing_document_ie import DocumentIEProcessor
from gesa.records_scirex import read_scirex_file, scirex_document

words, hidden, layers, shared, piece = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
row = json.loads(open(shared + "/data/scirex/dev10.jsonl").readline())
# repeat the paper (shifting every span) until it has `words` words, then cut it at a sentence
rows, offset = dict(row, words=[], sentences=[], sections=[], ner=[], coref={}, n_ary_relations=row["n_ary_relations"],
                    method_subrelations=row["method_subrelations"]), 0
while offset < words:
    n = len(row["words"])
    rows["words"] += row["words"]
    rows["sentences"] += [[s + offset, e + offset] for s, e in row["sentences"]]
    rows["sections"] += [[s + offset, e + offset] for s, e in row["sections"]]
    rows["ner"] += [[s + offset, e + offset, t] for s, e, t in row["ner"]]
    for name, spans in row["coref"].items():
        rows["coref"].setdefault(name, []).extend([s + offset, e + offset] for s, e in spans)
    offset += n
cut = max(e for s, e in rows["sentences"] if e <= words)
rows["words"] = rows["words"][:cut]
rows["sentences"] = [span for span in rows["sentences"] if span[1] <= cut]
rows["sections"] = [[s, min(e, cut)] for s, e in rows["sections"] if s < cut]
rows["ner"] = [m for m in rows["ner"] if m[1] <= cut]
rows["coref"] = {k: [x for x in v if x[1] <= cut] for k, v in rows["coref"].items()}
rows.pop("coref_non_salient", None)
document = scirex_document(rows)
from gesa.training.tokenizer import train_sample_tokenizer
tokenizer = train_sample_tokenizer([" ".join(row["words"])], vocab_size=2000, min_frequency=1)
processor = DocumentIEProcessor(tokenizer, max_seq_length=piece)
batch = processor([processor.encode(document)])
config = GesaConfig(vocab_size=len(tokenizer), entity_vocab_size=4, hidden_size=hidden, entity_emb_size=256,
                    num_hidden_layers=layers, num_attention_heads=max(1, hidden // 64), intermediate_size=4 * hidden,
                    max_position_embeddings=piece + 2, ablation="luke")
model = GesaForDocumentIE(config).train()
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.perf_counter()
model(**batch).loss.backward()
seconds = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"words": len(document.words), "mentions": len(document.mentions), "pieces": int(batch["input_ids"].size(0)),
                  "seconds": round(seconds, 2), "peak_gib": round(peak / 2**20, 2),
                  "step_gib": round((peak - before) / 2**20, 2)}))
"""


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--words", type=int, nargs="+", default=[2000, 6000])
    parser.add_argument("--hidden_size", type=int, default=1024)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--max_seq_length", type=int, default=512)
    args = parser.parse_args(argv)
    rows = []
    for words in args.words:
        out = subprocess.run([sys.executable, "-c", _CHILD, str(words), str(args.hidden_size), str(args.layers),
                              str(SHARED), str(args.max_seq_length)], capture_output=True, text=True)  # fmt: skip
        if out.returncode != 0:
            print(
                f"{words} words: failed ({out.stderr.strip().splitlines()[-1] if out.stderr.strip() else out.returncode})"
            )
            continue
        row = json.loads(out.stdout.strip().splitlines()[-1])
        rows.append(row)
        print(f"{row['words']} words ({row['mentions']} mentions, {row['pieces']} pieces of {args.max_seq_length}), width "
              f"{args.hidden_size} x {args.layers} layers: one training step {row['seconds']} s, peak memory "
              f"{row['peak_gib']} GiB (the step's own {row['step_gib']} GiB)")  # fmt: skip
    return rows


if __name__ == "__main__":
    main()
