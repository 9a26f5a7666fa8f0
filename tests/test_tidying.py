"""Tidying (engine/agent/tidying.py): months of notes put in order as one batch of proposals
the person reviews, approves in part and can undo; nothing changes before, and a forgotten
text never comes back through it."""

from __future__ import annotations

from datetime import date

import pytest

from engine import Mnemo, clock, forget
from engine.agent import Agent
from engine.agent import assisted_rules as assisted
from engine.agent.tidying import plan, propose, tidy_block
from engine.cli import main
from engine.errors import CoreMemoryError, InputError
from engine.llm import ScriptedModel
from engine.memory.knowledge import USER

LIFE = [
    (date(2026, 1, 5), ["I have a cat called Miso.", "Home for me is Porto, and it rains."]),
    (date(2026, 2, 1), ["My cat Miso woke me up at six again.", "I'm learning the cello."]),
    (date(2026, 3, 1), ["Big news: I've just moved to Krakow.", "My cat Miso sleeps on the sofa."]),
]


def live(mnemo: Mnemo, date_: date, lines: list[str]) -> None:
    model = ScriptedModel(parameter_count=135_000_000, default="Okay.")  # assisted: by rule
    with clock.travel(date_):
        agent = Agent(mnemo, model, conversation_id=mnemo.conversations.start())
        for line in lines:
            agent.send(line)
        mnemo.wait_for_background_work()


def notes(mnemo: Mnemo) -> dict[str, str]:
    return {p.id: p.text for p in mnemo.archival.recent(100)}


@pytest.fixture
def months(mnemo: Mnemo) -> Mnemo:
    """Three months: a cat said three times, a move, a musing an older version kept as a
    note, and a human block the person approved line by line over time."""
    for day, lines in LIFE:
        live(mnemo, day, lines)
    musing = mnemo.recall.add("user", "Sometimes I dream of living in Berlin.")
    mnemo.archival.insert(
        'The user said: "Sometimes I dream of living in Berlin."',
        source=musing,
        tags=(assisted.NOTE_TAG,),
    )
    mnemo.core.set(
        "human", "You live in Porto.\nYou have a cat called Miso.\nYou have a cat called Miso."
    )
    return mnemo


def test_a_pass_proposes_one_batch_and_changes_nothing_until_approved(months: Mnemo):
    before = notes(months)
    tidying = plan(months)
    cat_notes = [text for text in before.values() if "Miso" in text]
    assert len(cat_notes) == 2  # "I have a cat called Miso." is a fact alone
    (kept, gone), *_ = tidying.merges
    assert "woke me up" in kept.text and len(gone) == 1  # the oldest stays
    assert [note.text for note, _ in tidying.history] == [
        'The user said: "Home for me is Porto, and it rains."'
    ]
    assert tidying.history[0][1] == "You live in Krakow"
    assert [note.text for note in tidying.musings] == [
        'The user said: "Sometimes I dream of living in Berlin."'
    ]
    assert tidying.human == (
        "You live in Porto.\nYou have a cat called Miso.\nYou have a cat called Miso.",
        "Your cat is Miso.\nYou live in Krakow.",
    )
    assert tidying.summary() == (
        "Mnemo tidied your memory: 1 duplicate note merged, 1 outdated note kept as history, "
        "1 musing removed, the human block brought up to date."
    )
    batch = propose(months, tidying)
    assert batch is not None
    proposals = months.proposals.batch(batch)
    assert [p.change or p.kind for p in proposals] == ["merge", "history", "musing", "core"]
    assert all(p.status == "pending" for p in proposals)
    assert notes(months) == before  # nothing changed yet
    assert months.core.get("human").count("Miso") == 2
    assert "says again that your cat is Miso" in proposals[0].describe()
    assert "now you live in Krakow" in proposals[1].describe()


