/**
 * A search as the user sees it: a cancellable notification with live progress wrapped around
 * the server's `kernelevo/optimize` request, the job on the status bar, and one message at the end.
 */
import * as vscode from 'vscode';
import { ErrorReporter, messageOf } from './errors';
import { formatTokens, JobBoard } from './jobs';
import { needsInputs } from './inputs';
import { IncrementTracker, isCancellation, LspClient } from './lsp';
import { readOutcome } from './outcome';
import { Methods, OptimizeParams, OptimizeResult, TargetRef, targetLabel } from './protocol';
import { KernelEvoSettings } from './settings';

export interface OptimizeDeps {
  client(): LspClient | undefined;
  board: JobBoard;
  settings(): KernelEvoSettings;
  hasKeyFor(provider: string): Promise<boolean>;
  errors: ErrorReporter;
  log(message: string): void;
  newToken(): string;
  /** Follow-ups offered when a run ends. */
  showDiff(ref: TargetRef): unknown;
  apply(ref: TargetRef): unknown;
  openReport(ref: TargetRef): unknown;
  /** Asks for example inputs when the engine found none (inputs.ts). */
  askInputs?(ref: TargetRef): unknown;
  /** How long to wait for the server to confirm a cancel before giving up on it. */
  cancelGraceMs?: number;
}

export type OptimizeOutcome =
  | { kind: 'blocked'; reason: 'untrusted' | 'no-server' | 'no-key' }
  | { kind: 'done'; result: OptimizeResult }
  | { kind: 'cancelled' }
  | { kind: 'error'; message: string };

/** Token sources of jobs started in this window, so "Cancel job" can cancel them too. */
export const localJobs = new Map<string, vscode.CancellationTokenSource>();

export function buildOptimizeParams(ref: TargetRef, settings: KernelEvoSettings, workDoneToken: string): OptimizeParams {
  const params: OptimizeParams = {
    uri: ref.uri,
    targetId: ref.targetId,
    backend: ref.backend ?? settings.backend,
    provider: settings.provider,
    workDoneToken,
  };
  if (settings.model) {
    params.model = settings.model;
  }
  if (settings.budgetTokens > 0) {
    params.budgetTokens = settings.budgetTokens;
  }
  if (settings.budgetUsd > 0) {
    params.budgetUsd = settings.budgetUsd;
  }
  return params;
}

/**
 * The end-of-run sentence, e.g. "softmax: verified, 1.42x faster than eager PyTorch, 1.05x vs
 * torch.compile (12k tokens, $0.12)." The words are the engine's (the same as the CLI's).
 */
export function summarize(label: string, result: OptimizeResult): string {
  const spend = `${formatTokens(result.tokens)} tokens, $${(result.costUsd ?? 0).toFixed(2)}`;
  const outcome = readOutcome(result.outcome);
  if (outcome) {
    const kept = outcome.kind === 'cancelled' ? '; what it found so far is kept' : '';
    return `${label}: ${outcome.headline} (${spend}${kept}).`;
  }
  if (result.status === 'cancelled') {
    return `${label}: search cancelled (${spend}); what it found so far is kept.`;
  }
  return `${label}: the search ended without an outcome${result.message ? `: ${result.message}` : ` (${result.status})`}.`;
}

async function preflight(deps: OptimizeDeps, settings: KernelEvoSettings): Promise<OptimizeOutcome | undefined> {
  if (!vscode.workspace.isTrusted) {
    void vscode.window
      .showWarningMessage('KernelEvo runs no searches in an untrusted workspace: a search executes code from this folder.', 'Manage Workspace Trust')
      .then((choice) => choice && vscode.commands.executeCommand('workbench.trust.manage'));
    return { kind: 'blocked', reason: 'untrusted' };
  }
  if (!deps.client()) {
    deps.errors.report('The KernelEvo server is not running.', {
      key: 'no-server',
      actions: [{ title: 'Restart Server', run: () => vscode.commands.executeCommand('kernelevo.restartServer') }],
    });
    return { kind: 'blocked', reason: 'no-server' };
  }
  if (!(await deps.hasKeyFor(settings.provider))) {
    // The engine may still find a key in its own config file: let the user go ahead.
    const choice = await vscode.window.showWarningMessage(
      `No API key for ${settings.provider} in VS Code's secret storage or the environment. KernelEvo keeps keys in the OS keychain, never in settings.`,
      'Set API Key',
      'Run Anyway',
    );
    if (choice !== 'Run Anyway') {
      if (choice === 'Set API Key') {
        void vscode.commands.executeCommand('kernelevo.setApiKey', settings.provider);
      }
      return { kind: 'blocked', reason: 'no-key' };
    }
  }
  return undefined;
}

