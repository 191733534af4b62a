// The run endpoints beyond create (create-run.ts): read (with ETag and Prefer: wait), list, cancel,
// follow up and the transcript, one module-level handler each. Requests are checked by the schemas
// before a handler runs. Plain reads and list pages are answered from the read cache while the store
// has not changed (read-cache.ts).

import type { FastifyReply, FastifyRequest } from 'fastify';
import { isTerminalState, MAX_WAIT_SECONDS } from '../../../api/index.js';
import { runsWithin } from '../../store/rows.js';
import type { StoredRun } from '../../store/types.js';
import type { ServerContext } from '../context.js';
import { encodeCursor, listQuery } from '../list-params.js';
import { ProblemError } from '../problem.js';
import { etagOf, toRecord } from '../records.js';
import { checkOrchestrable, followupMode } from '../run-fields.js';
import { readTranscript } from '../transcript-wait.js';
import type { EndpointRequest, RouteContext } from './handler.js';

const JSON_TYPE = 'application/json; charset=utf-8';
/**
 * Most characters of stored text (prompt, title, config, kept fields, status, artifacts, usage) the
 * runs of one list page carry: a page of runs at their largest stops after about five. This bounds
 * each list's work on the event loop and what the page cache holds.
 */
export const MAX_PAGE_WEIGHT = 1024 * 1024;

export async function getRun(context: RouteContext, request: EndpointRequest<'getRun'>, reply: FastifyReply) {
  const id = request.params.run_id;
  const prefer = request.headers.prefer;
  const wait = prefer === undefined ? undefined : preferWait(String(prefer));
  if (wait === undefined) {
    // The plain read (no hold): the serialised record, kept while the store is unchanged.
    const read = await context.reads.body(`run\n${request.principal.team}\n${id}`, async () => {
      const run = await findRun(context, request, id);
      return { etag: etagOf(run), body: reply.serialize(toRecord(run, context.links)) };
    });
    reply.header('etag', read.etag);
    if (request.headers['if-none-match'] === read.etag) return reply.code(304).send();
    return reply.type(JSON_TYPE).send(read.body);
  }
  let run = await findRun(context, request, id);
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
      await context.hub.wait(run.run_id, run.version, deadline - Date.now(), closed.signal);
      run = await findRun(context, request, id);
      if (!current() || isTerminalState(run.state)) break;
    }
  }
  reply.header('etag', etagOf(run));
  if (current()) return reply.code(304).send();
  return toRecord(run, context.links);
}

export async function listRuns(
  context: RouteContext,
  request: EndpointRequest<'listRuns'>,
  reply: FastifyReply
) {
  const search = request.url.slice(request.url.indexOf('?') + 1 || request.url.length);
  // An orchestrate run's token lists below its run even when the URL names no ancestor
  // (run-token.ts filled it in): its pages are never a team key's.
  const below = request.principal.orchestrator ? `\nbelow ${request.query.ancestor_run_id}` : '';
  const read = await context.reads.body(`list\n${request.principal.team}${below}\n${search}`, async () => {
    const query = listQuery(request.query);
    const rows = await context.stores.runs.listRuns(request.principal.team, {
      ...query,
      limit: query.limit + 1,
      maxWeight: MAX_PAGE_WEIGHT
    });
    // A page ends at `limit` runs, or earlier once its runs' stored text passes MAX_PAGE_WEIGHT.
    const page = rows.slice(0, Math.min(query.limit, runsWithin(rows, MAX_PAGE_WEIGHT)));
    const more = rows.length > page.length;
    return {
      body: reply.serialize({
        runs: page.map(run => toRecord(run, context.links)),
        page_info: {
          has_next_page: more,
          next_cursor: more ? encodeCursor(page.at(-1)!, query.sortBy!, query.sortOrder!) : null
        }
      })
    };
  });
  return reply.type(JSON_TYPE).send(read.body);
}

