// The generic harness: runs one agent CLI (described by its HarnessSpec) for a run, in the run's
// sandbox and workspace, and turns its structured stream into the run's transcript as it arrives:
// assistant text, each tool call as an `action` with its `action_result`, file edits, the final
// answer. It writes the CLI's home files as the run's own user (never as the executor through a
// folder the run controls), adds up the usage the CLI reports into the run's request_usage, stops
// the CLI when its cost passes max_cost_usd or when its translator already knows the run failed,
// and ends a failed run with the CLI's own words and a distinct error code, secrets removed.

import { StringDecoder } from 'node:string_decoder';
import type { ErrorCode } from '../../../api/index.js';
import type { AgentContext, AgentResult } from '../types.js';
import type { HarnessAgentConfig } from './input.js';
import { harnessCommand, harnessInput, modelIdProblem, programOf } from './input.js';
import type { HarnessEvent, HarnessFailure, HarnessSpec, HarnessTranslator } from './cli-spec.js';
import type { ProcessResult } from '../../sandbox/spawn.js';
import { MAX_RESULT_CHARS } from './memory.js';
import { secretRedactor } from './redact.js';
import { saysNoKey, withKeyHint } from './failure-words.js';

/** Characters of a tool's input or output kept in the transcript. */
export const MAX_ACTION_CHARS = 16 * 1024;
/** Characters of a failed run's status message (the CLI's words can be as long as a stream line). */
const MAX_MESSAGE_CHARS = 8 * 1024;
/** Characters of the CLI's stderr end kept for a failure's message. */
const STDERR_TAIL_CHARS = 4 * 1024;
/** Longest stdout line read as one JSON value; a longer one is cut and skipped. */
const MAX_LINE_CHARS = 8 * 1024 * 1024;
/** Recorded events not yet stored, past which the CLI's pipe waits (backpressure). */
const MAX_PENDING = 64;
/** Variables every CLI needs besides those the environment lists. */
const BASE_VARIABLES = ['PATH', 'LANG', 'TERM', 'TZ'];

/** Counts as the service names them, plus token counts. */
export interface HarnessUsage {
  input_tokens: number;
  output_tokens: number;
  cache_read_tokens: number;
  cache_write_tokens: number;
  cost_usd?: number;
}

/**
 * Every string in an event, secrets replaced: the CLI chooses ids, names, paths and session ids as
 * freely as its text, so none of them may carry a secret into the transcript either.
 */
function redactAll(value: unknown, redact: (text: string) => string): unknown {
  if (typeof value === 'string') return redact(value);
  if (Array.isArray(value)) return value.map(item => redactAll(item, redact));
  if (value !== null && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [redact(k), redactAll(v, redact)]));
  return value;
}

/** `text` cut to `max` characters; `more` counts characters left out before it came here. */
function bound(text: string, max = MAX_ACTION_CHARS, more = 0): string {
  if (text.length <= max && more === 0) return text;
  return `${text.slice(0, max)}\n… (${Math.max(0, text.length - max) + more} more characters)`;
}

/** The service's request_usage fields, extended with the token counts. */
export function requestUsage(usage: HarnessUsage): Record<string, unknown> {
  const total = usage.input_tokens + usage.output_tokens + usage.cache_read_tokens + usage.cache_write_tokens;
  const out: Record<string, unknown> = {
    total_tokens: total,
    input_tokens: usage.input_tokens,
    output_tokens: usage.output_tokens,
    cache_read_tokens: usage.cache_read_tokens,
    cache_write_tokens: usage.cache_write_tokens
  };
  if (usage.cost_usd !== undefined) out.inference_cost_usd = Number(usage.cost_usd.toFixed(6));
  return out;
}

