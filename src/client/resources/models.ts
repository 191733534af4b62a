// `client.models`: the models the configured agents accept, per environment, with the defaults.

import type { ListModelsResponse } from '../../api/schedules.js';
import type { ClientCore } from '../core.js';
import type { CallOptions } from '../poll.js';

export class Models {
  constructor(private readonly core: ClientCore) {}

  list(options: CallOptions = {}): Promise<ListModelsResponse> {
    return this.core.object<ListModelsResponse>('listModels', options);
  }
}
