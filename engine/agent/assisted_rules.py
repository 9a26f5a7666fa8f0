"""The assisted memory mode: the engine pages memory for the model.

Before each reply, ``recall_for`` searches past conversations and archival memory on the user's
message (read with their previous one when it is too short to stand alone), and reads the current
facts about the people, places and things it names ("I" and "my" name the user) from knowledge
memory. It keeps only hits that clearly fit and that the model does not already see. They go
into a labelled section that rides with the newest message, after the stable prefix, so the KV
cache of everything before it is reused. The reply is written again when it repeats an earlier
one (``RepeatGuard``). After the reply, what the user's message says about their life is kept by
rule (``lasting``): their own first-person statements become archival notes, and those that state
a fact knowledge memory holds (``engine.memory.extract``: home, work, family, birthdays,
allergies) go there, where a change supersedes the old fact once the user agrees. No model
chooses what is kept, so neither retrieved text nor a small model's inventions become memory.
"""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

import regex

from engine import clock
from engine.agent.grounding import (
    ABBREVIATION,
    SENTENCE_END,
    SHAPE_WORDS,
    Grounds,
    Record,
    asked_terms,
    loop_start,
    same_shape,
    strip_frame,
    to_second_person,
)
from engine.agent.grounding import values as stated_values
from engine.functions import SEND_MESSAGE, search_archival, search_conversation, trace_lines
from engine.memory.archival import Passage, duplicate_key
from engine.memory.extract import MONTH, facts_in
from engine.memory.knowledge import (
    PREFERS,
    RELATIVES,
    USER,
    Fact,
    name_key,
    restates,
    said_to_person,
)
from engine.memory.recall import MessageHit
from engine.memory.search import STEM, excerpt, query_terms, same_word
from engine.memory.vectors import query_vector
from engine.resources import resource_path
from engine.text import CAPITAL, LETTERS
from engine.transcript import ANSWER_FROM_FACTS, NOTHING_FOUND, SECTION_HEAD, spoken_date

if TYPE_CHECKING:
    from engine.mnemo import Mnemo

MESSAGES = 4
PASSAGES = 3
FACTS = 6  # current facts recalled for the entities a message names, all together
FACTS_READ = 50  # the facts of each entity ranked for the message
ENTITIES = 3
HIT_CHARS = 280
STATEMENTS = 12  # the most statements kept from one message (a pasted page has hundreds)
FOLLOW_UP_TERMS = 2  # a message with fewer content words is searched with the one before


REPEAT_SIMILARITY = 0.8  # a reply this similar (difflib) to an earlier one is a repeat
EARLIER_REPLIES = 30  # the conversation's replies a new one is compared with
REPLY_ATTEMPTS = 3
RETRY_TEMPERATURE = 0.7  # a reply written again is sampled, as chat apps sample every reply
# When every attempt repeated an earlier reply: better said plainly than shown a copy.
NO_NEW_REPLY = "I'm not sure how to answer that. Could you say it another way?"


# Of the reply's cap: an answer from memory is a sentence or two; so is the reply to what is
# neither a question nor a request (news, thanks, a greeting), which the bundled model ran on
# for 80-170 tokens ("Thanks man." got a paragraph, then another draft of one).
ANSWER_SHARE = 0.5
REMARK_SHARE = 0.3
DRAFT_TOKENS = 8  # the least a draft is given ("Hello! How are you?"); fewer left: none is written


def reply_cap(message: str, grounds: Grounds | None, reply_tokens: int) -> int:
    """The tokens a turn's drafts may generate between them, by what ``message`` asks for:
    ``reply_tokens`` (the setting) for a request or a question, ``ANSWER_SHARE`` of it for an
    answer checked against memory, ``REMARK_SHARE`` for anything else. A held draft of a full
    reply took two seconds here, and was written again when it failed its check."""
    if grounds is not None and grounds.question:
        share = ANSWER_SHARE
    elif message.rstrip().endswith("?") or _REQUESTING.search(message.strip()):
        share = 1.0
    else:
        share = REMARK_SHARE
    return max(DRAFT_TOKENS, int(reply_tokens * share))


_SENTENCE_DONE = re.compile(r"[.!?…][\"')\]]*(?=\s|$)")


def _sentence_ends(text: str) -> list[int]:
    """Where sentences of ``text`` end ("Your landlord's name is Mr." has no end yet)."""
    return [
        m.end()
        for m in _SENTENCE_DONE.finditer(text)
        if not ABBREVIATION.search(text[: m.start() + 1])
    ]


def ends_a_sentence(text: str) -> bool:
    """Whether ``text`` holds a whole sentence ("You work as a" does not)."""
    return bool(_sentence_ends(text))


def whole_sentences(text: str) -> str:
    """``text`` up to the end of its last whole sentence (all of it when it has none): a reply
    cut by its cap ends where a sentence did, not in the middle of one."""
    ends = _sentence_ends(text)
    return text[: ends[-1]].rstrip() if ends else text


_QUESTION_BACK = re.compile(r"^[^.!?\n]{0,120}\?\s+(?=\S)")


def without_question_back(answer: str) -> str:
    """An answer without the question it opens by asking back ("You're referring to your
    allergy?\nYour allergy is peanuts."), or with a statement's acknowledgement ("Got it:
    You're allergic to peanuts.", copied from the replies before it, seen in the window)."""
    bare = _ACKNOWLEDGED.sub("", _QUESTION_BACK.sub("", answer, count=1), count=1)
    return bare[:1].upper() + bare[1:] if bare else answer


_ACKNOWLEDGED = re.compile(r"^\s*(?:got it|noted)\s*[:,.!-]\s*(?=\S)", re.IGNORECASE)


def reply_attempts(grounds: Grounds | None) -> int:
    """How many drafts a reply gets before it is said by rule: each is a full generation, and
    a turn of three drafts took three times the median turn. A reply to a statement has its
    record ("Got it: …") after one failed draft, a question that memory answers after two."""
    if grounds is None or grounds.record_reply() is None:
        return REPLY_ATTEMPTS
    return 1 if not grounds.question else 2


# The prompt's own labels (``message_text``'s notes and results, core memory's block tags): a
# reply that reaches one is reading its prompt back, as the bundled model now and then does.
_PROMPT_ECHO = re.compile(
    r"[\[<(]system note[\]>)]|\[recalled from memory|memory for this message:|\[result of |"
    r'<\w+ chars="',
    re.IGNORECASE,
)


def without_prompt_echo(text: str) -> str | None:
    """``text`` up to where it starts reading the prompt back, or None when it does not."""
    found = _PROMPT_ECHO.search(text)
    return None if found is None else text[: found.start()].strip()


_SEARCHES = ThreadPoolExecutor(max_workers=4, thread_name_prefix="mnemo-recall")