def test_the_person_approves_part_and_undoes_one_change_with_its_history_kept(months: Mnemo):
    before = notes(months)
    batch = propose(months, plan(months))
    merge, history, musing, human = months.proposals.batch(batch or "")
    for proposal in (merge, history, human):
        months.proposals.approve(proposal.id)
    months.proposals.reject(musing.id)
    after = notes(months)
    assert set(after) == set(before) - {merge.label}
    assert assisted.REPLACED_TAG in months.archival.get(history.label).tags
    assert months.core.get("human") == "Your cat is Miso.\nYou live in Krakow."
    assert plan(months).merges == []  # tidy now: a second pass finds no duplicates

    undone = months.proposals.undo(merge.id)
    assert undone.undone and undone.status == "approved"
    back = months.archival.get(merge.label)
    assert back.text == before[merge.label] and back.source.message_id is not None
    assert back.created_at.date() == date(2026, 3, 1)  # the day it was said, not today
    months.proposals.undo(human.id)
    assert months.core.get("human").count("Miso") == 2
    assert len(months.core.history("human")) >= 3  # approved, then undone: both versions kept
    with pytest.raises(CoreMemoryError, match="undone already"):
        months.proposals.undo(merge.id)
    with pytest.raises(CoreMemoryError, match="rejected"):
        months.proposals.undo(musing.id)


def test_a_forgotten_note_never_returns_through_an_undo(months: Mnemo):
    batch = propose(months, plan(months))
    merge = months.proposals.batch(batch or "")[0]
    months.proposals.approve(merge.id)
    forget.forget(months, forget.plan_text(months, "Miso sleeps on the sofa"))
    with pytest.raises(InputError, match="forgotten"):
        months.proposals.undo(merge.id)
    assert all("sleeps on the sofa" not in text for text in notes(months).values())
    stored = months.proposals.get(merge.id)
    assert "sleeps on the sofa" not in str(stored.payload)
    assert "sleeps on the sofa" not in str(stored.old_content)


def test_a_waiting_fact_made_stale_is_taken_back_and_one_said_again_joins_the_batch(
    mnemo: Mnemo,
):
    live(mnemo, date(2026, 1, 5), ["I live in Porto."])
    live(mnemo, date(2026, 2, 1), ["I live in Lyon."])  # no "moved": it waits for the person
    (waiting,) = [p for p in mnemo.proposals.pending() if p.kind == "fact"]
    assert waiting.new_content == "Lyon"
    live(mnemo, date(2026, 2, 20), ["Lyon is lovely in spring, I live in Lyon now."])
    tidying = plan(mnemo)
    assert [p.id for p in tidying.restated] == [waiting.id]
    batch = propose(mnemo, tidying)
    assert mnemo.proposals.get(waiting.id).batch == batch
    mnemo.proposals.approve(waiting.id)
    assert [f.object for f in mnemo.knowledge.facts(USER, "lives_in")] == ["Lyon"]
    mnemo.proposals.undo(waiting.id)  # the fact learned is taken back, the old one holds
    assert [f.object for f in mnemo.knowledge.facts(USER, "lives_in")] == ["Porto"]


def test_the_human_block_keeps_current_values_and_drops_what_ended():
    from datetime import datetime

    from engine.memory.knowledge import Fact

    def fact(id_: int, obj: str, status: str, by: int | None) -> Fact:
        when = datetime(2026, 1, id_)
        return Fact(id_, USER, "lives_in", obj, True, None, None, when, "message", None,
                    "user", status, by)  # fmt: skip

    facts = [fact(1, "Porto", "superseded", 2), fact(2, "Krakow", "current", None)]
    block = "You live in Porto.\nYou like the sea.\nYou like  the sea."
    assert tidy_block(block, facts) == "You live in Krakow.\nYou like the sea."
    ended = [fact(1, "Porto", "superseded", 2), fact(2, "Krakow", "retracted", None)]
    assert tidy_block(block, ended) == "You like the sea."
    fresh = "Nothing is known about the user yet."  # a new profile: nothing to tidy
    assert tidy_block(fresh, []) == fresh


