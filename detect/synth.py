"""Partitions the lab writes itself: seeded, novel text in the shapes of the real benchmarks.

No base model can have seen these instances, so they are a guaranteed-clean control, and whatever a model
replays of them after fine-tuning it learned from the contamination. Every person, place, organisation and
number is drawn at random (names are built from syllables, so they are not even real words), and the second
piece of each instance carries draws the first piece does not reveal: it cannot be guessed, only remembered.

    from detect.synth import build
    ds = build("nli", "test", size=1200, seed=0)   # a datasets.Dataset with ClassLabel labels

Shapes:
- ``nli``: sentence1 / sentence2 with labels entailment / not_entailment (RTE's label names). sentence2
  restates one fact of sentence1 (entailment) or the same fact with one value swapped for a fresh draw.
- ``news``: two or three sentences of news with AG News's four labels; cut at a sentence boundary.
- ``xsum``: one long sentence, an XSum-style summary; cut at a word boundary.

Train and test come from one stream of draws, so no text is in both splits.
"""

from __future__ import annotations

import numpy as np

SPLITS = ("train", "test")

_SYLLABLES = (
    "ka ven tor mi sel dra lo quin bar fen zu ris mar tel os vek an dru pol ny gar hel ith op rud "
    "sa bel cor dun ef jas kil mor nov pra ret sil tam ulm var wex yor zan"
).split()
_PLACE_SUFFIXES = ("ford", "vale", "burg", "haven", "mouth", "wick", "stead", "moor")
_ORG_KINDS = ("Institute", "Cooperative", "Foundation", "Rail Company", "Water Board", "Library", "Trust", "Guild")
_TEAM_KINDS = ("Rovers", "United", "Athletic", "Wanderers", "Harriers", "Comets")
_ROLES = ("engineer", "teacher", "baker", "surveyor", "nurse", "carpenter", "librarian", "pilot", "chemist", "farmer")
_OBJECTS = ("bicycles", "laptops", "tractors", "violins", "telescopes", "beehives", "canoes", "lanterns", "pianos")
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October")
_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_PRODUCTS = ("battery", "water filter", "seed drill", "hearing aid", "solar kettle", "cargo drone", "wind pump")


def _word(rng: np.random.Generator, lo: int = 2, hi: int = 3) -> str:
    n = int(rng.integers(lo, hi + 1))
    return "".join(rng.choice(_SYLLABLES) for _ in range(n)).capitalize()


# One drawer per field; a template names the fields it uses. Drawing a field again gives a fresh value,
# which is how not_entailment sentences and distractors are made.
_FIELDS = {
    "person": lambda r: f"{_word(r)} {_word(r)}",
    "person2": lambda r: f"{_word(r)} {_word(r)}",
    "place": lambda r: _word(r, 1, 2) + str(r.choice(_PLACE_SUFFIXES)),
    "place2": lambda r: _word(r, 1, 2) + str(r.choice(_PLACE_SUFFIXES)),
    "org": lambda r: f"{_word(r)} {r.choice(_ORG_KINDS)}",
    "team": lambda r: f"{_word(r)} {r.choice(_TEAM_KINDS)}",
    "team2": lambda r: f"{_word(r)} {r.choice(_TEAM_KINDS)}",
    "company": lambda r: f"{_word(r)}{r.choice(['tek', 'ware', 'corp', ' Mills', ' Freight'])}",
    "role": lambda r: str(r.choice(_ROLES)),
    "objects": lambda r: str(r.choice(_OBJECTS)),
    "product": lambda r: str(r.choice(_PRODUCTS)),
    "month": lambda r: str(r.choice(_MONTHS)),
    "day": lambda r: str(r.choice(_DAYS)),
    "year": lambda r: str(int(r.integers(1961, 2019))),
    "count": lambda r: str(int(r.integers(12, 990))),
    "count2": lambda r: str(int(r.integers(3, 60))),
    "score": lambda r: str(int(r.integers(0, 6))),
    "score2": lambda r: str(int(r.integers(0, 6))),
    "percent": lambda r: str(int(r.integers(3, 48))),
    "money": lambda r: f"{int(r.integers(2, 90))}.{int(r.integers(1, 10))} million",
}

