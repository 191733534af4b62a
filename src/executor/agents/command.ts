// The command agent: runs any agent CLI (`claude -p`, `codex exec`, `aider --message`, a script)
// in the workspace. The prompt goes on stdin or replaces `{prompt}` in the arguments; stdout and
// stderr stream into the transcript as they arrive; exit code 0 is success. Cancel and timeout
// stop the whole process group: SIGTERM, then SIGKILL after a grace period. At start-up the
// program is looked up on the PATH runs will get, so a misspelt name fails start-up, not each run.

import { accessSync, constants, statSync } from 'node:fs';
import { StringDecoder } from 'node:string_decoder';
import { delimiter, isAbsolute, resolve } from 'node:path';
import { showPath } from '../values/config-reader.js';
import {
  type AgentConfig,
  type AgentContext,
  type AgentEnvironment,
  type AgentResult,
  agentKind
} from './types.js';
import { agentCouldNotStart, agentExited, succeeded } from '../runs/outcomes.js';

const FLUSH_MS = 200;
const FLUSH_BYTES = 16 * 1024;
const STDERR_TAIL_LINES = 10;
/** Characters of one stderr line kept for the status message, and of the stream's end kept for them. */
const MAX_LINE_KEPT = 2000;
const KEPT_END_CHARS = 32 * 1024;
/** Output read but not yet stored, past which the child's pipe is paused. */
const MAX_QUEUED_BYTES = 1024 * 1024;
/** Variables every CLI needs to find itself and its home; the environment's `env` adds more. */
const BASE_VARIABLES = ['PATH', 'HOME', 'LANG', 'TMPDIR', 'TERM'];

export interface CommandAgentConfig extends AgentConfig {
  kind: 'command';
  /** The program and its arguments; `{prompt}` is replaced by the prompt. */
  command: string[];
  /** How the prompt reaches the program. */
  prompt: 'stdin' | 'arg';
}

/** The variables a run's program starts with: the base ones from the executor, then the listed ones. */
function runVariables(processEnv: NodeJS.ProcessEnv, listed: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of BASE_VARIABLES) if (processEnv[name] !== undefined) env[name] = processEnv[name]!;
  return Object.assign(env, listed);
}

