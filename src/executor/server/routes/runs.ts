// The run endpoints: create, read (with ETag and Prefer: wait), list, cancel, transcript. Each
// route declares its schemas (src/api/schemas.ts): requests are checked before the handler runs
// (validation.ts), answers are serialised by compiled code. What a schema cannot say stays here:
// the prompt's size in bytes, whether the environment exists, the Idempotency-Key.

import { createHash, randomUUID } from 'node:crypto';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Static } from 'typebox';
import {
  describeValue as kindOf,
  isTerminalState,
  isValidIdempotencyKey,
  IDEMPOTENCY_KEY_FORM
} from '../../../api/index.js';
import {
  CreateRunRequestSchema,
  CreateRunResponseSchema,
  ListRunsQuerySchema,
  ListRunsResponseSchema,
  RunParamsSchema,
  RunRecordSchema,
  TranscriptSchema
} from '../../../api/schemas.js';
import { agentKindOf } from '../../agents/index.js';
import type { StoredRun } from '../../store/types.js';
import { type Principal, authenticate } from '../auth.js';
import type { ServerContext } from '../context.js';
import { encodeCursor, listQuery } from '../list-params.js';
import { ProblemError } from '../problem.js';
import { etagOf, toRecord } from '../records.js';
import { readTranscript } from '../transcript.js';

const MAX_WAIT_SECONDS = 60;
const MAX_CANCEL_REASON = 500;

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal;
  }
}

export async function runRoutes(
  fastify: FastifyInstance,
  { context }: { context: ServerContext }
): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
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

  const createSchema = {
    schema: { body: CreateRunRequestSchema, response: { 200: CreateRunResponseSchema } }
  };
  const create = async (
    request: FastifyRequest<{ Body: Static<typeof CreateRunRequestSchema> }>,
    reply: { header(name: string, value: string): unknown }
  ) => {
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
    let stored: { config: string; extra: string; hash: string };
    try {
      stored = {
        config: JSON.stringify(body.config),
        extra: JSON.stringify(extraFields(body)),
        hash: canonicalHash(body)
      };
    } catch (error) {
      if (error instanceof RangeError)
        throw new ProblemError('invalid_request', 'the body is nested too deeply');
      throw error;
    }
    const environment = config.environments.find(env => env.id === environmentId);
    if (!environment) {
      const known = config.environments.map(env => env.id).join(', ');
      throw new ProblemError(
        'environment_not_found',
        `environment ${JSON.stringify(environmentId)} does not exist; this executor serves: ${known}`
      );
    }
    harnessProblem(body.config, environment.agent.kind);
    const principal = request.principal;
    const key = request.headers['idempotency-key'];
    if (key !== undefined && !isValidIdempotencyKey(key)) {
      throw new ProblemError('invalid_request', `Idempotency-Key header: expected ${IDEMPOTENCY_KEY_FORM}`);
    }
    const result = await store.createRun(
      {
        run_id: randomUUID(),
        team: principal.team,
        environment_id: environmentId,
        title: typeof body.title === 'string' ? body.title : null,
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
  app.post('/api/v1/agent/run', createSchema, create);
  app.post('/api/v1/agent/runs', createSchema, create);

  app.get(
    '/api/v1/agent/runs/:id',
    { schema: { params: RunParamsSchema, response: { 200: RunRecordSchema } } },
    async (request, reply) => {
      const { id } = request.params;
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
      if (current()) return (reply as FastifyReply).code(304).send();
      return toRecord(run, links);
    }
  );

  app.get(
    '/api/v1/agent/runs',
    { schema: { querystring: ListRunsQuerySchema, response: { 200: ListRunsResponseSchema } } },
    async request => {
      const query = listQuery(request.query);
      const rows = await store.listRuns(request.principal.team, { ...query, limit: query.limit + 1 });
      const page = rows.slice(0, query.limit);
      const more = rows.length > query.limit;
      return {
        runs: page.map(run => toRecord(run, links)),
        page_info: {
          has_next_page: more,
          next_cursor: more ? encodeCursor(page.at(-1)!, query.sortBy!, query.sortOrder!) : null
        }
      };
    }
  );

  app.post(
    '/api/v1/agent/runs/:id/cancel',
    { schema: { params: RunParamsSchema } },
    async (request, reply) => {
      const { id } = request.params;
      const reason = cancelReason(request.body);
      const result = await store.cancelRun(request.principal.team, id, new Date().toISOString(), reason);
      if (result.kind === 'not_found') throw notFound(id);
      if (result.kind === 'finished')
        throw new ProblemError(
          'run_already_finished',
          `run ${id} already ended ${result.run.state}; there is nothing to cancel`
        );
      return reply.type('application/json').send(JSON.stringify(result.run.run_id));
    }
  );

  app.get(
    '/api/v1/agent/runs/:id/transcript',
    { schema: { params: RunParamsSchema, response: { 200: TranscriptSchema } } },
    async (request, reply) =>
      readTranscript(context, request, reply, () => findRun(request, request.params.id))
  );

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

/**
 * A run's `config.harness.type` must be the one its environment's agent serves (a harness kind
 * serves one: claude-code serves `claude`); other kinds run whatever they were given.
 */
function harnessProblem(runConfig: Record<string, unknown>, kind: string): void {
  const harness = runConfig.harness;
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

/** The body's fields beyond prompt, config and title, kept (metadata, skill, …) unless the server owns them. */
function extraFields(body: Record<string, unknown>): Record<string, unknown> {
  const extra: Record<string, unknown> = {};
  for (const name of Object.keys(body)) {
    if (name !== 'prompt' && name !== 'config' && name !== 'title' && !SERVER_FIELDS.has(name))
      extra[name] = body[name];
  }
  return extra;
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
