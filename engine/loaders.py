"""Document loaders: a file in, its text out as sections that keep the document's structure.

A section is a page (PDF), the text under a heading (Markdown, Word, HTML) or a stretch of lines
(plain text and source code). Every format is read as a stream, in pieces, so a large file never
sits in memory whole. Parsing is left to well-kept libraries: pypdf, lxml (Word's XML), the
standard library's incremental HTML parser, markdown-it-py, and charset-normalizer for text whose
encoding is not UTF-8. A file that cannot be read raises
``DocumentError`` with a sentence saying why; an unsupported one raises ``UnsupportedFile``.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import IO, Any, TextIO

from engine.errors import MnemoError

logging.getLogger("pypdf").setLevel(logging.ERROR)  # damaged files are reported per file

TEXT_PIECE_CHARS = 256 * 1024  # text is read and yielded about this much at a time
# A PDF page's drawing instructions, at most: a dense page of text holds well under 1 MB; one of
# 20 MB took pypdf a minute and a gigabyte to read (ten of them, 6 minutes past the file's limit).
PDF_PAGE_BYTES = 4 * 2**20
SNIFF_BYTES = 64 * 1024

TEXT_SUFFIXES = frozenset(
    """.txt .text .log .rst .org .tex .csv .tsv .json .jsonl .yaml .yml .toml .ini .cfg .conf
    .xml .py .pyi .js .jsx .ts .tsx .java .kt .kts .scala .c .h .cc .cpp .hpp .cs .go .rs .rb
    .php .pl .lua .r .m .swift .sh .bash .zsh .fish .ps1 .bat .sql .css .scss .less .vue
    .svelte .dart .ex .exs .erl .hs .ml .clj .el .vim .gradle .cmake .mk .dockerfile .proto
    .graphql .ipynb""".split()
)
TEXT_NAMES = frozenset({"readme", "license", "makefile", "dockerfile", "changelog", "notes"})
MARKDOWN_SUFFIXES = frozenset({".md", ".markdown", ".mdx"})
FRONT_MATTER_LINES = 200  # the most lines of front matter looked through for its end
HTML_SUFFIXES = frozenset({".html", ".htm", ".xhtml"})


class DocumentError(MnemoError):
    """A file that should be readable but is not (damaged, encrypted, not text...)."""


class UnsupportedFile(DocumentError):
    """A file type Mnemo does not read; it is skipped, not an error."""


@dataclass(frozen=True)
class Section:
    text: str
    label: str | None = None  # "page 3", "Setup > Linux", "lines 1-400"
    # The file's line where ``text`` starts, for text read by lines: each passage cut from it
    # then names its own lines ("lines 212-240"), not the whole section's.
    first_line: int | None = None


def is_supported(path: Path) -> bool:
    suffix = path.suffix.lower()
    return (
        suffix in TEXT_SUFFIXES
        or suffix in MARKDOWN_SUFFIXES
        or suffix in HTML_SUFFIXES
        or suffix in (".pdf", ".docx")
        or (not suffix and path.name.lower() in TEXT_NAMES)
    )


def load(path: Path, unpacked_limit: int = 100 * 2**20) -> Iterator[Section]:
    """The sections of a document, in order, read as a stream. ``unpacked_limit``: the most
    bytes a packed format (Word) may unpack to."""
    suffix = path.suffix.lower()
    if suffix == ".pdf":
        return _pdf(path)
    if suffix == ".docx":
        return _docx(path, unpacked_limit)
    if suffix in MARKDOWN_SUFFIXES:
        return _markdown(path)
    if suffix in HTML_SUFFIXES:
        return _html(path)
    if is_supported(path):
        return _text(path)
    raise UnsupportedFile(
        f"{suffix or 'files without an extension'} is not a document type Mnemo reads"
    )


# -- text --------------------------------------------------------------------------------------


def _encoding(path: Path) -> str:
    """UTF-8 when the start of the file is UTF-8, else charset-normalizer's best guess.

    NUL bytes mean binary data (an image or archive renamed to .txt): refused, not garbled.
    """
    with path.open("rb") as file:
        head = file.read(SNIFF_BYTES)
    if b"\x00" in head and not head.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise DocumentError("it holds binary data, not text (is it really a text file?)")
    try:
        head.decode("utf-8")
        return "utf-8-sig"
    except UnicodeDecodeError as error:
        if error.start >= len(head) - 4:  # a character cut at the end of the sample
            return "utf-8-sig"
    import charset_normalizer

    matches = list(charset_normalizer.from_bytes(head))
    if not matches:
        raise DocumentError("its text encoding could not be recognised (is it binary data?)")
    # Among the least chaotic readings, the most coherent; Windows-1252, the most common legacy
    # encoding, wins ties (charset-normalizer alone often picks a Central European code page).
    least = min(match.chaos for match in matches)
    close = [match for match in matches if match.chaos <= least + 0.05]
    best = max(close, key=lambda m: (round(m.coherence, 2), m.encoding == "cp1252"))
    return best.encoding


def _text(path: Path) -> Iterator[Section]:
    encoding = _encoding(path)
    with path.open("r", encoding=encoding, errors="replace", newline=None) as file:
        line = 1
        for piece in text_pieces(file):
            first, line = line, line + piece.count("\n")
            last = line - 1 if piece.endswith("\n") else line  # a piece may end inside a line
            if piece.strip():
                yield Section(piece, f"lines {first}-{last}", first)


def text_pieces(file: TextIO, size: int = TEXT_PIECE_CHARS) -> Iterator[str]:
    """A text file in pieces of about ``size`` characters, cut after a line where there is one
    and between words where not, so that a file on one enormous line never sits in memory whole."""
    carried = ""
    while True:
        read = file.read(size)
        text = carried + read
        if len(read) < size:  # the end of the file (a text file reads short only there)
            if text:
                yield text
            return
        cut = text.rfind("\n") + 1 or max(text.rfind(" "), text.rfind("\t")) + 1 or len(text)
        carried = text[cut:]
        yield text[:cut]


# -- structured formats ------------------------------------------------------------------------


def _pdf(path: Path) -> Iterator[Section]:
    import pypdf
    from pypdf.errors import PdfReadError

    try:
        reader = pypdf.PdfReader(path)
        if reader.is_encrypted:
            try:
                if not reader.decrypt(""):
                    raise DocumentError("it is password-protected; save an unprotected copy")
            except NotImplementedError as error:
                raise DocumentError(
                    f"it is encrypted in a way pypdf cannot open ({error})"
                ) from error
        pages = len(reader.pages)
    except (PdfReadError, ValueError, KeyError, TypeError) as error:
        raise DocumentError(f"it is not a readable PDF ({error})") from error
    for number in range(pages):
        try:
            page = reader.pages[number]
            contents = page.get_contents()
            drawn = len(contents.get_data()) if contents is not None else 0
            if drawn > PDF_PAGE_BYTES:  # pypdf reads such a page for minutes, in a gigabyte
                raise DocumentError(
                    f"page {number + 1} holds {drawn / 2**20:.0f} MB of drawing instructions, far "
                    "more than a page of text, so the file was not read; save it again from the "
                    "program that made it, or split it"
                )
            text = page.extract_text() or ""
        except (PdfReadError, ValueError, KeyError, TypeError) as error:
            raise DocumentError(f"page {number + 1} is damaged ({error})") from error
        if text.strip():
            yield Section(text, f"page {number + 1}")


def _headed(blocks: Iterator[tuple[int, str]]) -> Iterator[Section]:
    """Group (heading level or 0, text) blocks into sections labelled by their heading path.

    Each section's text starts with its heading, so that words of the heading find it too.
    """
    path: list[tuple[int, str]] = []  # the open headings: (level, title)
    body: list[str] = []
    for level, text in blocks:
        if level:
            if body:
                yield Section("\n\n".join(body), " > ".join(t for _, t in path) or None)
            # A heading closes the ones at its level and below (siblings do not nest, even in
            # a document that starts at level 2).
            path = [*(open_ for open_ in path if open_[0] < level), (level, text.strip())]
            body = [text.strip()] if text.strip() else []
        elif text.strip():
            body.append(text.strip())
    if body:
        yield Section("\n\n".join(body), " > ".join(t for _, t in path) or None)


WORD = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
RELATIONSHIPS = "{http://schemas.openxmlformats.org/package/2006/relationships}"


def _docx(path: Path, unpacked_limit: int) -> Iterator[Section]:
    """A Word document read as a stream (lxml's iterparse over its XML inside the zip), so that
    memory stays flat however long it is. A package that unpacks past ``unpacked_limit`` bytes
    in all (a zip bomb, in any part) is refused unread."""
    import zipfile

    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, ValueError) as error:
        raise DocumentError(f"it is not a readable Word document ({error})") from error
    with archive:
        # Every part counts, ``_rels`` too, before any is read: zipfile never unpacks a part
        # past its declared size, so the sum bounds what reading can cost.
        unpacked = sum(info.file_size for info in archive.infolist())
        if unpacked > unpacked_limit:
            raise DocumentError(
                f"it unpacks to {unpacked / 2**20:,.0f} MB, more than the "
                f"{unpacked_limit / 2**20:,.0f} MB Mnemo reads (the setting ingest.max_file_mb); "
                "it may be damaged or built to exhaust memory"
            )
        document = _docx_part(archive, "_rels/.rels", "officeDocument") or "word/document.xml"
        styles = str(Path(document).parent / "styles.xml")
        parts = [archive.getinfo(n) for n in (document, styles) if n in archive.NameToInfo]
        if not parts or parts[0].filename != document:
            raise DocumentError("it is not a readable Word document (it has no document part)")
        names = _docx_style_names(archive, styles) if len(parts) > 1 else {}
        try:
            with archive.open(document) as part:
                yield from _headed(_docx_blocks(part, names))
        except (zipfile.BadZipFile, OSError, EOFError) as error:
            raise DocumentError(f"it is not a readable Word document ({error})") from error


def _docx_part(archive: Any, rels: str, kind: str) -> str | None:
    """The part a package relationship of ``kind`` points to, or None."""
    from lxml import etree

    try:
        root = etree.fromstring(archive.read(rels))
    except (KeyError, etree.XMLSyntaxError):
        return None
    for relation in root.iter(f"{RELATIONSHIPS}Relationship"):
        if relation.get("Type", "").endswith("/" + kind):
            return str(relation.get("Target", "")).lstrip("/") or None
    return None


def _docx_style_names(archive: Any, styles: str) -> dict[str, str]:
    """Style id -> style name ("Heading1" -> "heading 1")."""
    from lxml import etree

    try:
        root = etree.fromstring(archive.read(styles))
    except etree.XMLSyntaxError:
        return {}
    names = {}
    for style in root.iter(f"{WORD}style"):
        name = style.find(f"{WORD}name")
        if name is not None:
            names[style.get(f"{WORD}styleId", "")] = name.get(f"{WORD}val", "")
    return names


def _docx_blocks(part: IO[bytes], style_names: dict[str, str]) -> Iterator[tuple[int, str]]:
    """(heading level or 0, text) for each paragraph and table row, in document order."""
    from lxml import etree

    try:
        for _event, element in etree.iterparse(
            part, events=("end",), tag=(f"{WORD}p", f"{WORD}tr"), resolve_entities=False
        ):
            if element.tag == f"{WORD}tr":
                cells = [
                    " ".join(_docx_text(p) for p in cell.iter(f"{WORD}p")).strip()
                    for cell in element.iter(f"{WORD}tc")
                ]
                yield 0, " | ".join(cells)
            elif _docx_in_table(element):
                continue  # its row yields it
            else:
                style = element.find(f"{WORD}pPr/{WORD}pStyle")
                name = style_names.get(style.get(f"{WORD}val", ""), "") if style is not None else ""
                yield _heading_level(name), _docx_text(element)
            if not _docx_in_table(element):
                element.clear()  # what was read is freed as the parse goes on
                while element.getprevious() is not None:
                    del element.getparent()[0]
    except etree.XMLSyntaxError as error:
        raise DocumentError(f"it is not a readable Word document ({error})") from error


def _docx_in_table(element: Any) -> bool:
    parent = element.getparent()
    while parent is not None:
        if parent.tag == f"{WORD}tc":
            return True
        parent = parent.getparent()
    return False


def _docx_text(paragraph: Any) -> str:
    marks = {f"{WORD}tab": "\t", f"{WORD}br": "\n", f"{WORD}cr": "\n"}
    return "".join(
        marks.get(node.tag, node.text or "")
        for node in paragraph.iter(f"{WORD}t", f"{WORD}tab", f"{WORD}br", f"{WORD}cr")
    )


def _heading_level(style_name: str) -> int:
    """The outline level a paragraph style stands for: "heading 2" -> 2, "Title" -> 1."""
    name = style_name.strip().lower()
    if name == "title":
        return 1
    if name.startswith("heading"):
        digits = name.removeprefix("heading").strip()
        return int(digits) if digits.isdigit() else 1
    return 0


def _markdown(path: Path) -> Iterator[Section]:
    encoding = _encoding(path)
    with path.open("r", encoding=encoding, errors="replace", newline=None) as file:
        title = _front_matter_title(file)
        blocks = _markdown_blocks(file)
        if title:  # the note's title above its own headings, which go one level down
            below = ((level + 1 if level else 0, text) for level, text in blocks)
            blocks = itertools.chain([(1, title)], below)
        yield from _headed(blocks)


def _front_matter_title(file: TextIO) -> str | None:
    """Skip a note's YAML front matter (Obsidian, basic-memory, Hugo: ``---`` lines around
    ``title: …``, ``permalink: …``) and give its title. Read as Markdown, it became a heading
    "title: … type: note permalink: …" over every section. No front matter: nothing is read."""
    start = file.tell()
    if file.readline().strip() != "---":
        file.seek(start)
        return None
    title = None
    for _ in range(FRONT_MATTER_LINES):
        line = file.readline()
        if not line:
            break
        if line.strip() in ("---", "..."):
            return title or ""
        key, colon, value = line.partition(":")
        if colon and key.strip().lower() == "title":
            title = value.strip().strip("'\"") or None
    file.seek(start)  # no end of front matter: a document that begins with a rule
    return None


def _markdown_blocks(file: TextIO) -> Iterator[tuple[int, str]]:
    """(heading level or 0, text) blocks, parsed piece by piece: each piece ends at a blank line
    outside code fences, so a heading or a fence is never cut and memory stays flat."""
    from markdown_it import MarkdownIt

    parser = MarkdownIt("commonmark")
    for piece in _markdown_pieces(file):
        lines = piece.splitlines()
        tokens = parser.parse(piece)
        start = 0
        for index, token in enumerate(tokens):
            if token.type == "heading_open" and token.map:
                title = tokens[index + 1].content if index + 1 < len(tokens) else ""
                yield 0, "\n".join(lines[start : token.map[0]])
                yield int(token.tag[1]), title
                start = token.map[1]
        yield 0, "\n".join(lines[start:])


def _markdown_pieces(file: TextIO) -> Iterator[str]:
    lines: list[str] = []
    size = 0
    fenced = False
    for piece in text_pieces(file):
        for line in piece.splitlines(keepends=True):
            lines.append(line)
            size += len(line)
            stripped = line.strip()
            if stripped.startswith(("```", "~~~")):
                fenced = not fenced
            if size >= TEXT_PIECE_CHARS and (
                (not stripped and not fenced) or size >= 4 * TEXT_PIECE_CHARS
            ):
                yield "".join(lines)
                lines, size = [], 0
    if lines:
        yield "".join(lines)


def _html(path: Path) -> Iterator[Section]:
    """A web page read as a stream (the standard library's incremental HTML parser)."""
    encoding = _encoding(path)
    reader = _HtmlBlocks()
    with path.open("r", encoding=encoding, errors="replace", newline=None) as file:

        def blocks() -> Iterator[tuple[int, str]]:
            for piece in text_pieces(file):
                reader.feed(piece)
                yield from reader.take()
            reader.close()
            yield from reader.take()

        yield from _headed(blocks())


class _HtmlBlocks(HTMLParser):
    """Text of a page as (heading level or 0, text) blocks; scripts and styles are left out."""

    SKIPPED = frozenset({"script", "style", "noscript", "template", "svg", "head"})
    BLOCKS = frozenset(
        """p li pre td th tr blockquote div section article main aside header footer nav ul ol
        dl dt dd table figure figcaption form br hr""".split()
    )

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self._skipping = 0
        self._text: list[str] = []
        self._ready: list[tuple[int, str]] = []

    def take(self) -> list[tuple[int, str]]:
        ready, self._ready = self._ready, []
        return ready

    def _flush(self, level: int = 0) -> None:
        text = " ".join("".join(self._text).split())
        self._text = []
        if text or level:
            self._ready.append((level, text))

    @staticmethod
    def _heading(tag: str) -> int:
        return int(tag[1]) if len(tag) == 2 and tag[0] == "h" and tag[1] in "123456" else 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self.SKIPPED:
            self._skipping += 1
        elif not self._skipping and (tag in self.BLOCKS or self._heading(tag)):
            self._flush()

    def handle_endtag(self, tag: str) -> None:
        if tag in self.SKIPPED:
            self._skipping = max(0, self._skipping - 1)
        elif not self._skipping and self._heading(tag):
            self._flush(self._heading(tag))
        elif not self._skipping and tag in self.BLOCKS:
            self._flush()

    def handle_data(self, data: str) -> None:
        if not self._skipping:
            self._text.append(data)

    def close(self) -> None:
        super().close()
        self._flush()
