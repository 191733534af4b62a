// A harness run's HOME holds its MCP configuration (tokens in headers and env) and the CLI's files.
// The run removes it when it ends; an executor killed during the run leaves it behind. The node's
// workspace sweep removes such a HOME once it is past the workspace retention and
// workspaces.continue_for (a follow-up resumes the CLI's session from it until then).
import { afterAll, beforeAll, it } from '@jest/globals';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { eventually } from '../support/eventually.js';
import { type TestExecutor, startTestExecutor, tempDir } from '../support/executor.js';

let ex: TestExecutor;

beforeAll(async () => {
  ex = await startTestExecutor({
    workspaces: { retention: '1s', continue_for: '0s' },
    environments: [{ id: 'sim', source: tempDir(), agent: { kind: 'simulated' } }]
  });
});
afterAll(async () => {
  await ex?.stop(1000);
});

it('removes a HOME a killed executor left behind, secrets and all', async () => {
  // As a run whose executor was killed leaves it: its MCP configuration with a token in it.
  const home = join(ex.dataDir, 'homes', '00000000-0000-4000-8000-00000000dead');
  mkdirSync(join(home, '.claude'), { recursive: true });
  writeFileSync(
    join(home, '.claude', 'agent-run-mcp.json'),
    JSON.stringify({
      mcpServers: {
        docs: { type: 'http', url: 'https://mcp.example', headers: { token: 'secret-token-1234' } }
      }
    })
  );
  await eventually(() => !existsSync(home), { what: `${home} removed`, timeoutMs: 30_000 });
}, 120_000);
