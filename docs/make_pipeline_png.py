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
"""Draw ``docs/pipeline.png``: the pipeline's picture of one query and its entity graph, in headless Chromium.

A tiny GESA (the random tiny LUKE of ``tests/tiny_luke.py``, offline tokenizer) is fine-tuned for a few steps on the
project's ReCoRD sample by ``examples/run_record.py``; the pipeline then answers the first query of the sample's dev
file with ``return_html=True`` and draws the entity graph of the window holding its answer
(``entity_graph_svg``). A picture of the mechanics, not of a reader: the tiny model is near chance.

    python docs/make_pipeline_png.py [--steps 200] [--output docs/pipeline.png]

Needs Chromium (Debian: ``apt-get install chromium``) and Pillow (to crop the page's empty bottom).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "examples" / "data"
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "chrome")
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--hide-scrollbars",
]


def _load_script(name: str, path: Path):
    """A file of the checkout that is not part of the package (the example script, the tests' tiny LUKE)."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def train_tiny_reader(work: Path, steps: int) -> Path:
    """A tiny GESA fine-tuned ``steps`` steps on the sample (96-token windows: passages take several)."""
    luke = _load_script("tiny_luke_for_picture", ROOT / "tests" / "tiny_luke.py").build_tiny_luke(work / "tiny-luke")
    output_dir = work / "reader"
    _load_script("run_record_for_picture", ROOT / "examples" / "run_record.py").main([
        "--model_name_or_path", str(luke), "--variant", "gesa",
        "--train_file", str(SAMPLE / "record_sample_train.jsonl"), "--output_dir", str(output_dir), "--do_train",
        "--max_steps", str(steps), "--learning_rate", "5e-3", "--warmup_steps", "0",
        "--per_device_train_batch_size", "4", "--save_strategy", "no", "--max_seq_length", "96",
        "--doc_stride", "48", "--max_query_length", "32", "--report_to", "none", "--disable_tqdm", "true",
        "--dataloader_pin_memory", "false", "--seed", "0",
    ])  # fmt: skip
    return output_dir


def page_with_graph(reader_dir: Path) -> str:
    from transformers import pipeline

    reader = pipeline(model=str(reader_dir), trust_remote_code=True)
    record = json.loads((SAMPLE / "record_sample_dev.jsonl").read_text(encoding="utf-8").splitlines()[0])
    record["qas"] = record["qas"][:1]
    page = reader(record, return_html=True)
    svg = reader.entity_graph_svg(record)
    return page.replace("</body>", f"<h2>Entity graph</h2>{svg}\n</body>")


def screenshot(page: str, output: Path, width: int = 1200) -> None:
    browser = next((shutil.which(name) for name in BROWSERS if shutil.which(name)), None)
    if browser is None:
        raise SystemExit("no headless browser found: apt-get install chromium")
    from PIL import Image, ImageChops

    with tempfile.TemporaryDirectory() as folder:
        html_path, png_path = Path(folder) / "page.html", Path(folder) / "page.png"
        html_path.write_text(page, encoding="utf-8")
        subprocess.run(
            [browser, *CHROMIUM_FLAGS, f"--screenshot={png_path}", f"--window-size={width},3000", html_path.as_uri()],
            check=True, capture_output=True, timeout=300,
        )  # fmt: skip
        image = Image.open(png_path).convert("RGB")
        content = ImageChops.difference(image, Image.new("RGB", image.size, "white")).getbbox()
        image.crop((0, 0, width, min(content[3] + 24, image.height))).save(output, optimize=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=200, help="training steps of the tiny reader (default 200)")
    parser.add_argument("--output", type=Path, default=ROOT / "docs" / "pipeline.png")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as work:
        page = page_with_graph(train_tiny_reader(Path(work), args.steps))
    screenshot(page, args.output)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
