/**
 * A real IMAP server for tests: Debian's Dovecot (`dovecot-imapd`), started the way test/helpers/postgres.ts
 * starts PostgreSQL — a config in a temp dir, a free loopback port, one user in a passwd-file, plaintext
 * login allowed (loopback only, no TLS) — and stopped by `close()`. `append` delivers a message the way a
 * mail server does (`doveadm save`): stored with the next UID, and a client in IDLE is told by EXISTS.
 * (Until 0.2 this was hoodiecrow-imap, an in-memory server that is deprecated and unmaintained.)
 *
 * Without Dovecot, `imapAvailable()` is false and the IMAP tests skip, saying why (.ci/run installs it).
 * NB! As root (CI) the mailbox belongs to the package's `dovecot` user and logins run as `dovenull`, as in a
 * packaged install: Dovecot refuses mail access as UID 0. Otherwise everything runs as the current user.
 */
import { spawn, spawnSync } from "node:child_process";
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import { freePort } from "../helpers/postgres";

const DOVECOT = "/usr/sbin/dovecot";
const DOVEADM = "/usr/bin/doveadm";

export function imapAvailable(): boolean {
  return existsSync(DOVECOT) && existsSync(DOVEADM);
}

export const IMAP_SKIP_REASON = "no IMAP server: install Debian's dovecot-imapd package";

export interface ImapPeer {
  port: number;
  /** Stores a message in the mailbox (RFC 5322 source) and notifies clients. */
  append(raw: string, mailbox?: string): void;
  close(): Promise<void>;
}

const idOf = (flag: "-u" | "-g", user: string) => Number(spawnSync("id", [flag, user], { encoding: "utf8" }).stdout.trim());

export async function startImapPeer(opts: { user: string; password: string; messages?: string[]; mailbox?: string }): Promise<ImapPeer> {
  if (!imapAvailable()) throw new Error(IMAP_SKIP_REASON);
  const mailbox = opts.mailbox ?? "INBOX";
  const dir = mkdtempSync(join(tmpdir(), "sb-imap-"));
  chmodSync(dir, 0o755); // Dovecot's auth and mail processes (other users as root) read the passwd-file and homes here
  const asRoot = userInfo().uid === 0;
  const me = userInfo().username;
  const [mailUser, loginUser] = asRoot ? ["dovecot", "dovenull"] : [me, me];
  const uid = asRoot ? idOf("-u", mailUser) : userInfo().uid;
  const gid = asRoot ? idOf("-g", mailUser) : userInfo().gid;
  const home = join(dir, "home", opts.user);
  mkdirSync(home, { recursive: true });
  if (asRoot) for (const d of [join(dir, "home"), home]) chownSync(d, uid, gid);
  const port = await freePort();
  writeFileSync(join(dir, "passwd"), `${opts.user}:{PLAIN}${opts.password}::::\n`);
  const conf = join(dir, "dovecot.conf");
  writeFileSync(
    conf,
    `base_dir = ${dir}/run
state_dir = ${dir}/state
log_path = ${dir}/dovecot.log
protocols = imap
listen = 127.0.0.1
ssl = no
disable_plaintext_auth = no
auth_mechanisms = plain login
auth_failure_delay = 0
default_internal_user = ${mailUser}
default_internal_group = ${asRoot ? mailUser : userInfo().username}
default_login_user = ${loginUser}
first_valid_uid = 1
first_valid_gid = 1
mail_location = maildir:~/Maildir
mailbox_idle_check_interval = 1 secs
passdb {
  driver = passwd-file
  args = scheme=PLAIN username_format=%u ${dir}/passwd
}
userdb {
  driver = static
  args = uid=${uid} gid=${gid} home=${dir}/home/%u
}
service imap-login {
  chroot =
  inet_listener imap {
    address = 127.0.0.1
    port = ${port}
  }
  inet_listener imaps {
    port = 0
  }
}
service anvil {
  chroot =
}
`,
  );
  const child = spawn(DOVECOT, ["-F", "-c", conf], { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr!.on("data", (b) => (stderr += b));
  const log = () => {
    try {
      return readFileSync(join(dir, "dovecot.log"), "utf8");
    } catch {
      return "";
    }
  };
  const stop = () => {
    try {
      child.kill("SIGTERM");
    } catch {}
  };
  const close = async () => {
    stop();
    for (let i = 0; i < 100 && child.exitCode === null && child.signalCode === null; i++) await Bun.sleep(20);
    rmSync(dir, { recursive: true, force: true });
  };
  const append = (raw: string, box = mailbox) => {
    const r = spawnSync(DOVEADM, ["-c", conf, "save", "-u", opts.user, "-m", box], { input: raw, encoding: "utf8" });
    if (r.status !== 0) throw new Error(`doveadm save failed: ${r.stderr}${log()}`);
  };

  for (let i = 0; ; i++) {
    if (child.exitCode !== null) {
      const why = `dovecot exited: ${stderr}${log()}`;
      rmSync(dir, { recursive: true, force: true });
      throw new Error(why);
    }
    const up = await Bun.connect({ hostname: "127.0.0.1", port, socket: { data() {} } }).then(
      (s) => (s.end(), true),
      () => false,
    );
    if (up) break;
    if (i > 200) {
      const why = `dovecot did not start: ${stderr}${log()}`;
      await close();
      throw new Error(why);
    }
    await Bun.sleep(25);
  }
  try {
    for (const raw of opts.messages ?? []) append(raw);
  } catch (e) {
    await close();
    throw e;
  }
  return { port, append, close };
}
