import { test } from "node:test";
import * as assert from "node:assert/strict";
import {
  blastItems,
  chooseServerCommand,
  dependentLine,
  exportMessage,
  hitTarget,
  historyItems,
  historyTitle,
  noIcons,
  oneLine,
  partnerLine,
  relatedItems,
  relatedNothing,
  relatedTitle,
  relativeTime,
  resolveUnder,
  safeCommitUrl,
  nothingFound,
  searchItems,
  searchTitle,
  serverSettings,
  statusView,
} from "../src/logic";

const NOW = Date.UTC(2026, 0, 31) ;
const DAY = 86400;
const nowS = NOW / 1000;

test("server command: serverCommand, then pythonPath, then the Python extension, then PATH", () => {
  assert.deepEqual(chooseServerCommand({ serverCommand: ["/x/cortex-ls", "-v"], pythonPath: "/py" }),
    { command: "/x/cortex-ls", args: ["-v"], source: "serverCommand" });
  assert.deepEqual(chooseServerCommand({ serverCommand: [], pythonPath: "/venv/bin/python" }),
    { command: "/venv/bin/python", args: ["-P", "-m", "cortex_ls"], source: "pythonPath" });
  assert.deepEqual(chooseServerCommand({ serverCommand: null, pythonPath: "  ", pythonExtensionInterpreter: ["/usr/bin/conda", "run", "python"] }),
    { command: "/usr/bin/conda", args: ["run", "python", "-P", "-m", "cortex_ls"], source: "pythonExtension" });
  assert.deepEqual(chooseServerCommand({}), { command: "cortex-ls", args: [], source: "path" });
  // malformed settings fall through
  assert.equal(chooseServerCommand({ serverCommand: [1, 2], pythonPath: 3 }).source, "path");
  assert.equal(chooseServerCommand({ serverCommand: "cortex-ls" }).source, "path");
});

test("server settings: only the server's keys; null is sent (it resets), undefined is not", () => {
  const cfg: Record<string, unknown> = { hotspotThreshold: 3, model: null, hover: false, pythonPath: "/py", serverCommand: ["x"], tokenBudget: undefined, recencyHalfLifeDays: null };
  assert.deepEqual(serverSettings((k) => cfg[k]), { hotspotThreshold: 3, model: null, hover: false, recencyHalfLifeDays: null });
});

test("relative time", () => {
  assert.equal(relativeTime(nowS - 30, NOW), "just now");
  assert.equal(relativeTime(nowS - 3 * 3600, NOW), "3 hours ago");
  assert.equal(relativeTime(nowS - DAY, NOW), "1 day ago");
  assert.equal(relativeTime(nowS - 26 * DAY, NOW), "3 weeks ago");
  assert.equal(relativeTime(nowS - 95 * DAY, NOW), "3 months ago");
  assert.equal(relativeTime(nowS - 800 * DAY, NOW), "2 years ago");
  assert.equal(relativeTime(nowS + 100, NOW), "in the future");
});

test("history items: short subject, author · relative date, untrusted text kept plain", () => {
  const result = {
    target: { path: "pkg/core.py", qualname: "compute" },
    total: 7,
    entries: [
      { commit: { sha: "a".repeat(40), short: "aaaaaaaaaa", time: nowS - 5 * DAY, author: "Ann", subject: "fix: $(alert) [x](command:evil)\nsecond line" },
        change: "modified", added: 1, deleted: 1, path: "pkg/core.py", why: "Callers rely on it." },
      { commit: { sha: "b".repeat(40), time: nowS - 40 * DAY, author: "Bob", subject: "add the core" } },
      { commit: { short: "broken" } },
    ],
  } as any;
  const items = historyItems(result, NOW);
  assert.equal(items.length, 2);
  assert.equal(items[0].label, "aaaaaaaaaa fix: $\u200b(alert) [x](command:evil) second line");
  assert.equal(items[0].description, "Ann · 5 days ago");
  assert.equal(items[0].detail, "modified · +1 −1 · pkg/core.py — Callers rely on it.");
  assert.equal(items[1].label, "bbbbbbbbbb add the core");
  assert.equal(items[1].description, "Bob · 1 month ago");
  assert.equal(items[1].detail, undefined);
  assert.equal(historyTitle(result), "History of pkg/core.py::compute (3 of 7 commits)");
  assert.deepEqual(historyItems(undefined), []);
});