function isExecutableFile(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/** Why `program` would not start in a run of this environment, or undefined when it would. */
function programProblem(
  environment: AgentEnvironment<CommandAgentConfig>,
  processEnv: NodeJS.ProcessEnv,
  program: string
): string | undefined {
  if (program.includes('{prompt}')) return undefined;
  if (program.includes('/')) {
    // A relative path is found in the workspace, which is made from the source: unknowable for a URL.
    if (!isAbsolute(program) && environment.remoteSource) return undefined;
    const path = resolve(environment.source, program);
    if (isExecutableFile(path)) return undefined;
    return `no executable file at ${path}; expected the path of an executable program`;
  }
  const listed = Object.fromEntries(
    environment.env.filter(name => processEnv[name] !== undefined).map(name => [name, processEnv[name]!])
  );
  const path = runVariables(processEnv, listed).PATH ?? '';
  // A relative directory on the PATH is found from the workspace, as for a relative program path.
  const base = environment.remoteSource ? '/' : environment.source;
  const dirs = path.split(delimiter).filter(dir => dir !== '');
  if (dirs.some(dir => isExecutableFile(resolve(base, dir, program)))) return undefined;
  return `not found on the PATH runs get (${path || 'empty'}); expected a program on that PATH or an absolute path`;
}

export const commandAgent = agentKind<CommandAgentConfig>({
  kind: 'command',
  summary: 'runs an agent CLI (e.g. claude -p) in the workspace; exit code 0 is success',
  keys: ['command', 'prompt'],

  parse(agent, at, read) {
    const command = read.strings(agent.command, `${at}.command`);
    if (command.length === 0) {
      read.problems.push(`${at}.command: expected the program and its arguments, e.g. [claude, -p]`);
    }
    const prompt = read.oneOf(agent.prompt, `${at}.prompt`, ['stdin', 'arg'] as const, 'stdin');
    return { kind: 'command', command, prompt };
  },

  describe: agent => `command: ${agent.command.join(' ')}`,

  program: { command: agent => agent.command },

  check(environment, at, processEnv) {
    const program = environment.agent.command[0];
    if (program === undefined) return [];
    const problem = programProblem(environment, processEnv, program);
    return problem ? [`${at}.command ${showPath(program)}: ${problem}`] : [];
  },

  async run(context: AgentContext<CommandAgentConfig>): Promise<AgentResult> {
    const { command, prompt: mode } = context.agent;
    const args = command.map(arg => (mode === 'arg' ? arg.replaceAll('{prompt}', context.prompt) : arg));
    if (mode === 'arg' && !command.some(arg => arg.includes('{prompt}'))) args.push(context.prompt);
    const [program, ...rest] = args;
    // AGENT_MODE: `plan` in a plan-mode turn (answer with a plan, change nothing), `orchestrate` in a
    // turn that may start child runs (its env holds AGENT_RUN_BASE_URL and AGENT_RUN_API_KEY), else `normal`.
    const env = {
      AGENT_RUN_ID: context.runId,
      ...runVariables(process.env, context.env),
      AGENT_MODE: context.mode ?? 'normal'
    };

    const streams = {
      stdout: new StreamRecorder('stdout', context),
      stderr: new StreamRecorder('stderr', context)
    };
    const result = await context.processes.run(program!, rest, {
      env,
      stdin: mode === 'stdin' ? context.prompt : undefined,
      onStdout: chunk => streams.stdout.push(chunk),
      onStderr: chunk => streams.stderr.push(chunk)
    });
    await Promise.all([streams.stdout.finish(), streams.stderr.finish()]);
    if (result.spawnError) {
      const why = result.spawnError.code === 'ENOENT' ? 'not found on PATH' : result.spawnError.message;
      return agentCouldNotStart(program!, why);
    }
    await context.record('exit', { exit_code: result.exitCode, signal: result.signal });
    if (result.exitCode === 0) return succeeded();
    return agentExited(result.exitCode, result.signal, streams.stderr.tail());
  }
});

/**
 * Batches a stream's chunks into transcript events and keeps its last lines. While more than
 * MAX_QUEUED_BYTES wait to be written, push() answers a promise and the child's pipe is paused
 * until the writes catch up: a fast printer waits for the store instead of filling memory.
 */
class StreamRecorder {
  private pending = '';
  private timer?: NodeJS.Timeout;
  private last = '';
  private writing: Promise<void> = Promise.resolve();
  private queued = 0;
  private readonly decoder = new StringDecoder('utf8');

  constructor(
    private readonly stream: 'stdout' | 'stderr',
    private readonly context: AgentContext<CommandAgentConfig>
  ) {}

  push(chunk: Buffer): Promise<void> | undefined {
    // The decoder keeps a character split between two chunks whole.
    const text = this.decoder.write(chunk);
    this.pending += text;
    // The end of the stream is all the status message needs: no line array per chunk.
    this.last = (this.last + text).slice(-KEPT_END_CHARS);
    if (this.pending.length >= FLUSH_BYTES) void this.flush();
    else this.timer ??= setTimeout(() => void this.flush(), FLUSH_MS);
    return this.queued > MAX_QUEUED_BYTES ? this.writing : undefined;
  }

  flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.pending !== '') {
      const text = this.pending;
      this.pending = '';
      this.queued += text.length;
      this.writing = this.writing
        .then(() => this.context.record('output', { stream: this.stream, text }))
        .finally(() => (this.queued -= text.length));
    }
    return this.writing;
  }

  /** The stream ended: what the decoder still holds, then everything pending. */
  finish(): Promise<void> {
    this.pending += this.decoder.end();
    return this.flush();
  }

  tail(): string {
    return this.last
      .trim()
      .split('\n')
      .slice(-STDERR_TAIL_LINES)
      .map(line => (line.length > MAX_LINE_KEPT ? line.slice(-MAX_LINE_KEPT) : line))
      .join('\n');
  }
}
