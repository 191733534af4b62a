// The run contract: the one source of truth for what travels over the wire.
// Plain types and constants only, so the action's bundle carries no schema library;
// the executor's JSON schemas in ./schemas.ts are checked against these types by the compiler.

/** Path prefix of every endpoint; part of the contract (spec section 9). */
export const API_PREFIX = '/api/v1';

/** States the contract names. Servers may send others; clients must treat those as not terminal. */
export const KNOWN_STATES = [
  'QUEUED',
  'PENDING',
  'CLAIMED',
  'INPROGRESS',
  'BLOCKED',
  'SUCCEEDED',
  'FAILED',
  'ERROR',
  'CANCELLED'
] as const;

export type KnownRunState = (typeof KNOWN_STATES)[number];

/** A run state: one of the known ones, or a state this code has never seen (kept as it came). */
export type RunState = KnownRunState | (string & {});

/** States after which a run never changes again. */
export const TERMINAL_STATES: readonly RunState[] = ['SUCCEEDED', 'FAILED', 'ERROR', 'CANCELLED'];

export function isTerminalState(state: RunState): boolean {
  return TERMINAL_STATES.includes(state);
}

export function isKnownState(state: string): state is KnownRunState {
  return (KNOWN_STATES as readonly string[]).includes(state);
}

/** The object form of `status_message` the production service sends. */
export interface StatusMessageObject {
  message: string;
  error_code?: string;
  retryable?: boolean;
}

/** Who a run is attributed to: a personal key's user, or an agent (service account). */
export interface Creator {
  type: 'user' | 'agent' | 'service_account' | (string & {});
  uid: string;
  display_name?: string;
}

/** Configuration of a run. `environment_id` is required; every other field is kept as sent. */
export interface RunConfig {
  environment_id: string;
  [field: string]: unknown;
}

/** How a run's turn works: see CreateRunRequest.mode. */
export const RUN_MODES = ['normal', 'plan', 'orchestrate'] as const;
export type RunMode = (typeof RUN_MODES)[number];
/** The modes as an error message names them. */
export const RUN_MODE_WORDS = 'normal, plan or orchestrate';
export const isRunMode = (value: unknown): value is RunMode => RUN_MODES.includes(value as RunMode);

/** Body of `POST /agent/run`. */
export interface CreateRunRequest {
  prompt: string;
  config: RunConfig;
  title?: string;
  /**
   * `normal` (the default), `plan` (the agent may read the workspace, not change it) or
   * `orchestrate` (the agent may start and steer child runs of its own).
   */
  mode?: RunMode;
  /** Up to 20 string pairs (keys ≤ 64, values ≤ 512 characters), returned on the record and filterable in the list. */
  metadata?: Record<string, string>;
  /** A run of the same team this run is a child of (at most 3 levels below a root run). */
  parent_run_id?: string;
  [field: string]: unknown;
}

/** Answer of `POST /agent/run`. */
export interface CreateRunResponse {
  run_id: string;
  state?: RunState;
  [field: string]: unknown;
}

/** The run record as a server sends it. Fields beyond these are kept by clients. */
export interface RunRecord {
  run_id: string;
  state: RunState;
  title?: string | null;
  prompt?: string;
  created_at?: string;
  updated_at?: string;
  started_at?: string | null;
  completed_at?: string | null;
  status_message?: string | StatusMessageObject | null;
  error_code?: string | null;
  session_link?: string | null;
  creator?: Creator;
  agent_config?: RunConfig;
  source?: string;
  /** The run this one is a child of; absent for a root run. */
  parent_run_id?: string | null;
  /** Set by the server when a workload's OIDC token created the run: the claims it was admitted by. */
  workload?: Workload;
  [field: string]: unknown;
}

/** The claims of the OIDC token that created a run (the executor's field; absent for a key). */
export interface Workload {
  issuer: string;
  repository?: string;
  ref?: string;
  workflow_ref?: string;
  run_id?: string;
  [claim: string]: unknown;
}

/** Answer of `GET /agent/runs`. */
export interface ListRunsResponse {
  runs: RunRecord[];
  page_info: { has_next_page: boolean; next_cursor?: string | null };
}

/** Query of `GET /agent/runs`. */
export interface ListRunsQuery {
  /** 1–100 on the executor (the production service allows up to 500). */
  limit?: number;
  cursor?: string;
  state?: RunState | RunState[];
  environment_id?: string;
  /** RFC 3339 timestamp. */
  created_after?: string;
  /** RFC 3339 timestamp. */
  created_before?: string;
  /** Runs whose `metadata` has every one of these pairs (sent as `metadata[key]=value`). */
  metadata?: Record<string, string>;
  /** Only runs below this run (every descendant: children, their children, …). */
  ancestor_run_id?: string;
  /** `metadata[key]`: only runs whose create request's metadata has this key with this value. */
  [metadataKey: `metadata[${string}]`]: string | string[] | undefined;
}

/** RFC 7807 problem body of every error answer. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  detail?: string;
  error_code?: string;
  retryable?: boolean;
  instance?: string;
  request_id?: string;
  [field: string]: unknown;
}
