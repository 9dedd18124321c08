import t from 'tap';
import { Renderer } from '../../src/cli/terminal/render.js';
import type { ServerEvent } from '../../src/cli/terminal/stream.js';
import type { ProtocolSocket } from '../../src/core/events/sockets.js';
import { Subscriptions } from '../../src/core/events/subscriptions.js';
import { ACCESS, accessChange } from '../../src/features/users/service.js';
import { MemoryBus } from '../../src/platform/infra/event-bus.js';
import { ChatModel } from '../../web/src/chat-model.js';

/**
 * `Subscriptions.recheck` on its own (docs/identity.md, "When read access goes"): the subscriptions
 * it names are asked again, a refused one ends with `session:closed` and nothing after it, the rest
 * go on; and how the terminal and the console show `session:closed`. The service end to end:
 * test/teams/team-workspace-read-access.test.ts.
 */

type Sent = { name: string; payload: { session_id: string; seq?: number; code?: string } };

function setup() {
  const bus = new MemoryBus();
  const subs = new Subscriptions(bus);
  const sockets = new Map<string, Sent[]>();
  let n = 0;
  const connect = (userId: string) => {
    const id = `sock${++n}`;
    const sent: Sent[] = [];
    sockets.set(id, sent);
    const socket = { id, data: { user: { id: userId } }, emit: (name: string, payload: Sent['payload']) => sent.push({ name, payload }) } as unknown as ProtocolSocket;
    return { socket, sent, watch: (sid: string) => subscribeTo(subs, socket, sid) };
  };
  let seq = 0;
  const publish = (sid: string) => bus.publish({ name: 'turn:start', payload: { session_id: sid, seq: ++seq } });
  return { subs, connect, publish };
}

function subscribeTo(subs: Subscriptions, socket: ProtocolSocket, sid: string) {
  const sub = subs.add(socket, sid, 0);
  sub.live();
}

const names = (sent: Sent[], sid: string) => sent.filter((e) => e.payload.session_id === sid).map((e) => e.name);
const notFound = { code: 'NOT_FOUND', message: 'session not found' };

t.test("a user's refused subscriptions end with session:closed; nothing of them follows; the rest go on", async (t) => {
  const { subs, connect, publish } = setup();
  const alice = connect('alice');
  const bob = connect('bob');
  for (const sid of ['team', 'other']) {
    alice.watch(sid);
    bob.watch(sid);
  }
  const asked: string[] = [];
  // Bob may no longer read `team`; everything else is readable.
  const ended = await subs.recheck({ userId: 'bob' }, async (user, sid) => {
    asked.push(`${user} ${sid}`);
    return user === 'bob' && sid === 'team' ? notFound : null;
  });
  t.equal(ended, 1);
  t.same(asked.sort(), ['bob other', 'bob team'], "only bob's subscriptions are asked about");
  t.same(bob.sent, [{ name: 'session:closed', payload: { session_id: 'team', ...notFound } }]);
  publish('team');
  publish('other');
  t.same(names(bob.sent, 'team'), ['session:closed'], 'bob: nothing of team after it');
  t.same(names(bob.sent, 'other'), ['turn:start'], "bob's other subscription goes on");
  t.same(names(alice.sent, 'team'), ['turn:start'], 'alice goes on');
  t.equal(subs.count(bob.socket.id), 1);

  // By session (a deleted one): every subscriber of it, whoever they are.
  t.equal(await subs.recheck({ sessionId: 'other' }, async () => notFound), 2);
  t.same(names(alice.sent, 'other'), ['turn:start', 'session:closed']);
  t.same(names(bob.sent, 'other'), ['turn:start', 'session:closed']);
  t.equal(await subs.recheck({}, async () => notFound), 1, 'everything: the one subscription left (alice on team)');
  t.equal(subs.count(alice.socket.id), 0);
  subs.close();
});

t.test('a check that fails keeps the subscription; one renewed during the check is not ended by it', async (t) => {
  const { subs, connect, publish } = setup();
  const bob = connect('bob');
  bob.watch('team');
  t.equal(await subs.recheck({ userId: 'bob' }, () => Promise.reject(new Error('database down'))), 0);
  publish('team');
  t.same(names(bob.sent, 'team'), ['turn:start'], 'still subscribed');

  // Bob unsubscribes and subscribes again while the old subscription is being checked: the new one
  // had its own check at subscribe time and stays.
  let answer!: (v: typeof notFound) => void;
  const pending = subs.recheck({ userId: 'bob' }, () => new Promise((r) => (answer = r)));
  subs.remove(bob.socket.id, 'team');
  bob.watch('team');
  answer(notFound);
  t.equal(await pending, 0);
  publish('team');
  t.same(names(bob.sent, 'team'), ['turn:start', 'turn:start'], 'no session:closed; the renewed subscription receives');
  subs.close();
});

t.test('the announcements name a user, a session or everything; anything else is no access change', async (t) => {
  t.same(accessChange(ACCESS.user('user_abc')), { userId: 'user_abc' });
  t.same(accessChange(ACCESS.session('sess_abc')), { sessionId: 'sess_abc' });
  t.same(accessChange(ACCESS.all), {});
  t.equal(accessChange('user:user_abc'), null, 'a disabled user closes sockets instead');
  t.equal(accessChange('key_abc'), null);
});

t.test('the terminal prints one gray line; the console keeps the reason and stops showing a run', async (t) => {
  let text = '';
  const r = new Renderer({ write: (s: string) => (text += s), isTTY: false, columns: 100 } as never);
  r.event({ name: 'session:closed', payload: { session_id: 's', ...notFound } } as ServerEvent);
  t.equal(text, '[the session is no longer readable: session not found; nothing more of it will be shown]\n');

  const m = new ChatModel();
  t.equal(m.apply('chat:start', { session_id: 's', seq: 4, mode: 'executing', headless: false }), true);
  t.equal(m.apply('session:closed', { session_id: 's', ...notFound }), true);
  t.equal(m.running, false);
  t.equal(m.lastSeq, 4, 'no seq of its own');
  t.equal(m.closed, 'You can no longer read this session (session not found): it was deleted, or you are no longer a member of its team workspace.');
});