@dataclass
class Recalled:
    messages: list[MessageHit] = field(default_factory=list)
    passages: list[Passage] = field(default_factory=list)
    facts: list[Fact] = field(default_factory=list)
    query: str = ""
    trace: list[str] = field(default_factory=list)  # how each search ranked (for people)
    # What each recalled fact replaced, oldest first (by the fact's id): history, never the
    # answer.
    replaced: dict[int, list[Fact]] = field(default_factory=dict)
    # Notes a later statement replaced (``REPLACED_TAG``): found, and only ever history.
    history: list[Passage] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.messages or self.passages or self.facts)

    def mentions(self, word: str) -> bool:
        texts = [fact.sentence() for fact in self.facts]
        texts += [hit.text for hit in self.messages] + [p.text for p in self.passages]
        return any(same_word(word, said) for text in texts for said in query_terms(text, 10**6))

    def names(self, relative: str) -> bool:
        """Whether what was found gives the name of the person's ``relative`` (a fact of that
        relation, or "my husband Tom", "Tom, my husband", "my husband is called Tom")."""
        same = (relative, *SAME_THING.get(relative, ()))
        if any(fact.predicate in same for fact in self.facts):
            return True
        words = "|".join(re.escape(w) for w in same)
        naming = regex.compile(
            rf"\b(?:{words})s?(?:'s name is|'s name's|,| is called| called| named| is)?\s+"
            rf"(?!(?:{_NOT_A_NAME})\b){CAPITAL}{LETTERS}+"
            rf"|\b{CAPITAL}{LETTERS}+,?\s+(?:my|your|our)\s+(?:{words})\b",
        )
        texts = [hit.text for hit in self.messages] + [p.text for p in self.passages]
        return any(naming.search(text) for text in texts)

    def summary(self) -> str:
        """ "2 facts, 3 messages and 1 passage"."""
        parts = [
            f"{len(items)} {noun}{'s' * (len(items) != 1)}"
            for items, noun in (
                (self.facts, "fact"),
                (self.messages, "message"),
                (self.passages, "passage"),
            )
            if items
        ]
        return ", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else "".join(parts)

    @property
    def untrusted_reason(self) -> str | None:
        """Why the note may carry text the user did not write (as the search functions say)."""
        documents = sum(not passage.trusted for passage in self.passages)
        if documents:
            return (
                f"written after recalling {documents} passages from documents or earlier "
                "model notes"
            )
        if self.messages:
            return "written after recalling past conversations"
        return None

    def text(self) -> str:
        """The section as the model reads it: each hit as it would be said to the person
        ("Your sister Ines lives in Antwerp", "On 4 December you said: …"), with no brackets,
        paths or labels for a small model to copy into its reply (for a question about the
        user that found nothing, that memory holds nothing)."""
        lines = [SECTION_HEAD]
        if not self:
            return "\n".join([*lines, NOTHING_FOUND])
        lines += [f"- {line}" for line in self._lines()]
        if self.facts and self.query.rstrip().endswith("?"):
            lines.append(ANSWER_FROM_FACTS)
        return "\n".join(lines)

    def _lines(self) -> list[str]:
        lines = [as_sentence(said_to_person(fact.sentence())) for fact in self.facts]
        for hit in self.messages:
            cut = excerpt(hit.text, self.query, HIT_CHARS)
            if hit.role == "user":
                lines.append(f"On {spoken_date(hit.created_at)} you said: {to_second_person(cut)}")
            else:
                lines.append(f"On {spoken_date(hit.created_at)} I said: {cut}")
        for passage in self.passages:
            if passage.source.path:
                cut = excerpt(document_text(passage), self.query, HIT_CHARS)
                lines.append(f"Your document {document_name(passage)} says: {cut}")
            elif (words := own_words(passage.text)) is not None:
                lines.append(f"You said: {as_sentence(to_second_person(words))}")
            else:
                lines.append(f"A note: {excerpt(passage.text, self.query, HIT_CHARS)}")
        return lines

    def grounds(self, message: str, context: str) -> Grounds:
        """What a reply to ``message`` may state, the best record first (``grounding``)."""
        records: list[Record] = []
        superseded: set[str] = set()
        for fact in self.facts:
            replaced = self.replaced.get(fact.id, [])
            superseded |= {word.casefold() for f in replaced for word in f.object.split()}
            records.append(
                Record(
                    said_to_person(fact.sentence()),
                    short_date(fact.learned_at),
                    replaced[-1].object if replaced else None,
                    about=" ".join([fact.predicate, *RELATION_WORDS.get(fact.predicate, [])]),
                    someone_else=not fact.subject_is(USER),
                )
            )
        for passage in self.passages:
            if passage.source.path:
                said = answering_part(document_text(passage), self.query)
                records.append(Record(said, document=document_name(passage)))
            elif (words := own_words(passage.text)) is not None:
                records.append(
                    Record(
                        to_second_person(words), short_date(passage.created_at), about=_about(words)
                    )
                )
        for passage in self.history:
            superseded |= stated_values(own_words(passage.text) or passage.text)
        for hit in self.messages:
            # A question is no record, nor a musing ("If we ever had a dog I'd call it Pepper"
            # names no dog of theirs).
            if hit.role == "user" and not (
                hit.text.rstrip().endswith("?") or _MUSING.search(hit.text)
            ):
                said = to_second_person(excerpt(hit.text, self.query, HIT_CHARS))
                records.append(Record(said, short_date(hit.created_at), about=_about(hit.text)))
        # The note is memory too: its dates ("On 4 December 2026 you said") may be repeated.
        context = f"{context}\n{self.text()}"
        return Grounds(message, records, context, superseded, message.rstrip().endswith("?"))


def _about(said: str) -> str:
    """The words a question asks by for the facts ``said`` states ("job work" for "I'm a
    radiographer"): a question shares them when it shares no word with what was said."""
    found = facts_in(said, clock.today())
    return " ".join(word for c in found for word in RELATION_WORDS.get(c.predicate, []))


def answering_part(text: str, question: str) -> str:
    """The sentences or lines of a document's passage that share a word with the question
    ("Plumber: Dave Rowe, 0117 496 0321" of a page of contacts): what answers it, without the
    rest, whose numbers and names would pass for an answer by chance."""
    asked = query_terms(question, max_terms=10**6)
    parts = [
        part
        for part in _sentences(text)
        if any(same_word(w, a) for a in asked for w in query_terms(part, max_terms=10**6))
    ]
    return " ".join(parts)[:HIT_CHARS] if parts else excerpt(text, question, HIT_CHARS)


def as_sentence(text: str) -> str:
    """ "you live in Lyon" -> "You live in Lyon.": capitalised, one full stop."""
    text = text.strip().rstrip(".")
    return text[:1].upper() + text[1:] + "."


def short_date(when: datetime) -> str:
    """ "4 December": the day, as a reply says when something was said."""
    return f"{when.astimezone().day} {when.astimezone():%B}"


def document_text(passage: Passage) -> str:
    """A document's passage without the heading it starts with ("Lease The monthly rent is…",
    which a reply copied)."""
    return passage.text.removeprefix(passage.source.section or "").lstrip() or passage.text


def document_name(passage: Passage) -> str:
    """A document as a person calls it: its file name without folders or extension."""
    name = (passage.source.path or "").replace("\\", "/").rsplit("/", 1)[-1]
    return name.rsplit(".", 1)[0] if "." in name else name


_OWN_WORDS = re.compile(r'^The user said: "(?P<words>.*?)\.?"$', re.DOTALL)


def own_words(note: str) -> str | None:
    """What the person said, from a note kept of their own words (``fact_line``)."""
    match = _OWN_WORDS.match(note.strip())
    return match["words"] if match else None


def grounds_for(
    message: str,
    about_user: bool,
    found: Recalled,
    context: str,
    names: Callable[[str], bool] | None = None,
) -> Grounds | None:
    """What a reply to ``message`` is checked against, when it speaks about the person: a
    question about them that memory found something for, or a message that tells of their
    life (its reply may restate it, and nothing more: "Ines is a famous artist in Belgium" was
    the bundled model's reply to "My sister Ines lives in Ghent."). None for other messages:
    a request for ideas may name what nobody said. ``names``: who memory knows, whose news is
    a statement too ("Ines moved to Antwerp")."""
    asks = message.rstrip().endswith("?")
    documents = [p for p in found.passages if p.source.path]
    if about_user or (asks and (found.facts or documents) and not _REQUESTING.search(message)):
        # A question about them, about the people in their life that memory knows, or about
        # their documents ("What's the plumber's phone number?").
        return found.grounds(message, context) if found else None
    if asks:
        return None
    told = [
        to_second_person(without_opener(s) or s)
        for s in user_statements(message, names)
        if lasting(s)
    ]
    news = set().union(*(stated_values(s) for s in told))
    old: set[str] = set()
    if correction := correction_in(message):
        told.append(str(correction))
        news |= {word.casefold() for word in correction.new.split()}
        old = {word.casefold() for word in (correction.old or "").split()} - news
    if not told:
        return None
    # Its reply may restate what was said, not bring up other memory: after "Actually, Ines
    # moved to Antwerp", the bundled model replied "- Ines lives in Ghent".
    return Grounds(
        message, [Record("; ".join(told), noted=True)], context, old, question=False, news=news
    )


# A request for ideas or help, which may name what nobody said ("What's a good stretch…?").
_REQUESTING = re.compile(
    r"^(?:(?:can|could|would|will) you|how (?:do|should|can|could) (?:i|we)|"
    r"what(?:'s| is| are| would be) (?:a|an|some|the best|good)\b|any (?:ideas|tips|thoughts)|"
    r"(?:please )?(?:suggest|recommend|give|tell|write|help)\b)",
    re.IGNORECASE,
)


