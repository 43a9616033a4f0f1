import { describe, expect, test } from "bun:test";
import { buildTemplateComponents, mapMetaTemplate } from "./whatsapp-cloud.templates";

describe("buildTemplateComponents", () => {
  test("header text params, numeric body order, copy_code and url buttons by their template index", () => {
    const components = buildTemplateComponents({
      components: [
        { type: "header", format: "text", text: "Order {{1}}" },
        { type: "body", text: "{{1}} {{2}}" },
        {
          type: "buttons",
          buttons: [
            { type: "copy_code", text: "Copy" },
            { type: "phone_number", text: "Call" },
            { type: "url", text: "Open", url: "https://x/{{1}}" },
          ],
        },
      ],
      params: { "header.1": "A1", "body.2": "b", "body.1": "a", "button.2.1": "path", "button.0.1": "SAVE10", unrelated: "x" },
    });
    expect(components).toEqual([
      { type: "header", parameters: [{ type: "text", text: "A1" }] },
      {
        type: "body",
        parameters: [
          { type: "text", text: "a" },
          { type: "text", text: "b" },
        ],
      },
      { type: "button", sub_type: "copy_code", index: "0", parameters: [{ type: "coupon_code", coupon_code: "SAVE10" }] },
      { type: "button", sub_type: "url", index: "2", parameters: [{ type: "text", text: "path" }] },
    ]);
  });

  test("header media by id goes first in the header parameters", () => {
    expect(buildTemplateComponents({ components: [], params: {}, headerMedia: { type: "video", ref: { id: "123" } } })).toEqual([
      { type: "header", parameters: [{ type: "video", video: { id: "123" } }] },
    ]);
  });
});

describe("mapMetaTemplate", () => {
  test("unknown status → skipped; IN_APPEAL → pending; LOCATION header keeps no format; OTP copy code → copy_code", () => {
    expect(mapMetaTemplate({ name: "x", language: "en", status: "SOMETHING_NEW" })).toBeUndefined();
    expect(mapMetaTemplate({ name: "x", language: "en", status: "IN_APPEAL" })?.status).toBe("pending");
    const mapped = mapMetaTemplate({
      name: "otp",
      language: "en_US",
      status: "APPROVED",
      category: "AUTHENTICATION",
      components: [
        { type: "HEADER", format: "LOCATION" },
        { type: "BODY", text: "*{{1}}* is your code." },
        { type: "BUTTONS", buttons: [{ type: "OTP", otp_type: "COPY_CODE", text: "Copy code" }] },
      ],
    });
    expect(mapped).toEqual({
      name: "otp",
      language: "en_US",
      category: "authentication",
      status: "approved",
      components: [
        { type: "header" },
        { type: "body", text: "*{{1}}* is your code." },
        { type: "buttons", buttons: [{ type: "copy_code", text: "Copy code" }] },
      ],
    });
  });
});
