"""Peak memory of ingesting one large file, per case, each in a fresh process.

The cases are the ones that once ran away (hostile testing): a 95 MB Markdown file, a 95 MB text
file on one line, a 2.3 MB .docx whose XML unpacks to about 1 GB (a zip bomb), a 2,000-page PDF
and a 95 MB HTML file. Each is ingested by a child process under the time limit per file (a
minute plus ``ingest.seconds_per_mb`` per MB; 0 here by default, so a case takes a minute at
most). The child reports its peak resident memory (ru_maxrss), the outcome and the seconds
taken. Target: every peak under 1 GB. One JSON line out.

    uv run python tests/benchmarks/ingest_memory.py [--mb 95] [--seconds-per-mb 0] [--cases md,...]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from _common import REPO, TextGenerator, emit

CHILD = """
import json, resource, sys, time
sys.path.insert(0, {repo!r})
from engine import Mnemo
from engine.ingest.ingestor import Ingestor
path, profile, per_mb = sys.argv[1], sys.argv[2], int(sys.argv[3])
with Mnemo.open(profile) as mnemo:
    mnemo.settings.set("ingest.seconds_per_mb", per_mb)
    began = time.perf_counter()
    result = Ingestor(mnemo).ingest([path]).results[0]
    took = time.perf_counter() - began
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({{"outcome": result.outcome, "error": result.error, "passages": result.chunks,
                  "seconds": round(took, 1), "peak_rss_mb": round(peak)}}))
"""


def paragraphs(megabytes: float, seed: int = 0) -> list[str]:
    """About ``megabytes`` of English-like paragraphs (built from a few thousand, repeated)."""
    generator = TextGenerator(seed)
    base = [" ".join(generator.sentences(6)) for _ in range(2000)]
    size = sum(len(p) + 2 for p in base)
    return base * max(1, int(megabytes * 2**20 / size) + 1)


def markdown(path: Path, megabytes: float) -> None:
    with path.open("w") as file:
        for number, paragraph in enumerate(paragraphs(megabytes)):
            if number % 20 == 0:
                file.write(f"## Part {number // 20}\n\n")
            file.write(paragraph + "\n\n")


def one_line(path: Path, megabytes: float) -> None:
    with path.open("w") as file:
        for paragraph in paragraphs(megabytes):
            file.write(paragraph + " ")


def html(path: Path, megabytes: float) -> None:
    with path.open("w") as file:
        file.write("<html><body>\n")
        for number, paragraph in enumerate(paragraphs(megabytes)):
            if number % 20 == 0:
                file.write(f"<h2>Part {number // 20}</h2>\n")
            file.write(f"<p>{paragraph}</p>\n")
        file.write("</body></html>\n")


def docx_bomb(path: Path, unpacked_mb: int = 1000) -> None:
    """A valid .docx whose document.xml holds ``unpacked_mb`` of one repeated paragraph."""
    ns = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
    paragraph = "<w:p><w:r><w:t>" + "All work and no play makes Jack a dull boy. " * 20
    paragraph += "</w:t></w:r></w:p>"
    content_types = (
        '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/'
        'package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.'
        'openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType='
        '"application/xml"/><Override PartName="/word/document.xml" ContentType="application/'
        'vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>'
    )
    rels = (
        '<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats'
        '.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.'
        'openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target='
        '"word/document.xml"/></Relationships>'
    )
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        archive.writestr("[Content_Types].xml", content_types)
        archive.writestr("_rels/.rels", rels)
        with archive.open("word/document.xml", "w", force_zip64=True) as part:
            part.write(f'<?xml version="1.0"?><w:document {ns}><w:body>'.encode())
            block = (paragraph * 1000).encode()
            for _ in range(unpacked_mb * 2**20 // len(block)):
                part.write(block)
            part.write(b"</w:body></w:document>")


def pdf(path: Path, pages: int = 2000) -> None:
    """A plain PDF of ``pages`` pages of text, written by hand (no PDF library needed)."""
    texts = paragraphs(0.01)
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b""]  # the page tree is filled in below
    font = 3
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    kids = []
    for number in range(pages):
        lines = [texts[(number + i) % len(texts)][:90] for i in range(40)]
        stream = "BT /F1 10 Tf 40 800 Td 12 TL " + " ".join(
            f"({line.replace('(', '').replace(')', '')}) '" for line in lines
        )
        stream += " ET"
        content = len(objects) + 1
        objects.append(f"<< /Length {len(stream)} >>\nstream\n{stream}\nendstream".encode())
        kids.append(len(objects) + 1)
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents {content} 0 R "
            f"/Resources << /Font << /F1 {font} 0 R >> >> >>".encode()
        )
    objects[1] = (
        f"<< /Type /Pages /Count {pages} /Kids [{' '.join(f'{k} 0 R' for k in kids)}] >>"
    ).encode()
    with path.open("wb") as file:
        file.write(b"%PDF-1.4\n")
        offsets = []
        for number, body in enumerate(objects, start=1):
            offsets.append(file.tell())
            file.write(f"{number} 0 obj\n".encode() + body + b"\nendobj\n")
        start = file.tell()
        file.write(f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode())
        for offset in offsets:
            file.write(f"{offset:010d} 00000 n \n".encode())
        trailer = f"<< /Size {len(objects) + 1} /Root 1 0 R >>"
        file.write(f"trailer\n{trailer}\nstartxref\n{start}\n%%EOF\n".encode())


CASES = {
    "md": ("big.md", markdown),
    "txt": ("one-line.txt", one_line),
    "html": ("big.html", html),
    "docx": ("bomb.docx", lambda path, _mb: docx_bomb(path)),
    "pdf": ("long.pdf", lambda path, _mb: pdf(path)),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=95, help="size of the text cases")
    parser.add_argument("--seconds-per-mb", type=int, default=0, help="the setting, for the run")
    parser.add_argument("--cases", default=",".join(CASES))
    args = parser.parse_args()
    result: dict[str, object] = {"benchmark": "ingest_memory", "mb": args.mb}
    with tempfile.TemporaryDirectory() as folder:
        for case in args.cases.split(","):
            name, make = CASES[case]
            path = Path(folder) / name
            make(path, args.mb)
            child = subprocess.run(
                [
                    sys.executable,
                    "-c",
                    CHILD.format(repo=str(REPO)),
                    str(path),
                    str(Path(folder) / f"profile-{case}"),
                    str(args.seconds_per_mb),
                ],
                capture_output=True,
                text=True,
                check=False,
            )
            lines = child.stdout.strip().splitlines()
            report = json.loads(lines[-1]) if lines else {"crashed": child.stderr[-400:]}
            report["file_mb"] = round(path.stat().st_size / 2**20, 1)
            result[case] = report
            path.unlink()
    peaks = [r.get("peak_rss_mb", 10**6) for k, r in result.items() if isinstance(r, dict)]
    result["max_peak_rss_mb"] = max(peaks)
    result["under_1_gb"] = max(peaks) < 1024
    emit(result)


if __name__ == "__main__":
    main()
