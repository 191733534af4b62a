// What a key may learn of the executor's configuration before it creates a run: the environments
// (id, name, where runs start from, setup commands, agent kind, the network a run may reach) and
// the models their agents take. Never a variable's value or name, a secret, or credentials in a
// source: a source that is a URL loses its user and password here.

import type { EnvironmentRecord, ListModelsResponse } from '../../../api/schedules.js';
import type { EnvironmentConfig } from '../../config/config.js';
import type { RouteContext } from './handler.js';

/** Which provider's models each harness kind runs. */
const PROVIDERS: Readonly<Record<string, string>> = {
  'claude-code': 'anthropic',
  codex: 'openai',
  gemini: 'google'
};

/** The source without credentials: `https://user:token@host/x` → `https://host/x`. */
export function sourceWithoutCredentials(source: string): string {
  return source.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/@]*@/i, '$1');
}

function environmentRecord(env: EnvironmentConfig): EnvironmentRecord {
  const network = env.sandbox.network;
  return {
    id: env.id,
    name: env.name,
    source: sourceWithoutCredentials(env.source),
    setup_commands: [...env.setup],
    agent_kind: env.agent.kind,
    network: network === 'none' ? [] : network === 'host' ? ['*'] : network.map(t => `${t.host}:${t.port}`),
    docker_image: env.image ? sourceWithoutCredentials(env.image.ref) : null
  };
}

/** The model an environment's agent uses when a run names none (a harness's `agent.model`). */
function defaultModelOf(env: EnvironmentConfig): string | null {
  const model = (env.agent as { model?: unknown }).model;
  return typeof model === 'string' && model !== '' ? model : null;
}

export async function listEnvironments(context: RouteContext) {
  return { environments: context.settings.environments.map(environmentRecord) };
}

export async function listModels(context: RouteContext): Promise<ListModelsResponse> {
  const models = new Map<string, { id: string; provider: string; environment_ids: string[] }>();
  const environments = context.settings.environments.map(env => {
    const provider = PROVIDERS[env.agent.kind];
    const model = defaultModelOf(env);
    if (provider && model) {
      const entry = models.get(model) ?? { id: model, provider, environment_ids: [] };
      entry.environment_ids.push(env.id);
      models.set(model, entry);
    }
    return {
      environment_id: env.id,
      agent_kind: env.agent.kind,
      default_model_id: model,
      accepts_model_id: provider !== undefined
    };
  });
  const first = context.settings.environments[0];
  return {
    default_model_id: first ? defaultModelOf(first) : null,
    models: [...models.values()],
    environments
  };
}
