// YAML in the pane as line-based editors hold it (VS Code, Sublime: a tokenizer per line, folding and indentation
// from the indentation): a keystroke re-reads its own line and those after it up to the bottom of the view, so its
// cost does not grow with the file. Lezer's YAML grammar (@codemirror/lang-yaml) re-read the rest of the file after
// each edit, some 45 ms a key on 1,000 steps: long tasks while typing. The schema lint and the completion parse
// with Lezer the one piece of text they need (schema_lint.js, yaml_complete.js).
import { StreamLanguage, foldService, indentService, yamlMode } from "../../vendor/codemirror/codemirror.js";

const MAX_FOLD_LINES = 20_000; // a block longer than this offers no fold: the gutter never scans further a line
const yamlLanguage = StreamLanguage.define(yamlMode);

// Highlighting (tokens of CodeMirror's legacy `yaml` mode), folding and indentation of YAML.
export function yamlLines() {
  return [yamlLanguage, foldService.of(foldByIndent), indentService.of(indentAfter)];
}

// The column of a line's first character, or -1 for a blank line or a comment (they never end a block).
function indentOf(text) {
  const at = text.search(/\S/);
  return at < 0 || text[at] === "#" ? -1 : at;
}

const ITEM = /^\s*-(?:\s|$)/;
const OPENS_BLOCK = /:[ \t]*(?:[|>][-+0-9]*)?[ \t]*(?:#.*)?$/; // `key:` (or `key: |`) with its value below

// A line folds the lines below it indented deeper (comments and blank lines among them included): a step's
// `- id:` line folds the step, `steps:` every step. `key:` folds the items written at its own column too.
export function foldByIndent(state, lineStart) {
  const doc = state.doc;
  const line = doc.lineAt(lineStart);
  const indent = indentOf(line.text);
  if (indent < 0) return null;
  const itemsAtColumn = OPENS_BLOCK.test(line.text) && !ITEM.test(line.text);
  const stop = Math.min(doc.lines, line.number + MAX_FOLD_LINES);
  let last = 0;
  let n = line.number + 1;
  for (; n <= stop; n++) {
    const text = doc.line(n).text;
    const at = indentOf(text);
    if (at < 0) continue;
    if (at < indent || (at === indent && !(itemsAtColumn && ITEM.test(text)))) break;
    last = n;
  }
  if (!last || n > stop && stop < doc.lines) return null;
  return { from: line.to, to: doc.line(last).to };
}

// The indentation of a new line: the previous line's (a comment's too), deeper after `key:` (its value comes
// below), and at the key's column after `- key: value` (the item's mapping goes on).
export function indentAfter(context, pos) {
  let line = context.lineAt(pos, -1); // the text before a new line break at pos, or the line being re-indented
  if (line.from === pos) {
    if (pos === 0) return 0;
    line = context.lineAt(pos - 1, -1);
  }
  for (let seen = 0; !/\S/.test(line.text) && line.from > 0 && seen < 100; seen++) {  // past blank lines
    line = context.lineAt(line.from - 1, -1);
  }
  const text = line.text;
  const indent = Math.max(0, text.search(/\S/)); // a comment's own column too, as line-based editors keep it
  const item = /^(\s*-\s+)+/.exec(text);
  const base = item && item[0].length < text.length ? item[0].length : indent;
  return OPENS_BLOCK.test(text) && !/^\s*#/.test(text) ? base + context.unit : base;
}