# A question about the person's own life ("What's my…", "Where do I…", "Who is my…"), not a
# request for advice that happens to say "I" ("What should I cook?", "How do I…").
_ABOUT_THE_USER = re.compile(
    r"^(?:(?:what|where|when|who|whom|which|whose)\b"
    r"(?!(?:'s|\s+is|\s+are|\s+would be)\s+(?:a|an|some|good|the best|a good)\b)"
    r"(?!.*\b(?:should|could|can|would|might)\s+(?:i|we)\b).*\b(?:i|my|me|mine|we|our|us)\b"
    r"|(?:do|does|did|am|have|had|is|are|was|were)\s+(?:i|my|we|our)\b"
    r"|how\s+(?:old|many|much|long)\b(?!.*\b(?:should|could|can|would|might)\s+(?:i|we)\b)"
    r".*\b(?:i|my|me|we|our)\b)",
    re.IGNORECASE,
)
# What people put before a question about themselves: "Remind me, what's my landlord called?"
_ASKING = re.compile(
    r"^(?:(?:remind me|quick question|hey|so|and|oh|sorry|ok(?:ay)?)[,:]?\s+)+", re.IGNORECASE
)


_MY_THING = re.compile(
    r"^(?:what|who|where|when|which)(?:'s|\s+is|\s+are|\s+was|\s+were)\s+(?P<whose>my|our)\s+"
    r"(?P<thing>[\w' -]{1,40}?)(?:\s+(?P<named>called|named))?\?$",
    re.IGNORECASE,
)
# Said in turn, so that three things never told do not get one reply three times over (which
# reads as a template, and is one).
_NOT_TOLD = (
    "I don't know {what} — you haven't told me yet. Tell me, and I'll remember it.",
    "You haven't told me {what}, so I don't know it. If you tell me, I'll keep it.",
    "I have nothing in memory about {what}. Tell me and I'll remember it.",
)


def not_told(question: str, earlier: Sequence[str] = ()) -> str:
    """The reply to a question about the user that memory has nothing on, said by rule: the
    bundled model, told that memory held nothing, still invented an answer to 12 of 12. A
    phrasing the conversation's ``earlier`` replies used is not used again while another is
    left."""
    match = _MY_THING.match(_ASKING.sub("", question.strip()))
    what = "that"
    if match:
        whose = "your" if match["whose"].casefold() == "my" else "our"
        thing = match["thing"].strip()
        what = f"{whose} {thing}'s name" if match["named"] else f"{whose} {thing}"
    used = {
        i
        for i, phrasing in enumerate(_NOT_TOLD)
        for reply in earlier
        if same_shape(reply, phrasing.format(what=what))
    }
    fresh = [p for i, p in enumerate(_NOT_TOLD) if i not in used] or list(_NOT_TOLD)
    return fresh[0].format(what=what)


_SPOKEN_DATE = re.compile(r"\b\d{1,2} [A-Z][a-z]+ \d{4}\b")
_NOTE_WORDS = frozenset(
    query_terms(f"{SECTION_HEAD} {ANSWER_FROM_FACTS} on you said I said your document says a note")
)


def memory_words(note: str, question: str) -> list[str]:
    """The words of a recall note that could answer ``question``: its hits' words, without the
    note's own wording, dates, or what the question itself says."""
    asked = query_terms(question, max_terms=10**6)
    words = query_terms(_SPOKEN_DATE.sub(" ", note), max_terms=10**6)
    return [
        word
        for word in words
        if word not in _NOTE_WORDS and not any(same_word(word, other) for other in asked)
    ]


def uses_memory(reply: str, words: list[str]) -> bool:
    """Whether ``reply`` says something the note held (one of its words)."""
    said = query_terms(reply, max_terms=10**6)
    return any(same_word(word, other) for word in words for other in said)


_NAMED = re.compile(
    rf"\bmy\s+(?:(?:favou?rite|favou?red)\s+(?P<favourite>\w+)(?=\?|\s+is\b|'s\b)"
    rf"|(?P<relative>{'|'.join(RELATIVES)})(?:'s|s')?\b)",
    re.IGNORECASE,
)


_NOT_A_NAME = "I|I'm|I've|You|He|She|It|We|They|The|And|But|So|Is|Lives|Works"
# Words for the same person or thing, as people say them.
SAME_THING: dict[str, tuple[str, ...]] = {
    "mother": ("mum", "mom"),
    "mum": ("mother", "mom"),
    "mom": ("mother", "mum"),
    "father": ("dad",),
    "dad": ("father",),
    "film": ("movie",),
    "movie": ("film",),
    "partner": ("boyfriend", "girlfriend", "husband", "wife"),
}


def named_in(question: str) -> str | None:
    """The relative or the favourite thing a question about the user names ("my sister",
    "my favourite film"): what only a memory that mentions it can answer."""
    match = _NAMED.search(question)
    return (match["favourite"] or match["relative"]).casefold() if match else None


def asks_about_the_user(message: str) -> bool:
    """Whether ``message`` asks what memory should know about the person."""
    text = _ASKING.sub("", message.strip())
    return text.endswith("?") and bool(_ABOUT_THE_USER.search(text))


_THE_THING = re.compile(r"\bthe\s+([a-z]+)\b", re.IGNORECASE)


def asks_of_theirs(message: str, recalled: Recalled) -> bool:
    """Whether a question asks of a thing of the person's own without "my": "What day is the
    dentist?" when they told of "my dentist appointment", or "Which day is football now?" when
    a note of theirs gives its day ("Football practice is on Thursdays for me"). Asked so, it
    is a question about them, whose answer memory holds (the bundled model gave today's date,
    or made days up)."""
    asked = _ASKING.sub("", message.strip())
    if not asked.endswith("?") or not _WH.match(asked):
        return False
    things = {word.casefold() for word in _THE_THING.findall(asked)}
    said = [own_words(p.text) or "" for p in recalled.passages]
    if any(
        re.search(rf"\bmy\s+{re.escape(thing)}\b", text, re.I) for thing in things for text in said
    ):
        return True
    # "Which day is football now?" of "Football practice is on Thursdays for me": a note of
    # theirs that gives a day or a time, named by a word of the question, not by a day or a time.
    words = [
        w for w in query_terms(asked, 10**6) if w not in _WHEN_WORDS and not _VALUE_WORD.match(w)
    ]
    return any(
        same_word(word, note_word)
        for text in said
        if any(kind.search(text) for kind in VALUE_KINDS.values())
        for note_word in query_terms(text, 10**6)
        for word in words
    )


_WH = re.compile(r"^(?:what|where|when|who|which|whose|how)\b", re.IGNORECASE)
_WHEN_WORDS = frozenset("day days date time week month year now today tomorrow again".split())


# "What do I do for a living?" asks of work: searched by its words, "living" found "These days
# I'm living in Leeds" and the reply gave the home.
_FOR_A_LIVING = re.compile(r"\bfor a living\b", re.IGNORECASE)


# Greetings, thanks, goodbyes and nods: a message of these words alone asks memory nothing, and
# a message of them alone tells it nothing. Searched, "Good morning!" found "Sad day: Biscuit
# died this morning" and the last "Hi!", which after months made such a turn's prompt longer.
_PLEASANTRY_WORDS = frozenset(
    """hi hello hey hiya howdy greetings good morning afternoon evening night day there again
    everyone all thanks thank thx you so much very a lot cheers ta nice great cool ok okay
    alright sure perfect awesome lovely wonderful brilliant fine bye goodbye see later soon take
    care that that's it got helps helped helpful noted oh ah wow haha lol
    how are doing""".split()
)


def only_pleasantries(text: str) -> bool:
    """Whether ``text`` is a greeting, thanks or the like and nothing more ("Thanks, that
    helps.", "Good morning!")."""
    words = re.findall(r"[a-z']+", text.casefold().replace("’", "'"))
    return bool(words) and all(word in _PLEASANTRY_WORDS for word in words)


