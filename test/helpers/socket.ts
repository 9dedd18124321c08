import type { Socket } from 'socket.io-client';

/** Resolves with the arguments of the next `event` on the socket (rejects after timeoutMs). */
export function next(socket: Socket, event: string, timeoutMs = 10_000): Promise<any[]> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ${event} within ${timeoutMs}ms`)), timeoutMs);
    socket.once(event, (...args: any[]) => {
      clearTimeout(timer);
      resolve(args);
    });
  });
}

/** Emit with an acknowledgement and resolve with the ack payload. */
export function request(socket: Socket, event: string, payload: unknown, timeoutMs = 10_000): Promise<any> {
  return socket.timeout(timeoutMs).emitWithAck(event, payload);
}
