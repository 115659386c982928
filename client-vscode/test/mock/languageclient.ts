/**
 * Stand-in for `vscode-languageclient/node` in the activation tests: records how the
 * extension builds and drives its client, and answers requests from a script.
 */
/* eslint-disable @typescript-eslint/no-explicit-any */

export enum State {
  Stopped = 1,
  Starting = 3,
  Running = 2,
}
export enum TransportKind {
  stdio = 0,
}
export enum CloseAction {
  DoNotRestart = 1,
  Restart = 2,
}
export enum ErrorAction {
  Continue = 1,
  Shutdown = 2,
}
export const WorkDoneProgress = { type: { method: '$/progress' } };

export const control = {
  instances: [] as LanguageClient[],
  advertised: ['kernelevo.optimize', 'kernelevo.cancel', 'kernelevo.showDiff', 'kernelevo.apply'] as string[],
  failStart: undefined as string | undefined,
  respond: (_method: string, _params: any): any => null,
  reset(): void {
    this.instances = [];
    this.advertised = ['kernelevo.optimize', 'kernelevo.cancel', 'kernelevo.showDiff', 'kernelevo.apply'];
    this.failStart = undefined;
    this.respond = () => null;
  },
};

export class LanguageClient {
  state = State.Stopped;
  readonly requests: { method: string; params: any }[] = [];
  readonly notifications: { method: string; params: any }[] = [];
  readonly handlers = new Map<string, (params: any) => unknown>();
  readonly protocol2CodeConverter = { asWorkspaceEdit: async (edit: any) => edit };
  initializeResult: any;

  constructor(readonly id: string, readonly name: string, readonly serverOptions: any, readonly clientOptions: any) {
    control.instances.push(this);
  }

  async start(): Promise<void> {
    if (control.failStart) {
      throw new Error(control.failStart);
    }
    this.initializeResult = { capabilities: { executeCommandProvider: { commands: [...control.advertised] } } };
    this.state = State.Running;
  }

  async stop(): Promise<void> {
    this.state = State.Stopped;
  }

  onNotification(method: string, handler: (params: any) => unknown) {
    this.handlers.set(method, handler);
    return { dispose: () => this.handlers.delete(method) };
  }

  async sendRequest(method: string, params: any): Promise<any> {
    this.requests.push({ method, params });
    return control.respond(method, params);
  }

  async sendNotification(method: string, params: any): Promise<void> {
    this.notifications.push({ method, params });
  }

  onProgress() {
    return { dispose() {} };
  }
}