def recall_for(
    mnemo: Mnemo,
    message: str,
    *,
    previous: str | None,
    visible: set[int],
    shown_passages: set[str] | None = None,
    shown_facts: set[int] | None = None,
) -> Recalled:
    """What memory holds for ``message``: strong hits only, none the model already sees
    (``visible``: ids of messages in the window or in its recall notes; ``shown_passages`` and
    ``shown_facts``: those in the notes). Finding nothing returns an empty result."""
    recalled = Recalled(query=message)
    if only_pleasantries(message):
        return recalled
    seen, shown = set(visible), set(shown_passages or ())
    if mnemo.recall.count() <= len(seen) and not mnemo.archival.count():
        # A new assistant: every message is in view and there are no notes, so only facts can
        # be found (the searches, and embedding the message for them, are skipped).
        recalled.facts = facts_for(mnemo, message, shown_facts or set())
        recalled.replaced = replaced_facts(mnemo, recalled.facts)
        return recalled
    searched = _FOR_A_LIVING.sub("for work", message)
    queries = [searched]
    if previous and len(query_terms(searched)) < FOLLOW_UP_TERMS:
        # Too few words to stand alone ("How old is she?"): read it with the message before.
        # A longer message is searched alone: the previous one was searched on its own turn
        # and what it found is still in view.
        queries.append(f"{previous} {searched}")
    # The searches are independent and mostly wait on SQLite and Lance: run them side by side,
    # each query embedded once beforehand (side by side, both searches would embed it).
    for query in queries:
        query_vector(mnemo.embedder, query)
    by = "the engine (assisted recall)"
    message_pages = [
        _SEARCHES.submit(search_conversation, mnemo, query, MESSAGES + len(seen), 1, by)
        for query in queries
    ]
    passage_pages = [
        _SEARCHES.submit(search_archival, mnemo, query, PASSAGES + len(shown), 1, by)
        for query in queries
    ]
    recalled.facts = facts_for(mnemo, queries[-1], shown_facts or set())
    for message_page in message_pages:
        recalled.trace += trace_lines(message_page.result())
    for passage_page in passage_pages:
        recalled.trace += trace_lines(passage_page.result())
    # A note of the user's own words says what its message said, more briefly: the note is
    # shown, the message is not; and a note of a message the model sees is not shown at all.
    for passage_page in passage_pages:
        for passage in passage_page.result():
            if REPLACED_TAG in passage.tags:  # neither it nor its message is the answer
                if passage.id not in {p.id for p in recalled.history}:
                    recalled.history.append(passage)
                seen.add(passage.source.message_id or -1)
            elif (
                len(recalled.passages) < PASSAGES
                and not passage.weak
                and passage.id not in shown
                and passage.source.message_id not in seen
            ):
                shown.add(passage.id)
                recalled.passages.append(passage)
    seen |= {p.source.message_id for p in recalled.passages if p.source.message_id is not None}
    # Mnemo's own earlier replies are not recalled: the bundled model copied them, mistakes and
    # all. Replies imported from elsewhere (another person, ChatGPT) are.
    for message_page in message_pages:
        for hit in message_page.result():
            if (
                len(recalled.messages) < MESSAGES
                and not (hit.role == "assistant" and hit.name == SEND_MESSAGE)
                and not hit.weak
                and hit.id not in seen
                and not _says_nothing_more(hit, message)
                and not _only_asks(hit, message)
                and not only_pleasantries(hit.text)
            ):
                seen.add(hit.id)
                recalled.messages.append(hit)
    recalled.replaced = replaced_facts(mnemo, recalled.facts)
    _leave_out_replaced(recalled)
    _leave_out_restated(recalled)
    named = named_in(message)
    if named and not any(recalled.mentions(word) for word in (named, *SAME_THING.get(named, ()))):
        # "What is my sister's name?" is answered only by what mentions a sister: the dog's
        # name, found for "name", was given as the answer.
        return Recalled(query=message, trace=recalled.trace)
    if named in RELATIVES and _ASKS_A_NAME.search(message) and not recalled.names(named):
        # "What's my husband's name?" after "We live on Elm Street, me and my husband": memory
        # mentions him and holds no name (the bundled model answered "your husband").
        return Recalled(query=message, trace=recalled.trace)
    return recalled


def _says_nothing_more(hit: MessageHit, message: str) -> bool:
    """Whether ``hit`` is the person saying or asking what ``message`` does, or less: no
    record. A reply recited it ("On 5 December you said: Where does Ines live?"), and after
    months every greeting found the last one ("On 30 April you said: Hi!"), which made each
    turn longer and the bundled model lost ("I'm not sure how to answer that")."""
    if hit.role != "user":
        return False
    asked = query_terms(message, max_terms=10**6)
    return all(
        any(same_word(word, other) for other in asked)
        for word in query_terms(hit.text, max_terms=10**6)
    )


_ASKED_BEFORE = re.compile(r"\b(?:ask|asked|asking|question|questions)\b", re.IGNORECASE)
_SENTENCE_ENDS = re.compile(r"(?<=[.!?])\s+")


def _only_asks(hit: MessageHit, message: str) -> bool:
    """Whether ``hit`` is a question of the person's and nothing more: it tells memory nothing.
    Recalled, it was taken for the answer ("When is the dentist?" found "On 30 June you said:
    When is your dentist appointment?" that same morning, and the reply gave 30 June). Kept
    when the person asks what they asked."""
    sentences = _SENTENCE_ENDS.split(hit.text.strip())
    return (
        hit.role == "user"
        and all(sentence.endswith("?") for sentence in sentences)
        and not _ASKED_BEFORE.search(message)
    )


_ASKS_A_NAME = re.compile(r"\b(?:name|names|called|named)\b|^\W*who\b", re.IGNORECASE)


def replaced_facts(mnemo: Mnemo, facts: list[Fact]) -> dict[int, list[Fact]]:
    """What each of ``facts`` replaced, oldest first, the whole chain (Ines lived in Ghent, then
    Bruges, before Antwerp)."""
    replaced: dict[int, list[Fact]] = {}
    for fact in facts:
        history = mnemo.knowledge.history(fact.subject)
        earlier: list[Fact] = []
        newer = {fact.id}  # Krakow, then Aarhus, then Lisbon: both came before Lisbon
        while found := [
            old for old in history if old.superseded_by in newer and old not in earlier
        ]:
            earlier = found + earlier
            newer = {old.id for old in found}
        earlier = [old for old in earlier if old.predicate == fact.predicate]
        if earlier:
            replaced[fact.id] = earlier
    return replaced


def _leave_out_replaced(recalled: Recalled) -> None:
    """Messages and notes that state a value a recalled fact has since replaced ("My sister
    lives in Ghent", after "Ines moved to Antwerp") are history: shown beside the current fact,
    the bundled model answered with them."""
    old = {name_words(fact.object) for facts in recalled.replaced.values() for fact in facts}
    current = {name_words(f.object) for f in recalled.facts if f.id in recalled.replaced}

    def states_old(text: str) -> bool:
        words = name_words(text)
        return any(value <= words for value in old) and not any(value <= words for value in current)

    recalled.messages = [hit for hit in recalled.messages if not states_old(hit.text)]
    recalled.passages = [p for p in recalled.passages if not states_old(p.text)]


def _leave_out_restated(recalled: Recalled) -> None:
    """Messages that say again what the note already says: the same words as a note or an
    earlier message, or only facts a recalled fact holds ("On 6 June you said: I prefer dogs
    over cats" beside "You prefer dogs"). After months the same thing is said many times; each
    line of it made every prompt longer (the last days of six months evaluated about three times
    the prompt tokens a turn of the first day did) and told the model nothing more."""
    said = {duplicate_key(own_words(p.text) or p.text) for p in recalled.passages}
    kept: list[MessageHit] = []
    for hit in recalled.messages:
        key = duplicate_key(hit.text)
        if key in said or (hit.role == "user" and _holds_only(hit.text, recalled.facts)):
            continue
        said.add(key)
        kept.append(hit)
    recalled.messages = kept


def _holds_only(text: str, facts: list[Fact]) -> bool:
    """Whether ``text`` states facts of the person, each held by one of ``facts``, and says
    nothing more. "My sister Ines lives in Bologna" says more than "Your sister is Ines" and
    "Ines lives in Bologna" apart: it ties the sister to the home a question asks of."""
    found = facts_in(text, clock.today())
    if any(c.subject != USER for c in found):
        return False
    held = [
        c
        for c in found
        if any(
            f.subject_is(c.subject)
            and f.predicate == c.predicate
            and restates(c.predicate, f.object, c.object)
            for f in facts
        )
    ]
    return (
        bool(found)
        and len(held) == len(found)
        and not said_beyond(text, [c.sentence() for c in found])
    )


