// The action's inputs, parsed once into a typed, validated settings object. Every problem is
// reported at once, each naming the input, the bad value and the form expected.

import * as core from '@actions/core';
import { createHash } from 'node:crypto';
import {
  ID_SEGMENT_FORM,
  IDEMPOTENCY_KEY_FORM,
  type RunConfig,
  type RunState,
  TERMINAL_STATES,
  isIdSegment,
  RUN_MODE_WORDS,
  type RunMode,
  isRunMode,
  isValidIdempotencyKey,
  showValue
} from '../api/index.js';
import { parseDuration } from '../common/duration.js';
import { normalizeBaseUrl } from '../client/index.js';
import { type EventContext, pullRequestOf, readEventContext } from './context.js';
import { PlaceholderError, contextBlock, fenceTag, renderPrompt, textSources } from './prompt.js';
import { type OutputSchema, readOutputSchema, schemaRequest } from './output-schema.js';
import { type ReviewSettings, findingsSchema, readReviewInputs, reviewRequest } from './review.js';
import { PERMISSIONS, type Permission, type TrustSettings } from './trust.js';
import { type ReadFile, readInputFile } from './workspace-file.js';
import { type FanOutItemInput, MAX_PARALLEL, parseFanOut } from '../client/fan-out-items.js';
import { MISSING_ID_TOKEN_PERMISSION, canRequestIdToken } from './id-token.js';

/** The request that creates the run. */
export interface CreateSettings {
  prompt: string;
  environmentId: string;
  title?: string;
  /** `config` input merged with the environment id. */
  config: RunConfig;
  /** Sent as `Idempotency-Key` on every attempt of the create. */
  idempotencyKey?: string;
  /** `mode` input, sent when set: `plan` makes the run answer with a plan and change nothing. */
  mode?: RunMode;
  /** What ties the run to its thread: repository, thread (the issue or pull request number), workflow. */
  metadata?: Record<string, string>;
}

/** Either a run to create, or an existing run (`run-id`) to attach to. */
export type Target = { create: CreateSettings; runId?: undefined } | { runId: string; create?: undefined };

export type Settings = CommonSettings & Target;

/** One run of a fan-out: its index in the `fan-out` list and the request that creates it. */
export interface FanOutItem {
  index: number;
  create: CreateSettings;
}

/** `fan-out`, `max-parallel`, `fan-out-require`: several runs from one step, followed together. */
export interface FanOutSettings {
  items: FanOutItem[];
  /** Runs in flight at once (`max-parallel`, default 4). */
  maxParallel: number;
  /** `all`: the step succeeds when every run succeeded; `any`: when one did. */
  require: 'all' | 'any';
}

export interface CommonSettings {
  /** API root derived from `base-url`, e.g. `https://agents.example.com/api/v1`. */
  baseUrl: string;
  /** The key for `Authorization: Bearer`; masked before anything is logged. Empty with `auth: oidc`. */
  apiKey: string;
  /** `auth`: sign in with the key, or with the workflow's OIDC token (id-token.ts). */
  auth: 'api-key' | 'oidc';
  /** `oidc-audience`: the audience the OIDC token is asked for (default: the base URL's origin). */
  oidcAudience: string;
  /** Wait for the run to end (`wait`, default true). */
  wait: boolean;
  /** Deadline for the wait in ms (`timeout`, default 60m). */
  timeoutMs: number;
  /**
   * After the timeout, what reading what the run made and cancelling it share, in ms
   * (`timeout-grace`, default 30 s): the step never outlives `timeout` + this.
   */
  graceMs: number;
  /**
   * Before the first read of a run, and the first pause between reads of a service that does not
   * hold them, in ms (`poll-interval`, default 1 s).
   */
  pollIntervalMs: number;
  /** How long one GitHub API call may take before the step gives up on it, in ms (`github-timeout`, default 30 s). */
  githubTimeoutMs: number;
  /** What to do with a run still going at the deadline (`on-timeout`). */
  onTimeout: 'cancel' | 'leave-running';
  /** Terminal states that fail the step (`fail-on`). */
  failOn: RunState[];
  /** Cancel the run when the job is cancelled (`cancel-on-abort`). */
  cancelOnAbort: boolean;
  /** Write a job summary (`summary`), rewritten on every state change. */
  summary: boolean;
  /** Token for the GitHub API (`github-token`): the trust gate and the progress comment. */
  githubToken: string;
  /** Trust gate (`allowed-actors`, `min-permission`, `trigger-phrase`). */
  trust: TrustSettings;
  /** What an untrusted actor, a fork without secrets or Dependabot gets (`on-untrusted`). */
  onUntrusted: 'skip' | 'fail';
  /** Progress comment on the pull request or issue (`comment`). */
  comment: 'off' | 'sticky' | 'final';
  /**
   * Whether the comment shows the session link (`comment-session-link`): the link opens the run's
   * transcript to whoever has it, so by default (`auto`) only on a private repository.
   */
  commentSessionLink: boolean;
  /** Notes about the prompt (empty placeholders, user text that was cut). */
  promptNotes: string[];
  /** The JSON Schema the answer's last JSON object must match (`output-schema`), compiled. */
  outputSchema?: OutputSchema;
  /** Show the run's conversation in the step log as it arrives (`log-conversation`). */
  logConversation: boolean;
  /** What a BLOCKED run gets (`on-blocked`): waited for until the timeout, or the step ends. */
  onBlocked: 'wait' | 'fail';
  /** Threads and plans (`mode`, `continue`, `approve-phrase`, `label-trigger`, `supersede`). */
  thread: ThreadSettings;
  /**
   * `review: inline` on a pull request event: the answer's findings become a pull request review
   * (then `outputSchema` is the findings schema).
   */
  review?: ReviewSettings;
  /** Several runs instead of one (`fan-out`); `create` is then the first item's request. */
  fanOut?: FanOutSettings;
}

