// The run endpoints: create, read (with ETag and Prefer: wait), list, cancel, transcript.

import { createHash, randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  KNOWN_STATES,
  describeValue as kindOf,
  isTerminalState,
  isValidIdempotencyKey,
  IDEMPOTENCY_KEY_FORM
} from '../../../api/index.js';
import type { ListQuery, StoredRun } from '../../store/types.js';
import { type Principal, authenticate } from '../auth.js';
import type { ServerContext } from '../context.js';
import { ProblemError } from '../problem.js';
import { etagOf, toRecord } from '../records.js';

const MAX_WAIT_SECONDS = 60;
const MAX_CANCEL_REASON = 500;

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal;
  }
}

export async function runRoutes(
  app: FastifyInstance,
  { context }: { context: ServerContext }
): Promise<void> {
  const { store, config, links, hub, limiter } = context;

  app.decorateRequest('principal', null as unknown as Principal);
  app.addHook('onRequest', async request => {
    request.principal = await authenticate(store, request);
    const wait = limiter.take(request.principal.keyId);
    if (wait !== undefined) {
      throw new ProblemError(
        'rate_limited',
        `this key may send ${config.limits.rateLimitPerMinute} requests a minute; retry in ${wait} s`,
        { 'retry-after': String(wait) }
      );
    }
  });

  const create = async (request: FastifyRequest, reply: FastifyReply) => {
    if (context.draining)
      throw new ProblemError('shutting_down', 'the executor is shutting down and accepts no new runs', {
        'retry-after': '5'
      });
    const body = validateCreate(request.body, config.limits.maxPromptBytes);
    let stored: { config: string; extra: string; hash: string };
    try {
      stored = {
        config: JSON.stringify(body.config),
        extra: JSON.stringify(body.extra),
        hash: canonicalHash(request.body)
      };
    } catch (error) {
      if (error instanceof RangeError)
        throw new ProblemError('invalid_request', 'the body is nested too deeply');
      throw error;
    }
    if (!config.environments.some(env => env.id === body.environmentId)) {
      const known = config.environments.map(env => env.id).join(', ');
      throw new ProblemError(
        'environment_not_found',
        `environment ${JSON.stringify(body.environmentId)} does not exist; this executor serves: ${known}`
      );
    }
    const principal = request.principal;
    const key = request.headers['idempotency-key'];
    if (key !== undefined && !isValidIdempotencyKey(key)) {
      throw new ProblemError('invalid_request', `Idempotency-Key header: expected ${IDEMPOTENCY_KEY_FORM}`);
    }
    const result = await store.createRun(
      {
        run_id: randomUUID(),
        team: principal.team,
        environment_id: body.environmentId,
        title: body.title,
        prompt: body.prompt,
        config: stored.config,
        extra: stored.extra,
        creator_type: principal.kind === 'personal' ? 'user' : 'agent',
        creator_uid: principal.keyId,
        creator_name: principal.name,
        created_at: new Date().toISOString()
      },
      key === undefined ? undefined : { key, requestHash: stored.hash },
      config.limits.maxQueuedRuns
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
    if (result.kind === 'replayed') reply.header('idempotent-replayed', 'true');
    return { run_id: result.run.run_id, state: result.run.state };
  };
  app.post('/api/v1/agent/run', create);
  app.post('/api/v1/agent/runs', create);

  app.get('/api/v1/agent/runs/:id', async (request, reply) => {
    const { id } = request.params as { id: string };
    let run = await findRun(request, id);
    const wait = preferWait(String(request.headers.prefer ?? ''));
    const current = () => request.headers['if-none-match'] === etagOf(run);
    if (wait !== undefined) reply.header('preference-applied', `wait=${wait}`);
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
  });

  app.get('/api/v1/agent/runs', async request => {
    const query = parseListQuery(request.query as Record<string, string | string[] | undefined>);
    const rows = await store.listRuns(request.principal.team, { ...query, limit: query.limit + 1 });
    const page = rows.slice(0, query.limit);
    const more = rows.length > query.limit;
    return {
      runs: page.map(run => toRecord(run, links)),
      page_info: { has_next_page: more, next_cursor: more ? encodeCursor(page.at(-1)!.seq) : null }
    };
  });

  app.post('/api/v1/agent/runs/:id/cancel', async (request, reply) => {
    const { id } = request.params as { id: string };
    const reason = cancelReason(request.body);
    const message = reason === undefined ? undefined : `cancelled by a client: ${reason}`;
    const result = await store.cancelRun(request.principal.team, id, new Date().toISOString(), message);
    if (result.kind === 'not_found') throw notFound(id);
    if (result.kind === 'finished')
      throw new ProblemError(
        'run_already_finished',
        `run ${id} already ended ${result.run.state}; there is nothing to cancel`
      );
    return reply.type('application/json').send(JSON.stringify(result.run.run_id));
  });

  app.get('/api/v1/agent/runs/:id/transcript', async request => {
    const { id } = request.params as { id: string };
    const run = await findRun(request, id);
    return { run_id: run.run_id, state: run.state, events: await store.listEvents(run.run_id) };
  });

  async function findRun(request: FastifyRequest, id: string): Promise<StoredRun> {
    const run = await store.getRun(request.principal.team, id);
    if (!run) throw notFound(id);
    return run;
  }
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
  'artifacts'
]);

