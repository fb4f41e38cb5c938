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
"""Every source file carries the Apache-2.0 header (setup.cfg's license; checkpoints copy the flat modules)."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE_DIRS = [
    ROOT,
    ROOT / "examples",
    ROOT / "bench",
    ROOT / "tests",
    ROOT / "training" / "metrics" / "record",
    ROOT / "model_cards",
    ROOT / "docs",
]


def test_every_source_file_has_the_license_header():
    files = sorted(path for folder in SOURCE_DIRS for path in folder.glob("*.py"))
    assert len(files) > 40
    missing = []
    for path in files:
        lines = path.read_text(encoding="utf-8").splitlines()
        head = lines[1:] if lines and lines[0].startswith("#!") else lines
        if not (
            head[:1] == ["# Copyright 2026 The gesa authors. All rights reserved."]
            and any("Licensed under the Apache License, Version 2.0" in line for line in head[:4])
        ):
            missing.append(str(path.relative_to(ROOT)))
    assert not missing, f"files without the license header: {missing}"
    assert "Apache License" in (ROOT / "LICENSE").read_text(encoding="utf-8")[:200]
