/**
 * What the editor knows about optimization jobs: the ones this window started (live, from
 * `$/progress`) merged with the server's own list (`kernelevo/jobs`), reduced to the status
 * bar's one line.
 */
import { isRunningState, JobInfo, targetLabel } from './protocol';

export interface JobView {
  /** Local key: the work-done token for jobs started here, `server:<jobId>` otherwise. */
  key: string;
  jobId?: string;
  runId?: string | null;
  uri: string;
  targetId: string;
  label: string;
  state: string;
  iteration?: number;
  bestSpeedup?: number | null;
  tokens?: number;
  costUsd?: number;
  message?: string;
  startedAt: number;
}

export interface ProgressFacts {
  iteration?: number;
  bestSpeedup?: number;
  tokens?: number;
  costUsd?: number;
}

/** Reads "iteration 3 · best 1.42x · 12k tokens · $0.12" (any subset, any order). */
export function parseProgressMessage(message: string | undefined): ProgressFacts {
  const facts: ProgressFacts = {};
  if (!message) {
    return facts;
  }
  const iteration = /iteration\s+(\d+)/i.exec(message);
  if (iteration) {
    facts.iteration = Number(iteration[1]);
  }
  const best = /best\s+([0-9]*\.?[0-9]+)\s*x/i.exec(message);
  if (best) {
    facts.bestSpeedup = Number(best[1]);
  }
  const tokens = /([0-9]*\.?[0-9]+)\s*([kKmM]?)\s*tokens/.exec(message);
  if (tokens) {
    const scale = { k: 1e3, m: 1e6 }[tokens[2].toLowerCase() as 'k' | 'm'] ?? 1;
    facts.tokens = Math.round(Number(tokens[1]) * scale);
  }
  const cost = /\$\s*([0-9]*\.?[0-9]+)/.exec(message);
  if (cost) {
    facts.costUsd = Number(cost[1]);
  }
  return facts;
}

export function formatSpeedup(speedup: number | null | undefined): string {
  return typeof speedup === 'number' && Number.isFinite(speedup) ? `${speedup.toFixed(2)}x` : '–';
}

export function formatTokens(tokens: number | undefined): string {
  if (!tokens) {
    return '0';
  }
  return tokens >= 1e6 ? `${(tokens / 1e6).toFixed(1)}M` : tokens >= 1e3 ? `${Math.round(tokens / 1e3)}k` : String(tokens);
}

type Listener = () => void;

export class JobBoard {
  private readonly jobs = new Map<string, JobView>();
  private readonly listeners: Listener[] = [];
  /** Best speedup of any job seen in this session, finished ones included. */
  private sessionBest: number | undefined;

  constructor(private readonly now: () => number = Date.now) {}

  onDidChange(listener: Listener): { dispose(): void } {
    this.listeners.push(listener);
    return { dispose: () => this.listeners.splice(this.listeners.indexOf(listener), 1) };
  }

  private changed(): void {
    for (const listener of [...this.listeners]) {
      listener();
    }
  }

  private noteBest(speedup: number | null | undefined): void {
    if (typeof speedup === 'number' && Number.isFinite(speedup) && (this.sessionBest === undefined || speedup > this.sessionBest)) {
      this.sessionBest = speedup;
    }
  }

  start(key: string, uri: string, targetId: string, label?: string): JobView {
    const job: JobView = { key, uri, targetId, label: label ?? targetLabel(targetId), state: 'running', startedAt: this.now() };
    this.jobs.set(key, job);
    this.changed();
    return job;
  }

  progress(key: string, message: string | undefined): void {
    const job = this.jobs.get(key);
    if (!job) {
      return;
    }
    const facts = parseProgressMessage(message);
    Object.assign(job, facts, message ? { message } : {});
    this.noteBest(facts.bestSpeedup);
    this.changed();
  }

