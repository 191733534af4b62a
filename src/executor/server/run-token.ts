// An orchestrate turn's credential on the API (worker/orchestrate.ts mints it). It is accepted only
// beside the secret its run's proxy adds (sandbox/proxy.ts VIA_HEADER: the request came out of that
// run's sandbox) and only while the run has not ended; the store is asked on every request, nothing
// of it is cached. What it may do is narrow: create runs below its own run (in its own environment
// or those its environment lists under orchestrate_environments), and read, list, cancel and follow
// up the runs below its own. Everything else is 403 forbidden, or 404 for a run outside its tree,
// and no answer ever shows the token.

import type { FastifyRequest } from 'fastify';
import { isTerminalState } from '../../api/index.js';
import type { EndpointName } from '../../api/endpoints.js';
import type { EnvironmentConfig } from '../config/config.js';
import { VIA_HEADER } from '../sandbox/proxy.js';
import { RUN_TOKEN_PREFIX, hashKey, isWellFormedRunToken, sameHash } from '../store/keys.js';
import type { RunRecordStore, RunRequestStore, RunTokenStore } from '../store/types.js';
import { ProblemError } from './problem.js';

const CHALLENGE = { 'www-authenticate': 'Bearer realm="agent-executor"' };

/** What a principal signed in with a run token may act for. */
export interface Orchestrator {
  /** The orchestrate run whose turn holds the token. */
  runId: string;
  /** The environments its children may run in: its own first, then its orchestrate_environments. */
  environments: string[];
}

/** Whether the Authorization header carries a run token (`art_…`) rather than an API key. */
export function carriesRunToken(header: string | undefined): boolean {
  const match = header === undefined ? null : /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match !== null && match[1]!.startsWith(RUN_TOKEN_PREFIX);
}

/**
 * The orchestrator a run token signs in as, or a 401 (malformed, unknown, its turn over: the run
 * ended) or 403 (the request did not come through the run's proxy).
 */
export async function authenticateRunToken(
  stores: { accounts: RunTokenStore; runs: Pick<RunRequestStore, 'getRunAnyTeam'> },
  environments: EnvironmentConfig[],
  token: string,
  request: FastifyRequest
): Promise<{ team: string; orchestrator: Orchestrator }> {
  if (!isWellFormedRunToken(token))
    throw new ProblemError(
      'unauthenticated',
      "the run token is malformed (an orchestrate run's credential is art_ and 36 letters and digits)",
      CHALLENGE
    );
  const record = await stores.accounts.findRunToken(hashKey(token));
  if (!record)
    throw new ProblemError(
      'unauthenticated',
      'the run token is unknown, or the orchestrate turn that held it has ended',
      CHALLENGE
    );
  const via = request.headers[VIA_HEADER];
  if (typeof via !== 'string' || !sameHash(hashKey(via), record.via_hash))
    throw new ProblemError(
      'forbidden',
      "a run token is accepted only from inside its run's sandbox, through the run's proxy (AGENT_RUN_BASE_URL there); this request came another way"
    );
  const run = await stores.runs.getRunAnyTeam(record.run_id);
  if (!run || isTerminalState(run.state))
    throw new ProblemError(
      'unauthenticated',
      `the run token is no longer valid: its run ${run ? `ended ${run.state}` : 'is gone'}`,
      CHALLENGE
    );
  const own = environments.find(env => env.id === record.environment_id);
  return {
    team: record.team,
    orchestrator: {
      runId: record.run_id,
      environments: [record.environment_id, ...(own?.orchestrateEnvironments ?? [])]
    }
  };
}

/** The endpoints a run token may reach; each takes the checks below. */
const ALLOWED = new Set<EndpointName>([
  'createRun',
  'createRunLegacy',
  'listRuns',
  'getRun',
  'cancelRun',
  'submitFollowup',
  'getTranscript',
  'getConversation',
  'getRunEvents'
]);

