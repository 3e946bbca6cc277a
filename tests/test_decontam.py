"""Data-side decontaminators (detect/decontam/): the published settings on examples worked by hand, recall 1 on
verbatim copies and 0 on a stream without the benchmark, a hand-built stream of the forms a leak takes (line-wrapped,
embedded, paraphrased) with each detector's expected hit, and one-line refusals of bad input."""

import json
import subprocess
import sys

import pytest
from omegaconf import OmegaConf

from detect.cli import CONF_DIR
from detect.decontam import NgramMatch, SubstringMatch, build_detectors, scan
from detect.decontam.ngram import longest_run
from detect.decontam.stream import stream_documents
from detect.decontam.units import alnum_chars, janitor_words
from detect.errors import InputError

DEFAULT = OmegaConf.load(CONF_DIR / "decontam" / "default.yaml").detectors
NGRAM_CONFIGS = ["gpt3_13gram", "llama3_8gram", "gpt4_50char", "contam_longest"]


class Words:
    """A tokenizer whose tokens are whitespace words (ids: the words), so token rules can be worked by hand."""

    name_or_path = "words"

    def __call__(self, texts, add_special_tokens=False):
        if isinstance(texts, str):
            return {"input_ids": texts.split()}
        return {"input_ids": [text.split() for text in texts]}


@pytest.fixture(scope="module")
def tokenizer():
    from transformers import AutoTokenizer

    from detect.models.loading import embedded_folder

    return AutoTokenizer.from_pretrained(embedded_folder())


def findings(detector, benchmark, documents):
    return scan([detector], benchmark, documents)[detector.name]["findings"]


def one(name, tokenizer=None):
    return build_detectors({name: DEFAULT[name]}, tokenizer=tokenizer)[0]


def test_units_as_the_sources_normalise():
    # lm-eval-harness's Janitor: ASCII lowercased, punctuation deleted (not spaced), split at whitespace
    assert janitor_words("Hello, World!\n  x-y's") == ["hello", "world", "xys"]
    # GPT-4: letters and digits only, case kept
    assert alnum_chars("a b_c, 1!\nD") == "abc1D"


def test_longest_run_joins_runs_within_the_skip_budget():
    assert longest_run(b"\1\1\0\1") == 2
    assert longest_run(b"\1\1\0\1", 1) == 4
    assert longest_run(b"\1\0\0\1\1\1", 1) == 3  # a gap of 2 is not crossed
    assert longest_run(b"\0\0") == 0


def test_gpt3_13gram_one_shared_13gram_flags():
    instance = " ".join(f"w{i}" for i in range(14))  # 14 words: two 13-grams
    detector = one("gpt3_13gram")
    hit = findings(detector, {0: instance}, ["Intro. " + " ".join(f"W{i}," for i in range(1, 14)) + " outro"])
    assert hit.flagged == {0} and hit.scores[0] == pytest.approx(13 / 14)  # case and commas normalised away
    miss = findings(one("gpt3_13gram"), {0: instance}, [" ".join(f"w{i}" for i in range(12)), "w12 w13"])
    assert miss.flagged == set() and miss.scores[0] == 0  # 12 words in one document, the rest in another


def test_token_coverage_and_longest_match_worked_by_hand():
    instance = " ".join("abcdefghij")  # 10 tokens: a..j
    stream = ["x a b c y", "c d e z", "g h i j"]  # with n=3: a-b-c, c-d-e, g-h-i, h-i-j
    coverage = NgramMatch("cov", n=3, unit="tokens", rule="coverage", threshold=0.9, tokenizer=Words())
    found = findings(coverage, {0: instance}, stream)
    assert found.scores[0] == pytest.approx(0.9)  # a b c d e . g h i j: 9 of 10 covered (f is not)
    assert found.flagged == {0} and found.documents[0] == {0, 1, 2}
    longest = NgramMatch("long", n=3, unit="tokens", rule="longest", threshold=0.5, tokenizer=Words())
    found = findings(longest, {0: instance}, stream)
    assert found.scores[0] == pytest.approx(0.5) and found.flagged == {0}  # a..e: 5 of 10
    joined = NgramMatch("skip", n=3, unit="tokens", rule="longest", threshold=0.5, skip_budget=1, tokenizer=Words())
    assert findings(joined, {0: instance}, stream).scores[0] == pytest.approx(1.0)  # the gap at f crossed


