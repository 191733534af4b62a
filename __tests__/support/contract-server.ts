// A real HTTP server on a real port that speaks the run contract, for testing the client and the
// action against faults a production service can show: status bursts, resets after a commit,
// slow answers, truncated bodies, unknown states and both forms of status_message. Requests are
// routed by the endpoint table (src/api/endpoints.ts) to a handler per endpoint name, so the
// server knows exactly the paths and methods the executor serves.

import { randomUUID } from 'node:crypto';
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ENDPOINTS, ENDPOINT_NAMES, type EndpointName, pathParameters } from '../../src/api/endpoints.js';

/** Each endpoint's method and its path as a pattern whose groups are its parameters. */
const ROUTES = ENDPOINT_NAMES.map(name => {
  const { method, path } = ENDPOINTS[name];
  const pattern = new RegExp(`^${path.replace(/\{[a-z_]+\}/g, '([^/]+)')}$`);
  return { name, method, pattern, params: pathParameters(path) };
});

/** The endpoint a request is for, and its path parameters (decoded). */
function endpointOf(
  method: string | undefined,
  path: string
): { name: EndpointName; params: Record<string, string> } | undefined {
  for (const route of ROUTES) {
    if (route.method !== method) continue;
    const match = route.pattern.exec(path);
    if (!match) continue;
    const params: Record<string, string> = {};
    route.params.forEach((param, index) => (params[param] = decodeURIComponent(match[index + 1]!)));
    return { name: route.name, params };
  }
  return undefined;
}

type Answer = { status: number; body?: unknown; raw?: Buffer; headers?: Record<string, string> };

export interface StoredRun {
  run_id: string;
  state: string;
  prompt: string;
  config: Record<string, unknown>;
  title?: string;
  created_at: string;
  updated_at: string;
  version: number;
  [field: string]: unknown;
}

export type Fault =
  | { kind: 'status'; status: number; headers?: Record<string, string>; body?: string }
  | { kind: 'reset-before' }
  | { kind: 'reset-after' }
  | { kind: 'delay'; ms: number }
  /** Answers once `until` settles: a request held on its way while the test changes the run. */
  | { kind: 'hold'; until: Promise<unknown> }
  | { kind: 'truncate' };

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: string;
}

export interface ContractServerOptions {
  /** Honour If-None-Match + Prefer: wait (default true). */
  supportsWait?: boolean;
  /** Honour Idempotency-Key (default true). */
  idempotency?: boolean;
  /** Serve the cancel endpoint (default true). */
  cancel?: boolean;
  /**
   * Serve GET /agent/runs/{id}/conversation from each run's `conversation` field and
   * GET /agent/artifacts/{uid} from `artifactFiles` (default false: those paths answer 404).
   */
  conversation?: boolean;
  /**
   * Serve GET /agent/runs/{id}/transcript from each run's `events` with `after=SEQ`; with
   * supportsWait it also holds such reads under `Prefer: wait=N` until a newer event exists.
   */
  transcript?: boolean;
  /**
   * How cancel refuses (default `executor`): `executor` answers 409 run_already_finished for an
   * ended run; `service` answers as the production service does: 409 without a code while the run
   * is PENDING, 400 when it ended or is BLOCKED.
   */
  cancelStyle?: 'executor' | 'service';
  /** With cancelStyle `service`: the `retryable` field of the 409 sent while PENDING (default: absent). */
  pendingRetryable?: boolean;
  /**
   * Serve POST /agent/runs/{id}/followups (default true; false answers 404 route_not_found, as
   * older services do).
   */
  followups?: boolean;
  /** Serve creates only on the deprecated POST /agent/run, as older servers do (default false). */
  legacyCreateOnly?: boolean;
  /** Honour `metadata[key]=value` on the list (default true; false ignores it, as many REST services do). */
  metadataFilter?: boolean;
  apiKey?: string;
}

/** A file artifact: its details (whose download URL may point at another origin) and its bytes. */
export interface ArtifactFile {
  details: Record<string, unknown>;
  bytes?: Buffer;
}

