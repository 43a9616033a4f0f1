#!/bin/sh
# Installs Switchboard as a systemd service; idempotent (run it again to upgrade the binary).
#   sudo deploy/install.sh [--binary PATH] [--uninstall]
# ROOT=/some/dir installs under that prefix instead of / (tests; nothing is enabled or started there unless
# systemctl is on PATH). Uninstall keeps the data and the config (remove /var/lib/switchboard and
# /etc/switchboard yourself once you have a backup).
set -eu

ROOT="${ROOT:-}"
BINARY="dist/switchboard"
ACTION=install
while [ $# -gt 0 ]; do
  case "$1" in
    --binary) BINARY="$2"; shift 2 ;;
    --uninstall) ACTION=uninstall; shift ;;
    -h|--help) sed -n '2,7p' "$0"; exit 0 ;;
    *) echo "install.sh: unknown option $1" >&2; exit 1 ;;
  esac
done

HERE="$(cd "$(dirname "$0")" && pwd)"
BIN_DIR="$ROOT/usr/local/bin"
ETC_DIR="$ROOT/etc/switchboard"
DATA_DIR="$ROOT/var/lib/switchboard"
UNIT_DIR="$ROOT/etc/systemd/system"
DOC_DIR="$ROOT/usr/local/share/doc/switchboard"
have() { command -v "$1" >/dev/null 2>&1; }

if [ "$ACTION" = uninstall ]; then
  if have systemctl; then systemctl disable --now switchboard.service 2>/dev/null || true; fi
  rm -f "$UNIT_DIR/switchboard.service" "$BIN_DIR/switchboard"
  rm -rf "$DOC_DIR"
  if have systemctl; then systemctl daemon-reload || true; fi
  echo "Switchboard removed; data kept in $DATA_DIR, config in $ETC_DIR"
  exit 0
fi

[ -x "$BINARY" ] || { echo "install.sh: no executable at $BINARY (run make build, or pass --binary)" >&2; exit 1; }

# The service user (no login, no home).
if [ -z "$ROOT" ] || have useradd; then
  if ! id switchboard >/dev/null 2>&1; then
    useradd --system --user-group --no-create-home --home-dir /var/lib/switchboard --shell /usr/sbin/nologin switchboard
  fi
fi

mkdir -p "$BIN_DIR" "$UNIT_DIR" "$DOC_DIR"
# The config (provider credentials) and the data (database with webhook secrets, the media link secret and
# contacts' personal data; media; backups) are never readable by other users: directories 0750, files 0640.
# NB! umask first, so nothing is world-readable even for a moment (init's database, the copies below).
umask 027
mkdir -p "$ETC_DIR" "$DATA_DIR"
# Replace the binary atomically: a running service keeps its old inode until the restart.
cp "$BINARY" "$BIN_DIR/switchboard.new"
chmod 0755 "$BIN_DIR/switchboard.new"
mv -f "$BIN_DIR/switchboard.new" "$BIN_DIR/switchboard"
install -m 0644 "$HERE/switchboard.service" "$UNIT_DIR/switchboard.service"
[ -f "$HERE/../docs/operations.md" ] && install -m 0644 "$HERE/../docs/operations.md" "$DOC_DIR/operations.md"

# A config on first install only (never overwritten): sandbox channels, data in the state directory.
if [ ! -f "$ETC_DIR/config.toml" ]; then
  "$BIN_DIR/switchboard" init --dir "$ETC_DIR"
  sed -i 's#^data_dir = .*#data_dir = "/var/lib/switchboard"#' "$ETC_DIR/config.toml"
  # init created ./data beside the config: move what it made (the company, the key) to the state directory.
  if [ -d "$ETC_DIR/data" ]; then
    cp -a "$ETC_DIR/data/." "$DATA_DIR/"
    rm -rf "$ETC_DIR/data"
  fi
fi
# Every run, so an install made before these modes (0755 data, 0644 database) is tightened by the upgrade.
chmod 0750 "$ETC_DIR" "$DATA_DIR"
chmod 0640 "$ETC_DIR/config.toml"
chmod -R g-w,o-rwx "$DATA_DIR"
find "$DATA_DIR" -type d -exec chmod 0750 {} +
if id switchboard >/dev/null 2>&1; then
  # Data: the service user's. Config: root's, readable by the service's group (the service cannot rewrite it).
  chown -R switchboard:switchboard "$DATA_DIR"
  chgrp switchboard "$ETC_DIR" "$ETC_DIR/config.toml"
fi

if have systemctl; then
  systemctl daemon-reload
  systemctl enable switchboard.service
  systemctl restart switchboard.service
fi
echo "Switchboard installed: $BIN_DIR/switchboard, config $ETC_DIR/config.toml, data $DATA_DIR"
echo "It listens on 127.0.0.1:8080 only. To open it to the network, put it behind TLS: [server] tls_cert_file and"
echo "tls_key_file, or a reverse proxy (operations.md, \"Opening it to the network\"). /metrics needs [metrics] token."
