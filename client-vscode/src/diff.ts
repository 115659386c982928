/**
 * Proposed rewrites shown in VS Code's diff editor. The proposed text lives in a read-only
 * virtual document (`kernelevo-proposal:`), rebuilt by the server against the current text,
 * so what the user reviews is exactly what Apply would write.
 */
import * as vscode from 'vscode';
import { ErrorReporter, messageOf } from './errors';
import { LspClient } from './lsp';
import { Methods, ProposalParams, ProposalResult, TargetRef, targetLabel } from './protocol';

export const PROPOSAL_SCHEME = 'kernelevo-proposal';

export interface ProposalKey {
  /** The real file's URI, as a string. */
  file: string;
  targetId: string;
  runId: string;
  /** 'base': the (empty) left side for a file the proposal creates. */
  side?: 'base';
}

/** `kernelevo-proposal:/path/softmax.py?{...}`: keeps the file name (for the tab and syntax colouring). */
export function proposalUri(key: ProposalKey): vscode.Uri {
  const file = vscode.Uri.parse(key.file);
  return file.with({ scheme: PROPOSAL_SCHEME, query: JSON.stringify(key), fragment: '' });
}

export function parseProposalUri(uri: vscode.Uri): ProposalKey | undefined {
  if (uri.scheme !== PROPOSAL_SCHEME) {
    return undefined;
  }
  try {
    const key = JSON.parse(uri.query) as Partial<ProposalKey>;
    if (typeof key.file === 'string' && typeof key.targetId === 'string' && typeof key.runId === 'string') {
      return key.side === 'base' ? { file: key.file, targetId: key.targetId, runId: key.runId, side: 'base' } : { file: key.file, targetId: key.targetId, runId: key.runId };
    }
  } catch {
    // not one of ours
  }
  return undefined;
}

export class VirtualTextStore implements vscode.TextDocumentContentProvider {
  private readonly texts = new Map<string, string>();
  private readonly emitter = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.emitter.event;

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.toString()) ?? '# This KernelEvo proposal is no longer available: run "KernelEvo: Show Result Diff" again.\n';
  }

  put(uri: vscode.Uri, text: string): void {
    this.texts.set(uri.toString(), text);
    this.emitter.fire(uri);
  }

  has(uri: vscode.Uri): boolean {
    return this.texts.has(uri.toString());
  }

  forget(uri: vscode.Uri): void {
    this.texts.delete(uri.toString());
    this.emitter.fire(uri);
  }

  dispose(): void {
    this.emitter.dispose();
  }
}

export interface DiffDeps {
  client(): LspClient | undefined;
  store: VirtualTextStore;
  errors: ErrorReporter;
  apply(ref: TargetRef): unknown;
}

/** Fetches the proposal, opens the diff, and offers Apply / Discard. Returns the virtual URIs opened. */
export async function showProposal(deps: DiffDeps, ref: TargetRef): Promise<vscode.Uri[]> {
  const client = deps.client();
  if (!client) {
    deps.errors.report('The KernelEvo server is not running.', { key: 'no-server' });
    return [];
  }
  const label = ref.label ?? targetLabel(ref.targetId);
  const params: ProposalParams = { uri: ref.uri, targetId: ref.targetId };
  if (ref.runId) {
    params.runId = ref.runId;
  }
  let proposal: ProposalResult;
  try {
    proposal = await client.sendRequest<ProposalResult>(Methods.proposal, params);
  } catch (error) {
    deps.errors.reportFailure(`No proposal to show for ${label}: ${messageOf(error)}`, messageOf(error));
    return [];
  }
  const files = proposal.files.filter((f) => f.oldText !== f.newText);
  if (files.length === 0) {
    void vscode.window.showInformationMessage(`The proposal for ${label} changes nothing.`);
    return [];
  }
  const opened: vscode.Uri[] = [];
  const pairs: [vscode.Uri, vscode.Uri, vscode.Uri][] = [];
  for (const file of files) {
    const right = proposalUri({ file: file.uri, targetId: ref.targetId, runId: proposal.runId });
    deps.store.put(right, file.newText);
    opened.push(right);
    let left = vscode.Uri.parse(file.uri);
    if (!(await exists(left))) {
      // A file the proposal creates (e.g. the kernel's own module): compare with an empty page.
      left = proposalUri({ file: file.uri, targetId: ref.targetId, runId: proposal.runId, side: 'base' });
      deps.store.put(left, file.oldText);
      opened.push(left);
    }
    pairs.push([vscode.Uri.parse(file.uri), left, right]);
  }
  const title = `KernelEvo proposal for ${label} (run ${proposal.runId})`;
  let shown = false;
  if (pairs.length > 1) {
    // The multi-file diff editor (VS Code 1.85+); separate diff tabs where it is missing.
    shown = await Promise.resolve(vscode.commands.executeCommand('vscode.changes', title, pairs)).then(
      () => true,
      () => false,
    );
  }
  if (!shown) {
    for (const [file, left, right] of pairs) {
      const name = file.path.split('/').pop();
      await vscode.commands.executeCommand('vscode.diff', left, right, `${name} ↔ ${title}`, { preview: false });
    }
  }
  const applyRef: TargetRef = { ...ref, runId: proposal.runId };
  void vscode.window.showInformationMessage(`KernelEvo proposal for ${label}: review the diff.`, 'Apply', 'Discard').then((choice) => {
    if (choice === 'Apply') {
      deps.apply(applyRef);
    } else if (choice === 'Discard') {
      void discardProposals(deps.store, opened);
    }
  });
  return opened;
}

async function exists(uri: vscode.Uri): Promise<boolean> {
  try {
    await vscode.workspace.fs.stat(uri);
    return true;
  } catch {
    return false;
  }
}

/** Closes the diff tabs showing these proposals and drops their text. */
export async function discardProposals(store: VirtualTextStore, uris: vscode.Uri[]): Promise<void> {
  const wanted = new Set(uris.map((u) => u.toString()));
  const tabs: vscode.Tab[] = [];
  for (const group of vscode.window.tabGroups?.all ?? []) {
    for (const tab of group.tabs) {
      const input = tab.input as { modified?: vscode.Uri; uri?: vscode.Uri } | undefined;
      const shown = input?.modified ?? input?.uri;
      if (shown && wanted.has(shown.toString())) {
        tabs.push(tab);
      }
    }
  }
  if (tabs.length) {
    await vscode.window.tabGroups.close(tabs);
  }
  for (const uri of uris) {
    store.forget(uri);
  }
}
