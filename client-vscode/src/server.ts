/**
 * The server process's life: pick the interpreter, check KernelEvo is installed there (or offer
 * the install), start the language client with the API keys in its environment, restart it
 * when the interpreter, keys or trust change, and report failures once.
 */
import * as os from 'os';
import * as vscode from 'vscode';
import {
  CloseAction,
  ErrorAction,
  LanguageClient,
  LanguageClientOptions,
  ServerOptions,
  State,
  TransportKind,
  WorkDoneProgress,
} from 'vscode-languageclient/node';
import { CommandIds } from './commands';
import { ErrorReporter, messageOf } from './errors';
import { LspClient, sendWith } from './lsp';
import { ServerCommands, TargetRef, targetFromArguments } from './protocol';
import {
  checkInterpreter,
  describeSource,
  findInterpreter,
  installCommand,
  Interpreter,
  isKernelEvoCheckout,
  PythonExtensionApi,
  serverCommand,
} from './python';
import { ApiKeys, serverEnvironment } from './secrets';
import { expandPath, readSettings, serverSettings } from './settings';

export type ServerState = 'starting' | 'running' | 'not-installed' | 'stopped' | 'failed';

/** Server commands the client handles itself (PROTOCOLS.md: the client intercepts showDiff). */
export type Intercepts = Partial<Record<string, (ref: TargetRef) => unknown>>;

interface PythonExtensionEvents extends PythonExtensionApi {
  environments: PythonExtensionApi['environments'] & {
    onDidChangeActiveEnvironmentPath?: vscode.Event<unknown>;
  };
}

const MAX_RESTARTS = 4;
const RESTART_WINDOW_MS = 3 * 60_000;

export function workspaceFolderPath(): string | undefined {
  return vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
}

export function currentServerSettings() {
  return serverSettings(readSettings(vscode.workspace.getConfiguration('kernelevo')), workspaceFolderPath(), os.homedir());
}

export class ServerManager implements vscode.Disposable {
  private languageClient: LanguageClient | undefined;
  private readonly stateEmitter = new vscode.EventEmitter<ServerState>();
  readonly onDidChangeState = this.stateEmitter.event;
  private currentState: ServerState = 'stopped';
  private readonly localCommands: vscode.Disposable[] = [];
  private crashes: number[] = [];
  private offeredFor = new Set<string>();
  private pythonEvents: vscode.Disposable | undefined;
  interpreter: Interpreter | undefined;

  constructor(
    private readonly output: vscode.OutputChannel,
    private readonly errors: ErrorReporter,
    private readonly keys: ApiKeys,
    private readonly intercepts: Intercepts,
  ) {}

  get state(): ServerState {
    return this.currentState;
  }

  private setState(state: ServerState): void {
    this.currentState = state;
    this.stateEmitter.fire(state);
  }

  /** The running client as the commands see it; undefined while stopped. */
  client(): LspClient | undefined {
    const client = this.languageClient;
    if (!client || client.state !== State.Running) {
      return undefined;
    }
    return {
      sendRequest: sendWith(client),
      onProgress: (token, handler) => client.onProgress(WorkDoneProgress.type, token, handler),
    };
  }

  private pythonExtension(): (() => Promise<PythonExtensionApi | undefined>) | undefined {
    // An untrusted folder's own virtual environment must not run: use only user-level choices there.
    const extension = vscode.workspace.isTrusted ? vscode.extensions.getExtension<PythonExtensionEvents>('ms-python.python') : undefined;
    if (!extension) {
      return undefined;
    }
    return async () => {
      const api = extension.isActive ? extension.exports : await extension.activate();
      if (api && !this.pythonEvents && api.environments.onDidChangeActiveEnvironmentPath) {
        this.pythonEvents = api.environments.onDidChangeActiveEnvironmentPath(() => {
          if (!readSettings(vscode.workspace.getConfiguration('kernelevo')).interpreter) {
            this.output.appendLine('The Python extension changed the active environment: restarting the KernelEvo server.');
            void this.restart();
          }
        });
      }
      return api;
    };
  }

  /** Starts, stops and restarts run one at a time, in order (trust, settings and keys can all ask at once). */
  private chain: Promise<void> = Promise.resolve();

