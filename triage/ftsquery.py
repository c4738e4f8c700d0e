"""Ranked queries on the causes' full-text index, through the standard library's `sqlite3`.

sqlite-utils builds the index (`store.m005_causes_with_fts`) and the store's own searches call this too;
`explain` and `kb search` read the cached index with nothing but `sqlite3`, because importing sqlite-utils
(Click, pluggy, dateutil) costs more than the whole lookup.
"""

from __future__ import annotations

import json
import re
import sqlite3
from typing import Any

# what sqlite_utils.Database.quote_fts splits on: whitespace, and quoted phrases kept whole
_QUOTE_FTS_RE = re.compile(r'\s+|(".*?")')
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")

# the statement sqlite_utils' Table.search(include_rank=True) runs on an FTS5 table
_SEARCH_SQL = """
with original as (select rowid, * from causes)
select original.*, causes_fts.rank rank
from original join causes_fts on original.rowid = causes_fts.rowid
where causes_fts match :query
order by causes_fts.rank
limit :limit
""".strip()


def quote_fts(query: str) -> str:
    """Every token quoted, so `NOT`, `OR`, `-` and `:` are words (sqlite_utils.Database.quote_fts)."""
    if query.count('"') % 2:
        query += '"'
    bits = [b for b in _QUOTE_FTS_RE.split(query) if b and b != '""']
    return " ".join(f'"{bit}"' if not bit.startswith('"') else bit for bit in bits)


def search_causes(conn: sqlite3.Connection, query: str, limit: int = 20) -> list[dict[str, Any]]:
    """Full-text search over title, cause, workaround and examples, best first. Any text is a valid
    query (each token is quoted); when no cause has every token, causes with any of them are ranked.

    A pasted message is best found whole: causes with the words as one phrase first, then with all of
    the words, then (when none has them all) with any of them. Raises sqlite3.Error."""
    quoted = quote_fts(_CONTROL_RE.sub(" ", query))
    if not quoted.strip():
        return []
    tokens = re.findall(r'"(?:[^"]|"")*"', quoted)
    phrase = '"' + " ".join(t[1:-1] for t in tokens) + '"' if len(tokens) > 1 else None
    rows: list[dict[str, Any]] = []
    seen: set[str] = set()
    for q in (q for q in (phrase, quoted) if q):
        for r in _search(conn, q, limit):
            if r["id"] not in seen and len(rows) < limit:
                seen.add(r["id"])
                rows.append(r)
    if not rows and len(tokens) > 1:
        rows = _search(conn, " OR ".join(tokens), limit)
    for r in rows:
        r["references"] = json.loads(r.get("references") or "[]")
        r["examples"] = [e for e in (r.get("examples") or "").split("\n") if e]
    return rows


def _search(conn: sqlite3.Connection, query: str, limit: int) -> list[dict[str, Any]]:
    cursor = conn.execute(_SEARCH_SQL, {"query": query, "limit": limit})
    columns = [c[0] for c in cursor.description]
    return [dict(zip(columns, row)) for row in cursor]
