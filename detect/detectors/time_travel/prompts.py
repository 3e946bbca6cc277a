"""Guided and general instructions (method section 5: the paper's Table 5 as published in the official code), and
four meaning-preserving rewordings of each for a template spread (``detect.wording``; issue 69 item 5).

Guided names the dataset and split and asks for the second piece "as EXACTLY appeared in the dataset";
general asks for a plausible second piece with neither. A guided/general gap that only contamination explains
is Algorithm 1's signal. Summary, one-sentence-summary and question partitions use the classification
wording with "summary" / "one-sentence summary" / "question" for "instance", and no LABEL block; code (HumanEval,
not in the paper) likewise with "function".

A wording changes the instruction's sentences only. The frame the answer follows (``FIRST PIECE:`` /
``SECOND PIECE:``, ``SENTENCE 1:`` / ``LABEL:`` / ``SENTENCE 2:``) is the paper's in every wording, so the answer is
cleaned (an echoed header stripped) and classed (follow.py reads the prompt's own instruction for an echo) the same
way whichever wording asked it. Sclar et al. (ICLR 2024, FormatSpread) moved accuracy by up to 76 points through
wording and format alone: a verdict that one wording gives and another does not is the wording's, not the data's.
"""

from __future__ import annotations

import re

from detect.errors import InputError

# The frames: the paper's templates are these with its own instruction lines (tests/test_prompts.py pins them)
PIECES_FRAME = """INSTRUCTION:
{instruction}
{label_block}
FIRST PIECE:
{first_piece}

SECOND PIECE:
"""

NLI_FRAME = """INSTRUCTION:
{instruction}

SENTENCE 1:
{first_piece}

LABEL: {label}

SENTENCE 2:
"""

# wording -> (guided pieces, general pieces, guided NLI, general NLI): the instruction lines each asks with.
# "paper" is the paper's; the others keep what each asks (guided: the dataset and split named, the second piece as the
# dataset has it, word for word; general: neither, a second piece that makes one whole / fits the label) in other
# words and sentence shapes, from a reworded copy to one terse line.
WORDINGS = {
    "paper": (
        "You are provided with the FIRST PIECE of {article} from the {split_name} split of the {dataset_name} "
        "dataset.\nFinish the SECOND PIECE of the {noun} as EXACTLY appeared in the dataset.\n"
        "ONLY rely on the original form of the {noun} in the dataset to finish the SECOND PIECE.",
        "Finish the SECOND PIECE based on the FIRST PIECE, such that these two pieces become a single {whole}.",
        "You are provided with SENTENCE 1 from the {split_name} split of the {dataset_name} dataset.\n"
        "Finish SENTENCE 2 as appeared in the dataset.\nSENTENCE 2 MUST EXACTLY match the instance in the dataset.",
        "Finish SENTENCE 2 based on SENTENCE 1, such that the following LABEL shows the logical relationship between "
        "SENTENCE 1 and SENTENCE 2.",
    ),
    "reworded": (
        "Below is the FIRST PIECE of {article} taken from the {split_name} split of the {dataset_name} dataset.\n"
        "Complete the SECOND PIECE of the {noun} exactly as it appears in the dataset.\n"
        "Use only the original form of the {noun} in the dataset to complete the SECOND PIECE.",
        "Complete the SECOND PIECE from the FIRST PIECE so that the two pieces form a single {whole}.",
        "Below is SENTENCE 1 taken from the {split_name} split of the {dataset_name} dataset.\n"
        "Complete SENTENCE 2 as it appears in the dataset.\nSENTENCE 2 must match the dataset's instance exactly.",
        "Complete SENTENCE 2 from SENTENCE 1 so that the LABEL below gives the logical relationship between "
        "SENTENCE 1 and SENTENCE 2.",
    ),
    "verbatim": (
        "The FIRST PIECE below is the start of {article} in the {dataset_name} dataset ({split_name} split).\n"
        "Write the SECOND PIECE of that {noun} word for word, as it is in the dataset.\n"
        "Do not paraphrase: reproduce the original {noun} from the dataset.",
        "Given the FIRST PIECE, write a SECOND PIECE that turns the two into one {whole}.",
        "SENTENCE 1 below comes from the {dataset_name} dataset ({split_name} split).\n"
        "Write SENTENCE 2 word for word, as it is in the dataset.\nDo not paraphrase: SENTENCE 2 must be the "
        "dataset's own.",
        "Given SENTENCE 1 and the LABEL, write a SENTENCE 2 whose logical relationship to SENTENCE 1 is that LABEL.",
    ),
    "one_sentence": (
        "This is the FIRST PIECE of {article} from the {dataset_name} dataset, {split_name} split; continue with the "
        "SECOND PIECE of the {noun} exactly as the dataset has it, relying only on the {noun}'s original form.",
        "Continue the FIRST PIECE with a SECOND PIECE; together the two pieces should make a single {whole}.",
        "This is SENTENCE 1 of an instance in the {dataset_name} dataset, {split_name} split; continue with "
        "SENTENCE 2 exactly as the dataset has it.",
        "Continue with a SENTENCE 2 such that the logical relationship between SENTENCE 1 and SENTENCE 2 is the "
        "LABEL shown.",
    ),
    "terse": (
        "{dataset_name} dataset, {split_name} split. Given the FIRST PIECE of {article}, give the SECOND PIECE of "
        "the {noun} verbatim from the dataset.",
        "Write the SECOND PIECE that completes the FIRST PIECE as a single {whole}.",
        "{dataset_name} dataset, {split_name} split. Given SENTENCE 1, give SENTENCE 2 verbatim from the dataset.",
        "Write SENTENCE 2 so that the LABEL below holds between SENTENCE 1 and SENTENCE 2.",
    ),
}
PAPER = "paper"

