// The YAML pane's completion: keys from the .lobsterX JSON Schema where a key goes, and where a value goes the
// schema's enum values or what the server listed (GET /editor/schema.json's x-forge.completions, and the step
// ids of the outline): agent names, library entries, step ids, expression names.
import { syntaxTree } from "../../vendor/codemirror/codemirror.js";
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

// Where `pos` (the start of the word being typed, `before` the line's text before it) sits in the document:
// {key: true, path, siblings} where a key of the mapping at `path` goes, or {key: false, path} where a value
// at `path` goes; null when neither can be told.
function placeAt(root, state, pos, before) {
  const tree = syntaxTree(state);
  const doc = state.doc;
  const atLineStart = /^\s*(?:-\s+)*$/.test(before);
  let node = tree.resolveInner(pos, 1);
  if (node.name === "Literal" || node.name === "QuotedLiteral") node = node.parent;
  if (node.name === "Key") {
    const pair = node.parent;
    return { key: true, path: pathOf(doc, pair.parent), siblings: siblingKeys(doc, pair.parent) };
  }
  if (node.name === "Pair" && node.getChild(":") && node.getChild(":").to <= pos) {
    return { key: false, path: [...pathOf(doc, node.parent), keyText(doc, node.getChild("Key"))] };
  }
  if (node.name === "Item") {
    const path = [...pathOf(doc, node.parent), "[]"];
    const mappings = atLineStart && /-\s+$/.test(before) && holdsMappings(root, schemaAtPath(root, path));
    return mappings ? { key: true, path, siblings: new Set() } : { key: false, path };
  }
  if (atLineStart) return blankLinePlace(state, pos, before);
  return null;
}

// A key typed on a line of its own: the mapping is the one whose keys start at the same column above it.
function blankLinePlace(state, pos, before) {
  const doc = state.doc;
  const column = before.length;
  const tree = syntaxTree(state);
  for (let n = doc.lineAt(pos).number - 1, seen = 0; n >= 1 && seen < 2000; n--, seen++) {
    const text = doc.line(n).text;
    const content = /^(\s*(?:-\s+)*)(\S)/.exec(text);
    if (!content || content[2] === "#") continue;
    const at = content[1].length;
    if (at > column) continue;
    const node = tree.resolveInner(doc.line(n).from + at, 1);
    let pair = node;
    while (pair && pair.name !== "Pair") pair = pair.parent;
    if (!pair) return null;
    if (at === column) return { key: true, path: pathOf(doc, pair.parent), siblings: siblingKeys(doc, pair.parent) };
    if (/:\s*(?:#.*)?$/.test(text)) {  // `key:` with its value to come on the next lines
      return { key: true, path: [...pathOf(doc, pair.parent), keyText(doc, pair.getChild("Key"))], siblings: new Set() };
    }
    return null;
  }
  return null;
}

function pathOf(doc, node) {
  const path = [];
  for (let n = node; n; n = n.parent) {
    if (n.name === "Pair") path.unshift(keyText(doc, n.getChild("Key")));
    else if (n.name === "Item") path.unshift("[]");
  }
  return path;
}

function siblingKeys(doc, mapping) {
  const keys = new Set();
  for (let pair = mapping?.firstChild; pair; pair = pair.nextSibling) {
    if (pair.name === "Pair") keys.add(keyText(doc, pair.getChild("Key")));
  }
  return keys;
}
