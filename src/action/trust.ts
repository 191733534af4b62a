// The trust gate: on events anyone can trigger (comments, issues, pull_request_target), only
// actors with enough permission (or named in allowed-actors) start an agent. It fails closed: if
// the permission cannot be checked, the run does not start.

import type { EventContext } from './context.js';
import type { GitHubApi } from './github.js';

export const GATED_EVENTS = ['issue_comment', 'pull_request_review_comment', 'pull_request_target', 'issues'];
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
      why: `the comment does not contain the trigger phrase ${JSON.stringify(settings.triggerPhrase)}`
    };
  }
  if (!GATED_EVENTS.includes(context.event)) return { run: true };
  const actor = context.actor;
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
