"""Document loaders: a file in, its text out as sections that keep the document's structure.

A section is a page (PDF), the text under a heading (Markdown, Word, HTML) or a stretch of lines
(plain text and source code, read in pieces so a large file never sits in memory whole). Parsing
is left to well-kept libraries: pypdf, python-docx, Beautiful Soup, markdown-it-py, and
charset-normalizer for text whose encoding is not UTF-8. A file that cannot be read raises
``DocumentError`` with a sentence saying why; an unsupported one raises ``UnsupportedFile``.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from engine.errors import MnemoError

logging.getLogger("pypdf").setLevel(logging.ERROR)  # damaged files are reported per file

TEXT_PIECE_BYTES = 256 * 1024  # plain text is read and yielded this much at a time
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
HTML_SUFFIXES = frozenset({".html", ".htm", ".xhtml"})


class DocumentError(MnemoError):
    """A file that should be readable but is not (damaged, encrypted, not text...)."""


class UnsupportedFile(DocumentError):
    """A file type Mnemo does not read; it is skipped, not an error."""


@dataclass(frozen=True)
class Section:
    text: str
    label: str | None = None  # "page 3", "Setup > Linux", "lines 1-400"


def is_supported(path: Path) -> bool:
    suffix = path.suffix.lower()
    return (
        suffix in TEXT_SUFFIXES
        or suffix in MARKDOWN_SUFFIXES
        or suffix in HTML_SUFFIXES
        or suffix in (".pdf", ".docx")
        or (not suffix and path.name.lower() in TEXT_NAMES)
    )


def load(path: Path) -> Iterator[Section]:
    """The sections of a document, in order."""
    suffix = path.suffix.lower()
    if suffix == ".pdf":
        return _pdf(path)
    if suffix == ".docx":
        return _docx(path)
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


def read_text(path: Path) -> str:
    """A whole (small) text file, decoded with its own encoding."""
    return path.read_text(encoding=_encoding(path), errors="replace")


def _text(path: Path) -> Iterator[Section]:
    encoding = _encoding(path)
    with path.open("r", encoding=encoding, errors="replace", newline=None) as file:
        line_number = 0
        while True:
            lines = file.readlines(TEXT_PIECE_BYTES)
            if not lines:
                return
            first = line_number + 1
            line_number += len(lines)
            text = "".join(lines)
            if text.strip():
                yield Section(text, f"lines {first}-{line_number}")


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
            text = reader.pages[number].extract_text() or ""
        except (PdfReadError, ValueError, KeyError, TypeError) as error:
            raise DocumentError(f"page {number + 1} is damaged ({error})") from error
        if text.strip():
            yield Section(text, f"page {number + 1}")


def _headed(blocks: Iterator[tuple[int, str]]) -> Iterator[Section]:
    """Group (heading level or 0, text) blocks into sections labelled by their heading path.

    Each section's text starts with its heading, so that words of the heading find it too.
    """
    path: list[str] = []
    body: list[str] = []
    for level, text in blocks:
        if level:
            if body:
                yield Section("\n\n".join(body), " > ".join(path) or None)
            path = [*path[: level - 1], text.strip()]
            body = [text.strip()] if text.strip() else []
        elif text.strip():
            body.append(text.strip())
    if body:
        yield Section("\n\n".join(body), " > ".join(path) or None)


def _docx(path: Path) -> Iterator[Section]:
    import docx
    from docx.opc.exceptions import PackageNotFoundError

    try:
        document = docx.Document(str(path))
    except (PackageNotFoundError, KeyError, ValueError, OSError) as error:
        raise DocumentError(f"it is not a readable Word document ({error})") from error
    except Exception as error:  # zipfile and lxml raise their own types for damaged files
        raise DocumentError(f"it is not a readable Word document ({error})") from error

    def blocks() -> Iterator[tuple[int, str]]:
        for paragraph in document.paragraphs:
            style = (paragraph.style.name if paragraph.style is not None else "") or ""
            level = 0
            if style.startswith("Heading"):
                digits = style.removeprefix("Heading").strip()
                level = int(digits) if digits.isdigit() else 1
            elif style == "Title":
                level = 1
            yield level, paragraph.text
        for table in document.tables:
            for row in table.rows:
                yield 0, " | ".join(cell.text.strip() for cell in row.cells)

    return _headed(blocks())


def _markdown(path: Path) -> Iterator[Section]:
    from markdown_it import MarkdownIt

    text = read_text(path)
    lines = text.splitlines()
    tokens = MarkdownIt("commonmark").parse(text)
    headings: list[tuple[int, int, str]] = []  # (first line, level, title)
    for index, token in enumerate(tokens):
        if token.type == "heading_open" and token.map:
            title = tokens[index + 1].content if index + 1 < len(tokens) else ""
            headings.append((token.map[0], int(token.tag[1]), title))

    def blocks() -> Iterator[tuple[int, str]]:
        start = 0
        for line, level, title in headings:
            yield 0, "\n".join(lines[start:line])
            yield level, title
            start = line + 1
        yield 0, "\n".join(lines[start:])

    return _headed(blocks())


def _html(path: Path) -> Iterator[Section]:
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(io.StringIO(read_text(path)), "html.parser")
    for tag in soup(["script", "style", "noscript", "template", "svg"]):
        tag.decompose()
    body = soup.body or soup

    def blocks() -> Iterator[tuple[int, str]]:
        names = ["h1", "h2", "h3", "h4", "h5", "h6", "p", "li", "pre", "td", "th", "blockquote"]
        for element in body.find_all(names):
            if element.find_parent(names) is not None:
                continue  # nested: its text comes with the outer element
            text = element.get_text(" ", strip=True)
            if element.name and element.name[0] == "h" and element.name[1:].isdigit():
                yield int(element.name[1]), text
            else:
                yield 0, text

    sections = list(_headed(blocks()))
    if not sections:  # a page without paragraph markup: take all its text
        text = body.get_text("\n", strip=True)
        if text:
            sections = [Section(text, soup.title.get_text(strip=True) if soup.title else None)]
    return iter(sections)
