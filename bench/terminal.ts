// The terminal client (issue 31), each figure beside a baseline measured in the same run:
//  1. rendering a stored 1,000-turn session (markdown, tool calls) as `agentsvc chat SESSION`
//     does, vs the same text written and wrapped raw;
//  2. 500 answer deltas/s through the live renderer: time per delta and how late a timer (a key
//     press) fires meanwhile, vs the same deltas written raw;
//  3. `agentsvc export` of a 77 MiB session to a file vs curl on the same URL, 3 runs each.
// Usage: npx tsx bench/terminal.ts [render,deltas,export]  (default all). Single-process figures:
// the machine is shared, so compare a figure with its baseline, not with another run.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Api, type Turn } from '../src/cli/terminal/api.js';
import { Progress } from '../src/cli/terminal/progress.js';
import { Renderer } from '../src/cli/terminal/render.js';
import { wrapLine } from '../src/cli/terminal/screen.js';
import { downloadExport, uploadArchive } from '../src/cli/terminal/transfer.js';
import { startEmbeddedPostgres } from '../src/platform/db/embedded.js';
import { archivedTurn } from '../test/helpers/long-session.js';
import { makeArchive } from './lib/archive.js';
import { startUp } from './lib/up.js';

const parts = (process.argv[2] ?? 'render,deltas,export').split(',');
const WIDTH = 100;
const ms = (n: number) => `${n.toFixed(n < 10 ? 2 : 0)} ms`;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** A terminal-like sink: what the Renderer writes, as lines wrapped to the width by the chat screen's own wrap. */
function screen() {
  let text = '';
  return {
    out: { isTTY: true, columns: WIDTH, write: (s: string) => void (text += s) },
    wrapped: () => text.split('\n').flatMap((l) => wrapLine(l, WIDTH)),
  };
}

if (parts.includes('render')) {
  const started = Date.now() - 1000 * 1000;
  const turns = Array.from({ length: 1000 }, (_, i) => {
    const user = i % 2 === 0;
    const text = user
      ? `Question ${i}: please look at **part ${i}** of the report.`
      : `## Part ${i}\n\nI looked at part ${i}: it has *three* sections.\n\n- first item of ${i}\n- second item\n\n| a | b |\n|---|---|\n| ${i} | ${i * 2} |\n\n\`\`\`js\nconst part = ${i};\nconsole.log(part * 2);\n\`\`\`\n`;
    return archivedTurn(i, started, text, !user && i % 4 === 1 ? { path: `data/part${i}.txt`, result: `line of part ${i}\n`.repeat(20) } : undefined) as unknown as Turn;
  });
  const raw = (t: Turn) => t.blocks.map((b) => b.content).join('\n');
  const rendered: number[] = [];
  const renderedCpu: number[] = [];
  const plain: number[] = [];
  let lines = 0;
  for (let run = 0; run < 5; run++) {
    let t0 = performance.now();
    const cpu0 = process.cpuUsage();
    const s = screen();
    new Renderer(s.out, { color: true, markdown: true }).turns(turns);
    lines = s.wrapped().length;
    rendered.push(performance.now() - t0);
    const cpu = process.cpuUsage(cpu0);
    renderedCpu.push((cpu.user + cpu.system) / 1000);
    t0 = performance.now();
    const b = screen();
    for (const t of turns) b.out.write(`${raw(t)}\n`);
    b.wrapped();
    plain.push(performance.now() - t0);
  }
  console.log(`render 1,000 turns (markdown, every 4th agent turn a tool call), ${lines} screen lines, median of 5:`);
  console.log(`  client renderer   ${ms(median(rendered)).padStart(9)}   (CPU ${ms(median(renderedCpu))}; first run ${ms(rendered[0])}; goal < 1,000 ms)`);
  console.log(`  baseline raw text ${ms(median(plain)).padStart(9)}   (the same text written and wrapped, no markdown)`);
}

