"""A small realistic conversation for search tests (what a user might tell an assistant)."""

from datetime import datetime

CONVERSATION = [
    (
        "user",
        "Hi! I just moved to Lisbon for a new job at a biotech startup.",
        datetime(2024, 3, 1, 9, 0),
    ),
    ("assistant", "Welcome to Lisbon! What will you be working on?", datetime(2024, 3, 1, 9, 1)),
    (
        "user",
        "Protein folding simulations, mostly. My manager is called Inês.",
        datetime(2024, 3, 1, 9, 2),
    ),
    (
        "user",
        "My cat Pixel knocked a glass of water onto my laptop this morning.",
        datetime(2024, 3, 8, 8, 30),
    ),
    (
        "assistant",
        "Oh no! Unplug it and let it dry for at least 48 hours.",
        datetime(2024, 3, 8, 8, 31),
    ),
    (
        "user",
        "I'm allergic to peanuts, so please remember that when suggesting recipes.",
        datetime(2024, 4, 2, 19, 0),
    ),
    ("user", "Can you suggest a vegetarian dinner with chickpeas?", datetime(2024, 4, 2, 19, 5)),
    (
        "assistant",
        "Try a chickpea and spinach curry with coconut milk and rice.",
        datetime(2024, 4, 2, 19, 6),
    ),
    ("user", "My sister Marta's wedding is on June 14th in Porto.", datetime(2024, 5, 10, 12, 0)),
    (
        "user",
        "I've been training for a half marathon; my best time is 1:52.",
        datetime(2024, 5, 20, 7, 0),
    ),
    (
        "assistant",
        "Great pace! Taper your runs in the last week before the race.",
        datetime(2024, 5, 20, 7, 2),
    ),
    (
        "user",
        "The car needs its annual inspection before the end of July.",
        datetime(2024, 6, 30, 18, 0),
    ),
]