def test_gpt4_substrings_whole_short_instance_and_three_of_a_long_one():
    short = findings(SubstringMatch("s", length=50), {0: "Hello, World 42!"},
                     ["see hello-World42 here", "Hello-World-42?"])
    assert short.flagged == {0} and short.documents[0] == {1}  # "HelloWorld42": case kept, so document 0 misses
    long_text = "".join(chr(ord("a") + i % 26) + str(i % 7) for i in range(80))  # 160 characters
    detector = SubstringMatch("s", length=50, samples=3, seed=0)
    detector.fit({0: long_text})
    assert len(detector.pieces[0]) == 3 and all(len(p) == 50 and p in long_text for p in detector.pieces[0])
    half = long_text[:80]
    found = findings(SubstringMatch("s", length=50, samples=3, seed=0), {0: long_text}, [half])
    expected = sum(piece in half for piece in detector.pieces[0]) / 3  # the same seed draws the same three
    assert found.scores[0] == pytest.approx(expected) and (0 in found.flagged) == (expected > 0)


@pytest.mark.parametrize("name", NGRAM_CONFIGS)
def test_recall_one_on_verbatim_copies_and_zero_without_the_benchmark(name, tokenizer):
    from detect.cli import group_option
    from detect.datasets import load_split

    dataset = group_option("dataset", "synth_nli")
    examples = load_split(dataset, "test")[:40]
    benchmark = {e.instance_id: e.full_text for e in examples}
    verbatim = findings(one(name, tokenizer), benchmark, [e.full_text for e in examples])
    readable = set(verbatim.scores)
    assert readable and verbatim.flagged == readable
    other = load_split(dataset, "train")[:40]  # the generator's other split: the same vocabulary, no shared instance
    clean = findings(one(name, tokenizer), benchmark, [e.full_text for e in other] + ["import os\nos.getcwd()"])
    assert clean.flagged == set() and clean.flagged_documents() == set()


# The forms a leak takes, built by hand. Expected hits, worked out before running:
# - a, line-wrapped every 4 words: the same words (13-gram hit) and characters (GPT-4 hit); tokens change at each
#   break (a word after "\n" loses its leading space), and no line holds 8 tokens: both token rules miss;
# - b, embedded in a longer document: every detector; its first token differs (" A" inside, "A" alone), so token
#   coverage is 26/27 (0.963), not 1;
# - c, paraphrased: no 13-gram, 8-gram or 50-character substring survives; only the embedding finds it.
HAND = {
    "a": "The committee approved the new budget for the city library after a long debate about opening hours and "
         "the cost of repairs to the old reading room.",
    "b": "A small boat carried three fishermen across the bay at dawn while the harbour lights were still burning "
         "and gulls circled above the nets.",
    "c": "Students who read aloud every evening improved their spelling faster than those who only read silently, "
         "according to the teachers who ran the trial.",
}
HAND_STREAM = [
    "\n".join(" ".join(HAND["a"].split()[i:i + 4]) for i in range(0, len(HAND["a"].split()), 4)),
    "Notes from the trip. " + HAND["b"] + " We went home after lunch and slept.",
    "According to the teachers who ran the trial, students reading aloud each evening improved their spelling "
    "faster than those reading silently.",
    "The weather in the mountains was cold, and the road to the village was closed for most of the winter months.",
]
EXPECTED = {"gpt3_13gram": {"a", "b"}, "gpt4_50char": {"a", "b"}, "llama3_8gram": {"b"}, "contam_longest": {"b"},
            "embedding": {"a", "b", "c"}}


