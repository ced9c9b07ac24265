// The editor's YAML pane: CodeMirror 6 holding the workflow's text, the only truth of the editor (docs: design of
// issue 20, section 5). Patches from the graph and the inspector arrive as changes applied in one transaction,
// so CodeMirror's history is the one undo history of every pane. The lint gutter shows the schema lint (run here,
// schema_lint.js) and the server's problems (setProblems) together. onChange(text, update) hears every change of
// the text, patches and undo included (update.transactions say which: userEvent "patch", "undo", "input"...).
import {
  EditorView, EditorState, EditorSelection, StateField, StateEffect, Compartment, keymap, lineNumbers,
  highlightActiveLineGutter, highlightSpecialChars, drawSelection, dropCursor, rectangularSelection,
  crosshairCursor, highlightActiveLine, foldGutter, foldKeymap, indentOnInput, syntaxHighlighting,
  defaultHighlightStyle, bracketMatching, indentUnit, history, historyKeymap, defaultKeymap, indentWithTab, undo,
  redo, search, searchKeymap, highlightSelectionMatches, autocompletion, completionKeymap, closeBrackets,
  closeBracketsKeymap, linter, lintGutter, lintKeymap, forceLinting, yamlParser,
} from "../../vendor/codemirror/codemirror.js";
import { yamlLines } from "./yaml_lines.js";
import { lintCache, lintText } from "./schema_lint.js";
import { yamlCompletions } from "./yaml_complete.js";

const HISTORY_DEPTH = 200; // the issue asks for at least 100 undo steps
const LINT_DELAY_MS = 120; // after the last keystroke; the lint itself answers in well under 50 ms
const MAX_LINT_CHARS = 1_048_576; // engine/yamlload.py's bound: past it only the server's problem shows

// The pane fills its parent (give the parent a height). The lint's own marks are data: SVG images, which the
// console's policy refuses (img-src falls back to 'self'): they are drawn in CSS instead.
const paneTheme = EditorView.theme({
  "&": { height: "100%" },
  ".cm-scroller": { overflow: "auto" },
  ".cm-lintRange-error": { backgroundImage: "none", textDecoration: "underline wavy #d11 1px" },
  ".cm-lintRange-warning": { backgroundImage: "none", textDecoration: "underline wavy #e90 1px" },
  ".cm-lintRange-info": { backgroundImage: "none", textDecoration: "underline wavy #999 1px" },
  ".cm-lintRange-hint": { backgroundImage: "none", textDecoration: "underline wavy #66d 1px" },
  ".cm-lint-marker": { content: "normal", width: ".8em", height: ".8em", margin: ".1em" },
  ".cm-lint-marker-error": { content: "normal", backgroundColor: "#e43", borderRadius: "50%" },
  ".cm-lint-marker-warning": { content: "normal", backgroundColor: "#fa2", clipPath: "polygon(50% 0, 100% 100%, 0 100%)" },
  ".cm-lint-marker-info": { content: "normal", backgroundColor: "#88e" },
});

const setServerProblems = StateEffect.define();
const setStepSpans = StateEffect.define();
const relint = StateEffect.define(); // new server problems or a new schema: lint again now, not at the next edit

// The server's problems as positions in the current text, carried through later edits until the next answer.
const serverProblems = StateField.define({
  create: () => [],
  update(problems, tr) {
    for (const effect of tr.effects) if (effect.is(setServerProblems)) return effect.value;
    if (!tr.docChanged) return problems;
    return problems.map((p) => ({ ...p, from: tr.changes.mapPos(p.from, 1), to: tr.changes.mapPos(p.to, 1) }));
  },
});

// The outline's steps as [{id, from, to}] in text order, carried through edits until the next outline.
const stepSpans = StateField.define({
  create: () => [],
  update(spans, tr) {
    for (const effect of tr.effects) if (effect.is(setStepSpans)) return effect.value;
    if (!tr.docChanged) return spans;
    return spans.map((s) => ({ id: s.id, from: tr.changes.mapPos(s.from, -1), to: tr.changes.mapPos(s.to, 1) }));
  },
});

// The nonce of the page's Content-Security-Policy, for the <style> CodeMirror adds: the page gives it as
// <meta property="csp-nonce" nonce="..."> (the browser hides a nonce attribute from the DOM's readers, but
// not from the element's `nonce` property).
function pageNonce() {
  return document.querySelector('meta[property="csp-nonce"]')?.nonce || "";
}

