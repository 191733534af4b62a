// A plan-mode turn's product: its final answer kept as a PLAN artifact. The run record lists it as
// `{artifact_type: "PLAN", data: {document_uid, artifact_uid, title}}`, and GET /agent/artifacts/{uid}
// answers its markdown as `data.content` (the service's shape), besides the usual download link.

import { randomUUID } from 'node:crypto';
import type { StoredRun, Stores } from '../store/types.js';

/** The plan's title: its first heading, else the run's title, else "Plan"; at most 200 characters. */
export function planTitle(markdown: string, runTitle: string | null): string {
  return (firstHeading(markdown) ?? runTitle ?? 'Plan').slice(0, 200);
}

/**
 * The text of the answer's first heading line (`# Title`, `## Title ##`), read line by line with
 * no regular expression over a line: the answer is the agent's, and a pattern with neighbouring
 * quantifiers (`(.+?)\s*#*\s*$`) backtracks in cubic time over a long run of spaces, so 50,000
 * spaces in a plan held the executor's event loop (every run, every request) for hours.
 */
function firstHeading(markdown: string): string | undefined {
  for (let start = 0; start < markdown.length;) {
    const newline = markdown.indexOf('\n', start);
    const end = newline < 0 ? markdown.length : newline;
    const line = markdown.slice(start, end);
    start = end + 1;
    let level = 0;
    while (level < line.length && line[level] === '#') level++;
    if (level < 1 || level > 6 || (line[level] !== ' ' && line[level] !== '\t')) continue;
    const text = line.slice(level).trim();
    // A closing run of `#` (after a space) is not part of the title: `## Title ##`.
    let cut = text.length;
    while (cut > 0 && text[cut - 1] === '#') cut--;
    const title = cut === 0 || /\s/.test(text[cut - 1]!) ? text.slice(0, cut).trimEnd() : text;
    if (title !== '') return title;
  }
  return undefined;
}

/** Keeps the run's last answer as its PLAN artifact; nothing when the turn gave no answer. */
export async function keepPlan(
  { transcript, artifacts }: Pick<Stores, 'transcript' | 'artifacts'>,
  run: StoredRun
): Promise<void> {
  const events = await transcript.listEvents(run.run_id, { fromEnd: true, limit: 200 });
  const answer = events.findLast(event => event.kind === 'result')?.text;
  if (typeof answer !== 'string' || answer.trim() === '') return;
  const data = Buffer.from(answer, 'utf8');
  await artifacts.addArtifact(
    {
      artifact_uid: randomUUID(),
      run_id: run.run_id,
      team: run.team,
      artifact_type: 'PLAN',
      filepath: 'plan.md',
      filename: 'plan.md',
      mime_type: 'text/markdown; charset=utf-8',
      size: data.length,
      description: planTitle(answer, run.title),
      created_at: new Date().toISOString()
    },
    data
  );
}