/** Runs the CLI of `spec` for one run. */
export async function runHarness(
  spec: HarnessSpec,
  context: AgentContext<HarnessAgentConfig>
): Promise<AgentResult> {
  // The CLI sees its HOME at the sandbox's path; without a sandbox, at the run's host folder.
  const home = context.processes.home ?? context.home ?? context.workspace;
  const input = harnessInput(context, home);
  // The model goes on the command line: one that could be read as an option never starts the CLI.
  const modelProblem = modelIdProblem(input.model, 'model');
  if (modelProblem) return failed('agent_model_not_found', modelProblem);
  const listed = { ...context.env };
  const cliEnv = spec.env(input, listed);
  const env = cliVariables(context, cliEnv, home);
  const secrets = secretsOf(listed, cliEnv, input.mcpServers);
  // Built once for the run: each string is then read once, however many secrets there are.
  const redact = secretRedactor(secrets);
  // The stderr kept is this much longer than what is shown, so a secret cut at its start is whole
  // when redacted, and only then is the tail cut to size.
  const stderrKept = STDERR_TAIL_CHARS + (secrets[0]?.length ?? 0);

  for (const [path, content] of Object.entries(spec.homeFiles(input))) {
    const failure = await writeHomeFile(context, env, `${home}/${path}`, content);
    if (failure) return failed('agent_crashed', redact(failure));
  }

  const { program, prefix } = cliProgram(spec, context);
  const stream = openStream(spec, context, redact, stderrKept);
  const result = await context.processes.run(program, [...prefix, ...spec.args(input)], {
    env,
    signal: stream.stopper.signal,
    stdin: spec.stdin(input),
    onStdout: chunk => readStdout(stream, chunk),
    onStderr: chunk => readStderr(stream, chunk)
  });
  readLine(stream, stream.partial + stream.decoder.end());
  await stream.writing;
  return outcomeOf(stream, result, program, listed);
}

/** The CLI's environment: the base variables from the executor, the spec's, and HOME. */
function cliVariables(
  context: AgentContext<HarnessAgentConfig>,
  cliEnv: Record<string, string>,
  home: string
): Record<string, string> {
  const base: Record<string, string> = {};
  for (const name of BASE_VARIABLES) if (process.env[name] !== undefined) base[name] = process.env[name]!;
  const env: Record<string, string> = { ...base, ...cliEnv, HOME: home };
  // Without a sandbox (whose /tmp is a tmpfs of the run's), the CLI's temporary files (Claude Code's
  // session folders and sockets) go in the turn's own folder, never in the machine's /tmp.
  if (context.tmp && context.processes.home === undefined) env.TMPDIR = context.tmp;
  return env;
}

/** The program that runs the CLI and the arguments before the spec's. */
function cliProgram(
  spec: HarnessSpec,
  context: AgentContext<HarnessAgentConfig>
): { program: string; prefix: string[] } {
  const command = harnessCommand(context.agent, spec);
  // In an image the CLI is the image's, as named (the host's node and scripts are not there).
  const [named = '', ...rest] = command;
  return context.image ? { program: named, prefix: rest } : programOf(command);
}

/** One run's CLI as its stream is read: what it recorded, used and answered so far, and how it stops. */
interface CliStream {
  spec: HarnessSpec;
  context: AgentContext<HarnessAgentConfig>;
  redact: (text: string) => string;
  translator: HarnessTranslator;
  /** Aborted to stop the CLI early, with `early` the failure that stopped it. */
  stopper: AbortController;
  early?: HarnessFailure;
  usage: HarnessUsage;
  costSeen: boolean;
  answered: boolean;
  skippedLine: boolean;
  /** Events recorded but not yet stored, and the chain that stores them in order. */
  pending: number;
  writing: Promise<void>;
  decoder: StringDecoder;
  /** Stdout read past its last newline. */
  partial: string;
  errDecoder: StringDecoder;
  stderrTail: string;
  stderrKept: number;
}

/** The reading state of a run's CLI, before it starts. */
function openStream(
  spec: HarnessSpec,
  context: AgentContext<HarnessAgentConfig>,
  redact: (text: string) => string,
  stderrKept: number
): CliStream {
  return {
    spec,
    context,
    redact,
    translator: spec.translator(),
    stopper: new AbortController(),
    usage: { input_tokens: 0, output_tokens: 0, cache_read_tokens: 0, cache_write_tokens: 0 },
    costSeen: false,
    answered: false,
    skippedLine: false,
    pending: 0,
    writing: Promise.resolve(),
    decoder: new StringDecoder('utf8'),
    partial: '',
    errDecoder: new StringDecoder('utf8'),
    stderrTail: '',
    stderrKept
  };
}

/** Stores an event in the run's transcript, secrets removed, after the ones before it. */
function store(stream: CliStream, kind: string, data: Record<string, unknown>): void {
  stream.pending++;
  const clean = redactAll(data, stream.redact) as Record<string, unknown>;
  stream.writing = stream.writing
    .then(() => stream.context.record(kind, clean))
    .finally(() => stream.pending--);
}

