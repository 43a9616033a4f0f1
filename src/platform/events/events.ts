/**
 * The event bus: features `emit` typed events; subscribers (webhook delivery, modules) react.
 *
 * The bus itself stores nothing. Durability is the subscribers' business: webhook delivery writes the
 * message body and a fan-out job (the durable outbox) for each event an endpoint subscribes to. An event
 * nobody subscribes to leaves no trace.
 *
 * NB! `emit` must run inside the caller's unit of work (db.unit) — whatever subscribers write (webhook
 * messages, delivery jobs) commits or rolls back together with the change the event reports. Subscribers
 * write rows, they never do network I/O; one that awaits its stores returns a promise, which the unit
 * waits for (db.track). NB! A synchronous transaction (db.tx, still used by a few emitters) refuses such a
 * promise: the webhook subscriber stays synchronous until none is left.
 */
import { newId } from "../ids";

export interface DomainEvent {
  id: string;
  companyId: string;
  type: string;
  /**
   * The payload. NB! For an event whose payload is loaded asynchronously (a lazy loader that reads the
   * database), reading it before `payload()` has settled throws: await `payload()` instead.
   */
  data: Record<string, unknown>;
  /**
   * The payload, built on the first call (not enumerable). A lazy loader may read the database: call it inside
   * the emitting unit (a subscriber does), where it sees the change the event reports.
   */
  payload(): Promise<Record<string, unknown>>;
  /**
   * Ids of what the event is about (a message's status step: also `from`, the status it left), for subscribers
   * that decide from them alone (no payload built).
   */
  refs?: Record<string, string | null>;
  createdAt: Date;
}

/**
 * Called inside the emitter's transaction. A subscriber that awaits its stores returns a promise: the
 * emitter's unit of work does not commit before it has settled (`track`, db.track), and fails with it.
 */
export type EventSubscriber = (event: DomainEvent) => void | Promise<void>;

export interface EventBus {
  /**
   * Calls every subscriber, in subscription order, with the event; returns it. `data` may be a function: it
   * is then called once, when a subscriber first asks for the payload (bulk writes skip building payloads that
   * no webhook endpoint wants). It may read the database, asynchronously: subscribers then `await
   * event.payload()` inside the emitting unit.
   */
  emit(input: {
    companyId: string;
    type: string;
    data: Record<string, unknown> | (() => Record<string, unknown> | Promise<Record<string, unknown>>);
    refs?: Record<string, string | null>;
  }): DomainEvent;
  /** Returns the function that unsubscribes. */
  subscribe(subscriber: EventSubscriber): () => void;
}

export function createEventBus({ now, track }: { now: () => Date; track?: (work: Promise<unknown>) => void }): EventBus {
  const subscribers = new Set<EventSubscriber>();
  return {
    emit({ companyId, type, data, refs }) {
      const event = { id: newId(), companyId, type, data, refs, createdAt: now() } as DomainEvent;
      let payload: () => Promise<Record<string, unknown>>;
      if (typeof data === "function") {
        let value: Record<string, unknown> | undefined;
        let loading: Promise<Record<string, unknown>> | undefined;
        const start = () => {
          if (value !== undefined || loading !== undefined) return;
          const v = data();
          if (!(v instanceof Promise)) value = v;
          else {
            loading = v.then((x) => (value = x));
            loading.catch(() => {}); // its awaiters see the error
          }
        };
        Object.defineProperty(event, "data", {
          enumerable: true,
          get: () => {
            start();
            if (value !== undefined) return value;
            throw new Error(`${type}: the payload is loaded asynchronously: await event.payload()`);
          },
        });
        payload = () => (start(), value !== undefined ? Promise.resolve(value) : loading!);
      } else payload = () => Promise.resolve(data);
      Object.defineProperty(event, "payload", { enumerable: false, value: payload });
      for (const s of subscribers) {
        const work = s(event);
        if (work instanceof Promise) {
          if (!track) throw new Error("an asynchronous event subscriber needs the bus's track (db.track)");
          track(work);
        }
      }
      return event;
    },
    subscribe(subscriber) {
      subscribers.add(subscriber);
      return () => subscribers.delete(subscriber);
    },
  };
}
