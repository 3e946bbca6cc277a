import os

# The hub cannot be reached here; offline mode makes hub attempts fail at once instead of retrying for 25 s.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import pytest  # noqa: E402
from hydra import compose, initialize_config_dir  # noqa: E402

from detect.cli import CONF_DIR  # noqa: E402


@pytest.fixture
def compose_config():
    """compose_config("detect", ["+dataset=synth_nli", ...]) -> the composed DictConfig."""

    def _compose(config_name: str, overrides: list[str]):
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
            return compose(config_name=config_name, overrides=overrides)

    return _compose
