// The YAML pane's completion: keys from the .lobsterX JSON Schema where a key goes, and where a value goes the
// schema's enum values or what the server listed (GET /editor/schema.json's x-forge.completions, and the step
// ids of the outline): agent names, library entries, step ids, expression names. Where the cursor is comes from
// Lezer's parse of the piece of text around it (the step it is in, or its top-level key's block), as the schema
// lint reads the text: the pane's own highlighting is line-based (yaml_lines.js) and gives no tree.
import { yamlParser } from "../../vendor/codemirror/codemirror.js";
import { enumValues, holdsMappings, keyText, knownKeys, schemaAtPath } from "./schema_lint.js";

const WORD = /[\w.$-]*$/;
const EXPRESSION_KEYS = new Set(["condition", "until", "success_criteria"]);

// A CodeMirror completion source; `lists()` gives {agents, library, expressions, stepIds}, `schema()` the schema.
export function yamlCompletions(schema, lists) {
  return (context) => {
    const root = schema();
    const { state, pos } = context;
    const line = state.doc.lineAt(pos);
    const before = line.text.slice(0, pos - line.from);
    const word = WORD.exec(before)[0];
    const from = pos - word.length;
    if (!word && !context.explicit) return null;
    const template = /(\$\{|\{\{)\s*[\w.$-]*$/.exec(before);
    if (template) return result(from, expressionOptions(lists()));
    if (!root) return null;
    const place = placeAt(root, state, from, before.slice(0, before.length - word.length));
    if (!place) return null;
    if (place.key) {
      const schemaHere = schemaAtPath(root, place.path);
      if (!schemaHere) return null;
      const options = [];
      for (const [key, sub] of knownKeys(root, schemaHere)) {
        if (place.siblings.has(key) && key !== word) continue;
        options.push({ label: key, type: "property", apply: `${key}: `, info: sub.description || undefined,
          detail: sub.title || undefined });
      }
      return result(from, options);
    }
    return result(from, valueOptions(root, place.path, lists()));
  };
}

function result(from, options) {
  return options.length ? { from, options, validFor: /^[\w.$-]*$/ } : null;
}

function valueOptions(root, path, lists) {
  const last = path.filter((p) => p !== "[]").at(-1);
  const options = [];
  const schemaHere = schemaAtPath(root, path);
  if (schemaHere) {
    for (const value of enumValues(root, schemaHere)) options.push({ label: String(value), type: "enum" });
  }
  const names = (list, type) => (list || []).forEach((label) => options.push({ label, type }));
  if (last === "agent" || last === "fix_agent") names(lists.agents, "class");
  else if (last === "library_step") names(lists.library, "namespace");
  else if (last === "depends_on" || last === "from") names(lists.stepIds, "variable");
  else if (EXPRESSION_KEYS.has(last)) options.push(...expressionOptions(lists));
  return options;
}

function expressionOptions(lists) {
  return [...(lists.expressions || []).map((label) => ({ label, type: "function" })),
    ...(lists.stepIds || []).map((label) => ({ label, type: "variable" }))];
}

// The piece of text around line `number` that Lezer parses for the completion: the step it is in (an item of a
// block-style `steps` list, `prefix` ["steps"]) or the block of its top-level key; the whole text when the lines
// do not tell (a root list, text before the first key).
function pieceAround(doc, number) {
  let top = 0;
  for (let n = number; n >= Math.max(1, number - MAX_SCAN_LINES); n--) {
    const text = doc.line(n).text;
    if (indentOf(text) === 0 && !ITEM.test(text)) { top = n; break; }
  }
  if (!top) return { from: 0, to: doc.length, prefix: [], top: false };
  const below = (n, column, items) => {  // the end of the block that the lines after n indented past `column` make
    let last = n;
    for (let m = n + 1; m <= Math.min(doc.lines, n + MAX_SCAN_LINES); m++) {
      const text = doc.line(m).text;
      const at = indentOf(text);
      if (at < 0) continue;
      if (at < column || (at === column && !(items && ITEM.test(text)))) break;
      last = m;
    }
    return doc.line(last).to;
  };
  if (number > top && /^steps[ \t]*:[ \t]*(?:#.*)?$/.test(doc.line(top).text)) {
    let column = -1;
    for (let n = top + 1; n <= doc.lines && column < 0; n++) {
      const text = doc.line(n).text;
      if (indentOf(text) >= 0) column = ITEM.test(text) ? indentOf(text) : -2;
    }
    for (let n = number; column > 0 && n > top; n--) {
      const text = doc.line(n).text;
      if (indentOf(text) === column && ITEM.test(text)) {
        return { from: doc.line(n).from, to: Math.max(below(n, column + 1, false), doc.line(number).to),
          prefix: ["steps"], top: false };
      }
    }
  }
  return { from: doc.line(top).from, to: Math.max(below(top, 0, true), doc.line(number).to), prefix: [], top: true };
}

const ITEM = /^\s*-(?:\s|$)/;
const MAX_PIECE_CHARS = 100_000; // a piece is parsed on each key: a longer one (huge text) gets no completion
const MAX_SCAN_LINES = 50_000;

function indentOf(text) {
  const at = text.search(/\S/);
  return at < 0 || text[at] === "#" ? -1 : at;
}

// Where `pos` (the start of the word being typed, `before` the line's text before it) sits in the document:
// {key: true, path, siblings} where a key of the mapping at `path` goes, or {key: false, path} where a value
// at `path` goes; null when neither can be told.
function placeAt(root, state, pos, before) {
  const doc = state.doc;
  const piece = pieceAround(doc, doc.lineAt(pos).number);
  if (piece.to - piece.from > MAX_PIECE_CHARS) return null;
  const body = doc.sliceString(piece.from, piece.to);
  const src = { sliceString: (from, to) => body.slice(from, to) };
  const tree = yamlParser.parse(body);
  const local = { doc, src, tree, at: piece.from, prefix: piece.prefix,
    topKeys: () => (piece.top ? topLevelKeys(doc) : null) };
  const atLineStart = /^\s*(?:-\s+)*$/.test(before);
  let node = tree.resolveInner(pos - piece.from, 1);
  if (node.name === "Literal" || node.name === "QuotedLiteral") node = node.parent;
  if (node.name === "Key") {
    const pair = node.parent;
    return { key: true, path: pathOf(local, pair.parent), siblings: siblingKeys(local, pair.parent) };
  }
  if (node.name === "Pair" && node.getChild(":") && node.getChild(":").to <= pos - piece.from) {
    return { key: false, path: [...pathOf(local, node.parent), keyText(src, node.getChild("Key"))] };
  }
  if (node.name === "Item") {
    const path = [...pathOf(local, node.parent), "[]"];
    const mappings = atLineStart && /-\s+$/.test(before) && holdsMappings(root, schemaAtPath(root, path));
    return mappings ? { key: true, path, siblings: new Set() } : { key: false, path };
  }
  if (atLineStart) return blankLinePlace(local, pos, before);
  return null;
}

// A key typed on a line of its own: the mapping is the one whose keys start at the same column above it.
function blankLinePlace(local, pos, before) {
  const { doc, src, tree, at: offset } = local;
  const column = before.length;
  for (let n = doc.lineAt(pos).number - 1, seen = 0; n >= 1 && seen < 2000; n--, seen++) {
    const line = doc.line(n);
    if (line.from < offset) return null;
    const content = /^(\s*(?:-\s+)*)(\S)/.exec(line.text);
    if (!content || content[2] === "#") continue;
    const at = content[1].length;
    if (at > column) continue;
    let pair = tree.resolveInner(line.from - offset + at, 1);
    while (pair && pair.name !== "Pair") pair = pair.parent;
    if (!pair) return null;
    if (at === column) return { key: true, path: pathOf(local, pair.parent), siblings: siblingKeys(local, pair.parent) };
    if (/:\s*(?:#.*)?$/.test(line.text)) {  // `key:` with its value to come on the next lines
      return { key: true, path: [...pathOf(local, pair.parent), keyText(src, pair.getChild("Key"))], siblings: new Set() };
    }
    return null;
  }
  return null;
}

// The path of keys to a node of the piece's tree, from the document's root.
function pathOf(local, node) {
  const path = [];
  for (let n = node; n; n = n.parent) {
    if (n.name === "Pair") path.unshift(keyText(local.src, n.getChild("Key")));
    else if (n.name === "Item") path.unshift("[]");
  }
  return [...local.prefix, ...path];
}

// The keys of a mapping: the whole document's top-level keys when it is the root (the piece holds one of them).
function siblingKeys(local, mapping) {
  if (local.prefix.length === 0 && mapping?.parent?.name === "Document") {
    const keys = local.topKeys();
    if (keys) return keys;
  }
  const keys = new Set();
  for (let pair = mapping?.firstChild; pair; pair = pair.nextSibling) {
    if (pair.name === "Pair") keys.add(keyText(local.src, pair.getChild("Key")));
  }
  return keys;
}

function topLevelKeys(doc) {
  const keys = new Set();
  for (let n = 1; n <= Math.min(doc.lines, MAX_SCAN_LINES); n++) {
    const match = /^([^\s#\-?:[{!&*|>'"%@`][^:#]*?|"[^"]*"|'[^']*')[ \t]*:(?:[ \t]|$)/.exec(doc.line(n).text);
    if (match) keys.add(match[1].replace(/^(["'])(.*)\1$/, "$2"));
  }
  return keys;
}
