# Sourced by scripts/test (the nox queue sessions): a throwaway Redis server on 127.0.0.1.
# Sets PAYCHARGE_TEST_REDIS_CONF (its configuration: the tests read the port from it, and
# the broker-outage test stops and restarts the server with it); stop it with redis_stop.

ensure_redis_installed() {
  command -v redis-server >/dev/null 2>&1 && return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "Installing Redis from Debian's packages..." >&2
    apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null
  fi
  command -v redis-server >/dev/null 2>&1 || { echo "redis-server is not installed." >&2; return 1; }
}

redis_start() {
  ensure_redis_installed || return 1
  local port
  REDIS_DIR=$(mktemp -d /tmp/paycharge-redis.XXXXXX)
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  cat >"$REDIS_DIR/redis.conf" <<CONF
port $port
bind 127.0.0.1
dir $REDIS_DIR
daemonize yes
pidfile $REDIS_DIR/redis.pid
logfile $REDIS_DIR/redis.log
save ""
appendonly no
CONF
  redis-server "$REDIS_DIR/redis.conf"
  export PAYCHARGE_TEST_REDIS_CONF=$REDIS_DIR/redis.conf REDIS_DIR REDIS_PORT=$port
  echo "Redis running on 127.0.0.1:$port (in $REDIS_DIR)" >&2
}

redis_stop() {
  [ -n "${REDIS_DIR:-}" ] || return 0
  redis-cli -p "$REDIS_PORT" shutdown nosave >/dev/null 2>&1 || true
  rm -rf "$REDIS_DIR"
  REDIS_DIR=
}
