// The run endpoints: create, read (with ETag and Prefer: wait), list, cancel, transcript, as a
// handler map keyed by endpoint name (register.ts gives them their paths, schemas and the key
// check from src/api/endpoints.ts). Requests are checked by the schemas before a handler runs;
// what a schema cannot say stays here: the prompt's size in bytes, whether the environment
// exists, the Idempotency-Key. Plain reads and list pages are answered from the read cache while
// the store has not changed (read-cache.ts).

import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import {
  isTerminalState,
  isValidIdempotencyKey,
  IDEMPOTENCY_KEY_FORM,
  MAX_WAIT_SECONDS
} from '../../../api/index.js';
import {
  MAX_CONFIG_BYTES,
  MAX_EXTRA_FIELDS_BYTES,
  MAX_METADATA_PAIRS,
  MAX_RUN_DEPTH
} from '../../../api/schemas.js';
import { agentKindOf } from '../../agents/index.js';
import { mcpServersProblem, modelIdProblem } from '../../agents/harness/input.js';
import { runsWithin } from '../../store/rows.js';
import type { StoredRun } from '../../store/types.js';
import type { ServerContext } from '../context.js';
import { encodeCursor, listQuery } from '../list-params.js';
import { ProblemError } from '../problem.js';
import type { ReadCache } from '../read-cache.js';
import { etagOf, toRecord } from '../records.js';
import { readTranscript } from '../transcript-wait.js';
import { checkOrchestrable, followupMode, checkMetadata } from '../run-fields.js';
import type { EndpointRequest, Handlers } from './register.js';
import { newRunId } from '../../runs/run-id.js';

const JSON_TYPE = 'application/json; charset=utf-8';
/**
 * Most characters of stored text (prompt, title, config, kept fields, status, artifacts, usage) the
 * runs of one list page carry: a page of runs at their largest stops after about five. This bounds
 * each list's work on the event loop and what the page cache holds.
 */
export const MAX_PAGE_WEIGHT = 1024 * 1024;
/** How the scheduler's idempotency keys begin (schedules/scheduler.ts). */
const SCHEDULER_KEY_PREFIX = 'schedule:';
/** How the keys an orchestrate run's token sends are stored: `run:<its run id>:<key>`. */
const ORCHESTRATOR_KEY_PREFIX = 'run:';

export function runHandlers(
  context: ServerContext,
  reads: ReadCache
): Handlers<
  'createRun' | 'createRunLegacy' | 'listRuns' | 'getRun' | 'cancelRun' | 'submitFollowup' | 'getTranscript'