def test_mnemo_tidy_proposes_approves_and_undoes_from_the_command_line(months: Mnemo, capsys):
    profile = str(months.profile.root)
    months.close()

    def run(*args: str) -> str:
        assert main(["--profile", profile, "tidy", *args]) == 0
        return capsys.readouterr().out

    assert "Tidying would change your memory: 1 duplicate note merged" in run("--dry-run")
    proposed = run()
    assert "Mnemo tidied your memory" in proposed and "Nothing changed yet" in proposed
    assert "Approved 4 tidy changes" in run("--approve")
    assert "nothing to merge" in run("--dry-run")
    first = int(proposed.split("Proposal ", 1)[1].split(":", 1)[0])
    assert "Undone: merge the note" in run("--undo", str(first))


def test_the_window_shows_the_batch_the_person_approves_part_and_undoes_one(qtbot, months):
    """The proposals panel: the batch under one heading with Approve all; a card approved, one
    rejected; then Approve all for the rest, and Undo on one change brings its note back."""
    from PySide6.QtCore import Qt

    from desktop.main_window import MainWindow
    from tests.test_desktop import TIMEOUT_MS, open_window

    window: MainWindow = open_window(qtbot, months, ScriptedModel(default="Okay."))
    try:
        before = notes(months)
        for proposal in months.proposals.pending():  # the person decided on the keeper's
            months.proposals.reject(proposal.id)
        window.proposals.refresh()
        qtbot.waitUntil(lambda: window.tasks.pending == 0, timeout=TIMEOUT_MS)
        window._last_activity -= 3600  # the person has been away an hour
        window.tidy_if_idle()
        qtbot.waitUntil(lambda: window.proposals.count == 4, timeout=TIMEOUT_MS)
        panel = window.proposals
        assert panel.isVisibleTo(window)
        heading = panel.batch_heading()
        assert (
            "Mnemo tidied your memory: 1 duplicate note merged"
            in heading.findChild(type(panel.heading)).text()
        )
        merge, history, musing, human = months.proposals.batch(heading.batch)
        card = panel.card(merge.id)
        said = "You said: “My cat Miso sleeps on the sofa.” It says again"
        assert card.diff.text().startswith(said)
        assert not card.edit_button.isEnabled()
        qtbot.mouseClick(card.approve_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: panel.count == 3, timeout=TIMEOUT_MS)
        qtbot.mouseClick(panel.card(musing.id).reject_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: panel.count == 2, timeout=TIMEOUT_MS)
        qtbot.mouseClick(panel.batch_heading().approve_all, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: not panel.count and len(panel.done_rows()) == 3, timeout=TIMEOUT_MS)
        assert panel.isVisibleTo(window)  # still there: the changes can be undone
        assert months.core.get("human") == "Your cat is Miso.\nYou live in Krakow."
        assert merge.label not in notes(months)
        row = next(r for r in panel.done_rows() if r.proposal.id == merge.id)
        assert row.text.text().startswith("Merged: You said: “My cat Miso sleeps on the sofa.”")
        qtbot.mouseClick(row.button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: len(panel.done_rows()) == 2, timeout=TIMEOUT_MS)
        assert notes(months)[merge.label] == before[merge.label]
        window.tidy_if_idle()  # tidied today: not again until tomorrow
        qtbot.waitUntil(lambda: window.tasks.pending == 0, timeout=TIMEOUT_MS)
        assert panel.count == 0
    finally:
        window.shutdown()


def test_notes_naming_the_same_pet_merge_but_the_one_that_tells_of_its_death_stays(mnemo):
    live(mnemo, date(2026, 1, 5), ["I have a cat called Tofu.", "Tofu, my cat, needs a vet."])
    live(mnemo, date(2026, 2, 1), ["Walking Tofu is the best part of my day."])
    live(mnemo, date(2026, 3, 1), ["We lost Tofu today. I'll miss that cat so much."])
    (kept, gone), *others = plan(mnemo).merges
    assert "needs a vet" in kept.text and [note.text for note in gone] == [
        'The user said: "Walking Tofu is the best part of my day."'
    ]
    assert not others  # "We lost Tofu today" is a point of the timeline: never merged away
    assert any("We lost Tofu" in text for text in notes(mnemo).values())