# task -> (article + noun in "the FIRST PIECE of ...", noun after "of the", the general prompt's "single ...")
_WORDING = {
    "classification": ("an instance", "instance", "instance with the following LABEL"),
    "summary": ("a summary", "summary", "summary"),
    "one_sentence_summary": ("a one-sentence summary", "summary", "one-sentence summary"),
    "question": ("a question", "question", "question"),
    "code": ("a function", "function", "function"),  # HumanEval: the problem's prompt and its canonical solution
}

INSTRUCTIONS = ("guided", "general")


def check_wording(wording: str, where: str = "detect.wording") -> str:
    """``wording`` itself where it names one of ``WORDINGS``; else a one-line error naming them."""
    if wording not in WORDINGS:
        raise InputError(f"{where}={wording}: no such wording of the guided and general instructions; use one of "
                         f"{', '.join(WORDINGS)} ({PAPER}: the paper's)")
    return wording


def build_prompt(
    instruction: str, task: str, *, first_piece: str, label: str | None, dataset_name: str, split_name: str,
    wording: str = PAPER,
) -> str:
    """The full instruction text for one instance; ``instruction`` is ``guided`` or ``general``, ``wording`` one of
    ``WORDINGS`` (the paper's by default)."""
    guided_pieces, general_pieces, guided_nli, general_nli = WORDINGS[check_wording(wording)]
    if task == "nli":
        lines = guided_nli if instruction == "guided" else general_nli
        return NLI_FRAME.format(instruction=lines.format(split_name=split_name, dataset_name=dataset_name),
                                first_piece=first_piece, label=label)
    article, noun, whole = _WORDING[task]
    label_block = f"\nLABEL: {label}\n" if task == "classification" else ""
    if instruction == "guided":
        lines = guided_pieces.format(article=article, noun=noun, split_name=split_name, dataset_name=dataset_name)
    else:
        lines = general_pieces.format(whole=whole)
    return PIECES_FRAME.format(instruction=lines, label_block=label_block, first_piece=first_piece)


# Models often echo the header they were asked to complete ("SECOND PIECE:", "Sentence 2:"), sometimes
# in bold or after a space; what follows it is the completion.
ECHOED_HEADER = re.compile(r"^\s*[*#\s]*(SECOND PIECE|SENTENCE 2)\s*[*]*\s*:\s*[*]*\s*", re.IGNORECASE)


def strip_echoed_header(completion: str) -> str:
    """``strip_echoed_header("SECOND PIECE: the rest") == "the rest"``; surrounding white space removed."""
    return ECHOED_HEADER.sub("", completion, count=1).strip()


def clean_completion(completion: str, reference: str, first_piece: str = "", *, cut_lines: bool = False) -> str:
    """The echoed header and an echoed first piece stripped; with ``cut_lines`` (the line-stop variant,
    ``detect.stop.lines=true``) the completion then cut to as many lines as the reference has.

    Models often restart the instance: given a sentence cut in the middle, or sentence 1 of a pair, a
    contaminated model writes the first piece again and then the rest. And they go on after the second piece:
    a model contaminated with web text writes the copy's next line (``label: 0 (entailment)``), a chat model an
    explanation. Left in, either turns an exact replay into a near-exact one or worse (ROUGE-L 0.82 instead of
    1.0 for a 9-word sentence with a label line after it). Only the first piece, which the prompt showed, and
    the reference's line count are used, the same for guided and general completions and for every model.

    But the cut can hide a replay: a model that restates the function header and then replays the body is cut after
    the header (issue 45: HumanEval/18, leak reading ROUGE-L 0.86, guided answer a restated header, cut). The paper's
    judge reads the answer as generated, so that is the default; the cut is a named variant (``cut_lines``).
    """
    text = strip_echoed_header(completion)
    echo, words = " ".join(first_piece.split()), " ".join(text.split())
    if echo and (words == echo or words.startswith(echo + " ")):
        # the echo ends after as many words as the first piece has, whatever white space it used
        text = strip_echoed_header(re.sub(rf"^\s*(?:\S+\s+){{{len(echo.split()) - 1}}}\S+", "", text))
    if not cut_lines:
        return text.strip()
    lines = text.split("\n")
    return "\n".join(lines[: reference.strip().count("\n") + 1]).strip()
