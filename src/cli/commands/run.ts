// `agent-run run`: create a run (idempotently), wait for it the way the action waits, stream its
// progress to stderr and print the agent's answer on stdout. With --fan-out FILE, one run per item
// of a YAML list instead (fan-out.ts), the command line's options being every item's defaults.

import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { type SchemaCheck, SchemaError, compileSchema } from '../../client/index.js';
import { EXIT_CODES_HELP, usage } from '../exit.js';
import type { RunMode } from '../../api/index.js';
import {
  type Command,
  type Context,
  clientFor,
  durationOption,
  metadataOption,
  modeOption,
  onBlockedOption,
  parse
} from './common.js';
import {
  type FanOutDefaults,
  type FanOutOptions,
  idempotencyKeyOption,
  maxParallelOption,
  readItems,
  requireOption,
  runFanOut
} from './fan-out.js';
import { watchRun } from './watch.js';

/** About 15 s of backoff before a create gives up; the idempotency key makes the retries safe. */
const CREATE_RETRIES = 5;

export const runCommand: Command = {
  name: 'run',
  summary: 'create a run, wait for it, print the answer',
  help: `Usage: agent-run run [options] (PROMPT | --prompt-file FILE | -)
       agent-run run --fan-out FILE|- [--max-parallel N] [--require all|any] [options] [PROMPT]

Creates a run, waits for it, streams its progress to stderr and prints the agent's answer on stdout.
With --fan-out, one run per item of a YAML list, side by side.

Options:
  --environment ID       environment to run in (or set AGENT_RUN_ENVIRONMENT)
  --title T              title of the run
  --config JSON          more run configuration, e.g. '{"model_id":"m1"}'
  --prompt-file FILE     read the prompt from a file; "-" as PROMPT reads standard input
  --wait                 wait for the run to end and print its answer (the default)
  --no-wait              print the run id and return at once
  --timeout DURATION     how long to wait (default 60m), e.g. 90s, 30m, 1h30m
  --on-blocked fail|wait a BLOCKED run ends the command with code 4 (fail, default) or is waited for
  --output-schema FILE   a JSON Schema: the agent is asked to end with a matching JSON object, which is checked
  --mode normal|plan     plan: the agent reads but changes nothing and answers with a plan (then
                         \`agent-run followup ID "approved: carry out the plan"\` carries it out)
  --metadata KEY=VALUE   a metadata pair on the run (repeatable, at most 20); find runs by it with list
  --parent ID            create the run as a child of run ID (it takes that run's metadata keys it
                         does not set, and is cancelled with it); list them with list --ancestor ID

Fan-out:
  --fan-out FILE         a YAML list, one run per item: a prompt (a string) or a mapping with prompt
                         or prompt-file (relative to FILE's folder) and optionally environment-id,
                         title, config (merged over --config) and mode; the options above (PROMPT,
                         --environment, --config, --title, --mode, --metadata, --parent,
                         --output-schema) are every item's defaults. At most 50 items. One line on
                         stderr as each run ends, then a table on stdout (--json: one record per item).
                         Each run gets metadata fan_out=<FILE's name> and fan_out_index=<n>.
  --fan-out -            read the list from standard input (prompt-file relative to the working
                         directory; fan_out=stdin); PROMPT may then not be "-"
  --max-parallel N       runs in flight at once (1-20, default 4); --timeout bounds the whole fan-out
  --require all|any      all (default): every run must succeed for exit 0; any: one is enough.
                         Otherwise the exit code is 3 if a run timed out, 4 if one is BLOCKED, else 1
  --idempotency-key KEY  each item's key is KEY-<index>. By default it is made from FILE's path and the
                         item's request: running the same file again finds the same runs (ended or
                         not) instead of creating more; change the item or pass a new KEY to start anew.
                         Ctrl-C or SIGTERM cancels every run the command created.

Example:
  AGENT_RUN_API_KEY=... agent-run run --base-url http://127.0.0.1:8080 --environment local "Fix the failing test"
  agent-run run --environment local --fan-out reviews.yml --max-parallel 3 --require any

${EXIT_CODES_HELP}`,
  async run(argv, context) {
    const { values, positionals } = parse(argv, RUN_OPTIONS);
    checkFlags(values);
    const mode = modeOption(values.mode);
    const metadata = metadataOption(values.metadata);
    const timeoutMs = durationOption('timeout', values.timeout, '60m');
    const onBlocked = onBlockedOption(values['on-blocked']);
    if (values['fan-out'] === '-' && positionals[0] === '-')
      throw usage(
        'standard input can carry the fan-out list or the prompt, not both: give PROMPT as an argument or with --prompt-file'
      );
    const fanOut = await fanOutOptions(values, context, timeoutMs, onBlocked);
    // A fan-out's items may each have their own prompt: then none is needed here.
    const optional = fanOut !== undefined && positionals.length === 0 && values['prompt-file'] === undefined;
    const prompt = optional ? '' : await readPrompt(positionals, values['prompt-file'], context.readStdin);
    const config = readConfig(values.config);
    const environment = readEnvironment(values, config, context.env);
    const request: RunRequest = {
      prompt,
      optional,
      config,
      environment,
      mode,
      metadata,
      ...readOutputSchema(values['output-schema']),
      timeoutMs,
      onBlocked
    };
    if (fanOut) return runFanOutCommand(values, context, fanOut, request);
    return runOne(values, context, request);
  }
};

