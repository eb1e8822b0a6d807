"""Secret redaction: Cortex's patterns against detect-secrets on the same texts.

    python bench/bench_secrets.py REPO [--baseline-ref main] [--show 40] [--json]

1. The corpus (tests/secret_corpus.py): one fake, format-valid example of every kind, each as a
   line of code. Which examples each tool finds: Cortex's redact() must mask the whole value;
   detect-secrets (PyPI `detect-secrets`, 1.5.0, default plugins and filters, each line in a
   .py file of its own, `SecretsCollection.scan_file`) counts as a find when one of its secrets
   lies inside the value or holds the part that must not show.
2. False positives on a real repository's text: every text file at HEAD of REPO (up to 1 MB each)
   and every commit message, none of which holds a live secret. Cortex is run as it is now and as
   it was at --baseline-ref (cortex_core/text/redact.py from git), so the new hits are listed with
   their line; detect-secrets scans the same lines. Every hit is printed, up to --show.
3. Entropy: bits per character of commit shas, uuid4s and of random base-62 strings by length,
   which chose `redact.ENTROPY_BITS`.
4. Speed: the same text through each tool (Cortex: redact() on every line, best of 3;
   detect-secrets: one scan of the files and of the messages as one file), and hostile lines
   (100 KB of near-misses) through each, in a child process with a 60 s limit.

detect-secrets is not a dependency of Cortex: install it into the venv to run this script
(`pip install detect-secrets==1.5.0`).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import string
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from _benchlib import PROJECT_DIR, best_of, environment, environment_lines  # noqa: E402
from secret_corpus import EXAMPLES, PUBLISHABLE  # noqa: E402

from cortex_core.text import redact as current  # noqa: E402

MAX_FILE = 1_000_000


def load_baseline(ref: str):
    """cortex_core/text/redact.py as it was at ref (cortex_core/redact.py before the engine had
    layer folders), as a module."""
    for name in ("cortex_core/text/redact.py", "cortex_core/redact.py"):
        shown = subprocess.run(["git", "show", f"{ref}:{name}"], cwd=PROJECT_DIR,
                               capture_output=True, text=True)
        if shown.returncode == 0:
            source = shown.stdout
            break
    else:
        raise SystemExit(f"bench_secrets: no redact.py at {ref}")
    path = Path(tempfile.mkdtemp()) / "redact_baseline.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("redact_baseline", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module   # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def repository_lines(repo: Path) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(where, line) of every text file at HEAD, and of every commit message; where is
    path:line, or "commit <sha>:line"."""
    files = subprocess.run(["git", "ls-files", "-z"], cwd=repo, check=True,
                           capture_output=True).stdout.decode().split("\0")
    code = []
    for name in filter(None, files):
        path = repo / name
        if not path.is_file() or path.stat().st_size > MAX_FILE:
            continue
        data = path.read_bytes()
        if b"\0" in data[:8192]:
            continue
        for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
            code.append((f"{name}:{number}", line))
    log = subprocess.run(["git", "log", "--format=%H%x00%B%x01"], cwd=repo, check=True,
                         capture_output=True).stdout.decode("utf-8", "replace")
    messages = []
    for record in filter(str.strip, log.split("\x01")):
        sha, _, body = record.strip().partition("\0")
        messages += [(f"commit {sha[:10]}:{n}", line)
                     for n, line in enumerate(body.splitlines(), 1)]
    return code, messages


def detect_secrets_scan(paths: list[Path]) -> dict[str, list[tuple[int, str, str]]]:
    """detect-secrets as it is meant to run: default plugins and filters, file by file.
    path -> [(line number, type, secret value)]."""
    from detect_secrets import SecretsCollection
    from detect_secrets.settings import default_settings
    found: dict[str, list[tuple[int, str, str]]] = {}
    with default_settings():
        collection = SecretsCollection()
        for path in paths:
            collection.scan_file(str(path))
        for name, secret in collection:
            found.setdefault(name, []).append(
                (secret.line_number, secret.type, secret.secret_value or ""))
    return found