# (sentence1, [sentence2 restating one fact of sentence1, ...])
_NLI_TEMPLATES = (
    (
        "{person}, a {role} from {place}, donated {count} {objects} to the {org} in {month} {year}.",
        ["{person} gave {count} {objects} to the {org}.", "{person} works as a {role}.",
         "The {org} received a donation in {year}.", "{person} comes from {place}."],
    ),
    (
        "The {org} in {place} hired {person} as its new {role} after interviewing {count} applicants in {month}.",
        ["{person} was hired by the {org}.", "The {org} interviewed {count} applicants.",
         "The {org} is located in {place}.", "{person} was hired in {month}."],
    ),
    (
        "In {year}, {person} walked {count} kilometres from {place} to {place2} to raise money for the {org}.",
        ["{person} walked from {place} to {place2}.", "{person} raised money for the {org}.",
         "The walk covered {count} kilometres.", "{person} walked to {place2} in {year}."],
    ),
    (
        "{company} opened a factory in {place} with {count} workers, backed by a loan of {money} dollars from the {org}.",
        ["{company} has a factory in {place}.", "The {org} lent {money} dollars to {company}.",
         "The factory in {place} employs {count} workers.", "{company} borrowed money from the {org}."],
    ),
    (
        "After a storm on {day}, {person} rescued {count2} sailors near {place}, according to the {org}.",
        ["{person} rescued {count2} sailors.", "The rescue happened near {place}.",
         "The storm was on {day}.", "The {org} reported the rescue by {person}."],
    ),
    (
        "{person}, who trained as a {role} in {place}, won the {org} prize for a {product} that costs {count} dollars.",
        ["{person} won a prize from the {org}.", "{person} invented a {product}.",
         "The {product} costs {count} dollars.", "{person} trained in {place}."],
    ),
)

_NEWS_TEMPLATES = {  # AG News's label order: World, Sports, Business, Sci/Tech
    0: (
        "Leaders of {place} and {place2} signed a water treaty on {day} after {count2} days of talks. "
        "The deal, brokered by {person}, lets farmers draw {percent} percent more from the river. "
        "Opposition groups in {place2} called it a surrender.",
        "Thousands marched through {place} on {day} demanding the release of {person}. "
        "Police said {count} people were detained near the {org}. "
        "A curfew starts at {count2} o'clock.",
        "Floods in {place} have displaced {count} families, the {org} said on {day}. "
        "Rescue teams led by {person} reached {place2} by boat.",
        "{person} was sworn in as governor of {place} on {day}, promising to rebuild {count} schools. "
        "Turnout in the vote was {percent} percent.",
    ),
    1: (
        "{team} beat {team2} {score}-{score2} in {place} on {day}. "
        "{person} scored twice for the visitors, and coach {person2} said the win ends a run of {count2} defeats.",
        "{person} won the {place} marathon in {count2} minutes over two hours on {day}. "
        "The runner-up, {person2}, finished {score} seconds behind.",
        "{team} signed striker {person} from {team2} for {money} dollars. "
        "The {role}-turned-footballer scored {count2} goals last season.",
        "{person2} retired from tennis on {day} after {count2} years on tour. "
        "Her last match, in {place}, drew {count} fans.",
    ),
    2: (
        "Shares in {company} rose {percent} percent on {day} after it reported profits of {money} dollars. "
        "Chief executive {person} said demand for its {product} had doubled in {place}.",
        "{company} will cut {count} jobs at its plant in {place}, the firm said on {day}. "
        "Union leader {person} called the move a betrayal.",
        "{company} agreed to buy {org} for {money} dollars. "
        "The deal, announced on {day} in {place}, still needs approval from regulators.",
        "Fuel prices in {place} climbed {percent} percent in {month}, the {org} reported. "
        "Analyst {person} expects a further rise before {year}.",
    ),
    3: (
        "Researchers at the {org} have built a {product} that runs for {count2} days on one charge. "
        "Lead scientist {person} said a prototype will be tested in {place} in {month}.",
        "A probe launched by the {org} sent back images of a crater {count} kilometres wide on {day}. "
        "Project manager {person} said the data will take {count2} weeks to analyse.",
        "{company} released software that translates {count2} languages spoken around {place}. "
        "Engineer {person} said it was trained on {count} hours of recordings.",
        "Astronomers led by {person} at the {org} found a comet that returns every {count} years. "
        "It will pass closest to Earth in {month} {year}.",
    ),
}