export function createYamlPane(parent, { text = "", schema = null, readOnly = false, nonce = pageNonce(),
  onChange = () => {}, onCursorStep = () => {} } = {}) {
  let currentSchema = schema;
  let pieces = lintCache();
  let lists = { agents: [], library: [], expressions: [], stepIds: [], ...schema?.["x-forge"]?.completions };
  let cursorStep;
  let quietSelection = false; // selectLines moves the cursor for the graph: no onCursorStep back to it
  const lintStats = { last: 0, max: 0, runs: 0, longestSlice: 0 }; // ms, for the bench
  const editable = new Compartment();

  // Runs overlap: new server problems lint again at once while a long run is paused between slices. An older
  // run stops at its next pause and answers what the newest answers, so it never puts back diagnostics without
  // the newer problems (CodeMirror keeps the answer that comes last for the same text).
  let newestRun = null;
  function lintSource(view) {
    const run = lintOnce(view, () => run !== newestRun);
    newestRun = run;
    return run.then((found) => (run === newestRun ? found : newestRun));
  }

  // The schema lint, then the server's problems. A long run (a big text just opened) pauses between slices of
  // work and stops when the text changes meanwhile (CodeMirror drops a stale answer anyway).
  async function lintOnce(view, superseded) {
    const { state } = view;
    const started = performance.now();
    let sliceFrom = started;
    let busiest = 0;
    const pause = async () => {
      busiest = Math.max(busiest, performance.now() - sliceFrom);
      await new Promise((resume) => setTimeout(resume, 0));
      sliceFrom = performance.now();
      return view.state.doc !== state.doc || superseded();
    };
    const lint = currentSchema && state.doc.length <= MAX_LINT_CHARS;
    const found = lint ? await lintText(state.doc.toString(), currentSchema, yamlParser, pieces, pause) : [];
    const took = performance.now() - started;
    busiest = Math.max(busiest, performance.now() - sliceFrom);
    Object.assign(lintStats, { last: took, max: Math.max(lintStats.max, took), runs: lintStats.runs + 1,
      longestSlice: Math.max(lintStats.longestSlice, busiest) });
    return (found || []).concat(state.field(serverProblems));
  }

  const view = new EditorView({
    parent,
    state: EditorState.create({
      doc: text,
      extensions: [
        EditorView.cspNonce.of(nonce), paneTheme,
        lineNumbers(), highlightActiveLineGutter(), foldGutter(), lintGutter(), highlightSpecialChars(),
        history({ minDepth: HISTORY_DEPTH }), drawSelection(), dropCursor(), EditorState.allowMultipleSelections.of(true),
        indentOnInput(), syntaxHighlighting(defaultHighlightStyle, { fallback: true }), bracketMatching(),
        closeBrackets(), rectangularSelection(), crosshairCursor(), highlightActiveLine(), highlightSelectionMatches(),
        search({ top: true }), indentUnit.of("  "), EditorState.tabSize.of(2), yamlLines(),
        autocompletion({ override: [yamlCompletions(() => currentSchema, () => lists)] }),
        linter(lintSource, { delay: LINT_DELAY_MS, needsRefresh: (update) => update.transactions.some(
          (tr) => tr.effects.some((e) => e.is(relint) || e.is(setServerProblems))) }),
        serverProblems, stepSpans,
        keymap.of([...closeBracketsKeymap, ...defaultKeymap, ...searchKeymap, ...historyKeymap, ...foldKeymap,
          ...completionKeymap, ...lintKeymap, indentWithTab]),
        editable.of(readOnlyExtensions(readOnly)),
        EditorView.contentAttributes.of({ "aria-label": "Workflow YAML" }),
        EditorView.updateListener.of((update) => {
          if (update.docChanged) onChange(update.state.doc.toString(), update);
          if (update.docChanged || update.selectionSet || stepsChanged(update)) tellCursorStep(update.state);
        }),
      ],
    }),
  });

  function stepsChanged(update) {
    return update.transactions.some((tr) => tr.effects.some((e) => e.is(setStepSpans)));
  }

  function tellCursorStep(state) {
    const id = stepAt(state.field(stepSpans), state.selection.main.head);
    if (id === cursorStep) return;
    cursorStep = id;
    if (!quietSelection) onCursorStep(id);
  }

  return {
    view,
    lintStats,
    getText: () => view.state.doc.toString(),
    // Changes in UTF-16 offsets of the current text ([{from, to, insert}], sorted): one transaction, one undo step.
    applyChanges(changes, { userEvent = "patch" } = {}) {
      view.dispatch({ changes, userEvent, scrollIntoView: false });
    },
    // The same problems where they already are (an answer to typing that changed none) are not set again: a
    // new set lints the whole text again at once.
    setProblems(problems) {
      const found = problemDiagnostics(view.state, problems || []);
      if (sameList(found, view.state.field(serverProblems), ["from", "to", "severity", "source", "message"])) return;
      view.dispatch({ effects: setServerProblems.of(found) });
      forceLinting(view);
    },
    setCompletions({ agents, library, expressions, stepIds } = {}) {
      lists = { agents: agents ?? lists.agents, library: library ?? lists.library,
        expressions: expressions ?? lists.expressions, stepIds: stepIds ?? lists.stepIds };
    },
    setSchema(newSchema) {
      currentSchema = newSchema;
      pieces = lintCache();
      view.dispatch({ effects: relint.of(null) });
      forceLinting(view);
    },
    // The outline's steps ([{id, lines: [first, last]}]): which step the cursor is in, and where a problem
    // without a line but with a step goes.
    setSteps(steps) {
      const doc = view.state.doc;
      const spans = [];
      for (const step of steps || []) {
        const [first, last] = step.lines || [];
        if (!Number.isInteger(first) || !Number.isInteger(last) || first < 1 || last < first) continue;
        if (last > doc.lines) continue;
        spans.push({ id: step.id, from: doc.line(first).from, to: doc.line(last).to });
      }
      spans.sort((a, b) => a.from - b.from);
      lists = { ...lists, stepIds: spans.map((s) => s.id) };
      if (sameList(spans, view.state.field(stepSpans), ["id", "from", "to"])) return; // where they are already
      view.dispatch({ effects: setStepSpans.of(spans) });
    },
    // Selects whole lines (a step's block chosen on the graph) and brings them into view from their start: the
    // whole block when it fits, else its first lines at the top, and never scrolled sideways to a long line's end
    // (which would hide the start of every line).
    selectLines(first, last) {
      const doc = view.state.doc;
      const a = doc.line(clamp(first, 1, doc.lines));
      const b = doc.line(clamp(last ?? first, a.number, doc.lines));
      const fits = view.lineBlockAt(b.to).bottom - view.lineBlockAt(a.from).top <= view.scrollDOM.clientHeight - 20;
      // (xMargin: the lines' padding and more, so a block of whole lines is shown from the left edge.)
      const scroll = EditorView.scrollIntoView(fits ? EditorSelection.range(b.to, a.from) : a.from,
        { y: fits ? "nearest" : "start", x: "start", xMargin: 20 });
      quietSelection = true;
      try {
        view.dispatch({ selection: { anchor: a.from, head: b.to }, effects: scroll, userEvent: "select" });
      } finally {
        quietSelection = false;
      }
    },
    setReadOnly(value) {
      view.dispatch({ effects: editable.reconfigure(readOnlyExtensions(value)) });
    },
    undo: () => undo(view),
    redo: () => redo(view),
    focus: () => view.focus(),
    destroy: () => view.destroy(),
  };
}