def corpus(scratch: Path) -> list[dict]:
    lines = [(e.kind, e.value, e.needle, e.line) for e in EXAMPLES]
    lines.append(("stripe publishable key (public: must stay)", PUBLISHABLE, PUBLISHABLE,
                  f'STRIPE_PUBLISHABLE = "{PUBLISHABLE}"'))
    paths = []
    for i, (_, _, _, line) in enumerate(lines):
        paths.append(scratch / f"example_{i:02d}.py")
        paths[-1].write_text(line + "\n")
    theirs = detect_secrets_scan(paths)
    rows = []
    for path, (kind, value, needle, line) in zip(paths, lines):
        ours = current.redact(line)
        found = sorted({t for _, t, v in theirs.get(str(path), [])
                        if v and (v in value or needle in v)})
        rows.append({"kind": kind, "detect_secrets": found,
                     "ours": needle not in ours and f"[REDACTED:{kind}]" in ours})
    rows[-1]["ours"] = current.redact(lines[-1][3]) != lines[-1][3]
    return rows


def false_positives(lines, theirs_by_where: dict, baseline) -> dict:
    ours, before, theirs = [], Counter(), []
    for where, line in lines:
        for secret in baseline.find_secrets(line):
            before[secret.kind] += 1
        for secret in current.find_secrets(line):
            ours.append((where, secret.kind, line[secret.start:secret.end], line.strip()[:160]))
        for kind, value in theirs_by_where.get(where, ()):
            theirs.append((where, kind, value, line.strip()[:160]))
    return {"lines": len(lines), "before": dict(before),
            "ours": dict(Counter(k for _, k, _, _ in ours)), "ours_hits": ours,
            "detect_secrets": dict(Counter(k for _, k, _, _ in theirs)), "theirs_hits": theirs}


def entropy_table() -> dict:
    rng = random.Random(0)
    alnum = string.ascii_letters + string.digits
    table = {}
    for size in (20, 24, 32, 40):
        values = [current.entropy("".join(rng.choice(alnum) for _ in range(size)))
                  for _ in range(2000)]
        table[f"random base-62, {size} chars: share at or above the threshold"] = round(
            sum(v >= current.ENTROPY_BITS for v in values) / len(values), 4)
    table["uuid4 (5,000): highest"] = round(max(current.entropy(str(uuid.uuid4()))
                                                for _ in range(5000)), 3)
    return table



_HOSTILE = {
    "keyword runs": "password=" * 11_000,
    "quote runs": 'api_key = "' * 9_000,
    "base64 run": "AccountKey=" + "A" * 100_000,
    "prefix runs": "sk-" * 33_000,
    "near-miss tokens": ("npm_" + "a" * 35 + " ") * 2_500,
    "long word": "a" * 100_000,
    "hex run": "0123456789abcdef" * 6_250,
}
_CHILD = """
import sys, time, json
sys.path.insert(0, {tests!r}); sys.path.insert(0, {bench!r})
text = {text!r}
start = time.perf_counter()
from cortex_core.text.redact import redact
redact(text)
print(json.dumps(time.perf_counter() - start))
"""
_CHILD_DS = """
import sys, time, json, tempfile, pathlib
path = pathlib.Path(tempfile.mkdtemp()) / "hostile.py"
path.write_text({text!r})
from detect_secrets import SecretsCollection
from detect_secrets.settings import default_settings
start = time.perf_counter()
with default_settings():
    SecretsCollection().scan_file(str(path))
print(json.dumps(time.perf_counter() - start))
"""


