/**
 * The palette and context-menu commands. Each handler works from the cursor (or the target a
 * lens, hover link or diff tab hands it) and talks to the server through `Services`.
 */
import * as vscode from 'vscode';
import { applyResult } from './apply';
import { discardProposals, parseProposalUri, proposalUri, showProposal, VirtualTextStore } from './diff';
import { ErrorReporter, messageOf } from './errors';
import { askExampleInputs } from './inputs';
import { describeJob, JobBoard, JobView } from './jobs';
import { LspClient } from './lsp';
import { localJobs, OptimizeOutcome, optimizeTarget } from './optimize';
import { CancelResult, JobInfo, Methods, TargetRef } from './protocol';
import { reportMarkdown, reportUri } from './report';
import { ApiKeys, maskKey, PROVIDER_ENV, validateApiKey } from './secrets';
import { readSettings } from './settings';
import { chooseTarget, targetsAtCursor } from './targets';

export interface ServerHandle {
  client(): LspClient | undefined;
  restart(): Promise<void>;
  /** Re-shows the install offer when the server couldn't start for lack of KernelEvo. */
  explainNotRunning(): void;
}

export interface Services {
  server: ServerHandle;
  board: JobBoard;
  keys: ApiKeys;
  errors: ErrorReporter;
  log(message: string): void;
  showLog(): void;
  proposals: VirtualTextStore;
  reports: VirtualTextStore;
  newToken(): string;
}

export const CommandIds = {
  optimizeAtCursor: 'kernelevo.optimizeAtCursor',
  showResultDiff: 'kernelevo.showResultDiff',
  applyResult: 'kernelevo.applyResult',
  discardProposal: 'kernelevo.discardProposal',
  cancelJob: 'kernelevo.cancelJob',
  showJobs: 'kernelevo.showJobs',
  openReport: 'kernelevo.openReport',
  setApiKey: 'kernelevo.setApiKey',
  restartServer: 'kernelevo.restartServer',
  showLog: 'kernelevo.showLog',
} as const;

function settings() {
  return readSettings(vscode.workspace.getConfiguration('kernelevo'));
}

function requireClient(s: Services): LspClient | undefined {
  const client = s.server.client();
  if (!client) {
    s.server.explainNotRunning();
  }
  return client;
}

/** The target under the cursor of the active editor (or of `uri`'s editor), asking when several nest. */
async function targetAtCursor(s: Services, purpose: string, uri?: vscode.Uri): Promise<TargetRef | undefined> {
  const editor = vscode.window.activeTextEditor;
  if (!editor || (uri && editor.document.uri.toString() !== uri.toString())) {
    void vscode.window.showInformationMessage('Put the cursor in a PyTorch module, function or kernel first.');
    return undefined;
  }
  const client = requireClient(s);
  if (!client) {
    return undefined;
  }
  const position = { line: editor.selection.active.line, character: editor.selection.active.character };
  let targets;
  try {
    targets = await targetsAtCursor(client, editor.document.uri.toString(), position);
  } catch (error) {
    s.errors.report(`KernelEvo could not list the targets in this file: ${messageOf(error)}`);
    return undefined;
  }
  if (targets.length === 0) {
    void vscode.window.showInformationMessage(
      'No optimization target at the cursor. KernelEvo works on nn.Module classes, functions using torch ops, Triton kernels and CUDA sources.',
    );
    return undefined;
  }
  return chooseTarget(targets, purpose);
}

/** A target from a command's argument: a TargetRef, a proposal tab's URI, or nothing (use the cursor). */
function refFromArgument(arg: unknown): TargetRef | undefined {
  if (arg instanceof vscode.Uri) {
    const key = parseProposalUri(arg);
    return key ? { uri: key.file, targetId: key.targetId, runId: key.runId } : undefined;
  }
  if (arg && typeof arg === 'object' && typeof (arg as TargetRef).uri === 'string' && typeof (arg as TargetRef).targetId === 'string') {
    return arg as TargetRef;
  }
  return undefined;
}

export function optimize(s: Services, ref: TargetRef): Promise<OptimizeOutcome> {
  return optimizeTarget(
    {
      client: () => s.server.client(),
      board: s.board,
      settings,
      hasKeyFor: (provider) => s.keys.hasKeyFor(provider, process.env),
      errors: s.errors,
      log: s.log,
      newToken: s.newToken,
      showDiff: (r) => showDiff(s, r),
      apply: (r) => apply(s, r),
      openReport: (r) => openReport(s, r),
      askInputs: (r) => askExampleInputs({ client: () => s.server.client(), errors: s.errors, optimize: (again) => optimize(s, again) }, r),
    },
    ref,
  );
}