def name_words(text: str) -> frozenset[str]:
    return frozenset(word.casefold() for word in re.findall(r"[\w'-]+", text))


# The words a question asks for a relation by, when the fact's own words are not among them
# ("What's my job?" asks for "User works as a nurse").
RELATION_WORDS: dict[str, list[str]] = {
    "works_at": [  # "What's my job?" asks what they work as (``job_title``), not where
        "work",
        "employer",
        "company",
        "hospital",
        "office",
        "school",
        "firm",
        "where",
    ],
    "job_title": ["work", "job", "living", "profession", "occupation"],
    "lives_in": ["live", "home", "city", "where"],
    "allergic_to": ["allergy", "allergies", "eat", "avoid"],
    "diet": ["diet", "eat", "food", "meat"],
    "birthday": ["born", "birth", "when"],
    "born_on": ["birthday", "when"],
    "born_in": ["where", "from"],
    "name": ["called", "who"],
}


def facts_for(mnemo: Mnemo, text: str, shown: set[int]) -> list[Fact]:
    """The current facts about whom and what ``text`` names, that the model does not see yet,
    those that share the message's words first (a small model answers "What am I allergic
    to?" with the first line it reads), the newest first among equals."""
    facts: list[Fact] = []
    for entity in mnemo.knowledge.mentioned(text, limit=ENTITIES):
        for fact in mnemo.knowledge.facts(entity.name, limit=FACTS_READ):
            if fact.id not in shown and fact not in facts:
                facts.append(fact)
    words = asked_terms(text)
    # "Where does my sister live?": the facts of the sister the user's facts name.
    for fact in list(facts):
        if fact.predicate in RELATIVES and any(same_word(fact.predicate, w) for w in words):
            for theirs in mnemo.knowledge.facts(fact.object, limit=FACTS_READ):
                if theirs.id not in shown and theirs not in facts:
                    facts.append(theirs)

    def shared(fact: Fact) -> int:
        said = query_terms(f"{fact.sentence()} {fact.predicate}", max_terms=10**6)
        said += RELATION_WORDS.get(fact.predicate, [])
        return sum(any(same_word(word, other) for other in said) for word in words)

    # Only facts that share the message's words: after "What instrument do I own?", "The
    # user's mother is Rosa" was copied as the answer.
    relevant = [fact for fact in facts if shared(fact) and not _asks_of_study(text, fact)]
    return sorted(relevant, key=shared, reverse=True)[:FACTS]


_STUDIED = re.compile(
    r"\b(?:go|went|gone|attend(?:ed)?|stud(?:y|ied)|graduated?|enrol(?:l?ed)?)\b", re.IGNORECASE
)
_WORKED = re.compile(r"\b(?:work\w*|jobs?|employ\w*|teach\w*)\b", re.IGNORECASE)


def _asks_of_study(question: str, fact: Fact) -> bool:
    """Whether ``question`` asks where the person studied, which their workplace does not
    answer: "Which school did I go to?" got "You work at Contoso" ("school" is a workplace's
    word too: a teacher works at one)."""
    return (
        fact.predicate == "works_at"
        and bool(_STUDIED.search(question))
        and not _WORKED.search(question)
    )


# -- repeated replies ---------------------------------------------------------------------------


def similarity(a: str, b: str) -> float:
    return difflib.SequenceMatcher(None, a.casefold(), b.casefold(), autojunk=False).ratio()


REPEATED = "repeated an earlier reply or its shape"


def _opening(reply: str) -> str:
    """A reply's first sentence, without the frame it copied."""
    return SENTENCE_END.split(strip_frame(reply).strip(), maxsplit=1)[0]


class ReplyStream:
    """Passes a streamed reply on as the person should read it, sentence by sentence, without
    the frame it copied (``grounding.strip_frame``) and only up to where it starts looping
    (``grounding.loop_start``: ``on_stop`` is called then, to stop generating). It holds the
    reply back while it reads like the start of one of ``earlier`` (the conversation's replies),
    so that a copy of an earlier reply is never shown (``repeats`` then tells the turn to write
    another), and all of it when ``hold`` (a reply checked against memory before it is shown).
    ``released`` says whether any of it was shown.

    ``answered`` reads it there too, and generating stops once it has answered the question
    (``Grounds.up_to_answer``).

    ``doomed`` reads the reply at each sentence's end and says why no ending could make it
    fit (a value from nowhere is stated, whatever follows): generating stops there too
    (``failed``), and the turn writes another draft without waiting for this one to end. So
    it does when the reply opens with the shape of an earlier reply's opening sentence ("That's
    a wonderful way to celebrate your move." after "…your birthday."): a person reads the
    template in the first words, and the bundled model then went on as it did before."""

    def __init__(
        self,
        earlier: list[str],
        forward: Callable[[str], None],
        *,
        hold: bool = False,
        on_stop: Callable[[], None] | None = None,
        doomed: Callable[[str], str | None] | None = None,
        answered: Callable[[str], bool] | None = None,
    ) -> None:
        # Short replies too: the bundled model answered ten messages in a row with "Hallo!".
        self._earlier = [reply.casefold() for reply in earlier if reply.strip()]
        self._forward = forward
        self._hold = hold
        self._on_stop = on_stop
        self._doomed = doomed
        self._answered = answered
        self.text = ""  # as generated, up to a loop
        self.ended = False  # read no further: a loop began, or the answer was given
        self.failed: str | None = None  # why it was stopped before its end
        self._checked = 0  # how much of it ``doomed`` has read
        self._shown = ""
        self._like_earlier = bool(self._earlier)
        self._openings = [_opening(reply) for reply in self._earlier]

    @property
    def released(self) -> bool:
        return bool(self._shown)

    def feed(self, piece: str) -> None:
        if self.ended or self.failed:
            return
        self.text += piece
        cut = loop_start(self.text)
        if cut is not None:
            self.text = self.text[:cut]
            self.ended = True
            self._stop()
            return
        end = max(self.text.rfind(mark) for mark in (". ", "! ", "? ", "\n"))
        if end > self._checked:
            if not self._checked and self._opens_like_earlier(_opening(self.text)):
                self.failed = REPEATED
            elif self._doomed is not None:
                self.failed = self._doomed(strip_frame(self.text[: end + 1]))
            self._checked = end
            if self.failed:
                self._stop()
                return
            if self._answered is not None and self._answered(strip_frame(self.text[: end + 1])):
                self.text = self.text[: end + 1]
                self.ended = True
                self._stop()
                return
        if self._hold:
            return
        if self._like_earlier:
            self._like_earlier = self._like_an_earlier_start()
            if self._like_earlier:
                return
        if end > 0:
            self._show(strip_frame(self.text[: end + 1]))

    def _stop(self) -> None:
        if self._on_stop is not None:
            self._on_stop()

    def _show(self, clean: str) -> None:
        if clean.startswith(self._shown) and len(clean) > len(self._shown):
            self._forward(clean[len(self._shown) :])
            self._shown = clean

    def _opens_like_earlier(self, opening: str) -> bool:
        """Whether a reply's first sentence is an earlier reply's, or its shape (one of
        ``SHAPE_WORDS`` words or more: "Sure!" may open many)."""
        if len(opening.split()) < SHAPE_WORDS:
            return False
        return any(
            similarity(opening, earlier) >= REPEAT_SIMILARITY or same_shape(opening, earlier)
            for earlier in self._openings
        )

    def _like_an_earlier_start(self) -> bool:
        text = self.text.casefold()
        for reply in self._earlier:
            start = reply[: len(text)]
            matcher = difflib.SequenceMatcher(None, text, start, autojunk=False)
            if matcher.quick_ratio() >= REPEAT_SIMILARITY and matcher.ratio() >= REPEAT_SIMILARITY:
                return True
        return False

    def repeats(self, reply: str) -> bool:
        """Whether the finished ``reply`` repeats an earlier one, or its shape with a phrase
        changed (the bundled model answered five messages "I'm sorry, I'm not familiar with
        the term "X" but…")."""
        return any(
            similarity(reply, earlier) >= REPEAT_SIMILARITY or same_shape(reply, earlier)
            for earlier in self._earlier
        )

    def show(self, reply: str) -> bool:
        """Show the rest of the finished ``reply``; False when what was shown so far is not its
        start (then the caller withdraws it and shows the whole reply again)."""
        if not reply.startswith(self._shown):
            return False
        self._show(reply)
        return True


