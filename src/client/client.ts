// The typed client: one resource object per kind of thing the API serves (`client.runs`,
// `client.schedules`, …, each in resources/), all sharing one transport (core.ts) that owns the
// credential, retries and error mapping and takes each endpoint's method and path from the table.

import { type ClientOptions, ClientCore } from './core.js';
import { Artifacts } from './resources/artifacts.js';
import { Environments } from './resources/environments.js';
import { Events } from './resources/events.js';
import { Models } from './resources/models.js';
import { Redirects } from './resources/redirects.js';
import { Runs } from './resources/runs.js';
import { Schedules } from './resources/schedules.js';
import { Webhooks } from './resources/webhooks.js';

export { type ClientOptions, type RetryInfo, normalizeBaseUrl } from './core.js';
export type { EventsPage } from './resources/events.js';
export type {
  CancelOptions,
  CreateOptions,
  FollowupRequest,
  FollowupResponse,
  RunsPage
} from './resources/runs.js';
export { Artifacts, Environments, Events, Models, Redirects, Runs, Schedules, Webhooks };

export class AgentRunClient {
  /** The API root every request goes below (`https://host/api/v1`). */
  readonly apiRoot: string;
  /** Runs: create, get, poll, list, iterate, cancel, followUp, stream, wait, transcript, conversation. */
  readonly runs: Runs;
  /** The events cursor over several runs of the team. */
  readonly events: Events;
  /** What runs produced: details and downloads. */
  readonly artifacts: Artifacts;
  /** Scheduled agents. */
  readonly schedules: Schedules;
  /** Webhook endpoints and their deliveries. */
  readonly webhooks: Webhooks;
  /** The environments the server runs agents in. */
  readonly environments: Environments;
  /** The models the configured agents accept. */
  readonly models: Models;
  /** Where a shared session or a conversation goes next (the service's redirects). */
  readonly redirects: Redirects;
  private readonly core: ClientCore;

  constructor(options: ClientOptions) {
    this.core = new ClientCore(options);
    this.apiRoot = this.core.apiRoot;
    this.runs = new Runs(this.core);
    this.events = new Events(this.core);
    this.artifacts = new Artifacts(this.core);
    this.schedules = new Schedules(this.core);
    this.webhooks = new Webhooks(this.core);
    this.environments = new Environments(this.core);
    this.models = new Models(this.core);
    this.redirects = new Redirects(this.core);
  }

  /** Closes idle keep-alive connections. */
  close(): void {
    this.core.transport.close();
  }
}
