// `auth: oidc`: the step signs in with the workflow's OIDC token instead of an API key. The runner
// gives a job that has `permissions: id-token: write` the ACTIONS_ID_TOKEN_REQUEST_URL and _TOKEN
// variables, and `core.getIDToken(audience)` asks it for a token made for the executor. Each token
// is masked before anything could log it, and is asked for again before it expires, so a wait
// longer than a token's life (and the post step's cancel) still signs in. The token is only ever
// sent to the service: never to the agent, never to an output.

import * as core from '@actions/core';

/** A token is renewed when less than this much of its life is left (or half its life, if shorter). */
const RENEW_BEFORE_MS = 60_000;

/** Whether the runner lets this job ask for an OIDC token (`permissions: id-token: write`). */
export function canRequestIdToken(env: NodeJS.ProcessEnv = process.env): boolean {
  return !!env.ACTIONS_ID_TOKEN_REQUEST_URL && !!env.ACTIONS_ID_TOKEN_REQUEST_TOKEN;
}

/** The problem of `auth: oidc` in a job without the permission: it names the line to add. */
export const MISSING_ID_TOKEN_PERMISSION =
  'auth is oidc, but this job may not request an OIDC token (the runner set no ACTIONS_ID_TOKEN_REQUEST_URL): ' +
  'add `id-token: write` under `permissions:` of the job or the workflow';

export type RequestIdToken = (audience: string) => Promise<string>;

/** A token for one audience, asked for when needed and again before it expires. */
export class IdTokenSource {
  private token: string | undefined;
  private renewAt = 0;
  private pending: Promise<string> | undefined;

  constructor(
    private readonly audience: string,
    private readonly request: RequestIdToken = audience => core.getIDToken(audience)
  ) {}

  /** The token to send now. */
  get = async (): Promise<string> => {
    if (this.token !== undefined && Date.now() < this.renewAt) return this.token;
    this.pending ??= this.fetch().finally(() => (this.pending = undefined));
    return this.pending;
  };

  private async fetch(): Promise<string> {
    let token: string;
    try {
      token = (await this.request(this.audience)).trim();
    } catch (error) {
      // The runner's message names its URL and status, never a token.
      throw new Error(`could not get the workflow's OIDC token: ${(error as Error).message}`);
    }
    core.setSecret(token);
    const now = Date.now();
    const expires = expiryOf(token);
    // A token whose expiry cannot be read is asked for again on every request.
    this.renewAt = expires === undefined ? now : expires - Math.min(RENEW_BEFORE_MS, (expires - now) / 2);
    this.token = token;
    return token;
  }
}

/** The `exp` of a JWT, in ms (read without checking the signature: the service checks it). */
export function expiryOf(token: string): number | undefined {
  try {
    const payload = JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8')) as {
      exp?: unknown;
    };
    return typeof payload.exp === 'number' ? payload.exp * 1000 : undefined;
  } catch {
    return undefined;
  }
}
