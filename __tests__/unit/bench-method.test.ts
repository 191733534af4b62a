// The benchmarks' shared method (bench/method.mjs) and the rendering of bench:all's results
// (bench/render.mjs): targets take turns round by round, ratios are taken within a round and
// summarised by their median and spread, every result carries the machine's state, and a goal is
// marked met or not met from the figures.
import { describe, expect, it } from '@jest/globals';
// @ts-expect-error: a plain ESM script without type declarations
import * as methodModule from '../../bench/method.mjs';
// @ts-expect-error: a plain ESM script without type declarations
import * as renderModule from '../../bench/render.mjs';

type Row = { round: number; target: string; requestsPerSecond?: number; p99Ms?: number };
type Spread = { median: number | null; min: number | null; max: number | null; n: number };
const method = methodModule as {
  spread: (values: unknown[], digits?: number) => Spread;
  ratio: (rows: Row[], target: string, base: string) => Spread & { rounds: number[] };
  interleave: (
    rounds: number,
    targets: string[],
    measure: (target: string, round: number) => Promise<object>,
    log?: (line: string) => void
  ) => Promise<Row[]>;
  machineState: () => { date: string; commit: string; node: string; nproc: number; uptime: { text: string } };
};
const { render } = renderModule as { render: (all: object) => string };

describe('bench method', () => {
  it('measures targets in turns, one round after another', async () => {
    const order: string[] = [];
    const rows = await method.interleave(
      3,
      ['bare', 'read'],
      async (target, round) => {
        order.push(`${target}${round}`);
        return { requestsPerSecond: 1 };
      },
      () => {}
    );
    expect(order).toEqual(['bare1', 'read1', 'bare2', 'read2', 'bare3', 'read3']);
    expect(rows.map(row => [row.round, row.target])).toEqual([
      [1, 'bare'],
      [1, 'read'],
      [2, 'bare'],
      [2, 'read'],
      [3, 'bare'],
      [3, 'read']
    ]);
  });

  it('takes each ratio within its round, then the median and spread of the rounds', () => {
    // The bare server's rate swings from round to round; the ratio within each round does not.
    const rows: Row[] = [
      { round: 1, target: 'bare', requestsPerSecond: 50_000 },
      { round: 1, target: 'read', requestsPerSecond: 30_000 },
      { round: 2, target: 'bare', requestsPerSecond: 20_000 },
      { round: 2, target: 'read', requestsPerSecond: 10_000 },
      { round: 3, target: 'bare', requestsPerSecond: 40_000 },
      { round: 3, target: 'read', requestsPerSecond: 22_000 }
    ];
    const r = method.ratio(rows, 'read', 'bare');
    expect(r.rounds).toEqual([0.6, 0.5, 0.55]);
    expect([r.median, r.min, r.max, r.n]).toEqual([0.55, 0.5, 0.6, 3]);
  });

  it('takes the median of an even count as the mean of the middle two, and ignores missing values', () => {
    expect(method.spread([4, 1, 3, 2])).toEqual({ median: 2.5, min: 1, max: 4, n: 4 });
    expect(method.spread([null, undefined, Number.NaN])).toEqual({
      median: null,
      min: null,
      max: null,
      n: 0
    });
  });

  it('records the date, commit, Node, cores and uptime with a result', () => {
    const state = method.machineState();
    expect(state.commit).toMatch(/^[0-9a-f]{12}(-dirty)?$/);
    expect(state.node).toBe(process.version);
    expect(state.nproc).toBeGreaterThan(0);
    expect(state.uptime.text).toMatch(/load average/);
    expect(Number.isNaN(Date.parse(state.date))).toBe(false);
  });
});

describe('bench:all rendering', () => {
  const machine = {
    date: '2026-11-24T10:00:00.000Z',
    commit: 'abcdef123456',
    node: 'v24.21.0',
    nproc: 2,
    platform: 'linux x64',
    uptime: { text: ' 10:00:00 up 1 day,  load average: 0.10, 0.20, 0.30', load: [0.1, 0.2, 0.3] }
  };
  const throughput = (readRatio: number, readP99: number) => ({
    name: 'throughput',
    responseBytes: 553,
    machine: { before: machine, after: machine },
    byConnections: {
      50: {
        summary: {
          bare: { requestsPerSecond: { median: 50_000, min: 49_000, max: 51_000, n: 3 } },
          read: {
            requestsPerSecond: { median: 50_000 * readRatio, min: 1, max: 2, n: 3 },
            p99Ms: { median: readP99, min: readP99, max: readP99, n: 3 }
          }
        },
        ratios: [
          {
            of: 'read',
            to: 'bare',
            median: readRatio,
            min: readRatio,
            max: readRatio,
            n: 3,
            rounds: [readRatio]
          }
        ]
      }
    }
  });
  const all = (result: object | null) => ({
    command: 'npm run bench:all',
    quick: false,
    wallSeconds: 480,
    machine: { before: machine, after: machine },
    steps: [
      { name: 'throughput', command: 'node bench/throughput.mjs', exitCode: 0, wallSeconds: 120, result }
    ]
  });
  const goalLine = (markdown: string) => markdown.split('\n').find(line => line.startsWith('| reads:'));

  it('marks the read goal met only when the ratio and the p99 both hold', () => {
    expect(goalLine(render(all(throughput(0.62, 8))))).toMatch(/\*\*met\*\*/);
    expect(goalLine(render(all(throughput(0.55, 8))))).toMatch(/\*\*not met\*\*/);
    expect(goalLine(render(all(throughput(0.62, 14))))).toMatch(/\*\*not met\*\*/);
  });

  it('puts the command, commit and load before and after under every benchmark', () => {
    const markdown = render(all(throughput(0.62, 8)));
    expect(markdown).toContain('`node bench/throughput.mjs`');
    expect(markdown).toContain('commit `abcdef123456`');
    expect(markdown).toContain('before 0.10, 0.20, 0.30, after 0.10, 0.20, 0.30');
  });

  it('warns that figures taken on a busy machine are not results', () => {
    expect(render(all(throughput(0.62, 8)))).not.toContain('Not a quiet machine');
    const busy = { ...machine, uptime: { text: 'load average: 3.10, 2.00, 1.00', load: [3.1, 2, 1] } };
    const markdown = render({ ...all(throughput(0.62, 8)), machine: { before: machine, after: busy } });
    expect(markdown).toContain('**Not a quiet machine**: a 1-minute load average of 3.1 on 2 cores');
  });

  it('says a benchmark that failed was not measured', () => {
    const failed = {
      ...all(null),
      steps: [
        {
          name: 'throughput',
          command: 'node bench/throughput.mjs',
          exitCode: 1,
          wallSeconds: 3,
          result: null
        }
      ]
    };
    expect(render(failed)).toContain('Not measured: `node bench/throughput.mjs` exited with 1.');
  });
});
