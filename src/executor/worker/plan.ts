// A plan-mode turn's product: its final answer kept as a PLAN artifact. The run record lists it as
// `{artifact_type: "PLAN", data: {document_uid, artifact_uid, title}}`, and GET /agent/artifacts/{uid}
// answers its markdown as `data.content` (the service's shape), besides the usual download link.

import { randomUUID } from 'node:crypto';
import type { RunStore, StoredRun } from '../store/types.js';

/** The plan's title: its first heading, else the run's title, else "Plan"; at most 200 characters. */
export function planTitle(markdown: string, runTitle: string | null): string {
  const heading = /^#{1,6}\s+(.+?)\s*#*\s*$/m.exec(markdown)?.[1];
  return (heading ?? runTitle ?? 'Plan').slice(0, 200);
}

/** Keeps the run's last answer as its PLAN artifact; nothing when the turn gave no answer. */
export async function keepPlan(store: RunStore, run: StoredRun): Promise<void> {
  const events = await store.listEvents(run.run_id, { fromEnd: true, limit: 200 });
  const answer = events.findLast(event => event.kind === 'result')?.text;
  if (typeof answer !== 'string' || answer.trim() === '') return;
  const data = Buffer.from(answer, 'utf8');
  await store.addArtifact(
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