test("blast radius items: path::qualname, relation · confidence, line from the chain", () => {
  const items = blastItems({
    dependents: [
      { path: "pkg/use.py", qualname: "main", relation: "calls", depth: 1, confidence: 0.9, chain: [{ line: 5 }] },
      { path: "tests/test_core.py", relation: "co-change", depth: 2, confidence: 0.333, chain: [] },
    ],
  });
  assert.equal(items[0].label, "pkg/use.py::main");
  assert.equal(items[0].detail, "calls · confidence 90%");
  assert.equal(items[0].description, "line 5");
  assert.equal(dependentLine(items[0].data), 5);
  assert.equal(items[1].label, "tests/test_core.py");
  assert.equal(items[1].detail, "co-change · confidence 33% · depth 2");
  assert.equal(items[1].description, undefined);
  assert.deepEqual(blastItems({}), []);
});

test("search items and where a hit leads", () => {
  const items = searchItems({
    hits: [
      { kind: "commit", title: "tune compute", text: "Callers rely\non it", citation: "abc1234", time: nowS - 2 * DAY, sha: "abc1234def" },
      { kind: "note", title: "note #3", citation: "pkg/core.py::compute", path: "pkg/core.py", line: 4 },
    ],
  }, NOW);
  assert.equal(items[0].label, "[commit] tune compute");
  assert.equal(items[0].description, "abc1234 · 2 days ago");
  assert.equal(items[0].detail, "Callers rely on it");
  assert.deepEqual(hitTarget(items[0].data), { kind: "commit", sha: "abc1234def", url: undefined });
  assert.deepEqual(hitTarget(items[1].data), { kind: "file", path: "pkg/core.py", line: 4 });
  assert.deepEqual(hitTarget({ title: "x" }), { kind: "none" });
});

test("a search's note is shown with its hits, and when there are none", () => {
  assert.equal(searchTitle("timeout", 3), 'Cortex: 3 hits for "timeout"');
  assert.equal(searchTitle("latency", 2, "no word of the query is in the index: these hits are\nguesses"),
    'Cortex: 2 hits for "latency" — no word of the query is in the index: these hits are guesses');
  assert.equal(nothingFound("zzz"), 'Cortex: nothing found for "zzz"');
  assert.equal(nothingFound("zzz", "every word of the query is a common one (the)"),
    'Cortex: nothing found for "zzz" (every word of the query is a common one (the))');
});

test("export message", () => {
  assert.equal(exportMessage({ tokens: 812, budget: 4000 }), "Context pack copied: 812 tokens (budget 4000)");
  assert.match(exportMessage({ tokens: 5, partial: true }), /^Context pack copied: 5 tokens — the index is still/);
  assert.equal(exportMessage(undefined), "Context pack copied: 0 tokens");
});

test("status view", () => {
  assert.equal(statusView([]).text, "$(history) Cortex");
  const v = statusView([{ repository: "/w/widgets", state: "indexing", percentage: 42.4, message: "commits: 10/24" }]);
  assert.equal(v.text, "$(sync~spin) Cortex: indexing 42%");
  assert.equal(v.tooltip, "widgets: indexing 42% — commits: 10/24");
  assert.equal(v.busy, true);
  assert.equal(statusView([{ repository: "/w/a", state: "ready", percentage: 100 }]).text, "$(history) Cortex: ready");
  const e = statusView([{ repository: "/w/a", state: "error", error: "boom" }]);
  assert.equal(e.text, "$(error) Cortex: error");
  assert.equal(e.error, true);
});