export interface ThreadSettings {
  /** `mode`: `plan` asks for a plan first (on create, and on follow-ups of `continue: thread`). */
  mode: RunMode;
  /** `continue`: `thread` sends a comment on a thread whose comment names a run to that run. */
  continue: 'off' | 'thread';
  /** `approve-phrase`: a comment holding it approves the plan the thread's run made. */
  approvePhrase: string;
  /** `label-trigger`: on `labeled` events, only this label just added starts the agent. */
  labelTrigger?: string;
  /** `supersede`: cancel a still-running earlier run of the same thread first. */
  supersede: boolean;
}

export type { OutputSchema } from './output-schema.js';

export type GetInput = (name: string) => string;

/** The runner's inputs (INPUT_* variables): the one place the action reads them. */
export const actionInput: GetInput = name => core.getInput(name);

/** Input values to mask before anything is logged. */
export function secretInputs(getInput: GetInput = actionInput): string[] {
  return ['api-key', 'github-token'].map(name => getInput(name).trim()).filter(value => value !== '');
}

/**
 * Read before the full settings: an empty api-key on a fork or Dependabot is not an input error
 * but GitHub withholding secrets, and `on-untrusted` says what that gets.
 */
export function readKeyPresence(
  getInput: GetInput = actionInput,
  env: NodeJS.ProcessEnv = process.env
): {
  hasKey: boolean;
  /** What is missing when hasKey is false. */
  auth: 'api-key' | 'oidc';
  onUntrusted: 'skip' | 'fail';
} {
  const oidc = getInput('auth').trim().toLowerCase() === 'oidc';
  return {
    hasKey: oidc ? canRequestIdToken(env) : getInput('api-key').trim() !== '',
    auth: oidc ? 'oidc' : 'api-key',
    onUntrusted: getInput('on-untrusted').trim().toLowerCase() === 'fail' ? 'fail' : 'skip'
  };
}

/** Whether the post step may cancel at all (`cancel-on-abort`); `readConnection` gives the rest. */
export function readPostSettings(getInput: GetInput = actionInput): { cancelOnAbort: boolean } {
  return { cancelOnAbort: getInput('cancel-on-abort').trim().toLowerCase() !== 'false' };
}

export class InputError extends Error {
  constructor(readonly problems: string[]) {
    super(
      problems.length === 1
        ? problems[0]
        : `${problems.length} inputs are invalid:\n- ${problems.join('\n- ')}`
    );
  }
}

const DURATION_FORM = 'a duration such as 90s, 45m or 1h30m';
/** `poll-interval`'s range: from this (a holding server is never asked more often anyway)… */
const MIN_POLL_INTERVAL_MS = 100;
/** …to this. */
const MAX_POLL_INTERVAL_MS = 60_000;