interface ValidCreate {
  prompt: string;
  environmentId: string;
  title: string | null;
  config: Record<string, unknown>;
  extra: Record<string, unknown>;
}

function validateCreate(body: unknown, maxPromptBytes: number): ValidCreate {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new ProblemError(
      'invalid_request',
      `the body must be a JSON object with prompt and config, got ${kindOf(body)}`
    );
  }
  const { prompt, config, title, ...rest } = body as Record<string, unknown>;
  // Other fields are kept (metadata, skill, …), but never ones the server owns.
  const extra = Object.fromEntries(Object.entries(rest).filter(([name]) => !SERVER_FIELDS.has(name)));
  const field = (detail: string) => new ProblemError('invalid_field', detail);
  if (typeof prompt !== 'string') throw field(`prompt: expected a string, got ${kindOf(prompt)}`);
  if (prompt.trim() === '') throw field('prompt: must not be empty');
  const bytes = Buffer.byteLength(prompt);
  if (bytes > maxPromptBytes) {
    throw new ProblemError(
      'prompt_too_large',
      `prompt: ${bytes} bytes is over the limit of ${maxPromptBytes} bytes`
    );
  }
  if (config === null || typeof config !== 'object' || Array.isArray(config)) {
    throw field(`config: expected an object with environment_id, got ${kindOf(config)}`);
  }
  const environmentId = (config as Record<string, unknown>).environment_id;
  if (typeof environmentId !== 'string' || environmentId.trim() === '') {
    throw field(`config.environment_id: expected a non-empty string, got ${kindOf(environmentId)}`);
  }
  if (title !== undefined && title !== null && typeof title !== 'string') {
    throw field(`title: expected a string, got ${kindOf(title)}`);
  }
  return {
    prompt,
    environmentId,
    title: typeof title === 'string' ? title : null,
    config: config as Record<string, unknown>,
    extra
  };
}

/** The optional body of a cancel, `{"reason": "…"}`: the reason, or undefined without one. */
function cancelReason(body: unknown): string | undefined {
  if (body === undefined || body === null) return undefined;
  const reason =
    typeof body === 'object' && !Array.isArray(body) ? (body as { reason?: unknown }).reason : body;
  if (reason === undefined) return undefined;
  if (typeof reason !== 'string' || reason.trim() === '' || reason.length > MAX_CANCEL_REASON) {
    throw new ProblemError(
      'invalid_field',
      `reason: expected a string of 1–${MAX_CANCEL_REASON} characters, got ${kindOf(reason)}`
    );
  }
  return reason.trim();
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

/** `Prefer: wait=N` (RFC 7240), capped at 60 s; undefined when absent. */
function preferWait(header: string | undefined): number | undefined {
  const match = /(?:^|[,;\s])wait\s*=\s*"?(\d+)"?/i.exec(header ?? '');
  return match ? Math.min(MAX_WAIT_SECONDS, Number(match[1])) : undefined;
}

function encodeCursor(seq: number): string {
  return Buffer.from(`s:${seq}`).toString('base64url');
}

function parseListQuery(query: Record<string, string | string[] | undefined>): ListQuery {
  const bad = (name: string, value: unknown, expected: string) =>
    new ProblemError('invalid_request', `${name} ${JSON.stringify(value)}: expected ${expected}`);
  const one = (name: string): string | undefined => {
    const value = query[name];
    if (Array.isArray(value)) throw bad(name, value, 'a single value');
    return value;
  };
  const result: ListQuery = { limit: 20 };
  const limit = one('limit');
  if (limit !== undefined) {
    if (!/^\d+$/.test(limit) || Number(limit) < 1 || Number(limit) > 100)
      throw bad('limit', limit, 'a whole number from 1 to 100');
    result.limit = Number(limit);
  }
  const cursor = one('cursor');
  if (cursor !== undefined && cursor !== '') {
    const match = /^s:(\d{1,15})$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (!match) throw bad('cursor', cursor, 'the next_cursor of a previous page');
    result.beforeSeq = Number(match[1]);
  }
  const states =
    query.state === undefined ? [] : ([] as string[]).concat(query.state).flatMap(s => s.split(','));
  for (const state of states) {
    if (!(KNOWN_STATES as readonly string[]).includes(state))
      throw bad('state', state, `one of ${KNOWN_STATES.join(', ')}`);
  }
  if (states.length > 0) result.states = states;
  const environment = one('environment_id');
  if (environment !== undefined && environment !== '') result.environmentId = environment;
  for (const [name, key] of [
    ['created_after', 'createdAfter'],
    ['created_before', 'createdBefore']
  ] as const) {
    const value = one(name);
    if (value === undefined || value === '') continue;
    const time = Date.parse(value);
    if (Number.isNaN(time) || !/^\d{4}-\d{2}-\d{2}/.test(value))
      throw bad(name, value, 'an RFC 3339 timestamp such as 2026-01-31T12:00:00Z');
    result[key] = new Date(time).toISOString();
  }
  return result;
}
