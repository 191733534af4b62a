// The list's query parameters as the store takes them, and its cursors. The route's schema has
// checked each parameter's form; what is left here is meaning: defaults, times normalised, and a
// cursor that names its sort, so it is never read under another order.

import type { Static } from 'typebox';
import { MAX_METADATA_FILTERS, type ListRunsQuerySchema } from '../../api/schemas.js';
import type { ListOrder, ListQuery, ListSort, StoredRun } from '../store/types.js';
import { ProblemError } from './problem.js';

type ListParams = Static<typeof ListRunsQuerySchema>;

/** The cursor names its sort, so a cursor is never read under another order. */
export function encodeCursor(run: StoredRun, sortBy: ListSort, order: ListOrder): string {
  const text =
    sortBy === 'updated_at'
      ? `u:${order}:${run.seq}:${run.updated_at}`
      : order === 'desc'
        ? `s:${run.seq}`
        : `sa:${run.seq}`;
  return Buffer.from(text).toString('base64url');
}

function decodeCursor(cursor: string, sortBy: ListSort, order: ListOrder): ListQuery['after'] {
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  const match =
    sortBy === 'updated_at'
      ? new RegExp(`^u:${order}:(\\d{1,15}):(\\d{4}-[\\d:.TZ-]{10,30})$`).exec(text)
      : (order === 'desc' ? /^s:(\d{1,15})$/ : /^sa:(\d{1,15})$/).exec(text);
  if (!match)
    throw new ProblemError(
      'invalid_request',
      `cursor ${JSON.stringify(cursor)}: expected the next_cursor of a previous page with the same sort_by and sort_order`
    );
  return { seq: Number(match[1]), updatedAt: match[2] };
}

/** The query as the store takes it; the schema has checked each parameter's form already. */
export function listQuery(params: ListParams): ListQuery {
  const query: ListQuery = {
    limit: params.limit === undefined ? 20 : Number(params.limit),
    sortBy: params.sort_by ?? 'created_at',
    sortOrder: params.sort_order ?? 'desc'
  };
  if (params.cursor) query.after = decodeCursor(params.cursor, query.sortBy!, query.sortOrder!);
  if (params.state !== undefined)
    query.states = ([] as string[]).concat(params.state).flatMap(s => s.split(','));
  const time = (value: string | undefined) => (value ? new Date(Date.parse(value)).toISOString() : undefined);
  const filters: Partial<ListQuery> = {
    environmentId: params.environment_id || undefined,
    createdAfter: time(params.created_after),
    createdBefore: time(params.created_before),
    updatedAfter: time(params.updated_after),
    creatorUid: params.creator || undefined,
    search: params.q || undefined,
    name: params.name || undefined,
    modelId: params.model_id || undefined,
    artifactType: params.artifact_type || undefined,
    scheduleId: params.schedule_id || undefined,
    ancestorRunId: params.ancestor_run_id || undefined
  };
  for (const [name, value] of Object.entries(filters))
    if (value !== undefined) (query as unknown as Record<string, unknown>)[name] = value;
  const metadata: [string, string][] = [];
  for (const [name, value] of Object.entries(params as Record<string, unknown>)) {
    const key = /^metadata\[(.+)\]$/.exec(name)?.[1];
    if (key === undefined) continue;
    for (const item of ([] as unknown[]).concat(value)) metadata.push([key, String(item)]);
  }
  // Each pair is one more index lookup per run looked at: the list's cost is bounded by their number.
  if (metadata.length > MAX_METADATA_FILTERS)
    throw new ProblemError(
      'invalid_request',
      `metadata[${metadata[MAX_METADATA_FILTERS]![0]}]: a list filters by at most ${MAX_METADATA_FILTERS} metadata[key]=value pairs; this request has ${metadata.length}`
    );
  if (metadata.length > 0) query.metadata = metadata;
  return query;
}
