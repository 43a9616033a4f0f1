/**
 * The event bus: features `emit` typed events; subscribers (webhook delivery, modules) react.
 *
 * NB! `emit` must run inside the caller's `db.tx` — the event row and whatever subscribers write (delivery
 * jobs) commit or roll back together with the change the event reports. Subscribers are synchronous for
 * that reason: they write rows, they never do I/O.
 */
import { sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { newId } from "../ids";
import { events } from "./events.table";

export interface DomainEvent {
  id: string;
  companyId: string;
  type: string;
  data: Record<string, unknown>;
  createdAt: Date;
}

export type EventSubscriber = (event: DomainEvent) => void;

export interface EventBus {
  emit(input: { companyId: string; type: string; data: Record<string, unknown> }): DomainEvent;
  subscribe(subscriber: EventSubscriber): () => void;
}

export function createEventBus({ db, now }: { db: Db; now: () => Date }): EventBus {
  const subscribers = new Set<EventSubscriber>();
  const insert = db
    .insert(events)
    .values({
      id: sqlPlaceholder("id"),
      companyId: sqlPlaceholder("companyId"),
      type: sqlPlaceholder("type"),
      data: sqlPlaceholder("data"),
      createdAt: sqlPlaceholder("createdAt"),
    })
    .prepare();
  return {
    emit({ companyId, type, data }) {
      const event: DomainEvent = { id: newId(), companyId, type, data, createdAt: now() };
      // Placeholders go through the columns' mappers (json → JSON.stringify, timestamp_ms → getTime()).
      insert.run({ ...event });
      for (const s of subscribers) s(event);
      return event;
    },
    subscribe(subscriber) {
      subscribers.add(subscriber);
      return () => subscribers.delete(subscriber);
    },
  };
}

const sqlPlaceholder = (name: string) => sql.placeholder(name) as never;
