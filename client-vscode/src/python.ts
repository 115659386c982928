/**
 * Which Python runs the server, and whether KernelEvo is installed there. Mirrors the order
 * Python tool extensions use: our setting, else the Python extension's active environment,
 * else `python3`. A missing install becomes an offer with the exact command, never silence.
 */
import { execFile } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';

export type InterpreterSource = 'setting' | 'python-extension' | 'default';

export interface Interpreter {
  path: string;
  source: InterpreterSource;
}

/** The slice of the Python extension's exported API (`ms-python.python`) used here. */
export interface PythonExtensionApi {
  environments: {
    getActiveEnvironmentPath(resource?: unknown): { path: string } | undefined;
    resolveEnvironment(env: { path: string } | string): PromiseLike<{ executable: { uri?: { fsPath: string } } } | undefined>;
  };
}

export interface FindOptions {
  setting: string;
  /** Absent when the Python extension isn't installed, or in an untrusted workspace. */
  pythonExtension?: () => PromiseLike<PythonExtensionApi | undefined>;
  resource?: unknown;
  platform?: NodeJS.Platform;
}

export function defaultPython(platform: NodeJS.Platform = process.platform): string {
  return platform === 'win32' ? 'python' : 'python3';
}

export async function findInterpreter(options: FindOptions): Promise<Interpreter> {
  if (options.setting) {
    return { path: options.setting, source: 'setting' };
  }
  if (options.pythonExtension) {
    try {
      const api = await options.pythonExtension();
      const active = api?.environments.getActiveEnvironmentPath(options.resource);
      if (api && active?.path) {
        const resolved = await api.environments.resolveEnvironment(active);
        const executable = resolved?.executable.uri?.fsPath;
        if (executable) {
          return { path: executable, source: 'python-extension' };
        }
      }
    } catch {
      // The Python extension failed to answer: fall through to the default, as its users expect.
    }
  }
  return { path: defaultPython(options.platform), source: 'default' };
}

export function describeSource(source: InterpreterSource): string {
  switch (source) {
    case 'setting':
      return 'from the kernelevo.interpreter setting';
    case 'python-extension':
      return "the Python extension's active environment";
    default:
      return 'the default interpreter';
  }
}

/**
 * Run with the workspace as working folder; the first `sys.path` entry (that folder) is
 * dropped so a workspace with its own `server/` or `kernelevo/` folder can't stand in for ours.
 */
const PATH_GUARD = "import sys\nif sys.path and sys.path[0] in ('', '.'):\n    del sys.path[0]\n";

export const CHECK_SCRIPT =
  PATH_GUARD +
  `import json, importlib.util
out = {"python": sys.executable, "version": sys.version.split()[0]}
try:
    import kernelevo
    out["kernelevo"] = getattr(kernelevo, "__version__", "unknown")
    out["server"] = importlib.util.find_spec("kernelevo_server") is not None
    out["pygls"] = importlib.util.find_spec("pygls") is not None
except Exception as exc:
    out["error"] = type(exc).__name__ + ": " + str(exc)
print(json.dumps(out))
`;

/**
 * `kernelevo serve` with whatever the language client appends (it adds `--stdio` for
 * `TransportKind.stdio`, which the server accepts).
 */
export const SERVE_SCRIPT = PATH_GUARD + "from kernelevo.cli import main\nraise SystemExit(main(['serve', *sys.argv[1:]]))\n";

export interface CheckResult {
  ok: boolean;
  /** Version of the installed kernelevo package, when found. */
  version?: string;
  pythonVersion?: string;
  /** One sentence for the user when not ok. */
  reason?: string;
}