export class ContractServer {
  readonly runs = new Map<string, StoredRun>();
  readonly requests: RecordedRequest[] = [];
  /** Faults applied in order to requests whose "METHOD /path" starts with the key. */
  readonly faults: { match: string; fault: Fault }[] = [];
  /** Artifacts served at /agent/artifacts/{uid} (with the conversation option), and their bytes at /downloads/{uid}. */
  readonly artifactFiles = new Map<string, ArtifactFile>();
  /** Called after a run is created, to script its life. */
  onCreate: (run: StoredRun) => void = () => {};
  /** Every follow-up accepted, in order. */
  readonly followups: { run_id: string; message: string; mode: string }[] = [];
  /** Called after a follow-up is accepted (the run is QUEUED again), to script the next turn. */
  onFollowup: (run: StoredRun, followup: { message: string; mode: string }) => void = () => {};
  private readonly idempotency = new Map<string, string>();
  private readonly waiters = new Set<() => void>();
  private server?: Server;
  readonly options: Required<Omit<ContractServerOptions, 'pendingRetryable'>> &
    Pick<ContractServerOptions, 'pendingRetryable'>;

  constructor(options: ContractServerOptions = {}) {
    this.options = {
      supportsWait: true,
      idempotency: true,
      cancel: true,
      conversation: false,
      transcript: false,
      cancelStyle: 'executor',
      legacyCreateOnly: false,
      followups: true,
      metadataFilter: true,
      apiKey: 'test-key-0123456789',
      ...options
    };
  }

  get url(): string {
    const address = this.server?.address() as AddressInfo;
    return `http://127.0.0.1:${address.port}`;
  }

