// What the console's YAML pane (forge/console/static/console/editor/yaml_pane.js) takes from CodeMirror 6:
// bin/vendor bundles this file with esbuild into static/vendor/codemirror/codemirror.js, one ES module, so
// every package shares one copy of @codemirror/state (two copies break CodeMirror's instanceof checks).
export {
  EditorView, ViewPlugin, keymap, lineNumbers, highlightActiveLineGutter, highlightSpecialChars, drawSelection,
  dropCursor, rectangularSelection, crosshairCursor, highlightActiveLine,
} from "@codemirror/view";
export {
  EditorState, EditorSelection, StateField, StateEffect, Compartment, Transaction, Annotation,
} from "@codemirror/state";
export {
  foldGutter, foldKeymap, indentOnInput, syntaxHighlighting, defaultHighlightStyle, bracketMatching,
  indentUnit, StreamLanguage, foldService, indentService,
} from "@codemirror/language";
export {
  history, historyKeymap, defaultKeymap, indentWithTab, undo, redo, undoDepth, redoDepth,
} from "@codemirror/commands";
export { search, searchKeymap, highlightSelectionMatches, openSearchPanel } from "@codemirror/search";
export {
  autocompletion, completionKeymap, closeBrackets, closeBracketsKeymap, startCompletion, currentCompletions,
  completionStatus, acceptCompletion,
} from "@codemirror/autocomplete";
export { linter, lintGutter, lintKeymap, forceLinting, diagnosticCount, forEachDiagnostic } from "@codemirror/lint";
// YAML as a line-based stream language: a keystroke re-reads its own lines up to the viewport only. Lezer's YAML
// grammar (@codemirror/lang-yaml) re-read the rest of the file after each edit: some 45 ms a key on 1,000 steps.
export { yaml as yamlMode } from "@codemirror/legacy-modes/mode/yaml";
// Lezer's YAML parser, run by the schema lint and the completion on the one piece of text they need.
export { parser as yamlParser } from "@lezer/yaml";
