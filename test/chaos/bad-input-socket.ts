import type { Socket } from 'socket.io-client';
import type { TestApp } from '../helpers/app.js';
import { connectedSocket, type prng } from '../helpers/chaos.js';
import { STRINGS } from '../helpers/fuzz.js';
import { waitFor } from '../helpers/wait.js';

/**
 * The Socket.IO half of the bad-input campaign. The client events are read from a live server-side
 * socket (its registered listeners), so an event added to the gateway is fuzzed without editing
 * this file. Certainly invalid payloads go against the strict session; softer ones (that may start
 * a run) against the sacrificial one.
 */

interface Opts {
  key: string;
  bobKey: string;
  own: string;
  soft: string;
  foreign: string;
  rnd: ReturnType<typeof prng>;
  hungMs: number;
}

interface SocketCase {
  event: string;
  payload: unknown;
  kind: string;
  mustReject: boolean;
}

const NOT_OBJECTS: [string, unknown][] = [
  ['undefined', undefined],
  ['null', null],
  ['number', 0],
  ['string', 'str'],
  ['array', []],
  ['boolean', true],
  ['binary', Buffer.from([0, 1, 2])],
  ['deep array', JSON.parse('['.repeat(2000) + ']'.repeat(2000))],
];
const WRONG: [string, unknown][] = [
  ['number', 123],
  ['null', null],
  ['object', {}],
  ['array', ['x']],
  ['boolean', true],
  ['empty', ''],
  ['huge', 'x'.repeat(200)],
];

function casesFor(event: string, o: Opts): SocketCase[] {
  const out: SocketCase[] = [];
  const add = (kind: string, payload: unknown, mustReject: boolean) => out.push({ event, payload, kind: `${event}: ${kind}`, mustReject });
  const sid = (reject: boolean) => (reject ? o.own : o.soft);
  // Unsubscribing from a session one is not subscribed to is a no-op, not an error.
  const idsMatter = event !== 'session:unsubscribe';
  for (const [k, v] of NOT_OBJECTS) add(`payload ${k}`, v, true);
  for (const [k, v] of WRONG) add(`session_id ${k}`, { session_id: v }, true);
  add("another user's session", { session_id: o.foreign, message: 'steal' }, idsMatter);
  add('unknown session', { session_id: 'sess_AAAAAAAAAAAAAAAAAAAA', message: 'x' }, idsMatter);
  for (const [k, v] of STRINGS) add(`session_id ${k}`, { session_id: v }, idsMatter);
  add('unknown field', { session_id: sid(false), zz: { __proto__: { admin: true } } }, false);
  if (event === 'session:subscribe') for (const v of [-1, 1.5, 'a', null, 1e20, {}, true]) add(`since_seq ${JSON.stringify(v)}`, { session_id: sid(true), since_seq: v }, true);
  if (event === 'chat:send') {
    for (const [k, v] of WRONG) if (k !== 'empty' && k !== 'huge') add(`message ${k}`, { session_id: sid(true), message: v }, true);
    for (const v of [[], [{ type: 'video' }], [{ type: 'text' }], [{ type: 'image_url', image_url: { url: 'javascript:alert(1)' } }], [{ type: 'text', text: 1 }]])
      add(`message parts ${JSON.stringify(v)}`, { session_id: sid(true), message: v }, true);
    for (const [k, v] of [
      ['mode', 'yolo'],
      ['headless', 'yes'],
      ['output_schema', 'x'],
      ['whatif', 7],
      ['askuser_answer', 'x'],
      ['askuser_answer', { tool_call_id: 1 }],
      ['askuser_answer', { tool_call_id: 'tc_x', selections: { 0: [-1] } }],
    ] as const)
      add(`${k} ${JSON.stringify(v)}`, { session_id: sid(true), message: 'x', [k]: v }, true);
    add('empty message', { session_id: sid(true), message: '' }, true);
    for (const [k, v] of STRINGS) if (v) add(`message ${k}`, { session_id: sid(false), message: v }, false);
  }
  return out;
}

/** Emit with an ack; `null` when no ack came within ms (a hung event). */
function emitAck(s: Socket, event: string, payload: unknown, ms: number): Promise<any | null> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(null), ms);
    const args = payload === undefined ? [] : [payload];
    s.emit(event, ...args, (ack: unknown) => {
      clearTimeout(timer);
      resolve(ack);
    });
  });
}

export async function socketCampaign(app: TestApp, o: Opts) {
  const probe = await connectedSocket(app, o.key);
  // The server registers its handlers once the connection is set up: wait until it has.
  const server = await waitFor(() => [...app.service.io.sockets.sockets.values()].find((s) => s.id === probe.id && s.eventNames().length > 0), { what: "the probe's handlers on the server" });

  const events = (server?.eventNames() ?? []).map(String).filter((e) => e !== 'disconnect' && e !== 'disconnecting' && e !== 'error');
  probe.disconnect();
  const cases = events.flatMap((e) => casesFor(e, o));
  // Random extra payloads: known events with random ingredients, and events nobody registered.
  for (let i = 0; i < 200; i++) {
    const e = o.rnd.pick(events);
    cases.push({
      event: e,
      payload: { session_id: o.rnd.pick([o.foreign, 'sess_x', '', 7, null]), since_seq: o.rnd.pick([-5, 'x', 0.5]), message: o.rnd.pick([3, null, {}]) },
      kind: `${e}: random`,
      mustReject: e !== 'session:unsubscribe',
    });
  }
  const result = {
    events,
    sent: 0,
    hung: [] as string[],
    internal: [] as string[],
    accepted: [] as string[],
    malformedAcks: [] as string[],
    excused: [] as string[],
    codes: {} as Record<string, number>,
  };
  const socks = await Promise.all(Array.from({ length: 8 }, () => connectedSocket(app, o.key)));
  let next = 0;
  await Promise.all(
    socks.map(async (s) => {
      while (next < cases.length) {
        const c = cases[next++];
        result.sent++;
        const ack = await emitAck(s, c.event, c.payload, o.hungMs);
        const code = ack === null ? 'NO_ACK' : ack?.ok ? 'ok' : String(ack?.error?.code);
        result.codes[code] = (result.codes[code] ?? 0) + 1;
        if (ack === null) result.hung.push(c.kind);
        else if (ack.ok) {
          if (c.mustReject) result.accepted.push(`${c.kind} -> ${JSON.stringify(ack).slice(0, 120)}`);
          result.excused.push(o.soft);
        } else if (typeof ack.error?.code !== 'string' || typeof ack.error?.message !== 'string') result.malformedAcks.push(`${c.kind} -> ${JSON.stringify(ack).slice(0, 120)}`);
        else if (ack.error.code === 'INTERNAL') result.internal.push(`${c.kind}: ${ack.error.message}`);
      }
    }),
  );
  // Events nobody registered, and events without an ack callback: the socket must stay usable.
  for (const s of socks) {
    for (const name of ['', 'constructor', '__proto__', 'x'.repeat(1000), 'chat:send\u0000']) s.emit(name, { session_id: o.own });
    s.emit('chat:send', { session_id: o.own, message: 7 });
    result.sent += 6;
    const alive = await emitAck(s, 'session:subscribe', { session_id: o.own }, o.hungMs);
    if (!alive?.ok) result.hung.push(`socket unusable after unregistered events: ${JSON.stringify(alive)}`);
    s.disconnect();
  }
  return result;
}
