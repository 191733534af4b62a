// How stored runs look on the wire, and the pieces derived from them: ETags and session links.

import { createHmac, timingSafeEqual } from 'node:crypto';
import type { RunRecord } from '../../api/index.js';
import { showsSessionLink, showsStatusMessage } from '../runs/lifecycle.js';
import type { FileArtifact, StoredRun } from '../store/types.js';

/** Tokens never change for a run, and reads ask for them often: remember the recent ones. */
const TOKEN_CACHE_SIZE = 10_000;

export class SessionLinks {
  private readonly tokens = new Map<string, string>();

  constructor(
    private readonly secret: string,
    private readonly publicUrl: () => string
  ) {}

  token(runId: string): string {
    let token = this.tokens.get(runId);
    if (token === undefined) {
      token = createHmac('sha256', this.secret).update(runId).digest('base64url').slice(0, 32);
      if (this.tokens.size >= TOKEN_CACHE_SIZE) this.tokens.delete(this.tokens.keys().next().value!);
      this.tokens.set(runId, token);
    }
    return token;
  }

  verify(runId: string, token: unknown): boolean {
    if (typeof token !== 'string') return false;
    const expected = Buffer.from(this.token(runId));
    const given = Buffer.from(token);
    return expected.length === given.length && timingSafeEqual(expected, given);
  }

  link(run: StoredRun): string | undefined {
    if (!showsSessionLink(run.state) || run.started_at === null) return undefined;
    return `${this.publicUrl()}/sessions/${encodeURIComponent(run.run_id)}?token=${this.token(run.run_id)}`;
  }
}

export function etagOf(run: StoredRun): string {
  return `"v${run.version}"`;
}

/** The record as the routes answer it (their response schema serialises it; unknown fields stay). */
export function toRecord(run: StoredRun, links: SessionLinks): RunRecord {
  // Most runs carry no extra fields: skip parsing and spreading an empty object.
  const extra = run.extra === '{}' ? undefined : (JSON.parse(run.extra) as Record<string, unknown>);
  const record: RunRecord = {
    ...extra,
    run_id: run.run_id,
    state: run.state,
    title: run.title,
    prompt: run.prompt,
    environment_id: run.environment_id,
    created_at: run.created_at,
    updated_at: run.updated_at,
    started_at: run.started_at,
    completed_at: run.completed_at,
    creator: { type: run.creator_type, uid: run.creator_uid, display_name: run.creator_name },
    agent_config: parsedConfig(run.config),
    source: 'API'
  };
  if (run.artifacts) record.artifacts = runArtifacts(run.artifacts);
  if (run.request_usage) record.request_usage = JSON.parse(run.request_usage);
  if (run.workload) record.workload = JSON.parse(run.workload);
  if (showsStatusMessage(run.state) && run.status_message !== null)
    record.status_message = run.status_message;
  if (run.error_code !== null) record.error_code = run.error_code;
  const link = links.link(run);
  if (link) record.session_link = link;
  return record;
}

/**
 * Most runs of an executor share a handful of configs (same environment, same model): a list page
 * would parse the same text twenty times. The parsed objects are only ever read (serialised), so
 * the recent ones are kept by their text.
 */
const CONFIG_CACHE_SIZE = 1_000;
const MAX_CACHED_CONFIG_LENGTH = 4_096;
const configs = new Map<string, RunRecord['agent_config']>();

function parsedConfig(text: string): RunRecord['agent_config'] {
  let config = configs.get(text);
  if (config === undefined) {
    config = JSON.parse(text) as RunRecord['agent_config'];
    if (text.length <= MAX_CACHED_CONFIG_LENGTH) {
      if (configs.size >= CONFIG_CACHE_SIZE) configs.delete(configs.keys().next().value!);
      configs.set(text, config);
    }
  }
  return config;
}

/** The stored list of a run's files, in the service's shape: {artifact_type, created_at, data}. */
function runArtifacts(stored: string): unknown[] {
  return (JSON.parse(stored) as (FileArtifact & { created_at: string; artifact_type?: string })[]).map(
    // A pull request is listed in its final shape already; a file by its description.
    entry => {
      if (entry.artifact_type !== undefined) return entry;
      const { created_at, ...data } = entry;
      return { artifact_type: 'FILE', created_at, data };
    }
  );
}
