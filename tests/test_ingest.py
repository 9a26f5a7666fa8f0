"""Document ingestion with real files of each type, a real watchdog observer and bad input."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import docx
import pytest
from agent_helpers import say, search
from fpdf import FPDF

from engine.agent import Agent
from engine.cli import main
from engine.ingest.chunking import CHUNK_WORDS, chunk_sections
from engine.ingest.ingestor import FileResult, Ingestor
from engine.ingest.watch import FolderWatcher, WatchedFolders
from engine.llm import ScriptedModel
from engine.loaders import Section

FRENCH = (
    "Le café de la place était fermé. Nous avons mangé une crème brûlée près de la façade, puis "
    "marché vers l'hôtel où nous étions déjà allés l'été dernier. Très agréable !"
)


def write_pdf(path: Path, pages: list[str]) -> None:
    pdf = FPDF()
    pdf.set_font("Helvetica", size=12)
    for text in pages:
        pdf.add_page()
        pdf.multi_cell(0, 8, text)
    pdf.output(str(path))


def write_docx(path: Path) -> None:
    document = docx.Document()
    document.add_heading("Apartment lease", 1)
    document.add_paragraph("The rent of 950 euros is due on the first day of each month.")
    document.add_heading("Deposit", 2)
    document.add_paragraph("The deposit is two months of rent, returned within 30 days.")
    document.save(str(path))


@pytest.fixture
def library(tmp_path: Path) -> Path:
    """One folder with a document of every supported kind."""
    folder = tmp_path / "library"
    folder.mkdir()
    (folder / "trip.md").write_text(
        "# Trip to Rome\n\nWe leave on May 3.\n\n## Budget\n\nThe budget is 2000 euros.\n\n"
        "```\n# a comment in code, not a heading\n```\n"
    )
    (folder / "garden.txt").write_text("Tomatoes need water daily.\n\nBasil likes sun.\n")
    (folder / "page.html").write_text(
        "<html><head><title>Bikes</title><script>track()</script></head><body>"
        "<h1>Bicycle care</h1><p>Oil the chain every month.</p><ul><li>Check tyre pressure"
        "</li></ul></body></html>"
    )
    (folder / "tool.py").write_text("def greet():\n    return 'hello from the greeting tool'\n")
    (folder / "french.txt").write_bytes(FRENCH.encode("latin-1"))
    write_pdf(folder / "passport.pdf", ["The passport number is X123.", "The visa expires 2027."])
    write_docx(folder / "lease.docx")
    (folder / "photo.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(100))
    (folder / ".git").mkdir()
    (folder / ".git" / "config.txt").write_text("hidden repository data")
    (folder / "node_modules").mkdir()
    (folder / "node_modules" / "pkg.md").write_text("# Package readme")
    return folder


def sources(mnemo, path: Path) -> list[tuple[str | None, int | None, str]]:
    return [
        (p.source.section, p.source.chunk, p.text) for p in mnemo.archival.list_by_source(str(path))
    ]


def test_every_kind_of_document_is_read_with_its_structure(mnemo, library):
    progress = Ingestor(mnemo).ingest([library])
    outcomes = {Path(r.path).name: r.outcome for r in progress.results}
    assert outcomes == {
        name: "done"
        for name in (
            "french.txt",
            "garden.txt",
            "lease.docx",
            "page.html",
            "passport.pdf",
            "tool.py",
            "trip.md",
        )
    }  # png, .git and node_modules are not picked up from a folder
    assert sources(mnemo, library / "passport.pdf") == [
        ("page 1", 0, "The passport number is X123."),
        ("page 2", 1, "The visa expires 2027."),
    ]
    trip = sources(mnemo, library / "trip.md")
    assert [section for section, _, _ in trip] == ["Trip to Rome", "Trip to Rome > Budget"]
    assert "# a comment in code" in trip[1][2]
    lease = sources(mnemo, library / "lease.docx")
    assert lease[1][0] == "Apartment lease > Deposit" and "two months" in lease[1][2]
    html = sources(mnemo, library / "page.html")[0]
    assert html[0] == "Bicycle care" and "track()" not in html[2] and "tyre pressure" in html[2]
    assert sources(mnemo, library / "french.txt")[0][2] == FRENCH  # decoded from Latin-1
    hit = mnemo.archival.search("when does the visa expire", limit=1)[0]
    assert hit.source.path.endswith("passport.pdf") and hit.source.section == "page 2"
    assert hit.origin == "document" and not hit.trusted  # documents are untrusted input


def test_unchanged_files_are_skipped_and_changed_ones_replaced(mnemo, library):
    ingestor = Ingestor(mnemo)
    ingestor.ingest([library])
    count = mnemo.archival.count()
    again = ingestor.ingest([library])
    assert {r.outcome for r in again.results} == {"unchanged"}
    assert mnemo.archival.count() == count
    garden = library / "garden.txt"
    os.utime(garden, (time.time() + 10, time.time() + 10))  # touched, not changed
    assert ingestor.ingest_file(garden).outcome == "unchanged"
    garden.write_text("Tomatoes need water twice a day in July.\n")
    assert ingestor.ingest_file(garden).outcome == "done"
    assert [text for _, _, text in sources(mnemo, garden)] == [
        "Tomatoes need water twice a day in July."
    ]
    assert mnemo.archival.count() == count  # one passage replaced by one


def test_deleted_files_lose_their_passages(mnemo, library):
    ingestor = Ingestor(mnemo)
    ingestor.ingest([library])
    (library / "garden.txt").unlink()
    assert ingestor.ingest_file(library / "garden.txt").outcome == "removed"
    assert sources(mnemo, library / "garden.txt") == []
    (library / "trip.md").rename(library / "journey.md")
    progress = ingestor.reconcile(library)
    assert sources(mnemo, library / "trip.md") == []
    assert sources(mnemo, library / "journey.md")
    assert all(row.path != str(library / "trip.md") for row in ingestor.documents())
    assert "journey.md" in {Path(r.path).name for r in progress.results if r.outcome == "done"}


def test_a_rerun_drops_a_deleted_file_however_the_folder_is_named(mnemo, library, monkeypatch):
    ingestor = Ingestor(mnemo)
    ingestor.ingest([library])
    (library / "garden.txt").unlink()
    progress = ingestor.ingest([library])  # the same folder, given the same way
    assert "removed" in {r.outcome for r in progress.results}
    assert sources(mnemo, library / "garden.txt") == []
    assert all(Path(row.path).name != "garden.txt" for row in ingestor.documents())
    (library / "trip.md").unlink()
    monkeypatch.chdir(library.parent)  # the folder given relative, with a detour
    progress = ingestor.ingest([Path(library.name) / ".." / library.name])
    assert sources(mnemo, library / "trip.md") == []
    assert all(".." not in row.path for row in ingestor.documents())


def test_a_crash_mid_ingestion_resumes_without_duplicates(mnemo, library, profile_dir, embedder):
    from engine import Mnemo

    ingestor = Ingestor(mnemo)
    files = ingestor.collect([library])
    ingestor.index.queue(str(path) for path in files)
    # As if the process died while writing the PDF: some passages written, status "indexing".
    ingestor.ingest_file(library / "passport.pdf")
    ingestor.index.set(str(library / "passport.pdf"), status="indexing")
    mnemo.close()
    with Mnemo.open(profile_dir, embedder=embedder) as reopened:
        resumed = Ingestor(reopened).resume()
        assert resumed.files_total == len(files)
        assert {r.outcome for r in resumed.results} == {"done"}
        assert len(sources(reopened, library / "passport.pdf")) == 2  # not 4
        assert {row.status for row in Ingestor(reopened).documents()} == {"done"}


def test_cancel_stops_between_files_and_leaves_the_rest_queued(mnemo, library):
    cancel = threading.Event()
    ingestor = Ingestor(mnemo)
    started: list[str] = []

    def stop_at_the_second_file(progress):
        if progress.current and progress.current not in started:
            started.append(progress.current)
            if len(started) == 2:
                cancel.set()  # stop while the second file is being read

    progress = ingestor.ingest([library], progress=stop_at_the_second_file, cancel=cancel)
    assert [r.outcome for r in progress.results] == ["cancelled", "done"]
    queued = [row for row in ingestor.documents() if row.status == "queued"]
    assert len(queued) == 6  # the stopped file and those never started
    assert mnemo.archival.count() == 1  # nothing of the stopped file was kept
    assert ingestor.resume().files_done == 6
    assert {row.status for row in ingestor.documents()} == {"done"}


# -- bad input ---------------------------------------------------------------------------------


def test_bad_files_each_get_an_error_and_the_batch_goes_on(mnemo, tmp_path, monkeypatch):
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "broken.pdf").write_bytes(b"%PDF-1.4\n1 0 obj garbage")
    (bad / "empty.txt").write_text("")
    (bad / "binary.txt").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(500))
    with (bad / "huge.txt").open("wb") as file:  # 200 MB, sparse: nothing is read
        file.truncate(200 * 2**20)
    (bad / "locked.txt").write_text("secret")
    (bad / "loop.txt").symlink_to(bad / "loop.txt")
    (bad / "fake.docx").write_text("not a zip")
    (bad / "good.md").write_text("# Fine\n\nThis one is fine.")
    real_open = Path.open

    def no_permission(self, *args, **kwargs):  # tests run as root, which chmod cannot stop
        if self.name == "locked.txt":
            raise PermissionError(13, "Permission denied", str(self))
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", no_permission)
    progress = Ingestor(mnemo).ingest([bad])
    errors = {Path(r.path).name: (r.outcome, r.error) for r in progress.results}
    assert errors["good.md"] == ("done", None)
    assert errors["broken.pdf"][0] == "error" and "not a readable PDF" in errors["broken.pdf"][1]
    assert errors["empty.txt"] == ("skipped", "it is empty")
    assert errors["binary.txt"][0] == "error" and "binary data" in errors["binary.txt"][1]
    assert errors["huge.txt"][0] == "error" and "200 MB" in errors["huge.txt"][1]
    assert errors["locked.txt"] == ("error", "Mnemo has no permission to read it")
    assert errors["loop.txt"] == (
        "error",
        "it is a symbolic link that points to itself (a link loop)",
    )
    assert errors["fake.docx"][0] == "error" and "Word document" in errors["fake.docx"][1]
    assert mnemo.archival.count() == 1
    assert progress.errors == 6


def test_a_file_deleted_while_being_read(mnemo, tmp_path, monkeypatch):
    doomed = tmp_path / "doomed.txt"
    doomed.write_text("First part.\n" * 10)
    import engine.ingest.ingestor as ingestor_module

    real_load = ingestor_module.load

    def load_then_delete(path, **options):
        sections = real_load(path, **options)
        path.unlink()
        raise FileNotFoundError(2, "No such file", str(path))
        yield from sections  # pragma: no cover

    monkeypatch.setattr(ingestor_module, "load", load_then_delete)
    result = Ingestor(mnemo).ingest_file(doomed)
    assert result.outcome == "error" and "deleted or moved while being read" in result.error
    assert mnemo.archival.count() == 0


def test_large_text_is_streamed_in_pieces(mnemo, tmp_path):
    big = tmp_path / "big.txt"
    paragraph = "Sailing notes about wind, tide and knots in the harbour. " * 20
    big.write_text("\n\n".join(f"{number}. {paragraph}" for number in range(3000)))  # ~3.5 MB
    from engine.loaders import load

    sections = list(load(big))
    assert len(sections) > 10 and all(len(s.text) <= 300 * 1024 for s in sections)
    assert sections[1].label.startswith("lines ")


def test_chunks_follow_paragraphs_and_overlap():
    paragraphs = [" ".join(f"p{p}w{i}" for i in range(70)) for p in range(6)]
    chunks = list(
        chunk_sections([Section("\n\n".join(paragraphs), "Intro"), Section("A short one.", "End")])
    )
    assert all(len(c.text.split()) <= CHUNK_WORDS + 24 for c in chunks)
    assert chunks[0].text.startswith("p0w0") and chunks[1].text.split()[0] == "p1w46"
    assert [c.position for c in chunks] == list(range(len(chunks)))
    assert chunks[-1].section == "End"
    every = set(" ".join(c.text for c in chunks).split())
    assert all(word in every for p in paragraphs for word in p.split())
    one_long_sentence = Section(" ".join(f"w{i}" for i in range(500)))
    assert all(len(c.text.split()) <= CHUNK_WORDS + 24 for c in chunk_sections([one_long_sentence]))


def test_each_passage_of_a_code_file_names_its_own_lines(mnemo, tmp_path):
    """Every passage of a 2,812-line file said "lines 1-2812": a source link pointed nowhere."""
    code = tmp_path / "tool.py"
    body = [f"def step_{n}(value):  # step {n}\n    return value + {n}\n" for n in range(900)]
    code.write_text("\n".join(body), encoding="utf-8")
    lines = code.read_text(encoding="utf-8").splitlines()
    Ingestor(mnemo).ingest_file(code)
    passages = mnemo.archival.list_by_source(str(code))
    assert len(passages) > 20
    spans = set()
    for passage in passages:
        first, last = (int(n) for n in passage.source.section.removeprefix("lines ").split("-"))
        spans.add((first, last))
        assert last - first < 120  # its own lines, not the file's
        words = passage.text.split()
        assert words[0] in lines[first - 1] and words[-1] in lines[last - 1]
    assert len(spans) == len(passages)


# -- watched folders ---------------------------------------------------------------------------


def wait_for(condition, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


@contextmanager
def watching(mnemo, debounce_s: float) -> Iterator[list[FileResult]]:
    """The profile's watched folders watched, once caught up at start; what the watcher
    reports comes in the list."""
    results: list[FileResult] = []
    watcher = FolderWatcher(mnemo, debounce_s=debounce_s, on_result=results.append)
    watcher.start()
    try:
        assert watcher.wait_until_idle()
        yield results
    finally:
        watcher.stop()


def test_a_watched_folder_stays_in_sync(mnemo, tmp_path):
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "old.md").write_text("# Old\n\nWritten before watching started.")
    WatchedFolders(mnemo).add(folder)
    with watching(mnemo, debounce_s=0.3) as results:
        assert sources(mnemo, folder / "old.md")  # the start-up reconciliation
        # An editor saving five times in a burst is indexed once.
        for number in range(5):
            (folder / "draft.md").write_text(f"# Draft\n\nVersion {number} of the draft.")
            time.sleep(0.03)
        wait_for(lambda: any("Version 4" in t for _, _, t in sources(mnemo, folder / "draft.md")))
        done = [r for r in results if r.path.endswith("draft.md") and r.outcome == "done"]
        assert len(done) == 1
        (folder / "draft.md").rename(folder / "final.md")
        wait_for(
            lambda: sources(mnemo, folder / "final.md") and not sources(mnemo, folder / "draft.md")
        )
        (folder / "old.md").unlink()
        wait_for(lambda: not sources(mnemo, folder / "old.md"))
        (folder / ".git").mkdir()
        (folder / ".git" / "HEAD.txt").write_text("ref: refs/heads/main")
        (folder / "sub").mkdir()
        (folder / "sub" / "deep.txt").write_text("Deep inside a new folder.")
        wait_for(lambda: sources(mnemo, folder / "sub" / "deep.txt"))
        assert not sources(mnemo, folder / ".git" / "HEAD.txt")


def test_changes_while_closed_are_caught_at_start(mnemo, tmp_path):
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.txt").write_text("Apples are red.")
    (folder / "b.txt").write_text("Bananas are yellow.")
    WatchedFolders(mnemo).add(folder)
    Ingestor(mnemo).reconcile(folder)
    (folder / "a.txt").unlink()
    (folder / "b.txt").write_text("Bananas are yellow when ripe.")
    (folder / "c.txt").write_text("Cherries are dark red.")
    with watching(mnemo, debounce_s=0.2):
        pass  # caught up at start
    names = sorted(Path(p.source.path).name for p in mnemo.archival.recent(100))
    assert names == ["b.txt", "c.txt"]
    assert "when ripe" in sources(mnemo, folder / "b.txt")[0][2]


# -- command line ------------------------------------------------------------------------------


def test_ingest_watch_and_sources_commands(library, profile_dir, capsys, tmp_path):
    base = ["--profile", str(profile_dir)]
    (library / "bad.txt").write_bytes(b"\x00\x01\x02binary")
    assert main([*base, "ingest", str(library)]) == 1  # one file failed
    out = capsys.readouterr().out
    assert "8 files: 7 done, 1 error" in out and "bad.txt: it holds binary data" in out
    assert main([*base, "ingest", str(library)]) == 1
    assert "7 unchanged" in capsys.readouterr().out
    assert main([*base, "sources", "--errors"]) == 0
    assert "bad.txt" in capsys.readouterr().out
    assert main([*base, "sources", "--json"]) == 0
    assert '"status": "done"' in capsys.readouterr().out
    other = tmp_path / "other"
    other.mkdir()
    (other / "x.md").write_text("# X\n\nSomething about xylophones.")
    assert main([*base, "watch", "add", str(other)]) == 0
    assert "1 files: 1 done" in capsys.readouterr().out
    assert main([*base, "watch", "list"]) == 0
    assert str(other) in capsys.readouterr().out
    assert main([*base, "search", "archival", "xylophones"]) == 0
    assert "x.md" in capsys.readouterr().out
    assert main([*base, "watch", "remove", str(other)]) == 0
    assert "removed its 1 passages" in capsys.readouterr().out
    assert main([*base, "snapshot", "list"]) == 0  # taken first: the passages can come back
    assert f"before removing {other} and its passages" in capsys.readouterr().out
    assert main([*base, "watch", "add", str(library / "garden.txt")]) == 1
    assert "is not a folder" in capsys.readouterr().err


def test_chat_works_while_a_folder_is_ingested(mnemo, library):
    for number in range(40):
        (library / f"extra-{number}.md").write_text(f"# Extra {number}\n\n" + "Words. " * 300)
    mnemo.archival.insert("The spare key is under the blue flowerpot.")
    seen: list[int] = []
    worker = threading.Thread(
        target=lambda: Ingestor(mnemo).ingest(
            [library], progress=lambda p: seen.append(p.files_done)
        )
    )
    worker.start()
    model = ScriptedModel()
    model.enqueue([search("spare key"), say("Under the blue flowerpot.")])
    result = Agent(mnemo, model).send("Where is the spare key?")
    during = worker.is_alive()
    worker.join()
    assert result.reply == "Under the blue flowerpot."
    assert during, "ingestion finished before the turn; the test proves nothing"
    assert max(seen) == 47


def test_two_processes_ingesting_at_once_write_each_passage_once(library, profile_dir, embedder):
    """A watcher in one Mnemo and `mnemo ingest` in another must not both index a file."""
    import subprocess
    import sys

    from engine import Mnemo

    for number in range(30):
        (library / f"note-{number}.md").write_text(f"# Note {number}\n\n" + "Rivers. " * 400)
    command = [
        sys.executable,
        "-m",
        "engine.cli",
        "--profile",
        str(profile_dir),
        "ingest",
        str(library),
    ]
    first = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.5)
    second = subprocess.run(command, capture_output=True, text=True, timeout=300)
    first.communicate(timeout=300)
    with Mnemo.open(profile_dir, embedder=embedder) as mnemo:
        passages = mnemo.archival.recent(100_000)
        places = [(p.source.path, p.source.chunk) for p in passages]
        assert len(places) == len(set(places)), "some passages were written twice"
        assert {row.status for row in Ingestor(mnemo).documents()} == {"done"}
    assert "waiting for it to finish" in second.stderr


def test_a_link_in_a_folder_to_a_file_outside_it_is_skipped_and_said(mnemo, tmp_path):
    """A link named ``innocent.md`` in a watched folder, pointing at a secret elsewhere, was
    read; any MCP client could then read the secret."""
    secret = tmp_path / "secret.md"
    secret.write_text("# Keys\n\nThe safe code is 55-1290.", encoding="utf-8")
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "plan.md").write_text("# Plan\n\nRepaint the hall.", encoding="utf-8")
    (folder / "innocent.md").symlink_to(secret)
    (folder / "plan-link.md").symlink_to(folder / "plan.md")  # a link inside is read
    results = {Path(r.path).name: r for r in Ingestor(mnemo).ingest([folder]).results}
    assert results["innocent.md"].outcome == "skipped"
    assert f"a link to a file outside {folder}" in (results["innocent.md"].error or "")
    assert results["plan.md"].outcome == results["plan-link.md"].outcome == "done"
    assert all("55-1290" not in p.text for p in mnemo.archival.recent(20))
    # And when watching: at the start, and when a link appears later.
    WatchedFolders(mnemo).add(folder)
    with watching(mnemo, debounce_s=0.2) as seen:
        (folder / "later.md").symlink_to(secret)
        wait_for(lambda: any(r.path.endswith("later.md") for r in seen))
        (later,) = [r for r in seen if r.path.endswith("later.md")]
        assert later.outcome == "skipped" and "outside" in (later.error or "")
    assert all("55-1290" not in p.text for p in mnemo.archival.recent(20))


def test_a_real_basic_memory_note_is_read_without_its_front_matter(mnemo, real_files):
    """basic-memory writes notes with YAML front matter (title, type, permalink). Read as
    Markdown, it became a heading "title: … type: note permalink: …" over every section; the
    title is the note's heading now, and the rest is not passage text."""
    from engine.loaders import load

    (note,) = (real_files / "basic_memory").glob("*.md")
    sections = list(load(note))
    title = "Task 1 Scaffold TanStack Start client-only app with pnpm and pinned Node LTS"
    assert all(section.label and section.label.startswith(title) for section in sections)
    assert not any("permalink" in section.text for section in sections)
    assert any(section.label == f"{title} > Development Log: 1 > Objective" for section in sections)
    Ingestor(mnemo).ingest_file(note)
    (hit,) = mnemo.archival.search("Which Node version is pinned, 24.14.0?", 1)
    assert "Pin Node LTS to 24.14.0" in hit.text and hit.source.path == str(note)
    assert hit.source.section == f"{title} > Development Log: 1 > Key Decisions"
    assert not [p for p in mnemo.archival.list_by_source(str(note)) if "permalink" in p.text]


