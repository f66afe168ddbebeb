"""HTML pieces of the pages a person reads (tables, verdicts, the run summary), and atomic text output.
A leaf module: it imports nothing from :mod:`mkclust.repro.reporting`."""

from __future__ import annotations

import html
from pathlib import Path

from mkclust._io import atomic_open

STYLE = ("body{font-family:sans-serif;font-size:13px;margin:1em}table{border-collapse:collapse;margin:.5em 0}"
         "td,th{border:1px solid #bbb;padding:2px 6px;text-align:left;vertical-align:top}"
         "th{background:#eee}.holds{background:#d9f2d9}.fails{background:#f8d7d7}.na{background:#eee}"
         "caption{caption-side:bottom;text-align:left;padding-top:.5em;max-width:80em}")


def html_table(header: list[str], body: list[list[str]], classes: list[str] | None = None, caption: str = "") -> str:
    esc = html.escape
    rows = ["<tr>" + "".join(f"<th>{esc(h)}</th>" for h in header) + "</tr>"]
    for i, r in enumerate(body):
        cls = f' class="{classes[i]}"' if classes and classes[i] else ""
        rows.append(f"<tr{cls}>" + "".join(f"<td>{esc(str(c))}</td>" for c in r) + "</tr>")
    cap = f"<caption>{esc(caption)}</caption>" if caption else ""
    return f"<table>{cap}{''.join(rows)}</table>"


def html_page(title: str, parts: list[str]) -> str:
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{STYLE}</style></head><body><h3>{html.escape(title)}</h3>{''.join(parts)}</body></html>\n")


def write_text(path: str | Path, text: str) -> None:
    with atomic_open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
