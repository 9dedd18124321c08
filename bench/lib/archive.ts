import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import yazl from 'yazl';
import { archivedTurn } from '../../test/helpers/long-session.js';

/** A session archive as `agentsvc export` writes it: `turns` turns (every 4th with a tool call), `mb` MiB of incompressible files. */
export async function makeArchive(mb: number, turnCount: number, file: string) {
  const zip = new yazl.ZipFile();
  const started = Date.now() - turnCount * 60_000;
  // turns.jsonl made as it is zipped: 500k turns joined would be a string over V8's limit.
  const lines = Readable.from(
    (function* () {
      for (let i = 0; i < turnCount; i++) {
        const user = i % 2 === 0;
        const text = `${user ? 'Please look at' : 'I looked at'} part ${i} of the report. `.repeat(8);
        yield Buffer.from(`${JSON.stringify(archivedTurn(i, started, text, !user && i % 4 === 1 ? { path: `data/part${i}.bin`, result: 'x'.repeat(600) } : undefined))}\n`);
      }
    })(),
  );
  const manifest = { format: 'agentsvc-session', version: 1, exported_at: new Date().toISOString(), session: { intent: `bench ${mb} MB`, model: null, mode: 'executing', created_at: new Date(started).toISOString(), memory_enabled: false, is_persistent: false, disable_tools: [], active_branch: 'main' }, counts: { turns: turnCount, branches: 0, checkpoints: 0, tasks: 0, memories: 0 } };
  zip.addBuffer(Buffer.from(JSON.stringify(manifest)), 'manifest.json');
  zip.addReadStream(lines, 'turns.jsonl');
  for (const name of ['branches.json', 'checkpoints.json', 'tasks.json', 'memories.json']) zip.addBuffer(Buffer.from('[]'), name);
  for (let i = 0; i < mb; i++) zip.addBuffer(randomBytes(1 << 20), `files/data/part${i}.bin`, { compress: false });
  zip.end();
  await pipeline(zip.outputStream, createWriteStream(file));
}
