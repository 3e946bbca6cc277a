"""Guided and general instructions (method section 5: the paper's Table 5 as published in the official code).

Guided names the dataset and split and asks for the second piece "as EXACTLY appeared in the dataset";
general asks for a plausible second piece with neither. A guided/general gap that only contamination explains
is Algorithm 1's signal. Summary, one-sentence-summary and question partitions use the classification
wording with "summary" / "one-sentence summary" / "question" for "instance", and no LABEL block; code (HumanEval,
not in the paper) likewise with "function".
"""

from __future__ import annotations

import re

GUIDED_PIECES = """INSTRUCTION:
You are provided with the FIRST PIECE of {article} from the {split_name} split of the {dataset_name} dataset.
Finish the SECOND PIECE of the {noun} as EXACTLY appeared in the dataset.
ONLY rely on the original form of the {noun} in the dataset to finish the SECOND PIECE.
{label_block}
FIRST PIECE:
{first_piece}

SECOND PIECE:
"""

GUIDED_NLI = """INSTRUCTION:
You are provided with SENTENCE 1 from the {split_name} split of the {dataset_name} dataset.
Finish SENTENCE 2 as appeared in the dataset.
SENTENCE 2 MUST EXACTLY match the instance in the dataset.

SENTENCE 1:
{first_piece}

LABEL: {label}

SENTENCE 2:
"""

GENERAL_PIECES = """INSTRUCTION:
Finish the SECOND PIECE based on the FIRST PIECE, such that these two pieces become a single {whole}.
{label_block}
FIRST PIECE:
{first_piece}

SECOND PIECE:
"""

GENERAL_NLI = """INSTRUCTION:
Finish SENTENCE 2 based on SENTENCE 1, such that the following LABEL shows the logical relationship between SENTENCE 1 and SENTENCE 2.

SENTENCE 1:
{first_piece}

LABEL: {label}

SENTENCE 2:
"""

# task -> (article + noun in "the FIRST PIECE of ...", noun after "of the", the general prompt's "single ...")
_WORDING = {
    "classification": ("an instance", "instance", "instance with the following LABEL"),
    "summary": ("a summary", "summary", "summary"),
    "one_sentence_summary": ("a one-sentence summary", "summary", "one-sentence summary"),
    "question": ("a question", "question", "question"),
    "code": ("a function", "function", "function"),  # HumanEval: the problem's prompt and its canonical solution
}

INSTRUCTIONS = ("guided", "general")


def build_prompt(
    instruction: str, task: str, *, first_piece: str, label: str | None, dataset_name: str, split_name: str
) -> str:
    """The full instruction text for one instance; ``instruction`` is ``guided`` or ``general``."""
    if task == "nli":
        template = GUIDED_NLI if instruction == "guided" else GENERAL_NLI
        return template.format(split_name=split_name, dataset_name=dataset_name, first_piece=first_piece, label=label)
    article, noun, whole = _WORDING[task]
    label_block = f"\nLABEL: {label}\n" if task == "classification" else ""
    if instruction == "guided":
        return GUIDED_PIECES.format(
            article=article, noun=noun, split_name=split_name, dataset_name=dataset_name,
            label_block=label_block, first_piece=first_piece,
        )
    return GENERAL_PIECES.format(whole=whole, label_block=label_block, first_piece=first_piece)


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
