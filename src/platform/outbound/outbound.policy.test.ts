import { describe, expect, test } from "bun:test";
import { classifyAddress, createOutboundPolicy, DEFAULT_OUTBOUND } from "./outbound.policy";

describe("classifyAddress", () => {
  test.each([
    ["127.0.0.1", "loopback"],
    ["127.9.9.9", "loopback"],
    ["::1", "loopback"],
    ["::ffff:127.0.0.1", "loopback"],
    ["::127.0.0.1", "loopback"],
    ["64:ff9b::7f00:1", "loopback"], // NAT64 of 127.0.0.1
    ["2002:7f00:1::", "loopback"], // 6to4 of 127.0.0.1
    ["169.254.169.254", "link-local"],
    ["::ffff:169.254.169.254", "link-local"],
    ["64:ff9b::a9fe:a9fe", "link-local"],
    ["fe80::1", "link-local"],
    ["0.0.0.0", "unspecified"],
    ["0.1.2.3", "unspecified"],
    ["::", "unspecified"],
    ["224.0.0.1", "multicast"],
    ["ff02::1", "multicast"],
    ["255.255.255.255", "broadcast"],
    ["100.100.100.200", "metadata"],
    ["fd00:ec2::254", "metadata"],
    ["10.1.2.3", "private"],
    ["172.16.0.1", "private"],
    ["192.168.1.1", "private"],
    ["::ffff:10.0.0.1", "private"],
    ["100.64.0.1", "private"],
    ["fd12:3456::1", "private"],
    ["93.184.216.34", "public"],
    ["2606:2800:220:1::1", "public"],
  ])("%s is %s", (ip, kind) => {
    expect(classifyAddress(ip)).toBe(kind as never);
  });
});

describe("createOutboundPolicy", () => {
  const p = createOutboundPolicy(DEFAULT_OUTBOUND);

  test.each([
    ["file:///etc/passwd", "must use http or https"],
    ["data:text/plain,hi", "must use http or https"],
    ["ftp://example.com/a.png", "must use http or https"],
    ["not a url", "must be an absolute http or https URL"],
    ["http://127.0.0.1/a.png", "loopback"],
    ["http://2130706433/a.png", "loopback"], // the URL parser reads it as 127.0.0.1
    ["http://localhost:8080/a.png", "loopback"],
    ["http://a.localhost/a.png", "loopback"],
    ["http://[::1]/a.png", "loopback"],
    ["http://169.254.169.254/latest/meta-data/", "link-local"],
    ["http://[::ffff:169.254.169.254]/", "link-local"],
    ["http://metadata.google.internal/computeMetadata/v1/", "metadata"],
    ["http://METADATA.google.internal./", "metadata"],
    ["http://metadata/", "metadata"],
    ["http://instance-data/latest/", "metadata"],
    ["http://0.0.0.0:8080/", "unspecified"],
  ])("static check refuses %s", (url, why) => {
    expect(p.staticProblem(url)).toContain(why);
  });

  test.each(["https://cdn.example.com/a.png", "http://10.0.0.5/a.png", "http://[fd00::5]/a.png", "http://93.184.216.34/a.png"])(
    "static check allows %s",
    (url) => {
      expect(p.staticProblem(url)).toBeNull();
    },
  );

  test("allow_private_networks = false refuses private ranges; deny refuses; allow overrides both and the always-refused classes", () => {
    const strict = createOutboundPolicy({ allow_private_networks: false, deny: ["93.184.216.0/24"], allow: ["127.0.0.0/8", "10.9.0.0/16"] });
    expect(strict.addressProblem("10.0.0.5")).toContain("allow_private_networks = false");
    expect(strict.addressProblem("100.64.1.1")).toContain("private");
    expect(strict.addressProblem("fd00::5")).toContain("private");
    expect(strict.addressProblem("93.184.216.34")).toContain("deny");
    expect(strict.addressProblem("::ffff:93.184.216.34")).toContain("deny");
    expect(strict.addressProblem("10.9.1.1")).toBeNull();
    expect(strict.addressProblem("127.0.0.1")).toBeNull();
    expect(strict.addressProblem("::ffff:127.0.0.1")).toBeNull();
    expect(strict.addressProblem("169.254.169.254")).toContain("link-local");
    expect(strict.addressProblem("8.8.8.8")).toBeNull();
    // a metadata name stays refused even when its address is allowed
    expect(createOutboundPolicy({ ...DEFAULT_OUTBOUND, allow: ["169.254.0.0/16"] }).staticProblem("http://metadata.google.internal/")).toContain("metadata");
  });

  test("a bad CIDR is a config error naming the key", () => {
    expect(() => createOutboundPolicy({ ...DEFAULT_OUTBOUND, allow: ["10.0.0.0/33"] })).toThrow('[outbound] allow: "10.0.0.0/33"');
    expect(() => createOutboundPolicy({ ...DEFAULT_OUTBOUND, deny: ["intranet"] })).toThrow("[outbound] deny");
  });
});
