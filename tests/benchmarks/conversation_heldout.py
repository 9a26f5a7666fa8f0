"""The people ``conversation.py`` keeps aside: written before the rules they test were changed,
and never tuned on (``--group heldout``). Their phrasings are everyday ones, unlike the first
group's tidy statements: facts inside chatter, facts given as the answer to a question the
assistant might ask, corrections in passing, corrections about other people, and musings
("if I ever…") that are no facts and must not be kept as such.

The turn kinds are those of ``conversation_people``; ``Muse(text, never)`` is something said
that must leave no stored item holding all of one of ``never``'s word tuples. A value later
corrected is not among the facts that must be kept (its correction replaces it): those Tells
keep the thing's name ("dentist") instead.
"""

from __future__ import annotations

from conversation_people import NOT_SAID, Ask, Document, Muse, Say, Tell, Turn

HELDOUT: dict[str, list[Turn]] = {
    "noor": [
        Say("hey, how's it going"),
        Tell(
            "ugh long week. being a vet in Galway is never boring, that's for sure",
            (("vet",), ("galway",)),
        ),
        Say("any ideas for an easy lunch I can bring to work?"),
        Tell("Oh and my brother Karim lives in Cork.", (("karim",),)),
        Muse("If I ever moved to Lisbon I'd finally learn Portuguese.", (("lisbon",),)),
        Tell("Karim actually moved to Dublin a few weeks ago.", (("dublin",),)),
        Say("what's a good houseplant for a dark flat?"),
        Ask("Where does Karim live?", ("dublin",), old=("cork",)),
        Ask("What do I do for a living?", ("vet",), "new"),
        Ask("Where do I live?", ("galway",), "new", old=("lisbon",)),
        Ask("What's my cat called?", NOT_SAID, "new"),
        Ask("Which city does my brother live in?", ("dublin",), "restart", old=("cork",)),
    ],
    "hugo": [
        Say("Good afternoon!"),
        Say("I need a gift idea."),
        Tell("It's for my niece Clara, she turns ten in June.", (("clara",),)),
        Tell("Football practice is on Wednesdays for me.", (("practice",),)),
        Tell("Scratch that, practice moved to Thursdays.", (("thursday",),)),
        Tell("Been a vegetarian since 2015 btw.", (("vegetarian",),)),
        Say("can you recommend a board game for a family evening?"),
        Ask("When is my football practice?", ("thursday",), old=("wednesday",)),
        Ask("What's my niece called?", ("clara",), "new"),
        Ask("What diet do I follow?", ("vegetarian",), "new"),
        Ask("What's my dog's name?", NOT_SAID, "new"),
        Ask("Remind me, which day is football now?", ("thursday",), "restart", old=("wednesday",)),
    ],
    "mei": [
        Say("Hello Mnemo"),
        Tell("I work at Contoso as a data analyst.", (("contoso",), ("analyst",))),
        Tell("Mushrooms make me feel sick, so I never eat them.", (("mushroom",),)),
        Say("how do I make a pivot table look tidy?"),
        Tell("Quick update: I'm not at Contoso any more, I joined Northwind.", (("northwind",),)),
        Muse("Maybe one day I'll open a bakery.", (("bakery",),)),
        Tell("We live on Elm Street, me and my husband.", (("elm",),)),
        Ask("Where do I work now?", ("northwind",), old=("contoso",)),
        Ask("What food makes me sick?", ("mushroom",), "new"),
        Ask("What street do we live on?", ("elm",), "new"),
        Ask("What's my husband's name?", NOT_SAID, "new"),
        Ask("Which company am I at?", ("northwind",), "restart", old=("contoso",)),
    ],
    "rafael": [
        Document(
            "boiler.md",
            "# Boiler service\n\nThe boiler was serviced on 3 February by Hearth & Co. "
            "The next service is due in February next year. Warranty number: WB-55810.\n",
        ),
        Say("Evening."),
        Tell("My dentist appointment is on the 9th.", (("dentist",),)),
        Tell("no wait, it's the 16th", (("16",),)),
        Tell("I ride a Yamaha scooter to work every day.", (("yamaha",),)),
        Say("What's a good way to keep a scooter running in winter?"),
        Ask("What's the boiler's warranty number?", ("wb-55810", "55810"), document="boiler.md"),
        Ask("When is my dentist appointment?", ("16",), old=("9th",)),
        Ask("What do I ride to work?", ("yamaha", "scooter"), "new"),
        Ask("What's my daughter's name?", NOT_SAID, "new"),
        Ask("Who serviced the boiler?", ("hearth",), "restart", document="boiler.md"),
    ],
    "ingrid": [
        Say("Hi! Grey day here."),
        Tell("My partner Sven is a pilot.", (("sven",),)),
        Tell("Strawberries give me a rash, sadly.", (("strawberr",),)),
        Say("can you suggest a dessert for a dinner party of six?"),
        Tell("Sven's mum lives in Uppsala.", (("uppsala",),)),
        Muse("If we ever had a dog I'd call it Pepper.", (("pepper",),)),
        Tell("At the moment I'm training for a half marathon.", (("marathon",),)),
        Ask("What's my partner's name?", ("sven",)),
        Ask("Which fruit gives me a rash?", ("strawberr",), "new"),
        Ask("What am I training for?", ("marathon",), "new"),
        Ask("What's my dog called?", NOT_SAID, "new"),
        Ask("What does Sven do for work?", ("pilot",), "restart"),
    ],
    "kwame": [
        Say("Yo"),
        Tell(
            "Just got back from my shift at Korle Bu hospital, I'm a radiographer.",
            (("korle bu",), ("radiographer",)),
        ),
        Tell("My daughter Efua started university in Kumasi.", (("efua",),)),
        Say("How can I sleep better after night shifts?"),
        Tell("Oh, Efua switched to a university in Accra actually.", (("accra",),)),
        Tell("Can't stand coriander.", (("coriander",),)),
        Ask("Which hospital am I at?", ("korle bu",)),
        Ask("Where does Efua study?", ("accra",), "new", old=("kumasi",)),
        Ask("What herb do I hate?", ("coriander",), "new"),
        Ask("What's my wife's name?", NOT_SAID, "new"),
        Ask("What is my job?", ("radiographer",), "restart"),
    ],
    "lucia": [
        Say("buongiorno!"),
        Tell("I teach piano lessons from home in Turin.", (("piano",), ("turin",))),
        Say("Can you help me write a toast for my brother Paolo's wedding?"),
        Tell("The wedding's on 12 September.", (("wedding",),)),
        Tell("Sorry, the wedding is on 19 September, not the 12th.", (("19",),)),
        Muse("If I had more time I'd take up painting.", (("painting",),)),
        Ask("When is Paolo's wedding?", ("19",), old=("12 september", "12th")),
        Ask("What do I teach?", ("piano",), "new"),
        Ask("Which city do I live in?", ("turin", "torino"), "new"),
        Ask("What's my sister's name?", NOT_SAID, "new"),
        Ask("What's my brother called?", ("paolo",), "restart"),
    ],
    "ben": [
        Say("hi there"),
        Tell("I drive a 2012 Honda Jazz.", (("jazz",),)),
        Tell("My landlord is called Mr Patel.", (("patel",),)),
        Say("how often should I change my car's oil?"),
        Tell("I'm based in Leicester these days.", (("leicester",),)),
        Tell("I take my coffee black, no sugar.", (("black",),)),
        Ask("What car do I drive?", ("jazz",)),
        Ask("What year is my car?", ("2012",), "new"),
        Ask("Remind me, what's my landlord called?", ("patel",), "new"),
        Ask("What's my girlfriend's name?", NOT_SAID, "new"),
        Ask("Where am I based?", ("leicester",), "restart"),
    ],
}
