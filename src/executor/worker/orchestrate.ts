// An orchestrate turn's credential: minted when the turn starts, kept in the store only as the
// SHA-256 of the token (which the run's sandbox gets as AGENT_RUN_API_KEY) and of a second secret
// that only the run's proxy holds and adds to each request it forwards to the executor
// (sandbox/proxy.ts, VIA_HEADER). The server accepts the token only beside that secret and only
// while the run has not ended (server/run-token.ts); the worker removes it when the turn ends. The
// token is also one of the run's secrets: every event of its transcript, and its status message,
// have it replaced before they are stored.

import { randomBytes } from 'node:crypto';
import { secretRedactor } from '../agents/harness/redact.js';
import { GATEWAY_HOST, type ProxyGateway } from '../sandbox/proxy.js';
import { RUN_TOKEN_PREFIX, generateKey, hashKey } from '../store/keys.js';
import type { RunTokenStore, StoredRun } from '../store/types.js';

/** steps.ts's Recorder (named here again: steps.ts imports this module). */
type Recorder = ((kind: string, data: Record<string, unknown>) => Promise<void>) & {
  flush?: () => Promise<void>;
};

/** What the sandbox of an orchestrate turn sees: the variables `agent-run` reads. */
export const GATEWAY_URL = `http://${GATEWAY_HOST}`;

export interface OrchestrateTurn {
  /**
   * AGENT_RUN_BASE_URL, AGENT_RUN_API_KEY and AGENT_RUN_ENVIRONMENT (the run's own, where
   * `agent-run run` starts a child unless told otherwise), for the agent's processes.
   */
  env: Record<string, string>;
  /** What the run's proxy forwards to, and the secret it adds. */
  gateway: ProxyGateway;
  /** Removes the credential: from now on the token is refused. */
  revoke(): Promise<void>;
}

/**
 * Mints the turn's credential and stores its hashes; `apiUrl` is where this node's proxy reaches
 * the executor's API. The token is added to `secrets` before it is handed to anything.
 */
export async function startOrchestrateTurn(
  store: RunTokenStore,
  run: StoredRun,
  apiUrl: string | undefined,
  secrets: Set<string>
): Promise<OrchestrateTurn> {
  if (!apiUrl)
    throw new Error(
      'mode orchestrate: this node serves no API its runs can reach (a --role worker node needs server.public_url, the address of the API nodes)'
    );
  const token = generateKey(RUN_TOKEN_PREFIX);
  const via = randomBytes(32).toString('base64url');
  secrets.add(token);
  secrets.add(via);
  await store.createRunToken({
    hash: hashKey(token),
    via_hash: hashKey(via),
    run_id: run.run_id,
    team: run.team,
    environment_id: run.environment_id,
    created_at: new Date().toISOString()
  });
  return {
    env: {
      AGENT_RUN_BASE_URL: GATEWAY_URL,
      AGENT_RUN_API_KEY: token,
      AGENT_RUN_ENVIRONMENT: run.environment_id
    },
    gateway: { target: apiUrl, secret: via },
    revoke: () => store.deleteRunTokens(run.run_id)
  };
}

/** Every string of `value`, keys included, with the secrets replaced. */
function redactAll(value: unknown, redact: (text: string) => string): unknown {
  if (typeof value === 'string') return redact(value);
  if (Array.isArray(value)) return value.map(item => redactAll(item, redact));
  if (value !== null && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [redact(k), redactAll(v, redact)]));
  return value;
}

/** `text` with the run's secrets replaced (as it is when there are none). */
export function redactSecrets(text: string, secrets: ReadonlySet<string>): string {
  return secrets.size === 0 ? text : secretRedactor([...secrets])(text);
}

/**
 * The recorder with the run's secrets replaced in every event before it is stored; while the run
 * has none (no orchestrate turn yet), events pass as they are.
 */
export function redactingRecorder(record: Recorder, secrets: ReadonlySet<string>): Recorder {
  let redactor: { size: number; redact: (text: string) => string } | undefined;
  const redacting: Recorder = (kind, data) => {
    if (secrets.size === 0) return record(kind, data);
    if (redactor?.size !== secrets.size)
      redactor = { size: secrets.size, redact: secretRedactor([...secrets]) };
    return record(kind, redactAll(data, redactor.redact) as Record<string, unknown>);
  };
  if (record.flush) redacting.flush = record.flush.bind(record);
  return redacting;
}
