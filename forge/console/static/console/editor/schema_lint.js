// The YAML pane's schema lint and the schema lookups its completion uses: the text is checked against the
// .lobsterX JSON Schema (GET /editor/schema.json) by walking the syntax tree of Lezer's YAML parser, one piece of
// the text at a time (see lintCache), so a keystroke re-parses the piece it changed. The server's validator stays the
// judge (cycles, references, the library); this lint only says early what the schema alone can tell: unknown
// keys, missing required keys, a value of the wrong type, a value outside its enum.
// Scalars are read as the server's loader reads them (engine/yamlload.py: the YAML 1.2 core schema).

const MAX_DIAGNOSTICS = 200; // past this the gutter says nothing new and costs DOM
const MAX_DEPTH = 64; // engine/yamlload.py refuses deeper documents; the walk never recurses further

const NULL = /^(?:~|null|Null|NULL|)$/;
const BOOL = /^(?:true|True|TRUE|false|False|FALSE)$/;
const INT = /^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$/;
const FLOAT = /^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$/;

// --- the schema --------------------------------------------------------------------------------------------

function resolve(root, schema) {
  for (let hops = 0; schema && typeof schema === "object" && schema.$ref && hops < 16; hops++) {
    const ref = schema.$ref;
    if (!ref.startsWith("#/")) return {};
    let target = root;
    for (const part of ref.slice(2).split("/")) target = target?.[part.replace(/~1/g, "/").replace(/~0/g, "~")];
    schema = target;
  }
  return schema === true || schema == null ? {} : schema;
}

// The alternatives a value may take (anyOf/oneOf flattened, references resolved).
export function branches(root, schema) {
  const out = [];
  const visit = (s, depth) => {
    s = resolve(root, s);
    if (s === false || depth > 8) return;
    const alternatives = s.anyOf || s.oneOf;
    if (alternatives) for (const a of alternatives) visit(a, depth + 1);
    else out.push(s);
  };
  visit(schema, 0);
  return out;
}

function typesOf(s) {
  if (s.type) return Array.isArray(s.type) ? s.type : [s.type];
  if (s.properties || s.additionalProperties !== undefined || s.patternProperties) return ["object"];
  if (s.items) return ["array"];
  return null; // anything
}

function accepts(s, kind) {
  const types = typesOf(s);
  if (!types) return true;
  return types.includes(kind) || (kind === "integer" && types.includes("number"));
}

// The schema of `key` in a mapping of schema `schema`: null when the key is unknown there.
export function propertySchema(root, schema, key) {
  let found = null;
  for (const s of branches(root, schema)) {
    if (!accepts(s, "object")) continue;
    if (s.properties && Object.hasOwn(s.properties, key)) return s.properties[key];
    for (const [pattern, sub] of Object.entries(s.patternProperties || {})) {
      if (safeRegExp(pattern)?.test(key)) return sub;
    }
    if (s.additionalProperties !== false && found === null) found = s.additionalProperties ?? {};
  }
  return found;
}

export function holdsMappings(root, schema) {
  return schema != null && branches(root, schema).some((s) => typesOf(s) && accepts(s, "object"));
}

export function itemsSchema(root, schema) {
  for (const s of branches(root, schema)) if (accepts(s, "array") && typesOf(s)) return s.items ?? {};
  return {};
}

// The keys a mapping of schema `schema` may hold, with their schemas.
export function knownKeys(root, schema) {
  const keys = new Map();
  for (const s of branches(root, schema)) {
    if (!accepts(s, "object") || !s.properties) continue;
    for (const [key, sub] of Object.entries(s.properties)) if (!keys.has(key)) keys.set(key, sub);
  }
  return keys;
}

// The schema at a path of keys ("[]" for a sequence's items) from the document's root; null when unknown.
export function schemaAtPath(root, path) {
  let schema = root;
  for (const part of path) {
    schema = part === "[]" ? itemsSchema(root, schema) : propertySchema(root, schema, part);
    if (schema == null) return null;
  }
  return schema;
}

// The enum/const values a scalar of this schema may take.
export function enumValues(root, schema) {
  const values = [];
  for (const s of branches(root, schema)) {
    if (s.enum) values.push(...s.enum);
    if (s.const !== undefined) values.push(s.const);
    if (typesOf(s)?.includes("boolean")) values.push(true, false);
  }
  return [...new Set(values)].filter((v) => v !== null);
}

const regexps = new Map();
function safeRegExp(pattern) {
  if (!regexps.has(pattern)) {
    let re = null;
    try { re = new RegExp(pattern, "u"); } catch { re = null; }
    regexps.set(pattern, re);
  }
  return regexps.get(pattern);
}

// --- the text ----------------------------------------------------------------------------------------------

