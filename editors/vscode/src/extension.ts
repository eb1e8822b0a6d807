import * as vscode from "vscode";
import { execFile } from "node:child_process";
import {
  ExecuteCommandRequest,
  LanguageClient,
  LanguageClientOptions,
  ServerOptions,
  State,
} from "vscode-languageclient/node";
import {
  blastItems,
  chooseServerCommand,
  describeCommand,
  dependentLine,
  exportMessage,
  hitTarget,
  historyItems,
  historyTitle,
  HistoryEntry,
  HistoryResult,
  INSTALL_HINT,
  IndexStatus,
  oneLine,
  partnerLine,
  RelatedResult,
  relatedItems,
  relatedNothing,
  relatedTitle,
  resolveUnder,
  nothingFound,
  searchItems,
  searchTitle,
  serverSettings,
  ServerCommand,
  statusView,
} from "./logic";
import { openCommit } from "./git";

const LANGUAGES = ["python", "javascript", "typescript", "typescriptreact", "go", "rust", "java", "c", "cpp", "ruby", "php"];

let client: LanguageClient | undefined;
let output: vscode.LogOutputChannel;
let statusItem: vscode.StatusBarItem;
const statuses = new Map<string, IndexStatus>();

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  output = vscode.window.createOutputChannel("Cortex", { log: true });
  statusItem = vscode.window.createStatusBarItem("cortex.status", vscode.StatusBarAlignment.Left, 0);
  statusItem.name = "Cortex";
  statusItem.command = "cortex.showLog";
  renderStatus();
  statusItem.show();
  context.subscriptions.push(output, statusItem);

  const reg = (id: string, fn: (...args: any[]) => unknown) =>
    context.subscriptions.push(vscode.commands.registerCommand(id, async (...args: any[]) => {
      try {
        return await fn(...args);
      } catch (err) {
        reportError(id, err);
      }
    }));
  reg("cortex.exportContextPack", exportContextPack);
  reg("cortex.showSymbolHistory", () => showSymbolHistory());
  reg("cortex.showBlastRadius", showBlastRadius);
  reg("cortex.showRelated", () => showRelated(false));
  reg("cortex.showRelatedToChanges", () => showRelated(true));
  reg("cortex.searchMemory", searchMemory);
  reg("cortex.reindexRepositories", reindex);
  reg("cortex.addNoteHere", addNote);
  reg("cortex.showLog", () => output.show(true));
  reg("cortex.restartServer", () => restart());

  context.subscriptions.push(vscode.workspace.onDidChangeConfiguration((e) => {
    if (e.affectsConfiguration("cortex.serverCommand") || e.affectsConfiguration("cortex.pythonPath")) {
      void restart();
    }
  }));

  await startClient();
}

export async function deactivate(): Promise<void> {
  const c = client;
  client = undefined;
  if (c) await c.stop().catch(() => undefined);
}

// -- the server ---------------------------------------------------------------------------------

async function pythonExtensionInterpreter(): Promise<string[] | undefined> {
  const ext = vscode.extensions.getExtension<any>("ms-python.python");
  if (!ext) return undefined;
  try {
    const api = ext.isActive ? ext.exports : await ext.activate();
    const env = api?.environments;
    if (env?.getActiveEnvironmentPath) {
      const folder = vscode.workspace.workspaceFolders?.[0];
      const p = env.getActiveEnvironmentPath(folder?.uri);
      const resolved = env.resolveEnvironment ? await env.resolveEnvironment(p) : undefined;
      const exe = resolved?.executable?.uri?.fsPath ?? p?.path;
      if (typeof exe === "string" && exe) return [exe];
    }
    const details = api?.settings?.getExecutionDetails?.(vscode.workspace.workspaceFolders?.[0]?.uri);
    if (Array.isArray(details?.execCommand) && details.execCommand.length) return details.execCommand;
  } catch (err) {
    output.warn(`Cortex: could not ask the Python extension for its interpreter: ${String(err)}`);
  }
  return undefined;
}

