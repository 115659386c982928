/**
 * A recording stand-in for the `vscode` module, enough for the client's logic. Unit-test
 * bundles alias `vscode` to this file; tests script the user's answers through `mock`.
 */
/* eslint-disable @typescript-eslint/no-explicit-any */

type Listener<T> = (value: T) => unknown;

export class Disposable {
  constructor(private readonly fn: () => void = () => undefined) {}
  static from(...items: { dispose(): unknown }[]): Disposable {
    return new Disposable(() => items.forEach((i) => i.dispose()));
  }
  dispose(): void {
    this.fn();
  }
}

export class EventEmitter<T> {
  private listeners: Listener<T>[] = [];
  readonly event = (listener: Listener<T>) => {
    this.listeners.push(listener);
    return new Disposable(() => (this.listeners = this.listeners.filter((l) => l !== listener)));
  };
  fire(value: T): void {
    [...this.listeners].forEach((l) => l(value));
  }
  dispose(): void {
    this.listeners = [];
  }
}

export class CancellationError extends Error {
  constructor() {
    super('Canceled');
    this.name = 'Canceled';
  }
}

export class CancellationTokenSource {
  private readonly emitter = new EventEmitter<void>();
  readonly token = {
    isCancellationRequested: false,
    onCancellationRequested: (listener: Listener<void>) => this.emitter.event(listener),
  };
  cancel(): void {
    if (!this.token.isCancellationRequested) {
      this.token.isCancellationRequested = true;
      this.emitter.fire();
    }
  }
  dispose(): void {
    this.emitter.dispose();
  }
}

const enc = (s: string) => encodeURIComponent(s);