> {
  const { store, config, links, hub } = context;

  const create = async (request: EndpointRequest<'createRun'>, reply: FastifyReply) => {
    if (context.draining)
      throw new ProblemError('shutting_down', 'the executor is shutting down and accepts no new runs', {
        'retry-after': '5'
      });
    const body = request.body;
    const bytes = Buffer.byteLength(body.prompt);
    if (bytes > config.limits.maxPromptBytes) {
      throw new ProblemError(
        'prompt_too_large',
        `prompt: ${bytes} bytes is over the limit of ${config.limits.maxPromptBytes} bytes`
      );
    }
    const environmentId = body.config.environment_id;
    const asked = body as { metadata?: unknown; mode?: unknown; parent_run_id?: unknown };
    checkMetadata(asked.metadata);
    const parent = await parentOf(asked.parent_run_id, request.principal.team);
    const key = request.headers['idempotency-key'];
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
    const environment = config.environments.find(env => env.id === environmentId);
    if (!environment) {
      const known = config.environments.map(env => env.id).join(', ');
      throw new ProblemError(
        'environment_not_found',
        `environment ${JSON.stringify(environmentId)} does not exist; this executor serves: ${known}`
      );
    }
    checkHarnessConfig(body.config, environment.agent.kind);
    if (followupMode(asked.mode) === 'orchestrate') checkOrchestrable(environment);
    await checkConversation(body as { conversation_id?: unknown }, request.principal.team, environmentId);
    const principal = request.principal;
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
    const storedKey =
      key !== undefined && principal.orchestrator
        ? `${ORCHESTRATOR_KEY_PREFIX}${principal.orchestrator.runId}:${key}`
        : key;
    const result = await store.createRun(
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
      config.limits.maxQueuedRuns,
      config.limits.maxQueuedRunsPerTeam
    );
    if (result.kind === 'key_reused') {
      throw new ProblemError(
        'idempotency_key_reused',
        `Idempotency-Key ${JSON.stringify(key)} was already used with a different request body`
      );
    }
    if (result.kind === 'queue_full') {
      throw new ProblemError(
        'resource_unavailable',
        `the queue holds ${config.limits.maxQueuedRuns} runs, its limit; retry later`,
        { 'retry-after': '10' }
      );
    }
    if (result.kind === 'team_queue_full') {
      throw new ProblemError(
        'resource_unavailable',
        `this team's queued runs reached its limit, limits.max_queued_runs_per_team: ${config.limits.maxQueuedRunsPerTeam}; retry later`,
        { 'retry-after': '10' }
      );
    }
    if (result.kind === 'replayed') reply.header('idempotent-replayed', 'true');
    return { run_id: result.run.run_id, state: result.run.state };
  };

  /**
   * A create's `parent_run_id` names a run of the key's team (else 404, as for any run it cannot
   * see) at most MAX_RUN_DEPTH - 1 levels below a root, so the child is at most MAX_RUN_DEPTH
   * below it (else 400 naming the limit). Undefined for a root run.
   */
  async function parentOf(id: unknown, team: string): Promise<StoredRun | undefined> {
    if (id === undefined || id === null) return undefined;
    if (typeof id !== 'string')
      throw new ProblemError('invalid_field', 'parent_run_id: expected a run id (a string)');
    const parent = await store.getRun(team, id);
    if (!parent) throw notFound(id);
    const above = await store.ancestorCount(team, id);
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
    const earlier = await store.getRun(team, id);
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
    const since = new Date(Date.now() - config.workspaces.continueForMs).toISOString();
    if ((earlier.completed_at ?? earlier.updated_at) < since)
      throw new ProblemError(
        'run_not_continuable',
        `conversation_id ${shown}: that run ended longer ago than workspaces.continue_for; its workspace is gone`
      );
  }

  async function findRun(request: FastifyRequest, id: string): Promise<StoredRun> {
    const run = await store.getRun(request.principal.team, id);
    if (!run) throw notFound(id);
    return run;
  }

  return {
    createRun: create,
    createRunLegacy: create,

    getRun: async (request, reply) => {
      const id = request.params.run_id;
      const prefer = request.headers.prefer;
      const wait = prefer === undefined ? undefined : preferWait(String(prefer));
      if (wait === undefined) {
        // The plain read (no hold): the serialised record, kept while the store is unchanged.
        const read = await reads.body(`run\n${request.principal.team}\n${id}`, async () => {
          const run = await findRun(request, id);
          return { etag: etagOf(run), body: reply.serialize(toRecord(run, links)) };
        });
        reply.header('etag', read.etag);
        if (request.headers['if-none-match'] === read.etag) return reply.code(304).send();
        return reply.type(JSON_TYPE).send(read.body);
      }
      let run = await findRun(request, id);
      const current = () => request.headers['if-none-match'] === etagOf(run);
      reply.header('preference-applied', `wait=${wait}`);
      if (wait && current() && !isTerminalState(run.state)) {
        const closed = new AbortController();
        request.raw.once('close', () => closed.abort());
        const deadline = Date.now() + wait * 1000;
        // A wake may be a change heard twice (notification and fallback poll): wait on until this
        // run really moved, the time is up, the client left or the server is stopping.
        // Each wait also ends at once for a change heard while the run was being read (versions are
        // announced only after they are committed, so the next read sees them).
        while (!closed.signal.aborted && !context.draining && Date.now() < deadline) {
          await hub.wait(run.run_id, run.version, deadline - Date.now(), closed.signal);
          run = await findRun(request, id);
          if (!current() || isTerminalState(run.state)) break;
        }
      }
      reply.header('etag', etagOf(run));
      if (current()) return reply.code(304).send();
      return toRecord(run, links);
    },

    listRuns: async (request, reply) => {
      const search = request.url.slice(request.url.indexOf('?') + 1 || request.url.length);
      // An orchestrate run's token lists below its run even when the URL names no ancestor
      // (run-token.ts filled it in): its pages are never a team key's.
      const below = request.principal.orchestrator ? `\nbelow ${request.query.ancestor_run_id}` : '';
      const read = await reads.body(`list\n${request.principal.team}${below}\n${search}`, async () => {
        const query = listQuery(request.query);
        const rows = await store.listRuns(request.principal.team, {
          ...query,
          limit: query.limit + 1,
          maxWeight: MAX_PAGE_WEIGHT
        });
        // A page ends at `limit` runs, or earlier once its runs' stored text passes MAX_PAGE_WEIGHT.
        const page = rows.slice(0, Math.min(query.limit, runsWithin(rows, MAX_PAGE_WEIGHT)));
        const more = rows.length > page.length;
        return {
          body: reply.serialize({
            runs: page.map(run => toRecord(run, links)),
            page_info: {
              has_next_page: more,
              next_cursor: more ? encodeCursor(page.at(-1)!, query.sortBy!, query.sortOrder!) : null
            }
          })
        };
      });
      return reply.type(JSON_TYPE).send(read.body);
    },

    cancelRun: async (request, reply) => {
      const id = request.params.run_id;
      // The schema bounds the reason (MAX_CANCEL_REASON); blank around it is not kept.
      const reason = request.body?.reason?.trim();
      const result = await store.cancelRun(request.principal.team, id, new Date().toISOString(), reason);
      if (result.kind === 'not_found') throw notFound(id);
      if (result.kind === 'finished')
        throw new ProblemError(
          'run_already_finished',
          `run ${id} already ended ${result.run.state}; there is nothing to cancel`
        );
      return reply.type('application/json').send(JSON.stringify(result.run.run_id));
    },

    submitFollowup: async request => {
      const id = request.params.run_id;
      const mode = followupMode(request.body.mode);
      if (mode === 'orchestrate') {
        const run = await store.getRun(request.principal.team, id);
        if (!run) throw notFound(id);
        const environment = config.environments.find(env => env.id === run.environment_id);
        if (environment) checkOrchestrable(environment);
      }
      if (context.draining)
        throw new ProblemError('shutting_down', 'the executor is shutting down and accepts no follow-ups', {
          'retry-after': '5'
        });
      const now = Date.now();
      const since = new Date(now - config.workspaces.continueForMs).toISOString();
      const result = await store.submitFollowup(
        request.principal.team,
        id,
        { message: request.body.message, mode },
        new Date(now).toISOString(),
        since,
        { maxQueued: config.limits.maxQueuedRuns, maxQueuedPerTeam: config.limits.maxQueuedRunsPerTeam }
      );
      if (result.kind === 'not_found') throw notFound(id);
      if (result.kind === 'queue_full')
        throw new ProblemError(
          'resource_unavailable',
          `run ${id} has ended, and continuing it would queue it again: the queue holds ${config.limits.maxQueuedRuns} runs, its limit; retry later`,
          { 'retry-after': '10' }
        );
      if (result.kind === 'team_queue_full')
        throw new ProblemError(
          'resource_unavailable',
          `run ${id} has ended, and continuing it would queue it again: this team's queued runs reached its limit, limits.max_queued_runs_per_team: ${config.limits.maxQueuedRunsPerTeam}; retry later`,
          { 'retry-after': '10' }
        );
      if (result.kind === 'expired')
        throw new ProblemError(
          'run_not_continuable',
          `run ${id} ended ${result.run.state} at ${result.run.completed_at ?? result.run.updated_at}, longer ago than workspaces.continue_for (${Math.round(config.workspaces.continueForMs / 60_000)} min): its workspace is gone, so it cannot be continued; start a new run`
        );
      return { run_id: result.run.run_id, state: result.run.state };
    },

    getTranscript: async (request, reply) =>
      readTranscript(context, request, reply, () => findRun(request, request.params.run_id))
  };
}