  private serial(step: () => Promise<void>): Promise<void> {
    const next = this.chain.then(step, step);
    this.chain = next.catch(() => undefined);
    return next;
  }

  start(): Promise<void> {
    return this.serial(() => this.doStart());
  }

  stop(): Promise<void> {
    return this.serial(() => this.doStop());
  }

  restart(): Promise<void> {
    return this.serial(async () => {
      await this.doStop();
      this.crashes = [];
      this.offeredFor.clear();
      this.errors.forgetAll();
      await this.doStart();
    });
  }

  private async doStart(): Promise<void> {
    if (this.languageClient) {
      return;
    }
    this.setState('starting');
    const folder = workspaceFolderPath();
    // The process's working folder; the server learns the workspace from `rootUri` anyway.
    const cwd = vscode.workspace.isTrusted && folder ? folder : os.homedir();
    const settings = readSettings(vscode.workspace.getConfiguration('kernelevo'));
    let setting = expandPath(settings.interpreter, folder, os.homedir());
    if (!vscode.workspace.isTrusted && folder && setting.startsWith(folder)) {
      // A user-level `${workspaceFolder}/.venv/...` would run the untrusted folder's own Python.
      this.output.appendLine(`Ignoring kernelevo.interpreter (${setting}) in an untrusted workspace: it lies inside the workspace.`);
      setting = '';
    }
    const interpreter = await findInterpreter({
      setting,
      pythonExtension: this.pythonExtension(),
      resource: vscode.workspace.workspaceFolders?.[0]?.uri,
    });
    this.interpreter = interpreter;
    this.output.appendLine(`Python: ${interpreter.path} (${describeSource(interpreter.source)})`);
    const check = await checkInterpreter(interpreter.path, cwd);
    if (!check.ok) {
      this.output.appendLine(`KernelEvo is not usable with ${interpreter.path}: ${check.reason}`);
      this.setState('not-installed');
      void this.offerInstall(interpreter, check.reason ?? 'KernelEvo is not installed.', false);
      return;
    }
    this.output.appendLine(`kernelevo ${check.version} on Python ${check.pythonVersion}`);
    const { command, args } = serverCommand(interpreter.path);
    const env = serverEnvironment(process.env, await this.keys.environment());
    const serverOptions: ServerOptions = { command, args, transport: TransportKind.stdio, options: { cwd, env } };
    const client = new LanguageClient('kernelevo', 'KernelEvo', serverOptions, this.clientOptions());
    this.languageClient = client;
    // Registered before start, so it replaces the client's default handler: server messages
    // share our deduplication instead of stacking up next to the same error from a request.
    client.onNotification('window/showMessage', (params: { type: number; message: string }) => {
      const level = params.type === 1 ? 'error' : params.type === 2 ? 'warning' : params.type === 3 ? 'info' : undefined;
      if (level) {
        this.errors.fromServer(params.message, level);
      } else {
        this.output.appendLine(params.message);
      }
    });
    try {
      await client.start();
    } catch (error) {
      this.languageClient = undefined;
      this.setState('failed');
      this.errors.report(`The KernelEvo server failed to start: ${messageOf(error)}`, {
        key: 'server-start',
        actions: [{ title: 'Restart Server', run: () => this.restart() }],
      });
      return;
    }
    this.registerUnadvertised(client);
    this.errors.forget('server-start');
    this.errors.forget('server-stopped');
    this.setState('running');
  }

