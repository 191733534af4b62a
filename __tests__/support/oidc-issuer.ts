// A real OIDC issuer for tests, on a loopback port: it serves a discovery document and a key set
// (JWKS) of keys it made itself, counts the fetches of each, can rotate its keys, and signs tokens
// with `jose` the way GitHub Actions' issuer does (RS256, a kid, iss/aud/exp/nbf/iat and the job's
// claims). The action's token endpoint (ACTIONS_ID_TOKEN_REQUEST_URL) can be served too.

import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type CryptoKey, type JWK, SignJWT, exportJWK, generateKeyPair } from 'jose';

export interface SigningKey {
  kid: string;
  privateKey: CryptoKey;
  publicJwk: JWK;
}

export interface TokenOptions {
  audience?: string | string[];
  issuer?: string;
  /** Seconds from now (negative: in the past). */
  expiresIn?: number;
  notBefore?: number;
  issuedAt?: number;
  claims?: Record<string, unknown>;
  /** Sign with this key instead of the published current one. */
  key?: SigningKey;
  kid?: string;
}

export const GITHUB_CLAIMS = {
  sub: 'repo:acme/widgets:ref:refs/heads/main',
  repository: 'acme/widgets',
  repository_owner: 'acme',
  ref: 'refs/heads/main',
  ref_type: 'branch',
  workflow: 'Agent',
  workflow_ref: 'acme/widgets/.github/workflows/agent.yml@refs/heads/main',
  event_name: 'push',
  run_id: '4242',
  run_attempt: '1',
  actor: 'octocat'
};

export interface TestIssuer {
  url: string;
  /** Requests served of each path. */
  hits: Map<string, number>;
  keys: SigningKey[];
  /** Signs a token; defaults: this issuer, audience `audience`, valid for `lifetime` s, GITHUB_CLAIMS. */
  token(options?: TokenOptions): Promise<string>;
  /** Makes a new key, publishes it (alone, or beside the old ones) and signs with it from now on. */
  rotate(keepOld?: boolean): Promise<SigningKey>;
  newKey(kid?: string): Promise<SigningKey>;
  /**
   * Serves the runner's token endpoint at /token: a request with `Authorization: Bearer
   * requestToken` gets a token for the audience it asks for (`?audience=`), lasting `lifetime` s.
   */
  requestToken: string;
  lifetime: number;
  /** Tokens the /token endpoint gave out, newest last. */
  issued: string[];
  /** Claims the /token endpoint's tokens carry over GITHUB_CLAIMS. */
  tokenClaims: Record<string, unknown>;
  close(): Promise<void>;
}

export async function newSigningKey(
  kid = `k-${Math.random().toString(36).slice(2, 10)}`
): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true });
  const publicJwk = { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' };
  return { kid, privateKey, publicJwk };
}

export async function startIssuer(audience = 'https://agents.example.com'): Promise<TestIssuer> {
  const hits = new Map<string, number>();
  let published: SigningKey[] = [await newSigningKey()];
  let current = published[0]!;
  let url = '';
  const issued: string[] = [];
  const issuer: TestIssuer = {
    url: '',
    hits,
    get keys() {
      return published;
    },
    requestToken: `runner-request-${Math.random().toString(36).slice(2)}`,
    lifetime: 300,
    issued,
    tokenClaims: {},
    async token(options: TokenOptions = {}) {
      const now = Math.floor(Date.now() / 1000);
      const key = options.key ?? current;
      const jwt = new SignJWT({ ...GITHUB_CLAIMS, ...options.claims })
        .setProtectedHeader({ alg: 'RS256', kid: options.kid ?? key.kid, typ: 'JWT' })
        .setIssuer(options.issuer ?? url)
        .setAudience(options.audience ?? audience)
        .setIssuedAt(now + (options.issuedAt ?? 0))
        .setNotBefore(now + (options.notBefore ?? -5))
        .setExpirationTime(now + (options.expiresIn ?? issuer.lifetime));
      return jwt.sign(key.privateKey);
    },
    async rotate(keepOld = false) {
      const key = await newSigningKey();
      published = keepOld ? [...published, key] : [key];
      current = key;
      return key;
    },
    newKey: newSigningKey,
    close: () => new Promise<void>(done => server.close(() => done()))
  };
  const server: Server = createServer((request, response) => {
    const path = (request.url ?? '/').split('?')[0]!;
    hits.set(path, (hits.get(path) ?? 0) + 1);
    const json = (status: number, body: unknown) => {
      response.writeHead(status, { 'content-type': 'application/json' });
      response.end(JSON.stringify(body));
    };
    if (path === '/.well-known/openid-configuration')
      return json(200, {
        issuer: url,
        jwks_uri: `${url}/keys`,
        id_token_signing_alg_values_supported: ['RS256']
      });
    if (path === '/keys') return json(200, { keys: published.map(key => key.publicJwk) });
    if (path === '/token') {
      if (request.headers.authorization !== `Bearer ${issuer.requestToken}`)
        return json(401, { message: 'bad request token' });
      const asked = new URL(request.url!, url).searchParams.get('audience') ?? undefined;
      void issuer.token({ audience: asked, claims: issuer.tokenClaims }).then(value => {
        issued.push(value);
        json(200, { value });
      });
      return;
    }
    json(404, { message: 'not found' });
  });
  await new Promise<void>(done => server.listen(0, '127.0.0.1', done));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  issuer.url = url;
  return issuer;
}