/** Records one of the translator's events (usage is added up, not recorded). */
function take(stream: CliStream, event: HarnessEvent): void {
  const { redact, spec } = stream;
  switch (event.type) {
    case 'text':
      if (event.text.trim() !== '') store(stream, 'message', { text: redact(event.text) });
      break;
    case 'action':
      store(stream, 'action', {
        id: event.id,
        name: event.name,
        // Redacted before it is JSON: a secret with a quote or a backslash is escaped there.
        input: bound(JSON.stringify(redactAll(event.input ?? null, redact)))
      });
      break;
    case 'action_result':
      store(stream, 'action_result', { id: event.id, ok: event.ok, output: bound(redact(event.output)) });
      break;
    case 'file_edit':
      store(stream, 'file', {
        path: relativePath(event.path, stream.context.workspace),
        change: 'modified',
        source: 'agent'
      });
      break;
    case 'final':
      // One answer per run (the stream's first), no longer than a result file's.
      if (stream.answered) break;
      stream.answered = true;
      store(stream, 'result', {
        text: bound(redact(event.text), MAX_RESULT_CHARS, event.dropped),
        source: spec.kind
      });
      break;
    case 'usage':
      addUsage(stream, event);
      break;
    case 'session':
      store(stream, 'agent_session', { harness: spec.kind, session_id: event.id });
      break;
  }
}

/** Adds a usage event's counts and cost to the run's. */
function addUsage(stream: CliStream, event: Extract<HarnessEvent, { type: 'usage' }>): void {
  const usage = stream.usage;
  usage.input_tokens += event.input_tokens;
  usage.output_tokens += event.output_tokens;
  usage.cache_read_tokens += event.cache_read_tokens ?? 0;
  usage.cache_write_tokens += event.cache_write_tokens ?? 0;
  if (event.cost_usd !== undefined) {
    stream.costSeen = true;
    usage.cost_usd = (usage.cost_usd ?? 0) + event.cost_usd;
  }
}

/** Stops the CLI; the first failure given is the run's. */
function stop(stream: CliStream, failure: HarnessFailure): void {
  stream.early ??= failure;
  stream.stopper.abort();
}

/** Reads one stdout line: its events recorded, then the CLI stopped if its cost or its translator says so. */
function readLine(stream: CliStream, line: string): void {
  if (line.trim() === '') return;
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    // Not part of the stream (a warning printed to stdout): kept as the CLI's output.
    store(stream, 'output', { stream: 'stdout', text: bound(stream.redact(line)) + '\n' });
    return;
  }
  try {
    for (const event of stream.translator.line(value)) take(stream, event);
  } catch (error) {
    // A line nested thousands deep overflows the stack of whatever walks it (the translator, the
    // secret removal, JSON.stringify). Thrown from the stdout handler it would end the executor
    // with every run; it is skipped instead, the first one with a note.
    if (!stream.skippedLine)
      store(stream, 'notice', {
        text: `a line of the ${stream.spec.kind} CLI's stream could not be read and was skipped (${(error as Error).message}); later ones are skipped without a note`
      });
    stream.skippedLine = true;
    return;
  }
  const max = stream.context.agent.max_cost_usd;
  const usage = stream.usage;
  if (max !== undefined && (usage.cost_usd ?? 0) > max)
    stop(stream, {
      code: 'budget_exceeded',
      message: `the run's model usage cost $${usage.cost_usd!.toFixed(4)}, over max_cost_usd $${max}`
    });
  const known = stream.translator.stopWith?.();
  if (known) stop(stream, known);
}

/** Splits stdout into lines as it comes; answers a promise while too many events wait to be stored. */
function readStdout(stream: CliStream, chunk: Buffer): Promise<void> | undefined {
  stream.partial += stream.decoder.write(chunk);
  let newline = stream.partial.indexOf('\n');
  while (newline >= 0) {
    readLine(stream, stream.partial.slice(0, newline));
    stream.partial = stream.partial.slice(newline + 1);
    newline = stream.partial.indexOf('\n');
  }
  if (stream.partial.length > MAX_LINE_CHARS) stream.partial = '';
  return stream.pending > MAX_PENDING ? stream.writing : undefined;
}

/** Keeps the end of stderr, for a failure's message. */
function readStderr(stream: CliStream, chunk: Buffer): void {
  stream.stderrTail = (stream.stderrTail + stream.errDecoder.write(chunk)).slice(-stream.stderrKept);
}