/** The options of `run`, beside every command's. */
const RUN_OPTIONS = {
  environment: { type: 'string' },
  title: { type: 'string' },
  config: { type: 'string' },
  'prompt-file': { type: 'string' },
  // The default said aloud: a user who writes it (followup takes --wait too) is not refused.
  wait: { type: 'boolean' },
  'no-wait': { type: 'boolean' },
  timeout: { type: 'string' },
  'on-blocked': { type: 'string' },
  'output-schema': { type: 'string' },
  mode: { type: 'string' },
  metadata: { type: 'string', multiple: true },
  parent: { type: 'string' },
  'fan-out': { type: 'string' },
  'max-parallel': { type: 'string' },
  require: { type: 'string' },
  'idempotency-key': { type: 'string' }
} as const;

/** The parsed options of `run`. */
type RunValues = ReturnType<typeof parse<typeof RUN_OPTIONS>>['values'];

/** What a single run or a fan-out is made of, read from the command line. */
interface RunRequest {
  prompt: string;
  /** No prompt was given: a fan-out's items bring their own. */
  optional: boolean;
  config: Record<string, unknown>;
  environment: string | undefined;
  mode: RunMode | undefined;
  metadata: Record<string, string> | undefined;
  schema: ((value: unknown) => SchemaCheck) | undefined;
  schemaRequest: string;
  timeoutMs: number;
  onBlocked: 'fail' | 'wait';
}

/** Refuses --wait with --no-wait, the fan-out options without --fan-out, and --no-wait with it. */
function checkFlags(values: RunValues): void {
  if (values.wait && values['no-wait'])
    throw usage('--wait and --no-wait: run waits unless told --no-wait; give one of them');
  if (values['fan-out'] === undefined) {
    for (const name of ['max-parallel', 'require', 'idempotency-key'] as const)
      if (values[name] !== undefined) throw usage(`--${name} is for --fan-out FILE; give --fan-out too`);
  } else if (values['no-wait']) {
    throw usage(
      '--no-wait and --fan-out: a fan-out waits, to keep at most --max-parallel runs in flight; give one of them'
    );
  }
}

/** --fan-out's options, its list read from standard input when FILE is `-`. */
async function fanOutOptions(
  values: RunValues,
  context: Context,
  timeoutMs: number,
  onBlocked: 'fail' | 'wait'
): Promise<FanOutOptions | undefined> {
  const fanOutFile = values['fan-out'];
  if (fanOutFile === undefined) return undefined;
  return {
    file: fanOutFile,
    maxParallel: maxParallelOption(values['max-parallel']),
    require: requireOption(values.require),
    idempotencyKey: idempotencyKeyOption(values['idempotency-key']),
    timeoutMs,
    onBlocked,
    json: values.json === true,
    ...(fanOutFile === '-' ? { stdin: await context.readStdin() } : {})
  };
}

/** The environment from --environment (or AGENT_RUN_ENVIRONMENT) or --config, refused when the two differ. */
function readEnvironment(
  values: RunValues,
  config: Record<string, unknown>,
  env: NodeJS.ProcessEnv
): string | undefined {
  const flagged = values.environment ?? env.AGENT_RUN_ENVIRONMENT;
  const configured = config.environment_id;
  if (configured !== undefined && typeof configured !== 'string') {
    throw usage(`--config: environment_id must be a string, got ${JSON.stringify(configured)}`);
  }
  if (flagged !== undefined && configured !== undefined && flagged.trim() !== configured.trim()) {
    const source = values.environment !== undefined ? '--environment' : 'AGENT_RUN_ENVIRONMENT';
    throw usage(
      `config.environment_id ${JSON.stringify(configured)} differs from ${source} ${JSON.stringify(flagged)}: set it in one place`
    );
  }
  return flagged ?? configured;
}

