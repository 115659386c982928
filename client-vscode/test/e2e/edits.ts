/** Applies an LSP WorkspaceEdit to in-memory files, as an editor would (test helper). */

interface Pos {
  line: number;
  character: number;
}
interface TextEdit {
  range: { start: Pos; end: Pos };
  newText: string;
}

function offset(text: string, pos: Pos): number {
  let at = 0;
  for (let line = 0; line < pos.line; line++) {
    const next = text.indexOf('\n', at);
    if (next < 0) {
      return text.length;
    }
    at = next + 1;
  }
  const lineEnd = text.indexOf('\n', at);
  return Math.min(at + pos.character, lineEnd < 0 ? text.length : lineEnd);
}

export function applyTextEdits(text: string, edits: TextEdit[]): string {
  const sorted = [...edits].sort((a, b) => offset(text, b.range.start) - offset(text, a.range.start));
  for (const e of sorted) {
    text = text.slice(0, offset(text, e.range.start)) + e.newText + text.slice(offset(text, e.range.end));
  }
  return text;
}

/** Returns the files after the edit; `files` maps URI → text (absent: does not exist). */
export function applyWorkspaceEdit(files: Map<string, string>, edit: any): Map<string, string> {
  const out = new Map(files);
  for (const [uri, edits] of Object.entries(edit.changes ?? {})) {
    out.set(uri, applyTextEdits(out.get(uri) ?? '', edits as TextEdit[]));
  }
  for (const change of edit.documentChanges ?? []) {
    if (change.kind === 'create') {
      if (!out.has(change.uri) || change.options?.overwrite) {
        out.set(change.uri, '');
      }
    } else if (change.kind === 'rename') {
      out.set(change.newUri, out.get(change.oldUri) ?? '');
      out.delete(change.oldUri);
    } else if (change.kind === 'delete') {
      out.delete(change.uri);
    } else if (change.textDocument) {
      out.set(change.textDocument.uri, applyTextEdits(out.get(change.textDocument.uri) ?? '', change.edits));
    }
  }
  return out;
}
