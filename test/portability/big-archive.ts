// A large session archive for test/portability/large-import.test.ts, made in a process of its own:
// `node --import tsx test/portability/big-archive.ts <dir> <turns>` writes <dir>/big.zip and prints
// {path, turnsBytes}. Turns of ~10 KB of words each, in the shape an export writes.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { rawZip } from './rawzip.js';

const [dir, count] = process.argv.slice(2);
const TURNS = Number(count);
const WORDS = Array.from({ length: 2000 }, (_, i) => `w${(i * 7919).toString(36)}`);

function bigArchive(dir: string): { path: string; turnsBytes: number } {
  let seed = 11;
  const rnd = (n: number) => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n;
  const lines: string[] = [];
  for (let i = 0; i < TURNS; i++) {
    const words: string[] = [];
    for (let n = 0; n < 1700; n++) words.push(WORDS[rnd(WORDS.length)]);
    lines.push(
      JSON.stringify({
        id: `entry_${String(i).padStart(20, '0')}`,
        sequence: i + 1,
        turn_id: `turn_${String(i).padStart(20, '0')}`,
        loop_id: 'root',
        kind: 'message',
        role: i % 2 ? 'assistant' : 'user',
        status: 'completed',
        blocks: [{ type: 'text', content: words.join(' ') }],
        tool_calls: [],
        content: null,
        model: null,
        usage: { input_tokens: 0, output_tokens: 0 },
        duration_ms: 0,
        started_at: new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString(),
        context_window: 0,
        memory_refs: [],
        parent_fork_tool_call_id: null,
        extra: null,
        branch_id: 'main',
      }),
    );
  }
  const turns = `${lines.join('\n')}\n`;
  const manifest = { format: 'agentsvc-session', version: 1, exported_at: new Date().toISOString(), session: { intent: 'big', model: null, mode: 'executing', created_at: new Date().toISOString(), memory_enabled: false, is_persistent: false, disable_tools: [], active_branch: 'main' }, counts: { turns: TURNS } };
  const tasks = JSON.stringify(Array.from({ length: 300 }, (_, i) => ({ id: i + 1, subject: `task ${i}`, description: 'x'.repeat(100), status: 'pending', loop_id: 'root' })), null, 2);
  const annotations = JSON.stringify([
    { payload_id: `entry_${String(3).padStart(20, '0')}`, label: 'kept', note: '', data: {} },
    { payload_id: 'entry_notInThisArchive0000', label: 'dropped', note: '', data: {} },
  ]);
  const zip = rawZip([
    { name: 'manifest.json', data: JSON.stringify(manifest) },
    { name: 'turns.jsonl', data: turns, deflate: true },
    { name: 'branches.json', data: '[]' },
    { name: 'checkpoints.json', data: '[]' },
    { name: 'tasks.json', data: tasks, deflate: true },
    { name: 'memories.json', data: '[]' },
    { name: 'annotations.json', data: annotations },
    { name: 'files/readme.txt', data: 'hello' },
  ]);
  const path = join(dir, 'big.zip');
  writeFileSync(path, zip);
  return { path, turnsBytes: Buffer.byteLength(turns) };
}


process.stdout.write(JSON.stringify(bigArchive(dir)));