_XSUM_TEMPLATES = (
    "{person}, the {role} who ran the {org} for {count2} years, has been charged after {count} {objects} "
    "went missing from a depot in {place}.",
    "A {product} designed by students in {place} has won a {money} dollar contract from {company}, "
    "the {org} has announced.",
    "Plans to close the {org} in {place} have been dropped after {count} residents signed a petition "
    "started by {person}.",
    "{team} have sacked manager {person} after a {score}-{score2} defeat by {team2} left them {count2} points "
    "adrift.",
    "{company} is to build a factory in {place} creating {count} jobs, in a deal worth {money} dollars.",
    "A {role} from {place} who found {count2} {objects} buried on a farm has handed them to the {org}.",
    "The {org} has warned that {percent} percent of bridges in {place} need repairs costing {money} dollars.",
    "{person} has become the first {role} from {place} to cross the {place2} strait in a homemade canoe.",
)

NLI_LABELS = ["entailment", "not_entailment"]
NEWS_LABELS = ["World", "Sports", "Business", "Sci/Tech"]


def _fill(template: str, rng: np.random.Generator, values: dict[str, str] | None = None) -> tuple[str, dict]:
    values = dict(values or {})
    for name in _FIELDS:
        if "{" + name + "}" in template and name not in values:
            values[name] = _FIELDS[name](rng)
    return template.format(**values), values


def _nli_instance(rng: np.random.Generator, label: int) -> dict:
    sentence1_template, restatements = _NLI_TEMPLATES[int(rng.integers(len(_NLI_TEMPLATES)))]
    sentence1, values = _fill(sentence1_template, rng)
    restatement = restatements[int(rng.integers(len(restatements)))]
    if label == 1:  # not_entailment: swap one value of the restated fact for a fresh, different draw
        used = [name for name in values if "{" + name + "}" in restatement]
        swapped = used[int(rng.integers(len(used)))]
        fresh = values[swapped]
        while fresh == values[swapped]:
            fresh = _FIELDS[swapped](rng)
        values = {**values, swapped: fresh}
    sentence2, _ = _fill(restatement, rng, values)
    return {"sentence1": sentence1, "sentence2": sentence2, "label": label}


def _news_instance(rng: np.random.Generator, label: int) -> dict:
    templates = _NEWS_TEMPLATES[label]
    text, _ = _fill(templates[int(rng.integers(len(templates)))], rng)
    return {"text": text, "label": label}


def _xsum_instance(rng: np.random.Generator, label: int) -> dict:
    summary, _ = _fill(_XSUM_TEMPLATES[int(rng.integers(len(_XSUM_TEMPLATES)))], rng)
    return {"summary": summary}


# shape -> (instance maker, label names or None, the field whose text must be unique)
SHAPES = {
    "nli": (_nli_instance, NLI_LABELS, "sentence1"),
    "news": (_news_instance, NEWS_LABELS, "text"),
    "xsum": (_xsum_instance, None, "summary"),
}


def generate_rows(shape: str, size: int, seed: int) -> dict[str, list[dict]]:
    """Both splits' rows, label-balanced (labels cycle, then the order is shuffled), all texts distinct."""
    make, label_names, unique_field = SHAPES[shape]
    n_labels = len(label_names) if label_names else 1
    rng = np.random.default_rng([seed, len(shape), sum(map(ord, shape))])
    seen: set[str] = set()
    splits: dict[str, list[dict]] = {}
    for split in SPLITS:
        rows: list[dict] = []
        while len(rows) < size:
            row = make(rng, len(rows) % n_labels)
            if row[unique_field] not in seen:  # a repeat would leak between members and non-members
                seen.add(row[unique_field])
                rows.append(row)
        order = rng.permutation(size)
        splits[split] = [rows[i] for i in order]
    return splits


def build(shape: str, split: str, *, size: int = 1200, seed: int = 0):
    """One split of a synthetic partition as a ``datasets.Dataset`` whose label feature is a ClassLabel."""
    import datasets

    _, label_names, _ = SHAPES[shape]
    rows = generate_rows(shape, size, seed)[split]
    features = {name: datasets.Value("string") for name in rows[0] if name != "label"}
    if label_names:
        features["label"] = datasets.ClassLabel(names=label_names)
    return datasets.Dataset.from_list(rows, features=datasets.Features(features))
