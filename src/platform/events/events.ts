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

/** The smallest UUID v7 of a moment: every id below it was made earlier (ids sort by time). */
export function uuidV7Floor(at: Date): string {
  const hex = Math.max(0, at.getTime()).toString(16).padStart(12, "0");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-7000-8000-000000000000`;
}

/** Deletes outbox events older than `before` (kept 30 days by the daily schedule); returns how many. */
export function sweepEvents(db: Db, before: Date): number {
  return db.$client.query("DELETE FROM events WHERE id < ?").run(uuidV7Floor(before)).changes;
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
