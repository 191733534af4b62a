// Whether this step starts an agent at all: the inputs are valid, the secrets are there (a fork or
// Dependabot gets none), and the actor passes the trust gate. A skip is a notice (or a failure
// with on-untrusted: fail), never an error of the action.

import * as core from '@actions/core';
import { type EventContext } from './context.js';
import { type GitHubApi, NoTokenError, createGitHubApi } from './github.js';
import { type Settings, readKeyPresence, readSettings } from './inputs.js';
import * as log from './log.js';
import { setOutput } from './step-outputs.js';
import * as state from './state.js';
import { holdsApproval } from './thread.js';
import { checkTrust } from './trust.js';

export interface Admitted {
  settings: Settings;
  /** The GitHub API, created on first use (the trust gate and the comment may not need it). */
  github: () => Promise<GitHubApi>;
}

/** The settings and GitHub access when the agent may start; undefined when the step is over. */
export async function admit(event: EventContext): Promise<Admitted | undefined> {
  const presence = readKeyPresence();
  if (!presence.hasKey && (event.pr?.fromFork || event.actor === 'dependabot[bot]')) {
    const who = event.pr?.fromFork
      ? `pull request #${event.pr.number} comes from a fork`
      : 'Dependabot triggered it';
    skip(
      presence.onUntrusted,
      presence.auth === 'oidc'
        ? `Not starting the agent: ${who}, and GitHub gives such workflows no OIDC token.`
        : `Not starting the agent: ${who}, and GitHub gives such workflows no secrets, so api-key is empty.`
    );
    return undefined;
  }
  let settings: Settings;
  try {
    settings = readSettings(undefined, process.env, undefined, event);
  } catch (error) {
    core.setFailed((error as Error).message);
    return undefined;
  }
  const github = lazyGitHub(settings.githubToken, event, settings.githubTimeoutMs);
  const verdict = await checkTrust(settings.trust, event, github);
  if (!verdict.run) {
    const approving =
      settings.thread.mode === 'plan' &&
      holdsApproval(event.comment?.body ?? '', settings.thread.approvePhrase);
    skip(
      settings.onUntrusted,
      approving && !verdict.why.includes('trigger phrase')
        ? `Approval refused, nothing was sent to the agent: ${verdict.why}.`
        : `Not starting the agent: ${verdict.why}.`
    );
    return undefined;
  }
  if (verdict.why) log.info(`Trust gate passed: ${verdict.why}.`);
  for (const note of settings.promptNotes) core.notice(`Prompt: ${note}.`);
  return { settings, github };
}

function skip(onUntrusted: Settings['onUntrusted'], message: string): void {
  setOutput('conclusion', 'skipped');
  state.markSettled();
  if (onUntrusted === 'fail') core.setFailed(message);
  else core.notice(message);
}

function lazyGitHub(token: string, event: EventContext, timeoutMs: number): () => Promise<GitHubApi> {
  let api: Promise<GitHubApi> | undefined;
  return () => {
    if (!token) return Promise.reject(new NoTokenError());
    api ??= createGitHubApi(token, event.repo, timeoutMs);
    return api;
  };
}