/** A duration of the usual forms, or a whole number of milliseconds (`500ms`); undefined when neither. */
function parseFineDuration(text: string): number | undefined {
  const ms = /^(\d+)ms$/i.exec(text);
  return ms ? Number(ms[1]) : parseDuration(text);
}

/** What the step signs in with, and where. */
export type Connection = Pick<Settings, 'baseUrl' | 'apiKey' | 'auth' | 'oidcAudience'>;

/** Reads the inputs the post step needs too: where the service is and the key (or OIDC). */
export function readConnection(
  getInput: GetInput = actionInput,
  env: NodeJS.ProcessEnv = process.env
): Connection {
  const problems: string[] = [];
  const result = connection(getInput, problems, env);
  if (problems.length > 0) throw new InputError(problems);
  return result;
}

function connection(getInput: GetInput, problems: string[], env: NodeJS.ProcessEnv): Connection {
  const rawAuth = getInput('auth').trim().toLowerCase() || 'api-key';
  if (rawAuth !== 'api-key' && rawAuth !== 'oidc')
    problems.push(`auth ${showValue(getInput('auth'))}: expected api-key or oidc`);
  const auth = rawAuth === 'oidc' ? 'oidc' : 'api-key';
  const apiKey = auth === 'oidc' ? '' : getInput('api-key').trim();
  if (auth === 'oidc') {
    if (!canRequestIdToken(env)) problems.push(MISSING_ID_TOKEN_PERMISSION);
  } else if (apiKey === '') {
    problems.push(
      'api-key is empty: pass the key from a secret, e.g. `api-key: ${{ secrets.AGENT_API_KEY }}`. ' +
        'GitHub gives no secrets to workflows triggered from forks or by Dependabot, so such runs see an empty value.'
    );
  } else if (/[\r\n]/.test(apiKey)) {
    problems.push('api-key contains a line break: expected the key on one line');
  }
  let baseUrl = '';
  const rawBase = getInput('base-url').trim();
  if (rawBase === '') {
    problems.push('base-url is empty: expected the service URL, e.g. https://agents.example.com');
  } else {
    try {
      baseUrl = normalizeBaseUrl(rawBase);
    } catch (error) {
      problems.push((error as Error).message);
    }
  }
  let oidcAudience = getInput('oidc-audience').trim();
  if (oidcAudience === '' && baseUrl !== '') oidcAudience = new URL(baseUrl).origin;
  else if (/[\r\n]/.test(oidcAudience))
    problems.push(
      'oidc-audience contains a line break: expected one audience, such as https://agents.example.com'
    );
  return { baseUrl, apiKey, auth, oidcAudience };
}

/** A true/false input: anything else is a problem, an empty one gives `fallback`. */
type BoolInput = (name: string, fallback: boolean) => boolean;

/** The reader of true/false inputs, reporting into `problems`. */
function boolInput(getInput: GetInput, problems: string[]): BoolInput {
  return (name, fallback) => {
    const value = getInput(name).trim().toLowerCase();
    if (value === '') return fallback;
    if (value === 'true') return true;
    if (value === 'false') return false;
    problems.push(`${name} ${showValue(getInput(name))}: expected true or false`);
    return fallback;
  };
}

/** What reading the run (or runs) to create needs besides its inputs, and what it collects. */
interface CreateReading {
  env: NodeJS.ProcessEnv;
  readFile: ReadFile | undefined;
  problems: string[];
  event: EventContext;
  /** Notes about the prompt, for the log. */
  notes: string[];
  /** The event texts the prompts put in, for the trust gate. */
  readsText: ('issue' | 'pr')[];
  bool: BoolInput;
}

/** The shape asked of the answer: `output-schema`, or the findings of `review: inline` on a pull request. */
function readAnswerShape(
  getInput: GetInput,
  reading: CreateReading
): { outputSchema: OutputSchema | undefined; review: ReviewSettings | undefined; inline: boolean } {
  const { env, readFile, problems, event, notes } = reading;
  let outputSchema = readOutputSchema(getInput, env, readFile, problems);
  const reviewInputs = readReviewInputs(getInput, problems);
  if (reviewInputs.inline && getInput('output-schema').trim() !== '')
    problems.push(
      'review and output-schema are both set: review: inline asks for its own findings object; give one of them'
    );
  const pullNumber = reviewInputs.inline ? pullRequestOf(event) : undefined;
  let review: ReviewSettings | undefined;
  if (pullNumber !== undefined) {
    review = { pullNumber, maxComments: reviewInputs.maxComments };
    if (reviewInputs.requestChanges) review.requestChanges = reviewInputs.requestChanges;
    outputSchema = findingsSchema();
  } else if (reviewInputs.inline) {
    notes.push(
      `review: inline reviews pull requests only; the ${event.event || 'current'} event is not about one, so no findings are asked for and no review is posted`
    );
  }
  return { outputSchema, review, inline: reviewInputs.inline };
}