test("helpers: one line, icons, urls, paths", () => {
  assert.equal(oneLine("a\nb\tc\u2028d"), "a b c d");
  assert.equal(oneLine("x".repeat(10), 5), "xxxx…");
  assert.equal(noIcons("$(x) $(y)"), "$\u200b(x) $\u200b(y)");
  assert.equal(safeCommitUrl("https://github.com/a/b/commit/1"), "https://github.com/a/b/commit/1");
  assert.equal(safeCommitUrl("command:workbench.action.terminal.new"), undefined);
  assert.equal(safeCommitUrl("javascript:alert(1)"), undefined);
  assert.equal(safeCommitUrl(42), undefined);
  assert.equal(resolveUnder("/w/repo/", "pkg/core.py"), "/w/repo/pkg/core.py");
  assert.equal(resolveUnder("/w/repo", "../etc/passwd"), undefined);
  assert.equal(resolveUnder("/w/repo", "/etc/passwd"), undefined);
});

test("related items: symbols then files, evidence, weak single commits, the working tree's mates", () => {
  const withTarget = {
    target: { path: "pkg/core.py", qualname: "compute" },
    symbols: [
      { path: "pkg/core.py", qualname: "save", line: 12, support: 3, relation: "same file",
        evidence: [{ sha: "a".repeat(40), subject: "tune $(zap) compute\nand save", time: nowS - 2 * DAY }] },
      { path: "use.py", qualname: "main", line: 0, support: 0, relation: "caller", evidence: [] },
    ],
    files: [{ path: "use.py", support: 1, evidence: [{ sha: "b".repeat(40), subject: "add the core" }] },
      { nope: true }, null, { path: "" }],
  };
  const items = relatedItems(withTarget as any, NOW);
  assert.deepEqual(items.map((i) => i.label), ["pkg/core.py::save", "use.py::main", "use.py"]);
  assert.equal(items[0].description, "3 shared commits · same file");
  assert.equal(items[0].detail, "last together: tune $\u200b(zap) compute and save (2 days ago)");
  assert.equal(items[1].description, "no shared commit · caller");
  assert.equal(items[1].detail, undefined);
  assert.equal(items[2].description, "1 shared commit (weak)");
  assert.equal(partnerLine(items[0].data), 12);
  assert.equal(partnerLine(items[1].data), undefined);   // 0 is no line
  assert.equal(partnerLine(items[2].data), undefined);   // a file opens at its top
  assert.equal(relatedTitle(withTarget as any, 3), "What changes with pkg/core.py::compute: 3");
  assert.equal(relatedTitle({ target: { path: "$(zap).py" } } as any, 1), "What changes with $\u200b(zap).py: 1");

  const changes = {
    changed: ["a.py"], unknown: [],
    files: [{ path: "b.py", support: 2, with_changed: ["a.py", "x1", "x2", "x3", "x4", "x5"] }],
  };
  const [b] = relatedItems(changes as any, NOW);
  assert.equal(b.detail, "with a.py, x1, x2, x3, x4, …");
  assert.equal(relatedTitle(changes as any, 1), "What usually changes with your 1 changed file: 1");
  assert.equal(relatedTitle({ changed: ["a.py"], unknown: ["new.py"] } as any, 4),
    "What usually changes with your 2 changed files: 4");
  assert.equal(relatedNothing({ changed: [], unknown: [] } as any, true),
    "Cortex: no uncommitted changes in this repository");
  assert.equal(relatedNothing({ changed: ["a.py"] } as any, true),
    "Cortex: nothing in the history usually changes with your changes");
  assert.equal(relatedNothing({ note: "no symbol\nencloses line 3" } as any, false),
    "Cortex: no symbol encloses line 3");
  assert.equal(relatedNothing(undefined, false), "Cortex: nothing in the history changes with this");
  assert.deepEqual(relatedItems(undefined), []);
});
