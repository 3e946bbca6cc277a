"""Partitions the lab writes itself: seeded, novel text in the shapes of the real benchmarks.

No base model can have seen these instances, so they are a guaranteed-clean control, and whatever a model
replays of them after fine-tuning it learned from the contamination. Every person, place, organisation and
number is drawn at random (names are built from syllables, so they are not even real words), and the second
piece of each instance carries draws the first piece does not reveal: it cannot be guessed, only remembered.

    from detect.synth import build
    ds = build("nli", "test", size=1200, seed=0)   # a datasets.Dataset with ClassLabel labels

Shapes:
- ``nli``: sentence1 / sentence2 with labels entailment / not_entailment (RTE's label names). sentence1 states
  four facts about a person; sentence2 restates two of them in drawn order, wordings and frame (entailment),
  or one of them and a fresh fact sentence1 does not mention (not_entailment, as RTE's neutral pairs).
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
_GIVEN_NAMES = (
    "Anna Ben Carla David Elena Farid Grace Hugo Ines Jonas Kira Liam Maya Nadia Omar Paula Quentin Rosa Samir "
    "Tara Umar Vera Walter Xenia Yusuf Zoe Aiko Bruno Chiara Dmitri Emeka Fatima Gustav Hana Ivan Jamal Kofi Lena "
    "Mateo Nina Oskar Priya Rafael Sofia Tomas Ulla Viktor Wen Yara Zainab"
).split()
_PLACE_SUFFIXES = ("ford", "vale", "burg", "haven", "mouth", "wick", "stead", "moor")
_ORG_KINDS = ("Institute", "Cooperative", "Foundation", "Rail Company", "Water Board", "Library", "Trust", "Guild")
_TEAM_KINDS = ("Rovers", "United", "Athletic", "Wanderers", "Harriers", "Comets")
_ROLES = ("mechanic", "teacher", "baker", "surveyor", "nurse", "carpenter", "librarian", "pilot", "chemist", "farmer")
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
    # a real given name and an invented surname: a new person every time, at a few tokens a name
    "person": lambda r: f"{r.choice(_GIVEN_NAMES)} {_word(r)}",
    "person2": lambda r: f"{r.choice(_GIVEN_NAMES)} {_word(r)}",
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

# NLI: sentence1 states four facts about a drawn person: role, origin and two actions from this bank, each with
# its own drawn values, in the first wording. sentence2 restates two of the facts, each in one of three
# wordings (the later ones reorder the phrase), in one of three frames (entailment); or one restated fact and
# one fresh action with fresh values that sentence1 does not mention (not_entailment, as RTE's neutral pairs).
# A model that learned the templates but not the instance must guess pair, order, wordings and frame; the
# fresh fact of a not_entailment pair cannot be guessed at all.
_NLI_ROLE = ("is a {role}", "works as a {role}", "earns a living as a {role}")
_NLI_ORIGIN = ("comes from {place}", "was born in {place}", "grew up in the town of {place}")
_NLI_ACTIONS = (
    ("sold {count} {objects} to {company}", "supplied {company} with {count} {objects}",
     "has {company} as the buyer of {count} {objects}"),
    ("donated {count} {objects} to the {org}", "gave the {org} {count} {objects}",
     "is thanked by the {org} for {count} {objects}"),
    ("walked {count} kilometres to {place2}", "reached {place2} on foot after {count} kilometres",
     "made it to {place2} by walking {count} kilometres"),
    ("rescued {count2} sailors near {place2}", "saved {count2} sailors off {place2}",
     "pulled {count2} sailors from the sea by {place2}"),
    ("won the {org} prize in {year}", "took the {year} prize of the {org}",
     "was given the {org} award in {year}"),
    ("opened a {product} workshop in {place2}", "runs a workshop in {place2} that makes a {product}",
     "started making a {product} in {place2}"),
    ("trained {count2} apprentices for {company}", "taught {count2} apprentices who now work at {company}",
     "prepared {count2} trainees for jobs at {company}"),
    ("married {person2} in {month} {year}", "became the spouse of {person2} in {month} {year}",
     "wed {person2} in {year}, in {month}"),
    ("built a {product} for the {org}", "made the {org} a {product}",
     "delivered a home-built {product} to the {org}"),
    ("lost {money} dollars in {month}", "saw {money} dollars vanish in {month}",
     "had a {month} loss of {money} dollars"),
    ("painted {count2} murals for {company}", "decorated {company} with {count2} murals",
     "was paid by {company} for {count2} murals"),
    ("moved to {place2} on a {day}", "relocated to {place2} one {day}",
     "arrived to live in {place2} on a {day}"),
)
_NLI_FRAMES = (
    "{person} {first} and {second}.",
    "{person} {first}, and also {second}.",
    "It is true that {person} {first} and {second}.",
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
    person = _FIELDS["person"](rng)
    actions = [_NLI_ACTIONS[i] for i in rng.choice(len(_NLI_ACTIONS), size=3, replace=False)]
    wordings = [_NLI_ROLE, _NLI_ORIGIN, *actions[:2]]  # the third action is the fresh, unmentioned one
    values = [_fill(" ".join(w), rng)[1] for w in wordings]  # each fact draws its own values
    role, origin, first_action, second_action = (w[0].format(**v) for w, v in zip(wordings, values))
    sentence1 = f"{person}, a {values[0]['role']} from {values[1]['place']}, {first_action} and {second_action}."
    chosen = [2, 3]
    while chosen == [2, 3]:  # the two actions in sentence1's order: a copy of sentence1 would score high
        chosen = [int(i) for i in rng.choice(len(wordings), size=2, replace=False)]
    restated = [wordings[i][int(rng.integers(3))].format(**values[i]) for i in chosen]
    if label == 1:  # not_entailment: one of the two facts is a fresh action sentence1 does not mention
        fresh_text, fresh_values = actions[2][int(rng.integers(3))], _fill(" ".join(actions[2]), rng)[1]
        restated[int(rng.integers(2))] = fresh_text.format(**fresh_values)
    frame = _NLI_FRAMES[int(rng.integers(len(_NLI_FRAMES)))]
    sentence2 = frame.format(person=person, first=restated[0], second=restated[1])
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