/** How the run ended, once the CLI has exited and its events are stored. */
function outcomeOf(
  stream: CliStream,
  result: ProcessResult,
  program: string,
  listed: Record<string, string>
): AgentResult {
  const { spec, usage } = stream;
  const measured =
    usage.input_tokens + usage.output_tokens > 0 || stream.costSeen ? requestUsage(usage) : undefined;
  const withUsage = (outcome: AgentResult): AgentResult =>
    measured ? { ...outcome, request_usage: measured } : outcome;

  if (result.spawnError) {
    const why = result.spawnError.code === 'ENOENT' ? 'not found' : result.spawnError.message;
    return failed(
      'agent_crashed',
      `${spec.kind} CLI ${JSON.stringify(program)} could not start: ${why}; install it with \`${spec.install}\` or set agent.command`
    );
  }
  if (stream.context.signal.aborted)
    return { state: 'FAILED', error_code: 'cancelled', status_message: 'stopped' };
  const failure = failureOf(stream, result);
  if (failure) {
    const hinted = withKeyHint(failure, spec.keyVariables, listed);
    return withUsage(failed(hinted.code, stream.redact(hinted.message)));
  }
  if (!stream.answered)
    return withUsage(failed('agent_crashed', `${spec.kind} ended without a final answer`));
  return withUsage({ state: 'SUCCEEDED' });
}

/** The run's failure: the one that stopped the CLI, else the translator's, else a non-zero exit's. */
function failureOf(stream: CliStream, result: ProcessResult): HarnessFailure | undefined {
  const shownTail = stream.redact(stream.stderrTail).slice(-STDERR_TAIL_CHARS);
  let failure = stream.early ?? stream.translator.finish(result.exitCode, shownTail);
  if (!failure && result.exitCode !== 0) {
    const how =
      result.exitCode === null ? `was stopped by ${result.signal}` : `exited with code ${result.exitCode}`;
    const tail = shownTail.trim();
    const message = `${stream.spec.kind} ${how}${tail ? `: ${tail}` : ''}`;
    failure = { code: 'agent_crashed', message };
  }
  // A CLI with no key says it is not logged in (Claude Code): that is a key problem, not a crash.
  if (failure?.code === 'agent_crashed' && saysNoKey(failure.message))
    failure = { code: 'agent_auth_failed', message: failure.message };
  return failure;
}

/** A failure; its message (the CLI's own words, secrets already removed) is cut to a status's size. */
function failed(code: ErrorCode, message: string): AgentResult {
  return { state: 'FAILED', error_code: code, status_message: bound(message, MAX_MESSAGE_CHARS) };
}

/** The values no event, log or message may show: listed variables, the CLI's, MCP servers' env and headers. */
function secretsOf(
  listed: Record<string, string>,
  cliEnv: Record<string, string>,
  mcp: Record<string, { env?: Record<string, string>; headers?: Record<string, string> }> | undefined
): string[] {
  // An orchestrate turn's environment id is a name, not a secret (its AGENT_RUN_API_KEY is one).
  const values = [
    ...Object.entries(listed)
      .filter(([name]) => name !== 'AGENT_RUN_ENVIRONMENT')
      .map(([, value]) => value),
    ...Object.values(cliEnv)
  ];
  for (const server of Object.values(mcp ?? {}))
    values.push(...Object.values(server.env ?? {}), ...Object.values(server.headers ?? {}));
  // Short values (a port, `1`) are settings, not secrets, and would blank out ordinary text.
  const secrets = values.filter(value => value.length >= 8 && !/^(https?:\/\/|\/)/.test(value));
  return [...new Set(secrets)].sort((a, b) => b.length - a.length);
}

function relativePath(path: string, workspace: string): string {
  const prefix = workspace.endsWith('/') ? workspace : `${workspace}/`;
  return path.startsWith(prefix) ? path.slice(prefix.length) : path;
}

/**
 * Writes one file of the CLI's home as the run's own user, inside its sandbox: a link the run left
 * in its home can then reach nothing the run could not write anyway. The content goes on stdin.
 */
async function writeHomeFile(
  context: AgentContext<HarnessAgentConfig>,
  env: Record<string, string>,
  path: string,
  content: string
): Promise<string | undefined> {
  let errors = '';
  const script = 'umask 077 && mkdir -p -- "$(dirname -- "$1")" && cat > "$1"';
  const result = await context.processes.run('/bin/sh', ['-c', script, 'sh', path], {
    env,
    stdin: content,
    onStderr: chunk => void (errors += chunk.toString('utf8'))
  });
  if (result.exitCode === 0) return undefined;
  return `could not write ${path} in the run's home: ${errors.trim() || result.spawnError?.message || `exit ${result.exitCode}`}`;
}