export function showDiff(s: Services, ref: TargetRef) {
  return showProposal({ client: () => s.server.client(), store: s.proposals, errors: s.errors, apply: (r) => apply(s, r) }, ref);
}

export function apply(s: Services, ref: TargetRef) {
  return applyResult(
    {
      client: () => s.server.client(),
      errors: s.errors,
      log: s.log,
      applied: (r) => (r.runId ? discardProposals(s.proposals, [proposalUri({ file: r.uri, targetId: r.targetId, runId: r.runId })]) : undefined),
    },
    ref,
  );
}

/** Refreshes the board from the server; quiet on failure (the list is a convenience). */
export async function syncJobs(s: Services): Promise<void> {
  const client = s.server.client();
  if (!client) {
    return;
  }
  try {
    s.board.sync((await client.sendRequest<JobInfo[] | null>(Methods.jobs, {})) ?? []);
  } catch (error) {
    s.log(`kernelevo/jobs failed: ${messageOf(error)}`);
  }
}

export async function cancelJob(s: Services, job: JobView): Promise<boolean> {
  const client = s.server.client();
  if (job.jobId && client) {
    try {
      const answer = await client.sendRequest<CancelResult>(Methods.cancel, { jobId: job.jobId });
      if (answer?.cancelled) {
        return true;
      }
    } catch (error) {
      s.log(`kernelevo/cancel ${job.jobId} failed: ${messageOf(error)}`);
    }
  }
  const local = localJobs.get(job.key);
  if (local) {
    local.cancel();
    return true;
  }
  return false;
}

async function pickJob(jobs: JobView[], placeHolder: string): Promise<JobView | undefined> {
  if (jobs.length === 0) {
    return undefined;
  }
  const picked = await vscode.window.showQuickPick(
    jobs.map((job) => ({ ...describeJob(job), job })),
    { placeHolder, matchOnDescription: true, matchOnDetail: true },
  );
  return picked?.job;
}

export async function openReport(s: Services, ref: TargetRef): Promise<vscode.Uri> {
  await syncJobs(s);
  const job = s.board.all().find((j) => (ref.runId ? j.runId === ref.runId : j.targetId === ref.targetId && j.uri === ref.uri));
  const runId = ref.runId ?? job?.runId ?? undefined;
  const uri = reportUri(ref, runId);
  s.reports.put(uri, reportMarkdown({ ...ref, runId }, job));
  try {
    await vscode.commands.executeCommand('markdown.showPreview', uri);
  } catch {
    await vscode.window.showTextDocument(uri, { preview: true });
  }
  return uri;
}

async function setApiKey(s: Services, providerArg?: unknown): Promise<void> {
  const current = settings().provider;
  const providers = Object.keys(PROVIDER_ENV).sort((a, b) => Number(b === current) - Number(a === current));
  const provider =
    typeof providerArg === 'string' && PROVIDER_ENV[providerArg]
      ? providerArg
      : (await vscode.window.showQuickPick(providers.map((p) => ({ label: p, description: PROVIDER_ENV[p] }))))?.label;
  if (!provider) {
    return;
  }
  const stored = await s.keys.get(provider);
  const value = await vscode.window.showInputBox({
    title: `KernelEvo: API key for ${provider}`,
    prompt: `Kept in the OS keychain (VS Code SecretStorage) and given to the server as ${PROVIDER_ENV[provider]}; never written to settings.${stored ? ` Stored now: ${maskKey(stored)}. Leave empty to remove it.` : ''}`,
    password: true,
    ignoreFocusOut: true,
    validateInput: (text) => (stored && text === '' ? undefined : validateApiKey(text)),
  });
  if (value === undefined) {
    return;
  }
  if (value === '') {
    await s.keys.clear(provider);
  } else {
    await s.keys.set(provider, value);
  }
  const running = s.board.running().length;
  const verb = value === '' ? 'removed' : 'saved';
  if (running > 0) {
    const choice = await vscode.window.showInformationMessage(
      `API key for ${provider} ${verb}. The server picks it up when it restarts, which stops ${running} running job(s).`,
      'Restart Now',
      'Later',
    );
    if (choice !== 'Restart Now') {
      return;
    }
  } else {
    void vscode.window.showInformationMessage(`API key for ${provider} ${verb}.`);
  }
  await s.server.restart();
}

