// Creating a run (POST /agent/run, and its legacy path): what the schema cannot say is checked
// here before the run is stored: the prompt's size in bytes, the environment, the parent run and the
// run it continues, the agent config against the environment's kind, the kept fields' size, and the
// Idempotency-Key (the scheduler's and orchestrate runs' keys have spaces of their own). A key
// reused with the same body replays the first answer.

import { createHash } from 'node:crypto';
import type { FastifyReply } from 'fastify';
import { isTerminalState, isValidIdempotencyKey, IDEMPOTENCY_KEY_FORM } from '../../../api/index.js';
import { MAX_EXTRA_FIELDS_BYTES, MAX_METADATA_PAIRS, MAX_RUN_DEPTH } from '../../../api/schemas.js';
import { newRunId } from '../../runs/run-id.js';
import type { RunRecordStore, StoredRun } from '../../store/types.js';
import type { Principal } from '../auth.js';
import type { ServerContext } from '../context.js';
import { ProblemError } from '../problem.js';
import {
  checkHarnessConfig,
  checkMetadata,
  checkOrchestrable,
  followupMode,
  largestField
} from '../run-fields.js';
import type { EndpointRequest, RouteContext } from './handler.js';
import { notFound } from './runs.js';

/** How the scheduler's idempotency keys begin (schedules/scheduler.ts). */
const SCHEDULER_KEY_PREFIX = 'schedule:';
/** How the keys an orchestrate run's token sends are stored: `run:<its run id>:<key>`. */
const ORCHESTRATOR_KEY_PREFIX = 'run:';

export async function createRun(
  context: RouteContext,
  request: EndpointRequest<'createRun'>,
  reply: FastifyReply
): Promise<{ run_id: string; state: string }> {
  if (context.draining)
    throw new ProblemError('shutting_down', 'the executor is shutting down and accepts no new runs', {
      'retry-after': '5'
    });
  const { body, principal } = request;
  const { limits, environments } = context.settings;
  const bytes = Buffer.byteLength(body.prompt);
  if (bytes > limits.maxPromptBytes) {
    throw new ProblemError(
      'prompt_too_large',
      `prompt: ${bytes} bytes is over the limit of ${limits.maxPromptBytes} bytes`
    );
  }
  const environmentId = body.config.environment_id;
  const asked = body as { metadata?: unknown; mode?: unknown; parent_run_id?: unknown };
  checkMetadata(asked.metadata);
  const parent = await parentOf(context.stores.runs, asked.parent_run_id, principal.team);
  const key = request.headers['idempotency-key'];
  const stored = storedFields(body, parent, key);
  const environment = environments.find(env => env.id === environmentId);
  if (!environment) {
    const known = environments.map(env => env.id).join(', ');
    throw new ProblemError(
      'environment_not_found',
      `environment ${JSON.stringify(environmentId)} does not exist; this executor serves: ${known}`
    );
  }
  checkHarnessConfig(body.config, environment.agent.kind);
  if (followupMode(asked.mode) === 'orchestrate') checkOrchestrable(environment);
  await checkConversation(context, body as { conversation_id?: unknown }, principal.team, environmentId);
  const storedKey = storedIdempotencyKey(key, principal);
  const result = await context.stores.runs.createRun(
    {
      run_id: newRunId(),
      team: principal.team,
      environment_id: environmentId,
      title: typeof body.title === 'string' ? body.title : null,
      prompt: body.prompt,
      config: stored.config,
      extra: stored.extra,
      creator_type: principal.kind === 'personal' ? 'user' : 'agent',
      creator_uid: principal.keyId,
      creator_name: principal.name,
      workload: principal.workload ? JSON.stringify(principal.workload) : null,
      created_at: new Date().toISOString()
    },
    storedKey === undefined ? undefined : { key: storedKey, requestHash: stored.hash! },
    limits.maxQueuedRuns,
    limits.maxQueuedRunsPerTeam
  );
  if (result.kind !== 'created' && result.kind !== 'replayed') throw refusal(result.kind, key, limits);
  if (result.kind === 'replayed') reply.header('idempotent-replayed', 'true');
  return { run_id: result.run.run_id, state: result.run.state };
}

