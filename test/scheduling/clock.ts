import type { TestApp } from '../helpers/app.js';

/**
 * Shift the scheduler's calendar clock (CronClock, `shiftMs`) so that its next minute begins
 * `leadMs` from now: an every-minute task then fires in seconds instead of at the next real minute
 * (up to 60 s away), through the same scheduler, database or BullMQ path as in production. Answers
 * that instant. A task created later than `leadMs` from now fires a calendar minute later.
 */
export function minuteSoon(app: TestApp, leadMs = 5000): number {
  const due = Date.now() + leadMs;
  app.service.scheduled.clock.shiftMs = (60_000 - (due % 60_000)) % 60_000;
  return due;
}

/** Whether `iso` is a whole minute of the app's calendar clock. */
export function onCalendarMinute(app: TestApp, iso: string): boolean {
  return (Date.parse(iso) + app.service.scheduled.clock.shiftMs) % 60_000 === 0;
}