# -- the memory step ---------------------------------------------------------------------------

_SENTENCE = re.compile(r"(?<=[.!?;])\s+|\n+")
# A full stop after these ends no sentence: "I work at St. Mary's hospital".


def _sentences(text: str) -> list[str]:
    sentences: list[str] = []
    for piece in _SENTENCE.split(text.strip()):
        if sentences and ABBREVIATION.search(sentences[-1]):
            sentences[-1] += " " + piece
        else:
            sentences.append(piece)
    return [without_tag_question(sentence) for sentence in sentences]


TAG_WORDS = 5  # a tag question is this short at most ("isn't that cute?")


@functools.cache
def _tag_openers() -> frozenset[str]:
    lines = resource_path("language/tag_questions.txt").read_text("utf-8").splitlines()
    return frozenset(line.strip() for line in lines if line.strip() and not line.startswith("#"))


def without_tag_question(sentence: str) -> str:
    """A statement with a tag question after it ("I have a cat called Olive, isn't that
    cute?") as the statement it is ("I have a cat called Olive."); any other sentence as it
    is. The tag's first words are data (``language/tag_questions.txt``)."""
    stripped = sentence.rstrip()
    if not stripped.endswith("?") or "," not in stripped:
        return sentence
    head, tag = stripped.rsplit(",", 1)
    words = tag.strip().rstrip("?").replace("\u2019", "'").lower().split()
    if not words or len(words) > TAG_WORDS or words[0] not in _tag_openers():
        return sentence
    if len(head.split()) < 3:  # "Right, is it?": no statement before the tag
        return sentence
    return head.rstrip() + "."


_CLAUSE = re.compile(r"(,?\s+(?:and|but)\s+)(?=(?:I|I'm|I've|my|My|we|We|our|Our)\b)")


def clauses(sentence: str) -> list[str]:
    """A sentence's clauses, split before "and I", "but my"…; a piece too short to be a
    clause is the subject of the next ("Alex and I are together now" is one clause, not
    "Alex" and "I are together now")."""
    pieces = _CLAUSE.split(sentence)  # text, joiner, text, …
    found = [pieces[0]]
    for joiner, text in zip(pieces[1::2], pieces[2::2], strict=True):
        if len(found[-1].split()) < 3:
            found[-1] += joiner + text
        else:
            found.append(text)
    return found


_FIRST_PERSON = re.compile(
    r"\b(?:I|I'm|I've|I'd|I'll|my|mine|me|myself|we|we're|we've|our|us)\b", re.IGNORECASE
)
# Words people open a sentence with that are not part of what they state ("Actually,", "Oh
# wait, sorry,", "Scratch that,", "Quick update:"): "Actually Tunde moved to Bristol" is about
# Tunde, not about someone called "Actually Tunde".
_OPENER = re.compile(
    r"^(?:(?:actually|oh|ah|well|so|sorry|ok(?:ay)?|also|and|but|btw|by the way|no wait|oh wait|"
    r"wait|no(?=[,!.])|scratch that|quick update|update|fyi|correction|oops|hey|um+|uh+|"
    r"change of plans?|my mistake|my bad)\b[,:!.]?\s*)+",
    re.IGNORECASE,
)
# A statement with its "I" left out, as people write in a hurry: "Been vegan since 2019.",
# "Can't stand cilantro.", "Love hiking."
_ELIDED_I = re.compile(
    r"^(?:just\s+|also\s+|still\s+|really\s+)?(?:been|can't|cannot|don't|never|always|"
    r"love|hate|like|prefer|got|have|had|work|worked|live|lived|moved|started|joined|grew up)\b",
    re.IGNORECASE,
)
# "Tell me a joke", "Help us plan a trip": asked of the assistant, nothing about the person.
_REQUEST = re.compile(
    r"^(?:please\s+)?(?:tell|give|show|help|let|remind|send|find|make|get|teach|ask|call|write)"
    r"\s+(?:me|us)\b",
    re.IGNORECASE,
)
_NAMED_SUBJECT = regex.compile(
    rf"^(?P<name>{CAPITAL}[\w'-]+(?:\s+{CAPITAL}[\w'-]+)?)(?:'s)?\s+[a-z]"
)
_PRONOUN_SUBJECT = re.compile(r"^(?P<pronoun>she|he)\b(?=\s+[a-z])", re.IGNORECASE)


def without_opener(text: str) -> str:
    """``text`` without the words it opens with that state nothing (``_OPENER``)."""
    return _OPENER.sub("", text.strip()).strip()


def first_person(clause: str) -> str | None:
    """The clause as a first-person statement: as it is, with its left-out "I" put back
    ("Been vegan since 2019" -> "I've been vegan since 2019"), or None when it is not one."""
    bare = without_opener(clause)
    if _REQUEST.match(bare):
        return None
    if _FIRST_PERSON.search(clause):
        return clause
    match = _ELIDED_I.match(bare)
    if match is None:
        return None
    verb = bare[: match.end()].split()[-1].casefold()
    joiner = "I've " if verb == "been" else "I "
    return joiner + bare[0].lower() + bare[1:]


def user_statements(text: str, names: Callable[[str], bool] | None = None) -> list[str]:
    """The clauses of a user's message that state something about them: in the first person
    (also with the "I" left out), stating a fact about them ("being a vet in Galway is never
    boring"), giving a date of their life (``scheduled``), or about someone ``names`` knows
    ("Ines moved to Antwerp", "she moved to Antwerp" when ``names("she")``): the only things
    the memory step may keep.
    Questions and short greetings are left out."""
    statements: list[str] = []
    for sentence in _sentences(text):
        if sentence.rstrip().endswith("?"):
            continue
        for clause in clauses(sentence):
            clause = clause.strip().rstrip(".!;,").strip()
            words = clause.split()
            if not 3 <= len(words) <= 40 or clause in statements:
                continue
            about_them = names is not None and about_someone(clause, names)
            if (
                first_person(clause) is not None
                or about_them
                or scheduled(clause)
                or any(c.subject == USER for c in facts_in(clause, clock.today()))
            ):
                statements.append(clause)
    return statements[:STATEMENTS]


def about_someone(clause: str, names: Callable[[str], bool]) -> bool:
    """Whether ``clause`` tells of a person ``names`` knows, by name or as "she"/"he"."""
    bare = without_opener(clause)
    match = _NAMED_SUBJECT.match(bare) or _PRONOUN_SUBJECT.match(bare)
    return match is not None and names(match[1].removesuffix("'s"))  # "Sven's mum lives…"


def named_subject(clause: str, last_named: str | None) -> str:
    """The clause without its opener, "she"/"he" read as ``last_named`` (the person the
    conversation spoke of last): "actually she moved to Antwerp" -> "Ines moved to Antwerp"."""
    bare = without_opener(clause)
    if last_named and _PRONOUN_SUBJECT.match(bare):
        return _PRONOUN_SUBJECT.sub(last_named, bare, count=1)
    return bare[:1].upper() + bare[1:]


