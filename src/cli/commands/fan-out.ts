// `agent-run run --fan-out FILE` (or `-` for standard input): one run per item of a YAML list (the
// form the action's `fan-out` input takes, read by the same parser), at most --max-parallel in flight, all followed together.
// One line on stderr as each run ends, then the table (or, with --json, the gathered records) on
// stdout, and the exit code --require decides. Each item's create carries an idempotency key made
// from the file's path and the item's request, so running the same file again finds the same runs
// instead of starting more. Ctrl-C or SIGTERM cancels every run this command created.

import { createHash } from 'node:crypto';
import { readFileSync, realpathSync } from 'node:fs';
import { basename, dirname, extname, join, resolve } from 'node:path';
import {
  AbortError,
  type AgentRunClient,
  type CreateRunRequest,
  IDEMPOTENCY_KEY_FORM,
  type Run,
  type SchemaCheck,
  artifactsOf,
  finalAnswer,
  formatDuration,
  isTerminalState,
  isUnsupported,
  isValidIdempotencyKey,
  structuredOutput,
  table
} from '../../client/index.js';
import type { RunMode } from '../../api/run.js';
import { FAN_OUT_FORM, type FanOutItemInput, MAX_PARALLEL, parseFanOut } from '../../client/fan-out-items.js';
import { CliError, EXIT, usage } from '../exit.js';
import type { Terminal } from '../terminal.js';
import { visible } from '../visible.js';
import { counted } from '../../common/plural.js';

/** About 15 s of backoff before a create gives up; the idempotency key makes the retries safe. */
const CREATE_RETRIES = 5;
/** Characters of a title or an answer's first line the table shows. */
const CELL = 60;
/** Most `metadata` pairs a run carries (the service's limit), fan_out and fan_out_index among them. */
const MAX_METADATA = 20;

/** What `run` read from its command line, the defaults of every item. */
export interface FanOutDefaults {
  /** The prompt given as an argument, with --prompt-file or on standard input, if any. */
  prompt?: string;
  environment?: string;
  /** Where the environment came from, for messages (`--environment`, `AGENT_RUN_ENVIRONMENT`). */
  environmentSource?: string;
  config: Record<string, unknown>;
  title?: string;
  mode?: RunMode;
  metadata?: Record<string, string>;
  parent?: string;
  /** The schema's request, appended to every prompt (`--output-schema`). */
  schemaRequest?: string;
  schema?: (value: unknown) => SchemaCheck;
}

export interface FanOutOptions {
  /** The list's file, or `-` for standard input. */
  file: string;
  /** The list's text when it came from standard input (`--fan-out -`). */
  stdin?: string;
  maxParallel: number;
  require: 'all' | 'any';
  idempotencyKey?: string;
  timeoutMs: number;
  onBlocked: 'fail' | 'wait';
  json: boolean;
}

/** One item's create request and key. */
interface Item {
  index: number;
  title?: string;
  request: CreateRunRequest;
  key: string;
}

type Conclusion = 'succeeded' | 'failed' | 'timed_out' | 'blocked' | 'cancelled' | 'not_started';

interface ItemEnd {
  item: Item;
  runId?: string;
  run?: Run;
  conclusion?: Conclusion;
  startedAt?: number;
  durationMs?: number;
  answer?: string;
  structured?: Record<string, unknown> | null;
  structuredProblem?: string;
  /** Why the run was never created or followed. */
  problem?: string;
}

/** `--max-parallel N`: 1–20, default 4 (the action's `max-parallel`). */
export function maxParallelOption(value: string | undefined): number {
  const text = (value ?? '4').trim();
  const n = /^\d{1,3}$/.test(text) ? Number(text) : 0;
  if (n < 1 || n > MAX_PARALLEL)
    throw usage(`--max-parallel ${JSON.stringify(value)}: expected a whole number from 1 to ${MAX_PARALLEL}`);
  return n;
}

/** `--require all|any`: default all (the action's `fan-out-require`). */
export function requireOption(value: string | undefined): 'all' | 'any' {
  const choice = (value ?? 'all').trim().toLowerCase();
  if (choice !== 'all' && choice !== 'any')
    throw usage(`--require ${JSON.stringify(value)}: expected all or any`);
  return choice;
}