  private clientOptions(): LanguageClientOptions {
    const intercepted = Object.keys(this.intercepts);
    return {
      documentSelector: [
        { scheme: 'file', language: 'python' },
        { scheme: 'file', language: 'cuda-cpp' },
      ],
      initializationOptions: currentServerSettings(),
      outputChannel: this.output,
      revealOutputChannelOn: 4, // Never: errors go through the ErrorReporter, once each
      // Hover links may run the server's commands and ours, nothing else.
      markdown: { isTrusted: { enabledCommands: [...new Set([...Object.values(ServerCommands), 'kernelevo.cancel', ...intercepted, ...Object.values(CommandIds)])] }, supportHtml: false },
      errorHandler: {
        error: (_error, _message, count) => ({ action: (count ?? 0) <= 3 ? ErrorAction.Continue : ErrorAction.Shutdown, handled: true }),
        closed: () => {
          const now = Date.now();
          this.crashes = [...this.crashes.filter((t) => now - t < RESTART_WINDOW_MS), now];
          if (this.crashes.length <= MAX_RESTARTS) {
            this.output.appendLine('The KernelEvo server stopped; restarting it.');
            return { action: CloseAction.Restart, handled: true };
          }
          this.setState('failed');
          this.errors.report('The KernelEvo server stopped repeatedly and was not restarted.', {
            key: 'server-stopped',
            actions: [{ title: 'Restart Server', run: () => this.restart() }],
          });
          return { action: CloseAction.DoNotRestart, handled: true };
        },
      },
      middleware: {
        executeCommand: async (command, args, next) => {
          const handler = this.intercepts[command];
          const ref = handler && targetFromArguments(command, args);
          return handler && ref ? handler(ref) : next(command, args);
        },
        workspace: {
          configuration: async (params, token, next) => {
            const answers = await next(params, token);
            if (!Array.isArray(answers)) {
              return answers;
            }
            const ours = currentServerSettings() as unknown as Record<string, unknown>;
            return params.items.map((item, i) =>
              item.section === 'kernelevo' ? ours : item.section?.startsWith('kernelevo.') ? ours[item.section.slice('kernelevo.'.length)] ?? null : answers[i],
            );
          },
        },
      },
    };
  }

  /** Lenses and hovers may name server commands the server doesn't advertise: handle those here. */
  private registerUnadvertised(client: LanguageClient): void {
    const advertised = client.initializeResult?.capabilities.executeCommandProvider?.commands ?? [];
    for (const [command, handler] of Object.entries(this.intercepts)) {
      if (handler && !advertised.includes(command)) {
        this.localCommands.push(
          vscode.commands.registerCommand(command, (...args: unknown[]) => {
            const ref = targetFromArguments(command, args);
            return ref ? handler(ref) : undefined;
          }),
        );
      }
    }
  }

  /** Tells the running server about new settings. */
  async pushSettings(): Promise<void> {
    await this.languageClient?.sendNotification('workspace/didChangeConfiguration', { settings: { kernelevo: currentServerSettings() } });
  }

  private async doStop(): Promise<void> {
    const client = this.languageClient;
    this.languageClient = undefined;
    this.localCommands.splice(0).forEach((d) => d.dispose());
    if (client) {
      try {
        await client.stop(3000);
      } catch (error) {
        this.output.appendLine(`Stopping the server: ${messageOf(error)}`);
      }
    }
    this.setState('stopped');
  }

  /** "KernelEvo isn't installed for this Python": the exact command, and ways to fix it. */
  async offerInstall(interpreter: Interpreter, reason: string, force = true): Promise<void> {
    if (!force && this.offeredFor.has(interpreter.path)) {
      return;
    }
    this.offeredFor.add(interpreter.path);
    const folder = workspaceFolderPath();
    const source = folder && isKernelEvoCheckout(folder) ? folder : undefined;
    const install = installCommand(interpreter.path, source);
    const choice = await vscode.window.showWarningMessage(
      `KernelEvo can't start with ${interpreter.path} (${describeSource(interpreter.source)}): ${reason} Install it with: ${install.display}`,
      'Install in Terminal',
      'Copy Command',
      'Choose Interpreter',
    );
    if (choice === 'Install in Terminal') {
      const terminal = vscode.window.createTerminal({ name: 'KernelEvo install' });
      terminal.show();
      terminal.sendText(install.display);
      const done = await vscode.window.showInformationMessage('When the install in the terminal has finished, restart the KernelEvo server.', 'Restart Server');
      if (done) {
        await this.restart();
      }
    } else if (choice === 'Copy Command') {
      await vscode.env.clipboard.writeText(install.display);
    } else if (choice === 'Choose Interpreter') {
      if (vscode.extensions.getExtension('ms-python.python')) {
        await vscode.commands.executeCommand('python.setInterpreter');
      } else {
        await vscode.commands.executeCommand('workbench.action.openSettings', 'kernelevo.interpreter');
      }
    }
  }

  dispose(): void {
    this.pythonEvents?.dispose();
    void this.stop();
    this.stateEmitter.dispose();
  }
}
