#!/usr/bin/env bash
# Single-node Apache Kafka 4.x (KRaft, combined broker + controller) for tests, built from the
# Maven Central jars: no Docker, no download site. See README.md in this folder.
#
#   broker.sh start    fetch jars if needed, wipe the run dir, format, start, wait until usable
#   broker.sh stop     SIGTERM the broker started from this run dir (SIGKILL after a timeout)
#   broker.sh status   exit 0 if that broker is running, 1 if not
#   broker.sh restart  stop and start again on the same data (for reconnection tests)
#   broker.sh run-dir  print the run dir the other commands use (KAFKA_RUN_DIR or the default)
#   broker.sh clean    remove the run dir of a stopped broker (start wipes it anyway), 13-16 MB
#
# On success `start` prints KEY=value lines (also written to $KAFKA_RUN_DIR/env) that a test
# harness can source.
#
# The default run dir belongs to this checkout: ${TMPDIR:-/tmp}/watermark-connect-kafka-<hash>,
# <hash> the first 8 hex digits of the SHA-256 of the checkout's absolute path (symlinks
# resolved), so that `make broker-start` / `broker-stop` of one checkout never restart or stop
# another checkout's broker (the ports are still shared: a second broker needs its own ports).
# Everything the broker's JVM writes stays in the run dir: java.io.tmpdir is <run dir>/tmp (the
# snappy native library is extracted there, and survives a kill -9 only there) and the JVM's
# perf data file (/tmp/hsperfdata_<user>/<pid>, which a kill -9 leaves behind) is turned off.
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# CI may run with a bare environment; the jar cache and ~/.m2 both hang off HOME.
: "${HOME:=$(getent passwd "$(id -u)" | cut -d: -f6)}"
export HOME

KAFKA_VERSION=${KAFKA_VERSION:-4.3.1}
KAFKA_HOME_DIR=${KAFKA_HOME_DIR:-$HOME/.cache/watermark-connect/kafka-$KAFKA_VERSION}
# The checkout this script is part of (resources/kafka/ under it).
CHECKOUT_DIR=$(cd "$SCRIPT_DIR/../.." && pwd -P)
TMP_ROOT=${TMPDIR:-/tmp}
TMP_ROOT=${TMP_ROOT%/}
checkout_hash() { printf '%s' "$CHECKOUT_DIR" | sha256sum | cut -c1-8; }
KAFKA_RUN_DIR=${KAFKA_RUN_DIR:-$TMP_ROOT/watermark-connect-kafka-$(checkout_hash)}
KAFKA_PORT=${KAFKA_PORT:-19092}
KAFKA_CONTROLLER_PORT=${KAFKA_CONTROLLER_PORT:-19093}
KAFKA_SASL_SSL_PORT=${KAFKA_SASL_SSL_PORT:-19094}
KAFKA_SCRAM_USER=${KAFKA_SCRAM_USER:-wmtest}
KAFKA_SCRAM_PASSWORD=${KAFKA_SCRAM_PASSWORD:-wmtest-secret}
# Off by default: tests create exactly the topics (and partition counts) they need, and a
# subscriber typo fails instead of silently creating a 1-partition topic.
KAFKA_AUTO_CREATE_TOPICS=${KAFKA_AUTO_CREATE_TOPICS:-false}
KAFKA_START_TIMEOUT=${KAFKA_START_TIMEOUT:-90}
KAFKA_STOP_TIMEOUT=${KAFKA_STOP_TIMEOUT:-20}
KAFKA_HEAP_OPTS=${KAFKA_HEAP_OPTS:--Xms512m -Xmx512m}

JAVA=${JAVA_HOME:+$JAVA_HOME/bin/}java
LIBS_DIR=$KAFKA_HOME_DIR/libs
STAMP_FILE=$LIBS_DIR/.complete
TLS_DIR=$KAFKA_RUN_DIR/tls
DATA_DIR=$KAFKA_RUN_DIR/data
LOG_DIR=$KAFKA_RUN_DIR/logs
PID_FILE=$KAFKA_RUN_DIR/broker.pid
ENV_FILE=$KAFKA_RUN_DIR/env
PROPS_FILE=$KAFKA_RUN_DIR/server.properties
PROBE=$KAFKA_RUN_DIR/bin/probe
# The JVMs' java.io.tmpdir: snappy-java extracts its native library there on every start.
JVM_TMP_DIR=$KAFKA_RUN_DIR/tmp
# Flags of every JVM this script runs: nothing of theirs outside the run dir. -XX:-UsePerfData
# drops the hsperfdata file, which HotSpot always puts in /tmp whatever java.io.tmpdir says.
JVM_FLAGS=(-XX:-UsePerfData "-Djava.io.tmpdir=$JVM_TMP_DIR")
# Only a directory carrying this marker is ever wiped, so a mistyped KAFKA_RUN_DIR can't eat data.
MARKER=$KAFKA_RUN_DIR/.watermark-connect-kafka-run-dir
# The keystore only protects a throw-away key; Kafka insists on a password for PKCS12.
KEYSTORE_PASSWORD=wmtest-keystore

