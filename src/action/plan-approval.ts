// Plan → approve: the plan a run in plan mode made (its PLAN artifact, whose markdown the service
// serves at GET /agent/artifacts/{uid}), shown in the progress comment with one line saying how to
// approve it. The plan is the agent's text: it is shown, never interpreted (no mention, no image).

import type { AgentRunClient, Run } from '../client/index.js';
import { textBlock } from '../api/github-text.js';
import { inert, isWebLink, link } from './markup.js';

export interface Plan {
  /** The PLAN artifact's uid: the comment records which plan it shows, and only that one is approved. */
  uid: string;
  title: string;
  markdown: string;
  /** Where the whole plan can be read, when the service gives it a web address. */
  url?: string;
}

/** The plan as the comment shows it, and whether it is shown so that approving it is informed. */
export interface PlanMarkup {
  markup: string;
  /** In full, or cut with a link to the whole of it: the comment records it as approvable. */
  shown: boolean;
}

/** The follow-up an approval sends: it carries the plan out, in normal mode. */
export const APPROVAL_MESSAGE = 'approved: carry out the plan';

/** The run's latest PLAN artifact with its markdown, or undefined when there is none or it cannot be read. */
export async function readPlan(
  client: AgentRunClient,
  run: Run | undefined,
  signal?: AbortSignal
): Promise<Plan | undefined> {
  const artifacts = Array.isArray(run?.artifacts) ? (run.artifacts as Record<string, unknown>[]) : [];
  const plan = artifacts.filter(artifact => artifact?.artifact_type === 'PLAN').at(-1);
  const data = (plan?.data ?? {}) as Record<string, unknown>;
  const uid = data.document_uid ?? data.artifact_uid;
  if (typeof uid !== 'string') return undefined;
  const title = typeof data.title === 'string' ? data.title : 'Plan';
  const url =
    typeof data.url === 'string' && data.url.length <= 2048 && isWebLink(data.url) ? data.url : undefined;
  const base = { uid, title, ...(url ? { url } : {}) };
  try {
    const details = await client.artifacts.get(uid, { signal });
    // The service's shape is read tolerantly: the markdown in `data.content`, `content` or `markdown`.
    const inner = (details.data ?? {}) as Record<string, unknown>;
    const text = [inner.content, inner.markdown, details.content, details.markdown].find(
      value => typeof value === 'string'
    );
    return { ...base, markdown: typeof text === 'string' ? text : '' };
  } catch {
    return { ...base, markdown: '' };
  }
}

/**
 * The plan in the comment, in at most `max` characters of markup (GitHub keeps at most 65,536 of
 * a whole comment, and escaping can make a plan five times longer): short ones in full, long ones
 * folded inside <details>, one too long cut with a link to the whole (the plan's own address or the
 * session); then how to approve it. A plan that could not be read, or was cut with nowhere to read
 * the rest, is not shown, and the comment says it cannot be approved.
 */
export function planMarkup(plan: Plan, approvePhrase: string, max = 60_000, moreAt?: string): PlanMarkup {
  const heading = `📋 **Plan**: ${inert(plan.title.slice(0, 200))}`;
  const whole = plan.url ?? moreAt;
  const approve = `To carry it out, reply with a comment containing <code>${inert(approvePhrase)}</code> (someone with permission to start the agent).`;
  if (plan.markdown.trim() === '')
    return {
      markup: `${heading}\n\n(the plan could not be read, so it cannot be approved here)`,
      shown: false
    };
  const long = plan.markdown.length > 1500 || plan.markdown.split('\n').length > 25;
  const frame = long ? 200 : 10;
  const more = whole ? `The plan is cut here: ${link(whole, 'read the whole plan')}.` : '';
  const room = max - heading.length - approve.length - more.length - frame - 100;
  const { markup: body, cut } = textBlock(plan.markdown, room);
  const shown = !cut || whole !== undefined;
  const tail = !shown
    ? 'The plan is too long to show here in full, and the service gives no address for the rest: it cannot be approved from this comment.'
    : `${cut ? `${more}\n\n` : ''}${approve}`;
  const folded = long
    ? `<details><summary>${heading} (${plan.markdown.length} characters)</summary>\n\n${body}\n</details>`
    : `${heading}\n\n${body}`;
  return { markup: `${folded}\n\n${tail}`, shown };
}