/**
 * A 403 unless the endpoint is one a run token may use: checked as soon as the token is, before
 * the request is parsed, so a refused endpoint says so whatever the request holds.
 */
export function checkOrchestratorEndpoint(
  orchestrator: Orchestrator,
  endpoint: EndpointName | undefined,
  request: FastifyRequest
): void {
  if (endpoint === undefined || !ALLOWED.has(endpoint))
    throw new ProblemError(
      'forbidden',
      `a run's orchestrate credential may create, read, list, cancel and follow up only the runs below its run ${orchestrator.runId}; ${request.method} ${request.routeOptions.url ?? request.url} is not among these`
    );
}

/**
 * Checks (and completes) a request of an orchestrator before its handler runs: the endpoint is
 * one it may use, each run it names is below its own run, a create's environment is one it may
 * use. A create without parent_run_id gets its own run as the parent, a list without
 * ancestor_run_id its own run as the ancestor.
 */
export async function checkOrchestratorRequest(
  store: Pick<RunRecordStore, 'isDescendant'>,
  team: string,
  orchestrator: Orchestrator,
  endpoint: EndpointName,
  request: FastifyRequest
): Promise<void> {
  const own = orchestrator.runId;
  checkOrchestratorEndpoint(orchestrator, endpoint, request);
  const below = (id: string) => store.isDescendant(team, id, own);
  const within = async (id: string) => id === own || (await below(id));
  const params = request.params as { run_id?: unknown } | undefined;
  if (typeof params?.run_id === 'string' && !(await below(params.run_id)))
    throw new ProblemError(
      'not_found',
      `run ${JSON.stringify(params.run_id.slice(0, 100))} does not exist or is not below run ${own}, whose orchestrate credential this is`
    );
  if (endpoint === 'listRuns') {
    const query = request.query as { ancestor_run_id?: unknown };
    if (query.ancestor_run_id === undefined) query.ancestor_run_id = own;
    else if (typeof query.ancestor_run_id !== 'string' || !(await within(query.ancestor_run_id)))
      throw new ProblemError(
        'forbidden',
        `ancestor_run_id ${JSON.stringify(String(query.ancestor_run_id).slice(0, 100))}: a run's orchestrate credential lists only the runs below its run ${own}; name that run or one below it`
      );
    return;
  }
  if (endpoint !== 'createRun' && endpoint !== 'createRunLegacy') return;
  const body = request.body as {
    parent_run_id?: unknown;
    conversation_id?: unknown;
    config?: { environment_id?: unknown };
  };
  if (body.parent_run_id === undefined || body.parent_run_id === null) body.parent_run_id = own;
  else if (typeof body.parent_run_id !== 'string' || !(await within(body.parent_run_id)))
    throw new ProblemError(
      'forbidden',
      `parent_run_id ${JSON.stringify(String(body.parent_run_id).slice(0, 100))}: a run's orchestrate credential creates runs only below its run ${own}; name that run, one below it, or leave parent_run_id out`
    );
  // A conversation_id start copies that run's files: only a run of its own tree may be continued.
  if (
    body.conversation_id !== undefined &&
    body.conversation_id !== null &&
    (typeof body.conversation_id !== 'string' || !(await within(body.conversation_id)))
  )
    throw new ProblemError(
      'forbidden',
      `conversation_id ${JSON.stringify(String(body.conversation_id).slice(0, 100))}: a run's orchestrate credential may continue only runs below its run ${own}`
    );
  const environment = body.config?.environment_id;
  if (typeof environment === 'string' && !orchestrator.environments.includes(environment))
    throw new ProblemError(
      'forbidden',
      `environment ${JSON.stringify(environment.slice(0, 100))}: the orchestrate run ${own} may start runs only in ${orchestrator.environments.map(id => JSON.stringify(id)).join(', ')} (its own environment and its orchestrate_environments)`
    );
}
