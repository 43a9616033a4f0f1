/** The contacts module of one app: the contacts and tags routes, and the import job. */
import type { ContactsNeeds } from "./contacts.needs";
import { registerImportJob } from "./contact-imports.service";
import { contactsRoutes } from "./contacts.routes";
import { tagsRoutes } from "./tags.routes";

export function createContactsModule(needs: ContactsNeeds) {
  return { routes: [contactsRoutes(needs), tagsRoutes(needs)], wire: () => registerImportJob(needs) };
}