function followUp(deps: OptimizeDeps, ref: TargetRef, label: string, result: OptimizeResult): void {
  const withRun: TargetRef = { ...ref, runId: result.runId || ref.runId };
  const text = summarize(label, result);
  const outcome = readOutcome(result.outcome);
  if (outcome?.applicable) {
    void vscode.window.showInformationMessage(text, 'Show Diff', 'Apply').then((choice) => {
      if (choice === 'Show Diff') {
        deps.showDiff(withRun);
      } else if (choice === 'Apply') {
        deps.apply(withRun);
      }
    });
  } else if (outcome && outcome.kind !== 'failed') {
    void vscode.window.showInformationMessage(text, 'Open Report').then((choice) => choice && deps.openReport(withRun));
  } else if (!outcome && result.status === 'cancelled') {
    void vscode.window.showInformationMessage(text, 'Open Report').then((choice) => choice && deps.openReport(withRun));
  } else if (deps.askInputs && needsInputs(result.message)) {
    deps.askInputs(ref);
  } else {
    const cause = typeof result.message === 'string' && result.message ? result.message : text;
    deps.errors.reportFailure(text, cause, { level: 'error', actions: [{ title: 'Open Report', run: () => deps.openReport(withRun) }] });
  }
}

export async function optimizeTarget(deps: OptimizeDeps, ref: TargetRef): Promise<OptimizeOutcome> {
  const settings = deps.settings();
  const blocked = await preflight(deps, settings);
  if (blocked) {
    return blocked;
  }
  const client = deps.client() as LspClient;
  const label = ref.label ?? targetLabel(ref.targetId);
  const token = deps.newToken();
  const params = buildOptimizeParams(ref, settings, token);
  deps.log(`optimize ${label} (${ref.targetId}) with ${params.provider}, backend ${params.backend}`);

  const outcome = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: `KernelEvo: optimizing ${label}`, cancellable: true },
    async (progress, userCancel): Promise<OptimizeOutcome> => {
      const source = new vscode.CancellationTokenSource();
      localJobs.set(token, source);
      const linked = userCancel.onCancellationRequested(() => source.cancel());
      const increments = new IncrementTracker();
      deps.board.start(token, ref.uri, ref.targetId, label);
      const subscription = client.onProgress(token, (value) => {
        if (value.message || value.percentage !== undefined) {
          progress.report({ message: value.message, increment: increments.next(value.percentage) });
        }
        deps.board.progress(token, value.message);
      });
      const cancelled = new Promise<'timeout'>((resolve) => {
        source.token.onCancellationRequested(() => setTimeout(() => resolve('timeout'), deps.cancelGraceMs ?? 15_000));
      });
      try {
        const answer = await Promise.race([client.sendRequest<OptimizeResult>(Methods.optimize, params, source.token), cancelled]);
        if (answer === 'timeout') {
          deps.log(`optimize ${label}: the server did not confirm the cancel in time`);
          deps.board.finish(token, 'cancelled');
          return { kind: 'cancelled' };
        }
        deps.board.finish(token, answer.status, answer);
        return { kind: 'done', result: answer };
      } catch (error) {
        if (isCancellation(error) || source.token.isCancellationRequested) {
          deps.board.finish(token, 'cancelled');
          return { kind: 'cancelled' };
        }
        deps.board.finish(token, 'failed');
        return { kind: 'error', message: messageOf(error) };
      } finally {
        subscription.dispose();
        linked.dispose();
        localJobs.delete(token);
        source.dispose();
      }
    },
  );

  if (outcome.kind === 'done') {
    followUp(deps, ref, label, outcome.result);
  } else if (outcome.kind === 'cancelled') {
    void vscode.window.showInformationMessage(`KernelEvo: optimizing ${label} was cancelled.`);
  } else if (outcome.kind === 'error' && deps.askInputs && needsInputs(outcome.message)) {
    deps.askInputs(ref);
  } else if (outcome.kind === 'error') {
    deps.errors.reportFailure(`Optimizing ${label} failed: ${outcome.message}`, outcome.message, { level: 'error' });
  }
  return outcome;
}