/** What is stored of the body beyond the prompt: the config and kept fields as JSON, and the body's hash. */
function storedFields(
  body: Record<string, unknown>,
  parent: StoredRun | undefined,
  key: unknown
): { config: string; extra: string; hash: string | undefined } {
  let stored: { config: string; extra: string; hash: string | undefined };
  try {
    stored = {
      config: JSON.stringify(body.config),
      extra: JSON.stringify(inheritMetadata(extraFields(body), parent)),
      // Only a create with an Idempotency-Key is compared with an earlier one: the others skip
      // the sorted copy of the body and its SHA-256.
      hash: key === undefined ? undefined : canonicalHash(body)
    };
  } catch (error) {
    if (error instanceof RangeError)
      throw new ProblemError('invalid_request', 'the body is nested too deeply');
    throw error;
  }
  checkExtraFields(stored.extra, body);
  return stored;
}

/** The Idempotency-Key as stored (an orchestrate run's in a space of its own), once its form is checked. */
function storedIdempotencyKey(key: string | string[] | undefined, principal: Principal): string | undefined {
  if (key !== undefined && !isValidIdempotencyKey(key)) {
    throw new ProblemError('invalid_request', `Idempotency-Key header: expected ${IDEMPOTENCY_KEY_FORM}`);
  }
  // The scheduler's fires use `schedule:<id>:<due>` in the team's key space: a key of the team
  // that took one first would stop that fire from starting its run.
  if (key?.startsWith(SCHEDULER_KEY_PREFIX))
    throw new ProblemError(
      'invalid_request',
      `Idempotency-Key header: keys starting with "${SCHEDULER_KEY_PREFIX}" are the scheduler's own; choose another`
    );
  // An orchestrate run's keys live in a space of their own (`run:<id>:<key>`): with the team's, a
  // hostile agent replaying a key and body of the team would learn which run they made.
  if (key?.startsWith(ORCHESTRATOR_KEY_PREFIX))
    throw new ProblemError(
      'invalid_request',
      `Idempotency-Key header: keys starting with "${ORCHESTRATOR_KEY_PREFIX}" are orchestrate runs' own; choose another`
    );
  return key !== undefined && principal.orchestrator
    ? `${ORCHESTRATOR_KEY_PREFIX}${principal.orchestrator.runId}:${key}`
    : key;
}

/** The problem for a create the store refused: a key reused with another body, or a full queue. */
function refusal(
  kind: 'key_reused' | 'queue_full' | 'team_queue_full',
  key: unknown,
  limits: ServerContext['settings']['limits']
): ProblemError {
  if (kind === 'key_reused')
    return new ProblemError(
      'idempotency_key_reused',
      `Idempotency-Key ${JSON.stringify(key)} was already used with a different request body`
    );
  if (kind === 'queue_full')
    return new ProblemError(
      'resource_unavailable',
      `the queue holds ${limits.maxQueuedRuns} runs, its limit; retry later`,
      { 'retry-after': '10' }
    );
  return new ProblemError(
    'resource_unavailable',
    `this team's queued runs reached its limit, limits.max_queued_runs_per_team: ${limits.maxQueuedRunsPerTeam}; retry later`,
    { 'retry-after': '10' }
  );
}

/** The legacy create path: the same request, the same answer. */
export const createRunLegacy = createRun;

/**
 * A create's `parent_run_id` names a run of the key's team (else 404, as for any run it cannot
 * see) at most MAX_RUN_DEPTH - 1 levels below a root, so the child is at most MAX_RUN_DEPTH
 * below it (else 400 naming the limit). Undefined for a root run.
 */
async function parentOf(
  runs: Pick<RunRecordStore, 'getRun' | 'ancestorCount'>,
  id: unknown,
  team: string
): Promise<StoredRun | undefined> {
  if (id === undefined || id === null) return undefined;
  if (typeof id !== 'string')
    throw new ProblemError('invalid_field', 'parent_run_id: expected a run id (a string)');
  const parent = await runs.getRun(team, id);
  if (!parent) throw notFound(id);
  const above = await runs.ancestorCount(team, id);
  if (above + 1 > MAX_RUN_DEPTH)
    throw new ProblemError(
      'invalid_request',
      `parent_run_id ${JSON.stringify(id)}: that run is ${above} levels below its root run; a child run may be at most ${MAX_RUN_DEPTH} levels below a root (the limit of run depth)`
    );
  return parent;
}

/**
 * A create's `conversation_id` names an ended run of the key's team in the same environment,
 * whose workspace is still kept (workspaces.continue_for): the new run starts from its tree.
 */
