import yazl from 'yazl';

/**
 * A session of many turns made in one request: an archive as `agentsvc export` writes it, posted
 * to `POST /api/sessions/import`. Chatting 5,000 turns through the fake model would take minutes;
 * the console reads an imported session through the same REST and Socket.IO calls. Every other
 * agent turn has a Read call, every fifth one a code block, so turns differ in height.
 */

const block = (type: string, content: string, call?: number) => ({
  type,
  content,
  tool_call_id: call === undefined ? null : `tc_${call}`,
  tool_name: call === undefined ? null : 'Read',
  display_name: call === undefined ? null : 'Read',
});

/**
 * Turn `i` of an archive (`turns.jsonl`), completed, started `i` seconds after `started`: a user
 * turn when `i` is even; an agent turn may carry one Read call with its result.
 */
export function archivedTurn(i: number, started: number, text: string, call?: { path: string; result: string }) {
  const user = i % 2 === 0;
  return {
    id: `entry_${String(i).padStart(20, '0')}`,
    sequence: i + 1,
    turn_id: `turn_${String(i).padStart(20, '0')}`,
    loop_id: 'root',
    kind: 'message',
    role: user ? 'user' : 'assistant',
    status: 'completed',
    blocks: [...(call ? [block('tool_use', JSON.stringify({ file_path: call.path }), i), block('tool_result', call.result, i)] : []), block('text', text)],
    tool_calls: call ? [{ id: `tc_${i}`, tool_name: 'Read', display_name: 'Read', arguments: JSON.stringify({ file_path: call.path }), status: 'done', result: call.result, duration_ms: 12 }] : [],
    content: null,
    model: user ? null : 'fake-model',
    usage: user ? { input_tokens: 0, output_tokens: 0 } : { input_tokens: 100, output_tokens: 50 },
    duration_ms: 900,
    started_at: new Date(started + i * 1000).toISOString(),
    context_window: 0,
    memory_refs: null,
    parent_fork_tool_call_id: null,
    extra: null,
    branch_id: 'main',
  };
}

function turn(i: number, started: number) {
  const user = i % 2 === 0;
  const text = user
    ? `Question ${i}: please look at part ${i} of the report.`
    : `Answer ${i}. I looked at part ${i} of the report. `.repeat(1 + (i % 3)) + (i % 5 === 1 ? `\n\n\`\`\`js\nconst part = ${i};\nconsole.log(part * 2);\n\`\`\`\n` : '');
  return archivedTurn(i, started, text, !user && i % 4 === 1 ? { path: `data/part${i}.txt`, result: `line of part ${i}\n`.repeat(20) } : undefined);
}

export function longSessionArchive(turns: number, intent: string): Promise<Buffer> {
  const zip = new yazl.ZipFile();
  const started = Date.now() - turns * 1000;
  const manifest = {
    format: 'agentsvc-session',
    version: 1,
    exported_at: new Date().toISOString(),
    session: { intent, model: null, mode: 'executing', created_at: new Date(started).toISOString(), memory_enabled: false, is_persistent: false, disable_tools: [], active_branch: 'main' },
    counts: { turns, branches: 0, checkpoints: 0, tasks: 0, memories: 0 },
  };
  zip.addBuffer(Buffer.from(JSON.stringify(manifest)), 'manifest.json');
  const lines = Array.from({ length: turns }, (_, i) => JSON.stringify(turn(i, started)));
  zip.addBuffer(Buffer.from(lines.join('\n') + '\n'), 'turns.jsonl');
  for (const name of ['branches.json', 'checkpoints.json', 'tasks.json', 'memories.json']) zip.addBuffer(Buffer.from('[]'), name);
  zip.end();
  const chunks: Buffer[] = [];
  return new Promise((resolve, reject) => {
    zip.outputStream.on('data', (c: Buffer) => chunks.push(c));
    zip.outputStream.on('end', () => resolve(Buffer.concat(chunks)));
    zip.outputStream.on('error', reject);
  });
}

/** Import a session of `turns` turns for the key's user; answers its id. */
export async function importLongSession(url: string, key: string, turns: number, intent = `${turns} turns`): Promise<string> {
  const form = new FormData();
  form.append('file', new Blob([new Uint8Array(await longSessionArchive(turns, intent))], { type: 'application/zip' }), 'long.zip');
  const res = await fetch(`${url}/api/sessions/import`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form, signal: AbortSignal.timeout(120_000) }).catch((e: Error) => {
    throw new Error(`import of ${turns} turns: ${e.name === 'TimeoutError' ? 'no answer within 120000 ms' : e.message}`);
  });
  const body = (await res.json()) as { session_id?: string; detail?: unknown };
  if (!res.ok || !body.session_id) throw new Error(`import of ${turns} turns: ${res.status} ${JSON.stringify(body.detail)}`);
  return body.session_id;
}
