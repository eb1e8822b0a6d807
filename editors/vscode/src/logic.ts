// Pure logic of the Cortex extension: no `vscode` import, so that `node --test` can run it.
// Everything shown to the user here comes from a repository (commit subjects, authors, paths):
// it is plain text, and QuickPick labels/descriptions render it as such.

/** The keys of the `cortex` section that the server understands (docs/protocol.md, Settings). */
export const SERVER_SETTINGS = [
  "hotspotThreshold",
  "hotspotWindowDays",
  "historyLength",
  "tokenBudget",
  "tokenEncoding",
  "model",
  "recencyHalfLifeDays",
  "pollInterval",
  "hover",
  "codeLens",
  "indexOnStart",
  "clock",
] as const;

export const INSTALL_HINT =
  "Install the server with `pip install cortex-memory` (see docs/editors.md in the Cortex repository), " +
  "then set `cortex.pythonPath` to that interpreter or `cortex.serverCommand` to the full command.";

export interface ServerCommand {
  command: string;
  args: string[];
  /** Where the choice came from, for the log and error messages. */
  source: "serverCommand" | "pythonPath" | "pythonExtension" | "path";
}

export interface ServerCommandInputs {
  serverCommand?: unknown;
  pythonPath?: unknown;
  /** The Python extension's active interpreter (argv, e.g. ["/venv/bin/python"]), when available. */
  pythonExtensionInterpreter?: string[] | undefined;
}

function nonEmptyString(v: unknown): v is string {
  return typeof v === "string" && v.trim().length > 0;
}

/** serverCommand, else pythonPath -m cortex_ls, else the Python extension's interpreter, else cortex-ls on PATH. */
export function chooseServerCommand(inp: ServerCommandInputs): ServerCommand {
  if (Array.isArray(inp.serverCommand) && inp.serverCommand.length > 0 && inp.serverCommand.every(nonEmptyString)) {
    const [command, ...args] = inp.serverCommand as string[];
    return { command, args, source: "serverCommand" };
  }
  if (nonEmptyString(inp.pythonPath)) {
    // -P: the working directory (the workspace, which vscode-languageclient starts servers in) must
    // not come first on sys.path, or a repository's own cortex_ls/ would run as the server.
    return { command: inp.pythonPath, args: ["-P", "-m", "cortex_ls"], source: "pythonPath" };
  }
  const interp = inp.pythonExtensionInterpreter;
  if (Array.isArray(interp) && interp.length > 0 && interp.every(nonEmptyString)) {
    return { command: interp[0], args: [...interp.slice(1), "-P", "-m", "cortex_ls"], source: "pythonExtension" };
  }
  return { command: "cortex-ls", args: [], source: "path" };
}

export function describeCommand(c: ServerCommand): string {
  return [c.command, ...c.args].map((p) => (/\s/.test(p) ? JSON.stringify(p) : p)).join(" ");
}

/** The server settings out of a configuration getter; unset (undefined/null) values are left out. */
export function serverSettings(get: (key: string) => unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of SERVER_SETTINGS) {
    const v = get(key);
    // null is sent: it resets the key on the server (a setting the user unset must not keep
    // its last value there); the repository's .cortex/config.toml then decides.
    if (v !== undefined) out[key] = v;
  }
  return out;
}

// -- formatting ---------------------------------------------------------------------------------

export function relativeTime(epochSeconds: number, nowMs: number = Date.now()): string {
  if (typeof epochSeconds !== "number" || !isFinite(epochSeconds)) return "";
  const s = Math.round(nowMs / 1000 - epochSeconds);
  if (s < 0) return "in the future";
  const units: [number, string][] = [
    [365 * 86400, "year"],
    [30 * 86400, "month"],
    [7 * 86400, "week"],
    [86400, "day"],
    [3600, "hour"],
    [60, "minute"],
  ];
  for (const [size, name] of units) {
    if (s >= size) {
      const n = Math.floor(s / size);
      return `${n} ${name}${n === 1 ? "" : "s"} ago`;
    }
  }
  return "just now";
}

/** One line of untrusted text: no control characters, no line breaks, bounded length. */
export function oneLine(text: unknown, max = 200): string {
  const s = String(text ?? "").replace(/[\u0000-\u001f\u007f\u2028\u2029]+/g, " ").trim();
  return s.length > max ? s.slice(0, max - 1) + "…" : s;
}

