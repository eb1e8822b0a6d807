"""Random histories of a few Python files with many lives: created, edited, deleted, renamed,
their names used again, on branches merged into each other (plainly, `-X theirs` or `-s ours`,
conflicts resolved with one side and sometimes a line of the merge's own). The shapes where a
file's identity is hardest to follow; fuzzing with them found the pruning faults of issue 17."""

from __future__ import annotations

import random
import subprocess

NAMES = ("a.py", "b.py", "c.py", "d.py")
FUNCTIONS = ("f", "g", "h", "k")


def random_lives(repo, seed: int, steps: int = 40, every=None) -> None:
    """Builds the history in `repo` (a ScriptedRepo, empty), ending on main. `every(step)` is
    called at four random steps, on main, with the history so far (an index run, say)."""
    rng = random.Random(seed)
    made = iter(range(1_000_000))
    clock = [steps * 2.0]
    branches, current = ["main"], ["main"]

    def when() -> float:
        clock[0] -= 1
        return clock[0]

    def commit(message: str) -> None:
        repo.git("add", "-A")
        repo.commit(message, days_ago=when(), allow_empty=True)

    def content() -> str:
        n = next(made)
        return "".join(f"def {name}(x):\n" + "".join(
            f"    y{i} = x + {rng.randint(0, 9)}  # {n}\n" for i in range(6)) + "    return y0\n\n"
            for name in rng.sample(FUNCTIONS, rng.randint(1, 3)))

    def edit(text: str) -> str:
        lines = text.splitlines(True)
        body = [i for i, line in enumerate(lines) if line.startswith("    y")]
        for i in rng.sample(body, min(len(body), rng.randint(1, 2))):
            lines[i] = lines[i].replace("x +", f"x * {rng.randint(0, 9)} +", 1)
        defs = [i for i, line in enumerate(lines) if line.startswith("def ")]
        free = [f for f in FUNCTIONS if f"def {f}(" not in text]
        if rng.random() < 0.2 and defs and free:   # a function renamed
            i = rng.choice(defs)
            lines[i] = f"def {rng.choice(free)}{lines[i][lines[i].index('('):]}"
        return "".join(lines)

    def present() -> list[str]:
        return [name for name in NAMES if (repo.path / name).exists()]

    def checkout(branch: str) -> None:
        if branch != current[0]:
            repo.git("checkout", "-q", branch)
            current[0] = branch

    def merge(other: str, tag: int) -> None:
        strategy = rng.choice(((), (), ("-X", "ours"), ("-X", "theirs"), ("-s", "ours")))
        stamp = f"{int(repo.now - when() * 86400)} +0000"
        env = {"GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp}
        try:
            repo.git("merge", "-q", "--no-ff", *strategy, "-m", f"{tag} merge {other}", other,
                     env=env)
            return
        except subprocess.CalledProcessError:
            pass
        for line in repo.git("status", "--porcelain").splitlines():
            code, path = line[:2], line[3:].split(" -> ")[-1]
            if code in ("UU", "AA"):
                repo.git("checkout", rng.choice(("--ours", "--theirs")), "--", path)
                if rng.random() < 0.4:
                    with open(repo.path / path, "a") as out:
                        out.write(f"# resolved {tag}\n")
            elif (repo.path / path).exists() and rng.random() < 0.5:
                continue
            elif (repo.path / path).exists():
                repo.git("rm", "-q", "--cached", "--", path)
                (repo.path / path).unlink()
        repo.git("add", "-A")
        repo.git("commit", "-q", "--allow-empty", "--no-edit", env=env)

    def step(tag: int) -> None:
        op, here = rng.random(), present()
        free = [name for name in NAMES if name not in here]
        if op < 0.25 or not here:
            if free:
                name = rng.choice(free)
                (repo.path / name).write_text(content())
                commit(f"{tag} {current[0]} create {name}")
        elif op < 0.5:
            name = rng.choice(here)
            (repo.path / name).write_text(edit((repo.path / name).read_text()))
            commit(f"{tag} {current[0]} edit {name}")
        elif op < 0.58:
            name = rng.choice(here)
            repo.remove(name)
            commit(f"{tag} {current[0]} delete {name}")
        elif op < 0.72:
            if free:
                old, new = rng.choice(here), rng.choice(free)
                repo.move(old, new)
                if rng.random() < 0.3:
                    (repo.path / new).write_text(edit((repo.path / new).read_text()))
                commit(f"{tag} {current[0]} rename {old}->{new}")
        elif op < 0.8:
            branch = f"s{tag}"
            repo.git("checkout", "-q", "-b", branch)
            branches.append(branch)
            current[0] = branch
        elif op < 0.86:
            checkout(rng.choice(branches))
        else:
            others = [b for b in branches if b != current[0]]
            if others:
                merge(rng.choice(others), tag)

    (repo.path / ".gitignore").write_text(".cortex\n")
    commit("0 gitignore")
    stops = set(rng.sample(range(5, steps), 4)) if every is not None else set()
    for tag in range(1, steps + 1):
        step(tag)
        if tag in stops:
            checkout("main")
            every(tag)
    checkout("main")