log() { printf 'broker.sh: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# The pid from the pid file, only if it is still *our* broker: a recycled pid must never be
# signalled, and a zombie (empty cmdline) counts as gone.
broker_pid() {
    local pid
    [[ -f $PID_FILE ]] || return 1
    pid=$(<"$PID_FILE")
    [[ $pid =~ ^[0-9]+$ ]] || return 1
    tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" | grep -qF "kafka.Kafka $PROPS_FILE" || return 1
    echo "$pid"
}

# Loopback refuses at once when nothing listens, so no timeout is needed.
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

check_settings() {
    [[ $KAFKA_RUN_DIR == /* ]] || die "KAFKA_RUN_DIR must be absolute: $KAFKA_RUN_DIR"
    case ${KAFKA_RUN_DIR%/} in
        "" | /tmp | /var/tmp | "$TMP_ROOT" | "$HOME" | /root | /home | /var | /usr) die "refusing KAFKA_RUN_DIR=$KAFKA_RUN_DIR" ;;
    esac
    local p
    for p in "$KAFKA_PORT" "$KAFKA_CONTROLLER_PORT" "$KAFKA_SASL_SSL_PORT"; do
        [[ $p =~ ^[0-9]+$ ]] || die "ports must be numbers, got '$p'"
    done
    [[ $KAFKA_AUTO_CREATE_TOPICS == true || $KAFKA_AUTO_CREATE_TOPICS == false ]] ||
        die "KAFKA_AUTO_CREATE_TOPICS must be true or false"
    # --add-scram parses name=...,password="..." itself; these would break its quoting.
    [[ $KAFKA_SCRAM_USER =~ ^[A-Za-z0-9._-]+$ ]] || die "KAFKA_SCRAM_USER: use [A-Za-z0-9._-] only"
    [[ $KAFKA_SCRAM_PASSWORD != *[\"\\]* && -n $KAFKA_SCRAM_PASSWORD ]] ||
        die "KAFKA_SCRAM_PASSWORD must be non-empty without \" or \\"
}

check_tools() {
    local t
    for t in "$JAVA" mvn go openssl; do
        command -v "$t" >/dev/null || die "$t not found on PATH"
    done
    local major
    major=$("$JAVA" -XX:-UsePerfData -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = //p')
    [[ ${major:-0} =~ ^[0-9]+$ && $major -ge 17 ]] || die "Kafka 4 needs Java 17+, found '${major:-?}'"
}

# The broker's runtime closure from Maven Central. Keyed on the version and the pom's content so
# a pom edit refetches; built in a temp dir and renamed so an interrupted fetch leaves nothing
# that looks complete.
fetch_jars() {
    local want have=
    want="$KAFKA_VERSION $(sha256sum "$SCRIPT_DIR/pom.xml" | cut -d' ' -f1)"
    [[ -f $STAMP_FILE ]] && have=$(<"$STAMP_FILE")
    if [[ $have == "$want" ]]; then
        return 0
    fi
    log "fetching Kafka $KAFKA_VERSION jars into $LIBS_DIR (Maven Central)"
    mkdir -p "$KAFKA_HOME_DIR"
    local tmp="$KAFKA_HOME_DIR/libs.tmp.$$" started=$SECONDS
    rm -rf "$tmp"
    MAVEN_OPTS="${MAVEN_OPTS:+$MAVEN_OPTS }-XX:-UsePerfData" mvn -q -B -Dstyle.color=never -f "$SCRIPT_DIR/pom.xml" -Dkafka.version="$KAFKA_VERSION" \
        org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies \
        -DincludeScope=runtime -DoutputDirectory="$tmp" >"$KAFKA_HOME_DIR/fetch.log" 2>&1 ||
        { cat "$KAFKA_HOME_DIR/fetch.log" >&2; rm -rf "$tmp"; die "maven could not fetch Kafka $KAFKA_VERSION"; }
    [[ -f $tmp/kafka_2.13-$KAFKA_VERSION.jar ]] || { rm -rf "$tmp"; die "kafka_2.13-$KAFKA_VERSION.jar missing after fetch"; }
    echo "$want" >"$tmp/.complete"
    rm -rf "$LIBS_DIR"
    mv "$tmp" "$LIBS_DIR"
    log "fetched $(find "$LIBS_DIR" -name '*.jar' | wc -l) jars in $((SECONDS - started)) s"
}

# A CA the tests trust, a server certificate for 127.0.0.1 signed by it, and a second unrelated
# CA for negative tests. EC P-256 because it is generated in milliseconds.
make_tls() {
    mkdir -p "$TLS_DIR"
    (
        cd "$TLS_DIR"
        local ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
        for ca in ca untrusted-ca; do
            openssl req -x509 "${ec[@]}" -keyout "$ca.key" -out "$ca.pem" -days 3650 \
                -subj "/CN=watermark-connect test $ca" \
                -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"
        done
        openssl req -new "${ec[@]}" -keyout server.key -out server.csr -subj "/CN=127.0.0.1"
        printf '%s\n' "subjectAltName=IP:127.0.0.1,DNS:localhost" "basicConstraints=critical,CA:FALSE" \
            "keyUsage=critical,digitalSignature" "extendedKeyUsage=serverAuth" >server.ext
        openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -set_serial "0x$(openssl rand -hex 8)" \
            -days 825 -extfile server.ext -out server.pem
        openssl pkcs12 -export -in server.pem -inkey server.key -certfile ca.pem -name broker \
            -out server.p12 -passout "pass:$KEYSTORE_PASSWORD"
    ) >"$LOG_DIR/tls.log" 2>&1 || { cat "$LOG_DIR/tls.log" >&2; die "could not create TLS material"; }
}

write_config() {
    sed -e "s|@KAFKA_PORT@|$KAFKA_PORT|g" \
        -e "s|@KAFKA_CONTROLLER_PORT@|$KAFKA_CONTROLLER_PORT|g" \
        -e "s|@KAFKA_SASL_SSL_PORT@|$KAFKA_SASL_SSL_PORT|g" \
        -e "s|@KAFKA_DATA_DIR@|$DATA_DIR|g" \
        -e "s|@KAFKA_TLS_DIR@|$TLS_DIR|g" \
        -e "s|@KAFKA_KEYSTORE_PASSWORD@|$KEYSTORE_PASSWORD|g" \
        -e "s|@KAFKA_AUTO_CREATE_TOPICS@|$KAFKA_AUTO_CREATE_TOPICS|g" \
        "$SCRIPT_DIR/server.properties.template" >"$PROPS_FILE"
    if grep -n '^[^#]*@[A-Z_]*@' "$PROPS_FILE" >&2; then die "unsubstituted placeholder in $PROPS_FILE"; fi
}

# Format with the storage tool that ships inside kafka_2.13 (kafka-tools is not fetched). SCRAM
# users go straight into the bootstrap metadata, so they exist before any listener opens.
format_storage() {
    local cluster_id
    # A cluster id is a base64url UUID (22 chars); a random one avoids a JVM run of `random-uuid`.
    # One that begins with '-' would be read by the storage tool as an option
    # (1 start in 64 failed so): draw again until it does not.
    cluster_id=-
    while [[ $cluster_id == -* ]]; do
        cluster_id=$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=')
    done
    local cred="name=$KAFKA_SCRAM_USER,password=\"$KAFKA_SCRAM_PASSWORD\""
    "$JAVA" "${JVM_FLAGS[@]}" -cp "$LIBS_DIR/*" kafka.tools.StorageTool format -t "$cluster_id" -c "$PROPS_FILE" \
        --add-scram "SCRAM-SHA-256=[$cred]" --add-scram "SCRAM-SHA-512=[$cred]" \
        >"$LOG_DIR/format.log" 2>&1 || { cat "$LOG_DIR/format.log" >&2; die "storage format failed"; }
}

# KEY=value lines readable by `source`, Go, Make and CI alike: values are bare unless they hold
# characters a shell would interpret, then single-quoted.
write_env() {
    local kv=(
        KAFKA_BROKERS "127.0.0.1:$KAFKA_PORT"
        KAFKA_SASL_SSL_BROKERS "127.0.0.1:$KAFKA_SASL_SSL_PORT"
        KAFKA_TLS_CA "$TLS_DIR/ca.pem"
        KAFKA_TLS_UNTRUSTED_CA "$TLS_DIR/untrusted-ca.pem"
        KAFKA_SCRAM_USER "$KAFKA_SCRAM_USER"
        KAFKA_SCRAM_PASSWORD "$KAFKA_SCRAM_PASSWORD"
        KAFKA_SCRAM_MECHANISMS "SCRAM-SHA-256,SCRAM-SHA-512"
        KAFKA_AUTO_CREATE_TOPICS "$KAFKA_AUTO_CREATE_TOPICS"
        KAFKA_VERSION "$KAFKA_VERSION"
        KAFKA_RUN_DIR "$KAFKA_RUN_DIR"
        KAFKA_SERVER_LOG "$LOG_DIR/server.log"
    )
    local i v
    for ((i = 0; i < ${#kv[@]}; i += 2)); do
        v=${kv[i + 1]}
        [[ $v =~ ^[A-Za-z0-9_./:,@+=-]*$ ]] || v="'${v//\'/\'\\\'\'}'"
        printf '%s=%s\n' "${kv[i]}" "$v"
    done >"$ENV_FILE"
}

# Signal the broker and wait for it to go; SIGKILL only when it won't.
terminate() {
    local pid=$1 waited=0
    kill -TERM "$pid" 2>/dev/null || true
    while broker_pid >/dev/null && ((waited < KAFKA_STOP_TIMEOUT * 10)); do
        sleep 0.1
        waited=$((waited + 1))
    done
    if broker_pid >/dev/null; then
        log "broker (pid $pid) ignored SIGTERM for ${KAFKA_STOP_TIMEOUT}s, sending SIGKILL"
        kill -KILL "$pid" 2>/dev/null || true
        while broker_pid >/dev/null; do sleep 0.1; done
    fi
}

STARTED_PID=
# Whether the process launched by launch_and_wait still runs. Not broker_pid: until nohup and java
# have exec'd, the child's cmdline is still this script's, and during an exec it reads empty, so
# broker_pid says "gone" for a moment after the launch (seen: about 1 check in 7 right after it,
# which failed a start). The process state has no such gap; a zombie (Z) has exited.
started_alive() {
    local stat
    [[ -n $STARTED_PID ]] && read -r stat 2>/dev/null <"/proc/$STARTED_PID/stat" || return 1
    stat=${stat##*) }
    [[ ${stat%% *} != [ZX] ]]
}
# Any failure after launch (timeout, probe error, Ctrl-C, set -e) must not leave a half-started
# broker behind, and must show why it failed.
abort_start() {
    local rc=$?
    trap - EXIT INT TERM
    if [[ -n $STARTED_PID ]]; then
        log "start failed; last 50 lines of $LOG_DIR/server.log:"
        tail -n 50 "$LOG_DIR/server.log" >&2 2>/dev/null || true
        if [[ -s $LOG_DIR/broker.out ]]; then
            log "last 50 lines of $LOG_DIR/broker.out (JVM stdout/stderr):"
            tail -n 50 "$LOG_DIR/broker.out" >&2
        fi
        terminate "$STARTED_PID"
        rm -f "$PID_FILE"
    fi
    exit $((rc == 0 ? 1 : rc))
}

# Launch the broker on the prepared run dir and wait until it serves both listeners. $1 is the
# pid of a probe build to wait for, or empty.
launch_and_wait() {
    local build_pid=$1
    trap abort_start EXIT INT TERM
    mkdir -p "$JVM_TMP_DIR"
    # stdin from /dev/null and output to a file: the broker must not hold the caller's pipes open.
    # shellcheck disable=SC2086 # KAFKA_HEAP_OPTS is a list of JVM flags
    nohup "$JAVA" $KAFKA_HEAP_OPTS "${JVM_FLAGS[@]}" -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:+ExitOnOutOfMemoryError \
        -Djava.awt.headless=true \
        -Dlog4j2.configurationFile="$SCRIPT_DIR/log4j2.yaml" -Dkafka.logs.dir="$LOG_DIR" \
        -cp "$LIBS_DIR/*" kafka.Kafka "$PROPS_FILE" \
        </dev/null >"$LOG_DIR/broker.out" 2>&1 &
    STARTED_PID=$!
    echo "$STARTED_PID" >"$PID_FILE"

    [[ -z $build_pid ]] || wait "$build_pid" || { cat "$LOG_DIR/probe-build.log" >&2; log "could not build the readiness probe"; exit 1; }

    # The client port opens only once the broker is unfenced, so a connect there is the first
    # sign of life; the Metadata round trip (and a SCRAM login on the TLS port) proves usability.
    local deadline=$((SECONDS + KAFKA_START_TIMEOUT))
    until port_open "$KAFKA_PORT" &&
        "$PROBE" -q -timeout 5s -brokers "127.0.0.1:$KAFKA_PORT" 2>>"$LOG_DIR/probe.log"; do
        started_alive || { log "broker exited during start"; exit 1; }
        ((SECONDS < deadline)) || { log "broker not ready after ${KAFKA_START_TIMEOUT}s"; exit 1; }
        sleep 0.2
    done
    local mech
    for mech in SCRAM-SHA-256 SCRAM-SHA-512; do
        "$PROBE" -q -timeout 15s -brokers "127.0.0.1:$KAFKA_SASL_SSL_PORT" -tls-ca "$TLS_DIR/ca.pem" \
            -sasl "$mech" -user "$KAFKA_SCRAM_USER" -password "$KAFKA_SCRAM_PASSWORD" ||
            { log "SASL_SSL listener rejected $mech login"; exit 1; }
    done
    trap - EXIT INT TERM

}

cmd_start() {
    check_settings
    check_tools
    local t0=$SECONDS pid
    if pid=$(broker_pid); then
        log "a broker from $KAFKA_RUN_DIR is already running (pid $pid); restarting it fresh"
        terminate "$pid"
    fi
    local p
    for p in KAFKA_PORT KAFKA_CONTROLLER_PORT KAFKA_SASL_SSL_PORT; do
        ! port_open "${!p}" || die "port ${!p} ($p) is already in use; pick another with $p=..."
    done

    fetch_jars

    if [[ -e $KAFKA_RUN_DIR && ! -e $MARKER && -n $(ls -A "$KAFKA_RUN_DIR") ]]; then
        die "$KAFKA_RUN_DIR is not empty and was not made by broker.sh; refusing to wipe it"
    fi
    rm -rf "$KAFKA_RUN_DIR"
    mkdir -p "$LOG_DIR" "$DATA_DIR" "$KAFKA_RUN_DIR/bin" "$JVM_TMP_DIR"
    touch "$MARKER"

    # The readiness probe compiles while the JVMs below run (seconds when the Go cache is cold).
    (cd "$SCRIPT_DIR" && go build -o "$PROBE" ./probe) >"$LOG_DIR/probe-build.log" 2>&1 &
    local build_pid=$!

    make_tls
    write_config
    format_storage

    launch_and_wait "$build_pid"
    write_env
    log "Kafka $KAFKA_VERSION ready in $((SECONDS - t0)) s (pid $STARTED_PID, log $LOG_DIR/server.log)"
    cat "$ENV_FILE"
}

# Restart on the same data dir: topics, offsets and SCRAM users survive, as in a real broker
# restart. For tests of reconnection, not for a fresh start.
cmd_restart() {
    check_settings
    check_tools
    local t0=$SECONDS pid
    [[ -e $MARKER && -f $PROPS_FILE ]] || die "no run dir at $KAFKA_RUN_DIR to restart: use start"
    if pid=$(broker_pid); then
        terminate "$pid"
    fi
    [[ -x $PROBE ]] || die "readiness probe $PROBE is missing: use start"
    launch_and_wait ""
    log "Kafka $KAFKA_VERSION restarted in $((SECONDS - t0)) s (pid $STARTED_PID)"
}

cmd_stop() {
    local pid
    if ! pid=$(broker_pid); then
        log "not running"
        rm -f "$PID_FILE"
        return 0
    fi
    terminate "$pid"
    rm -f "$PID_FILE"
    log "stopped (pid $pid)"
}

cmd_clean() {
    check_settings
    if broker_pid >/dev/null; then
        die "the broker of $KAFKA_RUN_DIR is running: stop it first"
    fi
    if [[ -d $KAFKA_RUN_DIR ]]; then
        rm -rf "$KAFKA_RUN_DIR"
        log "removed $KAFKA_RUN_DIR"
    fi
}

cmd_status() {
    local pid
    if pid=$(broker_pid); then
        echo "running (pid $pid): PLAINTEXT 127.0.0.1:$KAFKA_PORT, SASL_SSL 127.0.0.1:$KAFKA_SASL_SSL_PORT, controller 127.0.0.1:$KAFKA_CONTROLLER_PORT; run dir $KAFKA_RUN_DIR"
        return 0
    fi
    echo "not running (run dir $KAFKA_RUN_DIR; ports $KAFKA_PORT, $KAFKA_SASL_SSL_PORT, $KAFKA_CONTROLLER_PORT)"
    return 1
}

case ${1:-} in
    start) cmd_start ;;
    stop) cmd_stop ;;
    status) cmd_status ;;
    restart) cmd_restart ;;
    run-dir) echo "$KAFKA_RUN_DIR" ;;
    clean) cmd_clean ;;
    *)
        echo "usage: $0 start|stop|status|restart|run-dir|clean" >&2
        exit 2
        ;;
esac
