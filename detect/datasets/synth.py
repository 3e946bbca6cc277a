"""Partitions the lab writes itself: seeded, novel text in the shapes of the real benchmarks.

No base model can have seen these instances, so they are a guaranteed-clean control, and whatever a model
replays of them after fine-tuning it learned from the contamination. Every person, place, organisation and
number is drawn at random (names are built from syllables, so they are not even real words), and the second
piece of each instance carries draws the first piece does not reveal: it cannot be guessed, only remembered.

    from detect.datasets.synth import build
    ds = build("nli", "test", size=1200, seed=0)   # a datasets.Dataset with ClassLabel labels

Shapes:
- ``nli``: sentence1 / sentence2 with labels entailment / not_entailment (RTE's label names). sentence1 states
  four facts about a person; sentence2 restates two of them in drawn order, wordings and frame (entailment),
  or one of them and a fresh fact sentence1 does not mention (not_entailment, as RTE's neutral pairs).
- ``news``: two or three sentences of news with AG News's four labels, each a fact from the label's bank in one
  of three wordings; cut at a sentence boundary.
- ``xsum``: one long sentence, an XSum-style summary (a lead and a consequence clause, three wordings each);
  cut at a word boundary.

Train and test come from one stream of draws, so no text is in both splits.

Paraphrases: every fact of every shape has three wordings and every shape a few frames, so an instance can be told
again in other words with the same drawn values and label: ``paraphrase(row, shape, variant)`` (variants
1..``VARIANTS``) re-renders the row's recorded draws (``generate_draws``: the same stream of draws the rows come
from, so the rows themselves are unchanged). ``detect/datasets/paraphrase.py`` serves them for a dataset config.
"""

from __future__ import annotations

import copy
import string
from functools import lru_cache

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
    "company2": lambda r: f"{_word(r)}{r.choice(['tek', 'ware', 'corp', ' Mills', ' Freight'])}",
    "org2": lambda r: f"{_word(r)} {r.choice(_ORG_KINDS)}",
    "objects2": lambda r: str(r.choice(_OBJECTS)),
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
# News: a lead sentence and one or two more facts, each a sentence drawn from the label's bank in one of three
# wordings with its own drawn values. The cut falls between sentences, so the second piece is whole facts the
# first piece does not determine: which facts (of six), which wording, which names and numbers.
_NEWS_FACTS = {  # AG News's label order: World, Sports, Business, Sci/Tech
    0: (
        ("Leaders of {place} and {place2} signed a water treaty on {day}.",
         "A water treaty between {place} and {place2} was signed on {day}.",
         "On {day}, {place} and {place2} agreed to share the river."),
        ("Thousands marched through {place} demanding the release of {person}.",
         "Protesters in {place} called for {person} to be freed.",
         "A crowd filled the centre of {place} to support the jailed {person}."),
        ("Floods have displaced {count} families near {place2}.",
         "{count} families near {place2} lost their homes to floods.",
         "Rising water forced {count} households out of {place2}."),
        ("{person2} was sworn in as governor of {place} after a vote with {percent} percent turnout.",
         "Turnout reached {percent} percent in the vote that made {person2} governor of {place}.",
         "The new governor of {place}, {person2}, took office after {percent} percent of voters took part."),
        ("The {org} said a curfew in {place2} will start at {count2} o'clock.",
         "A {count2} o'clock curfew was announced for {place2} by the {org}.",
         "Residents of {place2} must be home by {count2} o'clock, the {org} ordered."),
        ("Talks brokered by {person} lasted {count2} days.",
         "{person} kept the delegations talking for {count2} days.",
         "After {count2} days of mediation by {person}, the sides met again."),
    ),
    1: (
        ("{team} beat {team2} {score}-{score2} in {place} on {day}.",
         "{team2} lost {score2}-{score} to {team} in {place} on {day}.",
         "A {score}-{score2} win in {place} on {day} lifted {team} above {team2}."),
        ("{person} scored twice for the visitors.",
         "Both goals for the visitors came from {person}.",
         "The visitors relied on two goals by {person}."),
        ("Coach {person2} said the win ends a run of {count2} defeats.",
         "The result broke a {count2}-match losing streak, coach {person2} noted.",
         "{person2}, the coach, had waited {count2} games for a victory."),
        ("{person} won the {place2} marathon in {count2} minutes over two hours.",
         "The {place2} marathon went to {person} in two hours and {count2} minutes.",
         "{person} crossed the line first in {place2} after two hours {count2} minutes."),
        ("{team} signed striker {person2} for {money} dollars.",
         "{person2} joined {team} in a {money} dollar transfer.",
         "A fee of {money} dollars brought {person2} to {team}."),
        ("The match in {place} drew {count} fans.",
         "{count} supporters watched in {place}.",
         "A crowd of {count} filled the ground in {place}."),
    ),
    2: (
        ("Shares in {company} rose {percent} percent on {day}.",
         "{company} stock gained {percent} percent on {day}.",
         "Investors pushed {company} up {percent} percent on {day}."),
        ("{company} reported profits of {money} dollars.",
         "Profit at {company} reached {money} dollars.",
         "{company} earned {money} dollars in the quarter."),
        ("{company} will cut {count} jobs at its plant in {place}.",
         "{count} workers at the {place} plant of {company} will lose their jobs.",
         "The {place} factory of {company} is to shed {count} posts."),
        ("Chief executive {person} said demand for its {product} had doubled.",
         "Demand for the {product} has doubled, chief executive {person} told analysts.",
         "{person}, who runs the firm, pointed to twice the orders for its {product}."),
        ("Union leader {person2} called the move a betrayal.",
         "{person2} of the workers' union said the plan betrays staff.",
         "The union, led by {person2}, condemned the decision."),
        ("Fuel prices in {place2} climbed {percent} percent in {month}.",
         "In {month}, fuel in {place2} cost {percent} percent more.",
         "Drivers in {place2} paid {percent} percent more for fuel in {month}."),
    ),
    3: (
        ("Researchers at the {org} built a {product} that runs for {count2} days on one charge.",
         "A {product} from the {org} lasts {count2} days per charge.",
         "The {org} has a {product} prototype with {count2} days of battery life."),
        ("A probe sent back images of a crater {count} kilometres wide.",
         "Images from the probe show a {count}-kilometre crater.",
         "The probe photographed a crater spanning {count} kilometres."),
        ("Lead scientist {person} said tests start in {place} in {month}.",
         "Tests will begin in {place} in {month}, according to lead scientist {person}.",
         "{person}, who leads the team, plans trials in {place} this {month}."),
        ("{company} released software that translates {count2} languages.",
         "New {company} software handles {count2} languages.",
         "Translation across {count2} languages is now offered by {company}."),
        ("Astronomers found a comet that returns every {count} years.",
         "A comet with a {count}-year orbit has been identified.",
         "Every {count} years, a newly found comet passes the Sun."),
        ("Engineer {person2} said the model was trained on {count} hours of recordings.",
         "{count} hours of recordings went into the model, engineer {person2} said.",
         "The system learned from {count} hours of audio, according to {person2}."),
    ),
}

