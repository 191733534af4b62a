// Where the service is and the key: `--base-url` or AGENT_RUN_BASE_URL, and the key only from
// AGENT_RUN_API_KEY or `--api-key-file`, never from a flag value (argv is visible to every user
// of the machine and lands in shell history). Without a key, an OIDC token in AGENT_RUN_ID_TOKEN
// (a workflow's, for an executor with auth.oidc rules) is sent the same way.

import { readFileSync } from 'node:fs';
import { AgentRunClient, normalizeBaseUrl } from '../client/index.js';
import type { Terminal } from './terminal.js';
import { CliError, EXIT, usage } from './exit.js';

export const USER_AGENT = 'agent-run-cli/0.1.0';

export interface Connection {
  baseUrl: string;
  apiKey: string;
  /** Where the key came from, named when the service rejects it. */
  keySource: string;
  /** The credential is an OIDC token (AGENT_RUN_ID_TOKEN), not a key. */
  token?: boolean;
}

export const CONNECTION_OPTIONS = {
  'base-url': { type: 'string' },
  'api-key-file': { type: 'string' }
} as const;

export const CONNECTION_HELP = `Connection:
  --base-url URL         the service (or set AGENT_RUN_BASE_URL)
  --api-key-file FILE    a file holding the key (or set AGENT_RUN_API_KEY); never a flag value
                         (without a key: an OIDC token from AGENT_RUN_ID_TOKEN)`;

/** Refuses a key given as a flag before anything else reads argv, without repeating the value. */
export function refuseKeyFlag(argv: string[]): void {
  if (argv.some(arg => arg === '--api-key' || arg.startsWith('--api-key='))) {
    throw usage(
      '--api-key is not accepted: a key on the command line is visible to other users and kept in shell history. ' +
        'Set AGENT_RUN_API_KEY or pass --api-key-file FILE.'
    );
  }
}

export function readConnection(
  values: { 'base-url'?: string; 'api-key-file'?: string },
  env: NodeJS.ProcessEnv = process.env
): Connection {
  const rawBase = (values['base-url'] ?? env.AGENT_RUN_BASE_URL ?? '').trim();
  if (rawBase === '') {
    throw usage('no service URL: pass --base-url URL or set AGENT_RUN_BASE_URL, e.g. http://127.0.0.1:8080');
  }
  let baseUrl: string;
  try {
    baseUrl = normalizeBaseUrl(rawBase);
  } catch (error) {
    throw usage((error as Error).message);
  }
  let apiKey: string;
  const file = values['api-key-file'];
  if (file !== undefined) {
    try {
      apiKey = readFileSync(file, 'utf8').trim();
    } catch (error) {
      throw usage(
        `--api-key-file ${JSON.stringify(file)}: cannot read it (${(error as NodeJS.ErrnoException).code})`
      );
    }
    if (apiKey === '')
      throw usage(`--api-key-file ${JSON.stringify(file)}: the file is empty; expected the key`);
  } else {
    apiKey = (env.AGENT_RUN_API_KEY ?? '').trim();
  }
  const idToken = file === undefined && apiKey === '' ? (env.AGENT_RUN_ID_TOKEN ?? '').trim() : '';
  if (idToken !== '') apiKey = idToken;
  // No key cannot authenticate: exit 5, as the help's exit codes say.
  if (apiKey === '')
    throw new CliError(
      'no API key: set AGENT_RUN_API_KEY or pass --api-key-file FILE (or set AGENT_RUN_ID_TOKEN to an OIDC token)',
      EXIT.unreachable
    );
  if (/[\r\n]/.test(apiKey))
    throw usage(
      idToken !== ''
        ? 'the token in AGENT_RUN_ID_TOKEN contains a line break: expected the token on one line'
        : 'the API key contains a line break: expected the key on one line'
    );
  const keySource =
    file !== undefined
      ? `the key in ${JSON.stringify(file)} (--api-key-file)`
      : idToken !== ''
        ? "the token in AGENT_RUN_ID_TOKEN (and the executor's auth.oidc rules)"
        : 'AGENT_RUN_API_KEY';
  return { baseUrl, apiKey, keySource, ...(idToken !== '' ? { token: true } : {}) };
}

export function createClient(connection: Connection, terminal: Terminal): AgentRunClient {
  return new AgentRunClient({
    baseUrl: connection.baseUrl,
    ...(connection.token
      ? { credential: () => Promise.resolve(connection.apiKey) }
      : { apiKey: connection.apiKey }),
    userAgent: USER_AGENT,
    keyName: connection.keySource,
    onRetry: info =>
      terminal.note(
        `Retrying ${info.request} in ${(info.delayMs / 1000).toFixed(1)} s (retry ${info.retry}): ${info.reason}`
      )
  });
}
