// A run's sandbox: made by the worker when the run starts, together with the run's spawner
// (spawn.ts) bound to it, which the worker hands to setup commands and to the agent kind: every
// process of a run is confined because there is no other way for a kind to start one.
// When the executor is root, the run's processes become its unprivileged host user (user.ts), whose
// the run's workspace, HOME and output folder are from the moment they are made.

import { accessSync, constants, existsSync } from 'node:fs';
import { delimiter, isAbsolute, join, relative, resolve } from 'node:path';
import type { SandboxConfig } from './config.js';
import { SANDBOX_HOME, bwrapArgs, bwrapProgram } from './bwrap.js';
import { RunCgroup, dataDirTag, limitsProblem } from './cgroup.js';
import { type ProxyGateway, type ProxyHandle, startProxy } from './proxy.js';
import { SURVIVOR_VARIABLE, recordGroup } from './processes.js';
import { type Confinement, RunProcesses } from './spawn.js';
import { type RunUser, dropTo } from './user.js';
import { type ImageBind, type ImageRoot, imageRootArgs } from './image-root.js';

/** How often a stopping run is looked at for processes to signal, and for its end. */
const STOP_POLL_MS = 100;

export interface RunSandboxOptions {
  runId: string;
  sandbox: SandboxConfig;
  dataDir: string;
  /** The executor's config file, hidden from the run. */
  configFile?: string;
  /** The workspace's own directory (writable). */
  workspace: string;
  /** Directories the workspace needs read-only (the source's object store). */
  read: string[];
  /** Directories of the run's own it may write besides the workspace (its output folder). */
  write?: string[];
  /** The host user the run's processes become (the executor is root); undefined: the executor's. */
  user?: RunUser;
  /** The run's own HOME on the host (shown as HOME inside, kept between its processes); else a tmpfs. */
  home?: string;
  /** The workspace read-only from the first process (RunSandbox.protectWorkspace makes it so later). */
  readOnlyWorkspace?: boolean;
  /**
   * An orchestrate turn's way to the executor's API: the run gets a proxy even when its network is
   * `none` (it then reaches the gateway host only). Never with `network: host`.
   */
  gateway?: ProxyGateway;
  /** The environment's image: the run sees its file system as `/` (image-root.ts). */
  image?: ImageRoot;
}

export interface Wrapped {
  program: string;
  args: string[];
  env: Record<string, string>;
}

/** How often a run's cgroup counters are read: past a limit, the whole run is stopped at once. */
const LIMIT_CHECK_MS = 250;

export class RunSandbox implements Confinement {
  private watch?: NodeJS.Timeout;
  private hit?: string;
  private cgroup?: RunCgroup;
  private cgroupMade = false;
  private wrapped = false;
  private readOnlyWorkspace: boolean;

  private constructor(
    private readonly options: RunSandboxOptions,
    private readonly proxy: ProxyHandle | undefined
  ) {
    this.readOnlyWorkspace = options.readOnlyWorkspace === true;
  }

  /**
   * Binds the workspace read-only for every process started from now on: a plan-mode turn's agent,
   * after the environment's setup wrote what it needed (each setup command's processes ended with
   * its own sandbox, so none of them keeps a writable view).
   */
  protectWorkspace(): void {
    this.readOnlyWorkspace = true;
  }

  /**
   * Sets up the run's proxy when it has a host:port list or a gateway to the executor; limits come
   * with its first process.
   */
  static async create(options: RunSandboxOptions): Promise<RunSandbox> {
    const { sandbox, gateway } = options;
    if (gateway && sandbox.network === 'host')
      throw new Error("an orchestrate turn needs a sandbox whose network is not the host's");
    const targets = Array.isArray(sandbox.network) ? sandbox.network : [];
    const proxy =
      Array.isArray(sandbox.network) || gateway
        ? await startProxy(targets, options.runId, options.user, gateway)
        : undefined;
    return new RunSandbox(options, proxy);
  }

  /** The run's cgroup, made when its first process starts (a run that starts none pays nothing). */
  private limits(): RunCgroup | undefined {
    if (this.cgroupMade) return this.cgroup;
    this.cgroupMade = true;
    const { sandbox } = this.options;
    const cgroup = RunCgroup.create(dataDirTag(this.options.dataDir), this.options.runId, {
      memoryBytes: sandbox.memoryBytes,
      processes: sandbox.processes
    });
    this.cgroup = cgroup;
    // A fork bomb held at the process limit, or a shell whose child the OOM killer took, would
    // otherwise go on until the run's timeout.
    if (cgroup)
      this.watch = setInterval(() => {
        if (this.hit) return;
        this.hit = cgroup.exceeded();
        if (this.hit) void cgroup.kill();
      }, LIMIT_CHECK_MS).unref();
    return cgroup;
  }

