// The event endpoints: a run's events (a JSON page, or with Accept: text/event-stream the
// resumable stream of event-stream.ts) and the events cursor over several runs of a team (a JSON
// page in the production service's shape, or the same as a stream).

import { MAX_EVENT_RUN_IDS } from '../../../api/schemas.js';
import type { RunRecordStore, StoredRun } from '../../store/types.js';
import {
  cursorEvent,
  resumePoint,
  streamRunEvents,
  streamStateEvents,
  wantsEventStream
} from '../event-stream.js';
import { ProblemError } from '../problem.js';
import { parseAfter, readTranscript } from '../transcript-wait.js';
import type { Handler } from './handler.js';

const DEFAULT_EVENTS_LIMIT = 100;
/** A run id as the executor makes them (and any the service might): one plain path segment. */
const RUN_ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;

function notFound(id: string): ProblemError {
  return new ProblemError(
    'not_found',
    `run ${JSON.stringify(id.slice(0, 100))} does not exist or is not visible to this key`
  );
}

/** `run_ids` as given (comma-separated, or repeated), checked and without repeats. */
export function parseRunIds(value: unknown): string[] {
  const parts = (Array.isArray(value) ? value : [value])
    .flatMap(item => String(item ?? '').split(','))
    .map(item => item.trim())
    .filter(item => item !== '');
  const ids = [...new Set(parts)];
  if (ids.length === 0)
    throw new ProblemError(
      'invalid_request',
      'run_ids: expected at least one run id, such as run_ids=ID1,ID2 (comma-separated or repeated)'
    );
  if (ids.length > MAX_EVENT_RUN_IDS)
    throw new ProblemError(
      'invalid_request',
      `run_ids: ${ids.length} runs; expected at most ${MAX_EVENT_RUN_IDS} (follow more with several cursors)`
    );
  const bad = ids.find(id => !RUN_ID.test(id));
  if (bad !== undefined)
    throw new ProblemError(
      'invalid_request',
      `run_ids: ${JSON.stringify(bad.slice(0, 100))} is not a run id; expected ids such as 3f2b9c1e-…, separated by commas`
    );
  return ids;
}

function parseSince(query: unknown): number {
  const value = (query as Record<string, unknown> | undefined)?.since;
  if (value === undefined || value === '') return 0;
  if (typeof value !== 'string' || !/^\d{1,15}$/.test(value))
    throw new ProblemError(
      'invalid_request',
      `since ${JSON.stringify(value)}: expected the sequence of an event, a whole number such as 12`
    );
  return Number(value);
}

function parseEventsLimit(query: unknown): number {
  const value = (query as Record<string, unknown> | undefined)?.limit;
  if (value === undefined || value === '') return DEFAULT_EVENTS_LIMIT;
  const number = typeof value === 'string' && /^\d{1,3}$/.test(value) ? Number(value) : NaN;
  if (number >= 1 && number <= 500) return number;
  throw new ProblemError(
    'invalid_request',
    `limit ${JSON.stringify(value)}: expected a whole number of events from 1 to 500`
  );
}

/** The team's run with this id, read anew at each call, or 404 (another team's is as unknown). */
function runFinder(runs: Pick<RunRecordStore, 'getRun'>, team: string, id: string): () => Promise<StoredRun> {
  return async () => {
    const run = await runs.getRun(team, id);
    if (!run) throw notFound(id);
    return run;
  };
}

export const getRunEvents: Handler<'getRunEvents'> = async (context, request, reply) => {
  const find = runFinder(context.stores.runs, request.principal.team, request.params.run_id);
  if (!wantsEventStream(request)) return readTranscript(context, request, reply, find);
  const after = resumePoint(request, parseAfter(request.query));
  await find();
  const release = context.slots.take(request.principal.keyId);
  await streamRunEvents(context, request, reply, find, after, release);
  return reply;
};

export const listEvents: Handler<'listEvents'> = async (context, request, reply) => {
  const runs = context.stores.runs;
  const team = request.principal.team;
  const runIds = parseRunIds(request.query.run_ids);
  const since = parseSince(request.query);
  const limit = parseEventsLimit(request.query);
  const stream = wantsEventStream(request);
  const after = stream ? resumePoint(request, since) : since;
  // Another team's run answers as one that does not exist, as every run endpoint does.
  const states = await runs.runStates(team, runIds);
  const missing = runIds.find(id => !states.has(id));
  if (missing !== undefined) throw notFound(missing);
  if (stream) {
    const release = context.slots.take(request.principal.keyId);
    await streamStateEvents(context, request, reply, team, runIds, after, release);
    return reply;
  }
  const rows = await runs.listStateEvents(team, runIds, after, limit);
  return { events: rows.map(cursorEvent), next_since: rows.at(-1)?.sequence ?? after };
};
