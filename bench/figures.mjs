// Draws the figures of BENCHMARKS.md from the benchmark results (bench/results/*.json) as SVG:
//   bench/detection-latency.svg  detection latency against run length, four waiting strategies
//   bench/throughput.svg         executor throughput against connections, next to the ceilings
//
//   node bench/figures.mjs

import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './lib.mjs';

const read = name => JSON.parse(readFileSync(join(ROOT, 'bench/results', `${name}.json`), 'utf8'));
const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#8c564b'];
const W = 960;
const H = 420;
// The legend sits in the right margin, clear of the data.
const M = { left: 70, right: 250, top: 40, bottom: 60 };
const esc = text => String(text).replace(/[&<>"]/g, ch => `&#${ch.charCodeAt(0)};`);

function frame(title, xLabel, yLabel, xTicks, yTicks) {
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${(W - M.right + M.left) / 2}" y="22" text-anchor="middle" font-size="15" font-weight="bold">${esc(title)}</text>`,
    `<text x="${(W - M.right + M.left) / 2}" y="${H - 12}" text-anchor="middle">${esc(xLabel)}</text>`,
    `<text transform="translate(16 ${H / 2}) rotate(-90)" text-anchor="middle">${esc(yLabel)}</text>`,
    `<line x1="${M.left}" y1="${H - M.bottom}" x2="${W - M.right}" y2="${H - M.bottom}" stroke="black"/>`,
    `<line x1="${M.left}" y1="${M.top}" x2="${M.left}" y2="${H - M.bottom}" stroke="black"/>`
  ];
  for (const [x, label] of xTicks)
    parts.push(
      `<line x1="${x}" y1="${H - M.bottom}" x2="${x}" y2="${H - M.bottom + 5}" stroke="black"/><text x="${x}" y="${H - M.bottom + 18}" text-anchor="middle">${esc(label)}</text>`
    );
  for (const [y, label] of yTicks)
    parts.push(
      `<line x1="${M.left - 5}" y1="${y}" x2="${W - M.right}" y2="${y}" stroke="#ddd"/><text x="${M.left - 8}" y="${y + 4}" text-anchor="end">${esc(label)}</text>`
    );
  return parts;
}

function legend(parts, names) {
  names.forEach((name, i) => {
    const y = M.top + 8 + i * 36;
    const [first, ...rest] = name.split(': ');
    const lines = rest.length > 0 ? [`${first}:`, rest.join(': ')] : [name];
    parts.push(`<rect x="${W - M.right + 14}" y="${y - 9}" width="12" height="12" fill="${COLORS[i]}"/>`);
    lines.forEach((line, j) =>
      parts.push(`<text x="${W - M.right + 32}" y="${y + 1 + j * 14}">${esc(line)}</text>`)
    );
  });
}

// Figure 1: latency (log scale) against run length.
{
  const { rows, command } = read('detection');
  const strategies = [...new Set(rows.map(row => row.strategy))];
  const maxX = Math.max(...rows.map(row => row.length)) * 1.05;
  const x = seconds => M.left + (seconds / maxX) * (W - M.left - M.right);
  const [lo, hi] = [1, 100_000];
  const y = ms =>
    H -
    M.bottom -
    ((Math.log10(Math.max(lo, ms)) - Math.log10(lo)) / (Math.log10(hi) - Math.log10(lo))) *
      (H - M.top - M.bottom);
  const xTicks = [0, 100, 200, 300, 400, 500, 600].filter(s => s <= maxX).map(s => [x(s), `${s}`]);
  const yTicks = [1, 10, 100, 1000, 10_000, 100_000].map(ms => [
    y(ms),
    ms >= 1000 ? `${ms / 1000} s` : `${ms} ms`
  ]);
  const parts = frame(
    'Time from a run\u2019s end to the waiter knowing it',
    'run length (s)',
    'detection latency (log scale)',
    xTicks,
    yTicks
  );
  strategies.forEach((strategy, i) => {
    for (const row of rows.filter(r => r.strategy === strategy)) {
      parts.push(
        `<circle cx="${x(row.length).toFixed(1)}" cy="${y(row.latencyMs).toFixed(1)}" r="5" fill="${COLORS[i]}" fill-opacity="0.8"><title>${esc(`${strategy}: ${row.length} s run, ${row.latencyMs} ms, ${row.requests} requests`)}</title></circle>`
      );
    }
  });
  legend(parts, strategies);
  parts.push(
    `<text x="${W - 10}" y="${H - 12}" text-anchor="end" font-size="10" fill="#555">${esc(command)}</text>`,
    '</svg>'
  );
  writeFileSync(join(ROOT, 'bench/detection-latency.svg'), parts.join('\n') + '\n');
}

// Figure 2: requests per second against connections.
{
  const { rows, command } = read('throughput');
  const connections = [...new Set(rows.map(row => row.connections))].sort((a, b) => a - b);
  const series = ['bare', 'fastify', 'read', 'list'];
  const maxY = Math.max(...rows.map(row => row.requestsPerSecond)) * 1.1;
  const x = c =>
    M.left +
    (connections.indexOf(c) / Math.max(1, connections.length - 1)) * (W - M.left - M.right - 40) +
    20;
  const y = rps => H - M.bottom - (rps / maxY) * (H - M.top - M.bottom);
  const step = Math.pow(10, Math.floor(Math.log10(maxY))) / 2;
  const yTicks = [];
  for (let v = 0; v <= maxY; v += step) yTicks.push([y(v), `${Math.round(v / 1000)}k`]);
  const parts = frame(
    'Executor throughput next to the ceilings (autocannon)',
    'connections',
    'requests per second',
    connections.map(c => [x(c), String(c)]),
    yTicks
  );
  const names = {
    bare: 'ceiling: bare node:http, fixed body',
    fastify: 'Fastify, fixed body, no logic',
    read: 'executor: read a run',
    list: 'executor: list 20 runs'
  };
  series.forEach((name, i) => {
    const points = connections
      .map(c => rows.find(row => row.target === name && row.connections === c))
      .filter(Boolean);
    parts.push(
      `<polyline fill="none" stroke="${COLORS[i]}" stroke-width="2" points="${points.map(p => `${x(p.connections).toFixed(1)},${y(p.requestsPerSecond).toFixed(1)}`).join(' ')}"/>`
    );
    for (const p of points)
      parts.push(
        `<circle cx="${x(p.connections).toFixed(1)}" cy="${y(p.requestsPerSecond).toFixed(1)}" r="4" fill="${COLORS[i]}"><title>${esc(`${name} at ${p.connections}: ${p.requestsPerSecond}/s, p99 ${p.p99Ms} ms`)}</title></circle>`
      );
  });
  const create = rows.find(row => row.target === 'create');
  if (create) {
    parts.push(
      `<circle cx="${x(create.connections).toFixed(1)}" cy="${y(create.requestsPerSecond).toFixed(1)}" r="5" fill="${COLORS[4]}"/>`
    );
  }
  legend(parts, [...series.map(s => names[s]), 'executor: create (durable)']);
  parts.push(
    `<text x="${W - 10}" y="${H - 12}" text-anchor="end" font-size="10" fill="#555">${esc(command)}</text>`,
    '</svg>'
  );
  writeFileSync(join(ROOT, 'bench/throughput.svg'), parts.join('\n') + '\n');
}
console.log('wrote bench/detection-latency.svg and bench/throughput.svg');
