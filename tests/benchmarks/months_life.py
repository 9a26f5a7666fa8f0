"""Six months of a person's life, written by a seeded generator for ``months.py``.

A seed picks the person (their towns, employers, pets, people, tastes) and the days things
happen; the same seed always writes the same life. The life has timelines (two moves, a job
change, a pet that dies and a new one, a taste that flips, a relationship), each lasting fact
said 2–5 times in different words on different days, corrections, musings ("if I ever moved to
Berlin…"), other people's facts, small talk, and documents dropped in on given days. At the end
come the questions, each with what a strict reply must hold and must not.

Nothing here is tuned to Mnemo's rules: the phrasings are drawn from ``PHRASINGS`` by the seed,
and a second seed gives another person with other words on other days. ``HELD_OUT_PHRASINGS``
is a second pool of wordings, written apart and never tuned on (``write_life(seed,
pool="held_out")``); ``SEALED_PHRASINGS`` and ``UNSEEN_PHRASINGS`` are a third and a fourth,
each kept for the session after the one that works on the pool before it; ``UNTOLD_PHRASINGS``
is a fifth, written before the language layer (issue 73) and run only to report.

The people include names with accents and in other scripts (Joaquín, Zoë, Søren, Ólöf,
Łukasz, 美咲), which memory must keep whole.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import date, timedelta

START = date(2026, 1, 5)  # a Monday: the first conversation
DAYS = 182  # six months
CONVERSATIONS = 32

TOWNS = [
    "Lisbon", "Madrid", "Porto", "Ghent", "Antwerp", "Lyon", "Leeds", "Utrecht", "Bologna",
    "Graz", "Tampere", "Aarhus", "Bilbao", "Kraków", "Brno", "Valencia", "Malmö", "Zürich",
]  # fmt: skip
DREAM_TOWNS = ["Berlin", "Kyoto", "Reykjavik", "Vancouver", "Marrakesh"]
EMPLOYERS = [
    "Fabrikam", "Contoso", "Northwind", "Tailspin", "Litware", "Proseware", "Adatum",
    "Wingtip", "Lucerne", "Fourth Coffee",
]  # fmt: skip
JOBS = ["nurse", "accountant", "data analyst", "teacher", "architect", "pharmacist", "editor"]
PETS = [("dog", "Biscuit"), ("cat", "Miso"), ("dog", "Pepper"), ("cat", "Olive"),
        ("rabbit", "Clover"), ("dog", "Juno"), ("cat", "Tofu")]  # fmt: skip
PARTNERS = ["Sam", "Alex", "Noor", "Lena", "Marco", "Yuki", "Dara", "Joaquín", "Zoë", "Søren"]
SISTERS = ["Ines", "Clara", "Maya", "Rosa", "Hana", "Ólöf", "美咲"]
COLLEAGUES = ["Tom", "Priya", "Jonas", "Ada", "Felix", "Łukasz", "Anaïs"]
TASTES = [("tea", "coffee"), ("running", "swimming"), ("jazz", "techno"), ("cats", "dogs")]

# Ways of saying each kind of fact; the seed picks among them, each at most once a fact.
PHRASINGS: dict[str, list[str]] = {
    "home": [
        "I live in {town}.",
        "My flat is in {town}.",
        "Home for me is {town} these days.",
        "I'm based in {town}.",
        "Here in {town} it rained all day again.",
    ],
    "moved": [
        "I moved to {town} this week!",
        "Big news: I've just moved to {town}.",
        "The boxes are finally unpacked in {town}, the move is done.",
    ],
    "job": [
        "I work at {employer} as {article} {job}.",
        "My job is at {employer}, I'm {article} {job} there.",
        "At {employer} we had a long meeting today; being {article} {job} is busy.",
        "I'm {article} {job} with {employer}.",
    ],
    "new_job": [
        "I started a new job at {employer} today!",
        "First day at {employer} today, I'm their new {job}.",
        "I've left my old job; I'm at {employer} now.",
    ],
    "pet": [
        "I have a {species} called {pet}.",
        "My {species} {pet} woke me up at six again.",
        "{pet}, my {species}, needs a vet check soon.",
        "Walking {pet} is the best part of my day.",
    ],
    "pet_died": [
        "Sad day: my {species} {pet} died this morning.",
        "We lost {pet} today. I'll miss that {species} so much.",
    ],
    "new_pet": [
        "We adopted a {species}! Her name is {pet}.",
        "Meet {pet}, my new {species}.",
        "I got a {species} from the shelter, called {pet}.",
    ],
    "taste": [
        "I prefer {liked} over {other}.",
        "{liked_cap} is my thing, not {other}.",
        "Honestly I'll always pick {liked} over {other}.",
    ],
    "taste_flip": [
        "Funny, I've gone off {other}; these days I prefer {liked}.",
        "I've switched: {liked} over {other} now.",
    ],
    "sister": [
        "My sister {sister} lives in {town}.",
        "{sister}, my sister, is in {town}.",
        "I'm visiting my sister {sister} in {town} soon.",
    ],
    "partner_new": [
        "I've started seeing someone, {partner}.",
        "{partner} and I are together now.",
    ],
    "partner": [
        "My partner {partner} cooked dinner tonight.",
        "{partner} and I went to the cinema.",
        "My partner {partner} says hi.",
    ],
    "colleague": [
        "My colleague {colleague} lives in {town}.",
        "{colleague} from work moved to {town}.",
    ],
    "muse": [
        "If I ever moved to {dream}, I'd learn the language first.",
        "Sometimes I dream of living in {dream}.",
        "Maybe one day I'll work in {dream}, who knows.",
    ],
    "correction": [
        "My dentist appointment is on {wrong}.",
        "Actually, it's on {right}, not {wrong}.",
    ],
    "small_talk": [
        "Hi!",
        "Can you suggest a quick dinner for tonight?",
        "What's a good way to stay focused in the afternoon?",
        "Thanks, that helps.",
        "Tell me something cheerful.",
        "How do I keep basil alive on a windowsill?",
        "Good morning!",
        "Any tips for sleeping better?",
    ],
}
# A second pool of wordings, written apart from the first and never tuned on: a life drawn with
# ``pool="held_out"`` says the same things in these words, to see that gains carry over.
HELD_OUT_PHRASINGS: dict[str, list[str]] = {
    "home": [
        "I've been living in {town} for a while now.",
        "Our place in {town} is tiny but cosy.",
        "The trams in {town} are always late, where I live.",
        "I call {town} home.",
    ],
    "moved": [
        "We finally made the move to {town}.",
        "New chapter: I relocated to {town} last weekend.",
        "Just got the keys to my new place in {town}!",
    ],
    "job": [
        "I'm employed by {employer}, working as {article} {job}.",
        "Work at {employer} was hectic; such is life as {article} {job}.",
        "I've been {article} {job} at {employer} for some time.",
        "{employer} pays my bills; I'm their {job}.",
    ],
    "new_job": [
        "Today I joined {employer} as {article} {job}.",
        "Goodbye old office: I now work for {employer}.",
        "Signed the contract, I'm with {employer} from today.",
    ],
    "pet": [
        "My {species} {pet} is asleep on my feet.",
        "{pet} chewed my slippers, silly {species}.",
        "I'm taking {pet}, my {species}, to the park.",
        "Our {species} is called {pet}.",
    ],
    "pet_died": [
        "{pet} passed away last night; I miss my {species} already.",
        "I had to say goodbye to {pet} today, my {species}.",
    ],
    "new_pet": [
        "There's a new {species} in the house: {pet}!",
        "We brought home a {species} named {pet}.",
        "Say hello to {pet}, the {species} I just adopted.",
    ],
    "taste": [
        "Give me {liked} over {other} any day.",
        "I'm more into {liked} than {other}.",
        "{liked_cap} beats {other}, for me.",
    ],
    "taste_flip": [
        "I changed my mind: I like {liked} more than {other} now.",
        "Turns out I'm a {liked} person now, not {other}.",
    ],
    "sister": [
        "My sister {sister} is settled in {town}.",
        "{sister}, my little sister, has a flat in {town}.",
        "Calling my sister {sister} in {town} tonight.",
    ],
    "partner_new": [
        "I'm dating {partner} now, it's official.",
        "{partner} asked me out and we're a couple now.",
    ],
    "partner": [
        "{partner}, my partner, is away this weekend.",
        "Dinner with {partner} tonight, my partner is the best.",
        "My partner {partner} bought me flowers.",
    ],
    "colleague": [
        "{colleague}, a colleague of mine, lives in {town}.",
        "My coworker {colleague} just moved to {town}.",
    ],
    "muse": [
        "I sometimes picture a life in {dream}.",
        "Wouldn't it be nice to live in {dream} some day?",
        "If only I could move to {dream}.",
    ],
    "correction": [
        "The dentist is on {wrong}.",
        "Sorry, the dentist is {right}, not {wrong}.",
    ],
    "small_talk": [
        "Hello there.",
        "What should I cook with leftover rice?",
        "Any ideas for a rainy Sunday?",
        "Cheers.",
        "How long should I steep green tea?",
        "Morning.",
        "Recommend a short podcast?",
        "Nice, thank you.",
    ],
}
# A third pool, written at the end of the session that found the first two's gap: sealed for
# the session that works on the second's wordings, so that its gains are seen to carry over.
SEALED_PHRASINGS: dict[str, list[str]] = {
    "home": [
        "These days I'm living in {town}.",
        "My address is in {town} now.",
        "Back home in {town} the bakery on my street closed.",
        "I rent a small apartment in {town}.",
    ],
    "moved": [
        "Moving day is over: I'm a resident of {town} now.",
        "We packed everything and relocated to {town}.",
        "I've settled into my new home in {town}.",
    ],
    "job": [
        "I'm on the payroll at {employer} as {article} {job}.",
        "My employer is {employer}; I work there as {article} {job}.",
        "Long shift at {employer} today, the life of {article} {job}.",
        "I do {job} work for {employer}.",
    ],
    "new_job": [
        "I handed in my notice and I'm now at {employer}.",
        "Started my new role as {article} {job} at {employer} this morning.",
        "New employer: {employer}, as of today.",
    ],
    "pet": [
        "{pet} the {species} knocked a cup off the table.",
        "Our {species} {pet} loves the garden.",
        "I bought a new bed for {pet}, my {species}.",
        "Feeding {pet}, my {species}, before work.",
    ],
    "pet_died": [
        "Heartbroken: {pet}, my {species}, is gone.",
        "We buried {pet} in the garden today; my {species} was old.",
    ],
    "new_pet": [
        "Welcome home, {pet}! A {species} from the rescue centre.",
        "Our family grew: a {species} called {pet}.",
        "I've taken in a {species}, {pet}.",
    ],
    "taste": [
        "{liked_cap} over {other}, always.",
        "I'd take {liked} over {other} any time.",
        "I like {liked} better than {other}.",
    ],
    "taste_flip": [
        "I used to love {other}, but now it's {liked} for me.",
        "These days I'd rather have {liked} than {other}.",
    ],
    "sister": [
        "My sister {sister} lives over in {town}.",
        "{sister} (my sister) bought a house in {town}.",
        "Flying to see my sister {sister} in {town} next month.",
    ],
    "partner_new": [
        "{partner} is my girlfriend now!",
        "I'm in a relationship with {partner}.",
    ],
    "partner": [
        "{partner} and I cooked together tonight.",
        "My other half, {partner}, is travelling.",
        "Date night with {partner}, my partner.",
    ],
    "colleague": [
        "{colleague} from my team lives in {town}.",
        "My workmate {colleague} relocated to {town}.",
    ],
    "muse": [
        "In another life I'd live in {dream}.",
        "Daydreaming about a flat in {dream} again.",
        "Maybe I'll retire to {dream}.",
    ],
    "correction": [
        "Dentist appointment: {wrong}.",
        "Correction, the dentist is on {right}, not {wrong}.",
    ],
    "small_talk": [
        "Hey.",
        "What's a simple lunch idea?",
        "How can I relax after work?",
        "Thank you!",
        "Share a fun fact.",
        "Evening!",
        "Any book recommendations?",
        "Great, thanks.",
    ],
}
# A fourth pool, written on 6 December after the third had been partly read (its misses were
# printed by mistake): not to be read by the session that works on the first three's wordings,
# so that the next judgement is made on words nobody tuned on.
UNSEEN_PHRASINGS: dict[str, list[str]] = {
    "home": [
        "Still getting used to the hills in {town}, which is where I'm living.",
        "{town} has been my home base for a while.",
        "My neighbours here in {town} are lovely; I'm so glad I live here.",
        "Our street in {town} is really quiet at night.",
    ],
    "moved": [
        "Update: the move happened, I'm in {town} for good now.",
        "We changed cities, {town} is where we live now.",
        "Signed the lease and moved into a flat in {town}.",
    ],
    "job": [
        "My days at {employer} are long; that's {article} {job}'s life.",
        "I do {job} work for {employer}.",
        "At work ({employer}) I'm the {job} on the team.",
        "Being {employer}'s {job} keeps me busy.",
    ],
    "new_job": [
        "I accepted an offer from {employer}, starting today as their {job}.",
        "New employer: {employer}. Today was day one.",
        "Changed jobs, I'm working at {employer} now.",
    ],
    "pet": [
        "{pet} the {species} is sleeping in the sun.",
        "I bought a new bed for my {species}, {pet}.",
        "Our {species} {pet} hates the rain.",
        "{pet} (my {species}) learned a new trick.",
    ],
    "pet_died": [
        "Heartbroken: {pet}, our {species}, died today.",
        "We buried {pet} in the garden today; goodbye, sweet {species}.",
    ],
    "new_pet": [
        "A {species} joined the family today, we named her {pet}.",
        "Picked up a {species} from the breeder, {pet} is her name.",
        "We have a new {species} now, {pet}.",
    ],
    "taste": [
        "Between {liked} and {other}, {liked} wins every time.",
        "Not really into {other}; {liked} is more my style.",
        "{liked_cap}, always {liked}, never {other}.",
    ],
    "taste_flip": [
        "Strange but true: I've come round to {liked} and prefer it to {other} now.",
        "These days it's {liked} for me rather than {other}.",
    ],
    "sister": [
        "My older sister {sister} has lived in {town} for years.",
        "My sister {sister} bought a house in {town}.",
        "{sister} (my sister) is based in {town}.",
    ],
    "partner_new": [
        "{partner} is officially my partner now!",
        "Officially in a relationship with {partner}.",
    ],
    "partner": [
        "{partner} and I are cooking together tonight.",
        "My partner, {partner}, is the funniest person I know.",
        "{partner} surprised me with concert tickets; best partner ever.",
    ],
    "colleague": [
        "{colleague} at my office is moving to {town}.",
        "My workmate {colleague} is based in {town}.",
    ],
    "muse": [
        "In another life I'd live in {dream}.",
        "It would be a dream to work in {dream} one day.",
        "Part of me wants to pack up and go to {dream}.",
    ],
    "correction": [
        "Dentist appointment: {wrong}.",
        "Oops, dentist is on {right}, not {wrong}.",
    ],
    "small_talk": [
        "Hey!",
        "What's a good stretch after sitting all day?",
        "Got a fun fact for me?",
        "Thank you!",
        "What's an easy lunch to take to work?",
        "Evening!",
        "How can I be less distracted by my phone?",
        "Okay, good to know.",
    ],
}
# A fifth pool, written on 7 December before any code of the understanding issue (73) changed,
# by a session that had read none of the earlier pools' misses in detail: the wordings nobody
# tuned on, run only to report. Its failures are read at the end of the issue.
UNTOLD_PHRASINGS: dict[str, list[str]] = {
    "home": [
        "The tram from my place in {town} to the centre takes ten minutes.",
        "I've got a little flat in {town}, third floor, no lift.",
        "Living in {town} means I never need a car.",
        "Back home in {town} after a long day.",
    ],
    "moved": [
        "Keys handed over, I'm a {town} resident as of today.",
        "Moving day is over: new address in {town}.",
        "We relocated to {town} this weekend.",
    ],
    "job": [
        "I'm the {job} at {employer}, have been for a while.",
        "Work at {employer} was hectic; {job}s never get a quiet week.",
        "{employer} keeps me busy as their {job}.",
        "Lunch break at {employer}, the canteen is terrible.",
    ],
    "new_job": [
        "Said yes to {employer}: I'm their {job} from today.",
        "Handed in my badge at the old place; {employer} is my employer now.",
        "Day one at {employer}, still learning everyone's names.",
    ],
    "pet": [
        "My {species} {pet} chewed through a charger cable.",
        "{pet} is curled up on my lap, best {species} ever.",
        "Took {pet} to the groomer; a {species} with a haircut looks silly.",
        "Every morning {pet}, my {species}, waits by the door.",
    ],
    "pet_died": [
        "{pet} passed away last night; I still can't believe my {species} is gone.",
        "Had to say goodbye to {pet} today. Rest well, old {species}.",
    ],
    "new_pet": [
        "There's a new {species} in the house: {pet}!",
        "Brought home a rescue {species} and called her {pet}.",
        "Say hello to {pet}, the {species} we just adopted.",
    ],
    "taste": [
        "Give me {liked} any day; {other} does nothing for me.",
        "I'm a {liked} person through and through, {other} not so much.",
        "Whenever there's a choice I go for {liked} and skip {other}.",
    ],
    "taste_flip": [
        "I never thought I'd say it, but I'm done with {other}: it's {liked} now.",
        "Turns out I like {liked} better than {other} these days.",
    ],
    "sister": [
        "Called my sister {sister}; she's settled in {town} for good.",
        "{sister}, my little sister, has a flat in {town}.",
        "My sister {sister} makes the best coffee in all of {town}.",
    ],
    "partner_new": [
        "{partner} asked me out and we're a couple now.",
        "Met someone special: {partner}. We're together!",
    ],
    "partner": [
        "{partner}, my partner, fixed the leaking tap.",
        "Dinner at {partner}'s parents tonight, my partner is nervous.",
        "My significant other {partner} is away on a work trip.",
    ],
    "colleague": [
        "{colleague} from my team lives out in {town}.",
        "My co-worker {colleague} commutes from {town} every day.",
    ],
    "muse": [
        "Wouldn't it be amazing to live in {dream}?",
        "I keep daydreaming about a job in {dream}.",
        "If money were no object I'd move to {dream} tomorrow.",
    ],
    "correction": [
        "I've got the dentist on {wrong}.",
        "Wait, I checked the card: the dentist is {right}, not {wrong}.",
    ],
    "small_talk": [
        "Hello again.",
        "How do I stop my glasses fogging up?",
        "Tell me something interesting about octopuses.",
        "Thanks a lot.",
        "What's a quick vegetarian dinner?",
        "Good afternoon.",
        "Any tips for falling asleep faster?",
        "Cool, thanks.",
    ],
}
POOLS = {
    "tuned": PHRASINGS,
    "held_out": HELD_OUT_PHRASINGS,
    "sealed": SEALED_PHRASINGS,
    "unseen": UNSEEN_PHRASINGS,
    "untold": UNTOLD_PHRASINGS,
}
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]


@dataclass(frozen=True)
class Line:
    """Something the person says on a day, and what it states (for the checks)."""

    day: date
    text: str
    kind: str  # a key of PHRASINGS
    facts: tuple[tuple[str, str], ...] = ()  # (topic, value) it states as lasting


@dataclass(frozen=True)
class Dropped:
    """A document the person drops in on a day."""

    day: date
    name: str
    text: str


@dataclass(frozen=True)
class Question:
    """A question at the end, and what a strict reply holds and must not hold.

    ``kind``: current, past, when, order, count, never, still, musing (a dream asked as a
    fact), other (someone else's fact). ``answer``: spellings, one of
    which the reply must hold (empty: it must say it does not know). ``wrong``: values that
    must not be given (superseded ones, for a current question). ``on``: for "when", the day
    the reply must name within ``WITHIN_DAYS``."""

    text: str
    kind: str
    answer: tuple[str, ...]
    wrong: tuple[str, ...] = ()
    on: date | None = None


WITHIN_DAYS = 7


@dataclass
class Life:
    seed: int
    pool: str = "tuned"  # the wordings it is said in (a key of ``POOLS``)
    conversations: list[list[Line]] = field(default_factory=list)  # each on one day
    documents: list[Dropped] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)
    truths: dict[str, str] = field(default_factory=dict)  # topic -> the value at the end
    timeline: dict[str, list[tuple[date, str]]] = field(default_factory=dict)

    @property
    def messages(self) -> int:
        return sum(len(lines) for lines in self.conversations)


def article(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"


@dataclass(frozen=True)
class Person:
    """What the seed chose: who and where, and the days things change."""

    homes: tuple[str, str, str]  # first, after the first move, after the second
    moves: tuple[date, date]
    employers: tuple[str, str]  # before and after the job change
    jobs: tuple[str, str]
    job_change: date
    pets: tuple[tuple[str, str], tuple[str, str]]  # (species, name): the one lost, the new one
    pet_dies: date
    new_pet_day: date
    tastes: tuple[str, str]  # liked first, liked after the flip
    taste_flip: date
    partner: str
    together: date
    sister: str
    sister_town: str
    colleague: str
    colleague_town: str
    dream: str
    dentist: tuple[str, str]  # the day first said, the day it is


def choose(rng: random.Random, days: list[date]) -> Person:
    towns = rng.sample(TOWNS, 5)
    pets = rng.sample(PETS, 2)
    first, then = rng.choice(TASTES)
    wrong, right = rng.sample(WEEKDAYS, 2)
    return Person(
        homes=(towns[0], towns[1], towns[2]),
        moves=(days[rng.randint(6, 9)], days[rng.randint(24, 27)]),
        employers=tuple(rng.sample(EMPLOYERS, 2)),  # type: ignore[arg-type]
        jobs=tuple(rng.sample(JOBS, 2)),  # type: ignore[arg-type]
        job_change=days[rng.randint(8, 12)],  # before or after the first move
        pets=(pets[0], pets[1]),
        pet_dies=days[rng.randint(13, 15)],
        new_pet_day=days[rng.randint(17, 19)],
        tastes=(first, then),
        taste_flip=days[rng.randint(16, 20)],
        partner=rng.choice(PARTNERS),
        together=days[rng.randint(20, 23)],
        sister=rng.choice(SISTERS),
        sister_town=towns[3],
        colleague=rng.choice(COLLEAGUES),
        colleague_town=towns[4],
        dream=rng.choice(DREAM_TOWNS),
        dentist=(wrong, right),
    )


def write_life(seed: int, pool: str = "tuned") -> Life:
    """The person of ``seed``: their six months, said in the wordings of ``pool`` (a key of
    ``POOLS``), and the questions about them."""
    rng = random.Random(seed)
    offsets = sorted(rng.sample(range(1, DAYS), CONVERSATIONS - 1))
    days = [START, *(START + timedelta(days=offset) for offset in offsets)]
    person = choose(rng, days)
    life = Life(seed, pool)
    life.timeline = {
        "home": [(START, person.homes[0]), (person.moves[0], person.homes[1]),
                 (person.moves[1], person.homes[2])],
        "employer": [(START, person.employers[0]), (person.job_change, person.employers[1])],
        "job": [(START, person.jobs[0]), (person.job_change, person.jobs[1])],
        "pet": [(START, person.pets[0][1]), (person.pet_dies, ""),
                (person.new_pet_day, person.pets[1][1])],
        "taste": [(START, person.tastes[0]), (person.taste_flip, person.tastes[1])],
        "partner": [(person.together, person.partner)],
    }  # fmt: skip
    phrases = Phrases(rng, POOLS[pool])
    again = restatements(life, person, days, rng)
    for number, day in enumerate(days):
        life.conversations.append(
            _conversation(life, person, phrases, rng, number, day, again.get(day, set()))
        )
    life.documents = [
        Dropped(person.job_change, "contract.md",
                f"# Employment contract\n\n{person.employers[1]} employs the undersigned as "
                f"{person.jobs[1]} from {person.job_change:%-d %B %Y}. The monthly salary is "
                "3,400 euros.\n"),
        Dropped(person.moves[1], "lease.md",
                f"# Lease\n\nThe flat in {person.homes[2]} is let from "
                f"{person.moves[1]:%-d %B %Y} for 12 months. The monthly rent is 1,150 euros.\n"),
    ]  # fmt: skip
    life.truths = {topic: history[-1][1] for topic, history in life.timeline.items()}
    life.questions = questions_about(person, rng)
    return life


# The lasting facts said again, in other words: each value of each, 2-5 times in all.
RESTATED = ("home", "employer", "pet", "taste", "partner", "sister")
SAID_TIMES = (2, 5)


def restatements(
    life: Life, person: Person, days: list[date], rng: random.Random
) -> dict[date, set[str]]:
    """The days each lasting fact is said again while it holds: as many times in all as the
    seed draws from ``SAID_TIMES`` (its announcement, a move or a new job, counts as one)."""
    plan: dict[date, set[str]] = {}
    spans = {topic: life.timeline[topic] for topic in RESTATED if topic in life.timeline}
    spans["sister"] = [(START, person.sister)]
    for topic, history in spans.items():
        for index, (since, held) in enumerate(history):
            if not held:
                continue  # the days without a pet
            until = history[index + 1][0] if index + 1 < len(history) else days[-1] + timedelta(1)
            inside = [day for day in days if since < day < until]
            times = rng.randint(*SAID_TIMES) - (0 if since == START else 1)
            for day in rng.sample(inside, min(times, len(inside))):
                plan.setdefault(day, set()).add(topic)
    return plan


class Phrases:
    """The seed's choice among a kind's phrasings, each used once for a fact before any
    repeats: a fact said again is said in other words."""

    def __init__(self, rng: random.Random, wordings: dict[str, list[str]]) -> None:
        self._rng = rng
        self.wordings = wordings
        self._used: dict[str, set[int]] = {}

    def __call__(self, kind: str, **values: str) -> str:
        options = self.wordings[kind]
        used = self._used.setdefault(f"{kind}:{sorted(values.items())}", set())
        free = [i for i in range(len(options)) if i not in used] or list(range(len(options)))
        index = self._rng.choice(free)
        used.add(index)
        return options[index].format(**values)


def _conversation(
    life: Life,
    person: Person,
    phrase: Phrases,
    rng: random.Random,
    number: int,
    day: date,
    again: set[str],
) -> list[Line]:
    """One day's conversation: small talk, what happened, and facts said again."""

    def now(topic: str) -> str:
        current = ""
        for since, held in life.timeline.get(topic, []):
            if since <= day:
                current = held
        return current

    lines = [Line(day, rng.choice(phrase.wordings["small_talk"]), "small_talk")]

    def say(kind: str, facts: tuple[tuple[str, str], ...] = (), **values: str) -> None:
        lines.append(Line(day, phrase(kind, **values), kind, facts))

    home, employer, job, pet = now("home"), now("employer"), now("job"), now("pet")
    if day in person.moves:
        say("moved", (("home", home),), town=home)
    if day == person.job_change:
        say("new_job", (("employer", employer), ("job", job)), employer=employer, job=job,
            article=article(job))  # fmt: skip
    if day == person.pet_dies:
        species, lost = person.pets[0]
        say("pet_died", species=species, pet=lost)
    if day == person.new_pet_day:
        species, new = person.pets[1]
        say("new_pet", (("pet", new),), species=species, pet=new)
    if day == person.taste_flip:
        say("taste_flip", (("taste", person.tastes[1]),), liked=person.tastes[1],
            other=person.tastes[0])  # fmt: skip
    if day == person.together:
        say("partner_new", (("partner", person.partner),), partner=person.partner)
    # Lasting facts said again, in other words, on the days ``restatements`` chose.
    if "home" in again:
        say("home", (("home", home),), town=home)
    if "employer" in again:
        say("job", (("employer", employer), ("job", job)), employer=employer, job=job,
            article=article(job))  # fmt: skip
    if "pet" in again and pet:
        species = person.pets[0][0] if pet == person.pets[0][1] else person.pets[1][0]
        say("pet", (("pet", pet),), species=species, pet=pet)
    if "sister" in again:
        say("sister", (("sister", person.sister), ("sister_home", person.sister_town)),
            sister=person.sister, town=person.sister_town)  # fmt: skip
    if "partner" in again:
        say("partner", (("partner", person.partner),), partner=person.partner)
    if "taste" in again:
        liked = now("taste")
        other = person.tastes[0] if liked == person.tastes[1] else person.tastes[1]
        say("taste", (("taste", liked),), liked=liked, other=other, liked_cap=liked.capitalize())
    if number in (5, 19):
        say("colleague", colleague=person.colleague, town=person.colleague_town)
    if number in (4, 14, 25):
        say("muse", dream=person.dream)
    if number == 9:
        wrong, right = person.dentist
        lines.append(Line(day, phrase.wordings["correction"][0].format(wrong=wrong), "correction"))
        lines.append(
            Line(
                day,
                phrase.wordings["correction"][1].format(wrong=wrong, right=right),
                "correction",
                (("dentist", right),),
            )  # fmt: skip
        )
    while len(lines) < 5:  # a conversation is a few turns, not one line
        lines.append(Line(day, rng.choice(phrase.wordings["small_talk"]), "small_talk"))
    return lines


def questions_about(p: Person, rng: random.Random) -> list[Question]:
    """Sixty or more, of every kind; the order is the seed's."""
    questions: list[Question] = []

    def ask(kind: str, texts: list[str], answer: tuple[str, ...], wrong: tuple[str, ...] = (),
            on: date | None = None) -> None:  # fmt: skip
        questions.extend(Question(text, kind, answer, wrong, on) for text in texts)

    first_home, second_home, third_home = p.homes
    old_employer, new_employer = p.employers
    (_, old_pet), (_, new_pet) = p.pets
    before, after = p.tastes
    wrong_day, right_day = p.dentist
    no, yes = ("no", "not", "n't"), ("yes",)
    ask("current", ["Where do I live now?", "Which town is my home these days?",
                    "Where is my flat?", "What city am I based in?"],
        (third_home,), (first_home, second_home))  # fmt: skip
    ask("current", ["Where do I work?", "Who is my employer now?", "What company am I at?"],
        (new_employer,), (old_employer,))  # fmt: skip
    ask("current", ["What is my job?", "What do I do for a living now?"], (p.jobs[1],),
        (p.jobs[0],))  # fmt: skip
    ask("current", ["What is my pet's name?", "What's my pet called now?",
                    "Which pet do I have at the moment?"], (new_pet,), (old_pet,))  # fmt: skip
    ask("current", [f"Do I prefer {after} or {before}?",
                    f"Which do I like more now, {before} or {after}?"], (after,))  # fmt: skip
    ask("current", ["Who is my partner?", "Who am I seeing?"], (p.partner,))
    ask("current", [f"Where does my sister {p.sister} live?", "Where does my sister live?"],
        (p.sister_town,))  # fmt: skip
    ask("current", ["When is my dentist appointment?", "What day is the dentist?"],
        (right_day,), (wrong_day,))  # fmt: skip
    ask("current", ["How much is my rent?"], ("1,150", "1150"))
    ask("current", ["What's my monthly salary?"], ("3,400", "3400"))
    ask("past", [f"Where did I live before {third_home}?",
                 f"Which town did I move to {third_home} from?"], (second_home,))  # fmt: skip
    ask("past", [f"Where did I live before {second_home}?", "Where did I live in January?",
                 "Where did I live at first?"], (first_home,))  # fmt: skip
    ask("past", [f"Where did I work before {new_employer}?", "What was my old employer?"],
        (old_employer,))  # fmt: skip
    ask("past", ["What was my first pet called?", "What was the name of the pet I lost?"],
        (old_pet,))  # fmt: skip
    ask("past", [f"What did I prefer before I switched to {after}?"], (before,))
    ask("when", [f"When did I start at {new_employer}?", "When did I change jobs?"], (),
        on=p.job_change)  # fmt: skip
    ask("when", [f"When did I move to {third_home}?", "When was my last move?"], (),
        on=p.moves[1])  # fmt: skip
    ask("when", [f"When did I move to {second_home}?"], (), on=p.moves[0])
    ask("when", [f"When did I get {new_pet}?"], (), on=p.new_pet_day)
    ask("when", [f"When did I start seeing {p.partner}?"], (), on=p.together)
    moved_first = p.moves[0] < p.job_change
    ask("order", [f"Which came first, my move to {second_home} or my job at {new_employer}?"],
        (second_home if moved_first else new_employer,))  # fmt: skip
    ask("order", [f"Did I move to {second_home} before or after I started at {new_employer}?"],
        ("before",) if moved_first else ("after",))  # fmt: skip
    ask("order", [f"Which came first, getting {new_pet} or moving to {third_home}?"],
        (new_pet if p.new_pet_day < p.moves[1] else third_home,))  # fmt: skip
    ask("count", ["How many pets have I had?", "How many pets have I had in total?"],
        ("two", "2"))  # fmt: skip
    ask("count", ["How many times have I moved this year?", "How often did I move?"],
        ("two", "twice", "2"))  # fmt: skip
    ask("count", ["How many jobs have I had this year?"], ("two", "2"))
    ask("never", ["What is my favourite movie?", "What's my blood type?", "What car do I drive?",
                  "When is my birthday?", "What is my brother's name?",
                  "Which school did I go to?"], ())  # fmt: skip
    ask("still", [f"Do I still live in {first_home}?", f"Am I still in {second_home}?",
                  f"Do I still work at {old_employer}?", f"Is {old_pet} still with me?"],
        no, yes)  # fmt: skip
    ask("still", [f"Do I still have {new_pet}?", f"Am I still at {new_employer}?"], yes, no)
    ask("musing", [f"Do I live in {p.dream}?", f"Have I moved to {p.dream}?"], no, yes)
    ask("other", ["Where does my colleague live?"], (p.colleague_town,))
    rng.shuffle(questions)
    return questions
