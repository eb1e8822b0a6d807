#!/usr/bin/env python3
"""A damaged store: what `cortex index --rebuild` costs on it, against a rebuild of a sound one.

Works on copies of DB (an index of REPO's HEAD, made by `cortex index --db DB`) under
bench/.work/; REPO and DB are never altered.

  1. N notes (--notes, default 1000) are written into a copy of DB, on files and functions of
     HEAD, one in ten superseded;
  2. what a rebuild now does on every store, damaged or not: `pragma quick_check` of that copy
     (best of 3);
  3. the two ways notes are read back from a damaged file (salvage.py), best of 3 each: SQL
     (`notes` read as is: its pages and the schema intact) on the sound copy, and page by page
     on a copy whose header and every page outside `notes` are overwritten with random bytes
     (the case where SQL cannot read anything); both must find all N notes;
     for comparison, the sqlite3 shell's `.recover` (SQLite's own recovery) on both copies,
     when `sqlite3` is on PATH: its time, and how many note texts its SQL output holds;
  4. baseline: `cortex index --rebuild` on the sound copy (1 run, process start included);
     then the same on the damaged copy (moved aside, notes salvaged, everything rebuilt), and
     the ratio. With --no-rebuild, steps 4 is skipped (it re-indexes REPO twice).

Run with the venv's python: `/work/venv/bin/python bench/bench_salvage.py REPO --db DB`.
"""

from __future__ import annotations

import argparse
import random
import re
import sys
from pathlib import Path

import _benchlib as bl


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("repo", type=Path)
    parser.add_argument("--db", type=Path, required=True, help="an index of REPO's HEAD")
    parser.add_argument("--notes", type=int, default=1000)
    parser.add_argument("--no-rebuild", action="store_true")
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    work = bl.work_dir("salvage-", args.keep)
    try:
        report = measure(args, work)
    finally:
        if not args.keep:
            bl.remove(work)
    if args.json:
        bl.dump_json(report)
    else:
        print("\n".join(lines(report)))
    return 0


def measure(args, work: Path) -> dict:
    from cortex_core.store.salvage import _notes_by_pages, _notes_by_sql, store_damage
    env = bl.environment(args.repo)
    sound = work / "sound" / "cortex.db"
    sound.parent.mkdir()
    bl.copy_db(args.db, sound)
    write_notes(args.repo, sound, args.notes)
    notes_total = args.notes + args.notes // 10
    damaged = work / "damaged" / "cortex.db"
    damaged.parent.mkdir()
    bl.copy_db(sound, damaged)
    pages = damage(damaged)
    out = {"environment": env, "db_bytes": bl.db_size(sound), "notes": notes_total,
           "pages_overwritten": pages}
    out["quick_check_s"] = bl.best_of(lambda: store_damage(sound), 3)
    assert store_damage(sound) is None and store_damage(damaged)
    out["salvage_sql_s"] = bl.best_of(lambda: _notes_by_sql(sound), 3)
    out["salvage_pages_s"] = bl.best_of(lambda: _notes_by_pages(damaged), 3)
    out["found_sql"] = len(_notes_by_sql(sound))
    out["found_pages"] = len(_notes_by_pages(damaged))
    out["sqlite3_recover"] = {name: recover(db) for name, db in (("sound", sound),
                                                                 ("damaged", damaged))}
    if not args.no_rebuild:
        cmd = bl.cortex_command()
        base = bl.run([*cmd, "index", "--rebuild", "--repo", str(args.repo), "--db", str(sound),
                       "--model", "none"])
        hurt = bl.run([*cmd, "index", "--rebuild", "--repo", str(args.repo), "--db",
                       str(damaged), "--model", "none"])
        text = hurt.stdout.decode()
        saved = re.search(r"(\d+) notes? saved", text)
        out.update(rebuild_sound_s=base.seconds, rebuild_damaged_s=hurt.seconds,
                   saved_by_rebuild=int(saved.group(1)) if saved else None)
    return out


