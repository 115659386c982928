/** A scripted language server for the unit tests, plus the service bundle the commands need. */
import { ErrorReporter } from '../../src/errors';
import { JobBoard } from '../../src/jobs';
import { LspClient, WorkDoneValue } from '../../src/lsp';
import { VirtualTextStore } from '../../src/diff';
import { ApiKeys } from '../../src/secrets';
import type { Services } from '../../src/commands';
import { mock } from '../mock/vscode';

type Handler = (params: any, token: any) => unknown;

export class FakeClient implements LspClient {
  requests: { method: string; params: any; token: any }[] = [];
  handlers: Record<string, Handler> = {};
  progress = new Map<string | number, (value: WorkDoneValue) => void>();

  sendRequest<R>(method: string, params: unknown, token?: any): Promise<R> {
    this.requests.push({ method, params, token });
    const handler = this.handlers[method];
    if (!handler) {
      return Promise.reject(new Error(`unhandled ${method}`));
    }
    return Promise.resolve().then(() => handler(params, token) as R);
  }

  onProgress(token: string | number, handler: (value: WorkDoneValue) => void) {
    this.progress.set(token, handler);
    return { dispose: () => this.progress.delete(token) };
  }

  emit(token: string | number, value: WorkDoneValue): void {
    this.progress.get(token)?.(value);
  }

  sent(method: string) {
    return this.requests.filter((r) => r.method === method);
  }
}

export function memorySecrets() {
  const data = new Map<string, string>();
  return {
    data,
    get: async (k: string) => data.get(k),
    store: async (k: string, v: string) => void data.set(k, v),
    delete: async (k: string) => void data.delete(k),
  };
}

export function services(client: FakeClient | undefined) {
  const logged: string[] = [];
  const shownErrors: string[] = [];
  const secrets = memorySecrets();
  let restarts = 0;
  let tokens = 0;
  const s: Services = {
    server: {
      client: () => client,
      restart: async () => void restarts++,
      explainNotRunning: () => shownErrors.push('not running'),
    },
    board: new JobBoard(),
    keys: new ApiKeys(secrets),
    errors: new ErrorReporter({ show: async (m: string) => void shownErrors.push(m), log: (m) => logged.push(m) }, () => undefined),
    log: (m) => logged.push(m),
    showLog: () => undefined,
    proposals: new VirtualTextStore(),
    reports: new VirtualTextStore(),
    newToken: () => `tok-${++tokens}`,
  };
  return { s, logged, shownErrors, secrets, restarts: () => restarts };
}

export { mock };
