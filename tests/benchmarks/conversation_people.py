"""The scripted people of ``conversation.py``: what each says, in order, and what is checked.

Each person is a list of turns:

- ``Say(text)``: small talk or a request; only its reply's repetition is measured.
- ``Tell(text, kept)``: a statement about their life; ``kept`` lists the facts it states, each a
  tuple of words that must all appear in one stored item outside the transcript (a core-memory
  block, a knowledge fact, an archival note or a waiting proposal).
- ``Ask(text, answer, where)``: a question about what they said; the reply must hold one of
  ``answer``'s spellings. ``where`` is "same" (this conversation), "new" (a new conversation) or
  "restart" (the profile closed and opened again, the conversation continued). An empty
  ``answer`` is a question about something never said: the reply should say it does not know.
  ``old`` lists the spellings of a value the person has since corrected: it may appear only as
  history ("before that, Ghent"), never as the answer.
- ``Muse(text, never)``: a wish or a hypothetical ("if I ever moved to Berlin…"), no fact:
  no stored item may hold all the words of one of ``never``'s tuples.
- ``Document(name, text)``: a file the person drops in before the conversation; ``Ask(...,
  document=name)`` is a question whose answer is in it, so a Sources line must name it.

The people are written for this benchmark; their facts are ordinary ones of many kinds (health,
diet, family, pets, work, home, plans with dates, likes and dislikes, things owned), stated the
ways people state them, with corrections among them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Say:
    text: str


@dataclass(frozen=True)
class Tell:
    text: str
    kept: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class Ask:
    text: str
    answer: tuple[str, ...]
    where: str = "same"
    document: str | None = None
    old: tuple[str, ...] = ()


@dataclass(frozen=True)
class Muse:
    text: str
    never: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class Document:
    name: str
    text: str


Turn = Say | Tell | Ask | Muse | Document

NOT_SAID: tuple[str, ...] = ()

PEOPLE: dict[str, list[Turn]] = {
    "priya": [
        Say("Hi there!"),
        Tell("I work as a nurse at St. Mary's hospital.", (("nurse",), ("st. mary",))),
        Tell("I'm allergic to peanuts, so I have to be careful.", (("peanut",),)),
        Say("Can you suggest a quick dinner I could cook tonight?"),
        Tell("My daughter is called Asha and she's six.", (("asha",),)),
        Tell(
            "I love hiking on weekends and I prefer tea over coffee.",
            (("hiking",), ("tea",)),
        ),
        Say("How should I word an email asking my manager for Friday off?"),
        Tell("My dentist appointment is on Tuesday.", (("dentist",),)),
        Tell("Actually it's Thursday, not Tuesday.", (("thursday",),)),
        Say("Thanks, that helps."),
        Ask("What am I allergic to?", ("peanut",)),
        Ask("What's my daughter's name?", ("asha",)),
        Say("What's a good stretch after a long shift?"),
        Ask("Where do I work?", ("st. mary", "st mary", "hospital"), "new"),
        Ask("What is my favourite hot drink?", ("tea",), "new"),
        Ask("What is my favourite movie?", NOT_SAID, "new"),
        Ask("What do I like to do on weekends?", ("hik",), "restart"),
        Ask("When is my dentist appointment?", ("thursday",), "restart", old=("tuesday",)),
    ],
    "tom": [
        Say("Hello! How are you today?"),
        Tell("I'm a software engineer at Acme.", (("software engineer",), ("acme",))),
        Tell("My dog Biscuit is a beagle.", (("biscuit",),)),
        Tell("I live in Leeds with my partner.", (("leeds",),)),
        Say("Any tips for staying focused while working from home?"),
        Tell("I've been vegetarian for ten years.", (("vegetarian",),)),
        Tell("I'm allergic to shellfish.", (("shellfish",),)),
        Say("Can you give me a recipe for a lentil curry?"),
        Tell("I'm flying to Rome on the 14th of March.", (("rome",),)),
        Tell("I hate early mornings.", (("morning",),)),
        Ask("What is my dog's name?", ("biscuit",)),
        Ask("What am I allergic to?", ("shellfish",)),
        Say("Tell me a joke."),
        Ask("Where do I live?", ("leeds",), "new"),
        Ask("What kind of dog do I have?", ("beagle",), "new"),
        Ask("What is my sister's name?", NOT_SAID, "new"),
        Ask("Where am I flying in March?", ("rome",), "restart"),
        Ask("Where do I work?", ("acme",), "restart"),
    ],
    "lena": [
        Say("Good morning."),
        Tell("I live in Lisbon.", (("lisbon",),)),
        Tell("I teach history at a secondary school.", (("history",),)),
        Tell("My cat is called Miso.", (("miso",),)),
        Say("What's a nice way to spend a rainy Sunday?"),
        Tell("I have type 1 diabetes.", (("diabetes",),)),
        Tell("I play the violin in an amateur orchestra.", (("violin",),)),
        Tell("I moved to Madrid last month.", (("madrid",),)),
        Say("Could you help me write a birthday message for a colleague?"),
        Tell("My birthday is on 12 May.", (("12 may",),)),
        Ask("What instrument do I play?", ("violin",)),
        Ask("What's my cat called?", ("miso",)),
        Ask("Where do I live now?", ("madrid",), "new", old=("lisbon",)),
        Ask("What health condition do I have?", ("diabetes",), "new"),
        Ask("What car do I drive?", NOT_SAID, "new"),
        Say("Good night!"),
        Ask("When is my birthday?", ("12 may", "may 12"), "restart"),
        Ask("What subject do I teach?", ("history",), "restart"),
    ],
    "marcus": [
        Say("Hey."),
        Tell("I work as a chef at Luigi's restaurant.", (("chef",), ("luigi",))),
        Tell("I drive a red Honda Civic.", (("honda",),)),
        Tell("I'm lactose intolerant.", (("lactose",),)),
        Say("What's a good dessert without dairy?"),
        Tell("My brother Daniel lives in Chicago.", (("daniel",),)),
        Tell("I'm running a marathon in October.", (("marathon",),)),
        Say("How should I train in the last month before a race?"),
        Tell("I really like jazz, especially Miles Davis.", (("jazz",),)),
        Ask("What car do I drive?", ("honda", "civic")),
        Ask("What's my brother's name?", ("daniel",)),
        Say("Thanks man."),
        Ask("Where do I work?", ("luigi",), "new"),
        Ask("What kind of music do I like?", ("jazz", "miles"), "new"),
        Ask("What is my wife's name?", NOT_SAID, "new"),
        Ask("Which race am I running in October?", ("marathon",), "restart"),
        Ask("Can I have milk?", ("lactose",), "restart"),
    ],
    "aiko": [
        Say("Hi!"),
        Tell("I'm a graphic designer at Pixelworks.", (("graphic designer",), ("pixelworks",))),
        Tell("I live in Osaka.", (("osaka",),)),
        Tell("I've been vegan since 2019.", (("vegan",),)),
        Say("Can you recommend a good book about typography?"),
        Tell("I have two kids, Ren and Yui.", (("ren",), ("yui",))),
        Tell("I'm terrified of flying.", (("flying",),)),
        Tell("I'm learning Spanish on weekday evenings.", (("spanish",),)),
        Say("Give me a simple Spanish phrase for ordering coffee."),
        Ask("What language am I learning?", ("spanish",)),
        Ask("What diet do I follow?", ("vegan",)),
        Say("That's all for now."),
        Ask("What are my kids' names?", ("ren", "yui"), "new"),
        Ask("Where do I live?", ("osaka",), "new"),
        Ask("What is my dog's name?", NOT_SAID, "new"),
        Ask("What am I afraid of?", ("fly",), "restart"),
        Ask("Where do I work?", ("pixelworks",), "restart"),
    ],
    "sam": [
        Document(
            "contacts.txt",
            "Household contacts\n\nPlumber: Dave Rowe, 0117 496 0321, available weekdays.\n"
            "Electrician: Kim Patel, 0117 496 0777, also does weekends.\n"
            "Gardener: Lou, every second Friday.\n",
        ),
        Say("Hello there."),
        Tell("I live in Bristol.", (("bristol",),)),
        Tell("I work at a bakery on Gloucester Road.", (("bakery",),)),
        Tell("I have asthma.", (("asthma",),)),
        Say("What should I bake for a friend's birthday?"),
        Tell("My partner's name is Jordan.", (("jordan",),)),
        Tell("My favourite colour is green.", (("green",),)),
        Ask("What's the plumber's phone number?", ("0321",), document="contacts.txt"),
        Ask("Who is my electrician?", ("kim",), document="contacts.txt"),
        Say("Cool, thanks."),
        Ask("What's my partner's name?", ("jordan",), "new"),
        Ask("Where do I work?", ("bakery",), "new"),
        Ask("What's my favourite film?", NOT_SAID, "new"),
        Ask("What's my favourite colour?", ("green",), "restart"),
        Ask("Do I have any health conditions?", ("asthma",), "restart"),
    ],
    "elena": [
        Document(
            "lease.txt",
            "Residential lease\n\nThe monthly rent is 1,200 euros, due on the first day of each "
            "month. The lease runs for 12 months from 1 September. The deposit is two months' "
            "rent. Pets are allowed with the landlord's written consent.\n",
        ),
        Say("Hi, good evening."),
        Tell("I own an old upright piano.", (("piano",),)),
        Tell("I'm allergic to penicillin.", (("penicillin",),)),
        Tell("My mother's name is Rosa.", (("rosa",),)),
        Say("How do I keep a piano in tune longer?"),
        Tell("I can't stand cilantro.", (("cilantro",),)),
        Ask("How much is my monthly rent?", ("1,200", "1200"), document="lease.txt"),
        Ask("How long does my lease run?", ("12 months", "twelve months"), document="lease.txt"),
        Say("Can you help me write a note to my landlord about a leaking tap?"),
        Ask("What am I allergic to?", ("penicillin",)),
        Ask("What instrument do I own?", ("piano",), "new"),
        Ask("What's my mother's name?", ("rosa",), "new"),
        Ask("What is my brother's name?", NOT_SAID, "new"),
        Ask("Which herb do I dislike?", ("cilantro",), "restart"),
    ],
    "david": [
        Say("Morning!"),
        Tell("I'm a retired firefighter.", (("firefighter",),)),
        Tell("My wife Helen and I have been married forty years.", (("helen",),)),
        Tell("My grandson Leo just turned five.", (("leo",),)),
        Say("What's a good present for a five-year-old?"),
        Tell("I'm having knee surgery on the 3rd of June.", (("knee",),)),
        Tell("I grow tomatoes in my garden.", (("tomato",),)),
        Tell("I only drink decaf coffee these days.", (("decaf",),)),
        Say("How do I stop my tomato plants from splitting?"),
        Ask("What's my wife's name?", ("helen",)),
        Ask("What did I do for a living?", ("firefight",)),
        Ask("When is my surgery?", ("3 june", "june 3", "3rd of june", "june"), "new"),
        Ask("What's my grandson called?", ("leo",), "new"),
        Ask("What is my daughter's name?", NOT_SAID, "new"),
        Say("Thanks, take care."),
        Ask("What do I grow in my garden?", ("tomato",), "restart"),
        Ask("What coffee do I drink?", ("decaf",), "restart"),
    ],
    "fatima": [
        Say("Hey there!"),
        Tell(
            "I'm a PhD student at the University of Toronto, studying marine biology.",
            (("toronto",), ("marine",)),
        ),
        Tell("I have celiac disease, so I eat gluten-free.", (("gluten",),)),
        Tell("My sister Amira is visiting next week.", (("amira",),)),
        Say("Can you explain what a coral reef needs to survive?"),
        Tell("I play chess online most nights.", (("chess",),)),
        Tell("I bought a new bicycle last week.", (("bicycle",),)),
        Say("What's a good way to plan a thesis chapter?"),
        Ask("What do I study?", ("marine",)),
        Ask("What game do I play at night?", ("chess",)),
        Say("Great, thanks."),
        Ask("What can't I eat?", ("gluten",), "new"),
        Ask("Who is visiting me next week?", ("amira",), "new"),
        Ask("What is my cat's name?", NOT_SAID, "new"),
        Ask("What did I buy last week?", ("bicycle", "bike"), "restart"),
        Ask("Where do I study?", ("toronto",), "restart"),
    ],
    "jonas": [
        Say("Hallo!"),
        Tell("I live in Berlin.", (("berlin",),)),
        Tell("I work as an accountant at Deloitte.", (("accountant",),)),
        Tell("Sorry, I meant KPMG, not Deloitte.", (("kpmg",),)),
        Tell("I'm allergic to cats.", (("cat",),)),
        Say("Any ideas for a weekend trip from Berlin?"),
        Tell("My son Felix starts school in August.", (("felix",),)),
        Tell("I love sailing on the Wannsee.", (("sailing",),)),
        Say("How do I explain compound interest to a child?"),
        Ask("What's my son's name?", ("felix",)),
        Ask("Which company do I work for?", ("kpmg",), old=("deloitte",)),
        Ask("What am I allergic to?", ("cat",), "new"),
        Ask("What's my hobby?", ("sail",), "new"),
        Ask("What is my wife's name?", NOT_SAID, "new"),
        Say("Bye for now."),
        Ask("Where do I live?", ("berlin",), "restart"),
        Ask("When does my son start school?", ("august",), "restart"),
    ],
    "grace": [
        Say("Hi Mnemo."),
        Tell("I'm a pharmacist.", (("pharmacist",),)),
        Tell("I'm moving to Denver next month.", (("denver",),)),
        Tell("I have a parrot named Kiwi.", (("kiwi",),)),
        Say("What should I pack first when moving house?"),
        Tell("I get migraines when I skip meals.", (("migraine",),)),
        Tell("Sushi is my favourite food.", (("sushi",),)),
        Say("Write a short goodbye message for my coworkers."),
        Ask("What's my parrot called?", ("kiwi",)),
        Ask("Where am I moving?", ("denver",)),
        Ask("What's my favourite food?", ("sushi",), "new"),
        Ask("What is my job?", ("pharmacist",), "new"),
        Ask("What is my husband's name?", NOT_SAID, "new"),
        Say("Thanks!"),
        Ask("What gives me migraines?", ("meal", "skip"), "restart"),
    ],
    "omar": [
        Say("Salaam, hello."),
        Tell("I'm a car mechanic.", (("mechanic",),)),
        Tell("My wife is Sara.", (("sara",),)),
        Tell("I have a meeting with the bank on Friday.", (("bank",),)),
        Tell("Actually it's Wednesday, not Friday.", (("wednesday",),)),
        Say("What questions should I ask the bank about a small business loan?"),
        Tell("I'm allergic to bee stings.", (("bee",),)),
        Tell("I collect vinyl records, mostly soul.", (("vinyl",),)),
        Say("How do I clean old records safely?"),
        Ask("What's my wife's name?", ("sara",)),
        Ask("When is my meeting with the bank?", ("wednesday",), old=("friday",)),
        Ask("What do I collect?", ("vinyl", "record"), "new"),
        Ask("What am I allergic to?", ("bee",), "new"),
        Ask("What is my son's name?", NOT_SAID, "new"),
        Say("Ok, bye."),
        Ask("What do I do for work?", ("mechanic",), "restart"),
    ],
    # The first afternoon's phrasings (issue 53), for tuning the rules on.
    "ines": [
        Say("Hi, nice to meet you."),
        Tell("My sister Ines lives in Ghent.", (("ghent",),)),
        Tell("My car is a 2012 Honda Jazz.", (("2012",),)),
        Tell("Been vegan since 2019.", (("vegan",),)),
        Say("What's a quick vegan breakfast?"),
        Tell("Actually, Ines moved to Antwerp last month.", (("antwerp",),)),
        Muse("If I ever moved to Berlin I'd learn German.", (("berlin",),)),
        Tell("My cat's vet appointment is on the 14th.", (("vet",),)),
        Tell("Oh wait, sorry, the vet moved it to the 21st.", (("21",),)),
        Ask("Where does Ines live?", ("antwerp",), old=("ghent",)),
        Ask("What year is my car?", ("2012",)),
        Ask("When is the vet appointment?", ("21",), "new", old=("14th",)),
        Ask("What diet do I follow?", ("vegan",), "new"),
        Ask("What's my brother's name?", NOT_SAID, "new"),
        Ask("Where does my sister live now?", ("antwerp",), "restart", old=("ghent",)),
    ],
    "tunde": [
        Say("Hello!"),
        Tell("My friend Tunde lives in Leeds.", (("leeds",),)),
        Tell("Strawberries bring me out in hives.", (("strawberr",),)),
        Tell("I work at the Molinette hospital.", (("molinette",),)),
        Say("Can you suggest a podcast about history?"),
        Tell("Actually Tunde moved to Bristol in the summer.", (("bristol",),)),
        Tell("We live on Rose Lane.", (("rose lane",),)),
        Tell("I'm not at the Molinette any more, I work at Mauriziano now.", (("mauriziano",),)),
        Ask("Where does Tunde live?", ("bristol",), old=("leeds",)),
        Ask("Which hospital am I at?", ("mauriziano",), "new", old=("molinette",)),
        Ask("What street do we live on?", ("rose lane",), "new"),
        Ask("What is my cat's name?", NOT_SAID, "new"),
        Ask("What fruit am I allergic to?", ("strawberr",), "restart"),
    ],
}