  /** Whether any process of the run was started (it may have written files since). */
  get started(): boolean {
    return this.wrapped;
  }

  /** The command line that runs `program args` confined; undefined when the program is not found. */
  wrap(program: string, args: string[], cwd: string, env: Record<string, string>): Wrapped | undefined {
    if (this.options.image) return this.wrapInImage(this.options.image, program, args, cwd, env);
    const resolved = findProgram(program, cwd, env.PATH ?? process.env.PATH ?? '');
    if (!resolved) return undefined;
    this.wrapped = true;
    const { sandbox } = this.options;
    const hide = [this.options.dataDir, process.env.HOME ?? '', this.options.configFile ?? ''].filter(
      Boolean
    );
    const read = [...sandbox.read, ...this.options.read];
    // An agent program outside the system directories (a script of the user's) is visible too;
    // one in the workspace already is (and is not bound again: the run may have made it a link).
    const system = resolved.startsWith('/usr/') || resolved.startsWith('/bin/');
    if (!system && !isInside(resolved, this.options.workspace)) read.push(resolved);
    const files: [string, string][] = this.proxy ? this.proxy.files : [];
    const confine = bwrapArgs({
      workspace: this.options.workspace,
      read,
      write: [...sandbox.write, ...(this.options.write ?? [])],
      hide,
      network: sandbox.network === 'host' ? 'host' : 'none',
      files,
      user: this.options.user,
      home: this.options.home,
      readOnlyWorkspace: this.readOnlyWorkspace
    });
    const command = this.proxy ? this.proxy.command(resolved, args) : [resolved, ...args];
    const user = this.options.user;
    const inner = user ? [...dropTo(user, SANDBOX_HOME), ...command] : command;
    return this.launch([bwrapProgram(), ...confine, '--chdir', cwd, '--', ...inner], env);
  }

  /**
   * How a confined process starts: bubblewrap's command line with the sandbox's variables, and, with
   * cgroups, a first process that joins the run's cgroups and then becomes bubblewrap (so all it
   * starts is counted).
   */
  private launch(bwrap: string[], env: Record<string, string>): Wrapped {
    const innerEnv: Record<string, string> = {
      ...env,
      HOME: SANDBOX_HOME,
      TMPDIR: '/tmp',
      ...(this.proxy?.env ?? {})
    };
    const cgroup = this.limits();
    if (!cgroup) return { program: bwrap[0]!, args: bwrap.slice(1), env: innerEnv };
    const join = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"';
    return {
      program: '/bin/sh',
      args: ['-c', join, 'sh', ...cgroup.procsFiles, '--', ...bwrap],
      env: innerEnv
    };
  }

  /**
   * The command line of a process of an image's run: sandbox 1 (the host's view, as in `wrap`) with
   * the image's root bound read-only, whose first process becomes the run's user and starts sandbox
   * 2 (image-root.ts) with the host's bwrap; the program is looked up on the image's PATH there.
   */
  private wrapInImage(
    image: ImageRoot,
    program: string,
    args: string[],
    cwd: string,
    env: Record<string, string>
  ): Wrapped {
    this.wrapped = true;
    const { sandbox } = this.options;
    const hide = [this.options.dataDir, process.env.HOME ?? '', this.options.configFile ?? ''].filter(
      Boolean
    );
    const read = [...sandbox.read, ...this.options.read];
    const write = [...sandbox.write, ...(this.options.write ?? [])];
    const confine = bwrapArgs({
      workspace: this.options.workspace,
      read: [...read, image.rootfs],
      write,
      hide,
      network: sandbox.network === 'host' ? 'host' : 'none',
      files: this.proxy ? this.proxy.files : [],
      user: this.options.user,
      home: this.options.home,
      readOnlyWorkspace: this.readOnlyWorkspace
    });
    const binds: ImageBind[] = [
      { path: SANDBOX_HOME, how: 'rw' },
      ...read.filter(path => existsSync(path)).map(path => ({ path: resolve(path), how: 'ro' as const })),
      ...write.filter(path => existsSync(path)).map(path => ({ path: resolve(path), how: 'rw' as const })),
      { path: resolve(this.options.workspace), how: this.readOnlyWorkspace ? 'ro' : 'rw' }
    ];
    // The executor's own variables stay its own: the image's Env may set PATH, LANG…, never where
    // the run's files, answer, conversation or orchestrate credential are.
    const own = [
      'HOME',
      'TMPDIR',
      ...Object.keys(this.proxy?.env ?? {}),
      ...Object.keys(env).filter(name => name.startsWith('AGENT_'))
    ];
    const user = this.options.user;
    const ids = user ?? { uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 };
    const inner = [bwrapProgram(), ...imageRootArgs(image, ids, binds, cwd, own), '--', program, ...args];
    const command = this.proxy ? this.proxy.command(inner[0]!, inner.slice(1)) : inner;
    const dropped = user ? [...dropTo(user, SANDBOX_HOME), ...command] : command;
    return this.launch([bwrapProgram(), ...confine, '--chdir', '/', '--', ...dropped], env);
  }

