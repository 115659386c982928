/**
 * Apply goes through the server's own code action (`refactor.rewrite.kernelevo.apply`), so
 * the same checks run as for the lightbulb: the target must be unchanged since the search.
 * The edit is labelled but not marked `needsConfirmation` (VS Code's Refactor Preview would
 * open with every change unchecked): the user reviews it in the diff first. After the edit,
 * the action's command (`kernelevo.applied`) tells the server, whose lenses then say so.
 */
import * as vscode from 'vscode';
import type { CodeAction, CodeLens, Command, Range, WorkspaceEdit } from 'vscode-languageclient';
import { pickApplyAction } from './answers';
import { ErrorReporter, messageOf } from './errors';
import { LspClient } from './lsp';
import { ActionKinds, ServerCommands, TargetRef, targetFromArguments, targetLabel } from './protocol';

export interface ApplyDeps {
  client(): LspClient | undefined;
  /** The language client's protocol-to-code converter. */
  toWorkspaceEdit(edit: WorkspaceEdit): Promise<vscode.WorkspaceEdit>;
  errors: ErrorReporter;
  log(message: string): void;
  /** Called after a successful apply (e.g. to close the diff). */
  applied?(ref: TargetRef): unknown;
}

/**
 * Where to ask for code actions: the server answers for the target at the range's start, so
 * use the target's own lens position; the whole file when no lens names the target.
 */
export async function targetRange(client: LspClient, ref: TargetRef): Promise<Range> {
  const lenses = (await client.sendRequest<CodeLens[] | null>('textDocument/codeLens', { textDocument: { uri: ref.uri } }).catch(() => null)) ?? [];
  const lens = lenses.find((l) => l.command && targetFromArguments(l.command.command, l.command.arguments)?.targetId === ref.targetId);
  if (lens) {
    return { start: lens.range.start, end: lens.range.start };
  }
  const document = await vscode.workspace.openTextDocument(vscode.Uri.parse(ref.uri));
  const last = document.lineCount - 1;
  return { start: { line: 0, character: 0 }, end: { line: last, character: document.lineAt(last).text.length } };
}

export async function applyResult(deps: ApplyDeps, ref: TargetRef): Promise<boolean> {
  const client = deps.client();
  const label = ref.label ?? targetLabel(ref.targetId);
  if (!client) {
    deps.errors.report('The KernelEvo server is not running.', { key: 'no-server' });
    return false;
  }
  try {
    const range = await targetRange(client, ref);
    const items = await client.sendRequest<(CodeAction | Command)[] | null>('textDocument/codeAction', {
      textDocument: { uri: ref.uri },
      range,
      context: { diagnostics: [], only: [ActionKinds.apply], triggerKind: 1 },
    });
    let action = pickApplyAction(items, ref);
    if (!action) {
      deps.log(`apply ${label}: no apply code action from the server; asking ${ServerCommands.apply}`);
      const answer = await client.sendRequest<{ applied?: boolean } | null>('workspace/executeCommand', {
        command: ServerCommands.apply,
        arguments: [ref.uri, ref.targetId, ref.runId ?? null],
      });
      if (answer?.applied === false) {
        return false;
      }
      deps.applied?.(ref);
      return true;
    }
    if (action.disabled) {
      deps.errors.reportFailure(`KernelEvo can't apply the result for ${label}: ${action.disabled.reason}`, action.disabled.reason);
      return false;
    }
    if (!action.edit) {
      action = await client.sendRequest<CodeAction>('codeAction/resolve', action);
    }
    if (action.edit) {
      const edit = await deps.toWorkspaceEdit(action.edit);
      const ok = await vscode.workspace.applyEdit(edit, { isRefactoring: true });
      if (!ok) {
        void vscode.window.showInformationMessage(`KernelEvo: the result for ${label} was not applied.`);
        return false;
      }
    }
    if (action.command) {
      await client.sendRequest('workspace/executeCommand', { command: action.command.command, arguments: action.command.arguments });
    }
    if (!action.edit && !action.command) {
      void vscode.window.showWarningMessage(`KernelEvo: the server offered no edit for ${label}.`);
      return false;
    }
    deps.applied?.(ref);
    void vscode.window.showInformationMessage(`KernelEvo: applied the result for ${label}. Undo (Ctrl+Z) restores the original.`);
    return true;
  } catch (error) {
    deps.errors.reportFailure(`KernelEvo could not apply the result for ${label}: ${messageOf(error)}`, messageOf(error));
    return false;
  }
}