async function resolveServer(): Promise<ServerCommand> {
  const cfg = vscode.workspace.getConfiguration("cortex");
  const serverCommand = cfg.get<unknown>("serverCommand");
  const pythonPath = cfg.get<unknown>("pythonPath");
  const choice = chooseServerCommand({ serverCommand, pythonPath });
  if (choice.source !== "path") return choice;
  return chooseServerCommand({ pythonExtensionInterpreter: await pythonExtensionInterpreter() });
}

/** For `python -m cortex_ls`: check that the interpreter can import the server at all. */
function checkImport(cmd: ServerCommand, cwd: string | undefined): Promise<string | undefined> {
  if (cmd.source !== "pythonPath" && cmd.source !== "pythonExtension") return Promise.resolve(undefined);
  const pre = cmd.args.slice(0, cmd.args.length - 3);   // without "-P", "-m", "cortex_ls"
  return new Promise((resolve) => {
    execFile(cmd.command, [...pre, "-P", "-c", "import cortex_ls"], { timeout: 30000, cwd }, (err, _out, stderr) => {
      if (!err) return resolve(undefined);
      resolve(oneLine(stderr || String(err), 400));
    });
  });
}

function settingsNow(): Record<string, unknown> {
  const cfg = vscode.workspace.getConfiguration("cortex");
  return serverSettings((k) => cfg.get(k));
}

async function startClient(): Promise<void> {
  const cmd = await resolveServer();
  output.info(`Cortex: starting the server: ${describeCommand(cmd)} (from ${cmd.source})`);
  const folder = vscode.workspace.workspaceFolders?.[0];
  // the same cwd as the server: `python -m` and `-c` both put it on sys.path
  const importError = await checkImport(cmd, folder?.uri.fsPath);
  if (importError !== undefined) {
    output.error(`Cortex: ${cmd.command} cannot import cortex_ls: ${importError}`);
    showStartFailure(`Cortex: the interpreter ${cmd.command} cannot run the server (cortex_ls is not installed there).`);
    return;
  }
  const serverOptions: ServerOptions = {
    command: cmd.command,
    args: cmd.args,
    // no `transport`: TransportKind.stdio would append `--stdio`, which cortex-ls rejects; plain
    // executables talk over stdio by default.
    options: folder ? { cwd: folder.uri.fsPath } : undefined,
  };
  const clientOptions: LanguageClientOptions = {
    documentSelector: LANGUAGES.map((language) => ({ scheme: "file", language })),
    outputChannel: output,
    revealOutputChannelOn: 4 /* RevealOutputChannelOn.Never */,
    initializationOptions: settingsNow(),
    synchronize: { configurationSection: "cortex" },
    connectionOptions: { maxRestartCount: 2 },
    middleware: {
      executeCommand: async (command, args, next) => {
        if (command === "cortex.showHistory") {
          // The code lens command: render the history client-side.
          const result = (await next(command, args)) as HistoryResult | undefined;
          await pickHistory(result);
          return result;
        }
        const result = await next(command, args);
        if (command === "cortex.exportContext" && result && typeof (result as any).text === "string") {
          await vscode.env.clipboard.writeText((result as any).text);
          void vscode.window.showInformationMessage(exportMessage(result as any));
        }
        return result;
      },
    },
  };
  const c = new LanguageClient("cortex", "Cortex", serverOptions, clientOptions);
  client = c;
  c.onDidChangeState((e) => {
    if (e.newState === State.Stopped) {
      statuses.clear();
      statusItem.text = "$(error) Cortex: not running";
      statusItem.tooltip = `The Cortex server is not running (click for its log). ${INSTALL_HINT}`;
    }
  });
  try {
    await c.start();
  } catch (err) {
    output.error(`Cortex: the server did not start: ${String(err)}`);
    if (client === c) client = undefined;
    showStartFailure(`Cortex: the server \`${describeCommand(cmd)}\` did not start (its output is in Output › Cortex).`);
    return;
  }
  c.onNotification("cortex/indexStatus", (p: IndexStatus) => {
    statuses.set(String(p?.repository ?? ""), p ?? {});
    renderStatus();
  });
  c.onNotification("cortex/indexUpdated", (p: any) => {
    output.info(`Cortex: index updated: ${oneLine(p?.repository)} (${Number(p?.newCommits) || 0} new commits)`);
  });
  renderStatus();
}