# XSum: one long sentence, a lead clause and a consequence clause, each from a bank in one of three wordings
# with drawn values. The cut falls inside the sentence, mostly in or just before the consequence.
_XSUM_LEADS = (
    ("{person}, the {role} who ran the {org} for {count2} years,", "{person}, for {count2} years the {org}'s {role},",
     "The {org}'s long-serving {role} {person},"),
    ("A {product} designed by students in {place}", "Students in {place} whose {product} design",
     "The {place} students behind a new {product}"),
    ("Residents of {place} led by {person}", "{person} and neighbours in {place}",
     "A group in {place} around {person}"),
    ("{team} manager {person}", "{person}, who managed {team},", "The {team} boss {person}"),
    ("{company}, the {place} maker of {objects},", "The {objects} firm {company} of {place}",
     "{company}, which makes {objects} in {place},"),
    ("A {role} from {place}", "{person}, a {role} living in {place},", "One {role} in {place}"),
)
_XSUM_CONSEQUENCES = (
    ("has been charged after {count} {objects} went missing from a depot in {place2}.",
     "faces charges over {count} {objects} missing from a {place2} depot.",
     "was charged when a {place2} depot reported {count} {objects} gone."),
    ("has won a {money} dollar contract from {company2}.", "secured {money} dollars of work from {company2}.",
     "signed a deal worth {money} dollars with {company2}."),
    ("has forced the {org2} to drop plans to close after {count} people signed a petition.",
     "saved the {org2} from closure with a petition of {count} names.",
     "collected {count} signatures and the {org2} will stay open."),
    ("has been sacked after a {score}-{score2} defeat left the club {count2} points adrift.",
     "lost the job after a {score}-{score2} loss put the side {count2} points behind.",
     "was dismissed, {count2} points adrift following a {score}-{score2} defeat."),
    ("is to build a factory in {place2} creating {count} jobs.",
     "will open a plant in {place2} with {count} new jobs.", "plans {count} jobs at a new {place2} factory."),
    ("has handed {count2} {objects2} found on a farm to the {org2}.",
     "gave the {org2} {count2} {objects2} dug up on a farm.",
     "passed {count2} buried {objects2} from a farm to the {org2}."),
    ("has warned that {percent} percent of bridges in {place2} need repairs.",
     "says repairs are due on {percent} percent of the bridges in {place2}.",
     "found that {percent} percent of {place2} bridges are unsafe."),
    ("has crossed the {place2} strait in a homemade canoe in {count2} hours.",
     "paddled across the {place2} strait in {count2} hours in a canoe of their own making.",
     "spent {count2} hours crossing the {place2} strait in a self-built canoe."),
)

