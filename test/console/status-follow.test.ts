import t, { type Test } from 'tap';
import type { Page, Route } from 'playwright-core';
import { buildWithModel, createSession, echoTool } from '../helpers/chat.js';
import { waitFor } from '../helpers/wait.js';
import { launch, open, sendMessage, shot, signIn } from './browser.js';

/**
 * Where the sidebar's status of a session still parted from the header's after a failed run
 * (docs/console.md "Session status"), each shown as a person sees it in Chromium:
 *
 * - the team list: a session of a team workspace is listed twice in its owner's sidebar (their
 *   own list and "Team workspaces"); the team entry showed the status its list had read, not the
 *   store's, so it said "created" all through a run the header showed running;
 * - a freshly drawn label: a label subscribed to the store after the paint (useEffect), so a
 *   status written between its first render and its subscription was not drawn there until the
 *   next change. Opening a session whose run ended meanwhile did it: the header was drawn from the
 *   session's detail ("running", read during the run), then the replay's `chat:end` was applied
 *   when the subscription was acknowledged; the sidebar said failed, the header running, until a
 *   reload. The test holds the subscription and its acknowledgement in the page (and the detail
 *   in the route) and lets the acknowledgement in the moment the header's status is drawn;
 * - a run left behind: a run's end reaches this tab only while its chat is open; after leaving
 *   it for its Files tab or another session, the header and the sidebar said running until a
 *   reload. The lists now read again every few seconds while they show such a run.
 */

const lastUser = (body: any): string => {
  const m = [...body.messages].reverse().find((x: any) => x.role === 'user');
  return typeof m?.content === 'string' ? m.content : JSON.stringify(m?.content ?? '');
};

/** `hold then fail`: the model calls Hold, which waits for the test; then the model fails (400). */
function script(body: any) {
  const afterTool = body.messages.at(-1)?.role === 'tool';
  if (lastUser(body).includes('hold then fail')) return afterTool ? { status: 400 } : { toolCalls: [{ name: 'Hold', args: { say: 'wait' } }] };
  return { text: ['ok'] };
}

/** What watch() keeps on the page's window. */
type Recorder = { __seen: string[][]; __observer?: MutationObserver };

/**
 * Note, after every change of the page, what the header (when it shows session `sid`) and every
 * sidebar entry of `sid` say; `disagreements` answers the notes where they differ.
 */
const watch = (page: Page, sid: string) =>
  page.evaluate((sid) => {
    const w = window as unknown as Recorder;
    w.__seen = [];
    w.__observer?.disconnect();
    const note = () => {
      const head = location.pathname.startsWith(`/sessions/${sid}`) ? [document.querySelector('.session-head .status')?.textContent ?? ''] : [];
      const side = Array.from(document.querySelectorAll(`nav.side a[href="/sessions/${sid}"] .status`)).map((e) => e.textContent ?? '');
      w.__seen.push([...head, ...side].filter(Boolean));
    };
    note();
    w.__observer = new MutationObserver(note);
    w.__observer.observe(document.body, { subtree: true, childList: true, characterData: true, attributes: true });
  }, sid);
const disagreements = (page: Page) => page.evaluate(() => (window as unknown as Recorder).__seen.filter((s) => new Set(s).size > 1).map((s) => s.join(' / ')));

/** What the header (when it shows `sid`) and each sidebar entry of `sid` say now. */
const shown = (page: Page, sid: string) =>
  page.evaluate((sid) => {
    const head = location.pathname.startsWith(`/sessions/${sid}`) ? [`header: ${document.querySelector('.session-head .status')?.textContent}`] : [];
    return [...head, ...Array.from(document.querySelectorAll(`nav.side a[href="/sessions/${sid}"] .status`)).map((e) => `sidebar: ${e.textContent}`)];
  }, sid);

/**
 * Await (15 s at most) the header (when `header`) and `entries` sidebar entries of `sid` all
 * saying `status`; then assert that, naming what they said when they did not.
 */