/** How the step waits: `on-blocked`, `cancel-on-abort`, `summary`, the timeouts, `on-timeout`. */
function readWaiting(
  getInput: GetInput,
  problems: string[],
  bool: BoolInput
): Pick<
  Settings,
  | 'onBlocked'
  | 'cancelOnAbort'
  | 'summary'
  | 'timeoutMs'
  | 'graceMs'
  | 'pollIntervalMs'
  | 'githubTimeoutMs'
  | 'onTimeout'
> {
  const rawOnBlocked = getInput('on-blocked').trim().toLowerCase() || 'wait';
  if (rawOnBlocked !== 'wait' && rawOnBlocked !== 'fail') {
    problems.push(`on-blocked ${showValue(getInput('on-blocked'))}: expected wait or fail`);
  }
  const cancelOnAbort = bool('cancel-on-abort', true);
  const summary = bool('summary', true);

  const rawTimeout = getInput('timeout').trim() || '60m';
  const timeoutMs = parseDuration(rawTimeout) ?? 0;
  if (timeoutMs <= 0)
    problems.push(`timeout ${showValue(rawTimeout)}: expected ${DURATION_FORM}, above zero`);

  const rawGrace = getInput('timeout-grace').trim() || '30s';
  const graceMs = parseDuration(rawGrace) ?? 0;
  if (graceMs <= 0)
    problems.push(`timeout-grace ${showValue(rawGrace)}: expected ${DURATION_FORM}, above zero`);

  const rawPoll = getInput('poll-interval').trim() || '1s';
  const pollIntervalMs = parseFineDuration(rawPoll) ?? 0;
  if (pollIntervalMs < MIN_POLL_INTERVAL_MS || pollIntervalMs > MAX_POLL_INTERVAL_MS)
    problems.push(
      `poll-interval ${showValue(rawPoll)}: expected a duration such as 500ms, 1s or 5s, from 100ms to 1m`
    );

  const rawGitHubTimeout = getInput('github-timeout').trim() || '30s';
  const githubTimeoutMs = parseDuration(rawGitHubTimeout) ?? 0;
  if (githubTimeoutMs <= 0)
    problems.push(`github-timeout ${showValue(rawGitHubTimeout)}: expected ${DURATION_FORM}, above zero`);

  const rawOnTimeout = getInput('on-timeout').trim().toLowerCase() || 'cancel';
  if (rawOnTimeout !== 'cancel' && rawOnTimeout !== 'leave-running') {
    problems.push(`on-timeout ${showValue(getInput('on-timeout'))}: expected cancel or leave-running`);
  }
  return {
    onBlocked: rawOnBlocked as Settings['onBlocked'],
    cancelOnAbort,
    summary,
    timeoutMs,
    graceMs,
    pollIntervalMs,
    githubTimeoutMs,
    onTimeout: rawOnTimeout as Settings['onTimeout']
  };
}

/** `run-id`: an existing run to attach to instead of creating one. */
function readRunId(getInput: GetInput, problems: string[]): string | undefined {
  const runId = getInput('run-id').trim() || undefined;
  if (runId !== undefined && !isIdSegment(runId)) {
    problems.push(`run-id ${showValue(runId)}: expected a run id of ${ID_SEGMENT_FORM}`);
  }
  return runId;
}

/**
 * What the step runs: the fan-out's items, one run to create or the run `run-id` names; the
 * prompts to create get the answer's shape asked for at their end.
 */
