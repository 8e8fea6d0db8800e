"""A report as a list of blocks (headings, paragraphs, tables, images, code), rendered to
Markdown and to a self-contained HTML page (images embedded as base64 PNG)."""

import base64
import html
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Bullets", "Code", "Heading", "Image", "Paragraph", "Table", "to_html", "to_markdown"]


@dataclass
class Table:
    """Rows of strings under a header, with a caption and footnotes."""

    header: list
    rows: list
    caption: str = ""
    notes: list = field(default_factory=list)


@dataclass
class Heading:
    level: int
    text: str


@dataclass
class Paragraph:
    text: str


@dataclass
class Bullets:
    items: list


@dataclass
class Code:
    """Preformatted text, collapsed under ``summary`` in HTML."""

    text: str
    summary: str


@dataclass
class Image:
    """A PNG written beside the report; embedded (base64) in the HTML page."""

    path: Path  # relative to the report folder
    caption: str


# -- rendering -----------------------------------------------------------------------------------


def _md_escape(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def to_markdown(blocks: list) -> str:
    """The blocks as Markdown (images linked by their relative path)."""
    out = []
    for block in blocks:
        if isinstance(block, Heading):
            out.append(f"{'#' * block.level} {block.text}")
        elif isinstance(block, Paragraph):
            out.append(block.text)
        elif isinstance(block, Bullets):
            out.append("\n".join(f"* {item}" for item in block.items))
        elif isinstance(block, Code):
            out.append(f"{block.summary}:\n\n```\n{block.text.rstrip()}\n```")
        elif isinstance(block, Image):
            out.append(f"![{block.caption}]({block.path.as_posix()})")
        elif isinstance(block, Table):
            out.append(_table_markdown(block))
    return "\n\n".join(out) + "\n"


def _table_markdown(table):
    lines = [f"**{_md_escape(table.caption)}**", ""] if table.caption else []
    lines.append("| " + " | ".join(_md_escape(h) for h in table.header) + " |")
    lines.append("|" + "|".join("---" for _ in table.header) + "|")
    lines += ["| " + " | ".join(_md_escape(c) for c in row) + " |" for row in table.rows]
    if table.notes:
        lines += [""] + [f"<sub>{_md_escape(n)}</sub>  " for n in table.notes]
    return "\n".join(lines)


HTML_STYLE = """
body { font-family: system-ui, sans-serif; max-width: 72rem; margin: 2rem auto; padding: 0 1rem;
       color: #222; }
table { border-collapse: collapse; margin: 0.5rem 0; font-size: 0.9rem; }
th, td { border: 1px solid #ccc; padding: 0.2rem 0.5rem; text-align: right; }
th:first-child, td:first-child { text-align: left; }
caption { font-weight: bold; text-align: left; padding: 0.3rem 0; }
.note { font-size: 0.8rem; color: #555; margin: 0.1rem 0; }
pre { background: #f6f6f6; padding: 0.5rem; overflow-x: auto; }
img { max-width: 100%; }
"""


def to_html(blocks: list, out_dir: str | Path, title: str) -> str:
    """The blocks as one self-contained HTML page; images are read from ``out_dir``."""
    body = []
    for block in blocks:
        if isinstance(block, Heading):
            body.append(f"<h{block.level}>{html.escape(block.text)}</h{block.level}>")
        elif isinstance(block, Paragraph):
            body.append(f"<p>{html.escape(block.text)}</p>")
        elif isinstance(block, Bullets):
            items = "".join(f"<li>{html.escape(item)}</li>" for item in block.items)
            body.append(f"<ul>{items}</ul>")
        elif isinstance(block, Code):
            body.append(f"<details><summary>{html.escape(block.summary)}</summary>"
                        f"<pre>{html.escape(block.text)}</pre></details>")
        elif isinstance(block, Image):
            data = base64.b64encode((out_dir / block.path).read_bytes()).decode("ascii")
            body.append(f'<figure><img src="data:image/png;base64,{data}" '
                        f'alt="{html.escape(block.caption)}"><figcaption>'
                        f"{html.escape(block.caption)}</figcaption></figure>")
        elif isinstance(block, Table):
            body.append(_table_html(block))
    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(title)}</title><style>{HTML_STYLE}</style></head>\n<body>\n"
            + "\n".join(body) + "\n</body></html>\n")


def _table_html(table):
    caption = f"<caption>{html.escape(table.caption)}</caption>" if table.caption else ""
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in table.header)
    rows = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>"
                   for row in table.rows)
    notes = "".join(f'<p class="note">{html.escape(n)}</p>' for n in table.notes)
    return f"<table>{caption}<thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>{notes}"
