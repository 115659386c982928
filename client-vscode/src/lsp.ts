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
