"""The one lean detection setting the tiny studies of the test suite share (issue 33): Time Travel and the logit
scores on the leak's rendering, a handful of known non-members, short completions. The detectors that cost a
study minutes on 2 cores (ReCaLL's and the performance test's prefixes, the quiz, TS-Guessing, CDD's samples,
ChatGPT-Cheat?, Oren et al.'s order tests, DC-PDD's corpus, the bare-text variants) are off; a test that is about
one of them turns it back on (``lean(keep=...)``). The full detector set runs in exactly one study test
(tests/test_study.py::test_the_whole_study_writes_every_file_and_field) and in the calibration multirun that reads
every detector's columns (tests/test_calibrate.py)."""

# The tiny model of the suite's studies: random weights and a 1,024-token byte-level vocabulary (with the embedded
# 49k one the output layer is nearly all of every step: the tiny studies ran ~2x longer on 2 cores)
TINY_MODEL = ["model=tiny_random", "model.vocab_size=1024"]

# The data-side decontaminators' embedding match indexes the whole split with MiniLM (synth_nli: 1,200 instances,
# seconds a run): off in the suite's tiny runs but the one planted test that checks it (tests/test_plant.py); the
# n-gram ones cost well under a second and stay on
NO_EMBEDDING = ["decontam.detectors.embedding.enabled=false"]

# Algorithm 2's leak reading (an oracle): a study's default reading (detect=one_shot) leaves it off for the first
# command's time; the suite's tiny studies turn it on, so that what reads it is tested where a study runs it
LEAK_READING = ["detect.detectors.alg2_leak.enabled=true"]

# The tiny study the study and fault tests run (seconds on 2 cores): the tiny model, 12 members and 12
# non-members of synth_nli, 4 instances a cell, one epoch, short completions, no semantic model
TINY_STUDY = ["+dataset=synth_nli", *TINY_MODEL, "sample.n_members=12", "sample.n_non_members=12",
              "sample.n_detect=4", "contaminate.epochs=1", "contaminate.batch_size=4", "detect.max_new_tokens=6",
              "detect.semantic_model=null", *LEAK_READING, *NO_EMBEDDING]

COSTLY = ("membership_raw", "dc_pdd", "cheat", "sharded_likelihood", "permutation", "recall", "performance", "dcq",
          "ts_guessing", "cdd")


def lean(keep: tuple[str, ...] = ()) -> list[str]:
    """Overrides that switch the costly detectors off, except ``keep``; and 8 known non-members a split."""
    return ["sample.n_heldout=8", *(f"detect.detectors.{name}.enabled=false" for name in COSTLY if name not in keep)]
