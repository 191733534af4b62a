// The trust gate: on events anyone can trigger (comments, issues, pull_request_target), only
// actors with enough permission (or named in allowed-actors) start an agent. It fails closed: if
// the permission cannot be checked, the run does not start.

import { showValue } from '../api/index.js';
import type { EventContext } from './context.js';
import type { GitHubApi } from './github.js';

/**
 * Events only people with write access can start (or whose payload only they shape) run without a
 * check; every other event, comments, issues, discussions, reviews and pull_request_target among
 * them, goes through the gate. A pull_request from a fork is skipped earlier: it has no secrets.
 */
export const UNGATED_EVENTS = [
  'push',
  'schedule',
  'workflow_dispatch',
  'repository_dispatch',
  'workflow_call',
  'pull_request',
  'merge_group'
];
export const PERMISSIONS = ['none', 'read', 'triage', 'write', 'maintain', 'admin'] as const;
export type Permission = (typeof PERMISSIONS)[number];

export interface TrustSettings {
  allowedActors: string[];
  minPermission: Permission;
  triggerPhrase?: string;
}

export type Verdict = { run: true; why?: string } | { run: false; why: string };

export async function checkTrust(
  settings: TrustSettings,
  context: EventContext,
  github: () => Promise<GitHubApi>
): Promise<Verdict> {
  const isComment = context.event === 'issue_comment' || context.event === 'pull_request_review_comment';
  if (settings.triggerPhrase && isComment && !context.comment?.body.includes(settings.triggerPhrase)) {
    return {
      run: false,
      why: `the comment does not contain the trigger phrase ${showValue(settings.triggerPhrase)}`
    };
  }
  // No event at all: not started by GitHub (a local run, a test), so there is no one to check.
  if (context.event === '') return { run: true };
  if (UNGATED_EVENTS.includes(context.event) && !context.pr?.fromFork) return { run: true };
  if (context.comment && context.action === 'deleted') return { run: false, why: 'the comment was deleted' };
  // Whoever wrote the text the agent will read must be trusted too, not only whoever sent the event
  // (an edit by a maintainer of someone else's comment must not launder it).
  const people = [context.actor];
  if (context.comment?.author && context.comment.author !== context.actor)
    people.push(context.comment.author);
  const reasons: string[] = [];
  for (const person of people) {
    const verdict = await checkActor(settings, context, person, github);
    if (!verdict.run) return verdict;
    if (verdict.why) reasons.push(verdict.why);
  }
  return { run: true, why: reasons.join('; ') };
}

async function checkActor(
  settings: TrustSettings,
  context: EventContext,
  actor: string,
  github: () => Promise<GitHubApi>
): Promise<Verdict> {
  if (settings.allowedActors.includes(actor))
    return { run: true, why: `${actor} is listed in allowed-actors` };
  if (actor.endsWith('[bot]')) {
    return {
      run: false,
      why: `${actor} is a bot; bots run the agent only when allowed-actors names them exactly`
    };
  }
  let permission: string;
  try {
    permission = await (await github()).permission(actor);
  } catch (error) {
    const status = (error as { status?: number }).status;
    return {
      run: false,
      why: `could not check the permission of ${actor} on ${context.repo} (${status ? `${status} ` : ''}${(error as Error).message}); not starting the agent`
    };
  }
  const rank = PERMISSIONS.indexOf(permission as Permission);
  if (rank >= PERMISSIONS.indexOf(settings.minPermission)) {
    return { run: true, why: `${actor} has ${permission} permission` };
  }
  return {
    run: false,
    why: `${actor} has ${permission || 'no'} permission on ${context.repo}; min-permission is ${settings.minPermission}`
  };
}
