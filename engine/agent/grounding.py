"""Replies a person can trust (the assisted mode's checks on a small model's reply).

- **The person is "you".** What memory holds is shown to the model, and said to the person, in
  the second person ("Your sister Ines lives in Antwerp"): a small model copies what it is shown,
  and a copy is then right (``to_second_person``).
- **No frame.** Headings, bracketed labels, "the user said", file paths, chunk numbers and dates
  in brackets are scaffolding of the prompt; ``strip_frame`` takes out what a reply copies anyway.
- **Every reply ends.** ``LoopWatch`` finds where a reply starts saying a sentence, or a long run
  of words, again; the turn stops generating there. Replies are also capped in tokens.
- **Grounded.** ``Grounds.problem`` checks a draft that speaks about the person: a name, number
  or date in neither memory nor the message is invented; a reply without the value memory holds
  for the question leaves it out; a superseded value may be history, never the answer. A draft
  that fails twice is replaced by the record itself (``Grounds.record_reply``).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from functools import cached_property

from engine.memory.knowledge import RELATIVES
from engine.memory.search import query_terms, same_word

# A title's full stop ends no sentence ("St. Mary's", "Dr. Okafor").
ABBREVIATION = re.compile(
    r"(?:^|\s)(?:st|dr|mr|mrs|ms|prof|jr|sr|mt|no|vs|etc|e\.g|i\.e|approx|dept|ave|rd)\.$",
    re.IGNORECASE,
)
_YOU_WORDS = frozenset({"you", "you're", "your", "yours"})
# The people of the person's life, named by their tie; groups too ("Your family is allergic…").
_TIES = frozenset([*RELATIVES, "family", "parents", "children", "kids", "colleague"])

# -- the person is "you" ------------------------------------------------------------------------

_TO_YOU = {
    "i": "you",
    "me": "you",
    "my": "your",
    "mine": "yours",
    "myself": "yourself",
    "i'm": "you're",
    "i've": "you've",
    "i'd": "you'd",
    "i'll": "you'll",
    "we": "you",
    "us": "you",
    "our": "your",
    "ours": "yours",
    "we're": "you're",
    "we've": "you've",
    "ourselves": "yourselves",
}
_BE_AFTER_I = {"am": "are", "was": "were", "'m": "'re"}
_PRONOUN = re.compile(
    r"\b(?:i'm|i've|i'd|i'll|we're|we've|i|me|my|mine|myself|we|us|our|ours|"
    r"ourselves)\b(?:\s+(?:am|was)\b)?",
    re.IGNORECASE,
)


def to_second_person(text: str) -> str:
    """The person's own words as said back to them: "My sister lives in Ghent, I am sure" ->
    "Your sister lives in Ghent, you are sure"."""

    def swap(match: re.Match[str]) -> str:
        words = match[0].split()
        said = _TO_YOU[words[0].casefold()]
        if not text[: match.start()].strip() or text[: match.start()].rstrip()[-1] in ".!?":
            said = said[0].upper() + said[1:]
        if len(words) > 1:
            said += " " + _BE_AFTER_I.get(words[1].casefold(), words[1])
        return said

    return _PRONOUN.sub(swap, text)


# -- no frame -----------------------------------------------------------------------------------

_MONTHS = "January|February|March|April|May|June|July|August|September|October|November|December"
_MONTH_DATE = rf"\d{{1,2}} (?:{_MONTHS})(?: \d{{4}})?"
_FRAME_PARTS = [
    # The note's labels, old and new, and core memory's, as lines or inline.
    r"^\s*#+\s*(?:core memory|recalled from memory|memory|persona|human|summary)\b[^\n]*$",
    r"\[(?:recalled from memory|system note|result of|status)[^\]\n]*\]?",
    r"</?(?:human|persona|memory|\w+ chars=\"\d+\")[^>\n]*>",
    r"^\s*(?:[-*•]\s*)?(?:memory for this message|what memory holds|your memory|core memory)"
    r"\s*:\s*$",
    # "(14 March 2027, from …/lease.md, chunk 3)" and "(since 4 May 2026)"-style brackets.
    rf"\(\s*(?:{_MONTH_DATE}|since [^)]*|from [^)]*|[^)]*\bchunk \d+[^)]*)\)",
    # "the user said:" before what was said (with a date, it is said as a person says it:
    # ``_SAID_ON``).
    r"\b(?:the user|user) said:\s*",
    # A line of the note copied whole, as a list item: "- You said: You're allergic to…". (One
    # with a date keeps it, without the list's dash: the date may be the answer.)
    r"^\s*[-*•]\s*(?:you said|i said|a note|your document [\w .-]{1,60} says)\s*:[^\n]*$",
    # A short label line ending in a colon, as the note opens: "Your job:", "Your son:".
    r"^\s*(?:[-*•]\s*)?(?:your|my)\s+[\w' ]{1,30}:\s*$",
    r"\bchunk \d+\b,?",
    # A reply that names its own speaker.
    r"^\s*(?:mnemo|assistant)\s*:\s*",
]
_FRAME = re.compile("|".join(f"(?:{part})" for part in _FRAME_PARTS), re.IGNORECASE | re.MULTILINE)
_PATH = re.compile(r"(?:[\w.…~-]*[/\\])*([\w-]+)\.(?:md|txt|pdf|docx?|html?|rtf|odt|csv)\b", re.I)
_HEADING = re.compile(r"^\s*#+\s*", re.MULTILINE)
_THE_USER = re.compile(r"\b(the user)\b('s)?(\s+(?:is|was|has|\w+s)\b)?", re.IGNORECASE)
_VERB_TO_YOU = {"is": "are", "was": "were", "has": "have"}


def _to_you(match: re.Match[str]) -> str:
    if match[2]:
        said = "your"
    else:
        said = "you"
        if match[3]:
            verb = match[3].strip()
            said += " " + _VERB_TO_YOU.get(verb.casefold(), verb.removesuffix("s"))
    start = match.start()
    before = match.string[:start].rstrip()
    if not before or before[-1] in ".!?:\n":
        said = said[0].upper() + said[1:]
    return said + (match[3] if match[2] and match[3] else "")


# "21 January 2023, the user said: …" and the note's "- On 21 January 2023 you said: …": when
# something was said, which may be what a question asks ("When did I…?"), said plainly.
_SAID_ON = re.compile(
    rf"^(\s*)[-*•]\s*(?=on {_MONTH_DATE})|(?:\bon\s+)?\b({_MONTH_DATE}),?\s*(?:the user|user) "
    r"said:\s*",
    re.IGNORECASE | re.MULTILINE,
)


def _said_on(match: re.Match[str]) -> str:
    return f"On {match[2]} you said: " if match[2] else match[1]


def strip_frame(reply: str) -> str:
    """The reply without what it copied of its prompt's scaffolding, and with the person as
    "you" ("The user's sister" -> "Your sister")."""
    text = _FRAME.sub(" ", _SAID_ON.sub(_said_on, reply))
    text = _PATH.sub(lambda match: match[1], text)
    text = _HEADING.sub("", text)
    text = _THE_USER.sub(_to_you, text)
    text = re.sub(r"[ \t]+", " ", text)
    text = re.sub(r" +([,.;:!?])", r"\1", text)
    text = re.sub(r"\n{3,}", "\n\n", text)
    return "\n".join(line.strip() for line in text.strip().splitlines()).strip(" ,;:-\n")


# -- every reply ends ---------------------------------------------------------------------------

LOOP_WORDS = 8  # a run of this many words said twice in one reply is a loop
# Where a sentence ends; not at a colon ("Warranty number: WB-55810." is one sentence, and in
# "Your job: Nurse" the value comes after it).
SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_WORD = re.compile(r"[\w'-]+")


def loop_start(text: str) -> int | None:
    """Where ``text`` starts saying again what it already said (a sentence of four words or
    more, or a run of ``LOOP_WORDS`` words); None while it does not."""
    seen: set[str] = set()
    position = 0
    for piece in SENTENCE_END.split(text):
        start = text.find(piece, position)
        position = start + len(piece)
        key = " ".join(_WORD.findall(piece.casefold()))
        if len(key.split()) >= 4:
            if key in seen:
                return start
            seen.add(key)
    words = list(_WORD.finditer(text.casefold()))
    runs: set[tuple[str, ...]] = set()
    for index in range(len(words) - LOOP_WORDS + 1):
        run = tuple(word[0] for word in words[index : index + LOOP_WORDS])
        if run in runs:
            return words[index].start()
        runs.add(run)
    return None


RECITED_WORDS = 6  # a run this long from the instructions or the persona is recited, not said


def recites(reply: str, scaffold: str) -> bool:
    """Whether ``reply`` recites a run of ``RECITED_WORDS`` words of ``scaffold`` (the
    instructions, the persona), as written or turned to "you" ("You are Mnemo, a personal
    assistant that runs on your own computer" was the bundled model's reply to a first "Hi")."""
    said = [word[0] for word in _WORD.finditer(reply.casefold())]
    runs = {
        tuple(words[i : i + RECITED_WORDS])
        for text in (scaffold, strip_frame(scaffold))
        for words in [[w[0] for w in _WORD.finditer(text.casefold())]]
        for i in range(len(words) - RECITED_WORDS + 1)
    }
    return any(
        tuple(said[i : i + RECITED_WORDS]) in runs for i in range(len(said) - RECITED_WORDS + 1)
    )


SHAPE_WORDS = 6  # shorter replies ("Hi!", "You're welcome.") may well recur
SHAPE_SIMILARITY = 0.75  # of the words, in order


def same_shape(a: str, b: str) -> bool:
    """The same reply with a phrase changed ("I'm not familiar with the term "X" but…")."""
    words_a, words_b = _WORD.findall(a.casefold()), _WORD.findall(b.casefold())
    if min(len(words_a), len(words_b)) < SHAPE_WORDS:
        return False
    matcher = difflib.SequenceMatcher(None, words_a, words_b, autojunk=False)
    return matcher.quick_ratio() >= SHAPE_SIMILARITY and matcher.ratio() >= SHAPE_SIMILARITY


# -- grounded -----------------------------------------------------------------------------------

_NUMBER = re.compile(r"\d+(?:[,.:/-]\d+)*")
# A single digit is a value when it counts something ("4 days per month", "3 years"); alone it
# is mostly a list's number or a count of the reply's own ("2 ideas").
_QUANTITY = re.compile(
    r"(?<![\d,.])(\d)\s+(?:minute|hour|day|night|week|month|year|euro|dollar|pound|time|"
    r"kilo|kg|km|mile|metre|meter|floor|bedroom|room|child|kid|cat|dog)s?\b",
    re.IGNORECASE,
)
_NEGATION = re.compile(r"\b(?:not|never|no longer)\b|n't\b", re.IGNORECASE)
_CLAUSE_END = re.compile(r"[.!?;,\n]|\b(?:but|and|so|because)\b")
# Saying it did not follow what the person told, which memory has just understood ("A
# pharmacist, a chemist. I'm not sure what you're talking about.").
_LOST = re.compile(
    r"\bnot sure what you(?:'re| are)?\s+(?:mean|talking about|saying|referring to)"
    r"|\b(?:don't|do not)\s+(?:understand|follow)\b|\bwhat do you mean\b|\bnot familiar with\b",
    re.IGNORECASE,
)
# Capitalised inside a sentence without being a value of the person's life (after a colon, a
# sentence may open again: "Got it: You're…", "Note: The rent…").
_NOT_VALUES = frozenset(
    """i i'm i'd i've i'll you you're you've you'd you'll your yours mnemo ok the a an this that
    these those it it's there here he she they we yes no sure note""".split()
)
_FIRST_PERSON = frozenset("i i'm i've i'd i'll me my mine myself".split())
# How a superseded value may still be named: as history.
_HISTORY = re.compile(
    r"\((?:before that|before|previously|earlier|formerly|was|it was)\b[^)]*\)"
    r"|\b(?:not|no longer|instead of|used to|previously|before that|moved from|changed from)"
    r"\b[^.;!?]*",
    re.IGNORECASE,
)


_CONDOLENCE = re.compile(r"\bsorry for your loss\b|\bcondolences\b", re.IGNORECASE)
_LOSS = re.compile(
    r"\b(?:died|dies|dead|death|passed|lost|loss|funeral|grie\w*|put down|miscarr\w*)\b",
    re.IGNORECASE,
)
# What memory holds, quoted where nothing was checked against it ("Tell me something cheerful"
# got "You said: You're not happy…").
_QUOTES_MEMORY = re.compile(r"^\W*(?:you said|you told me|a note)\b[^\n]*:", re.I | re.M)


def out_of_place(reply: str, message: str, checked: bool) -> str | None:
    """Why ``reply`` does not fit ``message`` whatever it asks, in words for the log: sympathy
    for a loss nobody told of ("Goodbye!" got "I'm sorry for your loss."), or memory quoted in
    a reply that was not ``checked`` against memory."""
    if _CONDOLENCE.search(reply) and not _LOSS.search(message):
        return "offered sympathy for a loss nobody told of"
    if not checked and _QUOTES_MEMORY.search(reply):
        return "quoted memory unasked"
    return None


def values(text: str) -> set[str]:
    """What only a source can tell: numbers of two or more digits ("16th" is 16, "1,200" is
    1200) or of what they count ("4 days"), and names (words capitalised inside a sentence),
    casefolded, without "'s"."""
    found = {n.replace(",", "") for n in _NUMBER.findall(text) if len(n.replace(",", "")) > 1}
    found |= set(_QUANTITY.findall(text))
    for sentence in SENTENCE_END.split(text):
        sentence = sentence.lstrip("-*•· \t")  # a list's line starts a sentence too
        for word in _WORD.findall(sentence)[1:]:
            folded = word.casefold().removesuffix("'s")
            if word[0].isupper() and folded not in _NOT_VALUES:
                found.add(folded)
    return found


_WH = re.compile(r"^\W*(where|when|who)\b", re.IGNORECASE)


def asked_terms(question: str) -> list[str]:
    """A question's search terms and the kind of answer it asks by ("where": a place, which
    facts say by their relation words), so that "Where do I work?" finds where, not as what."""
    terms = query_terms(question, max_terms=10**6)
    wh = _WH.match(question)
    return [*terms, wh[1].casefold()] if wh else terms


def _relatives(text: str) -> set[str]:
    """The people of the person's life that ``text`` names by their tie ("son", "sister")."""
    return _words(text) & _TIES


def _words(text: str) -> set[str]:
    words = {word.casefold().removesuffix("'s") for word in _WORD.findall(text)}
    return words | {n.replace(",", "") for n in _NUMBER.findall(text)}


@dataclass
class Record:
    """One thing memory holds for a message, as it is said back: "your sister Ines lives in
    Antwerp", when ("4 December"), and what it replaced ("Ghent")."""

    said: str
    when: str | None = None
    before: str | None = None
    document: str | None = None  # the file's name, for a document's passage
    noted: bool = False  # what the person has just said, acknowledged
    about: str = ""  # more words it answers questions by ("work job" for where one works)
    someone_else: bool = False  # a fact about another person ("Karim lives in Dublin")

    def reply(self) -> str:
        said = self.said.rstrip(".")
        if said.split(" ", 1)[0] in ("You", "Your", "You're", "You've", "You'd", "You'll"):
            said = said[0].lower() + said[1:]  # a name keeps its capital
        if self.noted:
            return f"Got it: {said}."
        if self.document:
            return f"Your document {self.document} says: {self.said}"
        history = f" (before that, {self.before})" if self.before else ""
        if self.when:
            return f"You told me on {self.when}: {said}{history}."
        return f"{said[0].upper() + said[1:]}{history}."


@dataclass
class Grounds:
    """What a reply about the person may state: what memory found for the message (``records``,
    the best first), the message itself and core memory; and the values that were true once."""

    message: str
    records: list[Record] = field(default_factory=list)
    context: str = ""  # core memory and anything else the model was given as true
    superseded: set[str] = field(default_factory=set)
    question: bool = True
    news: set[str] = field(default_factory=set)  # the values a statement tells ("antwerp")

    def _known(self) -> set[str]:
        texts = [self.message, self.context, *(r.said for r in self.records)]
        texts += [r.before or "" for r in self.records]
        return set().union(*(_words(text) for text in texts))

    def invented(self, reply: str) -> set[str]:
        """The values ``reply`` states that neither memory nor the message holds."""
        return values(reply) - self._known()

    def up_to_answer(self, reply: str) -> str | None:
        """``reply`` up to the end of the first sentence by which it has answered the question
        (it gives a value the record that answers holds, and nothing is wrong with it so far);
        None while it has not. The person asked one thing: what the bundled model wrote after
        the answer was where it went wrong ("You are allergic to peanuts. Your family is
        allergic to peanuts, so…")."""
        best = self.best() if self.question else None
        if best is None:
            return None
        wanted = values(self._answering(best)) - _words(self.message)
        if not wanted:
            return None
        for end in (m.start() for m in SENTENCE_END.finditer(reply + "\n")):
            said = reply[:end].rstrip()
            if ABBREVIATION.search(said):
                continue  # "You work at St." has not ended
            if wanted & _words(said) and said[-1:] in ".!?" and self.problem(said) is None:
                return said
        return None

    def misattributed(self, reply: str) -> set[str]:
        """To a question about someone in the person's life ("Where does my sister live now?"),
        the values ``reply`` tells of the wrong one: of them, what memory holds only of others
        ("Your sister … works at St. Mary's", where the person is the one at St. Mary's); of
        the person, what memory holds only of them ("…says you live in Antwerp")."""
        if not self.question:
            return set()
        who = _relatives(self.message) | (values(self.message) & self._known())
        theirs = [r for r in self.records if who & _words(r.said)]
        if not who or not theirs:
            return set()
        held = set().union(*(_words(f"{r.said} {r.before or ''}") for r in theirs))
        others = [r for r in self.records if r not in theirs]
        elsewhere = set().union(set(), *(_words(f"{r.said} {r.before or ''}") for r in others))
        wrong = values(reply) - held - _words(self.message)
        for sentence in SENTENCE_END.split(reply):
            said = _words(sentence)
            if said & _YOU_WORDS and not said & who and not _relatives(sentence):
                wrong |= values(sentence) & held - elsewhere - _words(self.message)
        return wrong

    def best(self) -> Record | None:
        """The record that answers the message: the one sharing most of its words (among
        equals, one that tells a value the message does not hold, then the first); none when
        no record shares one (a record about something else is no answer: "Where do I work?"
        got "You told me: you're flying to Rome")."""

        def shared(record: Record) -> int:
            said = query_terms(f"{record.said} {record.about}", max_terms=10**6)
            return sum(any(same_word(word, other) for other in said) for word in self._asked)

        def tells(record: Record) -> bool:  # a value the question does not already hold
            return bool(values(self._answering(record)) - _words(self.message))

        # "Where do I live?" is not answered by where Karim lives.
        own = self._about_the_person_alone()
        scored = [
            (shared(r), tells(r), -i)
            for i, r in enumerate(self.records)
            if not (own and r.someone_else)
        ]
        if not scored or max(scored)[0] == 0:
            return None
        return self.records[-max(scored)[2]]

    @cached_property
    def _asked(self) -> list[str]:
        """The message's terms, as ``best`` and ``_answering`` match records by them."""
        return asked_terms(self.message)

    def _about_the_person_alone(self) -> bool:
        """Whether the message asks about the person and names nobody else ("Where do I
        live?", not "Where does my sister live?" nor "Where does Karim live?")."""
        words = _WORD.findall(self.message)
        return (
            any(w.casefold() in _TO_YOU for w in words)  # the words that are the person
            and not values(self.message)
            and not _relatives(self.message)
        )

    def _answering(self, record: Record) -> str:
        """The sentences of ``record`` that share most words with the message (all of it when
        none shares one): "Hi! I am allergic to peanuts. My name is Priya." answers "What am
        I allergic to?" with its second sentence, and its names are no part of the answer."""
        parts = SENTENCE_END.split(f"{record.said} {record.about}".strip())
        shared = [
            sum(
                any(same_word(w, a) for w in query_terms(part, max_terms=10**6))
                for a in self._asked
            )
            for part in parts
        ]
        most = max(shared, default=0)
        return (
            " ".join(p for p, n in zip(parts, shared, strict=True) if n == most)
            if most
            else record.said
        )

    def left_out(self, reply: str) -> bool:
        """Whether a reply to a question leaves out every value the best record holds for it;
        or a reply to news states values, none of them the news ("Your sister is Ines." to
        "Actually, Ines moved to Antwerp last month.")."""
        if not self.question:
            return bool(self.news and values(reply)) and not self.news & _words(reply)
        best = self.best()
        if best is None:
            return False
        wanted = values(self._answering(best)) - _words(self.message)
        if wanted:  # a name, number or date the record gives
            return not (wanted & _words(reply))
        # Else what the record says beyond the question ("a marathon", for "Which race am I
        # running in October?").
        # Words naming who it is about ("son" in "Your son Filip plays the cello") are no
        # answer to what the question asks.
        asked = query_terms(self.message, max_terms=10**6)
        told = [
            word
            for word in query_terms(best.said, max_terms=10**6)
            if not any(same_word(word, other) for other in asked) and word not in RELATIVES
        ]
        said = query_terms(reply, max_terms=10**6)
        return bool(told) and not any(same_word(w, other) for w in told for other in said)

    def denies(self, reply: str) -> bool:
        """Whether ``reply`` says "not" of what the record holds ("No worries, you're not
        allergic to peanuts" to "I'm allergic to peanuts"): a word of the record within the
        clause after a negation, when the record itself negates nothing."""
        record = self.best() if self.question else (self.records[0] if self.records else None)
        if record is None or _NEGATION.search(record.said):
            return False
        held = query_terms(record.said, max_terms=10**6)
        for match in _NEGATION.finditer(reply):
            clause = _CLAUSE_END.split(reply[match.end() :], maxsplit=1)[0]
            denied = query_terms(clause, max_terms=10**6)
            if any(same_word(word, other) for word in denied for other in held):
                return True
        return False

    def speaks_of_someone_else(self, reply: str) -> bool:
        """Whether a reply to a question about the person alone names a relative the record
        that answers it does not ("What's my job?" got "Your son Kofi is a pharmacist"): what
        is said of someone else is no answer about the person."""
        if not self.question or not self._about_the_person_alone():
            return False
        best = self.best()
        named = _relatives(best.said) if best is not None else set()
        return bool(_relatives(reply) - named)

    def speaks_as_the_person(self, reply: str) -> bool:
        """Whether a reply takes the person's words as its own: "my" and the word after it as
        the message has them ("My sister is Ines…" to "Where does my sister live now?"), or,
        to what the person told, three words of the message in a row, opened or preceded by
        "I", "my" or "me" ("…about my work as a pharmacist in Accra" to "I work as a
        pharmacist in Accra.")."""
        told = [w.casefold() for w in _WORD.findall(self.message)]
        said = [w.casefold() for w in _WORD.findall(reply)]
        owned = {pair for pair in zip(told, told[1:], strict=False) if pair[0] == "my"}
        if owned & set(zip(said, said[1:], strict=False)):
            return True
        if self.question:
            return False
        runs = {tuple(told[i : i + 3]) for i in range(len(told) - 2)}
        return any(
            tuple(said[i : i + 3]) in runs and _FIRST_PERSON & set(said[max(i - 1, 0) : i + 1])
            for i in range(len(said) - 2)
        )

    def gives_superseded(self, reply: str) -> bool:
        """Whether ``reply`` answers with a value that has since been replaced."""
        current = _words(_HISTORY.sub(" ", reply))
        return bool(self.superseded & current - self._current_values())

    def _current_values(self) -> set[str]:
        return set().union(*(values(r.said) for r in self.records)) if self.records else set()

    def problem(self, reply: str) -> str | None:
        """Why ``reply`` cannot be shown as it is, in words for the log; None when it can."""
        if problem := self.doomed(reply):
            return problem
        if self.gives_superseded(reply):
            return "gave a value that was replaced"
        if self.denies(reply):
            return "denied what memory holds"
        if self.left_out(reply):
            return "left out what memory holds"
        return None

    def doomed(self, start: str) -> str | None:
        """Why a reply that starts with ``start`` cannot be shown, however it goes on (a value
        from nowhere stays stated); None while it still may be."""
        if not self.question and _LOST.search(start):
            return "said it did not follow"
        if made_up := self.invented(start):
            return "stated what memory does not hold: " + ", ".join(sorted(made_up))
        if others := self.misattributed(start):
            return "told of them what memory holds of others: " + ", ".join(sorted(others))
        if self.speaks_of_someone_else(start):
            return "spoke of someone else"
        if self.speaks_as_the_person(start):
            return "spoke as the person"
        return None

    def unanswered(self) -> bool:
        """Whether the message asks about the person and nothing memory found answers it
        (what the person's son does is no answer to "What's my job?")."""
        return self.question and self._about_the_person_alone() and self.best() is None

    def only_of_others(self) -> bool:
        """Whether the message asks about the person and memory found only what is true of
        the people in their life ("Karim lives in Dublin", "Your son is Kofi"): nothing to
        draft a reply from."""
        return self.unanswered() and all(r.someone_else or _relatives(r.said) for r in self.records)

    def record_reply(self) -> str | None:
        """The reply built from the record itself, when memory holds one for the message."""
        if not self.question:
            return self.records[0].reply() if self.records else None
        best = self.best()
        return best.reply() if best is not None else None
