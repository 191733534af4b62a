// The typed client: one resource object per kind of thing the API serves (`client.runs`,
// `client.schedules`, …, each in resources/), all sharing one transport (core.ts) that owns the
// credential, retries and error mapping and takes each endpoint's method and path from the table.
// The flat methods of earlier versions (`client.getRun`, …) remain as one-line delegations.

import type {
  ArtifactDetails,
  Conversation,
  CreateRunRequest,
  CreateRunResponse,
  ListRunsQuery,
  Transcript
} from '../api/index.js';
import type {
  CreateScheduleRequest,
  EnvironmentRecord,
  ListModelsResponse,
  ScheduleRecord,
  UpdateScheduleRequest
} from '../api/schedules.js';
import type {
  CreateWebhookRequest,
  DeliveryRecord,
  WebhookRecord,
  WebhookWithSecret
} from '../api/webhooks.js';
import { type ClientOptions, ClientCore } from './core.js';
import type { Run } from './parse.js';
import type { CallOptions, PollOptions, PollResult } from './poll.js';
import { Artifacts } from './resources/artifacts.js';
import { Environments } from './resources/environments.js';
import { type EventsPage, Events } from './resources/events.js';
import { Models } from './resources/models.js';
import {
  type CancelOptions,
  type CreateOptions,
  type FollowupRequest,
  type FollowupResponse,
  Runs,
  type RunsPage
} from './resources/runs.js';
import { Schedules } from './resources/schedules.js';
import { Webhooks } from './resources/webhooks.js';
import type { DownloadedArtifact, TranscriptOptions, TranscriptRead } from './run-readers.js';
import type { RunEventStream } from './stream.js';
import type { WaitOptions, WaitResult } from './wait.js';

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

  // The flat methods of earlier versions, each the resource method it names.

  /** @deprecated Use `client.runs.create`. */
  createRun(body: CreateRunRequest, options?: CreateOptions): Promise<CreateRunResponse> {
    return this.runs.create(body, options);
  }
  /** @deprecated Use `client.runs.get`. */
  getRun(runId: string, options?: CallOptions): Promise<Run> {
    return this.runs.get(runId, options);
  }
  /** @deprecated Use `client.runs.poll`. */
  pollRun(runId: string, options?: PollOptions): Promise<PollResult> {
    return this.runs.poll(runId, options);
  }
  /** @deprecated Use `client.runs.list`. */
  listRuns(query?: ListRunsQuery, options?: CallOptions): Promise<RunsPage> {
    return this.runs.list(query, options);
  }
  /** @deprecated Use `client.runs.iterate`. */
  iterateRuns(query?: ListRunsQuery, options?: CallOptions): AsyncGenerator<Run> {
    return this.runs.iterate(query, options);
  }
  /** @deprecated Use `client.runs.cancel`. */
  cancelRun(runId: string, options?: CancelOptions): Promise<string> {
    return this.runs.cancel(runId, options);
  }
  /** @deprecated Use `client.runs.followUp`. */
  submitFollowup(runId: string, followup: FollowupRequest, options?: CallOptions): Promise<FollowupResponse> {
    return this.runs.followUp(runId, followup, options);
  }
  /** @deprecated Use `client.runs.stream`. */
  runEvents(runId: string, options?: CallOptions): RunEventStream | undefined {
    return this.runs.stream(runId, options);
  }
  /** @deprecated Use `client.events.list`. */
  listEvents(
    runIds: readonly string[],
    options?: CallOptions & { since?: number; limit?: number }
  ): Promise<EventsPage> {
    return this.events.list(runIds, options);
  }
  /** @deprecated Use `client.runs.wait`. */
  waitForRun(runId: string, options?: WaitOptions): Promise<WaitResult> {
    return this.runs.wait(runId, options);
  }
  /** @deprecated Use `client.runs.conversation`. */
  getConversation(runId: string, options?: CallOptions): Promise<Conversation> {
    return this.runs.conversation(runId, options);
  }
  /** @deprecated Use `client.runs.transcript`. */
  getTranscript(runId: string, options?: TranscriptOptions): Promise<TranscriptRead | undefined> {
    return this.runs.transcript(runId, options);
  }
  /** @deprecated Use `client.runs.wholeTranscript`. */
  getWholeTranscript(
    runId: string,
    options?: CallOptions & { maxPages?: number }
  ): Promise<Transcript | undefined> {
    return this.runs.wholeTranscript(runId, options);
  }
  /** @deprecated Use `client.artifacts.get`. */
  getArtifact(artifactUid: string, options?: CallOptions): Promise<ArtifactDetails> {
    return this.artifacts.get(artifactUid, options);
  }
  /** @deprecated Use `client.artifacts.download`. */
  downloadArtifact(artifactUid: string, options?: CallOptions): Promise<DownloadedArtifact> {
    return this.artifacts.download(artifactUid, options);
  }
  /** @deprecated Use `client.schedules.list`. */
  listSchedules(options?: CallOptions): Promise<ScheduleRecord[]> {
    return this.schedules.list(options);
  }
  /** @deprecated Use `client.schedules.get`. */
  getSchedule(scheduleId: string, options?: CallOptions): Promise<ScheduleRecord> {
    return this.schedules.get(scheduleId, options);
  }
  /** @deprecated Use `client.schedules.create`. */
  createSchedule(body: CreateScheduleRequest, options?: CallOptions): Promise<ScheduleRecord> {
    return this.schedules.create(body, options);
  }
  /** @deprecated Use `client.schedules.update`. */
  updateSchedule(
    scheduleId: string,
    body: UpdateScheduleRequest,
    options?: CallOptions
  ): Promise<ScheduleRecord> {
    return this.schedules.update(scheduleId, body, options);
  }
  /** @deprecated Use `client.schedules.delete`. */
  deleteSchedule(scheduleId: string, options?: CallOptions): Promise<void> {
    return this.schedules.delete(scheduleId, options);
  }
  /** @deprecated Use `client.schedules.pause`. */
  pauseSchedule(scheduleId: string, options?: CallOptions): Promise<ScheduleRecord> {
    return this.schedules.pause(scheduleId, options);
  }
  /** @deprecated Use `client.schedules.resume`. */
  resumeSchedule(scheduleId: string, options?: CallOptions): Promise<ScheduleRecord> {
    return this.schedules.resume(scheduleId, options);
  }
  /** @deprecated Use `client.webhooks.list`. */
  listWebhooks(options?: CallOptions): Promise<WebhookRecord[]> {
    return this.webhooks.list(options);
  }
  /** @deprecated Use `client.webhooks.get`. */
  getWebhook(webhookId: string, options?: CallOptions): Promise<WebhookRecord> {
    return this.webhooks.get(webhookId, options);
  }
  /** @deprecated Use `client.webhooks.create`. */
  createWebhook(body: CreateWebhookRequest, options?: CallOptions): Promise<WebhookWithSecret> {
    return this.webhooks.create(body, options);
  }
  /** @deprecated Use `client.webhooks.delete`. */
  deleteWebhook(webhookId: string, options?: CallOptions): Promise<void> {
    return this.webhooks.delete(webhookId, options);
  }
  /** @deprecated Use `client.webhooks.rotateSecret`. */
  rotateWebhookSecret(webhookId: string, options?: CallOptions): Promise<WebhookWithSecret> {
    return this.webhooks.rotateSecret(webhookId, options);
  }
  /** @deprecated Use `client.webhooks.deliveries`. */
  listWebhookDeliveries(webhookId: string, options?: CallOptions): Promise<DeliveryRecord[]> {
    return this.webhooks.deliveries(webhookId, options);
  }
  /** @deprecated Use `client.webhooks.retryDelivery`. */
  retryWebhookDelivery(
    webhookId: string,
    deliveryId: string,
    options?: CallOptions
  ): Promise<DeliveryRecord> {
    return this.webhooks.retryDelivery(webhookId, deliveryId, options);
  }
  /** @deprecated Use `client.environments.list`. */
  listEnvironments(options?: CallOptions): Promise<EnvironmentRecord[]> {
    return this.environments.list(options);
  }
  /** @deprecated Use `client.models.list`. */
  listModels(options?: CallOptions): Promise<ListModelsResponse> {
    return this.models.list(options);
  }
}