export function parseCheckOutput(stdout: string): CheckResult {
  const line = stdout.trim().split(/\r?\n/).pop() ?? '';
  let data: Record<string, unknown>;
  try {
    data = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return { ok: false, reason: 'the interpreter did not answer the KernelEvo check.' };
  }
  const pythonVersion = typeof data.version === 'string' ? data.version : undefined;
  const version = typeof data.kernelevo === 'string' ? data.kernelevo : undefined;
  if (pythonVersion && /^3\.[0-9]\./.test(pythonVersion)) {
    return { ok: false, pythonVersion, reason: `KernelEvo needs Python 3.10 or newer; this is ${pythonVersion}.` };
  }
  if (!version) {
    const detail = typeof data.error === 'string' && !data.error.startsWith('ModuleNotFoundError') ? ` (${data.error})` : '';
    return { ok: false, pythonVersion, reason: `the kernelevo package is not importable${detail}.` };
  }
  if (!data.server) {
    return { ok: false, version, pythonVersion, reason: `kernelevo ${version} is installed without its language server.` };
  }
  if (!data.pygls) {
    return { ok: false, version, pythonVersion, reason: `kernelevo ${version} is installed but pygls is missing.` };
  }
  return { ok: true, version, pythonVersion };
}

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
  /** Set when the program could not be started at all (e.g. ENOENT). */
  spawnError?: string;
}

export type Runner = (command: string, args: string[], cwd: string | undefined) => Promise<RunResult>;

export const runProcess: Runner = (command, args, cwd) =>
  new Promise((resolve) => {
    // A missing working folder would read as "python not found" (both are ENOENT).
    const where = cwd && fs.existsSync(cwd) ? cwd : undefined;
    const env = { ...process.env, PYTHONSAFEPATH: '1' };
    execFile(command, args, { cwd: where, env, timeout: 30_000, windowsHide: true }, (error, stdout, stderr) => {
      const err = error as (NodeJS.ErrnoException & { code?: number | string }) | null;
      if (err && typeof err.code === 'string') {
        resolve({ code: null, stdout: String(stdout), stderr: String(stderr), spawnError: `${err.code}: ${err.message}` });
        return;
      }
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout: String(stdout), stderr: String(stderr) });
    });
  });

export async function checkInterpreter(python: string, cwd: string | undefined, run: Runner = runProcess): Promise<CheckResult> {
  const result = await run(python, ['-c', CHECK_SCRIPT], cwd);
  if (result.spawnError) {
    return { ok: false, reason: `${python} could not be started (${result.spawnError.split(':')[0]}).` };
  }
  const parsed = parseCheckOutput(result.stdout);
  if (!parsed.ok && !result.stdout.trim() && result.stderr.trim()) {
    return { ok: false, reason: `${python} failed: ${result.stderr.trim().split(/\r?\n/).pop()}` };
  }
  return parsed;
}

/** How the server is started: `python -c <serve>` (same as `kernelevo serve`, minus the cwd hazard). */
export function serverCommand(python: string): { command: string; args: string[] } {
  return { command: python, args: ['-c', SERVE_SCRIPT] };
}

/** Quotes one argument for display and for a POSIX shell or PowerShell terminal. */
export function shellQuote(arg: string, platform: NodeJS.Platform = process.platform): string {
  if (/^[A-Za-z0-9_./:=@+-]+$/.test(arg)) {
    return arg;
  }
  if (platform === 'win32') {
    return `"${arg.replace(/"/g, '""')}"`;
  }
  return `'${arg.replace(/'/g, "'\\''")}'`;
}

export interface InstallCommand {
  args: string[];
  /** The exact line shown to the user and typed into the terminal. */
  display: string;
}

/** A checkout of KernelEvo is installed editable from source; anywhere else, from the package index. */
export function installCommand(python: string, sourceFolder: string | undefined, platform: NodeJS.Platform = process.platform): InstallCommand {
  const target = sourceFolder ? ['-e', sourceFolder] : ['kernelevo'];
  const args = ['-m', 'pip', 'install', ...target];
  const prefix = platform === 'win32' && /[\s"]/.test(python) ? '& ' : '';
  return { args, display: prefix + [python, ...args].map((a) => shellQuote(a, platform)).join(' ') };
}

/** True when `folder` is a KernelEvo source checkout (its pyproject names the project `kernelevo`). */
export function isKernelEvoCheckout(folder: string): boolean {
  try {
    const text = fs.readFileSync(path.join(folder, 'pyproject.toml'), 'utf8');
    return /^\s*name\s*=\s*["']kernelevo["']/m.test(text);
  } catch {
    return false;
  }
}
