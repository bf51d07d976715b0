"""``simulate --html``: one self-contained page with a per-turn picture of reads, writes and cost.

No external assets and no network: inline CSS and SVG. A stacked bar per turn shows the prompt's
tokens split into cache read, cache write and fresh input; the cost sits above each bar; missed
turns are marked and listed with their cause. The page is written atomically.
"""

from __future__ import annotations

import html
import os
import tempfile

COLORS = {"cache_read": "#2e9d5b", "cache_write": "#e08a1e", "input_tokens": "#8a94a6"}
LABELS = {"cache_read": "cache read", "cache_write": "cache write", "input_tokens": "fresh input"}
_HEIGHT, _BAR, _GAP, _TOP, _LEFT = 260, 28, 14, 30, 56


def render_html(rows: list[dict], totals: dict) -> str:
    """The report page for simulate's rows (``--json`` objects) and its summary."""
    turns = [r for r in rows if "error" not in r]
    peak = max([r["input_tokens"] + r["cache_write"] + r["cache_read"] for r in turns] or [1]) or 1
    width = _LEFT + len(rows) * (_BAR + _GAP) + 20
    shapes = []
    for i, row in enumerate(rows):
        x = _LEFT + i * (_BAR + _GAP)
        label_y = _TOP + _HEIGHT + 16
        shapes.append(f'<text x="{x + _BAR / 2}" y="{label_y}" class="axis">{row["turn"]}</text>')
        if "error" in row:
            shapes.append(f'<text x="{x + _BAR / 2}" y="{_TOP + _HEIGHT - 4}" class="err">✕</text>')
            continue
        y = _TOP + _HEIGHT
        for part in ("cache_read", "cache_write", "input_tokens"):
            h = _HEIGHT * row[part] / peak
            if h <= 0:
                continue
            y -= h
            shapes.append(f'<rect class="bar" data-part="{part}" x="{x}" y="{y:.1f}" width="{_BAR}" height="{h:.1f}" '
                          f'fill="{COLORS[part]}"><title>turn {row["turn"]}: {row[part]} {LABELS[part]}</title></rect>')
        cost = "n/a" if row.get("cost_usd") is None else f"${row['cost_usd']:.4f}"
        shapes.append(f'<text x="{x + _BAR / 2}" y="{y - 4:.1f}" class="cost">{cost}</text>')
        if "miss" in row:
            shapes.append(f'<text x="{x + _BAR / 2}" y="{_TOP - 12}" class="miss">miss</text>')
    legend = "".join(f'<span class="key"><i style="background:{COLORS[p]}"></i>{LABELS[p]}</span>' for p in COLORS)
    run = totals["run"]
    figures = (f"hit_rate <b>{_fraction(run['hit_rate'])}</b> · cache_write_share "
               f"<b>{_fraction(run['cache_write_share'])}</b> over {run['turns']} turns")
    per = "".join(f"<li>{html.escape(name)}: hit_rate {_fraction(f['hit_rate'])}, cache_write_share "
                  f"{_fraction(f['cache_write_share'])} over {f['turns']} turns</li>"
                  for name, f in totals["conversations"].items())
    misses = "".join(
        f"<li>turn {r['turn']}: <b>{html.escape(r['miss']['cause'])}</b>"
        f"{' (partial read)' if r['miss']['partial'] else ''}: {html.escape(r['miss']['detail'])}</li>"
        for r in rows if "miss" in r)
    errors = "".join(f"<li>turn {r['turn']}: {html.escape(str(r['error']))}</li>" for r in rows if "error" in r)
    table = "".join(
        f"<tr><td>{r['turn']}</td><td>{html.escape(str(r.get('conversation', '')))}</td>"
        f"<td>{html.escape(str(r.get('provider') or ''))}</td><td>{r.get('input_tokens', '')}</td>"
        f"<td>{r.get('cache_write', '')}</td><td>{r.get('cache_read', '')}</td>"
        f"<td>{_cost(r)}</td></tr>"
        for r in rows)
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>promptlint simulate: cache report</title>
<style>
body{{font:14px system-ui,sans-serif;margin:24px;color:#1d2330}} h1{{font-size:20px}}
.axis,.cost,.miss,.err{{font-size:10px;text-anchor:middle}} .miss,.err{{fill:#c0392b;font-weight:bold}}
.key{{margin-right:16px}} .key i{{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:middle}}
table{{border-collapse:collapse;margin-top:12px}} td,th{{border:1px solid #d5d9e0;padding:2px 8px;text-align:right}}
</style></head>
<body>
<h1>Prompt cache, turn by turn</h1>
<p>{figures}</p>
<p>{legend}</p>
<svg id="turns" width="{width}" height="{_TOP + _HEIGHT + 30}" role="img" aria-label="tokens per turn">
<line x1="{_LEFT - 6}" y1="{_TOP + _HEIGHT}" x2="{width}" y2="{_TOP + _HEIGHT}" stroke="#999"/>
<text x="4" y="{_TOP + 8}" class="axis" style="text-anchor:start">{peak}</text>
{''.join(shapes)}
</svg>
<h2>Conversations</h2><ul>{per}</ul>
{f'<h2>Missed turns</h2><ul id="misses">{misses}</ul>' if misses else '<p>Every later turn read the cache.</p>'}
{f'<h2>Rejected requests</h2><ul>{errors}</ul>' if errors else ''}
<table><tr><th>turn</th><th>conv</th><th>provider</th><th>input</th><th>write</th><th>read</th><th>cost USD</th></tr>{table}</table>
<script>
// lets a headless browser confirm the bars were laid out (read back with --dump-dom)
document.body.dataset.bars = [...document.querySelectorAll("rect.bar")]
  .filter(r => r.getBoundingClientRect().height > 0).length;
</script>
</body></html>
"""


def _cost(row: dict) -> str:
    return "" if row.get("cost_usd") is None else f"{row['cost_usd']:.6f}"


def _fraction(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def write_html(path: str, rows: list[dict], totals: dict) -> None:
    """Write the report atomically (a temporary file beside ``path``, then a rename)."""
    text = render_html(rows, totals)
    folder = os.path.dirname(os.path.abspath(path))
    fd, temporary = tempfile.mkstemp(prefix=".simulate-", suffix=".html", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