  async start(): Promise<this> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>(resolve => this.server!.listen(0, '127.0.0.1', resolve));
    return this;
  }

  async stop(): Promise<void> {
    for (const wake of this.waiters) wake();
    this.server?.closeAllConnections();
    await new Promise<void>(resolve => this.server?.close(() => resolve()) ?? resolve());
  }

  fault(match: string, fault: Fault, times = 1): void {
    for (let i = 0; i < times; i++) this.faults.push({ match, fault });
  }

  /** Moves a run to a new state (and merges fields), waking held reads. */
  update(runId: string, fields: Partial<StoredRun>): void {
    const run = this.runs.get(runId);
    if (!run) throw new Error(`no run ${runId}`);
    Object.assign(run, fields, { updated_at: new Date().toISOString(), version: run.version + 1 });
    for (const wake of [...this.waiters]) wake();
  }

  /** Per run, what happens when a read answers the run (stepOnRead). */
  private readonly onRead = new Map<string, () => void>();

  /**
   * Moves a run through `steps` one at a time, each once a read has answered the run as it was
   * before: a client that reads on every change sees every state, however slow the machine is.
   */
  stepOnRead(runId: string, steps: Partial<StoredRun>[]): void {
    const left = [...steps];
    this.onRead.set(runId, () => {
      const next = left.shift();
      if (left.length === 0) this.onRead.delete(runId);
      if (next) setImmediate(() => this.runs.has(runId) && this.update(runId, next));
    });
  }

  /** Schedules state changes: [[ms after creation, fields], ...]. */
  script(runId: string, steps: [number, Partial<StoredRun>][]): void {
    for (const [ms, fields] of steps)
      setTimeout(() => this.runs.has(runId) && this.update(runId, fields), ms);
  }

  /** Appends a transcript event to a run (seq numbered from 1), waking held reads. */
  addEvent(runId: string, event: Record<string, unknown>): void {
    const run = this.runs.get(runId);
    if (!run) throw new Error(`no run ${runId}`);
    const list = ((run.events as Record<string, unknown>[] | undefined) ??= []);
    list.push({ seq: list.length + 1, at: new Date().toISOString(), ...event });
    for (const wake of [...this.waiters]) wake();
  }

  /** Resolves when `ready()` holds after a wake-up, the time is up, or the client goes. */
  private hold(req: IncomingMessage, ms: number, ready: () => boolean): Promise<void> {
    return new Promise<void>(resolve => {
      const timer = setTimeout(() => cleanup(), ms);
      const wake = () => {
        if (ready() || req.socket.destroyed) cleanup();
      };
      const cleanup = () => {
        clearTimeout(timer);
        this.waiters.delete(wake);
        resolve();
      };
      this.waiters.add(wake);
      req.socket.once('close', cleanup);
    });
  }

  count(method: string, pathPrefix: string): number {
    return this.requests.filter(r => r.method === method && r.path.startsWith(pathPrefix)).length;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    const url = new URL(req.url ?? '/', 'http://localhost');
    const route = `${req.method} ${url.pathname}`;
    this.requests.push({
      method: req.method ?? '',
      path: url.pathname + url.search,
      headers: req.headers,
      body
    });

    const index = this.faults.findIndex(f => route.startsWith(f.match));
    const fault = index >= 0 ? this.faults.splice(index, 1)[0]!.fault : undefined;
    if (fault?.kind === 'reset-before') return void req.socket.destroy();
    // Unreferenced: a long delay a test never waits out does not keep the test process alive.
    if (fault?.kind === 'delay') await new Promise(resolve => setTimeout(resolve, fault.ms).unref());
    if (fault?.kind === 'hold') await fault.until.catch(() => undefined);
    if (fault?.kind === 'status') {
      res.writeHead(fault.status, { 'content-type': 'application/problem+json', ...fault.headers });
      return void res.end(fault.body ?? JSON.stringify({ title: 'injected', status: fault.status }));
    }

    const answer = await this.route(req, url, body);
    if (res.destroyed) return;
    if (fault?.kind === 'reset-after') return void req.socket.destroy();
    const text = answer.raw ?? (answer.body === undefined ? '' : JSON.stringify(answer.body));
    res.writeHead(answer.status, {
      'content-type': answer.status >= 400 ? 'application/problem+json' : 'application/json',
      ...answer.headers
    });
    if (fault?.kind === 'truncate') {
      res.write(text.slice(0, Math.floor(text.length / 2)));
      return void req.socket.destroy();
    }
    res.end(text);
  }

  private async route(req: IncomingMessage, url: URL, body: string): Promise<Answer> {
    const download = /^\/downloads\/([^/]+)$/.exec(url.pathname);
    const file = download ? this.artifactFiles.get(decodeURIComponent(download[1]!)) : undefined;
    if (file?.bytes && req.method === 'GET') {
      return { status: 200, raw: file.bytes, headers: { 'content-type': 'application/octet-stream' } };
    }
    const endpoint = endpointOf(req.method, url.pathname);
    const needsKey = endpoint === undefined || ENDPOINTS[endpoint.name].auth === 'key';
    if (needsKey && req.headers.authorization !== `Bearer ${this.options.apiKey}`) {
      return problem(401, 'unauthenticated', 'bad key');
    }
    const handler = endpoint && this.handlers[endpoint.name];
    const answer = handler ? await handler(req, url, body, endpoint.params) : undefined;
    return answer ?? problem(404, 'route_not_found', `no route ${req.method} ${url.pathname}`);
  }

  /** What each endpoint answers; undefined (or an endpoint left out) is "no such route" here. */
  private readonly handlers: Partial<
    Record<
      EndpointName,
      (
        req: IncomingMessage,
        url: URL,
        body: string,
        params: Record<string, string>
      ) => Promise<Answer | undefined> | Answer | undefined
    >
  > = {
    createRunLegacy: (req, _url, body) => this.create(req, body),
    createRun: (req, _url, body) => (this.options.legacyCreateOnly ? undefined : this.create(req, body)),
    listRuns: (_req, url) => {
      // `metadata[key]=value`, repeatable: a run must have every pair.
      const wanted = [...url.searchParams].flatMap(([name, value]) => {
        const key = /^metadata\[(.+)\]$/.exec(name)?.[1];
        return key === undefined || !this.options.metadataFilter ? [] : [[key, value] as const];
      });
      const all = [...this.runs.values()]
        .reverse()
        .filter(run =>
          wanted.every(([key, value]) => (run.metadata as Record<string, string>)?.[key] === value)
        );
      const limit = Number(url.searchParams.get('limit') ?? 20);
      const start = Number(url.searchParams.get('cursor') ?? 0);
      const page = all
        .slice(start, start + limit)
        .map(({ version: _v, conversation: _c, ...record }) => record);
      const more = start + limit < all.length;
      return {
        status: 200,
        body: {
          runs: page,
          page_info: { has_next_page: more, next_cursor: more ? String(start + limit) : null }
        }
      };
    },
    getArtifact: (_req, _url, _body, { artifact_uid }) => {
      if (!this.options.conversation) return undefined;
      const found = this.artifactFiles.get(artifact_uid!);
      return found ? { status: 200, body: found.details } : problem(404, 'not_found', 'no such artifact');
    },
    getConversation: (_req, _url, _body, { run_id }) => {
      if (!this.options.conversation) return undefined;
      const found = this.runs.get(run_id!);
      if (!found) return problem(404, 'not_found', 'no such run');
      return { status: 200, body: found.conversation ?? { conversation_id: found.run_id, steps: [] } };
    },
    getTranscript: async (req, url, _body, { run_id }) => {
      if (!this.options.transcript) return undefined;
      const found = this.runs.get(run_id!);
      if (!found) return problem(404, 'not_found', 'no such run');
      const after = Number(url.searchParams.get('after') ?? 0);
      const newer = () => ((found.events as { seq: number }[] | undefined) ?? []).filter(e => e.seq > after);
      const hold = /wait=(\d+)/.exec(String(req.headers.prefer ?? ''));
      const held = this.options.supportsWait && hold !== null;
      if (held && newer().length === 0)
        await this.hold(req, Number(hold[1]) * 1000, () => newer().length > 0);
      return {
        status: 200,
        body: { run_id: found.run_id, state: found.state, events: newer() },
        headers: held ? { 'preference-applied': 'wait' } : {}
      };
    },
    submitFollowup: (_req, _url, body, { run_id }) =>
      this.options.followups ? this.followup(run_id!, body) : undefined,
    cancelRun: (_req, _url, body, { run_id }) =>
      this.options.cancel ? this.cancel(run_id!, body) : undefined,
    getRun: (req, _url, _body, { run_id }) => this.read(req, run_id!)
  };

  private create(req: IncomingMessage, body: string): Answer {
    let parsed: { prompt?: unknown; config?: { environment_id?: unknown } };
    try {
      parsed = JSON.parse(body);
    } catch {
      return problem(400, 'invalid_request', 'body is not JSON');
    }
    if (typeof parsed.prompt !== 'string') return problem(422, 'invalid_field', 'prompt: expected a string');
    if (typeof parsed.config?.environment_id !== 'string') {
      return problem(422, 'invalid_field', 'config.environment_id: expected a string');
    }
    const key = req.headers['idempotency-key'];
    if (this.options.idempotency && typeof key === 'string' && this.idempotency.has(key)) {
      return { status: 200, body: { run_id: this.idempotency.get(key), state: 'QUEUED' } };
    }
    const now = new Date().toISOString();
    const run: StoredRun = {
      ...(parsed as object),
      run_id: randomUUID(),
      state: 'QUEUED',
      prompt: parsed.prompt,
      config: parsed.config as Record<string, unknown>,
      created_at: now,
      updated_at: now,
      version: 1
    };
    this.runs.set(run.run_id, run);
    if (this.options.idempotency && typeof key === 'string') this.idempotency.set(key, run.run_id);
    this.onCreate(run);
    return { status: 200, body: { run_id: run.run_id, state: 'QUEUED' } };
  }

  /** Puts a PLAN artifact on a run and serves its markdown at /agent/artifacts/{uid} (`data.content`). */
  plan(runId: string, markdown: string, title = 'Plan'): string {
    const uid = `plan-${randomUUID()}`;
    this.artifactFiles.set(uid, {
      details: {
        artifact_uid: uid,
        artifact_type: 'PLAN',
        data: { document_uid: uid, title, content: markdown }
      }
    });
    const run = this.runs.get(runId)!;
    const artifacts = [...((run.artifacts as unknown[] | undefined) ?? [])];
    artifacts.push({
      artifact_type: 'PLAN',
      created_at: new Date().toISOString(),
      data: { document_uid: uid, title }
    });
    this.update(runId, { artifacts });
    return uid;
  }

  private followup(runId: string, body: string): Answer {
    let parsed: { message?: unknown; mode?: unknown };
    try {
      parsed = JSON.parse(body);
    } catch {
      return problem(400, 'invalid_request', 'body is not JSON');
    }
    const run = this.runs.get(runId);
    if (!run) return problem(404, 'not_found', 'no such run');
    if (typeof parsed.message !== 'string' || parsed.message.trim() === '' || parsed.message.length > 100_000)
      return problem(
        422,
        'invalid_field',
        'message: expected a non-empty string of at most 100000 characters'
      );
    const mode = parsed.mode ?? 'normal';
    if (mode !== 'normal' && mode !== 'plan' && mode !== 'orchestrate')
      return problem(422, 'invalid_field', 'mode: expected normal, plan or orchestrate');
    this.followups.push({ run_id: runId, message: parsed.message, mode });
    this.update(runId, { state: 'QUEUED', completed_at: null, status_message: null });
    this.onFollowup(run, { message: parsed.message, mode });
    return { status: 200, body: { run_id: runId, state: 'QUEUED' } };
  }

  private cancel(runId: string, body: string): Answer {
    const run = this.runs.get(runId);
    if (!run) return problem(404, 'not_found', 'no such run');
    const ended = ['SUCCEEDED', 'FAILED', 'ERROR', 'CANCELLED'].includes(run.state);
    if (this.options.cancelStyle === 'service') {
      const refuse = (status: number, detail: string) => ({
        status,
        body: { type: 'about:blank', title: status === 400 ? 'Bad Request' : 'Conflict', status, detail }
      });
      if (run.state === 'PENDING') {
        const refusal = refuse(409, 'run is PENDING; retry after a moment');
        if (this.options.pendingRetryable === undefined) return refusal;
        return { ...refusal, body: { ...refusal.body, retryable: this.options.pendingRetryable } };
      }
      if (ended || run.state === 'BLOCKED')
        return refuse(400, `run cannot be cancelled in state ${run.state}`);
    } else if (ended) {
      return problem(409, 'run_already_finished', `run is ${run.state}`);
    }
    let reason: unknown;
    try {
      reason = body === '' ? undefined : (JSON.parse(body) as { reason?: unknown }).reason;
    } catch {
      return problem(400, 'invalid_request', 'body is not JSON');
    }
    const message = typeof reason === 'string' ? `cancelled by a client: ${reason}` : 'cancelled by a client';
    this.update(run.run_id, { state: 'CANCELLED', status_message: message });
    return { status: 200, body: run.run_id };
  }

  private async read(req: IncomingMessage, runId: string): Promise<Answer> {
    const run = this.runs.get(runId);
    if (!run) return problem(404, 'not_found', 'no such run');
    const etag = () => `"${run.run_id}-${run.version}"`;
    const wait = /wait=(\d+)/.exec(String(req.headers.prefer ?? ''));
    if (this.options.supportsWait && req.headers['if-none-match'] === etag()) {
      if (wait) {
        const before = run.version;
        await new Promise<void>(resolve => {
          const wake = () => {
            if (run.version === before && !req.socket.destroyed && !stopped) return;
            cleanup();
          };
          let stopped = false;
          const timer = setTimeout(
            () => {
              stopped = true;
              cleanup();
            },
            Number(wait[1]) * 1000
          );
          const cleanup = () => {
            clearTimeout(timer);
            this.waiters.delete(wake);
            resolve();
          };
          this.waiters.add(wake);
          req.socket.once('close', cleanup);
        });
      }
      if (req.headers['if-none-match'] === etag()) {
        return { status: 304, headers: { etag: etag(), ...(wait ? { 'preference-applied': 'wait' } : {}) } };
      }
    }
    const { version: _version, conversation: _conversation, raw_json: rawJson, ...record } = run;
    this.onRead.get(runId)?.();
    // `raw_json`: members written into the record as they are (JSON too deep for JSON.stringify).
    const raw =
      typeof rawJson === 'string'
        ? Buffer.from(`${JSON.stringify(record).slice(0, -1)},${rawJson}}`)
        : undefined;
    return {
      status: 200,
      body: record,
      raw,
      headers: {
        etag: etag(),
        ...(this.options.supportsWait && wait ? { 'preference-applied': 'wait' } : {})
      }
    };
  }
}

function problem(status: number, code: string, detail: string): Answer {
  return { status, body: { type: 'about:blank', title: code, status, detail, error_code: code } };
}