// The text of a Key node (its Literal or QuotedLiteral), or null for a key that is not a plain string.
export function keyText(doc, keyNode) {
  const inner = keyNode?.firstChild;
  if (!inner) return null;
  const raw = doc.sliceString(inner.from, inner.to);
  if (inner.name === "Literal") return raw;
  if (inner.name === "QuotedLiteral") return unquote(raw);
  return null;
}

function unquote(raw) {
  if (raw.startsWith("'")) return raw.slice(1, -1).replace(/''/g, "'");
  try { return JSON.parse(raw); } catch { return raw.slice(1, -1); }
}

// What a scalar node holds, as the server's loader reads it: "null", "boolean", "integer", "number", "string";
// null when it cannot tell (an alias, a tag).
function scalarKind(doc, node) {
  if (node.name === "QuotedLiteral" || node.name === "BlockLiteral") return "string";
  if (node.name !== "Literal") return null;
  const text = doc.sliceString(node.from, node.to);
  if (NULL.test(text)) return "null";
  if (BOOL.test(text)) return "boolean";
  if (INT.test(text)) return "integer";
  if (FLOAT.test(text)) return "number";
  return "string";
}

function scalarValue(doc, node, kind) {
  const raw = doc.sliceString(node.from, node.to);
  if (node.name === "QuotedLiteral") return unquote(raw);
  if (kind === "boolean") return /^t/i.test(raw);
  if (kind === "integer" || kind === "number") return Number(raw);
  return raw;
}

const A = { object: "a mapping", array: "a list", string: "text", integer: "a whole number", number: "a number",
  boolean: "true or false", null: "nothing" };

function describe(types) {
  return [...new Set(types)].map((t) => A[t] || t).join(" or ");
}

// A value node of a Pair or an Item, past its anchor; null for an empty value.
function valueOf(node) {
  let value = null;
  for (let child = node.firstChild; child; child = child.nextSibling) {
    if (child.name === "Key" || child.name === ":" || child.name === "-" || child.name === "Comment") continue;
    if (child.name === "⚠") continue;
    value = child;
  }
  while (value && value.name === "Anchored") value = value.lastChild;
  return value;
}

// --- the lint ----------------------------------------------------------------------------------------------

// The lint reads the text in pieces: each top-level key's block, and each item of a block-style `steps` list,
// parsed on its own (Lezer's YAML parser reuses little of an old tree after an edit: a whole 1,000-step text
// costs some 50 ms to reparse, one step a fraction of one). A piece's diagnostics are kept by its text, so a
// keystroke re-checks the one piece it changed. A text the pieces cannot follow (a root that is not a block
// mapping, several documents, `steps` in flow style) is checked whole.
export function lintCache() {
  return { previous: new Map(), current: new Map() };
}

const SLICE_MS = 12; // work between two pauses of a long lint (a big text just opened): no long task

