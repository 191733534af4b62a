// Each endpoint's method and path, with nothing else: what a client needs to build its requests, and
// the one place they are written. The full table (schemas, auth, limits, error codes) is
// endpoints.ts, which the executor and the OpenAPI document use; each of its entries takes its
// method and path from here (`...ROUTES.name`). Keeping the paths apart keeps the schema library out
// of the bundles that only call the API (the action, the CLI).

export const ROUTES = {
  createRun: { method: 'POST', path: '/api/v1/agent/runs' },
  createRunLegacy: { method: 'POST', path: '/api/v1/agent/run' },
  listRuns: { method: 'GET', path: '/api/v1/agent/runs' },
  getRun: { method: 'GET', path: '/api/v1/agent/runs/{run_id}' },
  cancelRun: { method: 'POST', path: '/api/v1/agent/runs/{run_id}/cancel' },
  submitFollowup: { method: 'POST', path: '/api/v1/agent/runs/{run_id}/followups' },
  getTranscript: { method: 'GET', path: '/api/v1/agent/runs/{run_id}/transcript' },
  getConversation: { method: 'GET', path: '/api/v1/agent/runs/{run_id}/conversation' },
  getRunEvents: { method: 'GET', path: '/api/v1/agent/runs/{run_id}/events' },
  listEvents: { method: 'GET', path: '/api/v1/agent/events' },
  getArtifact: { method: 'GET', path: '/api/v1/agent/artifacts/{artifact_uid}' },
  downloadArtifact: { method: 'GET', path: '/api/v1/agent/artifacts/{artifact_uid}/download' },
  getSession: { method: 'GET', path: '/sessions/{run_id}' },
  getSessionArtifact: { method: 'GET', path: '/sessions/{run_id}/artifacts/{artifact_uid}' },
  createSchedule: { method: 'POST', path: '/api/v1/agent/schedules' },
  listSchedules: { method: 'GET', path: '/api/v1/agent/schedules' },
  getSchedule: { method: 'GET', path: '/api/v1/agent/schedules/{schedule_id}' },
  updateSchedule: { method: 'PUT', path: '/api/v1/agent/schedules/{schedule_id}' },
  deleteSchedule: { method: 'DELETE', path: '/api/v1/agent/schedules/{schedule_id}' },
  pauseSchedule: { method: 'POST', path: '/api/v1/agent/schedules/{schedule_id}/pause' },
  resumeSchedule: { method: 'POST', path: '/api/v1/agent/schedules/{schedule_id}/resume' },
  createWebhook: { method: 'POST', path: '/api/v1/agent/webhooks' },
  listWebhooks: { method: 'GET', path: '/api/v1/agent/webhooks' },
  getWebhook: { method: 'GET', path: '/api/v1/agent/webhooks/{webhook_id}' },
  deleteWebhook: { method: 'DELETE', path: '/api/v1/agent/webhooks/{webhook_id}' },
  rotateWebhookSecret: { method: 'POST', path: '/api/v1/agent/webhooks/{webhook_id}/rotate' },
  listWebhookDeliveries: { method: 'GET', path: '/api/v1/agent/webhooks/{webhook_id}/deliveries' },
  retryWebhookDelivery: {
    method: 'POST',
    path: '/api/v1/agent/webhooks/{webhook_id}/deliveries/{delivery_id}/retry'
  },
  listEnvironments: { method: 'GET', path: '/api/v1/agent/environments' },
  listModels: { method: 'GET', path: '/api/v1/agent/models' },
  getOpenApi: { method: 'GET', path: '/api/v1/openapi.json' },
  listErrorCodes: { method: 'GET', path: '/api/v1/errors' },
  health: { method: 'GET', path: '/healthz' },
  ready: { method: 'GET', path: '/readyz' }
} as const satisfies Record<string, { method: HttpMethod; path: string }>;

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'DELETE';

export type EndpointName = keyof typeof ROUTES;

/** The longest `Prefer: wait=N` held answer, in seconds. */
export const MAX_WAIT_SECONDS = 60;

/** The names of a path's parameters, in order: `/runs/{run_id}/cancel` → ['run_id']. */
export function pathParameters(path: string): string[] {
  return [...path.matchAll(/\{([a-z_]+)\}/g)].map(match => match[1]!);
}

/**
 * The endpoint's path with its parameters filled in (each percent-encoded as one segment). A
 * missing parameter is a programming error and throws, naming it.
 */
export function endpointPath(name: EndpointName, params: Readonly<Record<string, string>> = {}): string {
  return ROUTES[name].path.replace(/\{([a-z_]+)\}/g, (_match, param: string) => {
    const value = params[param];
    if (value === undefined)
      throw new TypeError(`endpoint ${name}: missing path parameter ${param}; expected a string`);
    return encodeURIComponent(value);
  });
}

/** The path in Fastify's (and find-my-way's) form: `/api/v1/agent/runs/:run_id`. */
export function routePath(path: string): string {
  return path.replace(/\{([a-z_]+)\}/g, ':$1');
}
