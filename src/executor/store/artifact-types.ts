// What a run produced (ArtifactStore): its artifacts, stored, renamed, read and listed, and its
// request usage. sql-artifacts.ts implements it.

import type { ArtifactRename, StoredArtifact } from './records.js';

export interface ArtifactStore {
  /**
   * Stores a file artifact's bytes and lists it on the run's record; in the same transaction, gives
   * the run's artifacts named in `renamed` their new file name (and path), on the record too.
   */
  addArtifact(artifact: StoredArtifact, data: Buffer, renamed?: ArtifactRename[]): Promise<void>;
  /** Gives the run's artifacts named in `renamed` their new file name (and path), on the record too. */
  renameArtifacts(runId: string, renamed: ArtifactRename[]): Promise<void>;
  /** A team's artifact; undefined for unknown ones and other teams'. */
  getArtifact(team: string, uid: string): Promise<StoredArtifact | undefined>;
  /** An artifact's bytes, for its signed download link (the signature already proves access). */
  readArtifact(uid: string): Promise<{ artifact: StoredArtifact; data: Buffer } | undefined>;
  listArtifacts(team: string, runId: string): Promise<StoredArtifact[]>;
  /** Sets the run's request_usage (a JSON object). */
  setRequestUsage(runId: string, usage: string): Promise<void>;
}
