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
import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from engine.functions import SEND_MESSAGE, search_archival, search_conversation, trace_lines
from engine.memory.archival import Passage
from engine.memory.knowledge import RELATIVES, USER, Fact
from engine.memory.recall import MessageHit
from engine.memory.search import STEM, excerpt, query_terms, same_word
from engine.memory.vectors import query_vector
from engine.transcript import SECTION_HEAD, spoken_date

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
# After the facts about what a question names. Without it, deep in a conversation the bundled
# model copied an earlier reply instead (0 of 4 "Where do I live?" phrasings answered "Lyon";
# with it, 4 of 4). Only for questions: after a statement ("I moved to Lyon") the old fact would
# be repeated back.
ANSWER_FROM_FACTS = "Answer with what memory says above."
# When a question about the person finds nothing: without it, the bundled model invented an
# answer to 11 of 12 such questions ("Your son is named Emily").
NOTHING_FOUND = "- Nothing: you have not been told this. Say that you don't know."


REPEAT_SIMILARITY = 0.8  # a reply this similar (difflib) to an earlier one is a repeat
EARLIER_REPLIES = 30  # the conversation's replies a new one is compared with
REPLY_ATTEMPTS = 3
RETRY_TEMPERATURE = 0.7  # a reply written again is sampled, as chat apps sample every reply
# When every attempt repeated an earlier reply: better said plainly than shown a copy.
NO_NEW_REPLY = "I'm not sure how to answer that. Could you say it another way?"
# The prompt's own labels (``message_text``'s notes and results, core memory's block tags): a
# reply that reaches one is reading its prompt back, as the bundled model now and then does.
_PROMPT_ECHO = re.compile(r'\[system note\]|\[Recalled from memory|\[result of |<\w+ chars="')


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

    def __bool__(self) -> bool:
        return bool(self.messages or self.passages or self.facts)

    def mentions(self, word: str) -> bool:
        texts = [fact.sentence() for fact in self.facts]
        texts += [hit.text for hit in self.messages] + [p.text for p in self.passages]
        return any(same_word(word, said) for text in texts for said in query_terms(text, 10**6))

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
        """The section as the model reads it: each hit with its date and where it came from
        (for a question about the user that found nothing, that memory holds nothing)."""
        lines = [SECTION_HEAD]
        if not self:
            return "\n".join([*lines, NOTHING_FOUND])
        for fact in self.facts:
            since = f" (since {spoken_date(fact.valid_from)})" if fact.valid_from else ""
            sentence = fact.sentence()
            if fact.subject == USER:
                sentence = "The user" + sentence.removeprefix(USER)
            # Plainly, with no label: "Known fact: ..." made the bundled model answer "Where do I
            # live?" 0 times in 4 against 4 in 4 without (var.py in the issue 18 note).
            lines.append(f"- {sentence}{since}.")
        for hit in self.messages:
            who = "the user said" if hit.role == "user" else "you said"
            cut = excerpt(hit.text, self.query, HIT_CHARS)
            lines.append(f"- {spoken_date(hit.created_at)}, {who}: {cut}")
        for passage in self.passages:
            source = passage.source.describe() if passage.source.path else "a note"
            lines.append(
                f"- ({spoken_date(passage.created_at)}, from {source}) "
                + excerpt(passage.text, self.query, HIT_CHARS)
            )
        if self.facts and self.query.rstrip().endswith("?"):
            lines.append(ANSWER_FROM_FACTS)
        return "\n".join(lines)


# A question about the person's own life ("What's my…", "Where do I…", "Who is my…"), not a
# request for advice that happens to say "I" ("What should I cook?", "How do I…").
_ABOUT_THE_USER = re.compile(
    r"^(?:(?:what|where|when|who|whom|which|whose)\b(?!.*\b(?:should|could|can|would|might)"
    r"\s+(?:i|we)\b).*\b(?:i|my|me|mine)\b"
    r"|(?:do|does|did|am|have|had|is|are|was|were)\s+(?:i|my)\b"
    r"|how\s+(?:old|many|much|long)\b.*\b(?:i|my|me)\b)",
    re.IGNORECASE,
)