async function allSay(t: Test, page: Page, sid: string, status: string, entries: number, what: string, header = true) {
  const done = await page
    .waitForFunction(
      ({ sid, status, entries, header }) => {
        const side = Array.from(document.querySelectorAll(`nav.side a[href="/sessions/${sid}"] .status`)).map((e) => e.textContent);
        return side.length === entries && side.every((s) => s === status) && (!header || document.querySelector('.session-head .status')?.textContent === status);
      },
      { sid, status, entries, header },
      { timeout: 15_000 },
    )
    .then(
      () => true,
      () => false,
    );
  t.ok(done, what, done ? {} : { shown: await shown(page, sid) });
}

/** The frame holds of holdFrames(), on the page's window. */
type Holds = {
  /** Outgoing frames holding this text wait in `__sent` until `__send()`. */
  __holdSend: string | null;
  /** Incoming acknowledgements (`43...`) naming this session wait in `__acks` until `__deliver()`. */
  __holdAck: string | null;
  __sent: [WebSocket, string][];
  __acks: [WebSocket, MessageEvent][];
  __send: () => void;
  /** Hands the held acknowledgements to socket.io at once (synchronously). */
  __deliver: () => void;
};

/** In the page, before its scripts: the socket's frames, held and let go as the test says. */
function holdFrames() {
  const w = window as unknown as Holds & { WebSocket: typeof WebSocket };
  const Native = w.WebSocket;
  const handlers = new WeakMap<WebSocket, ((e: MessageEvent) => void) | null>();
  w.__holdSend = null;
  w.__holdAck = null;
  w.__sent = [];
  w.__acks = [];
  class Holding extends Native {
    constructor(url: string | URL, protocols?: string | string[]) {
      super(url, protocols);
      super.addEventListener('message', (e: MessageEvent) => {
        if (w.__holdAck && typeof e.data === 'string' && e.data.startsWith('43') && e.data.includes(w.__holdAck)) w.__acks.push([this, e]);
        else handlers.get(this)?.call(this, e);
      });
      // engine.io-client listens with `ws.onmessage = ...`: keep that handler to call it here.
      Object.defineProperty(this, 'onmessage', {
        get: () => handlers.get(this) ?? null,
        set: (fn: ((e: MessageEvent) => void) | null) => handlers.set(this, fn),
      });
    }
    override send(data: string | ArrayBufferLike | Blob | ArrayBufferView) {
      if (w.__holdSend && typeof data === 'string' && data.includes(w.__holdSend)) w.__sent.push([this, data]);
      else super.send(data);
    }
  }
  w.WebSocket = Holding;
  w.__send = () => {
    w.__holdSend = null;
    for (const [ws, data] of w.__sent.splice(0)) Native.prototype.send.call(ws, data);
  };
  w.__deliver = () => {
    w.__holdAck = null;
    for (const [ws, e] of w.__acks.splice(0)) handlers.get(ws)?.call(ws, e);
  };
}