async function checkConversation(
  context: Pick<ServerContext, 'stores' | 'settings'>,
  body: { conversation_id?: unknown },
  team: string,
  environmentId: string
): Promise<void> {
  const id = body.conversation_id;
  if (id === undefined || id === null) return;
  if (typeof id !== 'string' || id.trim() === '')
    throw new ProblemError(
      'invalid_field',
      'conversation_id: expected the run id of an earlier run (a string)'
    );
  const shown = JSON.stringify(id.slice(0, 100));
  const earlier = await context.stores.runs.getRun(team, id);
  if (!earlier)
    throw new ProblemError(
      'invalid_field',
      `conversation_id ${shown}: no run of this key's team has that id`
    );
  if (earlier.environment_id !== environmentId)
    throw new ProblemError(
      'invalid_field',
      `conversation_id ${shown}: that run ran in environment ${JSON.stringify(earlier.environment_id)}; a run continuing it must use the same environment`
    );
  if (!isTerminalState(earlier.state))
    throw new ProblemError(
      'run_not_continuable',
      `conversation_id ${shown}: that run is ${earlier.state}; wait until it ends, or send it a follow-up instead`
    );
  const since = new Date(Date.now() - context.settings.workspaces.continueForMs).toISOString();
  if ((earlier.completed_at ?? earlier.updated_at) < since)
    throw new ProblemError(
      'run_not_continuable',
      `conversation_id ${shown}: that run ended longer ago than workspaces.continue_for; its workspace is gone`
    );
}

const SERVER_FIELDS = new Set([
  'run_id',
  'task_id',
  'state',
  'environment_id',
  'created_at',
  'updated_at',
  'started_at',
  'completed_at',
  'status_message',
  'error_code',
  'session_link',
  'session_id',
  'creator',
  'agent_config',
  'source',
  'run_time',
  'request_usage',
  'workload',
  'artifacts',
  // set only by the scheduler: a create body cannot pass its run off as a schedule's
  'schedule_id',
  'scheduled_for'
]);

/**
 * A child's metadata: its own pairs, then the parent's keys it does not set, while the pairs stay
 * within MAX_METADATA_PAIRS (its own come first).
 */
function inheritMetadata(
  extra: Record<string, unknown>,
  parent: StoredRun | undefined
): Record<string, unknown> {
  if (!parent || parent.extra === '{}') return extra;
  const inherited = (JSON.parse(parent.extra) as { metadata?: unknown }).metadata;
  if (inherited === null || typeof inherited !== 'object' || Array.isArray(inherited)) return extra;
  const own = (extra.metadata ?? {}) as Record<string, unknown>;
  const merged: Record<string, unknown> = { ...own };
  for (const [key, value] of Object.entries(inherited)) {
    if (Object.keys(merged).length >= MAX_METADATA_PAIRS) break;
    if (!(key in merged) && typeof value === 'string') merged[key] = value;
  }
  return Object.keys(merged).length === 0 ? extra : { ...extra, metadata: merged };
}

/** The body's fields beyond prompt, config and title, kept (metadata, skill, …) unless the server owns them. */
function extraFields(body: Record<string, unknown>): Record<string, unknown> {
  const extra: Record<string, unknown> = {};
  for (const name of Object.keys(body)) {
    if (name !== 'prompt' && name !== 'config' && name !== 'title' && !SERVER_FIELDS.has(name))
      extra[name] = body[name];
  }
  return extra;
}

/**
 * The fields a create keeps beyond prompt, config and title are bounded in total: every record and
 * list page carries them, so their size is every later read's cost. The problem names the largest.
 */
function checkExtraFields(extra: string, body: Record<string, unknown>): void {
  const bytes = Buffer.byteLength(extra);
  if (bytes <= MAX_EXTRA_FIELDS_BYTES) return;
  const [largest, size] = largestField(extraFields(body));
  throw new ProblemError(
    'invalid_field',
    `${largest.slice(0, 100)}: ${size} bytes of JSON; the fields beyond prompt, config and title may take ${MAX_EXTRA_FIELDS_BYTES} bytes in all (64 KiB), these take ${bytes}`
  );
}

/** SHA-256 of the body with object keys sorted, so the same request always hashes the same. */
function canonicalHash(body: unknown): string {
  const canonical = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(canonical);
    if (value !== null && typeof value === 'object') {
      return Object.fromEntries(
        Object.keys(value)
          .sort()
          .map(key => [key, canonical((value as Record<string, unknown>)[key])])
      );
    }
    return value;
  };
  return createHash('sha256')
    .update(JSON.stringify(canonical(body)))
    .digest('hex');
}
