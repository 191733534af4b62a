// The error reference (spec section 7.2): every `error_code` a server of this contract sends,
// with its HTTP status (for request errors) and what it means. The executor serves this list at
// GET /api/v1/errors and the README prints it.

export interface ErrorCodeInfo {
  /** HTTP status of the answer, or `null` for codes that only appear on a run record. */
  status: number | null;
  /** Whether repeating the same request later can succeed. */
  retryable: boolean;
  meaning: string;
}

export const ERROR_CODES = {
  invalid_request: {
    status: 400,
    retryable: false,
    meaning: 'The request is malformed: the body is not JSON, or a query parameter or header has a bad value.'
  },
  unauthenticated: {
    status: 401,
    retryable: false,
    meaning:
      'The Authorization header is missing, is not `Bearer <key>`, or names a key that is unknown or revoked.'
  },
  forbidden: {
    status: 403,
    retryable: false,
    meaning:
      "The credential may not do this: a run's orchestrate credential asked for something outside its own run's tree of child runs or its environments."
  },
  not_found: {
    status: 404,
    retryable: false,
    meaning: 'No run with this id is visible to the key (it does not exist or belongs to another team).'
  },
  environment_not_found: {
    status: 404,
    retryable: false,
    meaning: 'config.environment_id names no environment that this server serves.'
  },
  artifact_not_found: {
    status: 404,
    retryable: false,
    meaning:
      'No artifact with this id is visible to the key (it does not exist or belongs to another team), or its download link is wrong or expired.'
  },
  route_not_found: { status: 404, retryable: false, meaning: 'No endpoint has this method and path.' },
  run_already_finished: {
    status: 409,
    retryable: false,
    meaning: 'The run is already in a terminal state, so it cannot be cancelled.'
  },
  run_not_continuable: {
    status: 409,
    retryable: false,
    meaning:
      "The run can no longer be continued: its workspace was removed once the executor's workspaces.continue_for passed; `detail` says when."
  },
  operation_not_supported: {
    status: 422,
    retryable: false,
    meaning:
      'The executor does not support what the request asks for (mode orchestrate in an environment whose sandbox could not keep the credential of the run inside).'
  },
  schedule_limit_reached: {
    status: 409,
    retryable: false,
    meaning:
      "The team has as many schedules as the executor's limits.max_schedules_per_team allows; delete one to create another."
  },
  webhook_limit_reached: {
    status: 409,
    retryable: false,
    meaning:
      "The team has as many webhook endpoints as the executor's webhooks.max_endpoints_per_team allows; delete one to add another."
  },
  webhook_declared_in_config: {
    status: 409,
    retryable: false,
    meaning:
      "The webhook endpoint was declared by the executor's operator in its configuration file: it is changed or removed there, not through the API."
  },
  idempotency_in_progress: {
    status: 409,
    retryable: true,
    meaning: 'Another request with the same Idempotency-Key is being processed; retry shortly.'
  },
  payload_too_large: { status: 413, retryable: false, meaning: 'The request body is larger than the limit.' },
  unsupported_media_type: {
    status: 415,
    retryable: false,
    meaning: 'The request body is not `application/json`.'
  },
  invalid_field: {
    status: 422,
    retryable: false,
    meaning: 'A field of the body is missing or has the wrong type or value; `detail` names it.'
  },
  prompt_too_large: { status: 422, retryable: false, meaning: 'The prompt is longer than the limit.' },
  idempotency_key_reused: {
    status: 422,
    retryable: false,
    meaning: 'The Idempotency-Key was already used with a different request body.'
  },
  rate_limited: {
    status: 429,
    retryable: true,
    meaning: 'This key sent more requests than its rate limit allows; wait for Retry-After.'
  },
  too_many_streams: {
    status: 429,
    retryable: true,
    meaning:
      'This key (limits.max_streams_per_key) or this executor node (limits.max_streams) has as many open event streams as it may; close one, or wait for Retry-After.'
  },
  resource_unavailable: {
    status: 429,
    retryable: true,
    meaning: 'The run queue is full; wait for Retry-After and create the run again.'
  },
  internal_error: { status: 500, retryable: true, meaning: 'The server failed unexpectedly.' },
  store_unavailable: {
    status: 503,
    retryable: true,
    meaning:
      'The executor cannot reach its store (PostgreSQL restarting, say); nothing was changed. Retry after Retry-After.'
  },
  shutting_down: {
    status: 503,
    retryable: true,
    meaning: 'The server is stopping and accepts no new work; retry against a running server.'
  },
  agent_failed: {
    status: null,
    retryable: false,
    meaning: 'The agent finished unsuccessfully (it exited non-zero or reported a failure).'
  },
  command_failed: {
    status: null,
    retryable: false,
    meaning: 'A command the agent ran exited non-zero; the status message names it and its exit code.'
  },
  setup_failed: {
    status: null,
    retryable: false,
    meaning: "One of the environment's setup commands failed before the agent started."
  },
  timeout: { status: null, retryable: true, meaning: "The run exceeded its environment's time limit." },
  cancelled: { status: null, retryable: false, meaning: 'The run was cancelled by a client.' },
  executor_restarted: {
    status: null,
    retryable: true,
    meaning:
      'The executor stopped while the run was in progress; the run is not re-run automatically because agents have side effects.'
  },
  patch_too_large: {
    status: null,
    retryable: false,
    meaning:
      "The run's changes as a patch are larger than the executor's limit (workspaces.max_patch), so the run failed rather than return a cut patch."
  },
  workspace_quota_exceeded: {
    status: null,
    retryable: false,
    meaning:
      "What the run wrote (its workspace, or only its own layer of a copy-on-write workspace, its output folder and, for harness kinds, its HOME) grew past the executor's disk quota (workspaces.quota)."
  },
  workspace_tampered: {
    status: null,
    retryable: false,
    meaning:
      "After the agent, the executor could not read the run's workspace safely (git refused what the run left there, for example a path it will not record); no patch was kept and nothing was published. The status message names what was found."
  },
  publish_failed: {
    status: null,
    retryable: false,
    meaning:
      "Publishing the run's changes failed (the commit, the push or the pull request); the status message names the step and why, and the changes stay available as the changes.patch artifact."
  },
  resource_limit_exceeded: {
    status: null,
    retryable: false,
    meaning:
      "The run's processes went past a limit of their sandbox (sandbox.memory or sandbox.processes); the status message names it."
  },
  agent_auth_failed: {
    status: null,
    retryable: false,
    meaning:
      "The agent CLI's model provider refused its credentials (a missing, wrong or revoked API key); the status message quotes the CLI."
  },
  agent_rate_limited: {
    status: null,
    retryable: true,
    meaning:
      "The agent CLI's model provider rate-limited it or was overloaded; the status message quotes the CLI."
  },
  agent_model_not_found: {
    status: null,
    retryable: false,
    meaning:
      "The model the run asked for (config.model_id or the environment's agent.model) does not exist for the agent CLI's provider."
  },
  agent_crashed: {
    status: null,
    retryable: false,
    meaning:
      'The agent CLI ended with an error of its own (or without a final answer); the status message quotes its last words.'
  },
  budget_exceeded: {
    status: null,
    retryable: false,
    meaning: "The run's model usage cost more than its environment's max_cost_usd; the agent was stopped."
  }
} as const satisfies Record<string, ErrorCodeInfo>;

export type ErrorCode = keyof typeof ERROR_CODES;