def test_hand_built_stream_line_wrapped_embedded_paraphrased(tokenizer):
    found = scan(build_detectors(DEFAULT, tokenizer=tokenizer), HAND, HAND_STREAM)
    assert {name: result["findings"].flagged for name, result in found.items()} == EXPECTED
    assert found["llama3_8gram"]["findings"].scores["b"] == pytest.approx(26 / 27, abs=1e-6)
    for name, result in found.items():  # the documents each would drop: the copies, never the background one
        assert 3 not in result["findings"].flagged_documents(), name
    for name in ("gpt3_13gram", "llama3_8gram", "contam_longest"):  # nothing of the paraphrase survives
        assert found[name]["findings"].scores["c"] == 0, name


def test_bad_settings_and_short_instances_refused_in_one_line():
    with pytest.raises(InputError, match="larger than every instance"):
        NgramMatch("big", n=50, unit="words").fit({0: "only five words here now", 1: "two words"})
    detector = NgramMatch("mixed", n=5, unit="words")
    detector.fit({0: "only five words here now", 1: "two words"})
    assert detector.unreadable == {1}  # shorter than n: unreadable, never clean
    found = findings(NgramMatch("mixed", n=5, unit="words"), {0: "a b c d e", 1: "x y"}, ["a b c d e"])
    assert found.flagged == {0} and 1 not in found.scores and found.unreadable == {1}
    # In a planted run the side check must not stop the study: the detector that reads nothing says so, the others
    # still scan.
    found = scan([NgramMatch("big", n=50), NgramMatch("small", n=2)], {0: "a b c", 1: "d e"}, ["x a b y"],
                 skip_unfit=True)
    assert found["big"] == {"skipped": "decontam big: n=50 is larger than every instance (the longest has 3 words); "
                                       "lower n"}
    assert found["small"]["findings"].flagged == {0}
    with pytest.raises(InputError, match="larger than every instance"):
        scan([NgramMatch("big", n=50)], {0: "a b c"}, ["a b c"])
    with pytest.raises(InputError, match="unit=tokens needs"):
        NgramMatch("t", n=8, unit="tokens")
    with pytest.raises(InputError, match="rule=all"):
        NgramMatch("r", n=8, rule="all")


def test_stream_files_refused_in_one_line(tmp_path):
    (tmp_path / "empty.jsonl").write_text("")
    with pytest.raises(InputError, match="has no documents"):
        list(stream_documents([tmp_path / "empty.jsonl"]))
    (tmp_path / "model.bin").write_bytes(b"\x00\x01\x02text")
    with pytest.raises(InputError, match="binary"):
        list(stream_documents([tmp_path / "model.bin"]))
    (tmp_path / "latin.txt").write_bytes("caf\xe9".encode("latin-1"))
    with pytest.raises(InputError, match="not UTF-8 text"):
        list(stream_documents([tmp_path / "latin.txt"]))
    (tmp_path / "bad.jsonl").write_text('{"text": "fine"}\nnot json\n')
    with pytest.raises(InputError, match="line 2 is not JSON"):
        list(stream_documents([tmp_path / "bad.jsonl"]))
    (tmp_path / "field.jsonl").write_text('{"content": "x"}\n')
    with pytest.raises(InputError, match="no text field 'text'"):
        list(stream_documents([tmp_path / "field.jsonl"]))
    with pytest.raises(InputError, match="no such file"):
        list(stream_documents([tmp_path / "missing"]))
    (tmp_path / "good.jsonl").write_text('{"text": "one"}\n\n{"text": "two"}\n')
    (tmp_path / "doc.txt").write_text("three")
    assert list(stream_documents([tmp_path / "good.jsonl", tmp_path / "doc.txt"])) == ["one", "two", "three"]


def run_cli(tmp_path, *overrides):
    return subprocess.run([sys.executable, "-m", "detect.decontam", "+dataset=synth_nli",
                           f"hydra.run.dir={tmp_path / 'out'}", "decontam.detectors.embedding.enabled=false",
                           *overrides], capture_output=True, text=True, cwd=CONF_DIR.parent)


