// The session page behind a run's session_link: the shared run renderer (run-view.ts) in a
// self-contained page for whoever holds the link, without a sign-in. It carries the dashboard's own
// stylesheet inline (its CSP allows inline style and nothing else: no script, no image, no request
// elsewhere) and works without JavaScript. Artifacts download through the same token
// (routes/sessions.ts), from paths relative to the page so a public URL with a path prefix works too.

import type { StoredArtifact, StoredRun, TranscriptEvent } from '../store/types.js';
import { CSS } from './dashboard/assets.js';
import { esc } from './dashboard/html.js';
import { runViewHtml } from './run-view.js';

/** Where the session page of `run` downloads an artifact: relative to /sessions/{id}?token=…. */
export function sessionArtifactHref(run: StoredRun, artifact: StoredArtifact, token: string): string {
  const id = encodeURIComponent(run.run_id);
  return `${id}/artifacts/${encodeURIComponent(artifact.artifact_uid)}?token=${encodeURIComponent(token)}`;
}

export function renderSession(
  run: StoredRun,
  events: TranscriptEvent[],
  artifacts: StoredArtifact[],
  token: string
): string {
  const title = run.title || `Run ${run.run_id}`;
  const view = runViewHtml(run, events, artifacts, {
    artifactHref: artifact => sessionArtifactHref(run, artifact, token)
  });
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>${esc(title)}</title>
<style>${CSS}</style>
</head><body>
<header><span class="brand">agent-run</span> <span class="muted">session of run <code>${esc(run.run_id)}</code></span></header>
<main id="main">
<h1>${esc(run.title || 'Agent run')}</h1>
${view}
</main>
</body></html>
`;
}
