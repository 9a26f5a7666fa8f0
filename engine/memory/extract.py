"""Facts for knowledge memory, read from one sentence by patterns.

A small local model cannot be trusted to invent structured facts: asked for (subject, relation,
object) triples, the bundled 135M model makes up names and relations. So the candidates come from
patterns that only match the ordinary ways people state the facts knowledge memory keeps (where
they live, where they work, birthdays, names, family), and the model's part is the choice it
already makes in the memory step: whether the sentence states a lasting fact at all. The same
patterns read a document's sentences in the third person ("Ana lives in Porto") when the user asks
for facts from a file.

Objects that are places or organisations must be written as names (capitalised): "I moved to
Lyon" is a fact, "I moved to a bigger flat" is not one this module can keep.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import date, timedelta

import regex

from engine.memory.knowledge import PREFERS, RELATIVES, USER, fact_sentence
from engine.text import CAPITAL, LETTERS

_MONTHS = {name.casefold(): number for number, name in enumerate(calendar.month_name) if name}
_MONTHS.update({name.casefold(): number for number, name in enumerate(calendar.month_abbr) if name})
MONTH = "(?i:" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
# A name keeps every letter in any script (``CAPITAL``): these patterns compile with ``regex``.
_CAPITAL = rf"(?!I\b){CAPITAL}[\w'&.\-]*"  # "I" is never part of a name: "Acme and I"
_JOINER = r"(?:of|de|da|do|du|del|la|le|von|van|and|&|for)"
# A name: capitalised words, possibly joined by "of", "de"... ("Bank of Portugal").
_NAME = rf"(?:[Tt]he\s+)?{_CAPITAL}(?:\s+(?:{_JOINER}\s+)?{_CAPITAL})*"
_PERSON_WORD = (
    rf"{CAPITAL}{LETTERS}*(?:-{LETTERS}+|'(?!s\b){LETTERS}+)*"  # Anne-Marie, O'Neill: not Ana's
)
_PERSON = rf"{_PERSON_WORD}(?:\s+{_PERSON_WORD})?"
_DATE = (
    rf"(?:(?:the\s+)?\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{MONTH}(?:,?\s+\d{{4}})?"
    rf"|{MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?(?:,?\s+\d{{4}})?"
    r"|\d{4}-\d{2}-\d{2})"
)
# A thing named in lower case ("peanuts", "bee stings"), up to three words, before a joiner.
_THING = (
    rf"{LETTERS}[\w-]*(?:\s+(?!(?:and|but|so|or|which|because|since|when)\b)[a-z][\w-]*){{0,2}}"
)
_RELATIVE = "|".join(sorted(RELATIVES, key=len, reverse=True))
# Words that start a sentence in capitals without being anyone's name.
_NOT_NAMES = frozenset(
    """The This That These Those He She They It We You His Her Their Our Its There Here
    When Then After Before Today Yesterday Tomorrow Also But And So If Since Now Last Next
    Every""".split()
)

# An occupation as people name theirs: a word of the shapes jobs have ("radiographer",
# "pharmacist", "designer", "technician", "accountant"), or one of the short everyday names
# those shapes miss, after at most two describing words ("graphic designer", "senior staff
# nurse"). Words of the same shapes that name no job are left out.
_JOB_ENDINGS = r"(?:er|or|ist|ian|ant|ent|eer|ier|man|woman|ographer|ologist|wright|smith)"
_JOB_NAMES = (
    r"vet|nurse|chef|cook|pilot|judge|dentist|surgeon|medic|paramedic|midwife|barista|"
    r"clerk|cleaner|coach|tutor|lawyer|solicitor|architect|analyst|consultant|student|"
    r"firefighter|carpenter|plumber|electrician|mechanic|pharmacist|physio|therapist|"
    r"doctor|teacher|engineer|developer|programmer|scientist|researcher|journalist|editor|"
    r"artist|musician|farmer|baker|butcher|driver|postman|postwoman|guide|priest|vicar|rabbi|imam"
)
_NOT_JOBS = (
    r"(?:fan|member|beginner|lover|user|owner|mother|father|brother|sister|daughter|son|"
    r"partner|number|winner|loser|another|other|bit|lot|mess|person|matter|letter|order|"
    r"favour|favor|customer|neighbour|neighbor|passenger|patient|resident|citizen|foreigner|"
    r"stranger|sucker|worrier|dreamer|talker|thinker|believer|water|center|centre|under|over|"
    r"after|never|ever|rather|together|proper|better|bigger|faster|later|whatever)"
)
_JOB_WORD = rf"(?!{_NOT_JOBS}\b)(?:{_JOB_NAMES}|[a-z]+{_JOB_ENDINGS})"
# It ends the clause or comes before where or since when ("a bit under the weather" is none).
# A judgement is no job title: "I'm a better cook now", "I'm a terrible driver".
_JUDGED = r"(?:better|worse|good|bad|great|terrible|awful|decent|huge|big|keen|total|complete)"
_OCCUPATION = (
    rf"(?!{_JUDGED}\b)(?:[a-z]+\s+){{0,2}}?{_JOB_WORD}"
    r"(?=\s*(?:$|[,.;:!?)]|(?:in|at|for|with|and|but|from|since|on|by|who|so|now|is|was)\b))"
)

# One side of a taste: a thing or two words ("tea", "green tea", "Dogs"), not a clause ("to
# walk", "it", "my own company"); it ends the clause.
_TASTE = (
    r"(?!(?:to|not|it|that|this|them|him|her|the|a|an|my|your|our|being|having|when|if)\b)"
    r"[A-Za-z]+(?:\s+(?!(?:over|to|than|more|better|much|way|far|person|beats|is|are|now|these|any|"
    r"for)\b)[a-z]+)?"
)
_TASTE_END = r"(?=\s*(?:$|[,.;:!?)]|(?:now|these days|any day|anyway|by far)\b))"
_DIETS = r"vegan|vegetarian|pescatarian|pescetarian|flexitarian|keto|paleo|halal|kosher"

# (predicate, pattern): ``subject`` is "I" in the first person, a name in the third; ``object``
# is what the fact says. Patterns are tried on the whole sentence.
# Between a name and its verb: "Tunde actually moved to Bristol".
_ADVERBS = r"(?:(?:now|still|actually|just|recently|finally|also)\s+)*"
_I = r"\b(?P<subject>I)(?:'ve|'m| have| am| had)?"
# Where the person lives, "we" is them too: "We finally made the move to Lyon".
_WE = r"\b(?P<subject>I|[Ww]e)(?:'ve|'m|'re| have| am| are| had)?"
_HOME = r"(?:home|flat|apartment|house|place)"
# Said before a relative's or pet's word: "my little sister", "our new dog".
_KIN_ADJECTIVE = r"(?:(?:new|little|big|older|younger|baby|eldest|youngest)\s+)?"
_THEY = rf"(?P<subject>{_PERSON})"
# Words that open a sentence before "my friend," without being a name ("Thanks, my friend,").
_GREETING = (
    "(?:Thanks|Thank|Hi|Hello|Hey|Sorry|Yes|Yeah|Yep|No|Nope|Oh|Ah|Aw|Aww|Wow|Ugh|Haha|Well|"
    "Okay|Ok|Sure|Right|True|Totally|Exactly|Absolutely|Definitely|Honestly|Anyway|Please|Cheers|"
    "Bye|Goodbye|Meet|Welcome|Introducing)"
)
_PATTERNS: list[tuple[str, str]] = [
    (
        "lives_in",
        rf"{_WE}\s+(?:now\s+|still\s+|also\s+)?(?:just\s+|recently\s+|finally\s+|been\s+)?"
        rf"(?:live|living|lived|moved|relocated|based|settled|reside|residing)\s+(?:back\s+)?"
        rf"(?:in|to)\s+(?P<object>{_NAME})",
    ),
    # "We finally made the move to Lyon", "I call Lyon home", "I have a flat in Lyon".
    (
        "lives_in",
        rf"{_WE}\s+(?:finally\s+|just\s+|recently\s+)?(?:made|did)\s+the\s+(?:big\s+)?move\s+"
        rf"(?:back\s+)?to\s+(?P<object>{_NAME})",
    ),
    ("lives_in", rf"{_WE}\s+(?:now\s+)?call\s+(?P<object>{_NAME})\s+home\b"),
    (
        "lives_in",
        rf"{_WE}\s+(?:now\s+)?(?:have|own|rent|'ve\s+got)\s+an?\s+{_HOME}\s+in\s+(?P<object>{_NAME})",
    ),
    # "My flat is in Lyon", "Our place in Lyon is tiny", "the keys to my new place in Lyon".
    (
        "lives_in",
        rf"\b(?:[Mm]y|[Oo]ur)\s+(?:new\s+)?{_HOME}\s+(?:is\s+)?(?:now\s+)?in\s+(?P<object>{_NAME})",
    ),
    # "The trams in Lyon are always late, where I live."
    (
        "lives_in",
        rf"\bin\s+(?P<object>{_NAME})\b[^.;!?]*?,?\s+where\s+(?P<subject>I|we)\s+live\b",
    ),
    ("lives_in", rf"\b[Hh]ome\s+for\s+(?:me|us)\s+is\s+(?:now\s+)?(?:in\s+)?(?P<object>{_NAME})"),
    (
        "works_at",
        rf"{_I}\s+(?:now\s+|still\s+|also\s+)?(?:just\s+|recently\s+)?"
        rf"(?:work|working|worked)\s+(?:at|for)\s+(?P<object>{_NAME})",
    ),
    (
        "works_at",
        rf"{_I}\s+(?:just\s+|recently\s+)?(?:started|joined|got\s+a\s+(?:new\s+)?job)"
        rf"(?:\s+(?:a\s+)?(?:new\s+)?job)?\s+(?:at|with|for)\s+(?P<object>{_NAME})",
    ),
    ("works_at", rf"{_I}\s+(?:just\s+|recently\s+)?joined\s+(?P<object>{_NAME})"),
    # "I've left my old job; I'm at Adatum now": where they are, said of a change of job.
    (
        "works_at",
        r"\b(?i:left|quit|changed|new)\s+(?:my\s+)?(?:old\s+|previous\s+)?(?:job|employer|company)\b"
        rf"[^.!?]*?\b(?P<subject>I)(?:'m|\s+am)\s+(?:now\s+)?(?:at|with)\s+(?P<object>{_NAME})",
    ),
    # "My employer is Contoso", "Contoso is my new employer".
    (
        "works_at",
        r"\b(?:[Mm]y|[Oo]ur)\s+(?:new\s+|current\s+)?(?:employer|company|workplace|firm)\s+is\s+"
        rf"(?:now\s+)?(?P<object>{_NAME})",
    ),
    (
        "works_at",
        rf"(?:^|(?<=[.!?;:]\s))(?P<object>{_NAME})\s+is\s+(?:now\s+)?my\s+(?:new\s+)?"
        r"(?:employer|company|workplace)\b",
    ),
    # "I'm employed by Contoso", "I was hired by Contoso", "I'm with Contoso from today".
    (
        "works_at",
        rf"{_I}\s+(?:now\s+|still\s+|just\s+|been\s+|was\s+|got\s+)?(?:employed|hired|taken\s+on)\s+"
        r"(?:by|at)\s+"
        rf"(?P<object>{_NAME})",
    ),
    (
        "works_at",
        rf"\b(?P<subject>I)(?:'m|\s+am)\s+with\s+(?P<object>{_NAME})\s+(?:from|as\s+of|starting)\s+"
        r"(?:today|now|this\s+week|monday|[A-Z][a-z]+day)\b",
    ),
    # "My job is at Contoso", "First day at Fabrikam today".
    ("works_at", rf"\b[Mm]y\s+(?:new\s+)?job\s+is\s+(?:now\s+)?(?:at|with)\s+(?P<object>{_NAME})"),
    ("works_at", rf"\b[Ff]irst\s+day\s+(?:at|with)\s+(?P<object>{_NAME})"),
    # "I'm a software engineer at Acme", "I work as an accountant at Deloitte", "I'm a PhD
    # student at the University of Toronto".
    (
        "works_at",
        rf"\b(?P<subject>I)(?:'m|\s+am|'ve\s+been|\s+have\s+been|\s+work\s+as|\s+worked\s+as)\s+"
        rf"(?:now\s+)?an?\s+(?:[a-zA-Z]+\s+){{0,3}}?{_JOB_WORD}\s+(?:at|for|with)\s+"
        rf"(?P<object>{_NAME})",
    ),
    (
        "job_title",
        rf"{_I}\s+(?:now\s+)?work\s+as\s+(?:an?\s+)"
        r"(?P<object>[a-z]+(?:\s+(?!(?:in|at|for|with|and|but|since)\b)[a-z]+)?)",
    ),
    # A title after the work it names: "I joined Contoso as a nurse", "I'm employed by Contoso,
    # working as a nurse", "such is life as a nurse".
    (
        "job_title",
        rf"(?:{_I}\s+{_ADVERBS}(?:working|joined\s+{_NAME}|started(?:\s+(?:at|with)\s+{_NAME})?|"
        rf"(?:been\s+|was\s+|got\s+)?(?:hired|employed)\s+(?:by|at)\s+{_NAME},?(?:\s+working)?)"
        rf"|\b(?:[Ss]uch\s+is|[Mm]y)\s+life)\s+as\s+an?\s+(?P<object>{_OCCUPATION})",
    ),
    # "I'm a radiographer", "being a vet in Galway is never boring", "I'm their new nurse":
    # a word shaped like an occupation (``_OCCUPATION``), not "I'm a big fan" or "a bit tired".
    (
        "job_title",
        rf"(?:\b(?P<subject>I)(?:'m|\s+am|'ve\s+been|\s+have\s+been)|\b[Bb]eing)\s+"
        rf"(?:now\s+|still\s+|also\s+)?(?:an?|(?:the|their)(?:\s+new)?)\s+(?P<object>{_OCCUPATION})",
    ),
    (
        "job_title",
        rf"\b{_THEY}\s+{_ADVERBS}(?:is|works\s+as)\s+an?\s+(?P<object>{_OCCUPATION})",
    ),
    # "I'm vegan", "Been a vegetarian since 2015", "I've been pescatarian for years".
    (
        "diet",
        r"(?:\b(?P<subject>I)(?:'m|\s+am|'ve\s+been|\s+have\s+been)|^(?:[Bb]een|[Gg]one))\s+"
        rf"(?:(?:now|still|also|strictly|fully|mostly)\s+)?(?:an?\s+)?(?P<object>{_DIETS})\b",
    ),
    # Tastes: "I prefer tea over coffee", "I'll always pick dogs over cats", "Jazz is my thing,
    # not techno", "I've switched: techno over jazz now", "these days I prefer dogs".
    (
        "prefers",
        rf"{_I}\s+(?:still\s+|now\s+|really\s+|much\s+)?prefer\s+(?P<object>{_TASTE})"
        rf"(?:\s+(?:over|to)\s+(?P<other>{_TASTE}))?{_TASTE_END}",
    ),
    (
        "prefers",
        rf"(?:{_I}(?:'ll|\s+will|'d|\s+would)?\s+(?:always\s+)?(?:pick|choose|take)|\b[Gg]ive\s+me)\s+"
        rf"(?P<object>{_TASTE})\s+over\s+(?P<other>{_TASTE}){_TASTE_END}",
    ),
    # "I'm more into tea than coffee", "I like tea more than coffee now", "Tea beats coffee",
    # "I'm a tea person now, not coffee".
    (
        "prefers",
        rf"{_I}\s+(?:now\s+|really\s+|much\s+|way\s+|far\s+|a\s+lot\s+)*more\s+into\s+"
        rf"(?P<object>{_TASTE})\s+than\s+(?P<other>{_TASTE}){_TASTE_END}",
    ),
    (
        "prefers",
        rf"{_I}\s+(?:now\s+|really\s+)?(?:like|love|enjoy)\s+(?P<object>{_TASTE})\s+"
        rf"(?:much\s+|way\s+|far\s+|a\s+lot\s+)?(?:more|better)\s+than\s+(?P<other>{_TASTE})"
        rf"{_TASTE_END}",
    ),
    (
        "prefers",
        rf"(?:^|(?<=[.!?;:]\s))(?P<object>{_TASTE})\s+(?:beats|trumps)\s+(?P<other>{_TASTE})"
        rf"{_TASTE_END}",
    ),
    (
        "prefers",
        rf"{_I}\s+(?:now\s+)?an?\s+(?P<object>{_TASTE})\s+person(?:\s+now)?"
        rf"(?:,?\s+not\s+(?:an?\s+)?(?P<other>{_TASTE})(?:\s+person)?)?{_TASTE_END}",
    ),
    (
        "prefers",
        rf"(?:^|(?<=[.!?;:]\s))(?P<object>{_TASTE})\s+(?:is|are)\s+my\s+thing,?\s+not\s+"
        rf"(?P<other>{_TASTE}){_TASTE_END}",
    ),
    (
        "prefers",
        rf"{_I}\s+switched:?\s+(?:to\s+)?(?P<object>{_TASTE})\s+over\s+(?P<other>{_TASTE})"
        rf"{_TASTE_END}",
    ),
    # "I'm allergic to peanuts", "I am also allergic to bee stings": one fact per allergy.
    (
        "allergic_to",
        rf"{_I}\s+(?:also\s+|severely\s+|very\s+|really\s+)*allergic\s+to\s+"
        rf"(?P<object>{_THING})",
    ),
    ("birthday", rf"\b[Mm]y\s+birthday\s+is\s+(?:on\s+)?(?P<object>{_DATE})"),
    ("born_on", rf"{_I}\s+was\s+born\s+on\s+(?P<object>{_DATE})"),
    ("born_in", rf"{_I}\s+was\s+born\s+in\s+(?P<object>{_NAME})"),
    ("name", rf"\b[Mm]y\s+name\s+is\s+(?P<object>{_PERSON})"),
    ("name", rf"\b[Cc]all\s+me\s+(?P<object>{_PERSON})"),
    # Family and friends: "my sister Ana", "my sister's name is Ana", "my dog is called Rex".
    (
        "relative",
        rf"\b(?:[Mm]y|[Oo]ur)\s+{_KIN_ADJECTIVE}(?P<relation>{_RELATIVE})(?:'s\s+name\s+is|"
        rf"\s+is\s+called|\s+is\s+named"
        rf"|,)?\s+(?P<object>{_PERSON})",
    ),
    # "Sam and I are together now", "I've started seeing someone, Alex".
    (
        "partner",
        rf"\b(?P<object>{_PERSON})\s+and\s+I\s+are\s+(?:now\s+)?(?:together|dating|a\s+couple)",
    ),
    (
        "partner",
        rf"{_I}\s+(?:now\s+|officially\s+)?(?:(?:been\s+)?dating|been\s+seeing|"
        rf"(?:just\s+)?(?:started|began)\s+(?:seeing|dating)(?:\s+someone,?)?)\s+(?P<object>{_PERSON})",
    ),
    # "Sam asked me out and we're a couple now".
    (
        "partner",
        rf"(?:^|(?<=[.!?]\s))(?!{_GREETING}\b)(?P<object>{_PERSON})\b[^.!?]*?\b[Ww]e(?:'re|\s+are)\s+"
        r"(?:now\s+|officially\s+)?(?:together|a\s+couple|dating|an\s+item)\b",
    ),
    # "I have a cat called Miso", "we adopted a dog named Rex", "Miso, my cat, is…".
    # "We brought home a rabbit named Clover", "I got a cat from the shelter, called Miso".
    (
        "relative",
        rf"{_WE}\s+(?:just\s+)?(?:have|'ve\s+got|have\s+got|got|adopted|rescued|brought\s+home|"
        rf"took\s+in)\s+an?\s+{_KIN_ADJECTIVE}(?P<relation>{_RELATIVE})(?:\s+[a-z]+){{0,3}}?,?\s+"
        rf"(?:called|named)\s+(?P<object>{_PERSON})",
    ),
    # "Miso, my cat, …", "Meet Miso, my new cat", "I'm taking Miso, my cat, to the vet".
    (
        "relative",
        rf"(?:^|(?<=\s))(?!{_GREETING}\b)(?P<object>{_PERSON}),\s+(?:my|our)\s+{_KIN_ADJECTIVE}"
        rf"(?P<relation>{_RELATIVE})\b(?!')",
    ),
    # "Say hello to Clover, the rabbit I just adopted", "a new rabbit in the house: Clover".
    (
        "relative",
        rf"\b(?P<object>{_PERSON}),\s+the\s+(?P<relation>{_RELATIVE})\s+(?:I|we)\s+(?:just\s+)?"
        r"(?:adopted|got|rescued|brought\s+home|took\s+in)\b",
    ),
    (
        "relative",
        rf"\bnew\s+(?P<relation>{_RELATIVE})\b[^.!?:]{{0,30}}:\s+(?P<object>{_PERSON})\b",
    ),
    # The third person, as documents say it.
    (
        "lives_in",
        rf"\b{_THEY}\s+{_ADVERBS}(?:lives|moved|relocated|is\s+based|is\s+settled|has\s+settled|"
        rf"settled)\s+(?:back\s+)?(?:in|to)\s+(?P<object>{_NAME})",
    ),
    (
        "lives_in",
        rf"\b{_THEY}\s+{_ADVERBS}(?:has|owns|rents)\s+an?\s+{_HOME}\s+in\s+(?P<object>{_NAME})",
    ),
    ("works_at", rf"\b{_THEY}\s+{_ADVERBS}works\s+(?:at|for)\s+(?P<object>{_NAME})"),
    ("birthday", rf"(?<!my\s)(?<!My\s)\b{_THEY}'s\s+birthday\s+is\s+(?:on\s+)?(?P<object>{_DATE})"),
    ("born_on", rf"\b{_THEY}\s+was\s+born\s+on\s+(?P<object>{_DATE})"),
    ("born_in", rf"\b{_THEY}\s+was\s+born\s+in\s+(?P<object>{_NAME})"),
]
_COMPILED = [(predicate, regex.compile(pattern)) for predicate, pattern in _PATTERNS]
# "my sister Ana's birthday is 12 May": the birthday of the person just named.
_RELATIVE_BIRTHDAY = regex.compile(
    rf"\b[Mm]y\s+(?:{_RELATIVE})\s+(?P<subject>{_PERSON})'s\s+birthday\s+is\s+(?:on\s+)?"
    rf"(?P<object>{_DATE})"
)
# A description set off by commas after a name: ", my little sister,", ", a colleague of mine,".
_APPOSITIVE = re.compile(rf"(?<={LETTERS}),\s+(?:my|our|a|an|the)\s+[\w' -]{{1,40}}?,")
_TRAILING = re.compile(rf"\s+(?:{_JOINER}|[Tt]he)$")


@dataclass(frozen=True)
class Candidate:
    """One fact a sentence states."""

    subject: str
    predicate: str
    object: str
    valid_from: str | None = None  # YYYY-MM-DD, when the sentence says when it began

    @property
    def triple(self) -> tuple[str, str, str]:
        return self.subject, self.predicate, self.object

    def sentence(self) -> str:
        since = f" (since {self.valid_from})" if self.valid_from else ""
        return fact_sentence(self.subject, self.predicate, self.object) + since


def facts_in(sentence: str, today: date, speaker: str | None = USER) -> list[Candidate]:
    """The facts ``sentence`` states; "I" and "my" are ``speaker`` (the user, by default; None
    for a document, whose "I" is its author: only what it says of others is read)."""
    found: list[Candidate] = []
    since = change_date(sentence, today)
    for match in _RELATIVE_BIRTHDAY.finditer(sentence):
        found.append(Candidate(match["subject"], "birthday", _clean_date(match["object"])))
    # "Ines, my little sister, has a flat in Lyon" says what "Ines has a flat in Lyon" does.
    plain = _APPOSITIVE.sub("", sentence)
    matches = [
        (predicate, pattern, match)
        for predicate, pattern in _COMPILED
        for text in dict.fromkeys([sentence, plain])
        for match in pattern.finditer(text)
    ]
    for predicate, pattern, match in matches:
        subject = (match["subject"] if "subject" in pattern.groupindex else None) or "I"
        if subject.casefold() == "we":  # "we moved to Lyon": the person did
            subject = "I"
        if subject in _NOT_NAMES:
            continue
        obj = _TRAILING.sub("", match["object"].strip(" .,;"))
        obj = regex.sub(rf"^[Tt]he\s+(?={CAPITAL})", "", obj)  # "the Bank of Portugal"
        if predicate == PREFERS:
            other = match["other"]
            obj = f"{obj} over {other}".casefold() if other else obj.casefold()
        elif obj.split()[0] in _NOT_NAMES and predicate != "job_title":
            continue
        if predicate == "relative":
            predicate_name = match["relation"]
            subject = "I"
        else:
            predicate_name = predicate
        if predicate_name in ("birthday", "born_on"):
            obj = _clean_date(obj)
        if subject == "I" and speaker is None:
            continue
        who = speaker if subject == "I" and speaker is not None else subject
        valid_from = since if predicate_name in ("lives_in", "works_at", "job_title") else None
        candidate = Candidate(who, predicate_name, obj, valid_from)
        if candidate not in found:
            found.append(candidate)
    return found


def _clean_date(text: str) -> str:
    """ "12th of May" -> "12 May", and "3 May." at a sentence's end -> "3 May"."""
    text = re.sub(r"(\d)(?:st|nd|rd|th)\b", r"\1", re.sub(r"^the\s+", "", text))
    return " ".join(re.sub(r"\bof\s+", "", text).replace(",", "").split()).rstrip(".")


