// ArtifactStore (artifact-types.ts) for both databases: an artifact's bytes in `artifacts`, its
// entry on the run record's `artifacts` list (rewritten in the same batch), and the run's request
// usage.

import type { ArtifactStore } from './artifact-types.js';
import type { Dialect, Row, Statement } from './dialect.js';
import { sql } from './dialect.js';
import { type ArtifactRename, type StoredArtifact, artifactOf, listEntryOf } from './records.js';

/** Columns of an artifact without its bytes. */
const ARTIFACT_COLUMNS = `artifact_uid, run_id, team, artifact_type, filepath, filename, mime_type, size,
  description, created_at`;

export class SqlArtifactStore implements ArtifactStore {
  constructor(private readonly d: Dialect) {}

  async addArtifact(artifact: StoredArtifact, data: Buffer, renamed: ArtifactRename[] = []): Promise<void> {
    const { run_id, team, artifact_type, created_at, ...file } = artifact;
    const entry = JSON.stringify(listEntryOf(artifact, data));
    await this.d.batch([
      sql(
        `INSERT INTO artifacts (artifact_uid, run_id, team, artifact_type, filepath, filename, mime_type, size,
           description, created_at, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        artifact.artifact_uid,
        run_id,
        team,
        artifact_type,
        file.filepath,
        file.filename,
        file.mime_type,
        file.size,
        file.description ?? null,
        created_at,
        data
      ),
      ...(renamed.length > 0
        ? await this.renames(run_id, renamed, entry)
        : [
            sql(
              `UPDATE runs SET artifacts = ${this.d.appendJson('artifacts')} WHERE run_id = ?`,
              entry,
              run_id
            )
          ])
    ]);
  }

  async renameArtifacts(runId: string, renamed: ArtifactRename[]): Promise<void> {
    if (renamed.length > 0) await this.d.batch(await this.renames(runId, renamed));
  }

  /**
   * The statements that rename a run's artifacts, in their table and on the record's list (then
   * with `appended` added). The list is rewritten whole: only the worker that holds the run changes
   * it, so the list read here is the one the batch replaces.
   */
  private async renames(runId: string, renamed: ArtifactRename[], appended?: string): Promise<Statement[]> {
    const [row] = await this.d.all<{ artifacts: unknown }>(
      sql('SELECT artifacts FROM runs WHERE run_id = ?', runId)
    );
    const list = parseList(row?.artifacts).map(item => renamedEntry(item, renamed));
    if (appended !== undefined) list.push(JSON.parse(appended) as unknown);
    return [
      ...renamed.map(rename =>
        sql(
          'UPDATE artifacts SET filename = ?, filepath = ? WHERE artifact_uid = ? AND run_id = ?',
          rename.filename,
          rename.filename,
          rename.artifact_uid,
          runId
        )
      ),
      sql('UPDATE runs SET artifacts = ? WHERE run_id = ?', JSON.stringify(list), runId)
    ];
  }

  async getArtifact(team: string, uid: string): Promise<StoredArtifact | undefined> {
    const [row] = await this.d.all<StoredArtifact & Row>(
      sql(`SELECT ${ARTIFACT_COLUMNS} FROM artifacts WHERE artifact_uid = ? AND team = ?`, uid, team)
    );
    return row && artifactOf(row);
  }

  async readArtifact(uid: string): Promise<{ artifact: StoredArtifact; data: Buffer } | undefined> {
    const [row] = await this.d.all<StoredArtifact & { data: unknown } & Row>(
      sql(
        `SELECT ${ARTIFACT_COLUMNS}, ${this.d.selectBytes('data')} FROM artifacts WHERE artifact_uid = ?`,
        uid
      )
    );
    if (!row) return undefined;
    const { data, ...artifact } = row;
    return { artifact: artifactOf(artifact), data: this.d.readBytes(data) };
  }

  async listArtifacts(team: string, runId: string): Promise<StoredArtifact[]> {
    const rows = await this.d.all<StoredArtifact & Row>(
      sql(
        `SELECT ${ARTIFACT_COLUMNS} FROM artifacts WHERE run_id = ? AND team = ? ORDER BY created_at, artifact_uid`,
        runId,
        team
      )
    );
    return rows.map(artifactOf);
  }

  async setRequestUsage(runId: string, usage: string): Promise<void> {
    await this.d.run(sql('UPDATE runs SET request_usage = ? WHERE run_id = ?', usage, runId));
  }
}

/** The run record's artifacts column as a list (an empty or unreadable one as none). */
function parseList(value: unknown): unknown[] {
  if (typeof value !== 'string') return [];
  try {
    const list: unknown = JSON.parse(value);
    return Array.isArray(list) ? list : [];
  } catch {
    return [];
  }
}

/** A record's artifact entry under its new name when `renamed` names it. */
function renamedEntry(item: unknown, renamed: ArtifactRename[]): unknown {
  if (item === null || typeof item !== 'object') return item;
  const entry = item as Record<string, unknown>;
  const rename = renamed.find(r => r.artifact_uid === entry.artifact_uid);
  return rename ? { ...entry, filename: rename.filename, filepath: rename.filename } : item;
}