// Diagnostics of `text` against JSON Schema `root`; `parser` is Lezer's YAML parser. `pause()`, when given,
// is awaited every SLICE_MS of work and answers true when the lint should stop (the text changed meanwhile);
// then the result is null.
export async function lintText(text, root, parser, cache = lintCache(), pause = null) {
  cache.previous = cache.current;
  cache.current = new Map();
  if (!root) return [];
  let sliceStart = performance.now();
  const pieces = splitPieces(text);
  if (!pieces) {
    const parse = parser.startParse(text);
    let tree;
    while (!(tree = parse.advance())) {
      if (pause && performance.now() - sliceStart > SLICE_MS) {
        if (await pause()) return null;
        sliceStart = performance.now();
      }
    }
    return walk(text, tree, root, "whole");
  }
  const out = [];
  const keys = new Set();
  for (const piece of pieces) {
    if (piece.key !== undefined) keys.add(piece.key);
    if (piece.kind === "head") continue; // `steps:` itself: its items are pieces of their own
    if (pause && performance.now() - sliceStart > SLICE_MS) {
      if (await pause()) return null;
      sliceStart = performance.now();
    }
    const body = text.slice(piece.from, piece.to);
    const key = `${piece.kind}\u0000${body}`;
    let said = cache.previous.get(key) ?? cache.current.get(key);
    if (!said) said = walk(body, parser.parse(body), root, piece.kind);
    cache.current.set(key, said);
    for (const d of said) out.push({ ...d, from: d.from + piece.from, to: d.to + piece.from });
    if (out.length >= MAX_DIAGNOSTICS) return out.slice(0, MAX_DIAGNOSTICS);
  }
  const missing = [...new Set(branches(root, root).flatMap((s) => s.required || []))].filter((k) => !keys.has(k));
  if (missing.length) {
    const at = pieces.length ? pieces[0].from : 0;
    const end = text.indexOf("\n", at);
    out.push({ from: at, to: end < 0 ? text.length : end, severity: "error", source: "schema.missing_key",
      message: `the document lacks ${missing.map((k) => `\`${k}\``).join(", ")}` });
  }
  return out;
}

const TOP_KEY = /^([^\s#\-?:[{!&*|>'"%@`][^:#]*?|"[^"]*"|'[^']*')[ \t]*:(?:[ \t]|$)/;

// The pieces of a text: [{kind: "key"|"head"|"step", from, to, key?}] in order, or null when the text is not
// a block mapping with block-style steps that the pieces can follow.
function splitPieces(text) {
  const pieces = [];
  let current = null;
  let inSteps = false;
  let itemIndent = -1;
  const close = (at) => {
    if (current) pieces.push({ ...current, to: at });
    current = null;
  };
  for (let start = 0; start < text.length;) {
    const newline = text.indexOf("\n", start);
    const end = newline < 0 ? text.length : newline;
    const next = newline < 0 ? text.length : newline + 1;
    let at = start;
    while (at < end && (text.charCodeAt(at) === 32 || text.charCodeAt(at) === 9)) at++;
    const first = text.charCodeAt(at);
    if (at >= end || first === 35 || (first === 13 && at + 1 === end)) { start = next; continue; } // blank, comment
    const indent = at - start;
    if (text.charCodeAt(start) === 9) return null; // a tab as indentation: the parser says what it makes of it
    const item = first === 45 && (at + 1 >= end || /[ \t\r]/.test(text[at + 1]));
    if (indent === 0 && !item) {  // a top-level key (most lines are not: they take the fast path below)
      const line = text.slice(start, end);
      if (/^(?:---|\.\.\.|%)/.test(line)) return null; // several documents, directives
      const match = TOP_KEY.exec(line);
      if (!match) return null;
      close(start);
      const key = match[1].replace(/^(["'])(.*)\1$/, "$2");
      inSteps = key === "steps" && /^[ \t]*(?:#.*)?\r?$/.test(line.slice(match[0].length));
      itemIndent = -1;
      current = { kind: inSteps ? "head" : "key", from: start, key };
    } else if (!current) {
      return null; // a root list, or text before the first key
    } else if (inSteps) {
      if (item && itemIndent < 0) itemIndent = indent;
      if (item && indent === itemIndent) {
        close(start);
        current = { kind: "step", from: start };
      } else if (current.kind === "head") {
        return null; // the steps' block is not a list of items
      }
    } else if (indent === 0) {
      return null; // a list at the root
    }
    start = next;
  }
  close(text.length);
  return pieces;
}

// The diagnostics of `text` parsed as `tree`: a whole document, a top-level key's block ("key"), or one step
// written as a one-item list ("step").
function walk(text, tree, root, kind) {
  const out = [];
  const src = { sliceString: (from, to) => text.slice(from, to) };
  const say = (from, to, code, message, severity = "error") => {
    if (out.length < MAX_DIAGNOSTICS) out.push({ from, to, severity, source: code, message });
  };
  const topDocument = tree.topNode.getChild("Document");
  const body = topDocument && valueOf(topDocument);
  if (!body) return out;
  if (kind === "whole") check(body, root, 0, "the document");
  else if (kind === "key") mapping(body, root, 0, "the document", false);
  else if (body.name === "BlockSequence") {
    const item = body.getChild("Item");
    const value = item && valueOf(item);
    if (value) check(value, itemsSchema(root, propertySchema(root, root, "steps") ?? {}), 1, "a step");
  }
  return out;

  function check(node, schema, depth, where) {
    if (depth > MAX_DEPTH || out.length >= MAX_DIAGNOSTICS) return;
    const alternatives = branches(root, schema);
    if (!alternatives.length || alternatives.some((s) => !typesOf(s) && !s.enum && s.const === undefined)) return;
    if (node.name === "Tagged" || node.name === "Alias") return; // the server reports tags; aliases are resolved there
    if (node.name === "BlockMapping" || node.name === "FlowMapping") return mapping(node, schema, depth, where, true);
    if (node.name === "BlockSequence" || node.name === "FlowSequence") return sequence(node, schema, depth, where);
    const kind = scalarKind(src, node);
    if (kind === null) return;
    const fits = alternatives.filter((s) => accepts(s, kind) || (kind === "null" && !typesOf(s)));
    if (!fits.length) {
      const wanted = alternatives.flatMap((s) => typesOf(s) || []);
      return say(node.from, node.to, "schema.bad_type", `${where} must be ${describe(wanted)}`);
    }
    const value = scalarValue(src, node, kind);
    const choices = fits.flatMap((s) => s.enum ?? (s.const !== undefined ? [s.const] : null) ?? [undefined]);
    if (!choices.includes(undefined) && !choices.includes(value)) {
      return say(node.from, node.to, "schema.bad_value",
        `${where} must be one of: ${choices.map((c) => JSON.stringify(c)).join(", ")}`);
    }
    const broken = fits.map((s) => bound(s, value)).filter(Boolean);
    if (broken.length === fits.length) say(node.from, node.to, "schema.bad_value", `${where} ${broken[0]}`);
  }

  // What a scalar breaks of its schema's bounds (a sentence), or null.
  function bound(s, value) {
    if (typeof value === "number") {
      if (s.minimum !== undefined && value < s.minimum) return `must be at least ${s.minimum}`;
      if (s.maximum !== undefined && value > s.maximum) return `must be at most ${s.maximum}`;
      if (s.exclusiveMinimum !== undefined && value <= s.exclusiveMinimum) return `must be more than ${s.exclusiveMinimum}`;
    }
    if (typeof value === "string" && s.pattern && safeRegExp(s.pattern)?.test(value) === false) {
      return `must match ${s.pattern}`;
    }
    return null;
  }

  function mapping(node, schema, depth, where, whole) {
    if (!branches(root, schema).some((s) => accepts(s, "object"))) {
      const wanted = branches(root, schema).flatMap((s) => typesOf(s) || []);
      return say(firstLineStart(node), firstLineEnd(node), "schema.bad_type", `${where} must be ${describe(wanted)}, not a mapping`);
    }
    const seen = new Set();
    let merges = false;
    for (let pair = node.firstChild; pair; pair = pair.nextSibling) {
      if (pair.name !== "Pair") continue;
      const keyNode = pair.getChild("Key");
      const key = keyText(src, keyNode);
      if (key === null) continue;
      if (key === "<<") { merges = true; continue; }
      seen.add(key);
      const sub = propertySchema(root, schema, key);
      if (sub == null) {
        say(keyNode.from, keyNode.to, "schema.unknown_key", unknownKey(key, schema, where));
        continue;
      }
      const value = valueOf(pair);
      const label = `\`${key}\``;
      if (value) check(value, sub, depth + 1, label);
      else if (pair.getChild(":")) check({ name: "Literal", from: pair.to, to: pair.to }, sub, depth + 1, label);
      // else a key still being typed: the unknown-key check said enough
    }
    if (merges || !whole) return; // what `<<` brings in is known to the server only
    const required = new Set();
    for (const s of branches(root, schema)) for (const key of s.required || []) required.add(key);
    const missing = [...required].filter((key) => !seen.has(key));
    if (missing.length) {
      say(firstLineStart(node), firstLineEnd(node), "schema.missing_key",
        `${where} lacks ${missing.map((k) => `\`${k}\``).join(", ")}`);
    }
  }

  function sequence(node, schema, depth, where) {
    if (!branches(root, schema).some((s) => accepts(s, "array"))) {
      const wanted = branches(root, schema).flatMap((s) => typesOf(s) || []);
      return say(firstLineStart(node), firstLineEnd(node), "schema.bad_type", `${where} must be ${describe(wanted)}, not a list`);
    }
    const items = itemsSchema(root, schema);
    const label = where === "`steps`" ? "a step" : `an item of ${where}`;
    for (let item = node.firstChild; item; item = item.nextSibling) {
      if (item.name !== "Item") continue;
      const value = valueOf(item);
      if (value) check(value, items, depth + 1, label);
    }
  }

  function unknownKey(key, schema, where) {
    const known = [...knownKeys(root, schema).keys()];
    const near = closest(key, known);
    return `unknown key \`${key}\` in ${where}` + (near ? ` (did you mean \`${near}\`?)` : "");
  }

  // Where a block's mark starts (past the line break a block mapping's node begins with) and ends: its first line.
  function firstLineStart(node) {
    let at = node.from;
    while (at < node.to && /\s/.test(text[at])) at++;
    return at;
  }

  function firstLineEnd(node) {
    const end = text.indexOf("\n", firstLineStart(node));
    return Math.min(node.to, end < 0 ? text.length : end);
  }
}

// The known key nearest to a typo (edit distance at most a third of its length), or null.
function closest(key, known) {
  let best = null;
  let bestDistance = Math.max(1, Math.floor(key.length / 3)) + 1;
  for (const candidate of known) {
    const d = distance(key, candidate, bestDistance);
    if (d < bestDistance || (d === bestDistance - 1 && candidate.startsWith(key))) {
      best = candidate;
      bestDistance = d;
    }
  }
  return best;
}

function distance(a, b, limit) {
  if (Math.abs(a.length - b.length) >= limit) return limit;
  let previous = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(previous[j] + 1, row[j - 1] + 1, previous[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = row;
  }
  return previous[b.length];
}