_AGO = re.compile(
    r"\b(?P<count>\d+|a|an|one|two|three|four|five|six)\s+(?P<unit>day|week|month|year)s?\s+ago\b",
    re.I,
)
_FOR = re.compile(
    r"\bfor\s+(?:the\s+(?:last|past)\s+)?(?P<count>\d+|a|an|one|two|three|four|five|six)\s+"
    r"(?P<unit>day|week|month|year)s?\b",
    re.I,
)
_COUNTS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
_IN_MONTH = re.compile(
    rf"\b(?:in|since|this|last)\s+(?P<month>{MONTH})(?:\s+(?P<year>\d{{4}}))?\b", re.I
)
_IN_YEAR = re.compile(r"\b(?:in|since)\s+(?P<year>(?:19|20)\d{2})\b")


EARLIEST_YEAR = 1900  # a change said to be before this is none anyone lived ("5000 years ago")


def change_date(sentence: str, today: date) -> str | None:
    """When a change a sentence tells of happened, as YYYY-MM-DD, from the common ways of saying
    it ("last month", "two weeks ago", "in March", "since 2019"); None when it does not say, or
    says a time no one lived ("99999999 days ago", "5000 years ago")."""
    try:
        found = _change_date(sentence, today)
    except (OverflowError, ValueError):  # before the year 1 of the calendar
        return None
    if found is None or date.fromisoformat(found).year < EARLIEST_YEAR:
        return None
    return found