/** QuickPick labels expand `$(icon)` codicons: keep repository text literal. */
export function noIcons(text: string): string {
  return text.replace(/\$\(/g, "$\u200b(");
}

export function exportMessage(result: { tokens?: number; budget?: number; partial?: boolean } | undefined): string {
  const tokens = typeof result?.tokens === "number" ? result.tokens : 0;
  let msg = `Context pack copied: ${tokens} tokens`;
  if (typeof result?.budget === "number") msg += ` (budget ${result.budget})`;
  if (result?.partial) msg += " — the index is still being built, the pack may be incomplete";
  return msg;
}

export interface IndexStatus {
  repository?: string;
  state?: string;
  percentage?: number | null;
  message?: string | null;
  error?: string | null;
}

export interface StatusView {
  text: string;
  tooltip: string;
  busy: boolean;
  error: boolean;
}

function baseName(p: string | undefined): string {
  if (!p) return "";
  const parts = p.split(/[\\/]/).filter(Boolean);
  return parts[parts.length - 1] ?? p;
}

/** The status bar item for the latest `cortex/indexStatus` of each repository. */
export function statusView(statuses: IndexStatus[]): StatusView {
  if (statuses.length === 0) return { text: "$(history) Cortex", tooltip: "Cortex: starting", busy: false, error: false };
  const indexing = statuses.filter((s) => s.state === "indexing");
  const errors = statuses.filter((s) => s.state === "error");
  const lines = statuses.map((s) => {
    const pct = typeof s.percentage === "number" ? ` ${Math.round(s.percentage)}%` : "";
    const extra = s.error ? ` — ${oneLine(s.error)}` : s.message ? ` — ${oneLine(s.message)}` : "";
    return `${baseName(s.repository)}: ${s.state ?? "unknown"}${pct}${extra}`;
  });
  let text: string;
  if (indexing.length > 0) {
    const pcts = indexing.map((s) => s.percentage).filter((p): p is number => typeof p === "number");
    const pct = pcts.length ? ` ${Math.round(Math.min(...pcts))}%` : "";
    text = `$(sync~spin) Cortex: indexing${pct}`;
  } else if (errors.length > 0) {
    text = "$(error) Cortex: error";
  } else if (statuses.every((s) => s.state === "ready")) {
    text = "$(history) Cortex: ready";
  } else {
    text = `$(history) Cortex: ${statuses[0].state ?? "unknown"}`;
  }
  return { text, tooltip: lines.join("\n"), busy: indexing.length > 0, error: errors.length > 0 };
}

// -- QuickPick items ----------------------------------------------------------------------------

export interface Pick<T> {
  label: string;
  description?: string;
  detail?: string;
  data: T;
}

export interface CommitInfo {
  sha: string;
  short?: string;
  time?: number;
  author?: string;
  email?: string;
  subject?: string;
  url?: string;
}

export interface HistoryEntry {
  commit: CommitInfo;
  change?: string;
  added?: number;
  deleted?: number;
  path?: string;
  name?: string;
  why?: string | null;
}

export interface HistoryResult {
  target?: { path?: string; qualname?: string; kind?: string };
  entries?: HistoryEntry[];
  total?: number;
  note?: string | null;
  partial?: boolean;
  repository?: string;
}

export function historyItems(result: HistoryResult | undefined, nowMs: number = Date.now()): Pick<HistoryEntry>[] {
  const entries = Array.isArray(result?.entries) ? result!.entries : [];
  return entries
    .filter((e) => e && e.commit && typeof e.commit.sha === "string")
    .map((e) => {
      const c = e.commit;
      const short = c.short || c.sha.slice(0, 10);
      const date = typeof c.time === "number" ? relativeTime(c.time, nowMs) : "";
      const desc = [oneLine(c.author, 80), date].filter(Boolean).join(" · ");
      const stats: string[] = [];
      if (e.change) stats.push(oneLine(e.change, 40));
      if (typeof e.added === "number" || typeof e.deleted === "number") stats.push(`+${e.added ?? 0} −${e.deleted ?? 0}`);
      if (e.path) stats.push(oneLine(e.path, 200));
      const why = e.why ? oneLine(e.why, 300) : "";
      return {
        label: noIcons(`${short} ${oneLine(c.subject)}`),
        description: noIcons(desc),
        detail: noIcons([stats.join(" · "), why].filter(Boolean).join(" — ")) || undefined,
        data: e,
      };
    });
}

export function historyTitle(result: HistoryResult | undefined): string {
  const t = result?.target;
  const name = t ? [t.path, t.qualname].filter(Boolean).join("::") : "";
  const n = result?.entries?.length ?? 0;
  const total = typeof result?.total === "number" ? result.total : n;
  return oneLine(`History of ${name || "symbol"} (${n}${total > n ? ` of ${total}` : ""} commits)`);
}

export interface Dependent {
  path: string;
  qualname?: string;
  relation?: string;
  depth?: number;
  confidence?: number;
  chain?: { line?: number }[];
  label?: string;
}

export function blastItems(result: { dependents?: Dependent[] } | undefined): Pick<Dependent>[] {
  const deps = Array.isArray(result?.dependents) ? result!.dependents : [];
  return deps
    .filter((d) => d && typeof d.path === "string")
    .map((d) => {
      const conf = typeof d.confidence === "number" ? `${Math.round(d.confidence * 100)}%` : "";
      const detail = [oneLine(d.relation, 60), conf ? `confidence ${conf}` : "", d.depth && d.depth > 1 ? `depth ${d.depth}` : ""]
        .filter(Boolean)
        .join(" · ");
      const line = dependentLine(d);
      return {
        label: noIcons(oneLine(d.qualname ? `${d.path}::${d.qualname}` : d.path)),
        description: line ? `line ${line}` : undefined,
        detail: noIcons(detail) || undefined,
        data: d,
      };
    });
}

/** 1-based line of the first link in the dependency chain, if any. */
export function dependentLine(d: Dependent): number | undefined {
  const l = Array.isArray(d.chain) && d.chain.length > 0 ? d.chain[0]?.line : undefined;
  return typeof l === "number" && l >= 1 ? l : undefined;
}

export interface SearchHit {
  kind?: string;
  title?: string;
  text?: string;
  citation?: string;
  time?: number;
  sha?: string;
  path?: string;
  line?: number;
  url?: string;
}

/** The hit list's title, with the search's note when it has one: a reader must see that the
 * hits are the vectors' guesses, or match common words only. */
export function searchTitle(query: string, count: number, note?: string | null): string {
  const head = `Cortex: ${count} hits for "${oneLine(query, 80)}"`;
  return note ? `${head} — ${oneLine(note, 160)}` : head;
}

/** What an empty search says, with its note when it has one. */
export function nothingFound(query: string, note?: string | null): string {
  return `Cortex: nothing found for "${oneLine(query, 80)}"` + (note ? ` (${oneLine(note, 160)})` : "");
}

export function searchItems(result: { hits?: SearchHit[] } | undefined, nowMs: number = Date.now()): Pick<SearchHit>[] {
  const hits = Array.isArray(result?.hits) ? result!.hits : [];
  return hits.filter(Boolean).map((h) => {
    const kind = h.kind ? `[${oneLine(h.kind, 20)}] ` : "";
    const date = typeof h.time === "number" ? relativeTime(h.time, nowMs) : "";
    return {
      label: noIcons(`${kind}${oneLine(h.title || h.citation || h.sha || "(untitled)")}`),
      description: noIcons([oneLine(h.citation, 120), date].filter(Boolean).join(" · ")) || undefined,
      detail: h.text ? noIcons(oneLine(h.text, 300)) : undefined,
      data: h,
    };
  });
}

/** Where choosing a hit should go: a file position, a commit, or nothing. */
export type HitTarget =
  | { kind: "file"; path: string; line?: number }
  | { kind: "commit"; sha: string; url?: string }
  | { kind: "none" };

export function hitTarget(h: SearchHit): HitTarget {
  if (typeof h.sha === "string" && /^[0-9a-f]{7,40}$/i.test(h.sha)) return { kind: "commit", sha: h.sha, url: h.url };
  if (typeof h.path === "string" && h.path) return { kind: "file", path: h.path, line: typeof h.line === "number" ? h.line : undefined };
  return { kind: "none" };
}

/** Only http(s) commit pages are opened in a browser. */
export function safeCommitUrl(url: unknown): string | undefined {
  if (typeof url !== "string") return undefined;
  try {
    const u = new URL(url);
    return u.protocol === "https:" || u.protocol === "http:" ? u.toString() : undefined;
  } catch {
    return undefined;
  }
}

/** A path from the server (relative to the repository root) resolved safely under the root. */
export function resolveUnder(root: string, rel: string, sep = "/"): string | undefined {
  if (!rel || rel.includes("\0")) return undefined;
  const parts = rel.split(/[\\/]/);
  if (parts.some((p) => p === "..") || rel.startsWith("/") || /^[a-zA-Z]:/.test(rel)) return undefined;
  return root.replace(/[\\/]+$/, "") + sep + parts.filter((p) => p && p !== ".").join(sep);
}

// -- what changes with it -----------------------------------------------------------------------

/** A partner of `cortex/related`: with a target (co-change fused with structure) or for the
 * working tree's changes (what the set usually brings along). */
export interface Partner {
  path: string;
  qualname?: string | null;
  line?: number | null;
  score?: number;
  support?: number;
  relation?: string | null;
  with_changed?: string[];
  evidence?: CommitInfo[];
}

export interface RelatedResult {
  target?: { path?: string; qualname?: string | null };
  symbols?: Partner[];
  files?: Partner[];
  changed?: string[];
  unknown?: string[];
  changed_symbols?: string[];
  note?: string | null;
  partial?: boolean;
  repository?: string;
}

function partners(v: unknown): Partner[] {
  return (Array.isArray(v) ? v : []).filter(
    (p): p is Partner => !!p && typeof p === "object" && typeof p.path === "string" && p.path.length > 0);
}

/** Symbols first, then files: each with its evidence (shared commits, the newest of them) and,
 * for the working tree, which of the changed files it came with. */
export function relatedItems(result: RelatedResult | undefined, nowMs: number = Date.now()): Pick<Partner>[] {
  return [...partners(result?.symbols), ...partners(result?.files)].map((p) => {
    const n = typeof p.support === "number" && p.support > 0 ? Math.floor(p.support) : 0;
    const shared = n === 0 ? "no shared commit" : n === 1 ? "1 shared commit (weak)" : `${n} shared commits`;
    const how = [shared, p.relation ? oneLine(p.relation, 40) : ""].filter(Boolean).join(" · ");
    const newest = Array.isArray(p.evidence) ? p.evidence.find((c) => c && typeof c.subject === "string") : undefined;
    const last = newest
      ? `last together: ${oneLine(newest.subject, 200)}` +
        (typeof newest.time === "number" ? ` (${relativeTime(newest.time, nowMs)})` : "")
      : "";
    const mates = Array.isArray(p.with_changed) ? p.with_changed.filter((w) => typeof w === "string") : [];
    const along = mates.length
      ? `with ${mates.slice(0, 5).map((w) => oneLine(w, 120)).join(", ")}${mates.length > 5 ? ", …" : ""}`
      : "";
    return {
      label: noIcons(oneLine(p.qualname ? `${p.path}::${p.qualname}` : p.path)),
      description: noIcons(how),
      detail: noIcons([along, last].filter(Boolean).join(" — ")) || undefined,
      data: p,
    };
  });
}

/** The 1-based line a partner opens at: a symbol's first line at HEAD, else the file's top. */
export function partnerLine(p: Partner): number | undefined {
  return typeof p.line === "number" && Number.isInteger(p.line) && p.line >= 1 ? p.line : undefined;
}

/** The list's title: the target's name, or how many changed files the working tree has. */
export function relatedTitle(result: RelatedResult | undefined, count: number): string {
  const t = result?.target;
  if (t && typeof t.path === "string") {
    const name = t.qualname ? `${t.path}::${t.qualname}` : t.path;
    return noIcons(oneLine(`What changes with ${name}: ${count}`));
  }
  // New files (`unknown`: no history yet) are changed files too, as the command line counts them.
  const changed = (Array.isArray(result?.changed) ? result!.changed.length : 0) +
    (Array.isArray(result?.unknown) ? result!.unknown.length : 0);
  return `What usually changes with your ${changed} changed file${changed === 1 ? "" : "s"}: ${count}`;
}

/** What an empty answer says. */
export function relatedNothing(result: RelatedResult | undefined, changes: boolean): string {
  if (result?.note) return `Cortex: ${oneLine(result.note, 300)}`;
  if (!changes) return "Cortex: nothing in the history changes with this";
  const changed = (Array.isArray(result?.changed) ? result!.changed.length : 0) +
    (Array.isArray(result?.unknown) ? result!.unknown.length : 0);
  return changed === 0
    ? "Cortex: no uncommitted changes in this repository"
    : "Cortex: nothing in the history usually changes with your changes";
}
