// The executor's HTTP API on a real port with a real SQLite file in a temp dir (or a PostgreSQL
// database: jest's postgres project): paging through a long list while runs are created.
// One worker: the 250 runs are there to be listed, and they still run while the test pages, one at
// a time, so that executing them does not take the machine from the creates and reads the test makes.
import { describe, expect, it } from '@jest/globals';
import { apiSuite, ex, key, keyB, expectNoRawKeys } from '../support/api-suite.js';

const api = apiSuite({ workers: 1 });
const { get, create } = api;

describe('paging', () => {
  it('pages through 250 runs newest first with concurrent inserts: none missing, none repeated', async () => {
    const { raw: pager } = await ex.key('team-paging');
    const before: string[] = [];
    for (let i = 0; i < 250; i++) before.push(await create(`@sim say page ${i}`, {}, pager));
    const seen: string[] = [];
    let cursor = '';
    let inserts = 0;
    for (;;) {
      const page = (await (
        await get(`/api/v1/agent/runs?limit=17${cursor ? `&cursor=${cursor}` : ''}`, pager)
      ).json()) as {
        runs: { run_id: string }[];
        page_info: { has_next_page: boolean; next_cursor: string | null };
      };
      seen.push(...page.runs.map(r => r.run_id));
      await Promise.all([create('@sim say during', {}, pager), create('@sim say during', {}, pager)]);
      inserts += 2;
      if (!page.page_info.has_next_page) break;
      cursor = page.page_info.next_cursor!;
    }
    expect(inserts).toBeGreaterThan(20);
    expect(seen).toEqual([...before].reverse());
  });
});

describe('storage', () => {
  it('keeps no raw key in the database files', () => {
    expectNoRawKeys(ex, [key, keyB]);
  });
});