function readOnlyExtensions(readOnly) {
  return readOnly ? [EditorState.readOnly.of(true), EditorView.editable.of(false)] : [];
}

// The id of the step whose span holds `pos` (spans sorted by start), or null.
function stepAt(spans, pos) {
  let low = 0;
  let high = spans.length - 1;
  while (low <= high) {
    const middle = (low + high) >> 1;
    const span = spans[middle];
    if (pos < span.from) high = middle - 1;
    else if (pos > span.to) low = middle + 1;
    else return span.id;
  }
  return null;
}

// The server's problems ({code, message, line, column, step, severity}; 1-based line and column) as lint
// diagnostics of the current text. One without a line sits on its step's first line, or on the first line.
function problemDiagnostics(state, problems) {
  const doc = state.doc;
  const spans = state.field(stepSpans);
  return problems.map((problem) => {
    let from;
    let to;
    if (Number.isInteger(problem.line) && problem.line >= 1) {  // the node it is about: its first word
      const line = doc.line(Math.min(problem.line, doc.lines));
      const column = Number.isInteger(problem.column) && problem.column >= 1 ? problem.column - 1 : 0;
      from = Math.min(line.from + column, line.to);
      to = from + /^[^\s:,\]}]*/.exec(line.text.slice(from - line.from))[0].length;
    } else {  // its step's first line, or the document's
      const line = doc.lineAt(spans.find((s) => s.id === problem.step)?.from ?? 0);
      from = line.from + /^[\s-]*/.exec(line.text)[0].length;
      to = line.to;
    }
    return {
      from, to,
      severity: problem.severity === "warning" ? "warning" : "error",
      source: String(problem.code ?? "problem"),
      message: String(problem.message ?? ""),
    };
  });
}

// Whether two lists hold the same entries, compared by `keys`.
function sameList(a, b, keys) {
  return a.length === b.length && a.every((x, i) => keys.every((k) => x[k] === b[i][k]));
}

function clamp(value, low, high) {
  return Math.max(low, Math.min(high, Number.isInteger(value) ? value : low));
}