function readTarget(
  getInput: GetInput,
  reading: CreateReading,
  runId: string | undefined,
  answer: { outputSchema: OutputSchema | undefined; review: ReviewSettings | undefined; inline: boolean }
): { target: Target; fanOut: FanOutSettings | undefined } {
  const { env, readFile, problems, event, notes, readsText, bool } = reading;
  const { outputSchema, review } = answer;
  const rawFanOut = getInput('fan-out').trim();
  const fanOut =
    rawFanOut === '' || runId !== undefined
      ? undefined
      : readFanOut(
          rawFanOut,
          getInput,
          env,
          readFile,
          problems,
          event,
          notes,
          bool('context', true),
          readsText
        );
  if (rawFanOut !== '' && runId !== undefined)
    problems.push('fan-out and run-id are both set: give one of them');
  if (rawFanOut !== '' && answer.inline)
    problems.push(
      'fan-out and review: inline are both set: a step posts one review of one run; give one of them'
    );
  const target: Target =
    fanOut !== undefined
      ? {
          create: fanOut.items[0]?.create ?? { prompt: '', environmentId: '', config: { environment_id: '' } }
        }
      : runId === undefined
        ? {
            create: readCreate(
              getInput,
              env,
              readFile,
              problems,
              event,
              notes,
              bool('context', true),
              readsText
            )
          }
        : { runId };
  if (target.create && outputSchema && target.create.prompt.trim() !== '' && !fanOut) {
    target.create.prompt += review ? reviewRequest() : schemaRequest(outputSchema.schema);
  }
  for (const item of fanOut?.items ?? []) {
    if (outputSchema && item.create.prompt.trim() !== '')
      item.create.prompt += schemaRequest(outputSchema.schema);
  }
  return { target, fanOut };
}

/** Who may start the agent and what the thread hears of it: the trust inputs and `comment`. */
function readGate(
  getInput: GetInput,
  problems: string[]
): {
  minPermission: Permission;
  allowedActors: string[];
  onUntrusted: string;
  comment: string;
  sessionLink: string;
  triggerPhrase: string | undefined;
} {
  const minPermission = (getInput('min-permission').trim().toLowerCase() || 'write') as Permission;
  if (!PERMISSIONS.includes(minPermission)) {
    problems.push(
      `min-permission ${showValue(getInput('min-permission'))}: expected one of ${PERMISSIONS.join(', ')}`
    );
  }
  const allowedActors = getInput('allowed-actors')
    .split(/[\s,]+/)
    .map(actor => actor.trim())
    .filter(Boolean);
  const onUntrusted = getInput('on-untrusted').trim().toLowerCase() || 'skip';
  if (onUntrusted !== 'skip' && onUntrusted !== 'fail') {
    problems.push(`on-untrusted ${showValue(getInput('on-untrusted'))}: expected skip or fail`);
  }
  const comment = getInput('comment').trim().toLowerCase() || 'off';
  if (comment !== 'off' && comment !== 'sticky' && comment !== 'final') {
    problems.push(`comment ${showValue(getInput('comment'))}: expected off, sticky or final`);
  }
  const sessionLink = getInput('comment-session-link').trim().toLowerCase() || 'auto';
  if (sessionLink !== 'auto' && sessionLink !== 'always' && sessionLink !== 'never') {
    problems.push(
      `comment-session-link ${showValue(getInput('comment-session-link'))}: expected auto, always or never`
    );
  }
  const triggerPhrase = getInput('trigger-phrase').trim() || undefined;
  return { minPermission, allowedActors, onUntrusted, comment, sessionLink, triggerPhrase };
}

/** The thread's mode and metadata on the runs to create (a fan-out's items also get their step and index). */
function applyThread(
  getInput: GetInput,
  env: NodeJS.ProcessEnv,
  event: EventContext,
  thread: ThreadSettings,
  target: Target,
  fanOut: FanOutSettings | undefined,
  problems: string[]
): void {
  if (target.create && !fanOut) {
    if (getInput('mode').trim() !== '') target.create.mode = thread.mode;
    const metadata = threadMetadata(env, event);
    if (Object.keys(metadata).length > 0) target.create.metadata = metadata;
  }
  for (const item of fanOut?.items ?? []) {
    item.create.mode ??= getInput('mode').trim() !== '' ? thread.mode : undefined;
    if (item.create.mode === undefined) delete item.create.mode;
    // The step's id ties the runs together: a later step or a list filter finds them by it.
    item.create.metadata = {
      ...threadMetadata(env, event),
      fan_out: (env.GITHUB_ACTION || 'fan-out').slice(0, 256),
      fan_out_index: String(item.index)
    };
  }
  if (fanOut && thread.continue === 'thread')
    problems.push('fan-out and continue: thread are both set: a fan-out starts new runs; give one of them');
}