def hostile(tool: str) -> dict:
    out = {}
    for name, text in _HOSTILE.items():
        code = (_CHILD.format(tests=str(PROJECT_DIR / "tests"), bench=str(PROJECT_DIR / "bench"),
                              text=text) if tool == "cortex" else _CHILD_DS.format(text=text))
        try:
            done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                  timeout=60)
            out[name] = round(json.loads(done.stdout), 3) if done.returncode == 0 else "error"
        except subprocess.TimeoutExpired:
            out[name] = "over 60 s"
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("repo", type=Path)
    parser.add_argument("--baseline-ref", default="main")
    parser.add_argument("--show", type=int, default=40, help="hits listed per tool (default 40)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    baseline = load_baseline(args.baseline_ref)
    code, messages = repository_lines(args.repo)
    scratch = Path(tempfile.mkdtemp())
    log = scratch / "messages.txt"
    log.write_text("".join(line + "\n" for _, line in messages))
    files = sorted({where.rpartition(":")[0] for where, _ in code})
    start = time.perf_counter()
    scanned = detect_secrets_scan([args.repo / f for f in files] + [log])
    theirs_seconds = time.perf_counter() - start
    theirs: dict[str, list[tuple[str, str]]] = {}
    for path, hits in scanned.items():
        for number, kind, value in hits:
            where = (messages[number - 1][0] if path == str(log)
                     else f"{Path(path).relative_to(args.repo)}:{number}")
            theirs.setdefault(where, []).append((kind, value))
    every = [line for _, line in code + messages]
    report = {
        "environment": environment(args.repo),
        "corpus": corpus(scratch),
        "code": false_positives(code, theirs, baseline),
        "messages": false_positives(messages, theirs, baseline),
        "entropy": entropy_table(),
        "speed_seconds": {
            "lines": len(every),
            "cortex": round(best_of(lambda: [current.redact(x) for x in every]), 3),
            "cortex_baseline": round(best_of(lambda: [baseline.redact(x) for x in every]), 3),
            "detect_secrets": round(theirs_seconds, 3),
        },
        "hostile_seconds": {"cortex": hostile("cortex"), "detect_secrets": hostile("ds")},
    }
    if args.json:
        print(json.dumps(report, indent=1))
        return
    print("\n".join(environment_lines(report["environment"])) + "\n")
    rows = report["corpus"]
    print(f"Corpus: {len(rows) - 1} examples of {len({r['kind'] for r in rows[:-1]})} kinds")
    for r in rows:
        print(f"  {r['kind']:<44} cortex: {'yes' if r['ours'] else 'no ':<4}"
              f" detect-secrets: {', '.join(r['detect_secrets']) or 'no'}")
    caught = sum(r["ours"] for r in rows[:-1]), sum(bool(r["detect_secrets"]) for r in rows[:-1])
    print(f"  found: cortex {caught[0]}, detect-secrets {caught[1]} of {len(rows) - 1}")
    for part in ("code", "messages"):
        fp = report[part]
        print(f"\n{part} of {args.repo.name}: {fp['lines']} lines")
        print(f"  cortex at {args.baseline_ref}: {sum(fp['before'].values())} {fp['before']}")
        print(f"  cortex now: {sum(fp['ours'].values())} {fp['ours']}")
        print(f"  detect-secrets: {sum(fp['detect_secrets'].values())} {fp['detect_secrets']}")
        for label, hits in (("cortex", fp["ours_hits"]), ("detect-secrets", fp["theirs_hits"])):
            for where, kind, value, line in hits[:args.show]:
                print(f"    {label} {kind} {where}: {value[:40]!r} in {line[:100]!r}")
    print("\nEntropy:", json.dumps(report["entropy"], indent=1))
    speed = report["speed_seconds"]
    print(f"\nSpeed over {speed['lines']} lines: cortex {speed['cortex']} s "
          f"(at {args.baseline_ref}: {speed['cortex_baseline']} s), detect-secrets "
          f"{speed['detect_secrets']} s = {speed['detect_secrets'] / speed['cortex']:.1f}x cortex "
          f"(one run)")
    print("Hostile lines (100 KB each), seconds:")
    for name in _HOSTILE:
        print(f"  {name:<18} cortex {report['hostile_seconds']['cortex'][name]:<8}"
              f" detect-secrets {report['hostile_seconds']['detect_secrets'][name]}")


if __name__ == "__main__":
    main()