@pytest.mark.slow
def test_cli_on_a_users_corpus(tmp_path):
    from detect.cli import group_option
    from detect.datasets import load_split

    examples = load_split(group_option("dataset", "synth_nli"), "test")
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    with (corpus / "part.jsonl").open("w") as handle:  # three instances among background lines
        for text in ["Background line about rivers and hills.", examples[5].full_text, examples[9].full_text,
                     "More background.", examples[20].text]:
            handle.write(json.dumps({"text": text}) + "\n")
    done = run_cli(tmp_path, f"stream={corpus}")
    assert done.returncode == 0, done.stderr[-2000:]
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["stream"]["documents"] == 5 and summary["instances"] == len(examples)
    rows = {row["instance_id"]: row for row in map(json.loads, (tmp_path / "out" / "findings.jsonl").open())}
    flagged = {name: {i for i, row in rows.items() if row[name] and row[name]["flagged"]} for name in NGRAM_CONFIGS}
    for name in NGRAM_CONFIGS:
        assert {5, 9} <= flagged[name], name
        assert rows[5][name]["documents"] == [1]
    assert "gpt3_13gram: " in done.stdout


    # bad input through the command line: one line on stderr, status 2, nothing written
    (tmp_path / "empty.txt").write_text("")
    done = run_cli(tmp_path, f"stream={tmp_path / 'empty.txt'}", "hydra.run.dir=" + str(tmp_path / "bad"))
    assert done.returncode == 2 and done.stderr.strip().count("\n") == 0 and "no documents" in done.stderr
    assert not (tmp_path / "bad" / "summary.json").exists()