NLI_LABELS = ["entailment", "not_entailment"]
NEWS_LABELS = ["World", "Sports", "Business", "Sci/Tech"]


def _fill(template: str, rng: np.random.Generator, values: dict[str, str] | None = None) -> tuple[str, dict]:
    values = dict(values or {})
    for name in _FIELDS:
        if "{" + name + "}" in template and name not in values:
            values[name] = _FIELDS[name](rng)
    return template.format(**values), values


# Each instance is made in two steps: ``_*_draw`` takes every random draw (values, facts, wording and frame
# indices) from the generator, in the order the partitions were first generated with, and ``_*_render`` writes
# the text. Rendered with shifts (0, 0) a draw is the row; other shifts choose other wordings and frames of the
# same facts (``render``: a paraphrase), so a paraphrase keeps every drawn value and the label.


def _fields_of(template: str) -> frozenset[str]:
    return frozenset(name for _, name, _, _ in string.Formatter().parse(template) if name)


def _other(bank: tuple[str, ...], drawn: int, shift: int) -> int:
    """Another wording of a fact (shift 1 or 2 picks among the others), or the drawn one (shift 0). Only a wording
    that names the same fields qualifies: one with more would need a value never drawn (a new fact), one with
    fewer would drop a drawn value (two of XSum's leads); a fact with no such wording keeps its own."""
    if shift == 0:
        return drawn
    fields = _fields_of(bank[drawn])
    others = [(drawn + k) % len(bank) for k in range(1, len(bank))
              if _fields_of(bank[(drawn + k) % len(bank)]) == fields]
    return others[(shift - 1) % len(others)] if others else drawn


def _nli_draw(rng: np.random.Generator, label: int) -> dict:
    person = _FIELDS["person"](rng)
    action_ids = [int(i) for i in rng.choice(len(_NLI_ACTIONS), size=3, replace=False)]
    banks = [_NLI_ROLE, _NLI_ORIGIN, *(_NLI_ACTIONS[i] for i in action_ids[:2])]  # the third action: the fresh one
    values = [_fill(" ".join(bank), rng)[1] for bank in banks]  # each fact draws its own values
    chosen = [2, 3]
    while chosen == [2, 3]:  # the two actions in sentence1's order: a copy of sentence1 would score high
        chosen = [int(i) for i in rng.choice(len(banks), size=2, replace=False)]
    restated = [[i, int(rng.integers(3))] for i in chosen]  # (fact, wording) of each restated fact
    fresh = None
    if label == 1:  # not_entailment: one of the two facts is a fresh action sentence1 does not mention
        wording, fresh_values = int(rng.integers(3)), _fill(" ".join(_NLI_ACTIONS[action_ids[2]]), rng)[1]
        fresh = {"wording": wording, "values": fresh_values, "slot": int(rng.integers(2))}
    frame = int(rng.integers(len(_NLI_FRAMES)))
    return {"label": label, "person": person, "actions": action_ids, "values": values, "restated": restated,
            "fresh": fresh, "frame": frame}


# sentence1's frames: the first is the partition's own (role and origin as bare values, every action in its first
# wording); a paraphrase uses another, with role and origin worded as sentence2 words them.
_NLI_FIRST_FRAMES = (
    "{person}, a {role} from {place}, {first} and {second}.",
    "{person} {role_phrase}, {origin_phrase}, {first} and {second}.",
    "{person}, who {role_phrase} and {origin_phrase}, {first} and {second}.",
)


