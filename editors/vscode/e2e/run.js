// Drives a running code-server with the Cortex extension through Debian's Chromium (playwright-core),
// and prints one JSON object with what it saw. tests/test_vscode_e2e.py runs it and asserts.
//
// Env: CS_URL (http://127.0.0.1:PORT), WORKSPACE (folder), FILE (a file at the workspace root),
//      SYMBOL (a function defined in FILE), SCREENSHOT (png path), E2E_CACHE (dir with node_modules/playwright-core),
//      CHROMIUM (default /usr/bin/chromium).
"use strict";
const path = require("node:path");
const { createRequire } = require("node:module");

const cache = process.env.E2E_CACHE || path.join(__dirname, "..", ".e2e");
const { chromium } = createRequire(path.join(cache, "package.json"))("playwright-core");

const out = { steps: {}, errors: [] };
const t0 = Date.now();
const mark = (name) => { out.steps[name] = Date.now() - t0; };

async function palette(page, title) {
  await page.keyboard.press("Control+Shift+P");
  const input = page.locator(".quick-input-widget input");
  await input.waitFor({ timeout: 15000 });
  await page.keyboard.type(title);
  await page.locator(".quick-input-widget .monaco-list-row", { hasText: title }).first().waitFor({ timeout: 15000 });
  await page.keyboard.press("Enter");
}

async function quickPickRows(page, text) {
  const row = page.locator(".quick-input-widget .monaco-list-row", { hasText: text }).first();
  await row.waitFor({ timeout: 30000 });
  const rows = await page.locator(".quick-input-widget .monaco-list-row").allInnerTexts();
  await page.keyboard.press("Escape");
  return rows.map((r) => r.replace(/\s+/g, " ").trim());
}

async function toast(page, text) {
  const t = page.locator(".notifications-toasts .notification-list-item-message", { hasText: text }).first();
  await t.waitFor({ timeout: 30000 });
  return (await t.innerText()).trim();
}

