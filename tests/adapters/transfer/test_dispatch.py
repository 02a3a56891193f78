"""How a fine-tuning task is run (xeval.adapters.transfer.dispatch): the mode and the setting are checked before
anything is loaded or trained."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from xeval.adapters.transfer import dispatch
from xeval.adapters.transfer.tagging import Tagging
from xeval.base.errors import ConfigError
from xeval.cards.catalog import load_card


@pytest.mark.parametrize(("options", "message"), [
    ({"mode": "frozen"}, "unknown mode 'frozen'; expected finetune or probe"),
    ({"setting": "translate-test"}, "unknown setting 'translate-test'; expected one of zero-shot, translate-train, "
                                    "few-shot"),
    ({"mode": "probe", "setting": "few-shot"}, "--mode probe: only --setting zero-shot is implemented"),
])
def test_an_unknown_mode_or_setting_is_a_config_error(options, message):
    ctx = SimpleNamespace(**{"mode": "finetune", "setting": "zero-shot", **options})  # read before anything else
    with pytest.raises(ConfigError, match=message):
        dispatch.run(load_card("udpos"), ["en"], ctx, Tagging)
