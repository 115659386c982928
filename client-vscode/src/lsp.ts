/**
 * The narrow view of the language client that the commands use. Keeping it this small lets
 * the unit tests drive every command with a fake server.
 */
import type * as vscode from 'vscode';

export interface WorkDoneValue {
  kind: 'begin' | 'report' | 'end';
  title?: string;
  message?: string;
  percentage?: number;
  cancellable?: boolean;
}

export interface LspClient {
  sendRequest<R>(method: string, params: unknown, token?: vscode.CancellationToken): Promise<R>;
  onProgress(token: string | number, handler: (value: WorkDoneValue) => void): vscode.Disposable;
}

/** The one method of vscode-languageclient's client that `sendWith` calls. */
export interface RequestSender {
  sendRequest(method: string, ...rest: unknown[]): Promise<unknown>;
}

/**
 * `sendRequest(method, params, token)` of a language client, without its trap: given an
 * `undefined` token, vscode-languageclient sends the params positionally as `[params, null]`,
 * which the server rejects as Invalid Params. The token is passed only when there is one.
 */
export function sendWith(raw: RequestSender): LspClient['sendRequest'] {
  return <R>(method: string, params: unknown, token?: vscode.CancellationToken): Promise<R> =>
    (token ? raw.sendRequest(method, params, token) : raw.sendRequest(method, params)) as Promise<R>;
}

/** JSON-RPC's RequestCancelled, and VS Code's own CancellationError. */
export function isCancellation(error: unknown): boolean {
  if (!error || typeof error !== 'object') {
    return false;
  }
  const e = error as { code?: unknown; name?: unknown; message?: unknown };
  return e.code === -32800 || e.name === 'Canceled' || e.message === 'Canceled';
}

/** Turns server percentages into the increments `Progress.report` wants. */
export class IncrementTracker {
  private last = 0;

  next(percentage: number | undefined): number | undefined {
    if (typeof percentage !== 'number' || !Number.isFinite(percentage)) {
      return undefined;
    }
    const clamped = Math.min(100, Math.max(0, percentage));
    const increment = clamped - this.last;
    if (increment <= 0) {
      return undefined;
    }
    this.last = clamped;
    return increment;
  }
}