function notFound(id: string): ProblemError {
  return new ProblemError(
    'not_found',
    `run ${JSON.stringify(id.slice(0, 100))} does not exist or is not visible to this key`
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
 * A run's `config.harness.type` must be the one its environment's agent serves (a harness kind
 * serves one: claude-code serves `claude`); other kinds run whatever they were given. A harness
 * kind's model ids (`config.model_id`, `config.harness.model_id`) must look like model ids, and
 * whatever the kind, `config.mcp_servers` stays within its bounds (input.ts) and the whole config
 * within MAX_CONFIG_BYTES.
 */
export function checkHarnessConfig(runConfig: Record<string, unknown>, kind: string): void {
  const mcp = mcpServersProblem(runConfig.mcp_servers);
  if (mcp) throw new ProblemError('invalid_field', mcp);
  // The config is in every record and list page of the run: its size is every later read's cost.
  const bytes = Buffer.byteLength(JSON.stringify(runConfig));
  if (bytes > MAX_CONFIG_BYTES) {
    const [largest, size] = largestField(runConfig);
    throw new ProblemError(
      'invalid_field',
      `config.${largest.slice(0, 100)}: ${size} bytes of JSON; config may take ${MAX_CONFIG_BYTES} bytes in all (64 KiB), this one takes ${bytes}`
    );
  }
  const harness = runConfig.harness;
  // A harness puts the model on its CLI's command line: it must look like a model id, not an option.
  if (agentKindOf(kind)?.harnessType !== undefined) {
    const inner = harness !== null && typeof harness === 'object' ? (harness as Record<string, unknown>) : {};
    const problem =
      modelIdProblem(runConfig.model_id, 'config.model_id') ??
      modelIdProblem(inner.model_id, 'config.harness.model_id');
    if (problem) throw new ProblemError('invalid_field', problem);
  }
  if (harness === undefined || harness === null) return;
  const type = typeof harness === 'object' ? (harness as { type?: unknown }).type : undefined;
  if (
    typeof harness !== 'object' ||
    Array.isArray(harness) ||
    (type !== undefined && typeof type !== 'string')
  )
    throw new ProblemError('invalid_field', 'config.harness: expected an object such as {"type": "claude"}');
  const serves = agentKindOf(kind)?.harnessType;
  if (type === undefined || serves === undefined || type === serves) return;
  throw new ProblemError(
    'invalid_field',
    `config.harness.type ${JSON.stringify(type.slice(0, 40))}: this environment runs the ${kind} agent, which serves harness type ${JSON.stringify(serves)}`
  );
}

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

/** The field of `object` whose value takes the most bytes of JSON, and how many. */
function largestField(object: Record<string, unknown>): readonly [string, number] {
  const sizes = Object.entries(object).map(
    ([name, value]) => [name, Buffer.byteLength(JSON.stringify(value) ?? '')] as const
  );
  return sizes.reduce((a, b) => (b[1] > a[1] ? b : a), ['', 0] as const);
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

/** `Prefer: wait=N` (RFC 7240), capped at MAX_WAIT_SECONDS; undefined when absent. */
function preferWait(header: string | undefined): number | undefined {
  const match = /(?:^|[,;\s])wait\s*=\s*"?(\d+)"?/i.exec(header ?? '');
  return match ? Math.min(MAX_WAIT_SECONDS, Number(match[1])) : undefined;
}
