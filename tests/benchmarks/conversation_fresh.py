"""A third group of people (``--group fresh``), written on 4 December 2026 before the changes
that followed a look at the held-out group's misses. Once the held-out group's replies had been
read, its misses were no longer unseen; this group takes its place as the data nobody tuned on.
It is run only to report, never to decide a rule.

The turn kinds and their meaning are those of ``conversation_heldout``.
"""

from __future__ import annotations

from conversation_people import NOT_SAID, Ask, Document, Muse, Say, Tell, Turn

FRESH: dict[str, list[Turn]] = {
    "aisha": [
        Say("morning! coffee's kicking in slowly"),
        Tell("I'm a pharmacist, mostly night shifts lately.", (("pharmacist",),)),
        Tell("My flatmate Jonas is from Hamburg.", (("jonas",),)),
        Say("what's a quick breakfast that isn't cereal?"),
        Muse("If I won the lottery I'd buy a boat.", (("boat",),)),
        Tell("Jonas has moved out actually, he lives in Leeds now.", (("leeds",),)),
        Ask("Where does Jonas live now?", ("leeds",), old=("hamburg",)),
        Ask("What's my job?", ("pharmacist",), "new"),
        Ask("What's my boyfriend called?", NOT_SAID, "new"),
        Ask("What's my flatmate's name?", ("jonas",), "restart"),
    ],
    "tomasz": [
        Say("hello"),
        Tell("My son Filip plays the violin.", (("filip",),)),
        Tell("We have a tortoise called Speedy.", (("speedy",),)),
        Say("how long do tortoises live, roughly?"),
        Tell("Filip switched from violin to cello last spring.", (("cello",),)),
        Tell("I'm allergic to penicillin, by the way.", (("penicillin",),)),
        Ask("What instrument does Filip play?", ("cello",), old=("violin",)),
        Ask("What's our tortoise called?", ("speedy",), "new"),
        Ask("What am I allergic to?", ("penicillin",), "new"),
        Ask("What's my daughter's name?", NOT_SAID, "new"),
        Ask("Who is Filip?", ("son",), "restart"),
    ],
    "grace": [
        Document(
            "insurance.md",
            "# Home insurance\n\nPolicy HX-20931 with Lantern Mutual. Renewal date: 1 March. "
            "Excess: 250 pounds. Claims line: 0800 555 0199.\n",
        ),
        Say("hi"),
        Tell("I live in Norwich with my two kids.", (("norwich",),)),
        Tell("My book club meets on the first Monday of the month.", (("book club",),)),
        Tell("Actually book club is now the first Tuesday.", (("tuesday",),)),
        Ask("When does my book club meet?", ("tuesday",), old=("monday",)),
        Ask("What's my insurance policy number?", ("hx-20931", "20931"), document="insurance.md"),
        Ask("Where do I live?", ("norwich",), "new"),
        Ask("What's my husband called?", NOT_SAID, "new"),
        Ask(
            "When does the home insurance renew?",
            ("1 march", "march"),
            "restart",
            document="insurance.md",
        ),
    ],
    "diego": [
        Say("hey there"),
        Tell("I work as a nurse at St Mary's.", (("nurse",),)),
        Tell("I'm learning Japanese in the evenings.", (("japanese",),)),
        Say("any tips for remembering kanji?"),
        Muse("Someday I might move to Osaka.", (("osaka",),)),
        Tell("My girlfriend Lena is a teacher.", (("lena",),)),
        Ask("What language am I learning?", ("japanese",)),
        Ask("What does Lena do?", ("teacher",), "new"),
        Ask("Where do I work?", ("st mary",), "new", old=("osaka",)),
        Ask("What's my dog called?", NOT_SAID, "new"),
        Ask("What's my girlfriend's name?", ("lena",), "restart"),
    ],
    "hana": [
        Say("good evening"),
        Tell("My car is a blue Toyota Yaris.", (("yaris",),)),
        Tell("Peanuts make my throat swell up.", (("peanut",),)),
        Say("what should I cook for a rainy night?"),
        Tell("My yoga class is on Saturdays.", (("yoga",),)),
        Tell("Change of plan, yoga is on Sundays from now on.", (("sunday",),)),
        Ask("What car do I have?", ("yaris",)),
        Ask("Which day is my yoga class?", ("sunday",), "new", old=("saturday",)),
        Ask("What am I allergic to?", ("peanut",), "new"),
        Ask("What's my son's name?", NOT_SAID, "new"),
        Ask("What colour is my car?", ("blue",), "restart"),
    ],
    "olu": [
        Say("Hi Mnemo"),
        Tell("I just started a new job at Globex as an engineer.", (("globex",),)),
        Tell("My mum lives in Lagos.", (("lagos",),)),
        Say("what's a good way to learn a new codebase?"),
        Tell("Mum moved to Abuja last month.", (("abuja",),)),
        Muse("I'd love to visit Japan one day.", (("japan",),)),
        Ask("Where does my mum live?", ("abuja",), old=("lagos",)),
        Ask("Where do I work?", ("globex",), "new"),
        Ask("What's my wife's name?", NOT_SAID, "new"),
        Ask("Which city is my mum in?", ("abuja",), "restart", old=("lagos",)),
    ],
    "freya": [
        Say("hey"),
        Tell("My cat Miso is fourteen.", (("miso",),)),
        Tell("I'm a graphic designer, freelance.", (("designer",),)),
        Say("how do I price a logo job?"),
        Tell("The vet appointment for Miso is on the 3rd.", (("vet",),)),
        Tell("oh no wait, the vet said the 5th", (("5th",),)),
        Ask("When is Miso's vet appointment?", ("5th",), old=("3rd",)),
        Ask("What's my cat's name?", ("miso",), "new"),
        Ask("What do I do for work?", ("designer",), "new"),
        Ask("What's my brother's name?", NOT_SAID, "new"),
        Ask("How old is Miso?", ("fourteen", "14"), "restart"),
    ],
    "sanjay": [
        Say("namaste!"),
        Tell("I'm vegan, have been for years.", (("vegan",),)),
        Tell("My sister Priti lives in Pune.", (("priti",),)),
        Say("what's a high protein vegan dinner?"),
        Tell("I play cricket every Sunday with my mates.", (("cricket",),)),
        Muse("If I ever retire I'll move to Goa.", (("goa",),)),
        Ask("What's my sister called?", ("priti",)),
        Ask("Where does Priti live?", ("pune",), "new", old=("goa",)),
        Ask("What sport do I play?", ("cricket",), "new"),
        Ask("What's my wife's name?", NOT_SAID, "new"),
        Ask("Am I vegan?", ("vegan", "yes"), "restart"),
    ],
}