export function readSettings(
  getInput: GetInput = actionInput,
  env: NodeJS.ProcessEnv = process.env,
  /** Reads a file a path input names (tests pass their own); by default every check applies. */
  readFile?: ReadFile,
  event: EventContext = readEventContext(env)
): Settings {
  const problems: string[] = [];
  const { baseUrl, apiKey, auth, oidcAudience } = connection(getInput, problems, env);
  const bool = boolInput(getInput, problems);
  const reading: CreateReading = { env, readFile, problems, event, notes: [], readsText: [], bool };

  const wait = bool('wait', true);
  const logConversation = bool('log-conversation', true);
  const answer = readAnswerShape(getInput, reading);
  const waiting = readWaiting(getInput, problems, bool);
  const failOn = parseStates(getInput('fail-on'), problems);
  const runId = readRunId(getInput, problems);
  const { target, fanOut } = readTarget(getInput, reading, runId, answer);
  const gate = readGate(getInput, problems);
  if (runId !== undefined) {
    for (const name of ['prompt', 'prompt-file']) {
      if (getInput(name).trim() !== '') problems.push(`${name} and run-id are both set: give one of them`);
    }
  }
  const thread = readThread(getInput, problems, bool);
  applyThread(getInput, env, event, thread, target, fanOut, problems);

  if (problems.length > 0) throw new InputError(problems);
  const { outputSchema, review } = answer;
  return {
    thread,
    baseUrl,
    apiKey,
    auth,
    oidcAudience,
    ...target,
    wait,
    timeoutMs: waiting.timeoutMs,
    graceMs: waiting.graceMs,
    pollIntervalMs: waiting.pollIntervalMs,
    githubTimeoutMs: waiting.githubTimeoutMs,
    onTimeout: waiting.onTimeout,
    failOn,
    cancelOnAbort: waiting.cancelOnAbort,
    summary: waiting.summary,
    githubToken: getInput('github-token').trim(),
    trust: {
      allowedActors: gate.allowedActors,
      minPermission: gate.minPermission,
      triggerPhrase: gate.triggerPhrase,
      readsText: reading.readsText,
      // Approving a plan needs no trigger phrase; without plans there is nothing to approve.
      alsoTriggers: thread.mode === 'plan' ? [thread.approvePhrase] : [],
      labelTrigger: thread.labelTrigger
    },
    onUntrusted: gate.onUntrusted as Settings['onUntrusted'],
    comment: gate.comment as Settings['comment'],
    commentSessionLink:
      gate.sessionLink === 'always' || (gate.sessionLink === 'auto' && event.repoPrivate === true),
    promptNotes: reading.notes,
    outputSchema,
    ...(review ? { review } : {}),
    logConversation,
    onBlocked: waiting.onBlocked,
    ...(fanOut ? { fanOut } : {})
  };
}

/**
 * `fan-out` with `max-parallel` and `fan-out-require`: each item read as the step's own inputs
 * would be, the item's fields over the step's (its config merged over the step's), so every check
 * and the prompt's rendering apply; problems name the item.
 */
function readFanOut(
  raw: string,
  getInput: GetInput,
  env: NodeJS.ProcessEnv,
  readFile: ReadFile | undefined,
  problems: string[],
  event: EventContext,
  notes: string[],
  withContext: boolean,
  readsText: ('issue' | 'pr')[]
): FanOutSettings {
  const rawParallel = getInput('max-parallel').trim() || '4';
  const maxParallel = /^\d{1,3}$/.test(rawParallel) ? Number(rawParallel) : 0;
  if (maxParallel < 1 || maxParallel > MAX_PARALLEL)
    problems.push(
      `max-parallel ${showValue(getInput('max-parallel'))}: expected a whole number from 1 to ${MAX_PARALLEL}`
    );
  const require = getInput('fan-out-require').trim().toLowerCase() || 'all';
  if (require !== 'all' && require !== 'any')
    problems.push(`fan-out-require ${showValue(getInput('fan-out-require'))}: expected all or any`);
  const stepKey = getInput('idempotency-key').trim();
  const items: FanOutItem[] = [];
  parseFanOut(raw, problems).forEach((fields, index) => {
    const own: string[] = [];
    const item = readCreate(
      itemInputs(fields, getInput),
      env,
      readFile,
      own,
      event,
      notes,
      withContext,
      readsText
    );
    problems.push(...own.map(problem => `fan-out[${index}]: ${problem}`));
    // Each item its own key, the same on every retry of the step: a retry never makes a second run.
    const body = { fan_out_index: index, prompt: item.prompt, config: item.config, title: item.title };
    const key = stepKey !== '' ? `${stepKey}-${index}` : defaultIdempotencyKey(env, body);
    if (key === undefined) delete item.idempotencyKey;
    else item.idempotencyKey = key;
    if (fields.mode) item.mode = fields.mode;
    items.push({ index, create: item });
  });
  return { items, maxParallel, require: require === 'any' ? 'any' : 'all' };
}

