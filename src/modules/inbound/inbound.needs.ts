/** What the inbound hooks need from the app: the messages module's needs (they apply what arrives) and the API key check. */
import type { Authenticate } from "../../platform/http/api-guard.plugin";
import type { MessagesNeeds } from "../messages/messages.needs";

export type InboundNeeds = MessagesNeeds & { authenticate: Authenticate };