/** --output-schema FILE: the compiled check, and the request appended to the prompt. */
function readOutputSchema(file: string | undefined): Pick<RunRequest, 'schema' | 'schemaRequest'> {
  if (file === undefined) return { schema: undefined, schemaRequest: '' };
  const text = readText(file, '--output-schema');
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw usage(`--output-schema ${JSON.stringify(file)}: not JSON (${(error as Error).message})`);
  }
  let schema: (value: unknown) => SchemaCheck;
  try {
    schema = compileSchema(parsed);
  } catch (error) {
    if (error instanceof SchemaError)
      throw usage(`--output-schema ${JSON.stringify(file)}: ${error.message}`);
    throw error;
  }
  const schemaRequest =
    '\n\nEnd your answer with one JSON object that matches this JSON Schema, in a ```json block:\n' +
    JSON.stringify(parsed, null, 2);
  return { schema, schemaRequest };
}

/** `run --fan-out`: the command line's options are every item's defaults. */
async function runFanOutCommand(
  values: RunValues,
  context: Context,
  fanOut: FanOutOptions,
  request: RunRequest
): Promise<number> {
  const { prompt, optional, environment, config, mode, metadata, schema, schemaRequest } = request;
  const defaults: FanOutDefaults = {
    ...(optional ? {} : { prompt }),
    ...(environment === undefined ? {} : { environment }),
    environmentSource: values.environment !== undefined ? '--environment' : 'AGENT_RUN_ENVIRONMENT',
    config,
    ...(values.title ? { title: values.title } : {}),
    ...(mode ? { mode } : {}),
    ...(metadata ? { metadata } : {}),
    ...(values.parent ? { parent: values.parent.trim() } : {}),
    ...(schema ? { schema, schemaRequest } : {})
  };
  const items = readItems(fanOut, defaults);
  const client = clientFor(values, context);
  try {
    return await runFanOut(client, context.terminal, items, fanOut, defaults);
  } finally {
    client.close();
  }
}

/** One run: created with a fresh idempotency key, then waited for (or only its id printed, --no-wait). */
async function runOne(values: RunValues, context: Context, request: RunRequest): Promise<number> {
  const { environment, config, mode, metadata } = request;
  const prompt = request.prompt + request.schemaRequest;
  if (typeof environment !== 'string' || environment.trim() === '') {
    throw usage('no environment: pass --environment ID or set AGENT_RUN_ENVIRONMENT');
  }
  const client = clientFor(values, context);
  try {
    const created = await client.runs.create(
      {
        prompt,
        config: { ...config, environment_id: environment.trim() },
        ...(values.title ? { title: values.title } : {}),
        ...(mode ? { mode } : {}),
        ...(metadata ? { metadata } : {}),
        ...(values.parent ? { parent_run_id: values.parent.trim() } : {})
      },
      { idempotencyKey: randomUUID(), maxRetries: CREATE_RETRIES }
    );
    context.terminal.note(`Created run ${created.run_id} in environment ${environment.trim()}.`);
    if (values['no-wait']) {
      if (values.json) context.terminal.json(await client.runs.get(created.run_id), 2);
      else context.terminal.out(created.run_id);
      return 0;
    }
    return await watchRun(client, context.terminal, created.run_id, {
      timeoutMs: request.timeoutMs,
      onBlocked: request.onBlocked,
      json: values.json === true,
      schema: request.schema,
      onInterrupt: 'cancel'
    });
  } finally {
    client.close();
  }
}

async function readPrompt(
  positionals: string[],
  file: string | undefined,
  readStdin: () => Promise<string>
): Promise<string> {
  if (file !== undefined && positionals.length > 0) {
    throw usage('give the prompt once: as an argument, with --prompt-file, or "-" for standard input');
  }
  if (positionals.length > 1) {
    throw usage(`expected one PROMPT argument, got ${positionals.length}; quote a prompt with spaces`);
  }
  const text =
    file !== undefined
      ? readText(file, '--prompt-file')
      : positionals[0] === '-'
        ? await readStdin()
        : (positionals[0] ?? '');
  if (text.trim() === '') {
    throw usage('the prompt is empty: pass PROMPT, --prompt-file FILE, or "-" to read standard input');
  }
  return text;
}

function readConfig(raw: string | undefined): Record<string, unknown> {
  if (raw === undefined) return {};
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    throw usage(
      `--config ${JSON.stringify(raw.slice(0, 80))}: expected a JSON object such as '{"model_id":"m1"}'`
    );
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw usage(`--config: expected a JSON object such as '{"model_id":"m1"}'`);
  }
  return value as Record<string, unknown>;
}

function readText(file: string, option: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    throw usage(
      `${option} ${JSON.stringify(file)}: cannot read it (${(error as NodeJS.ErrnoException).code})`
    );
  }
}