def _change_date(sentence: str, today: date) -> str | None:
    text = sentence.casefold()
    if re.search(r"\b(?:yesterday|last night)\b", text):
        return (today - timedelta(days=1)).isoformat()
    if re.search(r"\b(?:today|this morning|tonight)\b", text):
        return today.isoformat()
    if "last weekend" in text:  # its Saturday; said at a weekend, the one before
        back = (today.weekday() - 5) % 7 + (7 if today.weekday() >= 5 else 0)
        return (today - timedelta(days=back)).isoformat()
    if re.search(r"\blast week\b", text):
        return (today - timedelta(days=7)).isoformat()
    if "last month" in text:
        return _months_before(today, 1).isoformat()
    if "this month" in text:
        return today.replace(day=1).isoformat()
    if "last year" in text:
        return date(today.year - 1, 1, 1).isoformat()
    if "this year" in text:
        return date(today.year, 1, 1).isoformat()
    if match := _AGO.search(sentence) or _FOR.search(sentence):
        count = _COUNTS.get(match["count"].casefold()) or int(match["count"])
        unit = match["unit"].casefold()
        if unit in ("day", "week"):
            return (today - timedelta(days=count * (7 if unit == "week" else 1))).isoformat()
        months = count * (12 if unit == "year" else 1)
        return _months_before(today, months).isoformat()
    if match := _IN_MONTH.search(sentence):
        month = _MONTHS[match["month"].casefold().rstrip(".")]
        year = int(match["year"]) if match["year"] else today.year
        if not match["year"] and month > today.month:
            year -= 1  # "in November", said in March, is last November
        return date(year, month, 1).isoformat()
    if match := _IN_YEAR.search(sentence):
        return date(int(match["year"]), 1, 1).isoformat()
    return None


def _months_before(today: date, months: int) -> date:
    """The first day of the month ``months`` before this one."""
    index = today.year * 12 + today.month - 1 - months
    return date(index // 12, index % 12 + 1, 1)