_MY_THING = re.compile(
    r"^(?:what|who|where|when|which)(?:'s|\s+is|\s+are|\s+was|\s+were)\s+my\s+"
    r"(?P<thing>[\w' -]{1,40})\?$",
    re.IGNORECASE,
)


def not_told(question: str) -> str:
    """The reply to a question about the user that memory has nothing on, said by rule: the
    bundled model, told that memory held nothing, still invented an answer to 12 of 12."""
    match = _MY_THING.match(question.strip())
    what = f"your {match['thing'].strip()}" if match else "that"
    return f"I don't know {what} — you haven't told me yet. Tell me, and I'll remember it."


_SPOKEN_DATE = re.compile(r"\b\d{1,2} [A-Z][a-z]+ \d{4}\b")
_NOTE_WORDS = frozenset(
    query_terms(f"{SECTION_HEAD} {ANSWER_FROM_FACTS} the user said you said from a note since")
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
    text = message.strip()
    return text.endswith("?") and bool(_ABOUT_THE_USER.search(text))


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
    seen, shown = set(visible), set(shown_passages or ())
    if mnemo.recall.count() <= len(seen) and not mnemo.archival.count():
        # A new assistant: every message is in view and there are no notes, so only facts can
        # be found (the searches, and embedding the message for them, are skipped).
        recalled.facts = facts_for(mnemo, message, shown_facts or set())
        return recalled
    queries = [message]
    if previous and len(query_terms(message)) < FOLLOW_UP_TERMS:
        # Too few words to stand alone ("How old is she?"): read it with the message before.
        # A longer message is searched alone: the previous one was searched on its own turn
        # and what it found is still in view.
        queries.append(f"{previous} {message}")
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
            if (
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
            ):
                seen.add(hit.id)
                recalled.messages.append(hit)
    named = named_in(message)
    if named and not any(recalled.mentions(word) for word in (named, *SAME_THING.get(named, ()))):
        # "What is my sister's name?" is answered only by what mentions a sister: the dog's
        # name, found for "name", was given as the answer.
        return Recalled(query=message, trace=recalled.trace)
    return recalled


# The words a question asks for a relation by, when the fact's own words are not among them
# ("Where do I work?" asks for "User's job title is nurse").
RELATION_WORDS: dict[str, list[str]] = {
    "works_at": ["work", "job", "employer", "company"],
    "job_title": ["work", "job", "living", "profession", "occupation"],
    "lives_in": ["live", "home", "city", "where"],
    "allergic_to": ["allergy", "allergies", "eat", "avoid"],
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
    words = query_terms(text)

    def shared(fact: Fact) -> int:
        said = query_terms(f"{fact.sentence()} {fact.predicate}", max_terms=10**6)
        said += RELATION_WORDS.get(fact.predicate, [])
        return sum(any(same_word(word, other) for other in said) for word in words)

    # Only facts that share the message's words: after "What instrument do I own?", "The
    # user's mother is Rosa" was copied as the answer.
    relevant = [fact for fact in facts if shared(fact)]
    return sorted(relevant, key=shared, reverse=True)[:FACTS]


# -- repeated replies ---------------------------------------------------------------------------


def similarity(a: str, b: str) -> float:
    return difflib.SequenceMatcher(None, a.casefold(), b.casefold(), autojunk=False).ratio()


class RepeatGuard:
    """Passes a streamed reply on, but holds it back while it reads like the start of one of
    ``earlier`` (the conversation's replies), so that a copy of an earlier reply is never shown:
    ``repeats`` then tells the turn to write another. A new reply diverges within a few words
    and streams from there on. ``released`` says whether any of it was shown."""

    def __init__(self, earlier: list[str], forward: Callable[[str], None]) -> None:
        # Short replies too: the bundled model answered ten messages in a row with "Hallo!".
        self._earlier = [reply.casefold() for reply in earlier if reply.strip()]
        self._forward = forward
        self._text = ""
        self.released = not self._earlier

    def feed(self, piece: str) -> None:
        self._text += piece
        if self.released:
            self._forward(piece)
        elif not self._like_an_earlier_start():
            self.released = True
            self._forward(self._text)

    def _like_an_earlier_start(self) -> bool:
        text = self._text.casefold()
        for reply in self._earlier:
            start = reply[: len(text)]
            matcher = difflib.SequenceMatcher(None, text, start, autojunk=False)
            if matcher.quick_ratio() >= REPEAT_SIMILARITY and matcher.ratio() >= REPEAT_SIMILARITY:
                return True
        return False

    def repeats(self, reply: str) -> bool:
        """Whether the finished ``reply`` repeats an earlier one; if not, what was held back is
        passed on now."""
        if any(similarity(reply, earlier) >= REPEAT_SIMILARITY for earlier in self._earlier):
            return True
        if not self.released:
            self.released = True
            self._forward(self._text)
        return False


# -- the memory step ---------------------------------------------------------------------------

_SENTENCE = re.compile(r"(?<=[.!?;])\s+|\n+")
# A full stop after these ends no sentence: "I work at St. Mary's hospital".
_ABBREVIATION = re.compile(
    r"(?:^|\s)(?:st|dr|mr|mrs|ms|prof|jr|sr|mt|no|vs|etc|e\.g|i\.e|approx|dept|ave|rd)\.$",
    re.IGNORECASE,
)


def _sentences(text: str) -> list[str]:
    sentences: list[str] = []
    for piece in _SENTENCE.split(text.strip()):
        if sentences and _ABBREVIATION.search(sentences[-1]):
            sentences[-1] += " " + piece
        else:
            sentences.append(piece)
    return sentences


_CLAUSE = re.compile(r",?\s+(?:and|but)\s+(?=(?:I|I'm|I've|my|My|we|We|our|Our)\b)")
_FIRST_PERSON = re.compile(r"\b(?:I|I'm|I've|I'd|I'll|my|mine|we|we're|our)\b", re.IGNORECASE)


def user_statements(text: str) -> list[str]:
    """The clauses of a user's message that state something about them in the first person:
    the only things the memory step may keep. Questions and short greetings are left out."""
    statements: list[str] = []
    for sentence in _sentences(text):
        if sentence.rstrip().endswith("?"):
            continue
        for clause in _CLAUSE.split(sentence):
            clause = clause.strip().rstrip(".!;,").strip()
            words = clause.split()
            if 3 <= len(words) <= 40 and _FIRST_PERSON.search(clause) and clause not in statements:
                statements.append(clause)
    return statements[:STATEMENTS]


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
    r"|(?:can|could|would|will) you\b|let me\b|help me\b|tell me\b|give me\b|show me\b)",
    re.IGNORECASE,
)
_OF_THE_MOMENT = re.compile(
    r"\b(?:today|tonight|right now|at the moment|just now|this morning|this afternoon|"
    r"this evening)\b",
    re.IGNORECASE,
)
# "Actually it's Thursday, not Tuesday", "Sorry, I meant KPMG, not Deloitte".
_CORRECTION = re.compile(
    r"\b(?:it's|it is|it was|i meant|i mean|meant|make that|that's|that is)\s+"
    r"(?P<new>[\w'.&-]+(?:\s+[\w'.&-]+){0,3}?),?\s+not\s+(?P<old>[\w'.&-]+(?:\s+[\w'.&-]+){0,3}?)"
    r"\s*[.!]*$",
    re.IGNORECASE,
)
NOTE_TAG = "said by you"  # the tag of notes kept from the person's own words


def lasting(statement: str) -> bool:
    """Whether a first-person statement tells something lasting about the person (their
    health, people, work, home, plans, likes, things) rather than a passing remark."""
    return not _PASSING.search(statement) and not _OF_THE_MOMENT.search(statement)


def correction_in(text: str) -> tuple[str, str] | None:
    """(new, old) when the message corrects something said before ("it's X, not Y")."""
    match = _CORRECTION.search(text.strip())
    if match is None:
        return None
    new, old = match["new"].strip(" .,"), match["old"].strip(" .,")
    return (new, old) if new.casefold() != old.casefold() else None


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


def fact_line(statement: str) -> str:
    """How a kept statement reads in the ``human`` block: the user's own words, quoted."""
    return f'The user said: "{statement}."'
