"""Questions in a person's own words: notes, and queries that share no content word with them.

``PAIRS`` holds (note, query) pairs written by hand: the query asks for the note as a person would,
weeks later, without the note's words (checked by ``shared_words``). ``distractors()`` makes
realistic notes of the same kinds (appointments, shopping, work, travel, recipes, contacts...)
that answer none of the queries. ``ABSENT`` are questions about things no note mentions.
"""

from __future__ import annotations

import random

from engine.memory.search import query_terms, word_coverage

PAIRS: list[tuple[str, str]] = [
    ("The boiler service code is 7731 and the plumber is Ana Ruiz.", "who repairs the heating"),
    ("Mia starts kindergarten at Oakwood Primary in September.", "when does my kid begin school"),
    (
        "Spare house key is under the blue flowerpot by the back door.",
        "how do I get in if I'm locked out",
    ),
    ("Dr. Okafor's clinic is open Tuesday to Saturday.", "which days can I see the dentist"),
    (
        "Grandma's lemon cake needs 200g flour, 200g sugar and four eggs.",
        "ingredients for the citrus dessert",
    ),
    ("Car insurance renewal falls on 1 March with Allianz.", "when is the vehicle cover due"),
    ("Wi-Fi network Nebula uses the password correct-horse-battery.", "internet login details"),
    (
        "Tom is allergic to shellfish and carries an EpiPen.",
        "what food reaction does my brother have",
    ),
    ("Passport expires in June 2027; renew it six months before.", "travel document validity"),
    (
        "Rent of 1,250 euros goes to Mr. Silva on the 3rd of each month.",
        "how much do I pay the landlord",
    ),
    (
        "The garage door opener battery is a CR2032 coin cell.",
        "which replacement does the clicker need",
    ),
    (
        "Yoga class moved to Thursday evenings at the community hall.",
        "when is my stretching session now",
    ),
    (
        "Parking spot number 42 on level B2 of the office building.",
        "where do I leave the car at work",
    ),
    ("Sofia's birthday is on 14 February; she likes orchids.", "present ideas for my sister"),
    (
        "The vet said Biscuit needs a rabies booster every three years.",
        "how often does the dog get shots",
    ),
    (
        "Gym membership costs 39 per month and can be cancelled online.",
        "fitness subscription price",
    ),
    ("Laptop warranty with Lenovo runs until August 2026.", "how long is the computer covered"),
    ("Mum prefers phone calls after 7 pm because she works late.", "best time to ring my mother"),
    ("Recycling bins are collected every second Wednesday.", "when does the rubbish truck come"),
    (
        "The kids' pediatrician is Dr. Hana Mori at Riverside Health.",
        "who is the children's doctor",
    ),
    ("Bank branch manager is Paulo; his direct line is 555-0198.", "contact at the lender"),
    (
        "Blood type is O negative, noted after the 2019 donation.",
        "what's my transfusion compatibility",
    ),
    ("Wedding anniversary is 22 July; we married in Sintra.", "when did we get hitched"),
    (
        "Water meter sits behind the panel under the kitchen sink.",
        "where can I read the usage gauge",
    ),
    ("The electrician Marco fixed the fuse box in May.", "who sorted out the wiring"),
    ("Piano lessons for Leo cost 25 per half hour with Mrs. Clarke.", "music teacher fees"),
    ("My shoe size is 43 EU, 9 UK.", "what number do I wear in sneakers"),
    ("The tax return deadline this year is 30 June.", "last day to file with revenue office"),
    ("Flight TP1234 to Lisbon departs at 06:40 from terminal 1.", "when does my plane leave"),
    ("Jake takes his coffee black with one sugar.", "how does my colleague like his drink"),
    ("Contact lenses are -2.25 left and -2.50 right.", "eye prescription numbers"),
    ("The router admin page is at 192.168.1.1, user admin.", "how to get into the modem settings"),
    (
        "Emma's school bus stops at the corner of Elm and 5th at 7:55.",
        "pickup point for my daughter in the morning",
    ),
    ("Home insurance covers flood damage up to 50,000.", "is water harm included in my policy"),
    (
        "Grandpa's pills: metformin twice daily with meals.",
        "what tablets does my mother's father take",
    ),
    ("The lawn mower takes unleaded petrol mixed with oil 50:1.", "what fuel for the grass cutter"),
    ("Book club meets on the last Friday at Clara's flat.", "where is the reading group"),
    (
        "Boss is Rachel Nguyen; performance review in November.",
        "when is my appraisal with my manager",
    ),
    ("The storage unit at SafeBox is number 118, code 4402.", "where are my boxes kept"),
    ("I lent my drill to Pedro next door in April.", "who has my power tool"),
    ("Cat food brand is Purina Sensitive, salmon flavour.", "what does the kitty eat"),
    (
        "Dentist cleaning reminder: every six months, next in October.",
        "when should my teeth be looked at again",
    ),
    ("The car is a 2018 Toyota Corolla, plate AB-12-CD.", "what vehicle do I drive"),
    ("Electricity supplier is EDP on the green tariff.", "who provides our power"),
    ("Running goal: half marathon under two hours by spring.", "what is my jogging target"),
    ("Aunt Rosa lives at 12 Rua das Flores, Braga.", "address of my relative up north"),
    ("Pharmacy on Main Street is open until midnight.", "late chemist nearby"),
    (
        "Seeds for tomatoes go in the greenhouse in early March.",
        "when to start planting vegetables",
    ),
    ("Daniel is vegetarian and doesn't eat fish either.", "dietary needs of my friend"),
    (
        "The thermostat schedule drops to 17 degrees at night.",
        "how cold does the house get overnight",
    ),
    ("Library books are due back on 9 December.", "when must I return the borrowed novels"),
    (
        "Streaming subscription renews on the 15th; shared with Ines.",
        "who else uses our TV account",
    ),
    ("Mortgage fixed at 3.1% until 2029 with Millennium.", "home loan interest rate"),
    ("The babysitter Laura charges 12 per hour.", "how much is the childminder"),
    ("Swimming pool lanes are free before 8 on weekdays.", "quiet time for laps"),
    ("My bike lock combination is 5-0-8-1.", "numbers to open the cycle chain"),
    ("Chimney was swept last November by CleanFlue.", "when was the fireplace serviced"),
    ("Olive oil from the farm in Alentejo costs 8 a litre.", "price of the cooking fat we buy"),
    ("The printer uses HP 305 ink cartridges.", "which refills for the office machine"),
    (
        "Ben's football practice is Saturday 10 am at the park pitch.",
        "when does my son play soccer",
    ),
    (
        "Fridge filter must be changed every six months.",
        "how often to replace the refrigerator part",
    ),
    (
        "Neighbour Agnes waters our plants when we travel.",
        "who looks after the greenery while we're away",
    ),
    ("Glasses were bought at Specsavers, two-year guarantee.", "where did I get my spectacles"),
    ("Vaccination card for Luna is in the red folder.", "where are the pet's health papers"),
]

