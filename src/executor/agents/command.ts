// The command agent: runs any agent CLI (`claude -p`, `codex exec`, `aider --message`, a script)
// in the workspace. The prompt goes on stdin or replaces `{prompt}` in the arguments; stdout and
// stderr stream into the transcript as they arrive; exit code 0 is success. Cancel and timeout
// stop the whole process group: SIGTERM, then SIGKILL after a grace period.

import type { Agent, AgentContext, AgentResult } from './types.js';
import { runInGroup } from './shell.js';

const FLUSH_MS = 200;
const FLUSH_BYTES = 16 * 1024;
const STDERR_TAIL_LINES = 10;
/** Variables every CLI needs to find itself and its home; the environment's `env` adds more. */
const BASE_VARIABLES = ['PATH', 'HOME', 'LANG', 'TMPDIR', 'TERM'];

export const commandAgent: Agent = {
  async run(context: AgentContext): Promise<AgentResult> {
    const { command = [], prompt: mode = 'stdin' } = context.environment.agent;
    const args = command.map(arg => (mode === 'arg' ? arg.replaceAll('{prompt}', context.prompt) : arg));
    if (mode === 'arg' && !command.some(arg => arg.includes('{prompt}'))) args.push(context.prompt);
    const [program, ...rest] = args;
    const env: Record<string, string> = { AGENT_RUN_ID: context.runId };
    for (const name of BASE_VARIABLES) if (process.env[name] !== undefined) env[name] = process.env[name]!;
    Object.assign(env, context.env);

    const streams = {
      stdout: new StreamRecorder('stdout', context),
      stderr: new StreamRecorder('stderr', context)
    };
    const result = await runInGroup(program!, rest, {
      cwd: context.workspace,
      env,
      signal: context.signal,
      stdin: mode === 'stdin' ? context.prompt : undefined,
      onStdout: chunk => streams.stdout.push(chunk),
      onStderr: chunk => streams.stderr.push(chunk)
    });
    await Promise.all([streams.stdout.flush(), streams.stderr.flush()]);
    if (result.spawnError) {
      const why = result.spawnError.code === 'ENOENT' ? 'not found on PATH' : result.spawnError.message;
      return {
        state: 'FAILED',
        error_code: 'agent_failed',
        status_message: `agent command ${JSON.stringify(program)} could not start: ${why}`
      };
    }
    await context.record('exit', { exit_code: result.exitCode, signal: result.signal });
    if (result.exitCode === 0) return { state: 'SUCCEEDED' };
    const how =
      result.exitCode === null ? `was stopped by ${result.signal}` : `exited with code ${result.exitCode}`;
    const tail = streams.stderr.tail();
    return {
      state: 'FAILED',
      error_code: 'agent_failed',
      status_message: `agent ${how}${tail ? `; last lines of stderr:\n${tail}` : ''}`
    };
  }
};

/** Batches a stream's chunks into transcript events and keeps its last lines. */
class StreamRecorder {
  private pending = '';
  private timer?: NodeJS.Timeout;
  private lines: string[] = [];
  private writing: Promise<void> = Promise.resolve();

  constructor(
    private readonly stream: 'stdout' | 'stderr',
    private readonly context: AgentContext
  ) {}

  push(chunk: Buffer): void {
    const text = chunk.toString('utf8');
    this.pending += text;
    // A chunk may end mid-line: its first part continues the last line of the chunk before.
    const [first = '', ...rest] = text.split('\n');
    const last = this.lines.pop() ?? '';
    this.lines = [...this.lines, last + first, ...rest].slice(-(STDERR_TAIL_LINES + 1));
    if (this.pending.length >= FLUSH_BYTES) void this.flush();
    else this.timer ??= setTimeout(() => void this.flush(), FLUSH_MS);
  }

  flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.pending !== '') {
      const text = this.pending;
      this.pending = '';
      this.writing = this.writing.then(() => this.context.record('output', { stream: this.stream, text }));
    }
    return this.writing;
  }

  tail(): string {
    return this.lines.join('\n').trim().split('\n').slice(-STDERR_TAIL_LINES).join('\n');
  }
}
