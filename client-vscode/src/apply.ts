/**
 * Apply is one request: `workspace/executeCommand kernelevo.apply [uri, targetId, runId]`. The
 * server finds the target itself, runs the same checks as for its lightbulb action (the target
 * must be unchanged since the search), builds the WorkspaceEdit on the current text and sends it
 * back through `workspace/applyEdit`, which the language client applies as one undoable edit.
 * Its answer says whether the edit landed; the server's lenses then say "applied".
 */
import * as vscode from 'vscode';
import { ErrorReporter, messageOf } from './errors';
import { LspClient } from './lsp';
import { ApplyResult, ServerCommands, TargetRef, targetLabel } from './protocol';

export interface ApplyDeps {
  client(): LspClient | undefined;
  errors: ErrorReporter;
  log(message: string): void;
  /** Called after a successful apply (e.g. to close the diff). */
  applied?(ref: TargetRef): unknown;
}

export async function applyResult(deps: ApplyDeps, ref: TargetRef): Promise<boolean> {
  const client = deps.client();
  const label = ref.label ?? targetLabel(ref.targetId);
  if (!client) {
    deps.errors.report('The KernelEvo server is not running.', { key: 'no-server' });
    return false;
  }
  try {
    const answer = await client.sendRequest<ApplyResult | null>('workspace/executeCommand', {
      command: ServerCommands.apply,
      arguments: [ref.uri, ref.targetId, ref.runId ?? null],
    });
    if (!answer?.applied) {
      // The server has said why (a warning) where it knows; a declined edit needs no error.
      deps.log(`apply ${label}: not applied${answer?.reason ? ` (${answer.reason})` : ''}`);
      void vscode.window.showInformationMessage(`KernelEvo: the result for ${label} was not applied.`);
      return false;
    }
    deps.applied?.({ ...ref, runId: answer.runId || ref.runId });
    void vscode.window.showInformationMessage(`KernelEvo: applied the result for ${label}. Undo (Ctrl+Z) restores the original.`);
    return true;
  } catch (error) {
    deps.errors.reportFailure(`KernelEvo could not apply the result for ${label}: ${messageOf(error)}`, messageOf(error));
    return false;
  }
}
