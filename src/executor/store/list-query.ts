// The list query's WHERE and ORDER BY, for both SQL dialects: one place says what each filter and
// sort means, so SQLite and PostgreSQL answer a list the same way.

import type { ListQuery } from './types.js';

export type Dialect = 'sqlite' | 'postgres';

export interface ListSql {
  where: string;
  order: string;
  values: unknown[];
}

/** Conditions and order for `SELECT … FROM runs WHERE ${where} ORDER BY ${order} LIMIT ?`. */
export function listRunsSql(dialect: Dialect, team: string, query: ListQuery): ListSql {
  const values: unknown[] = [];
  // `?` on both: the dialect numbers them where it must (postgres/connection.ts).
  const p = (value: unknown) => {
    values.push(value);
    return '?';
  };
  const where = [`team = ${p(team)}`];
  if (query.beforeSeq !== undefined) where.push(`seq < ${p(query.beforeSeq)}`);
  if (query.states && query.states.length > 0) {
    where.push(
      dialect === 'postgres'
        ? `state = ANY(${p(query.states)}::text[])`
        : `state IN (${query.states.map(state => p(state)).join(', ')})`
    );
  }
  if (query.environmentId !== undefined) where.push(`environment_id = ${p(query.environmentId)}`);
  if (query.createdAfter !== undefined) where.push(`created_at > ${p(query.createdAfter)}`);
  if (query.createdBefore !== undefined) where.push(`created_at < ${p(query.createdBefore)}`);
  if (query.updatedAfter !== undefined) where.push(`updated_at > ${p(query.updatedAfter)}`);
  if (query.creatorUid !== undefined) where.push(`creator_uid = ${p(query.creatorUid)}`);
  for (const [field, value] of [
    ['name', query.name],
    ['model_id', query.modelId]
  ] as const) {
    if (value === undefined) continue;
    where.push(
      dialect === 'postgres'
        ? `(config::json ->> '${field}') = ${p(value)}`
        : `json_extract(config, '$.${field}') = ${p(value)}`
    );
  }
  if (query.scheduleId !== undefined) {
    where.push(
      dialect === 'postgres'
        ? `(extra::json ->> 'schedule_id') = ${p(query.scheduleId)}`
        : `json_extract(extra, '$.schedule_id') = ${p(query.scheduleId)}`
    );
  }
  if (query.search !== undefined) where.push(searchCondition(dialect, query.search, p));
  // The create request's metadata pairs are rows of run_metadata, indexed by (team, key, value).
  for (const [key, value] of query.metadata ?? []) {
    where.push(
      `run_id IN (SELECT run_id FROM run_metadata WHERE team = ${p(team)} AND key = ${p(key)} AND value = ${p(value)})`
    );
  }
  if (query.ancestorRunId !== undefined)
    where.push(
      `run_id IN (SELECT run_id FROM run_ancestors WHERE team = ${p(team)} AND ancestor_run_id = ${p(query.ancestorRunId)})`
    );
  if (query.artifactType !== undefined) {
    where.push(
      `EXISTS (SELECT 1 FROM artifacts WHERE artifacts.run_id = runs.run_id AND artifacts.artifact_type = ${p(query.artifactType)})`
    );
  }

  const desc = (query.sortOrder ?? 'desc') === 'desc';
  const cmp = desc ? '<' : '>';
  const dir = desc ? 'DESC' : 'ASC';
  const after = query.after;
  if ((query.sortBy ?? 'created_at') === 'updated_at') {
    if (after) {
      const at = after.updatedAt ?? '';
      where.push(`(updated_at ${cmp} ${p(at)} OR (updated_at = ${p(at)} AND seq ${cmp} ${p(after.seq)}))`);
    }
    return { where: where.join(' AND '), order: `updated_at ${dir}, seq ${dir}`, values };
  }
  if (after) where.push(`seq ${cmp} ${p(after.seq)}`);
  return { where: where.join(' AND '), order: `seq ${dir}`, values };
}

/**
 * Title or prompt contains the text, ASCII letters in either case, the same in both stores:
 * SQLite's lower() folds only ASCII; PostgreSQL keeps title and prompt as bytes (they may hold NUL),
 * so there the bytes are matched as hex at a byte boundary, letters as either case's byte.
 */
function searchCondition(dialect: Dialect, text: string, p: (value: unknown) => string): string {
  if (dialect === 'sqlite') {
    return `(instr(lower(coalesce(title, '')), lower(${p(text)})) > 0 OR instr(lower(prompt), lower(${p(text)})) > 0)`;
  }
  let pattern = '';
  for (const byte of Buffer.from(text)) {
    const hex = (b: number) => b.toString(16).padStart(2, '0');
    const letter = (byte | 0x20) >= 0x61 && (byte | 0x20) <= 0x7a;
    pattern += letter ? `(?:${hex(byte & ~0x20)}|${hex(byte | 0x20)})` : hex(byte);
  }
  const regex = `^(?:..)*?${pattern}`;
  return `(encode(coalesce(title, ''::bytea), 'hex') ~ ${p(regex)} OR encode(prompt, 'hex') ~ ${p(regex)})`;
}