export function registerCommands(s: Services): vscode.Disposable[] {
  const register = (id: string, handler: (...args: unknown[]) => unknown) =>
    vscode.commands.registerCommand(id, async (...args: unknown[]) => {
      try {
        return await handler(...args);
      } catch (error) {
        s.errors.report(`KernelEvo: ${id.replace('kernelevo.', '')} failed: ${messageOf(error)}`);
        return undefined;
      }
    });
  const atCursorOr = async (arg: unknown, purpose: string) =>
    refFromArgument(arg) ?? (await targetAtCursor(s, purpose, arg instanceof vscode.Uri ? arg : undefined));

  return [
    register(CommandIds.optimizeAtCursor, async (arg) => {
      const ref = await atCursorOr(arg, 'optimize');
      return ref && optimize(s, ref);
    }),
    register(CommandIds.showResultDiff, async (arg) => {
      const ref = await atCursorOr(arg, 'show the result of');
      return ref && requireClient(s) && showDiff(s, ref);
    }),
    register(CommandIds.applyResult, async (arg) => {
      const ref = await atCursorOr(arg ?? vscode.window.activeTextEditor?.document.uri, 'apply the result to');
      return ref && requireClient(s) && apply(s, ref);
    }),
    register(CommandIds.discardProposal, async (arg) => {
      const uri = arg instanceof vscode.Uri ? arg : vscode.window.activeTextEditor?.document.uri;
      if (uri && parseProposalUri(uri)) {
        await discardProposals(s.proposals, [uri]);
      }
    }),
    register(CommandIds.cancelJob, async (arg) => {
      await syncJobs(s);
      const running = s.board.running();
      if (running.length === 0) {
        void vscode.window.showInformationMessage('No KernelEvo job is running.');
        return false;
      }
      const named = typeof arg === 'string' ? running.find((j) => j.jobId === arg || j.key === arg) : undefined;
      const chosen = named ?? (running.length === 1 ? running[0] : await pickJob(running, 'Cancel which job?'));
      if (!chosen) {
        return false;
      }
      const ok = await cancelJob(s, chosen);
      void vscode.window.showInformationMessage(ok ? `Cancelling ${chosen.label}…` : `${chosen.label} could not be cancelled (it may have just finished).`);
      return ok;
    }),
    register(CommandIds.showJobs, async () => {
      await syncJobs(s);
      const jobs = s.board.all();
      if (jobs.length === 0) {
        void vscode.window.showInformationMessage('No KernelEvo jobs yet. Use "KernelEvo: Optimize Kernel at Cursor" or the lens above a target.');
        return;
      }
      const job = await pickJob(jobs, 'KernelEvo jobs');
      if (!job) {
        return;
      }
      const ref: TargetRef = { uri: job.uri, targetId: job.targetId, runId: job.runId ?? undefined, label: job.label };
      const actions = s.board.running().includes(job) ? ['Cancel', 'Open Report'] : job.runId ? ['Show Diff', 'Apply', 'Open Report'] : ['Open Report'];
      const action = await vscode.window.showQuickPick(actions, { placeHolder: `${job.label}: ${describeJob(job).description}` });
      if (action === 'Cancel') {
        await cancelJob(s, job);
      } else if (action === 'Show Diff') {
        await showDiff(s, ref);
      } else if (action === 'Apply') {
        await apply(s, ref);
      } else if (action === 'Open Report') {
        await openReport(s, ref);
      }
    }),
    register(CommandIds.openReport, async (arg) => {
      const given = refFromArgument(arg);
      if (given) {
        return openReport(s, given);
      }
      await syncJobs(s);
      const job = await pickJob(s.board.all(), 'Open the report of which run?');
      if (!job) {
        void vscode.window.showInformationMessage('No KernelEvo runs in this session yet.');
        return undefined;
      }
      return openReport(s, { uri: job.uri, targetId: job.targetId, runId: job.runId ?? undefined, label: job.label });
    }),
    register(CommandIds.setApiKey, (arg) => setApiKey(s, arg)),
    register(CommandIds.restartServer, () => s.server.restart()),
    register(CommandIds.showLog, () => s.showLog()),
  ];
}