/** The step's inputs as one fan-out item sees them: its own fields first. */
function itemInputs(item: FanOutItemInput, getInput: GetInput): GetInput {
  const ownPrompt = item.prompt !== undefined || item['prompt-file'] !== undefined;
  return name => {
    switch (name) {
      case 'prompt':
        return ownPrompt ? (item.prompt ?? '') : getInput(name);
      case 'prompt-file':
        return ownPrompt ? (item['prompt-file'] ?? '') : getInput(name);
      case 'environment-id':
        return item['environment-id'] ?? getInput(name);
      case 'title':
        return item.title ?? getInput(name);
      case 'idempotency-key':
        return '';
      case 'config': {
        if (!item.config) return getInput(name);
        const step = getInput(name).trim();
        let base: unknown = {};
        try {
          base = step === '' ? {} : JSON.parse(step);
        } catch {
          return step; // read again, and reported, as the step's own config
        }
        if (base === null || typeof base !== 'object' || Array.isArray(base)) return step;
        return JSON.stringify({ ...base, ...item.config });
      }
      default:
        return getInput(name);
    }
  };
}

/** The thread inputs: `mode`, `continue`, `approve-phrase`, `label-trigger`, `supersede`. */
function readThread(getInput: GetInput, problems: string[], bool: BoolInput): ThreadSettings {
  const mode = getInput('mode').trim().toLowerCase() || 'normal';
  if (!isRunMode(mode)) problems.push(`mode ${showValue(getInput('mode'))}: expected ${RUN_MODE_WORDS}`);
  const continueMode = getInput('continue').trim().toLowerCase() || 'off';
  if (continueMode !== 'off' && continueMode !== 'thread')
    problems.push(`continue ${showValue(getInput('continue'))}: expected off or thread`);
  const approvePhrase = getInput('approve-phrase').trim() || '/approve';
  const labelTrigger = getInput('label-trigger').trim() || undefined;
  return {
    mode: isRunMode(mode) ? mode : 'normal',
    continue: continueMode === 'thread' ? 'thread' : 'off',
    approvePhrase,
    labelTrigger,
    supersede: bool('supersede', false)
  };
}

/** The pairs the action puts in a run's `metadata`, so a later step finds the runs of its thread. */
export function threadMetadata(env: NodeJS.ProcessEnv, event: EventContext): Record<string, string> {
  const metadata: Record<string, string> = {};
  if (event.repo) metadata.repository = event.repo.slice(0, 256);
  if (event.number !== undefined) metadata.thread = String(event.number);
  if (env.GITHUB_WORKFLOW) metadata.workflow = env.GITHUB_WORKFLOW.slice(0, 256);
  return metadata;
}

function parseStates(raw: string, problems: string[]): RunState[] {
  const text = raw.trim() === '' ? 'FAILED,ERROR,CANCELLED' : raw;
  const states = text
    .split(/[\s,]+/)
    .map(state => state.trim().toUpperCase())
    .filter(state => state !== '' && state !== 'NONE');
  for (const state of states) {
    if (!TERMINAL_STATES.includes(state)) {
      problems.push(
        `fail-on ${showValue(state)}: expected a comma-separated list of ${TERMINAL_STATES.join(', ')} (or none)`
      );
    }
  }
  return [...new Set(states)];
}