t.test('console: the sidebar and the header agree about a failed run wherever the session shows', { timeout: 150_000 }, async (t) => {
  const { app, model } = await buildWithModel(t);
  model.fallback = script;
  const holds: (() => void)[] = [];
  app.service.tools.register({ ...echoTool(), name: 'Hold', description: 'waits for the test', execute: () => new Promise<string>((done) => holds.push(() => done('held'))) });
  /** Let the oldest held Hold call answer (the model then fails the run). */
  const release = async () => {
    await waitFor(() => holds.length > 0, { what: 'the model to call Hold' });
    holds.shift()!();
  };
  // However the test ends, no Hold call stays open (the service would wait on its run at close).
  t.teardown(() => {
    for (const h of holds.splice(0)) h();
  });
  const ws = (await (await app.api('/api/prod_workspaces', { method: 'POST', json: { name: 'Infra' } })).json()).id as string;
  const team = await createSession(app, app.adminKey, { intent: 'Team run', workspace_id: ws });
  const late = await createSession(app, app.adminKey, { intent: 'Opened late' });
  const files = await createSession(app, app.adminKey, { intent: 'Left for files' });
  const left = await createSession(app, app.adminKey, { intent: 'Left for another' });
  await createSession(app, app.adminKey, { intent: 'Another one' });

  const browser = await launch(t);
  if (!browser) return;
  const { page, problems, context } = await open(browser, `${app.url}/`);
  await page.addInitScript(holdFrames);
  // The next read of one session's detail is answered as the service answered it then, and handed
  // to the page when the test says.
  let holdDetail: string | null = null;
  let heldDetail: (() => Promise<void>) | null = null;
  await page.route(
    (url) => holdDetail !== null && url.pathname === `/api/sessions/${holdDetail}`,
    async (route: Route) => {
      holdDetail = null;
      const response = await route.fetch();
      heldDetail = () => route.fulfill({ response });
    },
  );
  await page.reload();
  await signIn(page, app.adminKey);
  const sessions = page.getByRole('navigation', { name: 'Sessions' });
  const openSession = async (name: string) => {
    await sessions.getByRole('link', { name: new RegExp(`^${name}`) }).first().click();
    await page.getByRole('heading', { level: 1, name }).waitFor();
    await page.getByText('No messages yet.').waitFor();
  };
  /** Open session `name` and start a run there that holds until release(). */
  const startHeldRun = async (name: string, sid: string) => {
    await openSession(name);
    await sendMessage(page, 'hold then fail');
    await allSay(t, page, sid, 'running', 1, `${name}: running in the header and the entry`);
  };

  // 1. A team workspace's session: its own entry, its team entry and the header, in step.
  await sessions.getByRole('region', { name: 'Team workspaces' }).getByRole('link', { name: /^Team run/ }).waitFor();
  await openSession('Team run');
  await watch(page, team);
  await sendMessage(page, 'hold then fail');
  await allSay(t, page, team, 'running', 2, 'running: the header, the own entry and the team entry');
  await shot(page, '75-status-team-running');
  await release();
  await allSay(t, page, team, 'failed', 2, 'failed: the header, the own entry and the team entry');
  t.same(await disagreements(page), [], 'the team entry, the own entry and the header never differ');

  // 2. A session opened again after its run ended: the header drawn from its detail, read while
  // it ran, just before the replay's chat:end is applied.
  await startHeldRun('Opened late', late);
  await page.getByRole('link', { name: 'agentsvc' }).click();
  await page.getByRole('heading', { name: 'New chat' }).waitFor();
  await page.evaluate((sid) => {
    const w = window as unknown as Holds;
    w.__holdSend = 'session:subscribe';
    w.__holdAck = sid;
  }, late);
  holdDetail = late;
  await sessions.getByRole('link', { name: /^Opened late/ }).click();
  await waitFor(() => heldDetail, { what: 'the detail read while the run goes on, held' });
  await page.waitForFunction(() => (window as unknown as Holds).__sent.length > 0, undefined, { timeout: 15_000 });
  await release();
  await waitFor(async () => (await (await app.api(`/api/sessions/${late}`)).json()).status === 'failed', { what: 'the run to fail' });
  await page.evaluate(() => (window as unknown as Holds).__send());
  await page.waitForFunction(() => (window as unknown as Holds).__acks.length > 0, undefined, { timeout: 15_000 });
  await watch(page, late);
  await page.evaluate(() => {
    const o = new MutationObserver(() => {
      if (!document.querySelector('.session-head .status')) return;
      o.disconnect();
      (window as unknown as Holds).__deliver();
    });
    o.observe(document.body, { subtree: true, childList: true });
  });
  await heldDetail!();
  await allSay(t, page, late, 'failed', 1, 'failed: the header drawn just before the replay was in, and the entry');
  t.same(await disagreements(page), [], 'the header and the entry never differ');

  // 3. A run left for its Files tab: the header and the sidebar come to "failed" by themselves.
  await startHeldRun('Left for files', files);
  await page.getByRole('navigation', { name: 'Session', exact: true }).getByRole('link', { name: 'Files' }).click();
  await page.waitForURL(/\/files$/);
  await watch(page, files);
  await release();
  await allSay(t, page, files, 'failed', 1, 'failed, on the Files tab: the header and the entry');
  t.same(await disagreements(page), [], 'on the Files tab: the header and the sidebar together');

  // 4. A run left for another session: its entry comes to "failed" by itself.
  await startHeldRun('Left for another', left);
  await openSession('Another one');
  await release();
  await allSay(t, page, left, 'failed', 1, 'failed, another session open: the entry of the run left behind', false);
  await shot(page, '76-status-left-behind');

  t.same(problems, [], 'no CSP violation, no page error');
  await context.close();
});