# What a person says in passing about the moment, or asks of the assistant, rather than a lasting
# fact about their life: thanks, feelings of the moment, thinking aloud, requests, what happens
# today. Everything else they state in the first person is kept.
_PASSING = re.compile(
    r"^(?:ok(?:ay)?|so|well|oh|hmm|yes|yeah|no|thanks?|thank you|please)?[,!.\s]*"
    r"(?:i\s+(?:think|guess|suppose|hope|wonder|wondered|was wondering|mean|see|agree|bet|"
    r"believe|feel like|would like|'d like|want you|need you|need (?:some )?help|need a|"
    r"appreciate|just wanted|wanted to ask|have a question|am asking|'m asking)\b"
    r"|i(?:'m| am)\s+(?:just\s+|so\s+|really\s+|very\s+|a bit\s+|not\s+)?"
    r"(?:fine|good|great|ok(?:ay)?|alright|well|tired|bored|sleepy|hungry|back|here|done|"
    r"ready|sorry|glad|happy to|curious|confused|not sure|wondering|looking for|trying to|"
    r"thinking|asking)\b"
    r"|i(?:'d| would) (?:like|love) (?:a|an|some|to know|to ask|help|you)\b"
    r"|(?:can|could|would|will) you\b|let me\b|help me\b|tell me\b|show me\b"
    r"|give me\b(?!\s+[\w ]{1,30}\s+over\b))",  # "Give me tea over coffee" is a taste
    re.IGNORECASE,
)
_OF_THE_MOMENT = re.compile(
    r"\b(?:today|tonight|right now|just now|this morning|this afternoon|this evening)\b",
    re.IGNORECASE,
)
# News said on its day that lasts: "I started a new job at Wingtip today!", "We lost Tofu today".
_LASTING_NEWS = re.compile(
    r"\b(?:moved|relocated|started (?:a|my) (?:new )?job|new job|first day at|joined|adopted|"
    r"got married|got engaged|died|passed away|we lost|i lost|had to say goodbye|"
    r"(?:from|as of|starting) today)\b",
    re.IGNORECASE,
)
# A death or loss the person tells of: "my cat Tofu died", "We lost Tofu today", "Grandpa
# Joe passed away".
_ENDED = regex.compile(
    rf"\b(?P<a>{CAPITAL}{LETTERS}+)(?:,\s+my\s+\w+,)?\s+(?:has\s+)?(?:died|passed away)\b"
    rf"|\b(?:[Ww]e|I)\s+(?:just\s+)?lost\s+(?:my\s+\w+\s+|our\s+\w+\s+)?"
    rf"(?P<b>{CAPITAL}{LETTERS}+)\b"
    # "I had to say goodbye to Tofu today", not "… to Sam at the airport".
    r"|\b(?:[Ww]e|I)\s+(?:just\s+)?had\s+to\s+(?:say\s+goodbye\s+to|put\s+down|let\s+go\s+of)\s+"
    rf"(?:my\s+\w+\s+|our\s+\w+\s+)?(?P<c>{CAPITAL}{LETTERS}+)\b"
    r"(?!\s+(?:at|until|for|before|after|on)\b)"
)


def ended_names(text: str) -> list[str]:
    """Who or what the person says died or was lost ("Tofu" in "We lost Tofu today")."""
    return [m["a"] or m["b"] or m["c"] for m in _ENDED.finditer(text)]


# A wish or a hypothetical: "If I ever moved to Berlin I'd learn German" says nothing about where
# the person lives.
_MUSING = re.compile(
    r"^(?:if|suppose|imagine)\b|\b(?:if (?:i|we) (?:ever|had|could|were|won)|maybe (?:one day|"
    r"someday|some day)|one day (?:i|we)(?:'ll| will| might)|some ?day (?:i|we)|i wish|"
    r"i'd love to|i would love to|i dream|dreaming of|(?:i|we) might|i could see myself|if only|"
    r"(?:i|we) (?:sometimes |often )?(?:picture|imagine|fantasi[sz]e|daydream)|"
    r"wouldn'?t it be (?:nice|great|lovely|amazing))\b",
    re.IGNORECASE,
)
# A change the person states about their own life: what it replaces is superseded at once.
_CHANGE = re.compile(
    r"\b(?:actually|moved|relocated|the move|now|any ?more|no longer|switched|changed|instead|"
    r"these days|joined|started|scratch that|no wait|i meant|new (?:place|home|flat|house|job)|"
    r"(?:from|as of) today)\b",
    re.IGNORECASE,
)
NOTE_TAG = "said by you"  # the tag of notes kept from the person's own words
REPLACED_TAG = "replaced"  # the tag of a note a later statement replaced: history now


def lasting(statement: str) -> bool:
    """Whether a statement tells something lasting about the person or their people (their
    health, people, work, home, plans, likes, things) rather than a passing remark, a request
    or a musing."""
    of_the_moment = _OF_THE_MOMENT.search(statement) and not _LASTING_NEWS.search(statement)
    return not (_PASSING.search(statement) or of_the_moment or _MUSING.search(statement))


def replaces(new: str, old: str, resolve: Callable[[str], object]) -> bool:
    """Whether the statement ``new`` replaces the older statement ``old`` (``Keeper``): both
    about the same person (a name ``resolve`` knows in both, or neither naming anyone and both
    in the first person), on the same topic (a relation of knowledge both state, or a word
    besides names and values in both), and each holding a value (a name or number) the other
    does not."""
    relations = [{c.predicate for c in facts_in(text, clock.today())} for text in (new, old)]
    if relations[0] and relations[1] and not relations[0] & relations[1]:
        return False  # a move replaces no note of a pet ("news" and "new" are no topic)
    new_values, old_values = stated_values(new), stated_values(old)
    people = {v for v in new_values & old_values if resolve(v) is not None}
    if not people and not (
        _FIRST_PERSON.search(new) and _FIRST_PERSON.search(old) and not new_values & old_values
    ):
        return False
    if not (new_values - old_values and old_values - new_values):
        return False
    ignored = new_values | old_values

    def topic(text: str) -> list[str]:  # its words, without names, values and words of change
        words = query_terms(_CHANGE.sub(" ", text), 10**6)  # "these days" is no topic of "day"
        return [w for w in words if w not in ignored]

    topic_new, topic_old = topic(new), topic(old)
    return any(same_word(a, b) for a in topic_new for b in topic_old)


def states_a_change(text: str) -> bool:
    """Whether the person says that something changed ("moved", "not … any more", "actually")."""
    return bool(_CHANGE.search(text))


# -- corrections --------------------------------------------------------------------------------

_WEEKDAY = r"(?:mon|tues|wednes|thurs|fri|satur|sun)days?"
_ORDINAL = r"\d{1,2}(?:st|nd|rd|th)"
_DAY = (
    rf"(?:\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{MONTH}|{MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?"
    rf"|{_ORDINAL})"
)
_TIME = r"\d{1,2}(?::\d{2})?\s*(?:am|pm)|\d{1,2}:\d{2}"
# The kinds of value a correction moves ("to Sunday", "to the 21st", "to 3pm"), each matched
# whole: the value a note holds of the same kind is the one replaced.
VALUE_KINDS = {
    "weekday": re.compile(rf"\b{_WEEKDAY}\b", re.IGNORECASE),
    "day": re.compile(rf"\b(?:{_DAY})\b", re.IGNORECASE),
    "time": re.compile(rf"\b(?:{_TIME})\b", re.IGNORECASE),
}
_VALUE = rf"(?:{_WEEKDAY}|{_DAY}|{_TIME})"
_VALUE_WORD = re.compile(rf"(?:{_WEEKDAY}|{MONTH}|\d+\w*)$", re.IGNORECASE)

# "The wedding's on 12 September", "The dentist is on Thursday": a date in the
# person's life, said without "I" or "my" (not "The shop is closed on Sundays", which has no day
# of its own, nor a correction "…, not the 12th", kept as one).
_SCHEDULED = re.compile(
    r"^(?:the|our)\s+(?:[\w'-]+\s+){0,5}?[\w'-]+(?:'s|\s+is|\s+are|\s+was)\s+"
    rf"(?:(?:now|still|booked|set|due|planned)\s+)?(?:on|for)\s+(?:the\s+)?(?:{_DAY}|{_WEEKDAY})\b"
    r"(?!.*,\s*not\b)",
    re.IGNORECASE,
)


def scheduled(clause: str) -> bool:
    """Whether ``clause`` gives the date of something in the person's life (``_SCHEDULED``)."""
    return bool(_SCHEDULED.match(without_opener(clause)))