function showStartFailure(message: string): void {
  statusItem.text = "$(error) Cortex: not running";
  statusItem.tooltip = INSTALL_HINT;
  void vscode.window.showErrorMessage(`${message} ${INSTALL_HINT}`, "Open Settings", "Show Log").then((choice) => {
    if (choice === "Open Settings") void vscode.commands.executeCommand("workbench.action.openSettings", "cortex.");
    if (choice === "Show Log") output.show(true);
  });
}

async function restart(): Promise<void> {
  const c = client;
  client = undefined;
  statuses.clear();
  if (c) await c.stop().catch(() => undefined);
  await startClient();
}

function renderStatus(): void {
  if (!statusItem) return;
  const v = statusView([...statuses.values()]);
  statusItem.text = v.text;
  statusItem.tooltip = v.tooltip;
  statusItem.backgroundColor = v.error ? new vscode.ThemeColor("statusBarItem.errorBackground") : undefined;
}

function reportError(id: string, err: unknown): void {
  const msg = err instanceof Error ? err.message : String(err);
  output.error(`Cortex: ${id}: ${msg}`);
  void vscode.window.showErrorMessage(`Cortex: ${oneLine(msg, 400)}`);
}

// -- helpers ------------------------------------------------------------------------------------

function running(): LanguageClient {
  if (!client || !client.isRunning()) throw new Error(`the server is not running. ${INSTALL_HINT}`);
  return client;
}

function cursorTarget(): { textDocument: { uri: string }; position: { line: number; character: number } } {
  const editor = vscode.window.activeTextEditor;
  if (!editor) throw new Error("no active editor: put the cursor in a file of the repository");
  const c = running();
  return {
    textDocument: { uri: c.code2ProtocolConverter.asUri(editor.document.uri) },
    position: c.code2ProtocolConverter.asPosition(editor.selection.active),
  };
}

/** The file of the active editor, else the first workspace folder (an untitled or virtual
 * editor says nothing of which repository is meant). */
function workspaceUri(): string | undefined {
  const active = vscode.window.activeTextEditor?.document.uri;
  const u = active && active.scheme === "file" ? active : vscode.workspace.workspaceFolders?.[0]?.uri;
  return u && u.scheme === "file" ? u.toString() : undefined;
}

function execute(command: string, arg: object): Promise<any> {
  return running().sendRequest(ExecuteCommandRequest.type, { command, arguments: [arg] });
}

async function openAt(root: string | undefined, rel: string, line?: number): Promise<void> {
  if (!root) throw new Error("the server did not say which repository this is in");
  const abs = resolveUnder(root, rel);
  if (!abs) throw new Error(`refusing to open ${oneLine(rel)}`);
  const doc = await vscode.workspace.openTextDocument(vscode.Uri.file(abs));
  const pos = new vscode.Position(Math.max(0, (line ?? 1) - 1), 0);
  await vscode.window.showTextDocument(doc, { selection: new vscode.Range(pos, pos) });
}

// -- commands -----------------------------------------------------------------------------------

async function exportContextPack(): Promise<void> {
  const result = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Window, title: "Cortex: building a context pack" },
    () => execute("cortex.exportContext", cursorTarget()),
  );
  if (!result || typeof result.text !== "string") throw new Error("the server returned no context pack");
  await vscode.env.clipboard.writeText(result.text);
  void vscode.window.showInformationMessage(exportMessage(result));
}

async function showSymbolHistory(): Promise<void> {
  const result = (await running().sendRequest("cortex/symbolHistory", { ...cursorTarget(), limit: 0 })) as HistoryResult;
  await pickHistory(result);
}

