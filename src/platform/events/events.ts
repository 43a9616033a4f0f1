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

/**
 * The bus is generic over its map of event name → `data` payload type (the app's: EventMap in src/events.ts,
 * which sees the features' types; the platform knows none). An unknown name or a wrong payload does not
 * compile. Its names must be strings (they are the `type` of webhook messages).
 */
export type EventMapOf<M> = { [K in keyof M]: object };

/** Ids of what an event is about, for subscribers that decide from them alone (no payload built). */
export type EventRefs = Record<string, string | null>;

/** One event of type `T` whose payload is `D`. */
export interface EventOf<T extends string, D> {
  id: string;
  companyId: string;
  type: T;
  /**
   * The payload. NB! For an event whose payload is loaded asynchronously (a lazy loader that reads the
   * database), reading it before `payload()` has settled throws: await `payload()` instead.
   */
  data: D;
  /**
   * The payload, built on the first call (not enumerable). A lazy loader may read the database: call it inside
   * the emitting unit (a subscriber does), where it sees the change the event reports.
   */
  payload(): Promise<D>;
  /**
   * Ids of what the event is about (a message's status step: also `from`, the status it left), for subscribers
   * that decide from them alone (no payload built).
   */
  refs?: EventRefs;
  createdAt: Date;
}

/**
 * An event of `M` whose type is one of `K` (default: any): a union discriminated by `type`, so
 * `if (event.type === "x")` narrows `data` to x's payload.
 */
export type DomainEvent<M, K extends keyof M = keyof M> = { [T in K & string]: EventOf<T, M[T]> }[K & string];

/**
 * Called inside the emitter's transaction. A subscriber that awaits its stores returns a promise: the
 * emitter's unit of work does not commit before it has settled (`track`, db.track), and fails with it.
 */
export type EventSubscriber<M, K extends keyof M = keyof M> = (event: DomainEvent<M, K>) => void | Promise<void>;

/** What `emit` takes for an event of type `K`: `data` is its payload, or a loader of it. */
export type EmitInput<M, K extends keyof M & string> = {
  companyId: string;
  type: K;
  data: M[K] | (() => M[K] | Promise<M[K]>);
  refs?: EventRefs;
};

export interface EventBus<M> {
  /**
   * Calls every subscriber, in subscription order, with the event; returns it. `data` may be a function: it
   * is then called once, when a subscriber first asks for the payload (bulk writes skip building payloads that
   * no webhook endpoint wants). It may read the database, asynchronously: subscribers then `await
   * event.payload()` inside the emitting unit.
   */
  emit<K extends keyof M & string>(input: EmitInput<M, K>): DomainEvent<M, K>;
  /** Subscribes to every event (webhook delivery, recorders). Returns the function that unsubscribes. */
  subscribe(subscriber: EventSubscriber<M>): () => void;
  /**
   * Subscribes to the events of one type or of a few: the subscriber gets them with their payload's type,
   * and is called in subscription order among every subscriber. Returns the function that unsubscribes.
   */
  on<const K extends keyof M & string>(types: K | readonly K[], subscriber: EventSubscriber<M, NoInfer<K>>): () => void;
}

export function createEventBus<M extends EventMapOf<M>>({ now, track }: { now: () => Date; track?: (work: Promise<unknown>) => void }): EventBus<M> {
  // Inside the bus every payload is just an object: the map's types are checked at emit and at subscribe.
  type AnyEvent = EventOf<string, object>;
  type AnySubscriber = (event: AnyEvent) => void | Promise<void>;
  const subscribers = new Set<AnySubscriber>();
  const add = (subscriber: AnySubscriber) => {
    subscribers.add(subscriber);
    return () => void subscribers.delete(subscriber);
  };
  return {
    emit(input) {
      const { companyId, type, refs } = input;
      const data = input.data as object | (() => object | Promise<object>);
      // (`payload` is defined below, not enumerable)
      const event = { id: newId(), companyId, type, data, refs, createdAt: now() } as Omit<AnyEvent, "payload"> as AnyEvent;
      let payload: () => Promise<object>;
      if (typeof data === "function") {
        let value: object | undefined;
        let loading: Promise<object> | undefined;
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
      return event as unknown as DomainEvent<M, typeof type>;
    },
    subscribe(subscriber) {
      return add(subscriber as AnySubscriber);
    },
    on(types, subscriber) {
      const wanted = new Set<string>(typeof types === "string" ? [types] : types);
      const handle = subscriber as AnySubscriber;
      return add((event) => (wanted.has(event.type) ? handle(event) : undefined));
    },
  };
}

/**
 * What a catalogue of event types says of each (the app's: src/events.ts), served at GET /webhooks/event-types and
 * in the OpenAPI document's `webhooks` section.
 */
export interface EventTypeInfo {
  name: string;
  description: string;
  /** An example of the event's `data`. */
  example: Record<string, unknown>;
  /**
   * The JSON Schema of each key of `data` (all required), for the OpenAPI document's `webhooks` section. A
   * resource is named by `ref("Message")`: the schema its routes publish under `components/schemas`, so the
   * event and GET /messages/{id} cannot drift apart. NB! A name no route publishes leaves a dangling `$ref`,
   * which the OpenAPI tests (strict validator, Redocly) refuse.
   */
  data: Record<string, JsonSchema>;
}

type JsonSchema = Record<string, unknown>;