def test_run_refuses_bad_input_before_reading(tmp_path, compose_config):
    from detect.decontam.run import run

    (tmp_path / "empty.txt").write_text("")
    off = ["decontam.detectors.embedding.enabled=false", "decontam.detectors.llama3_8gram.enabled=false",
           "decontam.detectors.contam_longest.enabled=false"]
    cfg = compose_config("decontam", ["+dataset=synth_nli", f"stream={tmp_path / 'empty.txt'}", *off])
    with pytest.raises(InputError, match="has no documents"):
        run(cfg, tmp_path / "out")
    cfg = compose_config("decontam", ["+dataset=synth_nli", f"stream={tmp_path / 'empty.txt'}",
                                      "decontam.detectors.gpt3_13gram.n=500", *off])
    with pytest.raises(InputError, match="n=500 is larger than every instance"):
        run(cfg, tmp_path / "out")
    with pytest.raises(InputError, match="no stream given"):
        run(compose_config("decontam", ["+dataset=synth_nli", *off]), tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_the_embedding_embeds_one_benchmark_once_a_process(monkeypatch):
    """A multirun's draws share a process: the benchmark's embeddings are computed once (and the encoder loaded
    once); a new benchmark replaces them."""
    import torch

    from detect.decontam import embedding

    calls = []

    class Encoder:
        def encode(self, texts, **_):
            calls.append(len(texts))
            return torch.nn.functional.normalize(torch.tensor([[len(t), 1.0] for t in texts]), dim=1)

    class Scorer:
        encoder = Encoder()

    monkeypatch.setattr(embedding, "_scorer", lambda model: Scorer())
    monkeypatch.setattr(embedding, "_EMBEDDED", {})
    for _ in range(2):
        findings(embedding.EmbeddingMatch("e", model="fake"), {0: "one two three", 1: "four five"}, ["one two three"])
    assert calls == [2, 1, 1]  # the benchmark's 2 texts once, the stream's one window each time
    findings(embedding.EmbeddingMatch("e", model="fake"), {0: "another benchmark"}, ["x"])
    assert calls[3] == 1 and len(embedding._EMBEDDED) == 1


def test_embedding_windows_and_the_ladder_size_of_each_instance():
    from detect.decontam.embedding import EmbeddingMatch, windows

    assert windows("a b c d e", 2) == ["a b", "b c", "c d", "d e"]  # stepped by half the size
    assert windows("a b c d e", 4) == ["a b c d", "b c d e"]  # the last window ends at the last word
    assert windows("a b", 4) == ["a b"] and windows("  ", 4) == []
    import torch

    detector = EmbeddingMatch("e", encoder=lambda texts: torch.ones(len(texts), 2) / 2 ** 0.5)
    detector.fit({0: " ".join(["w"] * 25), 1: " ".join(["w"] * 150), 2: "w"})
    assert detector.scale_of == [32, 128, 16] and detector.window == [16, 32, 128]  # nearest on a log scale


def test_plant_md_says_which_detector_got_no_reading():
    from contaminate.reports.decontamination import decontamination_section

    group = {"dataset": "synth_nli", "format": "metadata", "exposures": 2, "n": 4, "unreadable": 0, "flagged": 3,
             "flagged_ids": [0, 1, 2], "auc_vs_x0": 0.875}
    block = {"stream": {"documents": 10, "planted_documents": 8},
             "detectors": {"llama3_8gram": {"groups": {"x2": group}, "never_in_stream": {"n": 20, "flagged": 1},
                                            "documents": {"planted": 6, "background": 1}}},
             "skipped": {"gpt3_13gram": "decontam gpt3_13gram: n=13 is larger than every instance (the longest has "
                                        "12 words); lower n"}}
    lines = decontamination_section(block, [{"name": "x0", "exposures": 0}, {"name": "x2", "exposures": 2,
                                                                             "within_model_auc": {"loss": 0.61}}])
    assert "| x2 | metadata | 3/4 (0.88) | 0.610 |" in lines
    assert lines[-1] == ("Not run, no reading: gpt3_13gram (decontam gpt3_13gram: n=13 is larger than every instance "
                         "(the longest has 12 words); lower n)")
    del block["skipped"]
    assert decontamination_section(block, [{"name": "x2", "exposures": 2}])[-1].startswith("| documents dropped")


def test_the_embedding_embeds_a_repeated_document_once_and_credits_every_copy():
    import torch

    from detect.decontam.embedding import EmbeddingMatch

    embedded = []

    def encoder(texts):  # a window is close to an instance when they share their first word
        embedded.extend(texts)
        return torch.tensor([[float(t.startswith(word)) for word in ("one", "four", "seven")] for t in texts])

    benchmark = {0: "one two three", 1: "four five six"}
    stream = ["one two three", "seven eight", "one two three", "seven eight", "one two three"]
    found = scan([EmbeddingMatch("e", encoder=encoder)], benchmark, stream, batch_size=2)["e"]["findings"]
    assert embedded[2:] == ["one two three", "seven eight"]  # after the benchmark's two: each distinct text once
    assert found.flagged == {0} and found.documents == {0: {0, 2, 4}}  # every copy is a document it would drop
    assert (found.documents_read, found.units_read) == (5, 13)


def test_decontam_only_prints_its_table_not_a_studys_lines(tmp_path, capsys):
    # a decontam.only run's result has no cells: python -m contaminate printed a study's lines and failed (KeyError)
    from contaminate.__main__ import say
    from contaminate.stages import RunResult

    group = {"dataset": "synth_nli", "format": "dump", "exposures": 4, "n": 2, "unreadable": 0, "flagged": 1,
             "flagged_ids": [3], "auc_vs_x0": 0.75}
    block = {"stream": {"documents": 9, "planted_documents": 8}, "skipped": {},
             "detectors": {"gpt3_13gram": {"groups": {"x4_dump": group}, "never_in_stream": {"n": 30, "flagged": 0},
                                           "documents": {"planted": 4, "background": 0}}}}
    groups = [{"name": "x0", "exposures": 0}, {"name": "x4_dump", "exposures": 4}]
    found = {"dataset": "synth_nli", "seed": 1, "draw": 1, "decontamination": block, "groups": groups}
    say(RunResult(decontamination_only=found), tmp_path)
    printed = capsys.readouterr().out.splitlines()
    # nothing trained: no model-side loss column beside the decontaminators'
    assert printed[0] == str(tmp_path) and "| x4_dump | dump | 1/2 (0.75) |" in printed
    assert printed[-1] == f"nothing trained (decontam.only=true): {tmp_path / 'decontamination.json'}"
