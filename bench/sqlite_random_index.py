"""What a unique index of random ids costs SQLite as a table grows (no Django, no app code).

    python bench/sqlite_random_index.py [--n 100000] [--unique-random-id | --no-unique-random-id]

Rows like the mirror's (a random UUID text, a time, a status, 600 bytes of body) go
into a fresh WAL file a page of 100 rows per transaction, as the sync writes them,
and the CPU a row of the last 2,000 rows is printed at 5,000, 10,000, 50,000 and N.
With the unique index on the random id (the gateway's charge ids), every page's rows
land on more and more different leaf pages of that index as the table grows; without
it, the cost a row stays flat. This is the table's limit the sync meets at 100,000
charges on SQLite (docs/benchmarks.md, Sync).
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import tempfile
import time
import uuid


def run(n: int, unique: bool) -> list[tuple[int, float]]:
    """Insert ``n`` rows, 100 a transaction; (rows so far, CPU ms a row of the last 2,000)."""
    marks = sorted({5_000, 10_000, 50_000, n} & set(range(100, n + 1, 100)))
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        db = sqlite3.connect(os.path.join(tmp, "t.sqlite3"), isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        gid = "gid TEXT UNIQUE" if unique else "gid TEXT"
        columns = f"id INTEGER PRIMARY KEY, {gid}, created REAL, status TEXT, body TEXT"
        db.execute(f"CREATE TABLE t ({columns})")
        db.execute("CREATE INDEX t_created ON t (created)")
        spent: list[float] = []
        for done in range(100, n + 1, 100):
            rows = [(str(uuid.uuid4()), time.time(), "successful", "x" * 600) for _ in range(100)]
            start = time.process_time()
            db.execute("BEGIN")
            db.executemany("INSERT INTO t (gid, created, status, body) VALUES (?, ?, ?, ?)", rows)
            db.execute("COMMIT")
            spent.append(time.process_time() - start)
            if done in marks:
                out.append((done, sum(spent[-20:]) / 2_000 * 1_000))
        db.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--unique-random-id", action=argparse.BooleanOptionalAction, default=None)
    args = parser.parse_args()
    kinds = [True, False] if args.unique_random_id is None else [args.unique_random_id]
    heads = ["unique random id" if u else "no unique random id" for u in kinds]
    print("| rows in the table | " + " | ".join(f"CPU ms a row, {h}" for h in heads) + " |")
    print("|---|" + "---|" * len(kinds))
    results = [run(args.n, u) for u in kinds]
    for i, (done, _) in enumerate(results[0]):
        print(f"| {done:,} | " + " | ".join(f"{r[i][1]:.4f}" for r in results) + " |")


if __name__ == "__main__":
    main()