/** `--idempotency-key KEY`: each item's key is KEY-<index>. */
export function idempotencyKeyOption(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  // The longest index suffix is `-49`.
  if (!isValidIdempotencyKey(`${value}-49`))
    throw usage(
      `--idempotency-key ${JSON.stringify(value.slice(0, 80))}: expected ${IDEMPOTENCY_KEY_FORM} (252 at most: -<index> is added per item)`
    );
  return value;
}

/**
 * The items of the file as create requests: each item's fields over the command line's. Every
 * problem (the file, an item, a field) is named with the form expected, all at once, before any
 * run exists.
 */
export function readItems(options: FanOutOptions, defaults: FanOutDefaults): Item[] {
  const { text, path } = readList(options);
  const problems: string[] = [];
  const fields = parseFanOut(text, problems);
  if (problems.length === 0 && fields.length === 0)
    problems.push(`fan-out is empty: expected ${FAN_OUT_FORM}`);
  const name = fanOutName(path);
  const items: Item[] = [];
  fields.forEach((item, index) => {
    const read = readItem(item, index, { options, defaults, path, name, problems });
    if (read) items.push(read);
  });
  if (problems.length > 0) {
    const shown = problems.slice(0, 20).map(problem => `  ${problem}`);
    if (problems.length > 20) shown.push(`  … and ${problems.length - 20} more`);
    throw usage(`--fan-out ${JSON.stringify(options.file)}: no run was started:\n${shown.join('\n')}`);
  }
  return items;
}

/** The list's text and the path it stands for (standard input stands in the working directory). */
function readList(options: FanOutOptions): { text: string; path: string } {
  const { file } = options;
  if (options.stdin !== undefined) {
    // From standard input: a prompt-file is relative to the working directory, and the runs'
    // fan_out metadata is `stdin`.
    return { text: options.stdin, path: join(process.cwd(), 'stdin') };
  }
  try {
    const text = readFileSync(file, 'utf8');
    return { text, path: realpathSync(file) };
  } catch (error) {
    throw usage(
      `--fan-out ${JSON.stringify(file)}: cannot read it (${(error as NodeJS.ErrnoException).code})`
    );
  }
}

/** What reading one item needs: the command line's options and defaults, the list's path and name. */
interface ItemReading {
  options: FanOutOptions;
  defaults: FanOutDefaults;
  path: string;
  /** The runs' `fan_out` metadata. */
  name: string;
  problems: string[];
}

/** One item's create request and key; undefined when it has problems (added to `problems`). */
function readItem(item: FanOutItemInput, index: number, reading: ItemReading): Item | undefined {
  const { options, defaults, path, name, problems } = reading;
  const at = `fan-out[${index}]`;
  const before = problems.length;
  const prompt = itemPrompt(item, at, defaults, path, problems);
  const config = { ...defaults.config, ...(item.config ?? {}) };
  const environment = itemEnvironment(item, at, defaults, config, problems);
  const metadata = { ...defaults.metadata, fan_out: name, fan_out_index: String(index) };
  if (Object.keys(metadata).length > MAX_METADATA)
    problems.push(
      `--metadata: ${Object.keys(metadata).length - 2} keys given; expected at most ${MAX_METADATA - 2} with --fan-out (it adds fan_out and fan_out_index)`
    );
  if (problems.length > before) return undefined;
  const title = item.title ?? defaults.title;
  const mode = item.mode ?? defaults.mode;
  const request: CreateRunRequest = {
    prompt: `${prompt!}${defaults.schemaRequest ?? ''}`,
    config: { ...config, environment_id: (environment as string).trim() },
    ...(title ? { title } : {}),
    ...(mode ? { mode } : {}),
    metadata,
    ...(defaults.parent ? { parent_run_id: defaults.parent } : {})
  };
  const key =
    options.idempotencyKey !== undefined
      ? `${options.idempotencyKey}-${index}`
      : `cli-fan-out-${createHash('sha256')
          .update([path, String(index), JSON.stringify(request)].join('\n'))
          .digest('hex')
          .slice(0, 40)}`;
  return { index, ...(title ? { title } : {}), request, key };
}