  /**
   * Stops a confined process: SIGTERM to the run's own processes (bubblewrap does not pass signals
   * on), then SIGKILL to bubblewrap's group after the grace period, which ends the whole sandbox.
   * Without a cgroup the run's processes cannot be told apart from outside: SIGTERM to bubblewrap
   * ends the sandbox at once.
   */
  stop(pid: number | undefined, graceMs: number): void {
    if (pid === undefined) return;
    const killGroup = () => {
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {
        // already gone
      }
      void this.cgroup?.kill();
    };
    if (!this.cgroup) {
      killGroup();
      return;
    }
    // A cancel may come while the sandbox is still starting its command: processes that appear
    // during the grace period get SIGTERM too, and once none of the run's own is left, bubblewrap
    // goes at once instead of after the whole grace period.
    const cgroup = this.cgroup;
    const signalled = new Set<number>();
    const started = Date.now();
    const tick = setInterval(() => {
      if (cgroup.signalAgents('SIGTERM', signalled) === 0 || Date.now() - started >= graceMs) {
        clearInterval(tick);
        killGroup();
      }
    }, STOP_POLL_MS);
    tick.unref();
    cgroup.signalAgents('SIGTERM', signalled);
  }

  /**
   * Bytes of files the run's processes deleted but keep open (the quota adds them to what `du`
   * sees); undefined when they hold too many open files to count. Zero without a cgroup.
   */
  deletedOpenBytes(): number | undefined {
    return this.cgroup ? this.cgroup.deletedOpenBytes() : 0;
  }

  /** The limit the run hit, as a sentence, or undefined. */
  exceeded(): string | undefined {
    this.hit ??= this.cgroup?.exceeded();
    return this.hit;
  }

  /** Stops whatever the run left behind and releases its limits and proxy. */
  async close(): Promise<void> {
    this.options.image?.release?.();
    clearInterval(this.watch);
    await this.cgroup?.destroy();
    await this.proxy?.close();
  }
}

function isInside(path: string, dir: string): boolean {
  const rel = relative(resolve(dir), resolve(path));
  return rel !== '' && !rel.startsWith('..') && !isAbsolute(rel);
}

function findProgram(program: string, cwd: string, path: string): string | undefined {
  const executable = (file: string) => {
    try {
      accessSync(file, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  };
  if (program.includes('/')) {
    const file = isAbsolute(program) ? program : join(cwd, program);
    return executable(file) ? file : undefined;
  }
  for (const dir of path.split(delimiter)) {
    if (!dir) continue;
    const file = join(dir, program);
    if (executable(file)) return file;
  }
  return undefined;
}

/** Warnings every run of this environment records in its transcript. */
export function runWarnings(sandbox: { enabled: boolean }): string[] {
  if (!sandbox.enabled)
    return [
      "this environment has `sandbox: off`: the run's processes run unconfined, as the executor's own user"
    ];
  const limits = limitsProblem();
  return limits ? [limits] : [];
}

/**
 * What the worker calls when a run's workspace is ready: the run's sandbox, the spawner every
 * process of the run goes through (bound to that sandbox and to the run's signal), and the
 * warnings the run records.
 */
export async function confineRun(
  options: RunSandboxOptions,
  run: {
    /** Aborted when the run is cancelled, times out or the executor stops. */
    signal: AbortSignal;
    /** Where the run's processes start unless told otherwise (the workspace's working directory). */
    cwd: string;
  }
): Promise<{ sandbox?: RunSandbox; processes: RunProcesses; warnings: string[] }> {
  const warnings = runWarnings(options.sandbox);
  const sandbox = options.sandbox.enabled ? await RunSandbox.create(options) : undefined;
  const processes = new RunProcesses({
    cwd: run.cwd,
    signal: run.signal,
    sandbox,
    record: pid => recordGroup(options.dataDir, options.runId, pid),
    unconfinedEnv:
      sandbox || !options.dataDir ? undefined : { [SURVIVOR_VARIABLE]: dataDirTag(options.dataDir) }
  });
  return { sandbox, processes, warnings };
}
