/** Figures read off session events without a service: notices by code and the runs open. */
import t from 'tap';
import { ServiceMetrics } from '../../src/features/telemetry/metrics.js';
import type { SessionEvent } from '../../src/platform/infra/event-bus.js';

const ev = (name: string, payload: Record<string, unknown>) => ({ name, payload: { session_id: 's1', ...payload } }) as unknown as SessionEvent;
const sample = (text: string, series: string) => Number(text.split('\n').find((l) => l.startsWith(`${series} `))?.slice(series.length + 1));

t.test('system:notice is counted by code; codes outside the catalogue are other', async (t) => {
  const m = new ServiceMetrics();
  m.event(ev('system:notice', { code: 'BUDGET_WARNING', message: 'a budget passed 80%' }));
  m.event(ev('system:notice', { code: 'BUDGET_WARNING', message: 'again' }));
  m.event(ev('system:notice', { code: 'LOOP_DETECTED', message: 'x' }));
  m.event(ev('system:notice', { code: 'made-up-by-a-plugin', message: 'x' }));
  const text = await m.text();
  t.equal(sample(text, 'agentsvc_notices_total{code="BUDGET_WARNING"}'), 2);
  t.equal(sample(text, 'agentsvc_notices_total{code="LOOP_DETECTED"}'), 1);
  t.equal(sample(text, 'agentsvc_notices_total{code="other"}'), 1);
  t.notMatch(text, /made-up-by-a-plugin/);
});

t.test('agentsvc_runs_active counts the runs between chat:start and chat:end', async (t) => {
  const m = new ServiceMetrics();
  t.equal(sample(await m.text(), 'agentsvc_runs_active'), 0);
  m.event(ev('chat:start', { mode: 'executing' }));
  m.event({ name: 'chat:start', payload: { session_id: 's2', mode: 'executing' } } as unknown as SessionEvent);
  t.equal(sample(await m.text(), 'agentsvc_runs_active'), 2);
  m.event(ev('chat:end', { status: 'completed', finish_reason: 'stop' }));
  t.equal(sample(await m.text(), 'agentsvc_runs_active'), 1);
});