ABSENT: list[str] = [
    "how much did the new roof cost",
    "when is the piano tuner coming",
    "what did the cardiologist say about my heart",
    "which airline lost my suitcase",
    "how many shares of Apple do I own",
    "what is the name of my goldfish",
]

_PEOPLE = """Alice Bruno Carla Diego Elena Felix Greta Hugo Irene Joao Kai Lena Mateo Nora Omar Pia
    Rui Sara Teo Vera""".split()
_PLACES = """Porto Lisbon Madrid Paris Berlin Rome Vienna Prague Dublin Oslo Athens Seville Lyon
    Munich Krakow""".split()
_DAYS = "Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split()
_MONTHS = """January February March April May June July August September October November
    December""".split()
_ITEMS = """milk bread eggs butter rice pasta apples onions garlic yoghurt cheese coffee tea honey
    flour lentils spinach carrots""".split()
_TOPICS = """budget roadmap hiring launch migration audit quarterly report onboarding pricing
    security review""".split()
_BOOKS = """Dune|Middlemarch|The Overstory|Beloved|Pachinko|Stoner|The Remains of the Day|Circe|
    Piranesi|Normal People""".replace("\n    ", "").split("|")
_DISHES = "risotto|curry|shakshuka|lasagne|ramen|paella|chili|pancakes|falafel|gazpacho".split("|")
_TEMPLATES = [
    "Meeting with {person} about the {topic} on {day} at {hour}:00.",
    "Buy {item}, {item2} and {item3} on the way home.",
    "Call {person} back about the {topic} before {day}.",
    "Train to {place} leaves at {hour}:{minute:02d}; seat {number} in coach {small}.",
    "Finished reading {book}; {person} recommended it, would give it {small} stars.",
    "{person}'s recipe for {dish}: cook for {minute} minutes, serve with {item}.",
    "Conference in {place} from {small} to {number2} {month}; hotel booked near the station.",
    "Sent the {topic} draft to {person}; waiting for comments by {day}.",
    "Idea for the weekend: walk along the river in {place} and lunch at a {dish} place.",
    "{person} asked to borrow {book} next month.",
    "Remember to water the basil and the mint on {day}.",
    "Team lunch on {day}; {person} is organising, budget {number} per person.",
    "The {topic} deadline moved to {small} {month}.",
    "Podcast episode {number} about {topic} was worth it; share it with {person}.",
    "Ordered {item} and {item2} online, delivery expected {day}.",
    "{person} moved to {place} and starts a new job in {month}.",
    "Cooked {dish} for {small} people; next time use less salt.",
    "Workshop on {topic} with {person} and {person2}, room {number}.",
    "Museum in {place} is free on the first {day} of the month.",
    "Note from the {topic} call: {person} owns the follow-up, due {month}.",
]


def distractors(count: int = 2000, seed: int = 7) -> list[str]:
    """``count`` distinct everyday notes, none of which answers a query in ``PAIRS``."""
    rng = random.Random(seed)
    notes: dict[str, None] = {}
    while len(notes) < count:
        template = rng.choice(_TEMPLATES)
        people = rng.sample(_PEOPLE, 2)
        items = rng.sample(_ITEMS, 3)
        notes[
            template.format(
                person=people[0],
                person2=people[1],
                place=rng.choice(_PLACES),
                day=rng.choice(_DAYS),
                month=rng.choice(_MONTHS),
                hour=rng.randint(7, 20),
                minute=rng.randint(0, 59),
                number=rng.randint(10, 400),
                number2=rng.randint(12, 28),
                small=rng.randint(1, 9),
                item=items[0],
                item2=items[1],
                item3=items[2],
                topic=rng.choice(_TOPICS),
                book=rng.choice(_BOOKS),
                dish=rng.choice(_DISHES),
            )
        ] = None
    return list(notes)


def shared_words(note: str, query: str) -> list[str]:
    """Content words (or their crude stems, as search compares them) a query shares with a note."""
    return [term for term in query_terms(query) if len(term) > 1 and word_coverage(note, term)]
