/**
 * Which optimization target the cursor is in. The server already knows the targets (it shows
 * them as code lenses and offers `source.kernelevo.optimize` actions), so the client asks it
 * instead of parsing Python itself.
 */
import * as vscode from 'vscode';
import type { CodeAction, CodeLens, Command, Position } from 'vscode-languageclient';
import { contains, LocatedTarget, targetsFrom } from './answers';
import { LspClient } from './lsp';
import { ActionKinds } from './protocol';

/** Lenses for the file (resolving those that come without a command) and target actions at the cursor. */
export async function targetsAtCursor(client: LspClient, uri: string, position: Position): Promise<LocatedTarget[]> {
  const lenses = (await client.sendRequest<CodeLens[] | null>('textDocument/codeLens', { textDocument: { uri } })) ?? [];
  const resolved = await Promise.all(
    lenses.map(async (lens) =>
      lens.command || !(contains(lens.range, position) || lens.range.start.line === position.line)
        ? lens
        : client.sendRequest<CodeLens>('codeLens/resolve', lens).catch(() => lens),
    ),
  );
  const actions =
    (await client
      .sendRequest<(CodeAction | Command)[] | null>('textDocument/codeAction', {
        textDocument: { uri },
        range: { start: position, end: position },
        context: { diagnostics: [], only: [ActionKinds.optimize, ActionKinds.apply], triggerKind: 1 },
      })
      .catch(() => null)) ?? [];
  return targetsFrom(resolved, actions, position);
}

/** The one target to act on: the only one, or the user's pick (innermost first). */
export async function chooseTarget(targets: LocatedTarget[], purpose: string): Promise<LocatedTarget | undefined> {
  if (targets.length <= 1) {
    return targets[0];
  }
  const picked = await vscode.window.showQuickPick(
    targets.map((t) => ({ label: t.label ?? t.targetId, description: t.targetId, target: t })),
    { placeHolder: `Which target to ${purpose}?` },
  );
  return picked?.target;
}