def test_a_pdf_whose_pages_hold_megabytes_of_drawing_is_refused_at_once(mnemo, tmp_path):
    """Ten pages of 20 MB of drawing instructions each ran 365 s in 1.0 GB, six minutes past
    the file's limit: the deadline is checked between pages, and pypdf read one page for a
    minute. A page holding far more than a page of text is refused before it is read."""
    from pypdf import PdfWriter
    from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject

    from engine.loaders import PDF_PAGE_BYTES

    writer = PdfWriter()
    drawing = b"BT /F1 12 Tf 10 10 Td (word) Tj ET\n"
    font = DictionaryObject(
        {
            NameObject("/Type"): NameObject("/Font"),
            NameObject("/Subtype"): NameObject("/Type1"),
            NameObject("/BaseFont"): NameObject("/Helvetica"),
        }
    )
    for _ in range(2):
        page = writer.add_blank_page(612, 792)
        stream = DecodedStreamObject()
        stream.set_data(drawing * (PDF_PAGE_BYTES // len(drawing) + 1000))
        page[NameObject("/Contents")] = writer._add_object(stream)
        page[NameObject("/Resources")] = DictionaryObject(
            {NameObject("/Font"): DictionaryObject({NameObject("/F1"): font})}
        )
    path = tmp_path / "drawing.pdf"
    with path.open("wb") as out:
        writer.write(out)
    result = Ingestor(mnemo).ingest_file(path)
    assert result.outcome == "error"
    assert "MB of drawing instructions" in (result.error or "")
    assert mnemo.archival.count() == 0
