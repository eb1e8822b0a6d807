"""No answer depends on the numbers a store gives its files and symbols. An index run numbers them
in the order its worker processes deliver commits, which differs from run to run; here a store
is copied with both numbered the other way round, and every answer bench/repeat_answers.py asks
must come out the same from the two."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import apsw

from cortex_core.config import Settings
from cortex_core.index.ingest import index_repository

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "bench" / "repeat_answers.py"
# Every column that holds a file's or a symbol's id (a test below checks none is missed).
NUMBERED = {"files": "file_id", "symbols": "symbol_id"}


def _columns(con, suffix: str) -> list[tuple[str, str]]:
    out = []
    for (table,) in con.execute("select name from sqlite_master where type = 'table'"
                                " and name not like 'sqlite_%'"):
        try:
            cols = [row[1] for row in con.execute(f"pragma table_info('{table}')")]
        except apsw.SQLError:   # a virtual table of an extension not loaded here
            continue
        out += [(table, c) for c in cols if c.endswith(suffix)]
    return out


def renumbered(db: Path, copy: Path) -> None:
    """`db` copied to `copy` with the ids of its files and of its symbols in reverse order."""
    shutil.copy(db, copy)
    con = apsw.Connection(str(copy))
    with con:
        for owner, suffix in NUMBERED.items():
            top = con.execute(f"select max(id) from {owner}").get + 1
            for table, column in [(owner, "id"), *_columns(con, suffix)]:
                # Through negatives: a row at a time, a new id would meet an old one.
                con.execute(f"update {table} set {column} = -{column}"
                            f" where {column} is not null")
                con.execute(f"update {table} set {column} = {top} + {column}"
                            f" where {column} is not null")
            if owner == "files":   # the one id kept in text: "commit id:version's file id"
                con.execute(f"update pruned_heads set version = substr(version, 1,"
                            f" instr(version, ':')) || ({top} - cast(substr(version,"
                            f" instr(version, ':') + 1) as integer)) where version like '%:%'")
    con.close()


def _history(repo) -> None:
    """Files renamed, a method that leaves its class and comes back, calls across modules,
    documents, tests, and files that change together."""
    repo.write("README.md", "# Shop\n\nOrders and carts.\n")
    repo.write("docs/orders.md", "# Orders\n\nHow an order is placed.\n\n# Refunds\n\nRarely.\n")
    repo.write("shop/cart.py", "class Cart:\n    def total(self, items):\n"
                               "        return sum(items)\n")
    repo.write("shop/orders.py", "from shop.cart import Cart\n\n\ndef place(items):\n"
                                 "    return Cart().total(items)\n")
    repo.write("tests/test_orders.py", "from shop.orders import place\n\n\n"
                                       "def test_place():\n    assert place([1]) == 1\n")
    repo.commit("shop: carts and orders", days_ago=60)
    for n in range(1, 4):
        repo.write("shop/orders.py", "from shop.cart import Cart\n\n\ndef place(items):\n"
                                     f"    return Cart().total(items) + {n}\n")
        repo.write("tests/test_orders.py", "from shop.orders import place\n\n\n"
                                           f"def test_place():\n    assert place([1]) == {n + 1}\n")
        repo.commit(f"orders: fee {n}", days_ago=50 - n)
    repo.git("mv", "shop/cart.py", "shop/basket.py")
    repo.write("shop/orders.py", "from shop.basket import Cart\n\n\ndef place(items):\n"
                                 "    return Cart().total(items) + 3\n")
    repo.commit("rename cart to basket", days_ago=40)
    repo.write("shop/basket.py", "class BaseCart:\n    def total(self, items):\n"
                                 "        return sum(items) or 0\n\n\nclass Cart(BaseCart):\n"
                                 "    pass\n")
    repo.commit("added a base cart", days_ago=30)
    repo.write("shop/basket.py", "class Cart:\n    def total(self, items):\n"
                                 "        return sum(items, 0)\n")
    repo.write("docs/orders.md", "# Orders\n\nHow an order is placed, and its fee.\n\n"
                                 "# Refunds\n\nRarely.\n")
    repo.commit("remove the base cart", days_ago=20)
    # A method that leaves its class and comes back under the same name (Item.get, DictItem.get,
    # Item.get): commits two segments of its lineage hold.
    method = "    def get(self, key):\n        return self.data[key]\n"
    repo.write("shop/item.py", f"class Item:\n{method}")
    repo.commit("item", days_ago=19)
    repo.write("shop/item.py", f"class DictItem:\n{method}\n\nclass Item(DictItem):\n    pass\n")
    repo.commit("added a dict item", days_ago=18)
    repo.write("shop/item.py", f"class Item:\n{method.replace('key]', 'key, None)')}")
    repo.commit("remove the dict item", days_ago=17)
    # 32 modules changed once with orders.py, tied for the symbol back-off's 30 files.
    for n in range(32):
        repo.write(f"shop/mod{n:02}.py", f"def f{n:02}():\n    return 0\n")
    repo.commit("modules", days_ago=16)
    for n in range(32):
        repo.write(f"shop/mod{n:02}.py", f"def f{n:02}():\n    return 1\n")
    repo.write("shop/orders.py", "from shop.basket import Cart\n\n\ndef place(items):\n"
                                 "    return Cart().total(items) + 4\n")
    repo.commit("modules and orders", days_ago=15)
    repo.write(".cortex/config.toml", "[coupling]\nmax_changeset = 40\n")


def test_no_answer_depends_on_the_ids_of_files_and_symbols(repo, cortex, tmp_path: Path):
    _history(repo)
    index_repository(repo.path, cortex.db, Settings(), model="none")
    other = tmp_path / "renumbered.db"
    renumbered(cortex.db, other)
    con = apsw.Connection(str(other))
    assert con.execute("select id from files where path = 'README.md'").get != \
        apsw.Connection(str(cortex.db)).execute("select id from files where path ="
                                               " 'README.md'").get
    con.close()
    done = subprocess.run([sys.executable, str(SCRIPT), str(repo.path), "--db", str(cortex.db),
                           "--db", str(other), "--every", "1", "--packs", "5", "--queries", "5",
                           "--json"], capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))
    report = json.loads(done.stdout)
    assert report["compared"]["symbol history"] >= 4 and report["compared"]["blast (symbol)"] >= 4
    assert done.returncode == 0 and report["same"], report["examples"]


def test_the_renumbering_reaches_every_column_of_an_id(repo, cortex):
    """A column that holds a file's or a symbol's id under another name would escape it."""
    _history(repo)
    index_repository(repo.path, cortex.db, Settings(), model="none")
    con = apsw.Connection(str(cortex.db))
    named = {(t, c) for suffix in NUMBERED.values() for t, c in _columns(con, suffix)}
    references = set()
    for (table,) in con.execute("select name from sqlite_master where type = 'table'"):
        try:
            for row in con.execute(f"pragma foreign_key_list('{table}')"):
                if row[2] in NUMBERED:
                    references.add((table, row[3]))
        except apsw.SQLError:
            continue
    assert references <= named, references - named
    # ... and the one kept in text agrees with the table it was read from.
    copy = cortex.db.parent / "renumbered.db"
    renumbered(cortex.db, copy)
    con = apsw.Connection(str(copy))
    assert con.execute("select count(*) from pruned_heads p join head_versions v"
                       " on v.file_id = p.file_id where p.version !="
                       " v.commit_id || ':' || v.version_file_id").get == 0
    assert con.execute("select count(*) from pruned_heads").get > 0
