"""One default everywhere: `nlp.add_pipe("bioel_linker")`, configs/linker_cpu.cfg and
the default pipeline of `link` / `default_pipeline()` build the same component."""
from pathlib import Path

import spacy
from thinc.api import Config

from spacy_bioel.pipeline import defaults, embedded_default

CONFIG = Path(__file__).resolve().parents[2] / "configs" / "linker_cpu.cfg"


def add_pipe_config(config=None):
    """The component's config once spaCy filled it (each registered function's
    defaults included)."""
    nlp = spacy.blank("en")
    nlp.add_pipe("bioel_linker", config=config or {})
    return dict(nlp.config.interpolate()["components"]["bioel_linker"])


def test_linker_cpu_cfg_is_the_one_default():
    from spacy.util import load_model_from_config

    config = Config().from_disk(CONFIG, overrides={"paths.kb": "embedded:doid"})
    written = config["components"]["bioel_linker"]
    nlp = load_model_from_config(config, auto_fill=True)
    assert dict(nlp.config.interpolate()["components"]["bioel_linker"]) == add_pipe_config()
    # the file writes out every setting and stage of the default, not only those it changes
    assert set(written) == set(defaults.linker_config()) | {"factory", "scorer"}


def test_the_default_pipeline_is_built_with_the_same_config():
    assert add_pipe_config(embedded_default.fast_config()) == add_pipe_config()


def test_the_default_is_the_fast_one_and_serves_without_the_torch_runtime():
    config = defaults.linker_config()
    assert config["runtime"]["@misc"] == "spacy-bioel.OnnxRuntime.v1"
    assert config["runtime"]["quantize"] == "int8-all"
    assert config["index"]["index_type"] == "int8"
    assert (config["top_k"], config["retrieve_k"]) == (16, 16)
    assert config["shortcut"]["@misc"] == "spacy-bioel.ExactShortcut.v1"