async function main() {
  const url = process.env.CS_URL;
  const workspace = process.env.WORKSPACE;
  const file = process.env.FILE;
  const symbol = process.env.SYMBOL;
  const shot = process.env.SCREENSHOT || path.join(__dirname, "screenshot.png");
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
      "--disable-component-update", "--disable-sync"],
  });
  try {
    const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
    await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: url });
    const page = await context.newPage();
    page.on("pageerror", (e) => out.errors.push(`pageerror: ${String(e).slice(0, 300)}`));
    await page.goto(`${url}/?folder=${encodeURIComponent(workspace)}`, { waitUntil: "domcontentloaded" });
    await page.waitForSelector(".monaco-workbench", { timeout: 60000 });
    mark("workbench");

    await page.locator(".explorer-folders-view .monaco-list-row", { hasText: file }).first().click({ timeout: 30000 });
    mark("fileOpened");

    if ((process.env.MODE || "full") === "startFailure") {
      out.failure = await toast(page, "pip install cortex-memory");
      out.statusBar = await page.locator(".part.statusbar .statusbar-item", { hasText: "Cortex" }).first().innerText({ timeout: 5000 }).catch(() => null);
      await page.screenshot({ path: shot });
      mark("failureShown");
      return;
    }

    const lens = page.locator(".part.editor .codelens-decoration", { hasText: "changed" }).first();
    await lens.waitFor({ timeout: 60000 });
    out.lens = (await lens.innerText()).trim();
    mark("codeLens");

    // hover on the function name
    const word = page.locator(".part.editor .view-lines .view-line span", { hasText: new RegExp(`^${symbol}$`) }).first();
    const box = await word.boundingBox();
    await page.mouse.click(box.x + 5, box.y + box.height / 2);
    let hover;
    for (let attempt = 0; attempt < 5 && !hover; attempt++) {
      await page.keyboard.press("Control+K");
      await page.keyboard.press("Control+I");
      const h = page.locator(".part.editor .monaco-hover", { hasText: symbol }).first();
      try {
        await h.waitFor({ timeout: 5000 });
        hover = h;
      } catch {
        out.errors.push(`hover attempt ${attempt} failed`);
      }
    }
    out.hover = hover ? (await hover.innerText()).trim() : null;
    mark("hover");
    await page.waitForTimeout(600); // the hover fades in
    await page.screenshot({ path: shot });
    out.screenshot = shot;
    await page.keyboard.press("Escape");

    // put the cursor back in the function, then export
    await page.mouse.click(box.x + 5, box.y + box.height / 2);
    await palette(page, "Cortex: Export Context Pack");
    const note = page.locator(".notifications-toasts .notification-list-item-message", { hasText: "Context pack copied" }).first();
    await note.waitFor({ timeout: 60000 });
    out.notification = (await note.innerText()).trim();
    out.clipboard = await page.evaluate(() => navigator.clipboard.readText());
    mark("export");

    // the code lens runs the server command cortex.showHistory, rendered as a QuickPick by the middleware
    await page.keyboard.press("Escape");
    await page.locator(".part.editor .codelens-decoration a", { hasText: "changed" }).first().click();
    out.historyPick = await quickPickRows(page, "speed up compute");
    mark("historyLens");

    // choosing a commit opens its diff of the file (git extension: vscode.diff of sha~1 ↔ sha)
    await page.locator(".part.editor .codelens-decoration a", { hasText: "changed" }).first().click();
    await page.locator(".quick-input-widget .monaco-list-row", { hasText: "tune compute to 4" }).first().click({ timeout: 30000 });
    const tab = page.locator(".part.editor .tab", { hasText: "core.py (" }).first();
    await tab.waitFor({ timeout: 30000 });
    out.diffTab = (await tab.innerText()).trim();
    out.diffEditor = await page.locator(".part.editor .monaco-diff-editor").count();
    mark("historyDiff");
    await page.waitForTimeout(800);
    await page.screenshot({ path: shot.replace(/\.png$/, "-diff.png") });
    // the diff replaced the preview tab of the file: open the file again
    await page.locator(".explorer-folders-view .monaco-list-row", { hasText: file }).first().click();
    await page.waitForTimeout(300);
    await word.waitFor({ timeout: 10000 });

    const box2 = await word.boundingBox();
    await page.mouse.click(box2.x + 5, box2.y + box2.height / 2);
    await palette(page, "Cortex: Show Blast Radius");
    out.blastPick = await quickPickRows(page, "::");
    mark("blastRadius");

    // what changes with the function: its callers and its file's other functions, then files
    await page.mouse.click(box2.x + 5, box2.y + box2.height / 2);
    await palette(page, "Cortex: Show What Changes With This");
    out.relatedPick = await quickPickRows(page, "::");
    mark("related");

    // an unsaved edit of the function: what usually changes with the working tree's changes
    await page.mouse.click(box2.x + 5, box2.y + box2.height / 2);
    await page.keyboard.press("End");
    await page.keyboard.type("  # e2e edit");
    await palette(page, "Cortex: Show What Usually Changes With My Changes");
    await page.locator(".quick-input-widget .monaco-list-row", { hasText: "use.py" }).first().waitFor({ timeout: 30000 });
    out.relatedChangesTitle = await page.locator(".quick-input-widget .quick-input-title").first()
      .innerText({ timeout: 5000 }).catch(() => null);
    out.relatedChangesPick = await quickPickRows(page, "use.py");
    await page.keyboard.press("Control+Z");
    mark("relatedToChanges");

    // Add Note at the cursor (InputBox), Search Memory (InputBox + QuickPick), Reindex
    await page.mouse.click(box2.x + 5, box2.y + box2.height / 2);
    await palette(page, "Cortex: Add Note");
    await page.locator(".quick-input-widget", { hasText: "Cortex note" }).first().waitFor({ timeout: 15000 });
    await page.keyboard.type("e2e note: compute must stay pure");
    await page.keyboard.press("Enter");
    out.noteMessage = await toast(page, "added on");
    mark("addNote");

    await palette(page, "Cortex: Search Memory");
    await page.locator(".quick-input-widget", { hasText: "Search Cortex memory" }).first().waitFor({ timeout: 15000 });
    await page.keyboard.type("tune compute");
    await page.keyboard.press("Enter");
    out.searchPick = await quickPickRows(page, "tune compute");
    mark("search");

    await palette(page, "Cortex: Reindex");
    out.reindexMessage = await toast(page, "Cortex: reindexing");
    mark("reindex");

    out.statusBar = await page.locator(".part.statusbar .statusbar-item", { hasText: "Cortex" }).first().innerText({ timeout: 5000 }).catch(() => null);
  } finally {
    await browser.close();
  }
}

main().then(
  () => { out.ok = true; out.ms = Date.now() - t0; console.log(JSON.stringify(out)); },
  (err) => { out.ok = false; out.ms = Date.now() - t0; out.errors.push(String(err && err.stack || err)); console.log(JSON.stringify(out)); process.exitCode = 1; },
);
