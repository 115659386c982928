/**
 * Activation: wires the output channel, error reporter, API keys, job board, status bar, diff
 * documents, commands and the server together. Logic lives in the modules it imports.
 */
import { randomUUID } from 'crypto';
import * as vscode from 'vscode';
import { CommandIds, optimize, registerCommands, Services, showDiff, apply, syncJobs } from './commands';
import { PROPOSAL_SCHEME, VirtualTextStore } from './diff';
import { ErrorReporter } from './errors';
import { JobBoard, statusView } from './jobs';
import { acceptPrecision } from './precision';
import { ServerCommands } from './protocol';
import { REPORT_SCHEME } from './report';
import { ApiKeys } from './secrets';
import { ServerManager, ServerState } from './server';
import { needsRestart } from './settings';

const POLL_MS = 3000;

let running: ServerManager | undefined;

function statusForServer(state: ServerState): { text: string; tooltip: string; command: string } | undefined {
  switch (state) {
    case 'not-installed':
      return { text: '$(warning) KernelEvo: not installed', tooltip: 'KernelEvo is not installed for the selected Python. Click for the install command.', command: CommandIds.restartServer };
    case 'failed':
      return { text: '$(error) KernelEvo', tooltip: 'The KernelEvo server is not running. Click to restart it.', command: CommandIds.restartServer };
    case 'starting':
      return { text: '$(loading~spin) KernelEvo', tooltip: 'Starting the KernelEvo server…', command: CommandIds.showLog };
    default:
      return undefined;
  }
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const output = vscode.window.createOutputChannel('KernelEvo');
  const log = (message: string) => output.appendLine(`[${new Date().toLocaleTimeString()}] ${message}`);
  const errors = new ErrorReporter(
    {
      show: (message, buttons, level) =>
        (level === 'error' ? vscode.window.showErrorMessage : level === 'warning' ? vscode.window.showWarningMessage : vscode.window.showInformationMessage)(
          message,
          ...buttons,
        ),
      log,
    },
    () => output.show(true),
  );
  const keys = new ApiKeys(context.secrets);
  const board = new JobBoard();
  const proposals = new VirtualTextStore();
  const reports = new VirtualTextStore();

  // Filled in below: the server's intercepted commands need the services, which need the server.
  let services: Services | undefined;
  const server = new ServerManager(output, errors, keys, {
    [ServerCommands.optimize]: (ref) => services && optimize(services, ref),
    [ServerCommands.showDiff]: (ref) => services && showDiff(services, ref),
    [ServerCommands.apply]: (ref) => services && apply(services, ref),
    [ServerCommands.acceptPrecision]: (ref) =>
      services && acceptPrecision({ client: () => services!.server.client(), errors: services.errors, optimize: (r) => optimize(services!, r) }, ref),
  });
  running = server;
  services = {
    server: {
      client: () => server.client(),
      restart: () => server.restart(),
      explainNotRunning: () => {
        if (server.state === 'not-installed' && server.interpreter) {
          void server.offerInstall(server.interpreter, 'KernelEvo is not installed there.');
        } else {
          errors.report('The KernelEvo server is not running.', {
            key: 'no-server',
            actions: [{ title: 'Restart Server', run: () => server.restart() }],
          });
        }
      },
    },
    board,
    keys,
    errors,
    log,
    showLog: () => output.show(true),
    proposals,
    reports,
    newToken: () => `kernelevo-${randomUUID()}`,
  };

  const status = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, 50);
  status.name = 'KernelEvo';
  const render = () => {
    const problem = statusForServer(server.state);
    if (problem) {
      Object.assign(status, problem);
    } else {
      const view = statusView(board);
      status.text = view.text;
      status.tooltip = view.tooltip;
      status.command = CommandIds.showJobs;
    }
    status.show();
  };
  let poll: NodeJS.Timeout | undefined;
  const keepPolling = () => {
    if (board.running().length > 0 && !poll) {
      poll = setInterval(() => (board.running().length ? void syncJobs(services!) : (clearInterval(poll), (poll = undefined))), POLL_MS);
    }
  };

  context.subscriptions.push(
    output,
    status,
    proposals,
    reports,
    server,
    vscode.workspace.registerTextDocumentContentProvider(PROPOSAL_SCHEME, proposals),
    vscode.workspace.registerTextDocumentContentProvider(REPORT_SCHEME, reports),
    board.onDidChange(() => {
      render();
      keepPolling();
    }),
    server.onDidChangeState(render),
    ...registerCommands(services),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (!event.affectsConfiguration('kernelevo')) {
        return;
      }
      if (needsRestart((key) => event.affectsConfiguration(key))) {
        log('The interpreter setting changed: restarting the server.');
        void server.restart();
      } else {
        void server.pushSettings();
      }
    }),
    vscode.workspace.onDidGrantWorkspaceTrust(() => {
      log('Workspace trusted: restarting the server with the full interpreter search.');
      void server.restart();
    }),
    { dispose: () => poll && clearInterval(poll) },
  );
  render();
  await server.start();
}

/** VS Code waits for this: the server gets to stop its searches (and their workers) cleanly. */
export function deactivate(): Promise<void> | undefined {
  const stopping = running?.stop();
  running = undefined;
  return stopping;
}
