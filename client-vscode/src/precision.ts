/**
 * "Accept TF32" in one click: the server writes `# kernelevo: precision = tf32` above the target
 * (the engine then sets ALLOW_TF32 on its task); the file is saved and the search started again,
 * which verifies the kernel at TF32 tolerance and times both baselines with TF32 too.
 */
import * as vscode from 'vscode';
import { ErrorReporter, messageOf } from './errors';
import { LspClient } from './lsp';
import { ServerCommands, TargetRef, targetLabel } from './protocol';

export interface PrecisionDeps {
  client(): LspClient | undefined;
  errors: ErrorReporter;
  optimize(ref: TargetRef): unknown;
}

export async function acceptPrecision(deps: PrecisionDeps, ref: TargetRef): Promise<boolean> {
  const client = deps.client();
  if (!client || !ref.level) {
    return false;
  }
  try {
    const answer = await client.sendRequest<{ applied?: boolean } | null>('workspace/executeCommand', {
      command: ServerCommands.acceptPrecision,
      arguments: [ref.uri, ref.targetId, ref.level],
    });
    if (!answer?.applied) {
      return false;
    }
    const document = await vscode.workspace.openTextDocument(vscode.Uri.parse(ref.uri));
    await document.save();
    deps.optimize({ uri: ref.uri, targetId: ref.targetId, label: ref.label ?? targetLabel(ref.targetId) });
    return true;
  } catch (error) {
    deps.errors.reportFailure(`KernelEvo could not accept ${ref.level.toUpperCase()} for ${ref.label ?? targetLabel(ref.targetId)}: ${messageOf(error)}`, messageOf(error));
    return false;
  }
}