def write_notes(repo: Path, db: Path, count: int) -> None:
    from cortex_core.memory.notes import add_note, supersede_note
    from cortex_core.store.store import open_note_writer
    con = open_note_writer(db)
    try:
        targets = [f"{p}::{q}" for p, q in con.execute(
            "select f.path, s.qualname from symbols s join files f on f.id = s.file_id"
            " where s.alive = 1 order by f.path, s.qualname limit 500")]
        targets += [p for (p,) in con.execute("select path from files f join head_files h on"
                                                " h.file_id = f.id order by path limit 100")]
        rng = random.Random(0)
        ids = []   # each note its own transaction, as `cortex note add` writes them
        for i in range(count):
            text = f"note {i}: " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 60)))
            ids.append(add_note(con, repo, rng.choice(targets), text).id)
        for note_id in ids[::10]:
            supersede_note(con, repo, note_id, f"note {note_id}, corrected")
    finally:
        con.close()


WORDS = "the retry loop must stay idempotent because callers replay requests after a timeout " \
        "keep this pure session cookies are shared across redirects never log headers".split()


def damage(db: Path) -> int:
    """Random bytes over the header and every page that is not the notes table's."""
    import apsw
    con = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    keep = {p for (p,) in con.execute("select pageno from dbstat where name = 'notes'")}
    size = con.execute("pragma page_size").get
    count = con.execute("pragma page_count").get
    con.close()
    rng = random.Random(1)
    victims = [p for p in range(1, count + 1) if p not in keep]
    with open(db, "r+b") as f:
        for page in victims:
            f.seek((page - 1) * size)
            f.write(rng.randbytes(size))
    return len(victims)


def recover(db: Path) -> dict | None:
    import shutil
    shell = shutil.which("sqlite3")
    if shell is None:
        return None
    done = bl.run([shell, str(db), ".recover"], check=False)
    text = done.stdout.decode("utf-8", "replace")
    return {"seconds": done.seconds, "returncode": done.returncode,
            "version": bl.run([shell, "--version"]).stdout.decode().split()[0],
            "notes_found": len(set(re.findall(r"'(note \d+(?::|, corrected))", text))),
            "error": done.stderr.decode("utf-8", "replace").strip()[:200] or None}



def lines(r: dict) -> list[str]:
    out = bl.environment_lines(r["environment"])
    out.append(f"store: {bl.fmt_bytes(r['db_bytes'])}, {r['notes']} notes; "
               f"{r['pages_overwritten']} pages overwritten in the damaged copy")
    out.append(f"quick_check (every rebuild): {bl.fmt_seconds(r['quick_check_s'])}")
    out.append(f"notes read by SQL: {r['found_sql']} in {bl.fmt_seconds(r['salvage_sql_s'])}; "
               f"page by page: {r['found_pages']} in {bl.fmt_seconds(r['salvage_pages_s'])}")
    for name, rec in (r.get("sqlite3_recover") or {}).items():
        if rec:
            out.append(f"sqlite3 {rec['version']} .recover on the {name} copy: "
                       f"{rec['notes_found']} notes in {bl.fmt_seconds(rec['seconds'])}"
                       + (f" (error: {rec['error']})" if rec["error"] else ""))
    if "rebuild_sound_s" in r:
        base, hurt = r["rebuild_sound_s"], r["rebuild_damaged_s"]
        out.append(f"rebuild of the sound copy (baseline): {bl.fmt_seconds(base)}")
        out.append(f"rebuild of the damaged copy: {bl.fmt_seconds(hurt)} "
                   f"({hurt / base:.2f}x the baseline); notes saved: {r['saved_by_rebuild']}")
        out.append(f"quick_check is {r['quick_check_s'] / base:.1%} of the baseline rebuild; "
                   f"the page-by-page read {r['salvage_pages_s'] / base:.1%}")
    return out


if __name__ == "__main__":
    sys.exit(main())