/** An item's prompt: its own, its prompt-file's (relative to the list's folder), or PROMPT. */
function itemPrompt(
  item: FanOutItemInput,
  at: string,
  defaults: FanOutDefaults,
  path: string,
  problems: string[]
): string | undefined {
  let prompt = item.prompt ?? defaults.prompt;
  if (item['prompt-file'] !== undefined) {
    // Relative to the list's own folder, so the list works from any working directory.
    const promptPath = resolve(dirname(path), item['prompt-file']);
    try {
      prompt = readFileSync(promptPath, 'utf8');
      if (prompt.trim() === '')
        problems.push(
          `${at}.prompt-file ${JSON.stringify(item['prompt-file'])}: the file is empty; expected the prompt text`
        );
    } catch (error) {
      problems.push(
        `${at}.prompt-file ${JSON.stringify(item['prompt-file'])}: cannot read ${promptPath} (${(error as NodeJS.ErrnoException).code}); expected a file relative to the list's folder`
      );
    }
  } else if (prompt === undefined || prompt.trim() === '') {
    problems.push(
      `${at}: prompt is empty: set the item's prompt or prompt-file, or give PROMPT to every item`
    );
  }
  return prompt;
}

/** An item's environment: its own environment-id, --environment or the config's, agreeing with the config. */
function itemEnvironment(
  item: FanOutItemInput,
  at: string,
  defaults: FanOutDefaults,
  config: Record<string, unknown>,
  problems: string[]
): unknown {
  const own = item['environment-id']?.trim();
  const environment = own ?? defaults.environment?.trim() ?? config.environment_id;
  if (typeof environment !== 'string' || environment.trim() === '') {
    problems.push(
      `${at}: no environment: set the item's environment-id, pass --environment ID or set AGENT_RUN_ENVIRONMENT`
    );
  } else if (config.environment_id !== undefined && config.environment_id !== environment.trim()) {
    const source =
      own !== undefined ? `${at}.environment-id` : (defaults.environmentSource ?? '--environment');
    problems.push(
      `${at}: config.environment_id ${JSON.stringify(config.environment_id)} differs from ${source} ${JSON.stringify(environment)}: set it in one place`
    );
  }
  return environment;
}

/** The `fan_out` metadata of the runs: the list's file name without its extension. */
function fanOutName(path: string): string {
  const name = basename(path, extname(path)).slice(0, 256);
  return name === '' ? 'fan-out' : name;
}

/** What each item's run shares with the others: the client, the options, the deadline and the count of ends. */
interface FanOutRun {
  client: AgentRunClient;
  terminal: Terminal;
  options: FanOutOptions;
  defaults: FanOutDefaults;
  deadline: number;
  /** Fires at Ctrl-C or SIGTERM. */
  interrupted: AbortSignal;
  /** Items ended so far (for the `[n/N]` of each line), and how many there are. */
  ended: number;
  total: number;
}

