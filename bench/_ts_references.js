// TypeScript's own "find all references" (its language service, the engine behind VS Code's),
// as the reference for bench_structure.py's callers part on TypeScript: reads a JSON request
// on stdin, {"root": DIR, "files": [paths relative to DIR], "targets": [[path, line, column]]}
// (1-based line, 0-based column, at the name of a definition), and prints, for each target,
// the places that refer to it: [[path, line], ...] (definitions left out), or null when the
// service found no symbol there. Run with node; TYPESCRIPT names typescript.js (its package is
// not a dependency of Cortex: bench/README.md says where to get one).
"use strict";
const fs = require("fs");
const path = require("path");
const ts = require(process.env.TYPESCRIPT || "typescript");

const request = JSON.parse(fs.readFileSync(0, "utf8"));
const root = request.root;
const files = request.files.map((f) => path.join(root, f));
const texts = new Map();
const read = (f) => {
  if (!texts.has(f)) {
    try { texts.set(f, fs.readFileSync(f, "utf8")); } catch (e) { texts.set(f, undefined); }
  }
  return texts.get(f);
};
const host = {
  getScriptFileNames: () => files,
  getScriptVersion: () => "1",
  getScriptSnapshot: (f) => {
    const text = read(f);
    return text === undefined ? undefined : ts.ScriptSnapshot.fromString(text);
  },
  getCurrentDirectory: () => root,
  getCompilationSettings: () => ({ allowJs: false, target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext, moduleResolution: ts.ModuleResolutionKind.Bundler,
    noEmit: true, skipLibCheck: true, strict: true }),
  getDefaultLibFileName: (o) => ts.getDefaultLibFilePath(o),
  fileExists: (f) => read(f) !== undefined,
  readFile: (f) => read(f),
  readDirectory: ts.sys.readDirectory,
  directoryExists: ts.sys.directoryExists,
  getDirectories: ts.sys.getDirectories,
};
const service = ts.createLanguageService(host, ts.createDocumentRegistry());
const out = [];
for (const [rel, line, column] of request.targets) {
  const file = path.join(root, rel);
  const text = read(file);
  if (text === undefined) { out.push(null); continue; }
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, true);
  let position;
  try { position = source.getPositionOfLineAndCharacter(line - 1, column); } catch (e) {
    out.push(null); continue;
  }
  const found = service.findReferences(file, position);
  if (!found) { out.push(null); continue; }
  const places = [];
  for (const symbol of found) {
    for (const ref of symbol.references) {
      if (ref.isDefinition) continue;
      const refText = read(ref.fileName);
      const refSource = ts.createSourceFile(ref.fileName, refText, ts.ScriptTarget.ES2022, true);
      const at = refSource.getLineAndCharacterOfPosition(ref.textSpan.start);
      places.push([path.relative(root, ref.fileName), at.line + 1]);
    }
  }
  out.push(places);
}
process.stdout.write(JSON.stringify(out));
