/**
 * The event bus: features `emit` typed events; subscribers (webhook delivery, modules) react.
 *
 * The bus itself stores nothing. Durability is the subscribers' business: webhook delivery writes the
 * message body and a fan-out job (the durable outbox) for each event an endpoint subscribes to. An event
 * nobody subscribes to leaves no trace.
 *
 * NB! `emit` must run inside the caller's `db.tx` — whatever subscribers write (webhook messages, delivery
 * jobs) commits or rolls back together with the change the event reports. Subscribers are synchronous for
 * that reason: they write rows, they never do I/O.
 */
import { newId } from "../ids";

export interface DomainEvent {
  id: string;
  companyId: string;
  type: string;
  data: Record<string, unknown>;
  createdAt: Date;
}

export type EventSubscriber = (event: DomainEvent) => void;

export interface EventBus {
  /** Calls every subscriber, in subscription order, with the event; returns it. */
  emit(input: { companyId: string; type: string; data: Record<string, unknown> }): DomainEvent;
  /** Returns the function that unsubscribes. */
  subscribe(subscriber: EventSubscriber): () => void;
}

export function createEventBus({ now }: { now: () => Date }): EventBus {
  const subscribers = new Set<EventSubscriber>();
  return {
    emit({ companyId, type, data }) {
      const event: DomainEvent = { id: newId(), companyId, type, data, createdAt: now() };
      for (const s of subscribers) s(event);
      return event;
    },
    subscribe(subscriber) {
      subscribers.add(subscriber);
      return () => subscribers.delete(subscriber);
    },
  };
}
