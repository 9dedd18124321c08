/**
 * Gives every tool call of one streamed answer its own index, whatever the provider sends:
 * - OpenAI and most: `index` on every piece, `id` on the first;
 * - Ollama: a whole call without `index` (each one a new call, or a piece of the call with its id);
 * - Ollama with several calls: each `index: 0` with its own `id`: a new id at a used index is a
 *   new call, never a continuation (their arguments were merged into one broken call before).
 * A piece with neither index nor id continues the last call.
 */
export class ToolCallIndexer {
  private next = 0;
  private last = -1;
  private readonly byWire = new Map<number, number>();
  private readonly idAt = new Map<number, string>();
  private readonly byId = new Map<string, number>();

  get count() {
    return this.next;
  }

  indexOf(wireIndex: number | undefined | null, id: string | undefined | null): number {
    if (id && this.byId.has(id)) return (this.last = this.byId.get(id)!);
    if (typeof wireIndex === 'number') {
      const at = this.byWire.get(wireIndex);
      if (at !== undefined && (!id || !this.idAt.has(at))) {
        if (id) this.name(at, id);
        return (this.last = at);
      }
      const n = this.fresh(id);
      this.byWire.set(wireIndex, n);
      return n;
    }
    if (id || this.last < 0) return this.fresh(id);
    return this.last;
  }

  private fresh(id: string | undefined | null): number {
    const n = this.next++;
    if (id) this.name(n, id);
    return (this.last = n);
  }

  private name(at: number, id: string) {
    this.idAt.set(at, id);
    this.byId.set(id, at);
  }
}
