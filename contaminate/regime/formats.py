"""Contamination text: one benchmark instance formatted the way a scraped web copy carries it (method section 3).

    format_instance(example, template="{title} dataset, {split} split\\nsentence1: {sentence1}...",
                    dataset=dataset_cfg, split="test")

Placeholders are ``{title}``, ``{split}``, ``{id}`` (the instance's index in its split: HumanEval's task ids are
``HumanEval/{id}``) and the dataset's own field names from its config (``sentence1``, ``sentence2``, ``text``,
``summary``, ``question``, ``code``, ``label``); the label is the same string the prompts use.
"""

from __future__ import annotations

import string

from detect.datasets import Example
from detect.errors import InputError


def instance_fields(example: Example, dataset) -> dict[str, str]:
    """The instance under the dataset's field names, e.g. {"sentence1": ..., "sentence2": ..., "label": ...}."""
    fields = dataset.fields
    values = {}
    if dataset.task == "nli":
        values[fields.first], values[fields.second] = example.text, example.text_pair
    else:
        values[fields.text] = example.text
    if fields.get("label"):
        values[fields.label] = example.label
    return values


def check_template(template: str, dataset) -> None:
    """Fail before any training if the template names a field this dataset does not have."""
    names = {name for _, name, _, _ in string.Formatter().parse(template) if name}
    known = {"title", "split", "id"} | {name for name in dataset.fields.values() if name}
    missing = sorted(names - known)
    if missing:
        raise InputError(
            f"the format template names {{{missing[0]}}}, which dataset {dataset.key} lacks "
            f"(its fields: {', '.join(sorted(known))}); fix the template in conf/format/ or format.templates"
        )


def format_instance(example: Example, *, template: str, dataset, split: str) -> str:
    return template.format(title=dataset.title, split=split, id=example.instance_id,
                           **instance_fields(example, dataset))
