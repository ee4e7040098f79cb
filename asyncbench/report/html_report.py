"""The HTML report: the Markdown report as one self-contained page (issue 39).

The page is the Markdown report (:mod:`asyncbench.report.markdown_report`) rendered by
markdown-it-py (a well-kept CommonMark parser, already installed with rich), so the two never
say different things and nothing is written twice. What makes it one file: every chart
the report links is put in the page as an ``data:image/svg+xml`` image (not as inline
``<svg>``: matplotlib's SVGs reuse element ids, which would clash in one document); an image
the page cannot carry is shown as its title. No script, no font, no stylesheet from the
network: it opens in any browser, offline.

Raw HTML in the Markdown is not rendered (``html: False``): text from the result (engine,
phase and plan names, errors) is escaped as text, never markup. The style keeps the page
within the window at 1280 px: the column is at most 1200 px, charts shrink to it, and a
wide table scrolls inside its own box.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Mapping
from urllib.parse import unquote

from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict

from asyncbench.fs.ownership import HTML_REPORT_MARKER, REPORT_MARKER

__all__ = ["render"]

STYLE = """
:root { color-scheme: light; }
body { margin: 0; background: #fafafa; color: #1f2328;
       font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; }
main { box-sizing: border-box; max-width: 1200px; margin: 0 auto; padding: 16px 24px 48px;
       background: #fff; overflow-wrap: anywhere; }
h1 { font-size: 1.6em; margin: 0.4em 0; }
h2 { font-size: 1.3em; margin-top: 1.6em; border-bottom: 1px solid #d0d7de; padding-bottom: 0.2em; }
h3 { font-size: 1.1em; }
.headline { background: #f0f6ff; border: 1px solid #b6d4fe; border-radius: 6px; padding: 4px 16px; }
img { display: block; max-width: 100%; height: auto; margin: 12px 0; }
.chart-missing { color: #6e7781; font-style: italic; }
.table { max-width: 100%; overflow-x: auto; margin: 8px 0 16px; }
table { border-collapse: collapse; font-size: 13px; }
th, td { border: 1px solid #d0d7de; padding: 3px 8px; white-space: nowrap; }
th { background: #f6f8fa; }
tr:nth-child(even) td { background: #fbfbfc; }
code { font: 12px/1.4 ui-monospace, "DejaVu Sans Mono", monospace; background: #f6f8fa;
       padding: 0 3px; border-radius: 3px; }
blockquote { margin: 8px 0; padding: 4px 12px; border-left: 4px solid #d4a72c; background: #fff8e5; }
"""


def _svg_uri(svg: bytes) -> str:
    return "data:image/svg+xml;base64," + base64.b64encode(svg).decode("ascii")


def _parser(charts: Mapping[str, bytes]) -> MarkdownIt:
    """CommonMark with tables, raw HTML off; images from ``charts`` (file name -> SVG)
    embedded, tables in a scrolling box."""
    parser = MarkdownIt("commonmark", {"html": False}).enable("table")

    def image(self: RendererHTML, tokens: list[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
        token = tokens[idx]
        alt = self.renderInlineAsText(token.children or [], options, env)
        svg = charts.get(unquote(str(token.attrGet("src") or "")))
        if svg is None:  # never a link to a file beside the page: the page is the whole report
            return f'<p class="chart-missing">{html.escape(alt)} (chart not available)</p>'
        return f'<img src="{_svg_uri(svg)}" alt="{html.escape(alt)}">'

    def table_open(self: RendererHTML, tokens: list[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
        return '<div class="table">' + self.renderToken(tokens, idx, options, env)

    def table_close(self: RendererHTML, tokens: list[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
        return self.renderToken(tokens, idx, options, env) + "</div>\n"

    parser.add_render_rule("image", image)
    parser.add_render_rule("table_open", table_open)
    parser.add_render_rule("table_close", table_close)
    return parser


def _headline_box(body: str) -> str:
    """The headline's paragraph and list (the report's first) in a box of their own."""
    start = body.find("<p><strong>Headline</strong></p>")
    if start < 0:
        return body
    end = body.find("</ul>", start)
    if end < 0:
        return body
    end += len("</ul>")
    return body[:start] + '<section class="headline">' + body[start:end] + "</section>" + body[end:]


def render(markdown: str, title: str, charts: Mapping[str, bytes]) -> str:
    """The page of a Markdown report; ``charts`` maps each linked chart's file name to its SVG."""
    text = markdown.removeprefix(REPORT_MARKER).lstrip("\n")
    body = _headline_box(_parser(charts).render(text))
    return (
        "<!DOCTYPE html>\n"
        f"{HTML_REPORT_MARKER}\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{html.escape(title)}</title>\n<style>{STYLE}</style>\n</head>\n"
        f"<body>\n<main>\n{body}</main>\n</body>\n</html>\n"
    )
