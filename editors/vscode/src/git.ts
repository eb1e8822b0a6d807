import * as vscode from "vscode";
import { execFile } from "node:child_process";
import { HistoryEntry, oneLine, resolveUnder, safeCommitUrl } from "./logic";

/** Open one commit of a history: its diff of the entry's file through the built-in git
 * extension, else its web page (`url`), else `git show` in an untitled document. */
export async function openCommit(
  entry: Pick<HistoryEntry, "commit" | "path" | "change">,
  repoRoot: string | undefined,
  log: vscode.LogOutputChannel,
): Promise<void> {
  const sha = entry.commit.sha;
  if (!/^[0-9a-f]{7,64}$/i.test(sha)) throw new Error("not a commit id");
  if (repoRoot && entry.path) {
    try {
      if (await openWithGitExtension(sha, repoRoot, entry.path, entry.change)) return;
    } catch (err) {
      log.warn(`Cortex: the git extension could not show ${sha}: ${String(err)}`);
    }
  }
  const url = safeCommitUrl(entry.commit.url);
  if (url) {
    await vscode.env.openExternal(vscode.Uri.parse(url, true));
    return;
  }
  if (!repoRoot) throw new Error("the server did not say which repository the commit is in");
  const text = await gitShow(repoRoot, sha);
  const doc = await vscode.workspace.openTextDocument({ content: text, language: "diff" });
  await vscode.window.showTextDocument(doc, { preview: true });
}

async function openWithGitExtension(sha: string, root: string, rel: string, change?: string): Promise<boolean> {
  const ext = vscode.extensions.getExtension<any>("vscode.git");
  if (!ext) return false;
  const exports = ext.isActive ? ext.exports : await ext.activate();
  if (!exports?.enabled) return false;
  const api = exports.getAPI(1);
  const abs = resolveUnder(root, rel);
  if (!abs || typeof api?.toGitUri !== "function") return false;
  const uri = vscode.Uri.file(abs);
  const title = `${oneLine(rel, 120)} (${sha.slice(0, 10)})`;
  const right = api.toGitUri(uri, sha);
  if (change && /^(a|add|added)$/i.test(change)) {
    await vscode.window.showTextDocument(right, { preview: true });
    return true;
  }
  const left = api.toGitUri(uri, `${sha}~1`);
  await vscode.commands.executeCommand("vscode.diff", left, right, title, { preview: true });
  return true;
}

function gitShow(root: string, sha: string): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      "git",
      ["-C", root, "show", "--stat", "--patch", "--no-color", "--no-ext-diff", sha, "--"],
      { maxBuffer: 32 * 1024 * 1024, timeout: 30000 },
      (err, stdout, stderr) => (err ? reject(new Error(oneLine(stderr || String(err), 300))) : resolve(stdout)),
    );
  });
}
