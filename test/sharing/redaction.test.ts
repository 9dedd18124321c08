import t from 'tap';
import { generateKeyPairSync } from 'node:crypto';
import { buildWithModel, createSession, untilEnd, watch } from '../helpers/chat.js';
import { request } from '../helpers/socket.js';
import { zipEntries } from '../portability/rawzip.js';

/**
 * Secrets are masked in the values, not in an encoding of them (docs/sharing-and-portability.md). The security review
 * read a PEM key and a password with quotes on a share page: the masking ran on JSON text, where a
 * newline is `\n` and a quote `\"`, so the raw values never matched.
 */

const PEM = generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
const PASSWORD = 'pa"ss\\wo/rd-77';
/** What must never show: each secret, and each line of the key's body (64 base64 characters). */
const SECRETS = [PEM, PASSWORD, ...PEM.split('\n').filter((l) => l.length >= 16 && !l.startsWith('-----'))];

/** Every string of a value (object keys too), and every string inside strings that are JSON. */
function strings(v: unknown, out: string[] = []): string[] {
  if (typeof v === 'string') {
    out.push(v);
    if (/^\s*[[{]/.test(v)) {
      try {
        strings(JSON.parse(v), out);
      } catch {}
    }
  } else if (Array.isArray(v)) v.forEach((x) => strings(x, out));
  else if (v && typeof v === 'object')
    for (const [k, x] of Object.entries(v)) {
      out.push(k);
      strings(x, out);
    }
  return out;
}
const leaks = (texts: string[]) => SECRETS.filter((s) => texts.some((x) => x.includes(s) || x.includes(JSON.stringify(s).slice(1, -1))));
const unescapeHtml = (s: string) => s.replace(/&(quot|#39|lt|gt|amp);/g, (_, e) => ({ quot: '"', '#39': "'", lt: '<', gt: '>', amp: '&' })[e as 'quot']);

t.test('a PEM key and a password with quotes, backslash and slash: masked in the share JSON, the page and the export', async (t) => {
  const { app, model } = await buildWithModel(t);
  t.ok(PEM.split('\n').length > 10, 'a multi-line key');
  t.equal((await app.api('/api/user/env-buckets/default', { method: 'PUT', json: { env: { DB_PASSWORD: PASSWORD } } })).status, 200);
  const sid = await createSession(app, app.adminKey, { intent: `Rotate ${PASSWORD}`, env: { TLS_KEY: PEM } });
  model.script(
    {
      text: [`I will check the key and the password ${PASSWORD}.`],
      toolCalls: [
        // Quoted, unquoted (lines joined by spaces), and the password inside the tool's JSON arguments.
        { name: 'Bash', args: { command: 'printf "%s\\n" "$TLS_KEY"; echo $TLS_KEY; echo "$DB_PASSWORD"' } },
        { name: 'Bash', args: { command: `printf '%s' '${PASSWORD}' | wc -c` } },
      ],
    },
    { reasoning: [`The key is\n${PEM}`], text: [`Done. Key:\n${PEM}\nPassword: ${PASSWORD}`] },
  );
  const { sock, seen } = await watch(app, sid);
  t.equal((await request(sock, 'chat:send', { session_id: sid, message: `my password is ${PASSWORD}` })).ok, true);
  await untilEnd(seen, sid, 30_000);
  const own = await (await app.api(`/api/sessions/${sid}/messages`)).json();
  t.same(leaks(strings(own)), SECRETS, 'the owner sees the run as it was (each secret in it)');
  t.match(JSON.stringify(own), /wc -c/);

  const link = await (await app.api(`/api/sessions/${sid}/share`, { method: 'POST', json: {} })).json();
  const shared = await (await app.api(`/api/share/${link.token}`, { key: null })).json();
  t.same(leaks(strings(shared)), [], 'the share JSON holds no secret, decoded or not');
  t.same(leaks([await (await app.api(`/api/share/${link.token}`, { key: null })).text()]), [], 'nor its text');
  const results = shared.turns.flatMap((x: any) => x.tool_calls).map((c: any) => c.result as string);
  t.match(results[0], /\*\*\*\*/, 'the tool output shows the mask');
  t.match(shared.intent, /^Rotate \*\*\*\*$/, 'the intent too');
  t.ok(shared.turns.flatMap((x: any) => x.tool_calls).every((c: any) => JSON.parse(c.arguments)), 'masked arguments are still JSON');

  const html = await (await fetch(link.url)).text();
  t.same(leaks([html, unescapeHtml(html)]), [], 'the share page holds no secret');
  t.match(html, /\*\*\*\*/);

  const zip = Buffer.from(await (await app.api(`/api/sessions/${sid}/export`)).arrayBuffer());
  const entries = await zipEntries(zip);
  t.ok(entries.has('turns.jsonl'));
  for (const [name, text] of entries) {
    if (name.startsWith('files/')) continue;
    const values = name.endsWith('.jsonl') ? text.split('\n').filter(Boolean).map((l) => JSON.parse(l)) : name.endsWith('.json') ? JSON.parse(text) : text;
    t.same(leaks([text, ...strings(values)]), [], `${name} holds no secret`);
  }
  t.match(entries.get('turns.jsonl')!, /\*\*\*\*/);
});

t.test('GET /api/env masks a URL password holding a slash', async (t) => {
  const { app } = await buildWithModel(t, { DOCKER_HOST: 'tcp://deploy:s3cr/et@docker.internal:2376' });
  const all = ((await (await app.api('/api/env')).json()) as { items: { env_var: string; value: string }[] }[]).flatMap((g) => g.items);
  t.equal(all.find((i) => i.env_var === 'DOCKER_HOST')!.value, 'tcp://deploy:****@docker.internal:2376');
  t.notOk(JSON.stringify(all).includes('s3cr'));
});