def _nli_render(draws: dict, shift: int = 0, frame_shift: int = 0) -> dict:
    values, person = draws["values"], draws["person"]
    banks = [_NLI_ROLE, _NLI_ORIGIN, *(_NLI_ACTIONS[i] for i in draws["actions"][:2])]

    def worded(fact: int, wording: int) -> str:
        return banks[fact][_other(banks[fact], wording, shift)].format(**values[fact])

    first, second = worded(2, 0), worded(3, 0)
    sentence1 = _NLI_FIRST_FRAMES[frame_shift % len(_NLI_FIRST_FRAMES)].format(
        person=person, role=values[0]["role"], place=values[1]["place"], first=first, second=second,
        role_phrase=_NLI_ROLE[shift % 3].format(**values[0]), origin_phrase=_NLI_ORIGIN[shift % 3].format(**values[1]))
    restated = [worded(fact, wording) for fact, wording in draws["restated"]]
    fresh = draws["fresh"]
    if fresh is not None:
        bank = _NLI_ACTIONS[draws["actions"][2]]
        restated[fresh["slot"]] = bank[_other(bank, fresh["wording"], shift)].format(**fresh["values"])
    frame = _NLI_FRAMES[(draws["frame"] + frame_shift) % len(_NLI_FRAMES)]
    sentence2 = frame.format(person=person, first=restated[0], second=restated[1])
    return {"sentence1": sentence1, "sentence2": sentence2, "label": draws["label"]}


def _nli_instance(rng: np.random.Generator, label: int) -> dict:
    return _nli_render(_nli_draw(rng, label))


def _news_draw(rng: np.random.Generator, label: int) -> dict:
    bank = _NEWS_FACTS[label]
    fact_ids = [int(i) for i in rng.choice(len(bank), size=int(rng.integers(2, 4)), replace=False)]
    facts = []
    for fact in fact_ids:
        wording = int(rng.integers(3))
        facts.append([fact, wording, _fill(bank[fact][wording], rng)[1]])  # only the drawn wording's fields
    return {"label": label, "facts": facts}


def _news_render(draws: dict, shift: int = 0, frame_shift: int = 0) -> dict:
    bank = _NEWS_FACTS[draws["label"]]
    sentences = [bank[fact][_other(bank[fact], wording, shift)].format(**values)
                 for fact, wording, values in draws["facts"]]
    turn = frame_shift % len(sentences)  # a paraphrase may also tell the same facts in another order
    return {"text": " ".join(sentences[turn:] + sentences[:turn]), "label": draws["label"]}


def _news_instance(rng: np.random.Generator, label: int) -> dict:
    return _news_render(_news_draw(rng, label))


def _xsum_draw(rng: np.random.Generator, label: int) -> dict:
    lead = [int(rng.integers(len(_XSUM_LEADS))), int(rng.integers(3))]
    consequence = [int(rng.integers(len(_XSUM_CONSEQUENCES))), int(rng.integers(3))]
    template = f"{_XSUM_LEADS[lead[0]][lead[1]]} {_XSUM_CONSEQUENCES[consequence[0]][consequence[1]]}"
    return {"lead": lead, "consequence": consequence, "values": _fill(template, rng)[1]}


# XSum's frames: the summary as drawn, or reported (a paraphrase's other sentence structure; no fact is added).
_XSUM_FRAMES = ("{summary}", "It emerged that {summary}", "Reports say that {summary}")


def _xsum_render(draws: dict, shift: int = 0, frame_shift: int = 0) -> dict:
    (lead_id, lead_wording), (consequence_id, consequence_wording) = draws["lead"], draws["consequence"]
    lead_bank, consequence_bank = _XSUM_LEADS[lead_id], _XSUM_CONSEQUENCES[consequence_id]
    lead = lead_bank[_other(lead_bank, lead_wording, shift)]
    consequence = consequence_bank[_other(consequence_bank, consequence_wording, shift)]
    summary = f"{lead} {consequence}".format(**draws["values"])
    frame = _XSUM_FRAMES[frame_shift % len(_XSUM_FRAMES)]
    if frame_shift % len(_XSUM_FRAMES) and not lead.startswith("{"):
        summary = summary[0].lower() + summary[1:]  # "A pilot from ..." inside a frame; a name keeps its capital
    summary = frame.format(summary=summary)
    return {"summary": summary[0].upper() + summary[1:]}


def _xsum_instance(rng: np.random.Generator, label: int) -> dict:
    return _xsum_render(_xsum_draw(rng, label))


# shape -> (instance maker, label names or None, the field whose text must be unique)
SHAPES = {
    "nli": (_nli_instance, NLI_LABELS, "sentence1"),
    "news": (_news_instance, NEWS_LABELS, "text"),
    "xsum": (_xsum_instance, None, "summary"),
}


# shape -> (its draw, its render): an instance maker above is render(draw(rng, label))
_STEPS = {"nli": (_nli_draw, _nli_render), "news": (_news_draw, _news_render), "xsum": (_xsum_draw, _xsum_render)}
TEXT_FIELDS = {"nli": ("sentence1", "sentence2"), "news": ("text",), "xsum": ("summary",)}  # what a paraphrase rewords