async function pickHistory(result: HistoryResult | undefined): Promise<void> {
  const items = historyItems(result);
  if (items.length === 0) {
    void vscode.window.showInformationMessage(`Cortex: ${oneLine(result?.note || "no commits yet for this symbol")}`);
    return;
  }
  const picked = await vscode.window.showQuickPick(items, {
    title: historyTitle(result) + (result?.partial ? " — index still building" : ""),
    placeHolder: "Choose a commit to see its diff",
    matchOnDescription: true,
    matchOnDetail: true,
  });
  if (picked) await openCommit(picked.data as HistoryEntry, result?.repository, output);
}

async function showBlastRadius(): Promise<void> {
  const result: any = await running().sendRequest("cortex/blastRadius", cursorTarget());
  const items = blastItems(result);
  if (items.length === 0) {
    void vscode.window.showInformationMessage(`Cortex: ${oneLine(result?.note || "nothing depends on this symbol")}`);
    return;
  }
  const risk = result?.summary?.risk ? ` · risk ${oneLine(result.summary.risk, 40)}` : "";
  const picked = await vscode.window.showQuickPick(items, {
    title: `Blast radius: ${items.length} dependents${risk}`,
    matchOnDetail: true,
  });
  if (picked) await openAt(result?.repository, picked.data.path, dependentLine(picked.data));
}

/** What changes with the symbol at the cursor, or (`changes`) what usually changes with the
 * working tree's uncommitted changes, unsaved buffers included (the server reads them). */
async function showRelated(changes: boolean): Promise<void> {
  let params: Record<string, unknown> = {};
  if (changes) {
    const uri = workspaceUri();
    if (uri) params.uri = uri;
  } else {
    params = cursorTarget();
  }
  const result: RelatedResult = await running().sendRequest("cortex/related", params);
  const items = relatedItems(result);
  if (items.length === 0) {
    void vscode.window.showInformationMessage(relatedNothing(result, changes));
    return;
  }
  const picked = await vscode.window.showQuickPick(items, {
    title: relatedTitle(result, items.length) + (result?.partial ? " — index still building" : ""),
    matchOnDescription: true,
    matchOnDetail: true,
  });
  if (picked) await openAt(result?.repository, picked.data.path, partnerLine(picked.data));
}

async function searchMemory(): Promise<void> {
  const query = await vscode.window.showInputBox({ prompt: "Search Cortex memory (commits, docs, notes)", ignoreFocusOut: true });
  if (!query || !query.trim()) return;
  const params: Record<string, unknown> = { query };
  const uri = workspaceUri();
  if (uri) params.uri = uri;
  const result: any = await running().sendRequest("cortex/search", params);
  const items = searchItems(result);
  if (items.length === 0) {
    void vscode.window.showInformationMessage(nothingFound(query, result?.note));
    return;
  }
  const picked = await vscode.window.showQuickPick(items, { title: searchTitle(query, items.length, result?.note), matchOnDetail: true });
  if (!picked) return;
  const t = hitTarget(picked.data);
  if (t.kind === "commit") {
    await openCommit({ commit: { sha: t.sha, url: t.url }, path: picked.data.path }, result?.repository, output);
  } else if (t.kind === "file") {
    await openAt(result?.repository, t.path, t.line);
  }
}

async function reindex(): Promise<void> {
  const params: Record<string, unknown> = {};
  const result: any = await execute("cortex.reindex", params);
  const started = Array.isArray(result?.started) ? result.started.length : 0;
  const queued = Array.isArray(result?.queued) ? result.queued.length : 0;
  void vscode.window.showInformationMessage(`Cortex: reindexing ${started} repositor${started === 1 ? "y" : "ies"}` + (queued ? `, ${queued} queued` : ""));
}

async function addNote(): Promise<void> {
  const target = cursorTarget();
  const text = await vscode.window.showInputBox({ prompt: "Cortex note on the symbol at the cursor", ignoreFocusOut: true });
  if (!text || !text.trim()) return;
  const note: any = await execute("cortex.addNote", { ...target, text });
  void vscode.window.showInformationMessage(`Cortex: note #${Number(note?.id) || "?"} added on ${oneLine(note?.target ?? "the repository", 120)}`);
}
