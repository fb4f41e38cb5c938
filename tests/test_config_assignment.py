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
"""Every config class validates an assignment like a construction: a bad value is refused at once, naming the
field, and no accepted assignment leaves a config that saves but cannot be reloaded."""

import json

import pytest
from huggingface_hub.errors import StrictDataclassError

from gesa import ErnieConfig, GesaConfig, KarConfig, LukeGraphConfig, XhConfig

TINY = {"hidden_size": 32, "num_attention_heads": 2, "num_hidden_layers": 4, "intermediate_size": 37}
CONFIG_CLASSES = [GesaConfig, KarConfig, XhConfig, ErnieConfig, LukeGraphConfig]


def save_then_reload(config, path):
    """Save `config`; return the reloaded one, or None when saving refused (then nothing was written)."""
    try:
        config.save_pretrained(path)
    except (ValueError, StrictDataclassError):
        assert not (path / "config.json").exists(), "a refused save must not leave a config.json behind"
        return None
    return type(config).from_pretrained(path)


@pytest.mark.parametrize("config_class", CONFIG_CLASSES, ids=lambda c: c.__name__)
@pytest.mark.parametrize("ablation", [None, "full", "luke", "w2w_local"])
def test_assigning_ablation_never_leaves_an_unloadable_config(config_class, ablation, tmp_path):
    config = config_class(**TINY)
    try:
        config.ablation = ablation
    except StrictDataclassError as error:
        assert "ablation" in str(error)
        return
    reloaded = save_then_reload(config, tmp_path)
    if reloaded is not None:
        assert reloaded.to_dict() == config.to_dict()


@pytest.mark.parametrize("value", [-3, 0, "2", 1.5, None])
def test_luke_graph_layers_assignment_is_validated(value, tmp_path):
    config = LukeGraphConfig(**TINY)
    with pytest.raises(StrictDataclassError, match="graph_num_layers"):
        config.graph_num_layers = value
    assert config.graph_num_layers == 2
    config.graph_num_layers = 3
    config.save_pretrained(tmp_path)
    assert LukeGraphConfig.from_pretrained(tmp_path).graph_num_layers == 3


@pytest.mark.parametrize("ablation", [None, "full", "no_cls_global"])
def test_luke_graph_backbone_stays_luke_on_assignment(ablation, tmp_path):
    config = LukeGraphConfig(**TINY)
    with pytest.raises(StrictDataclassError, match="LUKE-Graph's backbone is LUKE"):
        config.ablation = ablation
    config.save_pretrained(tmp_path)
    assert json.loads((tmp_path / "config.json").read_text())["ablation"] == "luke"
    assert LukeGraphConfig.from_pretrained(tmp_path).ablation == "luke"


@pytest.mark.parametrize("config_class", CONFIG_CLASSES, ids=lambda c: c.__name__)
@pytest.mark.parametrize(
    ("field", "value"),
    [("num_hidden_layers", -1), ("hidden_dropout_prob", 1.5), ("max_relative_position", 0), ("ablation", "nope")],
)
def test_shared_fields_are_validated_on_assignment_in_every_config(config_class, field, value):
    config = config_class(**TINY)
    before = getattr(config, field)
    with pytest.raises(StrictDataclassError, match=field):
        setattr(config, field, value)
    assert getattr(config, field) == before
