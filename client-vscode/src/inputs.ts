/**
 * Example inputs asked in an input box. When a search cannot start because the engine found no
 * example inputs for the target, the server's best guess (from the signature) is offered with
 * the reason; the answer goes back to the server (`kernelevo.recordInputs`), which writes it
 * where the engine reads inputs (a `# kernelevo: inputs = ...` comment above the target). The
 * file is saved and the search started again.
 */
import * as vscode from 'vscode';
import { ErrorReporter, messageOf } from './errors';
import { LspClient } from './lsp';
import { TargetRef } from './protocol';

/** The engine's words for the failure (kernelevo/targets/inputs.py). */
export const NO_INPUTS = 'no example inputs for';

export interface InputGuess {
  inputs: string;
  init: string | null;
  params: string[];
  init_params: string[];
  targetName: string;
  reason: string;
}

export interface InputsDeps {
  client(): LspClient | undefined;
  errors: ErrorReporter;
  optimize(ref: TargetRef): unknown;
}

export function needsInputs(message: unknown): boolean {
  return typeof message === 'string' && message.includes(NO_INPUTS);
}

function validate(text: string): string | undefined {
  return text.trim() && !text.includes('\n') ? undefined : 'One line of Python, e.g. (torch.randn(8, 1024),)';
}

function command<R>(client: LspClient, name: string, args: unknown[]): Promise<R> {
  return client.sendRequest<R>('workspace/executeCommand', { command: name, arguments: args });
}

/** Asks for the inputs (and constructor arguments when needed); true once recorded and re-run. */
export async function askExampleInputs(deps: InputsDeps, ref: TargetRef): Promise<boolean> {
  const client = deps.client();
  if (!client) {
    return false;
  }
  try {
    const guess = await command<InputGuess>(client, 'kernelevo.exampleInputs', [ref.uri, ref.targetId]);
    const name = guess.targetName;
    const inputs = await vscode.window.showInputBox({
      title: `KernelEvo: example inputs for ${name}(${guess.params.join(', ')})`,
      prompt: `Needed because ${guess.reason}. A Python expression for the call's arguments (best guess shown); kept as a "# kernelevo: inputs" comment above ${name}.`,
      value: guess.inputs,
      ignoreFocusOut: true,
      validateInput: validate,
    });
    if (inputs === undefined) {
      return false;
    }
    let init: string | null = null;
    if (guess.init !== null && guess.init !== undefined) {
      const answer = await vscode.window.showInputBox({
        title: `KernelEvo: constructor arguments for ${name}(${guess.init_params.join(', ')})`,
        prompt: `${name} is built before it is called. A Python expression for its constructor's arguments; kept as a "# kernelevo: init" comment.`,
        value: guess.init,
        ignoreFocusOut: true,
        validateInput: validate,
      });
      if (answer === undefined) {
        return false;
      }
      init = answer;
    }
    const recorded = await command<{ applied?: boolean } | null>(client, 'kernelevo.recordInputs', [ref.uri, ref.targetId, inputs, init]);
    if (!recorded?.applied) {
      return false;
    }
    const document = await vscode.workspace.openTextDocument(vscode.Uri.parse(ref.uri));
    await document.save();
    deps.optimize(ref);
    return true;
  } catch (error) {
    deps.errors.reportFailure(`KernelEvo could not record example inputs: ${messageOf(error)}`, messageOf(error));
    return false;
  }
}
