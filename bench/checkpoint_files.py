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
"""The code a checkpoint of each kind carries: the files and lines of its head's module, its processor's and its
pipeline's (named by the head's ``PipelineSpec``), with their relative imports, as ``save_pretrained`` copies them
(``tests/test_checkpoint_files.py`` checks the saved folders against the same chains).

    python bench/checkpoint_files.py
"""

from __future__ import annotations

import argparse
from pathlib import Path

from transformers.dynamic_module_utils import get_relative_import_files

import gesa
from gesa.modeling_ernie_entity import ErnieForEntityPairClassification
from gesa.modeling_gesa import GesaForEntitySpanQA
from gesa.modeling_gesa_entity import GesaForEntityClassification, GesaForEntityPairClassification
from gesa.modeling_gesa_multiple_choice import GesaForEntityMultipleChoice
from gesa.modeling_kar import KarForEntitySpanQA
from gesa.modeling_kar_entity import KarForEntityClassification
from gesa.modeling_luke_graph import LukeGraphForEntitySpanQA
from gesa.modeling_xh import XhForEntitySpanQA, XhForFactVerification
from gesa.modeling_xh_tasks import XhForHotpotQA

ROOT = Path(gesa.__file__).resolve().parent
# checkpoint kind -> (head, the module of the processor saved beside it)
KINDS = {
    "GESA / LUKE ReCoRD": (GesaForEntitySpanQA, "processing_gesa"),
    "LUKE-Graph ReCoRD": (LukeGraphForEntitySpanQA, "processing_gesa"),
    "KAR ReCoRD": (KarForEntitySpanQA, "processing_gesa"),
    "XH ReCoRD": (XhForEntitySpanQA, "processing_xh"),
    "GESA entity typing": (GesaForEntityClassification, "processing_entity"),
    "GESA relation classification": (GesaForEntityPairClassification, "processing_entity"),
    "KAR entity typing": (KarForEntityClassification, "processing_entity"),
    "ERNIE relation classification": (ErnieForEntityPairClassification, "processing_entity"),
    "GESA WikiHop": (GesaForEntityMultipleChoice, "processing_wikihop"),
    "XH HotpotQA": (XhForHotpotQA, "processing_xh_tasks"),
    "XH FEVER": (XhForFactVerification, "processing_xh_tasks"),
}


def chain(module: str) -> set[str]:
    """``module``'s file and every file it imports relatively, at any depth (what transformers copies)."""
    path = ROOT / f"{module}.py"
    return {path.name, *(Path(name).name for name in get_relative_import_files(str(path)))}


def carried(head: type, processor_module: str) -> set[str]:
    files = chain(head.__module__.split(".")[-1]) | chain(processor_module)
    spec = getattr(head, "pipeline", None)
    if spec is not None:
        files |= chain(spec.impl.split(".")[0])
    return files


def main(argv: list[str] | None = None) -> None:
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args(argv)
    print("| checkpoint | files | lines |\n|---|---|---|")
    for kind, (head, processor_module) in KINDS.items():
        files = carried(head, processor_module)
        lines = sum(len((ROOT / name).read_text(encoding="utf-8").splitlines()) for name in files)
        print(f"| {kind} | {len(files)} | {lines:,} |")


if __name__ == "__main__":
    main()
