// The trust gate: on events anyone can trigger (comments, issues, pull_request_target), only
// actors with enough permission (or named in allowed-actors) start an agent, and on every event the
// authors of the text the prompt quotes must pass too. It fails closed: if a permission cannot be
// checked, the run does not start.

import { showValue } from '../api/index.js';
import type { EventContext } from './context.js';
import { type GitHubApi, NoTokenError } from './github.js';

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

/** Events whose text is a comment (or a review) that someone wrote: `trigger-phrase` applies. */
export const COMMENT_EVENTS = [
  'issue_comment',
  'pull_request_review_comment',
  'pull_request_review',
  'discussion_comment',
  'commit_comment'
];

/**
 * Whether a comment says `phrase` itself: outside quoted lines (`> …`) and code (fenced blocks and
 * inline spans). One rule for the trigger phrase and the approve phrase: a reply that quotes the
 * progress comment's "reply with /approve" line, or an earlier "@agent …" request, or pastes a log
 * that mentions them, asks for nothing.
 */
export function holdsPhrase(body: string, phrase: string): boolean {
  if (phrase === '') return false;
  let fence: string | undefined;
  for (const line of body.split(/\r?\n/)) {
    const marks = /^ {0,3}(`{3,}|~{3,})/.exec(line)?.[1];
    if (fence !== undefined) {
      // A fence closes with the same character, at least as many, and nothing else on the line.
      if (marks && marks[0] === fence[0] && marks.length >= fence.length && line.trim() === marks)
        fence = undefined;
      continue;
    }
    if (marks) {
      fence = marks;
      continue;
    }
    if (/^\s*>/.test(line)) continue;
    if (withoutCodeSpans(line).includes(phrase)) return true;
  }
  return false;
}

/**
 * A line with its inline code spans blanked: a span opens with a run of backticks and closes at the
 * next run of exactly as many (CommonMark). Linear: each run's next run of the same length is
 * found from a table built backwards, never by searching again.
 */
function withoutCodeSpans(line: string): string {
  const runs: { start: number; length: number }[] = [];
  for (const match of line.matchAll(/`+/g)) runs.push({ start: match.index, length: match[0].length });
  const next = new Array<number>(runs.length);
  const seen = new Map<number, number>();
  for (let i = runs.length - 1; i >= 0; i--) {
    next[i] = seen.get(runs[i]!.length) ?? -1;
    seen.set(runs[i]!.length, i);
  }
  let out = '';
  let at = 0;
  for (let i = 0; i < runs.length; i++) {
    const close = next[i]!;
    if (runs[i]!.start < at || close === -1) continue;
    out += `${line.slice(at, runs[i]!.start)} `;
    at = runs[close]!.start + runs[close]!.length;
    i = close;
  }
  return out + line.slice(at);
}

export interface TrustSettings {
  allowedActors: string[];
  minPermission: Permission;
  triggerPhrase?: string;
  /**
   * Whose text the prompt reads through placeholders (`{{issue.*}}`, `{{pr.*}}`): that text's
   * author must pass the gate too, on every event.
   */
  readsText?: ('issue' | 'pr')[];
  /** Phrases that count as the trigger phrase too (`approve-phrase`). */
  alsoTriggers?: string[];
  /** `label-trigger`: on issue and pull request events only this label being added starts the agent. */
  labelTrigger?: string;
}

/** The events a `labeled` action comes with. */
export const LABEL_EVENTS = ['issues', 'pull_request', 'pull_request_target'];

export type Verdict = { run: true; why?: string } | { run: false; why: string };

export async function checkTrust(
  settings: TrustSettings,
  context: EventContext,
  github: () => Promise<GitHubApi>
): Promise<Verdict> {
  const isComment = COMMENT_EVENTS.includes(context.event);
  const body = context.comment?.body ?? '';
  if (
    settings.triggerPhrase &&
    isComment &&
    ![settings.triggerPhrase, ...(settings.alsoTriggers ?? [])].some(phrase => holdsPhrase(body, phrase))
  ) {
    return {
      run: false,
      why: `the comment does not contain the trigger phrase ${showValue(settings.triggerPhrase)}`
    };
  }
  // No event at all: not started by GitHub (a local run, a test), so there is no one to check.
  if (context.event === '') return { run: true };
  if (context.comment && context.action === 'deleted') return { run: false, why: 'the comment was deleted' };
  const labelled = settings.labelTrigger !== undefined && LABEL_EVENTS.includes(context.event);
  if (labelled && (context.action !== 'labeled' || context.label !== settings.labelTrigger)) {
    const what =
      context.action === 'labeled'
        ? `the label ${showValue(context.label ?? '')} was added`
        : `the event's action is ${showValue(context.action ?? '')}`;
    return {
      run: false,
      why: `${what}; label-trigger starts the agent only when the label ${showValue(settings.labelTrigger!)} is added`
    };
  }
  const people: string[] = [];
  // Whoever added the label decides, on every event kind (a pull_request event is otherwise ungated).
  if (labelled) people.push(context.sender ?? context.actor);
  if (!UNGATED_EVENTS.includes(context.event) || context.pr?.fromFork) {
    // Whoever wrote the text the agent will read must be trusted too, not only whoever sent the
    // event (an edit by a maintainer of someone else's comment must not launder it).
    people.push(context.actor);
    if (context.comment?.author) people.push(context.comment.author);
  }
  // The same for an issue's or pull request's own text the prompt quotes, on every event: a
  // maintainer's edit, label or review of a stranger's issue starts nothing on the stranger's words.
  // Except one act: with label-trigger, a trusted person adding the label decides that the agent
  // acts on this issue or pull request, and so vouches for its text as the event payload carries
  // it (the prompt still fences it as a user's text). Edits, comments and reviews vouch for nothing.
  const reads = settings.readsText ?? [];
  const vouched: string[] = [];
  for (const [kind, item] of [
    ['issue', context.issue],
    ['pr', context.pr]
  ] as const) {
    if (!reads.includes(kind) || !item) continue;
    if (labelled) {
      vouched.push(`#${item.number}`);
      continue;
    }
    if (!item.author) {
      return {
        run: false,
        why: `the prompt reads {{${kind}.*}}, and the event does not say who wrote that text`
      };
    }
    people.push(item.author);
  }
  const reasons: string[] = [];
  for (const person of new Set(people)) {
    const verdict = await checkActor(settings, context, person, github);
    if (!verdict.run) return verdict;
    if (verdict.why) reasons.push(verdict.why);
  }
  if (vouched.length > 0)
    reasons.push(
      `adding the label ${showValue(settings.labelTrigger!)}, ${context.sender ?? context.actor} vouched for the text of ${vouched.join(' and ')} as the event carries it`
    );
  return reasons.length > 0 ? { run: true, why: reasons.join('; ') } : { run: true };
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
    const repo = context.repo || 'the repository (GITHUB_REPOSITORY is empty)';
    if (error instanceof NoTokenError)
      return {
        run: false,
        why: `could not check the permission of ${actor} on ${repo}: github-token is empty; set github-token, or name ${actor} in allowed-actors`
      };
    return {
      run: false,
      why: `could not check the permission of ${actor} on ${repo} (${status ? `${status} ` : ''}${(error as Error).message})`
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