/** The prompt from `prompt` or `prompt-file`, its placeholders filled and the event's context added. */
function readPrompt(
  getInput: GetInput,
  env: NodeJS.ProcessEnv,
  readFile: ReadFile | undefined,
  problems: string[],
  event: EventContext,
  notes: string[],
  withContext: boolean,
  readsText: ('issue' | 'pr')[]
): string {
  const inline = getInput('prompt');
  const file = getInput('prompt-file').trim();
  let prompt = '';
  if (inline.trim() !== '' && file !== '') {
    problems.push('prompt and prompt-file are both set: give exactly one of them');
  } else if (file !== '') {
    const text = readInputFile('prompt-file', file, env, readFile, problems);
    if (text !== undefined && text.trim() === '') {
      problems.push(`prompt-file ${showValue(file)}: the file is empty; expected the prompt text`);
    }
    prompt = text ?? '';
  } else if (inline.trim() === '') {
    problems.push(
      'prompt is empty: set prompt (the instruction for the agent) or prompt-file (a path to it)'
    );
  } else {
    prompt = inline;
  }
  if (prompt.trim() !== '') {
    readsText.push(...textSources(prompt));
    try {
      const tag = fenceTag();
      const rendered = renderPrompt(prompt, event, tag);
      prompt =
        rendered.prompt + (withContext && event.repo ? `\n${contextBlock(event, tag, rendered.fenced)}` : '');
      notes.push(...rendered.notes);
    } catch (error) {
      if (!(error instanceof PlaceholderError)) throw error;
      problems.push(error.message);
    }
  }
  return prompt;
}

/** `config`: a JSON object that can be sent again as JSON (empty when it is not). */
function readConfigInput(getInput: GetInput, problems: string[]): Record<string, unknown> {
  let config: Record<string, unknown> = {};
  const rawConfig = getInput('config').trim();
  if (rawConfig !== '') {
    try {
      const value: unknown = JSON.parse(rawConfig);
      if (value === null || typeof value !== 'object' || Array.isArray(value))
        throw new Error('not an object');
      config = value as Record<string, unknown>;
    } catch {
      problems.push(`config ${showValue(rawConfig, 80)}: expected a JSON object, e.g. {"model_id": "auto"}`);
    }
    try {
      // JSON.parse takes any depth, JSON.stringify (the request body, the idempotency key) does not.
      JSON.stringify(config);
    } catch {
      problems.push(
        'config: the JSON is nested too deeply to send; expected an object such as {"model_id": "auto"}'
      );
      config = {};
    }
  }
  return config;
}

/** One run's create request from the inputs (the step's own, or a fan-out item's over them). */
function readCreate(
  getInput: GetInput,
  env: NodeJS.ProcessEnv,
  readFile: ReadFile | undefined,
  problems: string[],
  event: EventContext,
  notes: string[],
  withContext: boolean,
  readsText: ('issue' | 'pr')[]
): CreateSettings {
  const prompt = readPrompt(getInput, env, readFile, problems, event, notes, withContext, readsText);
  const config = readConfigInput(getInput, problems);

  const environmentId = getInput('environment-id').trim();
  if (environmentId === '') {
    problems.push('environment-id is empty: expected the id of the environment the agent runs in');
  } else if (typeof config.environment_id === 'string' && config.environment_id !== environmentId) {
    problems.push(
      `config.environment_id ${showValue(config.environment_id)} differs from environment-id ` +
        `${showValue(environmentId)}: set it in one place`
    );
  }

  const title = getInput('title').trim() || undefined;
  const body = { prompt, config: { ...config, environment_id: environmentId }, title };
  let idempotencyKey = getInput('idempotency-key').trim() || undefined;
  if (idempotencyKey !== undefined && !isValidIdempotencyKey(idempotencyKey)) {
    problems.push(`idempotency-key ${showValue(idempotencyKey)}: expected ${IDEMPOTENCY_KEY_FORM}`);
  }
  idempotencyKey ??= defaultIdempotencyKey(env, body);
  return { prompt, environmentId, title, config: body.config, idempotencyKey };
}

/**
 * The same for every retry of this step's request, different for a re-run attempt, another job,
 * another step, another matrix leg (each runs on its own runner) or another request body.
 * Outside GitHub Actions there is nothing stable to derive it from, and the client makes one up.
 */
export function defaultIdempotencyKey(env: NodeJS.ProcessEnv, body: unknown): string | undefined {
  if (!env.GITHUB_RUN_ID) return undefined;
  const parts = [
    env.GITHUB_REPOSITORY,
    env.GITHUB_RUN_ID,
    env.GITHUB_RUN_ATTEMPT,
    env.GITHUB_JOB,
    env.GITHUB_ACTION,
    env.RUNNER_NAME,
    JSON.stringify(body)
  ];
  return `gha-${createHash('sha256').update(parts.join('\n')).digest('hex').slice(0, 40)}`;
}
