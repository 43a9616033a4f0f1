/**
 * Holds a unit of work part-way: replaces the async method `name` of `target` (a store) so that the next calls
 * stop at a gate — `before` the original runs or `after` it resolved (the unit holds what it took so far).
 * `atGate` resolves when a call reached it; `open()` lets every held call go on; `restore()` puts the original
 * back (and opens the gate). For races of units side by side (PostgreSQL), e.g. a merge or a send held before it
 * commits while another request starts.
 */
export function holdAt<T extends object, K extends keyof T>(target: T, name: K, when: "before" | "after") {
  const original = target[name] as unknown as (...args: unknown[]) => Promise<unknown>;
  let reached!: () => void;
  const atGate = new Promise<void>((r) => (reached = r));
  let open!: () => void;
  const gate = new Promise<void>((r) => (open = r));
  (target as Record<K, unknown>)[name] = async (...args: unknown[]) => {
    if (when === "before") {
      reached();
      await gate;
      return await original.apply(target, args);
    }
    const out = await original.apply(target, args);
    reached();
    await gate;
    return out;
  };
  const restore = () => {
    (target as Record<K, unknown>)[name] = original as T[K];
    open();
  };
  return { atGate, open, restore };
}