def approve_all(mnemo: Mnemo) -> None:
    for proposal in mnemo.proposals.pending():
        mnemo.proposals.approve(proposal.id)


def test_months_of_news_keep_knowledge_and_the_block_true(mnemo):
    """What six months of a life showed going wrong (tests/benchmarks/months.py), each with
    the person approving what waits each evening: a title rewritten onto a new employer, a
    pet that died learned again from the news of it, a taste in contrast read as a
    correction of a note, "Alex and I" cut to "I are together"."""
    live(
        mnemo,
        date(2026, 1, 5),
        ["I'm a data analyst with Tailspin.", "I have a dog called Biscuit."],
    )
    live(mnemo, date(2026, 1, 9), ["Honestly I'll always pick dogs over cats."])
    approve_all(mnemo)
    live(mnemo, date(2026, 2, 1), ["I started a new job at Wingtip today!"])
    live(mnemo, date(2026, 3, 1), ["Sad day: my dog Biscuit died this morning."])
    live(mnemo, date(2026, 3, 2), ["Dogs is my thing, not cats.", "Alex and I are together now."])
    approve_all(mnemo)
    human = mnemo.core.get("human")
    assert "Tailspin" not in human and "Wingtip as a data analyst" not in human
    assert not list(mnemo.knowledge.facts(USER, "job_title"))  # the title was Tailspin's
    assert not list(mnemo.knowledge.facts(USER, "dog"))  # ended, and not learned again
    assert [f.object for f in mnemo.knowledge.facts(USER, "partner")] == ["Alex"]
    texts = list(notes(mnemo).values())
    assert 'The user said: "Honestly I\'ll always pick dogs over cats."' in texts
    assert not any("I are together" in text for text in texts)


def test_a_flipped_taste_and_a_move_said_again_are_tidied_into_one_note_each(mnemo):
    live(mnemo, date(2026, 1, 5), ["Honestly I'll always pick cats over dogs.", "I live in Porto."])
    live(mnemo, date(2026, 2, 1), ["Big news: I've just moved to Aarhus."])
    approve_all(mnemo)
    live(mnemo, date(2026, 3, 1), ["Funny, I've gone off cats; these days I prefer dogs."])
    approve_all(mnemo)
    live(
        mnemo,
        date(2026, 4, 1),
        ["Dogs is my thing, not cats.", "Home for me is Aarhus these days."],
    )
    approve_all(mnemo)
    tidying = plan(mnemo)
    merged = {kept.text: [note.text for note in gone] for kept, gone in tidying.merges}
    assert merged['The user said: "these days I prefer dogs."'] == [
        'The user said: "Funny, I\'ve gone off cats."',
        'The user said: "Dogs is my thing, not cats."',
    ]  # one taste; the flip is the note kept
    assert merged['The user said: "Big news: I\'ve just moved to Aarhus."'] == [
        'The user said: "Home for me is Aarhus these days."'
    ]  # the move said again is no second move
    assert [(note.text, now) for note, now in tidying.history] == [
        ('The user said: "Honestly I\'ll always pick cats over dogs."', "You prefer dogs")
    ]
    assert tidy_block(mnemo.core.get("human"), mnemo.knowledge.history(USER)).splitlines()[:2] == [
        "You live in Aarhus.",
        "You prefer dogs.",
    ]


def test_a_whole_batch_applies_when_approved(mnemo):
    """A note both merged away and made history by a later fact was proposed twice; the second,
    approved after the merge, had no note left and stayed in the panel ("no longer applies")."""
    live(mnemo, date(2026, 1, 5), ["I have a cat called Tofu.", "Tofu, my cat, needs a vet."])
    live(mnemo, date(2026, 2, 1), ["Walking Tofu is the best part of my day."])
    live(mnemo, date(2026, 2, 2), ["My cat Tofu woke me up at six again."])
    live(mnemo, date(2026, 3, 1), ["We lost Tofu today. I'll miss that cat so much."])
    approve_all(mnemo)
    batch = propose(mnemo, plan(mnemo))
    assert batch is not None
    for proposal in mnemo.proposals.batch(batch):
        mnemo.proposals.approve(proposal.id)  # raises if it no longer applies
    assert not mnemo.proposals.pending()