  finish(key: string, state: string, result?: { jobId?: string; runId?: string; bestSpeedup?: number | null; tokens?: number; costUsd?: number }): void {
    const job = this.jobs.get(key);
    if (!job) {
      return;
    }
    job.state = state;
    if (result) {
      job.jobId = result.jobId ?? job.jobId;
      job.runId = result.runId ?? job.runId;
      if (result.bestSpeedup !== undefined) {
        job.bestSpeedup = result.bestSpeedup;
      }
      job.tokens = result.tokens ?? job.tokens;
      job.costUsd = result.costUsd ?? job.costUsd;
      this.noteBest(result.bestSpeedup);
    }
    this.changed();
  }

  /**
   * Folds in the server's list. A server job matches a local one on (uri, target) while both
   * run; unmatched server jobs (started from another window or a lens) are shown too.
   */
  sync(serverJobs: JobInfo[]): void {
    const seen = new Set<string>();
    for (const info of serverJobs) {
      const local = [...this.jobs.values()].find(
        (j) => j.jobId === info.jobId || (!j.jobId && !j.key.startsWith('server:') && j.uri === info.uri && j.targetId === info.targetId && isRunningState(j.state)),
      );
      const job = local ?? this.jobs.get(`server:${info.jobId}`) ?? this.start(`server:${info.jobId}`, info.uri, info.targetId);
      seen.add(job.key);
      job.jobId = info.jobId;
      job.runId = info.runId ?? job.runId;
      if (!(local && !isRunningState(local.state))) {
        job.state = info.state;
      }
      job.iteration = Math.max(job.iteration ?? 0, info.iteration ?? 0);
      if (info.bestSpeedup !== null && info.bestSpeedup !== undefined) {
        job.bestSpeedup = Math.max(job.bestSpeedup ?? 0, info.bestSpeedup);
      }
      job.tokens = Math.max(job.tokens ?? 0, info.tokens ?? 0);
      job.costUsd = Math.max(job.costUsd ?? 0, info.costUsd ?? 0);
      this.noteBest(info.bestSpeedup);
    }
    for (const job of this.jobs.values()) {
      if (job.key.startsWith('server:') && !seen.has(job.key) && isRunningState(job.state)) {
        job.state = 'ended';
      }
    }
    this.changed();
  }

  get(key: string): JobView | undefined {
    return this.jobs.get(key);
  }

  all(): JobView[] {
    return [...this.jobs.values()].sort((a, b) => b.startedAt - a.startedAt);
  }

  running(): JobView[] {
    return this.all().filter((j) => isRunningState(j.state));
  }

  best(): number | undefined {
    return this.sessionBest;
  }
}

export interface StatusView {
  text: string;
  tooltip: string;
  busy: boolean;
}

export function statusView(board: JobBoard): StatusView {
  const running = board.running();
  const best = board.best();
  const bestText = best !== undefined ? ` · best ${formatSpeedup(best)}` : '';
  if (running.length === 0) {
    return { text: `$(beaker) KernelEvo${bestText}`, tooltip: 'KernelEvo: no jobs running. Click to show jobs.', busy: false };
  }
  const noun = running.length === 1 ? 'job' : 'jobs';
  const lines = running.map((j) => `${j.label}: ${j.message ?? j.state}`);
  return {
    text: `$(sync~spin) KernelEvo: ${running.length} ${noun}${bestText}`,
    tooltip: ['KernelEvo jobs (click to show):', ...lines].join('\n'),
    busy: true,
  };
}

/** One line for a job in the jobs list. */
export function describeJob(job: JobView): { label: string; description: string; detail: string } {
  const parts = [job.state];
  if (job.iteration) {
    parts.push(`iteration ${job.iteration}`);
  }
  parts.push(`best ${formatSpeedup(job.bestSpeedup)}`);
  if (job.tokens) {
    parts.push(`${formatTokens(job.tokens)} tokens`);
  }
  if (job.costUsd) {
    parts.push(`$${job.costUsd.toFixed(2)}`);
  }
  const file = job.uri.split('/').pop() ?? job.uri;
  return { label: job.label, description: parts.join(' · '), detail: `${file}${job.runId ? ` · run ${job.runId}` : ''}` };
}
