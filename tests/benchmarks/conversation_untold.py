"""A fourth group of people (``--group untold``), written on 7 December 2026 before any code of
the understanding issue (73) changed, by a session that had read only the issue's summary of
earlier misses, never this group's replies. It is the data nobody tuned on: run only to
report, never to decide a rule or a table entry, and its failures are read at the end.

Its people say things as people do: names with accents and in other scripts, ties ("my
mother-in-law"), weekly times and their corrections, numbers asked for by kind, things to
avoid said across several messages, what replaced what, visits announced a few turns earlier,
ages. The turn kinds and their meaning are those of ``conversation_heldout``.
"""

from __future__ import annotations

from conversation_people import NOT_SAID, Ask, Document, Muse, Say, Tell, Turn

UNTOLD: dict[str, list[Turn]] = {
    "ines": [
        Say("hola! long day"),
        Tell("I'm getting married to Joaquín next September.", (("joaquín",),)),
        Tell("My mother-in-law-to-be, Dolores, lives in Sevilla.", (("dolores",),)),
        Say("how do I politely decline a wedding vendor?"),
        Tell("Joaquín works as a firefighter.", (("firefighter",),)),
        Ask("Who am I marrying?", ("joaquín",)),
        Ask("What does my fiancé do for a living?", ("firefighter",), "new"),
        Ask("Where does Dolores live?", ("sevilla",), "new"),
        Ask("What's my dog's name?", NOT_SAID, "new"),
        Ask("What's my fiancé's name?", ("joaquín",), "restart"),
    ],
    "kenji": [
        Say("good morning"),
        Tell("My daughter Zoë turns seven in March.", (("zoë",),)),
        Tell("Her piano lessons are on Wednesdays at 4.", (("wednesday",),)),
        Say("any ideas for a seventh birthday party?"),
        Tell("scratch that, piano moved to Thursdays", (("thursday",),)),
        Ask("What day are Zoë's piano lessons?", ("thursday",), old=("wednesday",)),
        Ask("How old is Zoë now?", ("six", "6"), "new"),
        Ask("What's my daughter called?", ("zoë",), "new"),
        Ask("What's my son's name?", NOT_SAID, "new"),
        Ask("When are the piano lessons?", ("thursday",), "restart", old=("wednesday",)),
    ],
    "marit": [
        Say("hei"),
        Tell("Kiwis make my mouth itch, so I stay away from them.", (("kiwi",),)),
        Tell("I've been eating gluten-free since January.", (("gluten",),)),
        Say("what's a quick gluten-free lunch?"),
        Tell("Also, shellfish gives me hives.", (("shellfish",),)),
        Ask("Which fruit do I react to?", ("kiwi",)),
        Ask("What foods should I avoid?", ("kiwi",), "new"),
        Ask("What gives me hives?", ("shellfish",), "new"),
        Ask("What's my partner's name?", NOT_SAID, "new"),
        Ask("What should I stay away from eating?", ("shellfish",), "restart"),
    ],
    "soren": [
        Say("hey"),
        Tell("My twin brother Søren is an architect in Aarhus.", (("søren",),)),
        Tell("I cycle to work every day on an old Gazelle bike.", (("gazelle",),)),
        Say("how do I keep a bike chain from rusting?"),
        Tell("I sold the bike and take the tram instead now.", (("tram",),)),
        Ask("How do I get to work these days?", ("tram",), old=("gazelle",)),
        Ask("What does my twin do?", ("architect",), "new"),
        Ask("What's my brother called?", ("søren",), "new"),
        Ask("What's my mother's name?", NOT_SAID, "new"),
        Ask("What did I switch to instead of cycling?", ("tram",), "restart"),
    ],
    "aiko": [
        Document(
            "clinic.md",
            "# Riverside Family Clinic\n\nDr. Ólafur Jónsson, general practice.\n\n"
            "Opening hours: Monday to Friday, 8:00 to 18:00. Appointments: 020 7946 0321. "
            "Out of hours: call 111.\n",
        ),
        Say("konnichiwa"),
        Tell("My GP is Dr. Ólafur Jónsson.", (("ólafur",),)),
        Tell("My grandmother 佐藤 美咲 lives with us.", (("美咲",),)),
        Say("what's a nice outing with an elderly relative?"),
        Ask(
            "What's the clinic's phone number for appointments?",
            ("020 7946 0321",),
            document="clinic.md",
        ),
        Ask("Who is my doctor?", ("ólafur",), "new"),
        Ask("What is my grandmother's name?", ("美咲",), "new"),
        Ask("What's my cat called?", NOT_SAID, "new"),
        Ask(
            "When does the clinic close?",
            ("18:00", "6 pm", "6pm", "6 p.m."),
            "restart",
            document="clinic.md",
        ),
    ],
    "lukasz": [
        Say("cześć"),
        Tell("My boss Łukasz is visiting from Kraków on Friday.", (("łukasz",),)),
        Tell("I've got 12 days of leave left this year.", (("12",),)),
        Say("how do I plan a team lunch for eight?"),
        Tell("Correction: it's 9 days of leave, I forgot the ones in May.", (("9",),)),
        Ask("Who is visiting on Friday?", ("łukasz",)),
        Ask("How many days of leave do I have left?", ("9", "nine"), "new", old=("12",)),
        Ask("Where is my boss coming from?", ("kraków",), "new"),
        Ask("What's my wife's name?", NOT_SAID, "new"),
        Ask("When is Łukasz visiting?", ("friday",), "restart"),
    ],
    "nadia": [
        Say("evening"),
        Tell("We finally got a puppy, a beagle we named Pistache.", (("pistache",),)),
        Tell("My son Mathéo is allergic to dog hair, sadly.", (("mathéo",),)),
        Say("how do you crate-train a puppy?"),
        Muse("If we had a bigger garden I'd get a second dog.", (("second dog",),)),
        Tell("Pistache weighs 9 kilos already.", (("9",),)),
        Ask("What breed is our puppy?", ("beagle",)),
        Ask("What did we call the puppy?", ("pistache",), "new"),
        Ask("Which of my kids has the allergy?", ("mathéo",), "new"),
        Ask("How much does Pistache weigh?", ("9", "nine"), "new"),
        Ask("What's my husband called?", NOT_SAID, "restart"),
    ],
    "femi": [
        Say("hi there"),
        Tell("I teach chemistry at Brookfield Academy.", (("chemistry",),)),
        Tell("My landlord is putting the rent up to 1,250 a month from April.", (("1,250",),)),
        Say("can you help me plan a lesson on acids?"),
        Tell("My aunt Adaeze is flying in from Enugu on the 14th.", (("adaeze",),)),
        Ask("What subject do I teach?", ("chemistry",)),
        Ask("What will my rent be from April?", ("1,250", "1250"), "new"),
        Ask("Who is flying in on the 14th?", ("adaeze",), "new"),
        Ask("Where is my aunt flying in from?", ("enugu",), "new"),
        Ask("What's my daughter's name?", NOT_SAID, "restart"),
    ],
    "chloe": [
        Say("morning!"),
        Tell("I swapped my morning coffee for matcha a month ago.", (("matcha",),)),
        Tell("My running club meets Tuesdays at 7pm.", (("running",),)),
        Say("what's a good warm-up before a 10k?"),
        Tell("Oh, the club moved its runs to Thursday evenings.", (("thursday",),)),
        Ask("What do I drink in the morning now?", ("matcha",), old=("coffee",)),
        Ask("When does my running club meet?", ("thursday",), "new", old=("tuesday",)),
        Ask("What's my brother's name?", NOT_SAID, "new"),
        Ask("What did I give up for matcha?", ("coffee",), "restart"),
    ],
    "rafael": [
        Say("olá"),
        Tell("My wife Conceição and I just bought a flat in Coimbra.", (("conceição",),)),
        Tell("Our mortgage is 780 euros a month.", (("780",),)),
        Say("tips for a first-time homeowner?"),
        Muse("One day I'd like a little house by the sea in Algarve.", (("algarve",),)),
        Tell("My father-in-law Álvaro is helping us paint this weekend.", (("álvaro",),)),
        Ask("Where is our flat?", ("coimbra",), old=("algarve",)),
        Ask("How much is the mortgage each month?", ("780",), "new"),
        Ask("Who's helping us paint?", ("álvaro",), "new"),
        Ask("What's my wife called?", ("conceição",), "new"),
        Ask("What's my sister's name?", NOT_SAID, "restart"),
    ],
}
