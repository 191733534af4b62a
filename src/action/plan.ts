// Plan → approve: the plan a run in plan mode made (its PLAN artifact, whose markdown the service
// serves at GET /agent/artifacts/{uid}), shown in the progress comment with one line saying how to
// approve it. The plan is the agent's text: it is shown, never interpreted (no mention, no image).

import type { AgentRunClient, Run } from '../client/index.js';
import { escapeHtml, inert } from './markup.js';

export interface Plan {
  title: string;
  markdown: string;
}

/** The follow-up an approval sends: it carries the plan out, in normal mode. */
export const APPROVAL_MESSAGE = 'approved: carry out the plan';

/** Longest plan shown in the comment; GitHub keeps at most 65,536 characters of a comment. */
const MAX_PLAN_CHARS = 20_000;

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
  try {
    const details = await client.getArtifact(uid, { signal });
    // The service's shape is read tolerantly: the markdown in `data.content`, `content` or `markdown`.
    const inner = (details.data ?? {}) as Record<string, unknown>;
    const text = [inner.content, inner.markdown, details.content, details.markdown].find(
      value => typeof value === 'string'
    );
    return { title, markdown: typeof text === 'string' ? text : '' };
  } catch {
    return { title, markdown: '' };
  }
}

/** The plan in the comment: short ones in full, long ones folded inside <details>; then how to approve. */
export function planMarkup(plan: Plan, approvePhrase: string): string {
  const text =
    plan.markdown.length > MAX_PLAN_CHARS ? `${plan.markdown.slice(0, MAX_PLAN_CHARS)}…` : plan.markdown;
  // `@` too: GitHub links a mention even inside <pre>.
  const escaped = escapeHtml(text).replace(/@/g, '&#64;');
  const body = text.trim() === '' ? '(the plan could not be read)' : `<pre>${escaped}</pre>`;
  const long = text.length > 1500 || text.split('\n').length > 25;
  const heading = `📋 **Plan**: ${inert(plan.title.slice(0, 200))}`;
  const shown = long
    ? `<details><summary>${heading} (${plan.markdown.length} characters)</summary>\n\n${body}\n</details>`
    : `${heading}\n\n${body}`;
  return `${shown}\n\nTo carry it out, reply with a comment containing <code>${inert(approvePhrase)}</code> (someone with permission to start the agent).`;
}
