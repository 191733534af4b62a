// The typed client: one resource object per kind of thing the API serves (`client.runs`,
// `client.schedules`, …, each in resources/), all sharing one transport (core.ts) that owns the
// credential, retries and error mapping and takes each endpoint's method and path from the table.
// The flat methods of earlier versions (`client.getRun`, …) remain as one-line delegations typed
// by the resource method each names, so the two cannot drift apart.

import { type ClientOptions, ClientCore } from './core.js';
import { Artifacts } from './resources/artifacts.js';
import { Environments } from './resources/environments.js';
import { Events } from './resources/events.js';
import { Models } from './resources/models.js';
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
export { Artifacts, Environments, Events, Models, Runs, Schedules, Webhooks };

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
  }

  /** Closes idle keep-alive connections. */
  close(): void {
    this.core.transport.close();
  }

  // The flat methods of earlier versions: each is the resource method it names, with its type.

  /** @deprecated Use `client.runs.create`. */
  readonly createRun: Runs['create'] = (...args) => this.runs.create(...args);

  /** @deprecated Use `client.runs.get`. */
  readonly getRun: Runs['get'] = (...args) => this.runs.get(...args);

  /** @deprecated Use `client.runs.poll`. */
  readonly pollRun: Runs['poll'] = (...args) => this.runs.poll(...args);

  /** @deprecated Use `client.runs.list`. */
  readonly listRuns: Runs['list'] = (...args) => this.runs.list(...args);

  /** @deprecated Use `client.runs.iterate`. */
  readonly iterateRuns: Runs['iterate'] = (...args) => this.runs.iterate(...args);

  /** @deprecated Use `client.runs.cancel`. */
  readonly cancelRun: Runs['cancel'] = (...args) => this.runs.cancel(...args);

  /** @deprecated Use `client.runs.followUp`. */
  readonly submitFollowup: Runs['followUp'] = (...args) => this.runs.followUp(...args);

  /** @deprecated Use `client.runs.stream`. */
  readonly runEvents: Runs['stream'] = (...args) => this.runs.stream(...args);

  /** @deprecated Use `client.events.list`. */
  readonly listEvents: Events['list'] = (...args) => this.events.list(...args);

  /** @deprecated Use `client.runs.wait`. */
  readonly waitForRun: Runs['wait'] = (...args) => this.runs.wait(...args);

  /** @deprecated Use `client.runs.conversation`. */
  readonly getConversation: Runs['conversation'] = (...args) => this.runs.conversation(...args);

  /** @deprecated Use `client.runs.transcript`. */
  readonly getTranscript: Runs['transcript'] = (...args) => this.runs.transcript(...args);

  /** @deprecated Use `client.runs.wholeTranscript`. */
  readonly getWholeTranscript: Runs['wholeTranscript'] = (...args) => this.runs.wholeTranscript(...args);

  /** @deprecated Use `client.artifacts.get`. */
  readonly getArtifact: Artifacts['get'] = (...args) => this.artifacts.get(...args);

  /** @deprecated Use `client.artifacts.download`. */
  readonly downloadArtifact: Artifacts['download'] = (...args) => this.artifacts.download(...args);

  /** @deprecated Use `client.schedules.list`. */
  readonly listSchedules: Schedules['list'] = (...args) => this.schedules.list(...args);

  /** @deprecated Use `client.schedules.get`. */
  readonly getSchedule: Schedules['get'] = (...args) => this.schedules.get(...args);

  /** @deprecated Use `client.schedules.create`. */
  readonly createSchedule: Schedules['create'] = (...args) => this.schedules.create(...args);

  /** @deprecated Use `client.schedules.update`. */
  readonly updateSchedule: Schedules['update'] = (...args) => this.schedules.update(...args);

  /** @deprecated Use `client.schedules.delete`. */
  readonly deleteSchedule: Schedules['delete'] = (...args) => this.schedules.delete(...args);

  /** @deprecated Use `client.schedules.pause`. */
  readonly pauseSchedule: Schedules['pause'] = (...args) => this.schedules.pause(...args);

  /** @deprecated Use `client.schedules.resume`. */
  readonly resumeSchedule: Schedules['resume'] = (...args) => this.schedules.resume(...args);

  /** @deprecated Use `client.webhooks.list`. */
  readonly listWebhooks: Webhooks['list'] = (...args) => this.webhooks.list(...args);

  /** @deprecated Use `client.webhooks.get`. */
  readonly getWebhook: Webhooks['get'] = (...args) => this.webhooks.get(...args);

  /** @deprecated Use `client.webhooks.create`. */
  readonly createWebhook: Webhooks['create'] = (...args) => this.webhooks.create(...args);

  /** @deprecated Use `client.webhooks.delete`. */
  readonly deleteWebhook: Webhooks['delete'] = (...args) => this.webhooks.delete(...args);

  /** @deprecated Use `client.webhooks.rotateSecret`. */
  readonly rotateWebhookSecret: Webhooks['rotateSecret'] = (...args) => this.webhooks.rotateSecret(...args);

  /** @deprecated Use `client.webhooks.deliveries`. */
  readonly listWebhookDeliveries: Webhooks['deliveries'] = (...args) => this.webhooks.deliveries(...args);

  /** @deprecated Use `client.webhooks.retryDelivery`. */
  readonly retryWebhookDelivery: Webhooks['retryDelivery'] = (...args) =>
    this.webhooks.retryDelivery(...args);

  /** @deprecated Use `client.environments.list`. */
  readonly listEnvironments: Environments['list'] = (...args) => this.environments.list(...args);

  /** @deprecated Use `client.models.list`. */
  readonly listModels: Models['list'] = (...args) => this.models.list(...args);
}