if (parts.includes('deltas')) {
  const words = 'The answer streams **word by word**, with `code`, lists and\n\n- items\n- more items\n\nparagraphs. '.split(/(?<= )/);
  const RATE = 500;
  const SECONDS = 4;
  async function stream(render: boolean) {
    const s = screen();
    const r = new Renderer(s.out, { color: true, markdown: true });
    const ev = (name: string, payload: Record<string, unknown>) => ({ name, payload }) as Parameters<Renderer['event']>[0];
    if (render) r.event(ev('turn:start', { turn_id: 't1', role: 'assistant', parent_fork_tool_call_id: null }));
    const cost: number[] = [];
    const keyLag: number[] = [];
    const loop = monitorEventLoopDelay({ resolution: 1 });
    loop.enable();
    // A "key press" every 20 ms: how much later than 20 ms after the last one its handler runs.
    let last = performance.now();
    const keys = setInterval(() => {
      const now = performance.now();
      keyLag.push(Math.max(0, now - last - 20));
      last = now;
    }, 20);
    const n = RATE * SECONDS;
    const t0 = performance.now();
    for (let i = 0; i < n; i++) {
      const due = t0 + (i * 1000) / RATE;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((res) => setTimeout(res, wait));
      const d = words[i % words.length];
      const c0 = performance.now();
      if (render) r.event(ev('turn:patch', { turn_id: 't1', patch_type: 'add_content', data: { text_delta: d } }));
      else s.out.write(d);
      cost.push(performance.now() - c0);
    }
    const took = (performance.now() - t0) / 1000;
    if (render) r.event(ev('turn:end', { turn_id: 't1', status: 'completed' }));
    clearInterval(keys);
    loop.disable();
    cost.sort((a, b) => a - b);
    keyLag.sort((a, b) => a - b);
    return { rate: n / took, p50: cost[Math.floor(n / 2)], p99: cost[Math.floor(n * 0.99)], max: cost[n - 1], keyP99: keyLag[Math.floor(keyLag.length * 0.99)], keys: keyLag.length, loopMax: loop.max / 1e6 };
  }
  console.log(`${RATE} deltas/s for ${SECONDS} s (markdown answer), a key timer every 20 ms:`);
  for (const [label, render] of [['client renderer  ', true], ['baseline raw     ', false]] as const) {
    const r = await stream(render);
    console.log(`  ${label} ${r.rate.toFixed(0)} deltas/s kept; per delta p50 ${ms(r.p50)} p99 ${ms(r.p99)} max ${ms(r.max)}; key timer late p99 ${ms(r.keyP99)} (${r.keys} fired); loop delay max ${ms(r.loopMax)}`);
  }
}

if (parts.includes('export')) {
  const MB = 77;
  const tmp = mkdtempSync(join(tmpdir(), 'agentsvc-bench-term-'));
  const pg = await startEmbeddedPostgres(join(tmp, 'pg'), { database: 'postgres' });
  const home = join(tmp, 'home');
  const env: NodeJS.ProcessEnv = { ...process.env, AGENTSVC_HOME: home, DATABASE_URL: pg.url, OPENAI_API_KEY: 'none', AGENTSVC_LOG_LEVEL: 'warn', AGENTSVC_IMPORT_MAX_BYTES: String(2 * 1024 ** 3) };
  const { url, stop } = await startUp(env);
  const key = readFileSync(join(home, 'admin.key'), 'utf8').trim();
  const api = new Api({ url, urlFrom: 'bench', key, keyFrom: 'bench', home });
  const quiet = new Progress({ write: () => true, isTTY: false }, '');
  const src = join(tmp, 'in.zip');
  await makeArchive(MB, 1000, src);
  const sid = String((await uploadArchive(api, src, { name: 'bench export' }, false, quiet)).session_id);
  const out = join(tmp, 'out.zip');
  const bin = join(import.meta.dirname, '..', 'bin', 'run.js');
  const timed = (cmd: string, args: string[]) => {
    rmSync(out, { force: true });
    const t0 = performance.now();
    const r = spawnSync(cmd, args, { env: { ...env, AGENTSVC_URL: url, AGENTSVC_KEY: key }, encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')}: ${r.stderr}`);
    return performance.now() - t0;
  };
  const runs = { curl: [] as number[], cli: [] as number[], inProcess: [] as number[], startup: [] as number[] };
  let size = 0;
  for (let i = 0; i < 3; i++) {
    runs.curl.push(timed('curl', ['-sf', '-H', `authorization: Bearer ${key}`, '-o', out, `${url}/api/sessions/${sid}/export`]));
    runs.cli.push(timed(process.execPath, [bin, 'export', sid, '-o', out, '--force']));
    rmSync(out, { force: true });
    const t0 = performance.now();
    await downloadExport(api, sid, out, quiet);
    runs.inProcess.push(performance.now() - t0);
    size = statSync(out).size;
    runs.startup.push(timed(process.execPath, [bin, 'sessions', 'list', '--json']));
  }
  const fmt = (xs: number[]) => xs.map((x) => (x / 1000).toFixed(2)).join(' / ') + ' s';
  console.log(`export of a ${(size / 1048576).toFixed(1)} MiB session archive to a file, 3 runs (alternating):`);
  console.log(`  curl -o FILE                      ${fmt(runs.curl)}`);
  console.log(`  agentsvc export -o FILE           ${fmt(runs.cli)}   (median ${(median(runs.cli) / median(runs.curl)).toFixed(2)}x curl; goal <= 1.5x)`);
  console.log(`  its download in-process           ${fmt(runs.inProcess)}`);
  console.log(`  CLI start alone (sessions list)   ${fmt(runs.startup)}`);
  await stop();
  await pg.stop();
  rmSync(tmp, { recursive: true, force: true });
}