def generate_draws(shape: str, size: int, seed: int) -> dict[str, list[dict]]:
    """Both splits' instances as their draws (``render`` writes each one's row or a paraphrase of it): the rows of
    ``generate_rows``, from the same stream of draws in the same order. A copy of the cached partition: drawing one
    takes ~2 s (2,400 NLI instances) and every split, sampling and paraphrase of it reads the same."""
    return copy.deepcopy(_generated_draws(shape, size, seed))


@lru_cache(maxsize=8)
def _generated_draws(shape: str, size: int, seed: int) -> dict[str, list[dict]]:
    _, label_names, unique_field = SHAPES[shape]
    draw, render_row = _STEPS[shape]
    n_labels = len(label_names) if label_names else 1
    rng = np.random.default_rng([seed, len(shape), sum(map(ord, shape))])
    seen: set[str] = set()
    splits: dict[str, list[dict]] = {}
    for split in SPLITS:
        drawn: list[dict] = []
        while len(drawn) < size:
            instance = draw(rng, len(drawn) % n_labels)
            text = render_row(instance)[unique_field]
            if text not in seen:  # a repeat would leak between members and non-members
                seen.add(text)
                drawn.append(instance)
        order = rng.permutation(size)
        splits[split] = [drawn[i] for i in order]
    return splits


def generate_rows(shape: str, size: int, seed: int) -> dict[str, list[dict]]:
    """Both splits' rows, label-balanced (labels cycle, then the order is shuffled), all texts distinct."""
    render_row = _STEPS[shape][1]
    return {split: [render_row(instance) for instance in drawn]
            for split, drawn in generate_draws(shape, size, seed).items()}


# A paraphrase of an instance is its draws rendered with other wordings and another frame: variant v (1..VARIANTS)
# shifts every fact to another wording (1 + (v - 1) % 2: the first or second of its other wordings) and the frame
# (1 + (v - 1) // 2: sentence1's and sentence2's frames, news's sentence order, XSum's reporting frame). Every fact
# changes wording where it has another with the same fields, and the frame always changes, so each variant differs
# from the instance; the label and every drawn value stay.
VARIANTS = 4


def render(shape: str, draws: dict, variant: int = 0) -> dict:
    """The row of an instance's draws (variant 0) or its paraphrase ``variant`` (1..VARIANTS)."""
    if not 0 <= variant <= VARIANTS:
        raise ValueError(f"variant {variant}: the synthetic shapes have paraphrase variants 1..{VARIANTS}")
    shift, frame_shift = (0, 0) if variant == 0 else (1 + (variant - 1) % 2, 1 + (variant - 1) // 2)
    return _STEPS[shape][1](draws, shift, frame_shift)


@lru_cache(maxsize=8)
def _draws_by_text(shape: str, size: int, seed: int) -> dict[str, dict]:
    """Both splits' draws by their unique text (train and test share no text, so one text is one instance)."""
    unique_field = SHAPES[shape][2]
    render_row = _STEPS[shape][1]
    return {render_row(instance)[unique_field]: instance
            for drawn in generate_draws(shape, size, seed).values() for instance in drawn}


def draws_of(row: dict, shape: str, *, size: int = 1200, seed: int = 0) -> dict | None:
    """The draws of a generated row (found by its unique text in the partition of that size and seed), or None."""
    return _draws_by_text(shape, size, seed).get(row[SHAPES[shape][2]])


def paraphrase(row: dict, shape: str, variant: int, *, size: int = 1200, seed: int = 0) -> dict:
    """Paraphrase ``variant`` (1..VARIANTS) of a generated row: its text fields (``TEXT_FIELDS``) in other wordings,
    the same drawn values and label. The row is found in the partition of ``size`` and ``seed``."""
    draws = draws_of(row, shape, size=size, seed=seed)
    if draws is None:
        raise KeyError(f"not a row of the {shape} partition of size {size}, seed {seed}")
    return render(shape, draws, variant)


def build(shape: str, split: str, *, size: int = 1200, seed: int = 0):
    """One split of a synthetic partition as a ``datasets.Dataset`` whose label feature is a ClassLabel."""
    import datasets

    _, label_names, _ = SHAPES[shape]
    rows = generate_rows(shape, size, seed)[split]
    features = {name: datasets.Value("string") for name in rows[0] if name != "label"}
    if label_names:
        features["label"] = datasets.ClassLabel(names=label_names)
    return datasets.Dataset.from_list(rows, features=datasets.Features(features))