export async function cancelRun(
  context: RouteContext,
  request: EndpointRequest<'cancelRun'>,
  reply: FastifyReply
) {
  const id = request.params.run_id;
  // The schema bounds the reason (MAX_CANCEL_REASON); blank around it is not kept.
  const reason = request.body?.reason?.trim();
  const result = await context.stores.runs.cancelRun(
    request.principal.team,
    id,
    new Date().toISOString(),
    reason
  );
  if (result.kind === 'not_found') throw notFound(id);
  if (result.kind === 'finished')
    throw new ProblemError(
      'run_already_finished',
      `run ${id} already ended ${result.run.state}; there is nothing to cancel`
    );
  return reply.type('application/json').send(JSON.stringify(result.run.run_id));
}

export async function submitFollowup(context: RouteContext, request: EndpointRequest<'submitFollowup'>) {
  const id = request.params.run_id;
  const mode = followupMode(request.body.mode);
  if (mode === 'orchestrate') {
    const run = await context.stores.runs.getRun(request.principal.team, id);
    if (!run) throw notFound(id);
    const environment = context.settings.environments.find(env => env.id === run.environment_id);
    if (environment) checkOrchestrable(environment);
  }
  if (context.draining)
    throw new ProblemError('shutting_down', 'the executor is shutting down and accepts no follow-ups', {
      'retry-after': '5'
    });
  const now = Date.now();
  const since = new Date(now - context.settings.workspaces.continueForMs).toISOString();
  const result = await context.stores.runs.submitFollowup(
    request.principal.team,
    id,
    { message: request.body.message, mode },
    new Date(now).toISOString(),
    since,
    {
      maxQueued: context.settings.limits.maxQueuedRuns,
      maxQueuedPerTeam: context.settings.limits.maxQueuedRunsPerTeam
    }
  );
  if (result.kind === 'not_found') throw notFound(id);
  if (result.kind === 'queue_full')
    throw new ProblemError(
      'resource_unavailable',
      `run ${id} has ended, and continuing it would queue it again: the queue holds ${context.settings.limits.maxQueuedRuns} runs, its limit; retry later`,
      { 'retry-after': '10' }
    );
  if (result.kind === 'team_queue_full')
    throw new ProblemError(
      'resource_unavailable',
      `run ${id} has ended, and continuing it would queue it again: this team's queued runs reached its limit, limits.max_queued_runs_per_team: ${context.settings.limits.maxQueuedRunsPerTeam}; retry later`,
      { 'retry-after': '10' }
    );
  if (result.kind === 'expired')
    throw new ProblemError(
      'run_not_continuable',
      `run ${id} ended ${result.run.state} at ${result.run.completed_at ?? result.run.updated_at}, longer ago than workspaces.continue_for (${Math.round(context.settings.workspaces.continueForMs / 60_000)} min): its workspace is gone, so it cannot be continued; start a new run`
    );
  return { run_id: result.run.run_id, state: result.run.state };
}

export async function getTranscript(
  context: RouteContext,
  request: EndpointRequest<'getTranscript'>,
  reply: FastifyReply
) {
  return readTranscript(context, request, reply, () => findRun(context, request, request.params.run_id));
}

/** The run of the key's team with this id, or the 404 of a run that does not exist. */
export async function findRun(
  context: Pick<ServerContext, 'stores'>,
  request: FastifyRequest,
  id: string
): Promise<StoredRun> {
  const run = await context.stores.runs.getRun(request.principal.team, id);
  if (!run) throw notFound(id);
  return run;
}

export function notFound(id: string): ProblemError {
  return new ProblemError(
    'not_found',
    `run ${JSON.stringify(id.slice(0, 100))} does not exist or is not visible to this key`
  );
}

/** `Prefer: wait=N` (RFC 7240), capped at MAX_WAIT_SECONDS; undefined when absent. */
function preferWait(header: string | undefined): number | undefined {
  const match = /(?:^|[,;\s])wait\s*=\s*"?(\d+)"?/i.exec(header ?? '');
  return match ? Math.min(MAX_WAIT_SECONDS, Number(match[1])) : undefined;
}