_SAID_VALUE = r"[\w'.&-]+(?:\s+[\w'.&-]+){0,3}?"
# "it's Thursday, not Tuesday", "Sorry, I meant KPMG, not Deloitte", "the wedding is on 19
# September, not the 12th".
_NEW_NOT_OLD = re.compile(
    r"\b(?:it's|it is|it was|i meant|i mean|meant|make that|that's|that is|is|are|'s)\s+"
    rf"(?:on\s+|at\s+|in\s+)?(?:the\s+)?(?P<new>{_SAID_VALUE}),?\s+not\s+"
    rf"(?:on\s+|at\s+|in\s+)?(?:the\s+)?(?P<old>{_SAID_VALUE})\s*[.!]*$",
    re.IGNORECASE,
)
# "no wait, it's the 14th", "sorry, make that 3pm": a value put right without the old one.
_ONLY_NEW = re.compile(
    rf"^(?:it's|it is|it'll be|it will be|make (?:it|that))\s+(?:on\s+|at\s+)?(?:the\s+)?"
    rf"(?P<new>{_VALUE})\s*[.!]*$",
    re.IGNORECASE,
)
_MARKED = re.compile(
    r"^(?:oh\s+)?(?:no\s+)?(?:actually|wait|sorry|scratch that|correction|oops|change of plans?|"
    r"my mistake|my bad)\b|\b(?:from now on|now|these days|any ?more)\b",
    re.IGNORECASE,
)
_MARKED_WORDS = 14  # a marked sentence longer than this says more than a value put right
# "Filip switched from violin to cello", "we moved from Leeds to York".
_FROM_TO = re.compile(
    r"\b(?:switched|moved|changed|went|swapped|transferred|upgraded)\s+from\s+(?:the\s+)?"
    rf"(?P<old>{_SAID_VALUE})\s+(?:to|for)\s+(?:the\s+)?(?P<new>{_SAID_VALUE})"
    r"(?=\s+(?:last|this|next|in|on|at|since|when|because|after|a|an|the)\b|\s*[.!,]|\s*$)",
    re.IGNORECASE,
)
# "training moved to Sunday", "the vet moved it to the 21st", "the meeting got pushed to 3pm".
_MOVED = re.compile(
    r"^(?P<topic>[\w' ]{2,40}?)\s+(?:has\s+|have\s+|was\s+|is\s+|got\s+)?"
    r"(?:moved|changed|switched|shifted|pushed|rescheduled)\s+(?:it\s+|that\s+)?(?:to|until)\s+"
    rf"(?:the\s+)?(?P<new>{_VALUE})\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Correction:
    """Something said before, put right: ``new`` replaces ``old`` (or, with no ``old``, the
    value of ``new``'s kind in the newest note about ``topic``)."""

    new: str
    old: str | None = None
    topic: str = ""

    def __str__(self) -> str:
        return f"{self.new}, not {self.old}" if self.old else self.new


def correction_in(text: str) -> Correction | None:
    """The correction a message makes, in the ways people say them: "it's X, not Y", "no wait,
    it's the 14th", "scratch that, training moved to Sunday"."""
    for sentence in _sentences(text):
        sentence = sentence.strip()
        if any(c.predicate == PREFERS for c in facts_in(sentence, clock.today())):
            continue  # a taste said in contrast ("Dogs is my thing, not cats") puts nothing right
        if match := _NEW_NOT_OLD.search(sentence):
            new, old = match["new"].strip(" .,"), match["old"].strip(" .,")
            if new.casefold() != old.casefold():
                return Correction(new, old)
        if match := _FROM_TO.search(sentence):
            return Correction(match["new"].strip(" .,"), match["old"].strip(" .,"))
        bare = without_opener(sentence)
        if _MARKED.search(sentence) and (match := _ONLY_NEW.match(bare)):
            return Correction(match["new"])
        if (marked := _marked_value(sentence)) is not None:
            return marked
        if (match := _MOVED.match(bare)) and not match["topic"].casefold().startswith(
            ("i ", "we ")
        ):
            return Correction(match["new"], topic=match["topic"])
    return None


def _marked_value(sentence: str) -> Correction | None:
    """A short sentence marked as a change ("Actually book club is now the first Tuesday",
    "oh no wait, the vet said the 5th") that holds one value of a kind: that value, about the
    sentence's other words."""
    if not _MARKED.search(sentence) or len(sentence.split()) > _MARKED_WORDS:
        return None
    found = [m for kind in VALUE_KINDS.values() for m in kind.finditer(sentence)]
    if len({m[0].casefold() for m in found}) != 1:
        return None
    topic = without_opener(sentence[: found[0].start()] + sentence[found[0].end() :])
    return Correction(found[0][0], topic=topic)


def value_kind(value: str) -> str | None:
    for kind, pattern in VALUE_KINDS.items():
        if pattern.fullmatch(value.strip()):
            return kind
    return None


# The words in which facts of knowledge memory are stated, and when: a statement made only of
# these and the fact's own words says nothing more than the fact.
_FACT_WORDS = frozenset(
    """live lived lives living moved move relocated based work works worked working job
    called named name born birthday allergic last month week year ago now recently just
    yesterday since new""".split()
)


def said_beyond(statement: str, facts: list[str]) -> bool:
    """Whether ``statement`` says more than the knowledge facts read from it (so that it is
    kept as a note as well): more than one content word that no fact holds."""
    held = {word[:STEM] for fact in facts for word in query_terms(fact, max_terms=10**6)}
    held |= {word[:STEM] for word in _FACT_WORDS}
    left = [word for word in query_terms(statement, max_terms=10**6) if word[:STEM] not in held]
    return len(left) > 1


CORE_LINE_CHARS = 120
# What happened once, or happens on a day: an event or an appointment ("I got a letter from my
# bank", "My dentist appointment is on Tuesday") is kept as a note, and is no lasting fact about
# the person for core memory.
_EVENT = re.compile(
    r"\b(?:i|we)\s+(?:just\s+|recently\s+)?(?:got|bought|went|saw|met|did|made|took|found|lost|"
    r"visited|watched|read|heard|tried|finished|had)\b",
    re.IGNORECASE,
)
_DATED = re.compile(
    rf"\b(?:{_WEEKDAY}|{_DAY}|{_TIME}|tomorrow|tonight|(?:next|last|this) (?:week|month|year))\b",
    re.IGNORECASE,
)


def for_core(statement: str, states_a_fact: bool) -> bool:
    """Whether a kept statement is a lasting fact about the person for the ``human`` block: a
    fact knowledge memory holds, or one that is neither an event nor dated."""
    return states_a_fact or not (_EVENT.search(statement) or _DATED.search(statement))


def says_again(
    line: str, lines: Sequence[str], named_by: Callable[[str], frozenset[str]] | None = None
) -> bool:
    """Whether a line of the human block says what one of ``lines`` says: the same names
    (``named_by``, by default ``names_held``: "Ines, your sister, is in Bologna" and "Your
    sister Ines lives in Bologna"), or the same words in any order. Such a line only makes
    the block, and every prompt, longer."""
    named_by = named_by or names_held
    named = named_by(line)
    words = set(duplicate_key(line).split())
    return any(
        (named and named_by(other) == named)
        or (words and set(duplicate_key(other).split()) == words)
        for other in lines
    )


def names_held(line: str) -> frozenset[str]:
    """The names and values a line holds, as compared ("Ines", "Bologna", "12 May")."""
    return frozenset(name_key(value) for value in stated_values(line))


def core_line(statement: str) -> str:
    """A statement as a short line of the ``human`` block, in the second person, up to its
    first aside: "I'm allergic to peanuts, so I have to be careful" -> "You're allergic to
    peanuts."."""
    said = to_second_person(without_opener(statement) or statement)
    said = re.split(r",?\s+(?:so|because|but|which|though|although)\s+|;|, that's\b", said)[0]
    said = _SINCE_NOW.sub("", said)  # the line has no date: "last month" would go stale
    return as_sentence(said[:CORE_LINE_CHARS].rstrip(" ,"))


_SINCE_NOW = re.compile(
    r",?\s*\b(?:(?:last|this) (?:week|month|year|spring|summer|autumn|fall|winter)"
    r"|in the (?:spring|summer|autumn|fall|winter)|yesterday|today|recently"
    r"|(?:a|one|two|three|a few|\d+) (?:days?|weeks?|months?|years?) ago)\b",
    re.IGNORECASE,
)


def fact_line(statement: str) -> str:
    """How a kept statement reads in the ``human`` block: the user's own words, quoted."""
    return f'The user said: "{statement}."'
