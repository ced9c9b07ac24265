// Writes the LICENSES file of the CodeMirror bundle: the licence text of every npm package esbuild put into it
// (read from esbuild's metafile), so the vendored file carries each of its authors' terms.
// Usage: node codemirror_licences.mjs <node_modules dir> <metafile> <out>
import { readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const [modules, metafile, out] = process.argv.slice(2);
const names = new Set();
for (const input of Object.keys(JSON.parse(readFileSync(metafile, "utf8")).inputs)) {
  const match = input.match(/node_modules\/((?:@[^/]+\/)?[^/]+)\//);
  if (match) names.add(match[1]);
}
const parts = [...names].sort().map((name) => {
  const dir = join(modules, name);
  const meta = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
  const file = readdirSync(dir).find((f) => /^licen[cs]e/i.test(f));
  if (!file) throw new Error(`${name} ships no licence file`);
  return `${name}@${meta.version} (${meta.license})\n${"=".repeat(60)}\n${readFileSync(join(dir, file), "utf8").trim()}\n`;
});
writeFileSync(out, parts.join("\n\n"));
console.log(`LICENSES: ${names.size} packages`);
