// Which function handles each endpoint of the table (src/api/endpoints.ts): one line an endpoint,
// grouped by route file. A missing or mistyped one is a type error (HandlerTable).

import type { HandlerTable } from './handler.js';
import { listEnvironments, listModels } from './catalog.js';
import { createRun, createRunLegacy } from './create-run.js';
import { getRunEvents, listEvents } from './events.js';
import { getOpenApi, health, listErrorCodes, ready } from './meta.js';
import { downloadArtifact, getArtifact, getConversation } from './results.js';
import { cancelRun, getRun, getTranscript, listRuns, submitFollowup } from './runs.js';
import {
  createSchedule,
  deleteSchedule,
  getSchedule,
  listSchedules,
  pauseSchedule,
  resumeSchedule,
  updateSchedule
} from './schedules.js';
import { checkConversationRedirect, checkSessionRedirect } from './redirects.js';
import { getSession, getSessionArtifact } from './sessions.js';
import {
  createWebhook,
  deleteWebhook,
  getWebhook,
  listWebhookDeliveries,
  listWebhooks,
  retryWebhookDelivery,
  rotateWebhookSecret
} from './webhooks.js';

export const HANDLERS: HandlerTable = {
  // runs (create-run.ts, runs.ts)
  createRun,
  createRunLegacy,
  listRuns,
  getRun,
  cancelRun,
  submitFollowup,
  getTranscript,
  // what runs produced, and their events (results.ts, events.ts)
  getConversation,
  getArtifact,
  downloadArtifact,
  getRunEvents,
  listEvents,
  // session pages (sessions.ts) and the public redirects (redirects.ts)
  getSession,
  getSessionArtifact,
  checkSessionRedirect,
  checkConversationRedirect,
  // schedules (schedules.ts)
  createSchedule,
  listSchedules,
  getSchedule,
  updateSchedule,
  deleteSchedule,
  pauseSchedule,
  resumeSchedule,
  // webhooks (webhooks.ts)
  createWebhook,
  listWebhooks,
  getWebhook,
  deleteWebhook,
  rotateWebhookSecret,
  listWebhookDeliveries,
  retryWebhookDelivery,
  // the catalog and the node itself (catalog.ts, meta.ts)
  listEnvironments,
  listModels,
  getOpenApi,
  listErrorCodes,
  health,
  ready
};
