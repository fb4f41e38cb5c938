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
"""The training side of gesa: what trains, evaluates, retrieves and writes cards, imported by the example scripts, the
benches and the tests through the installed package (``gesa.training.driver``, ``gesa.training.record``, ...).

Nothing here ships inside a checkpoint: a saved model's folder carries only the flat modules of the package root that
its model, processor and pipeline import. Modules here import the root's modules (``from ..processing_gesa import``)
and each other; no root module imports this package.
"""
