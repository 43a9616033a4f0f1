/**
 * The app's maps at work: an unknown event or job type, or a wrong payload, does not compile. tsc runs over the
 * tests, so each `@ts-expect-error` below fails the type check the day the line it marks compiles.
 */
import { expect, test } from "bun:test";
import type { EventBus } from "./events";
import type { Queue } from "./jobs";

/** Compiled, never called. */
function uses(events: EventBus, queue: Queue) {
  events.emit({ companyId: "c", type: "contact.merged", data: { contactId: "a", mergedContactId: "b" } });
  // @ts-expect-error: no such event type
  events.emit({ companyId: "c", type: "contact.mergedd", data: { contactId: "a", mergedContactId: "b" } });
  // @ts-expect-error: a wrong payload
  events.emit({ companyId: "c", type: "contact.merged", data: { contactId: "a" } });
  // @ts-expect-error: a lazy payload is checked too
  events.emit({ companyId: "c", type: "contact.merged", data: async () => ({ contactId: "a" }) });

  // A subscriber gets the payload of the events it subscribed to, or narrows by type.
  events.on(["message.failed", "message.sent"], (e) => void e.data.message.error?.reason);
  // @ts-expect-error: a message event has no contact
  events.on("message.failed", (e) => void e.data.contact);
  // @ts-expect-error: no such event type
  events.on("message.lost", () => {});
  events.subscribe((e) => {
    if (e.type === "campaign.paused") void e.data.campaign.pauseReason;
    // @ts-expect-error: not narrowed: not every event has a campaign
    else void e.data.campaign;
  });

  void queue.enqueueJob({ type: "campaign.run", payload: { campaignId: "x" }, groupKey: "x" });
  // @ts-expect-error: no such job type
  void queue.enqueueJob({ type: "campaign.walk", payload: { campaignId: "x" } });
  // @ts-expect-error: a wrong payload
  void queue.enqueueJob({ type: "campaign.run", payload: { campaign: "x" } });
  queue.register("contacts.import", { inline: (job) => void job.payload.importId });
  // @ts-expect-error: a handler gets its type's payload
  queue.register("contacts.import", { inline: (job) => void job.payload.campaignId });
}

test("events and jobs are checked against EventMap and JobMap by the compiler (the @ts-expect-error lines above)", () => {
  expect(uses).toBeFunction();
});
