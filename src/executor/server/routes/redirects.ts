// The two public redirects of the service: a shared session to its run's conversation once the run
// ended, and a conversation (a run id) to its live session. A session id is the run id under a
// block cipher (AES-128 on its 16 bytes, the key one of the store's secrets): it names one run,
// cannot be made from a run id without the key, and gives back its run id only to the executor.
// What an anonymous caller may learn is bounded by who hands out session ids: only the
// conversation redirect does, and only to a key of the run's team. So the session redirect tells a
// holder of a session id that the run ended (what a key of its team could read anyway), and the
// conversation redirect without a key answers {} for every id: a run id alone tells nothing.

import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { isTerminalState } from '../../../api/index.js';
import type { ConversationRedirect, SessionRedirect } from '../../../api/schemas.js';
import type { AccountStore } from '../../store/types.js';
import { ProblemError } from '../problem.js';
import type { EndpointRequest, RouteContext } from './handler.js';
import { admit } from './register.js';

const ID_FORM = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const EXAMPLE = '3f2b8c1e-9d4a-4e7b-a1c2-5d6e7f809a1b';

/** The cipher's key of each store (its secret is made on first use and shared by every node). */
const keys = new WeakMap<object, Promise<Buffer>>();

function keyOf(accounts: Pick<AccountStore, 'getSecret'>): Promise<Buffer> {
  let key = keys.get(accounts);
  if (!key) {
    key = accounts
      .getSecret('session-ids', () => randomBytes(16).toString('base64url'))
      .then(secret => Buffer.from(secret, 'base64url'));
    // A failed read (the store unreachable) is not remembered: the next request asks again.
    key.catch(() => keys.delete(accounts));
    keys.set(accounts, key);
  }
  return key;
}

/** One AES block through the cipher (or back), as a lower-case id of UUID form. */
function permute(key: Buffer, id: string, decrypt: boolean): string {
  const make = decrypt ? createDecipheriv : createCipheriv;
  const cipher = make('aes-128-ecb', key, null).setAutoPadding(false);
  const hex = Buffer.concat([
    cipher.update(Buffer.from(id.replaceAll('-', ''), 'hex')),
    cipher.final()
  ]).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** Whether an id has the form newRunId makes: version 7, the RFC 4122 variant, a time not in the future. */
function isRunIdForm(id: string): boolean {
  if (id[14] !== '7' || !'89ab'.includes(id[19]!)) return false;
  const ms = parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
  return ms <= Date.now() + 24 * 3600_000;
}

function checkForm(name: string, value: string): void {
  if (!ID_FORM.test(value))
    throw new ProblemError(
      'invalid_request',
      `${name} ${JSON.stringify(value.slice(0, 100))}: expected an id of 32 lower-case hex digits in the form ${EXAMPLE}`
    );
}

export async function checkSessionRedirect(
  context: RouteContext,
  request: EndpointRequest<'checkSessionRedirect'>
): Promise<SessionRedirect> {
  const sessionId = request.params.session_id;
  checkForm('session_id', sessionId);
  const runId = permute(await keyOf(context.stores.accounts), sessionId, true);
  // Run ids are of version 7 (runs/run-id.ts): a forged session id is refused before any read.
  if (!isRunIdForm(runId)) return {};
  const run = await context.stores.runs.getRunAnyTeam(runId);
  // A run that started and ended has its transcript to show; any other id goes nowhere.
  if (!run || run.started_at === null || !isTerminalState(run.state)) return {};
  return { conversation_id: run.run_id };
}

export async function checkConversationRedirect(
  context: RouteContext,
  request: EndpointRequest<'checkConversationRedirect'>
): Promise<ConversationRedirect> {
  const conversationId = request.params.conversation_id;
  checkForm('conversation_id', conversationId);
  // Anonymous: {} for every id, whatever runs exist. A credential sent is checked as every keyed
  // endpoint checks it (an API key, a workload's OIDC token, a run token); a wrong one is a 401.
  const header = request.headers.authorization;
  if (header === undefined) return {};
  // The read cache's principals are kept while the store is unchanged: look at its stamp first, as
  // the key tree's hook does, so that a key revoked a moment ago is refused at once here too.
  await new Promise<void>((resolve, reject) => context.reads.afterRefresh(resolve, reject));
  await admit(context, request, header);
  const { team, orchestrator } = request.principal;
  // An orchestrate run's token sees only the runs below its own, here as everywhere.
  if (orchestrator && !(await context.stores.runs.isDescendant(team, conversationId, orchestrator.runId)))
    return {};
  const run = await context.stores.runs.getRun(team, conversationId);
  if (!run || run.started_at === null || isTerminalState(run.state)) return {};
  return { session_id: permute(await keyOf(context.stores.accounts), run.run_id, false) };
}