export async function runFanOut(
  client: AgentRunClient,
  terminal: Terminal,
  items: Item[],
  options: FanOutOptions,
  defaults: FanOutDefaults
): Promise<number> {
  const startedAt = Date.now();
  const interrupted = new AbortController();
  const onSignal = () => interrupted.abort(new Error('interrupted'));
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const ends: ItemEnd[] = items.map(item => ({ item }));
  terminal.note(
    `Fan-out: ${counted(items.length, 'run')}, at most ${options.maxParallel} at once (--require ${options.require}).`
  );
  const step: FanOutRun = {
    client,
    terminal,
    options,
    defaults,
    deadline: startedAt + options.timeoutMs,
    interrupted: interrupted.signal,
    ended: 0,
    total: items.length
  };

  let next = 0;
  const worker = async () => {
    while (next < ends.length) await runItem(step, ends[next++]!);
  };
  try {
    await Promise.all(Array.from({ length: Math.min(options.maxParallel, ends.length) }, worker));
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
  if (interrupted.signal.aborted) await cancelAll(client, terminal, ends);

  if (options.json)
    terminal.json(
      ends.map(end => jsonEntry(end, defaults.schema !== undefined)),
      2
    );
  else terminal.out(endTable(ends, terminal.raw ? text => text : visible));
  return verdict(terminal, ends, options, startedAt, interrupted.signal.aborted);
}

/** One item: creates its run (unless the fan-out already ended), follows it and prints how it ended. */
async function runItem(step: FanOutRun, end: ItemEnd): Promise<void> {
  const { client, terminal, interrupted } = step;
  const name = nameOf(end.item);
  if (interrupted.aborted || Date.now() >= step.deadline) {
    end.conclusion = 'not_started';
    end.problem = 'not started: the fan-out ended first';
    return;
  }
  end.startedAt = Date.now();
  const blocked = new AbortController();
  try {
    // Never aborted: a create cut off halfway could leave a run this command knows nothing of.
    const created = await client.runs.create(end.item.request, {
      idempotencyKey: end.item.key,
      maxRetries: CREATE_RETRIES
    });
    end.runId = created.run_id;
    terminal.note(`${name}: run ${end.runId}.`);
    if (interrupted.aborted) throw new Error('interrupted');
    await followItem(step, end, name, blocked);
  } catch (error) {
    if (error instanceof AbortError || interrupted.aborted || blocked.signal.aborted) {
      end.conclusion = blocked.signal.aborted ? 'blocked' : 'cancelled';
    } else {
      end.conclusion = 'failed';
      end.problem = error instanceof Error ? error.message : String(error);
    }
  } finally {
    end.durationMs = Date.now() - end.startedAt;
    if (end.conclusion !== 'cancelled')
      terminal.note(`[${++step.ended}/${step.total}] ${name}: ${describeEnd(end)}`);
  }
}

/** Waits for an item's run until the deadline (a BLOCKED one ends the wait with --on-blocked fail), then reads its answer. */
async function followItem(
  step: FanOutRun,
  end: ItemEnd,
  name: string,
  blocked: AbortController
): Promise<void> {
  const { client, terminal } = step;
  const result = await client.runs.wait(end.runId!, {
    timeoutMs: Math.max(0, step.deadline - Date.now()),
    signal: AbortSignal.any([step.interrupted, blocked.signal]),
    onStateChange: run => {
      end.run = run;
      if (run.state === 'BLOCKED') {
        const link = run.session_link ? ` Approve or answer it at ${run.session_link}` : '';
        terminal.warn(
          `${name}: run ${end.runId} is BLOCKED: it waits for a person's input or approval.${link}`
        );
        if (step.options.onBlocked === 'fail') blocked.abort(new Error('blocked'));
      }
    }
  });
  end.run = result.run ?? end.run;
  end.conclusion =
    result.outcome === 'timed_out' ? 'timed_out' : end.run?.state === 'SUCCEEDED' ? 'succeeded' : 'failed';
  if (end.run?.state === 'SUCCEEDED') await readAnswer(client, end, step.defaults);
}

/** The fan-out's exit code by --require, said on stderr; a failed fan-out throws it as a CliError. */
function verdict(
  terminal: Terminal,
  ends: ItemEnd[],
  options: FanOutOptions,
  startedAt: number,
  interrupted: boolean
): number {
  const succeeded = ends.filter(end => end.conclusion === 'succeeded').length;
  const met = options.require === 'all' ? succeeded === ends.length : succeeded > 0;
  const count = `${succeeded} of ${counted(ends.length, 'run')} succeeded (--require ${options.require}) in ${formatDuration(Date.now() - startedAt)}`;
  if (interrupted) {
    terminal.note(`Interrupted: ${count}.`);
    return EXIT.interrupted;
  }
  if (met) {
    terminal.note(`Fan-out succeeded: ${count}.`);
    return EXIT.ok;
  }
  const has = (conclusion: Conclusion) => ends.some(end => end.conclusion === conclusion);
  const code = has('timed_out') ? EXIT.timedOut : has('blocked') ? EXIT.blocked : EXIT.failed;
  if (has('timed_out') || has('blocked')) {
    const left = ends.filter(end => end.conclusion === 'timed_out' || end.conclusion === 'blocked');
    terminal.note(`Still going: ${left.map(end => end.runId).join(', ')} (agent-run cancel ID stops one).`);
  }
  throw new CliError(`fan-out failed: ${count}`, code);
}

/** The answer of a run that succeeded, and its structured output when --output-schema asks for one. */
async function readAnswer(client: AgentRunClient, end: ItemEnd, defaults: FanOutDefaults): Promise<void> {
  try {
    end.answer = finalAnswer(await client.runs.conversation(end.runId!));
  } catch (error) {
    if (!isUnsupported(error)) throw error;
  }
  if (!defaults.schema) return;
  const checked = structuredOutput(end.answer, defaults.schema);
  if (checked.ok) end.structured = checked.value;
  else {
    end.structured = null;
    end.structuredProblem = checked.reason;
    end.conclusion = 'failed';
  }
}

/** Ctrl-C or SIGTERM: every run this command created that is still going is cancelled. */
async function cancelAll(client: AgentRunClient, terminal: Terminal, ends: ItemEnd[]): Promise<void> {
  await Promise.all(
    ends
      .filter(end => end.runId !== undefined && !isTerminalState(end.run?.state ?? ''))
      .map(end =>
        client.runs.cancel(end.runId!, { maxRetries: 1, reason: 'agent-run was interrupted' }).then(
          () => {
            end.conclusion = 'cancelled';
            terminal.note(`Interrupted: cancelled run ${end.runId} (${nameOf(end.item)}).`);
          },
          (error: Error) =>
            terminal.warn(
              `Interrupted, and could not cancel run ${end.runId} (${nameOf(end.item)}): ${error.message}`
            )
        )
      )
  );
}

/** `fan-out[2] "Security review"`: how lines name an item. */
function nameOf(item: Item): string {
  const title = item.title;
  return `fan-out[${item.index}]${title ? ` ${JSON.stringify(title.length > 80 ? `${title.slice(0, 80)}…` : title)}` : ''}`;
}

/** The end of one item, for its line: `run ID SUCCEEDED in 12s`, or why it did not succeed. */
function describeEnd(end: ItemEnd): string {
  const took = end.durationMs === undefined ? '' : ` after ${formatDuration(end.durationMs)}`;
  if (end.problem !== undefined) return end.runId ? `run ${end.runId}: ${end.problem}` : end.problem;
  const run = end.run;
  const id = `run ${end.runId}`;
  switch (end.conclusion) {
    case 'timed_out':
      return `${id} did not end in time (last state ${run?.state ?? 'unknown'}); it keeps running`;
    case 'blocked':
      return `${id} is BLOCKED${took} (--on-blocked fail); it keeps waiting for a person`;
    case 'succeeded':
      return `${id} SUCCEEDED${took}`;
    default: {
      if (run?.state === 'SUCCEEDED')
        return `${id} SUCCEEDED${took}, but its structured output does not match: ${end.structuredProblem ?? ''}`;
      const code = run?.error_code ? ` (${run.error_code})` : '';
      const message = run?.status_message ? `: ${clip(String(run.status_message), 500)}` : '';
      return `${id} ended ${run?.state ?? 'unknown'}${code}${took}${message}`;
    }
  }
}

function clip(text: string, max: number): string {
  const line = text.replace(/\s*\n\s*/g, ' ');
  return line.length > max ? `${line.slice(0, max)}…` : line;
}

/**
 * The table at the end: one row per item in input order; `-` for an empty cell. Cells are cleaned
 * before the columns are measured, so a control character shown as `\x1b` keeps them aligned.
 */
function endTable(ends: ItemEnd[], clean: (text: string) => string): string {
  const rows = ends.map(end => [
    String(end.item.index),
    clip(end.item.title ?? '', CELL) || '-',
    end.run?.state ?? (end.conclusion === 'not_started' ? 'NOT STARTED' : end.runId ? '-' : 'NOT CREATED'),
    end.durationMs === undefined ? '-' : formatDuration(end.durationMs),
    end.runId ?? '-',
    end.run?.state === 'SUCCEEDED'
      ? clip(
          end.structuredProblem ? `invalid structured output: ${end.structuredProblem}` : (end.answer ?? ''),
          CELL
        )
      : clip(String(end.run?.status_message ?? end.problem ?? ''), CELL)
  ]);
  return table(
    ['#', 'TITLE', 'STATE', 'DURATION', 'RUN', 'ANSWER OR MESSAGE'],
    rows.map(row => row.map(clean))
  );
}

/** One entry of `--json`: the fields of the action's `runs` output. */
function jsonEntry(end: ItemEnd, withSchema: boolean): Record<string, unknown> {
  const run = end.run;
  return {
    index: end.item.index,
    title: end.item.title ?? null,
    run_id: end.runId ?? null,
    state: run?.state ?? null,
    conclusion: end.conclusion ?? null,
    session_link: run?.session_link ?? null,
    status_message: run?.status_message ?? end.problem ?? null,
    error_code: run?.error_code ?? null,
    duration_seconds: end.durationMs === undefined ? null : Math.round(end.durationMs / 1000),
    result: end.answer ?? null,
    ...(withSchema
      ? {
          structured_output: end.structured ?? null,
          ...(end.structuredProblem ? { structured_output_problem: end.structuredProblem } : {})
        }
      : {}),
    artifacts: artifactsOf(run)
  };
}