def test_a_point_of_change_that_says_no_more_than_a_later_note_merges_but_a_loss_stays(mnemo):
    """ "I'm at Adatum now" (a point: "now") stayed beside "My job is at Adatum, I'm an
    architect there", two notes of one employer after tidying. A loss says more, and stays."""
    live(mnemo, date(2026, 1, 5), ["I work at Wingtip.", "I have a cat called Tofu."])
    live(mnemo, date(2026, 3, 2), ["I've left my old job; I'm at Adatum now."])
    live(mnemo, date(2026, 3, 3), ["We lost Tofu today."])
    approve_all(mnemo)
    live(mnemo, date(2026, 4, 1), ["My job is at Adatum, I'm an architect there."])
    approve_all(mnemo)
    live(mnemo, date(2026, 4, 2), ["Being an architect is busy."])
    approve_all(mnemo)
    merges = plan(mnemo).merges
    gone = [note.text for _kept, notes in merges for note in notes]
    assert [kept.text for kept, _gone in merges] == [
        'The user said: "My job is at Adatum, I\'m an architect there."'
    ]
    assert sorted(gone) == [
        'The user said: "Being an architect is busy."',
        'The user said: "I\'m at Adatum now."',
    ]  # the loss and "I've left my old job" stay


# -- what the tidy pass keeps (issue: it dropped lines and notes that said more) ------------------


def test_block_lines_that_say_more_than_their_fact_are_never_dropped(mnemo):
    live(mnemo, date(2026, 1, 5), ["I have a cat called Olive.", "My sister is Lena."])
    block = (
        "You have a cat called Olive.\n"
        "Olive needs insulin at 8am and 8pm.\n"
        "Lena is allergic to penicillin."
    )
    mnemo.core.set("human", block)
    tidying = plan(mnemo)
    after = tidying.human[1] if tidying.human else block
    assert "Olive needs insulin at 8am and 8pm." in after.splitlines()
    assert "Lena is allergic to penicillin." in after.splitlines()


def test_a_note_with_a_medical_need_is_never_merged_into_one_that_says_less(mnemo):
    live(mnemo, date(2026, 1, 5), ["My cat Olive loves the garden."])
    live(mnemo, date(2026, 2, 1), ["My cat Olive is diabetic and needs insulin twice a day."])
    gone = [note.text for _kept, merged in plan(mnemo).merges for note in merged]
    assert not any("insulin" in text for text in gone)


def test_a_fact_said_with_a_tag_question_is_no_musing(mnemo):
    live(mnemo, date(2026, 1, 5), ["I have a cat called Olive, isn't that cute?"])
    tidying = plan(mnemo)
    assert [fact.object for fact in tidying.musing_facts] == []
    assert [note.text for note in tidying.musings] == []
    assert mnemo.knowledge.holds(USER, "has_pet", "Olive") or any(
        "Olive" in fact.object for fact in mnemo.knowledge.history(USER)
    )


def test_a_block_line_the_person_rejected_is_not_proposed_again(mnemo):
    live(mnemo, date(2026, 1, 5), ["I have a cat called Olive."])
    mnemo.core.set("human", "You like long walks.")
    first = plan(mnemo)
    assert first.human is not None
    batch = propose(mnemo, first)
    for proposal in mnemo.proposals.pending():
        if proposal.label == "human":
            mnemo.proposals.reject(proposal.id)
    assert batch is not None
    again = plan(mnemo)
    assert again.human is None  # the same change, rejected: not proposed again


def test_a_tidy_change_the_person_rejected_is_not_proposed_again(months: Mnemo):
    first = plan(months)
    assert first.musings and first.merges
    propose(months, first)
    for proposal in months.proposals.pending():
        if proposal.kind == "tidy" and proposal.payload.get("change") in ("musing", "merge"):
            months.proposals.reject(proposal.id)
    again = plan(months)
    assert again.musings == [] and again.merges == []
    assert [note.text for note, _ in again.history] == [note.text for note, _ in first.history]
