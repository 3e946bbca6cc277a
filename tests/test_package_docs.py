"""The larger offline background (``background=package_docs``, ``detect/datasets/corpus.py``'s ``package_docs``): at
least 1M SmolLM2 tokens of prose, no paragraph twice, none shared with DC-PDD's reference corpus or ``pydoc``, the
same on every read, keyed by the packages' versions, and refused as DC-PDD's corpus when it is the background. The
tests that read it are slow (about 12 s to read the packages' source on 2 CPU cores, once per process)."""

import importlib.metadata

import pytest

from contaminate.regime.background import OfflineBackground, PackageDocsBackground, instantiate_background
from contaminate.stages import check_reference_corpus
from detect.datasets.corpus import PACKAGE_DOCS, PACKAGE_DOCS_PACKAGES, package_docs, package_docs_sources, read_corpus
from detect.detectors.dc_pdd import DCPDD
from detect.errors import InputError


def paragraphs(texts) -> list[str]:
    """As ``chunk_texts`` cuts a background: at blank lines, stripped."""
    return [p.strip() for text in texts for p in text.split("\n\n") if p.strip()]


@pytest.mark.slow
def test_package_docs_holds_a_million_tokens_of_the_embedded_tokenizer():
    from detect.models import load, tiny_random

    tokenizer = load(tiny_random())[1]  # the embedded SmolLM2's tokenizer
    texts = read_corpus(PACKAGE_DOCS)
    assert texts == list(package_docs())
    tokens = sum(map(len, tokenizer(texts, add_special_tokens=False).input_ids))
    assert tokens >= 1_000_000, f"{len(texts)} documents, {sum(map(len, texts)):,} characters, {tokens:,} tokens"


@pytest.mark.slow
def test_package_docs_is_prose_with_no_paragraph_twice_nor_in_the_reference_corpus_or_pydoc():
    kept = paragraphs(package_docs())
    assert len(set(kept)) == len(kept)  # deduplicated within itself
    assert not set(kept) & set(paragraphs(read_corpus("stdlib_docstrings")))  # DC-PDD's reference corpus
    assert not set(kept) & set(paragraphs(read_corpus("pydoc")))  # background=offline
    assert all(len(p) >= 80 and ">>>" not in p for p in kept)  # no short paragraph, no doctest


@pytest.mark.slow
def test_package_docs_reads_the_same_twice():
    assert package_docs.__wrapped__() == package_docs()  # a fresh read (the cached one aside), in the same order


def test_the_package_docs_background_records_the_packages_and_versions_it_read(compose_config):
    cfg = compose_config("contaminate", ["+dataset=synth_nli", "background=package_docs", "contaminate.exposures=1"])
    background = instantiate_background(cfg.background)
    assert isinstance(background, PackageDocsBackground) and background.max_tokens is None
    described = background.describe()
    assert described["name"] == "package_docs" and described["packages"] == package_docs_sources()
    for name in ("numpy", "scipy", "sklearn", "datasets"):  # what the README's install brings
        assert described["packages"][name] == importlib.metadata.version(PACKAGE_DOCS_PACKAGES[name])
    assert set(OfflineBackground().describe()) == {"name", "source", "max_tokens"}  # existing checkpoints' key


def test_a_study_refuses_dc_pdd_counting_frequencies_in_the_package_docs_background():
    with pytest.raises(InputError, match="^detect.detectors.dc_pdd.corpus=package_docs is the study's background "
                                         "\\(package_docs\\): .* use corpus=stdlib_docstrings") as error:
        check_reference_corpus([DCPDD(corpus=PACKAGE_DOCS)], PackageDocsBackground())
    assert "\n" not in str(error.value)
    check_reference_corpus([DCPDD()], PackageDocsBackground())  # the default: disjoint
    check_reference_corpus([DCPDD(corpus="pydoc")], PackageDocsBackground())
    check_reference_corpus([DCPDD(corpus=PACKAGE_DOCS)], OfflineBackground())