export class Uri {
  private constructor(
    readonly scheme: string,
    readonly authority: string,
    readonly path: string,
    readonly query: string,
    readonly fragment: string,
  ) {}
  static parse(value: string): Uri {
    const m = /^([a-zA-Z][\w+.-]*):(?:\/\/([^/?#]*))?([^?#]*)(?:\?([^#]*))?(?:#(.*))?$/.exec(value);
    if (!m) {
      throw new Error(`bad uri ${value}`);
    }
    const dec = (s: string | undefined) => decodeURIComponent(s ?? '');
    return new Uri(m[1], dec(m[2]), dec(m[3]), dec(m[4]), dec(m[5]));
  }
  static file(path: string): Uri {
    return new Uri('file', '', path, '', '');
  }
  static from(parts: { scheme: string; authority?: string; path?: string; query?: string; fragment?: string }): Uri {
    return new Uri(parts.scheme, parts.authority ?? '', parts.path ?? '', parts.query ?? '', parts.fragment ?? '');
  }
  with(change: { scheme?: string; authority?: string; path?: string; query?: string; fragment?: string }): Uri {
    return new Uri(
      change.scheme ?? this.scheme,
      change.authority ?? this.authority,
      change.path ?? this.path,
      change.query ?? this.query,
      change.fragment ?? this.fragment,
    );
  }
  get fsPath(): string {
    return this.path;
  }
  toString(): string {
    const authority = this.authority || this.scheme === 'file' ? `//${enc(this.authority)}` : '';
    const path = this.path.split('/').map(enc).join('/');
    return `${this.scheme}:${authority}${path}${this.query ? `?${enc(this.query)}` : ''}${this.fragment ? `#${enc(this.fragment)}` : ''}`;
  }
  toJSON(): string {
    return this.toString();
  }
}

export class Position {
  constructor(readonly line: number, readonly character: number) {}
}

export class Range {
  constructor(readonly start: Position, readonly end: Position) {}
}

export class Selection extends Range {
  constructor(readonly anchor: Position, readonly active: Position) {
    super(anchor, active);
  }
}

export class WorkspaceEdit {
  readonly edits: unknown[] = [];
}

export class MarkdownString {
  isTrusted: unknown = false;
  constructor(public value = '') {}
}

export enum ProgressLocation {
  SourceControl = 1,
  Window = 10,
  Notification = 15,
}

export enum StatusBarAlignment {
  Left = 1,
  Right = 2,
}

export interface Message {
  level: 'info' | 'warning' | 'error';
  message: string;
  items: string[];
}

export interface FakeDocument {
  uri: Uri;
  getText(): string;
  save(): Promise<boolean>;
  lineCount: number;
  lineAt(line: number): { text: string };
}

function fakeDocument(uri: Uri, text: string): FakeDocument {
  const lines = text.split('\n');
  const save = async () => (mock.saved.push(uri.toString()), true);
  return { uri, getText: () => text, save, lineCount: lines.length, lineAt: (i) => ({ text: lines[i] ?? '' }) };
}

/** Test-side controls and recordings. */
export const mock = {
  messages: [] as Message[],
  /** Picks the button for a message; default: dismiss. */
  answer: (_m: Message): string | undefined => undefined,
  quickPick: (_items: any[], _options?: any): any => undefined,
  inputBox: (_options: any): string | undefined => undefined,
  progress: [] as { options: any; reports: { message?: string; increment?: number }[]; cancel: CancellationTokenSource }[],
  executed: [] as { command: string; args: unknown[] }[],
  registered: new Map<string, (...args: any[]) => any>(),
  config: {} as Record<string, unknown>,
  configUpdates: [] as unknown[],
  documents: new Map<string, string>(),
  /** Files that exist on "disk" without being open documents. */
  existing: new Set<string>(),
  appliedEdits: [] as { edit: unknown; metadata: unknown }[],
  saved: [] as string[],
  applyEditResult: true,
  contentProviders: new Map<string, any>(),
  clipboard: '',
  terminals: [] as { name: string; sent: string[] }[],
  statusItems: [] as any[],
  closedTabs: [] as unknown[],
  tabs: [] as { input: unknown }[],
  extensions: new Map<string, any>(),
  reset(): void {
    this.messages = [];
    this.answer = () => undefined;
    this.quickPick = () => undefined;
    this.inputBox = () => undefined;
    this.progress = [];
    this.executed = [];
    this.registered.clear();
    this.config = {};
    this.configUpdates = [];
    this.documents.clear();
    this.existing.clear();
    this.appliedEdits = [];
    this.saved = [];
    this.applyEditResult = true;
    this.contentProviders.clear();
    this.clipboard = '';
    this.terminals = [];
    this.statusItems = [];
    this.closedTabs = [];
    this.tabs = [];
    this.extensions.clear();
    workspace.isTrusted = true;
    workspace.workspaceFolders = undefined;
    window.activeTextEditor = undefined;
  },
  /** Waits for pending `.then` chains on message promises. */
  async settle(): Promise<void> {
    for (let i = 0; i < 5; i++) {
      await new Promise((r) => setImmediate(r));
    }
  },
};

function show(level: Message['level']) {
  return (message: string, ...rest: any[]): Promise<string | undefined> => {
    const items = rest.filter((r) => typeof r === 'string');
    const m = { level, message, items };
    mock.messages.push(m);
    return Promise.resolve(mock.answer(m));
  };
}

export const window = {
  activeTextEditor: undefined as undefined | { document: FakeDocument; selection: Selection },
  showInformationMessage: show('info'),
  showWarningMessage: show('warning'),
  showErrorMessage: show('error'),
  showQuickPick: (items: any[], options?: any) => Promise.resolve(mock.quickPick(items, options)),
  showInputBox: (options: any) => Promise.resolve(mock.inputBox(options)),
  withProgress: async (options: any, task: (progress: any, token: any) => Promise<any>) => {
    const record = { options, reports: [] as any[], cancel: new CancellationTokenSource() };
    mock.progress.push(record);
    return task({ report: (r: any) => record.reports.push(r) }, record.cancel.token);
  },
  createStatusBarItem: () => {
    const item = { text: '', tooltip: '', command: '', name: '', visible: false, show() { item.visible = true; }, hide() { item.visible = false; }, dispose() {} };
    mock.statusItems.push(item);
    return item;
  },
  createOutputChannel: (name: string) => {
    const lines: string[] = [];
    return { name, lines, appendLine: (l: string) => lines.push(l), append: (l: string) => lines.push(l), show() {}, clear() {}, dispose() {} };
  },
  createTerminal: (options: { name: string }) => {
    const terminal = { name: options.name, sent: [] as string[], show() {}, sendText(t: string) { terminal.sent.push(t); }, dispose() {} };
    mock.terminals.push(terminal);
    return terminal;
  },
  showTextDocument: async (doc: unknown) => doc,
  tabGroups: {
    get all() {
      return [{ tabs: mock.tabs }];
    },
    close: async (tabs: unknown[]) => {
      mock.closedTabs.push(...tabs);
      return true;
    },
  },
};

const configurationEvents = new EventEmitter<any>();
const trustEvents = new EventEmitter<void>();

export const workspace = {
  isTrusted: true,
  workspaceFolders: undefined as undefined | { uri: Uri; name: string; index: number }[],
  getConfiguration: (section?: string) => ({
    get: <T>(key: string, fallback?: T): T | undefined => {
      const full = section ? `${section}.${key}` : key;
      return (full in mock.config ? mock.config[full] : fallback) as T | undefined;
    },
    update: async (key: string, value: unknown) => {
      mock.configUpdates.push({ key, value });
    },
  }),
  openTextDocument: async (uri: Uri) => {
    const text = mock.documents.get(uri.toString());
    if (text === undefined) {
      throw new Error(`no such document ${uri.toString()}`);
    }
    return fakeDocument(uri, text);
  },
  applyEdit: async (edit: unknown, metadata?: unknown) => {
    mock.appliedEdits.push({ edit, metadata });
    return mock.applyEditResult;
  },
  registerTextDocumentContentProvider: (scheme: string, provider: unknown) => {
    mock.contentProviders.set(scheme, provider);
    return new Disposable(() => mock.contentProviders.delete(scheme));
  },
  fs: {
    stat: async (uri: Uri) => {
      if (!mock.documents.has(uri.toString()) && !mock.existing.has(uri.toString())) {
        throw new Error(`EntryNotFound: ${uri.toString()}`);
      }
      return { type: 1, size: 0, ctime: 0, mtime: 0 };
    },
  },
  onDidChangeConfiguration: configurationEvents.event,
  onDidGrantWorkspaceTrust: trustEvents.event,
};

export const commands = {
  registerCommand: (id: string, fn: (...args: any[]) => any) => {
    if (mock.registered.has(id)) {
      throw new Error(`command '${id}' already exists`);
    }
    mock.registered.set(id, fn);
    return new Disposable(() => mock.registered.delete(id));
  },
  executeCommand: async (command: string, ...args: unknown[]) => {
    mock.executed.push({ command, args });
    const fn = mock.registered.get(command);
    return fn ? fn(...args) : undefined;
  },
};

export const env = {
  clipboard: {
    writeText: async (text: string) => {
      mock.clipboard = text;
    },
  },
};

export const extensions = {
  getExtension: (id: string) => mock.extensions.get(id),
};

export function fakeEditor(uri: string, text: string, line: number, character: number) {
  const parsed = Uri.parse(uri);
  mock.documents.set(parsed.toString(), text);
  const position = new Position(line, character);
  window.activeTextEditor = { document: fakeDocument(parsed, text), selection: new Selection(position, position) };
  return window.activeTextEditor;
}

/** Fires `workspace.onDidChangeConfiguration` for the given keys. */
export function changeConfiguration(...keys: string[]): void {
  configurationEvents.fire({ affectsConfiguration: (section: string) => keys.some((k) => k === section || k.startsWith(`${section}.`)) });
}

export function grantTrust(): void {
  workspace.isTrusted = true;
  trustEvents.fire();
}
