/**
 * Errors reach the user once, with something to do about them; repeats only go to the log.
 * A server that crashes in a loop, or a failure reported both by the server
 * (`window/showMessage`) and by the request that failed, must not bury the editor.
 */

export type Level = 'error' | 'warning' | 'info';

export interface ErrorAction {
  title: string;
  run: () => unknown;
}

export interface ErrorSink {
  /** Shows a notification and resolves to the chosen button's title. */
  show(message: string, buttons: string[], level: Level): PromiseLike<string | undefined>;
  log(message: string): void;
}

export interface ReportOptions {
  /** Reports with the same key are one error; defaults to the normalised message. */
  key?: string;
  actions?: ErrorAction[];
  /** Extra text for the log only (stack, stderr tail). */
  detail?: string;
  level?: Level;
  /**
   * Background conditions (the server stopped) show once until `forget`; failures of
   * something the user just did may show again after this long. Default: once.
   */
  repeatAfterMs?: number;
}

/** Repeats of a user-triggered failure within this window are one notification. */
export const USER_REPEAT_MS = 10_000;

/** Numbers, ids, hex hashes and our own prefix vary between repeats of the same failure. */
export function errorKey(message: string): string {
  return message
    .split(/\r?\n/)[0]
    .replace(/^KernelEvo:\s*/i, '')
    .replace(/\b[0-9a-f]{8,}\b/gi, '#')
    .replace(/\d+(\.\d+)?/g, '#')
    .trim()
    .toLowerCase();
}

export class ErrorReporter {
  /** key → when it was last shown. */
  private readonly shown = new Map<string, number>();
  private recent: number[] = [];
  private serverTexts: { key: string; at: number }[] = [];

  constructor(
    private readonly sink: ErrorSink,
    private readonly showLog: () => void,
    private readonly now: () => number = Date.now,
    private readonly maxPerMinute = 3,
  ) {}

  /** Returns true when a notification was shown (false: only logged). */
  report(message: string, options: ReportOptions = {}): boolean {
    const level = options.level ?? 'error';
    this.sink.log(`[${level}] ${message}${options.detail ? `\n${options.detail}` : ''}`);
    const key = options.key ?? errorKey(message);
    const now = this.now();
    const last = this.shown.get(key);
    if (last !== undefined && (options.repeatAfterMs === undefined || now - last < options.repeatAfterMs)) {
      return false;
    }
    this.recent = this.recent.filter((t) => now - t < 60_000);
    if (this.recent.length >= this.maxPerMinute) {
      return false;
    }
    this.shown.set(key, now);
    this.recent.push(now);
    const actions = [...(options.actions ?? []), ...(level === 'info' ? [] : [{ title: 'Show Log', run: this.showLog }])];
    void Promise.resolve(this.sink.show(message, actions.map((a) => a.title), level)).then((choice) => {
      actions.find((a) => a.title === choice)?.run();
    });
    return true;
  }

  /** A `window/showMessage` from the server: deduplicated like ours, and remembered for `reportFailure`. */
  fromServer(text: string, level: Level): boolean {
    const key = errorKey(text);
    const now = this.now();
    this.serverTexts = [...this.serverTexts.filter((s) => now - s.at < USER_REPEAT_MS), { key, at: now }];
    return this.report(text, { level, key, repeatAfterMs: USER_REPEAT_MS });
  }

  /**
   * A failure of something the user just did, caused by `cause` (often the server's error
   * message). Not shown when the server has just said the same thing itself.
   */
  reportFailure(message: string, cause: string, options: Omit<ReportOptions, 'key' | 'repeatAfterMs'> = {}): boolean {
    const key = errorKey(cause) || errorKey(message);
    const now = this.now();
    if (this.serverTexts.some((s) => now - s.at < USER_REPEAT_MS && s.key.includes(key))) {
      this.sink.log(`[${options.level ?? 'warning'}] ${message} (the server already said so)`);
      return false;
    }
    return this.report(message, { level: 'warning', ...options, key, repeatAfterMs: USER_REPEAT_MS });
  }

  /** The condition behind `key` went away (e.g. the server restarted): show it again if it returns. */
  forget(key: string): void {
    this.shown.delete(key);
  }

  forgetAll(): void {
    this.shown.clear();
  }
}

/** A short message from anything thrown by a request or a child process. */
export function messageOf(error: unknown): string {
  if (error instanceof Error) {
    return error.message;
  }
  if (error && typeof error === 'object' && 'message' in error && typeof (error as { message: unknown }).message === 'string') {
    return (error as { message: string }).message;
  }
  return String(error);
}
