#!/usr/bin/env bash
# Checks the monitoring resources: the alerting rules (promtool check + unit
# tests), the dashboard JSON, and that every metric name the rules and the
# dashboard use is one we export.
#
# Needs promtool and python3. promtool is looked for as $PROMTOOL, then
# bin/promtool at the project root (`make promtool` builds it there), then on
# PATH. Outside CI nothing is ever installed: a missing tool skips the checks
# needing it, with a line "SKIP (no <tool>): ..." saying how to get it, and
# resources/test.sh repeats the skip in its last line. With CI=true a missing
# tool is installed with apt-get (as root or with passwordless sudo; services
# the packages ship are not started), announced first; a tool still missing
# after that is a failure.
#
# Environment: PROMTOOL=/path/to/promtool to use a specific binary (a path
# that is not an executable fails); CI=true as above.
set -euo pipefail
cd "$(dirname "$0")"
ROOT=$(cd ../.. && pwd)

failed=0
fail() { echo "FAIL: $*" >&2; failed=1; }

in_ci() { [ "${CI:-}" = "true" ]; }

# skip TOOL HOW...: reports the checks skipped for want of TOOL, then the
# ways to get it, one a line. resources/test.sh collects the "SKIP (" lines.
skipped=()
skip() {
  local tool=$1
  shift
  skipped+=("no $tool")
  {
    echo "SKIP (no $tool): the checks needing $tool did not run. To run them, any of:"
    printf '  - %s\n' "$@"
  } >&2
}

# announce_install PKG TOOL WHY AVOID: says loudly, before it happens, that
# a package is about to be installed system-wide, why, and how to avoid it.
announce_install() {
  local bar='################################################################################'
  printf '%s\n' "$bar" \
    "# CI=true and $2 was not found: installing the Debian package '$1'" \
    "# system-wide with apt-get (its services are not started), to $3." \
    "# To avoid this install: $4" \
    "$bar" >&2
}

# install_pkg PKG: quietly installs a Debian package without starting the
# services it ships. Returns non-zero if it cannot.
install_pkg() {
  local pkg=$1 sudo="" log policy=/usr/sbin/policy-rc.d created_policy=0 rc=0
  command -v apt-get >/dev/null 2>&1 || { echo "cannot install $pkg: no apt-get" >&2; return 1; }
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
      sudo="sudo -n"
    else
      echo "cannot install $pkg: not root and no passwordless sudo" >&2
      return 1
    fi
  fi
  echo "installing $pkg with apt-get ..." >&2
  log=$(mktemp)
  # policy-rc.d exiting 101 keeps invoke-rc.d from starting the package's
  # services (the prometheus package would otherwise start a server on :9090).
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null
    $sudo chmod 755 "$policy"
    created_policy=1
    # Removed below; this covers an interrupted install. Expanded now on
    # purpose: the locals are gone when the trap runs.
    # shellcheck disable=SC2064
    trap "$sudo rm -f '$policy'; rm -f '$log'" EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
  fi
  {
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 update -qq &&
      $sudo env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq \
        --no-install-recommends "$pkg"
  } >"$log" 2>&1 || rc=$?
  if [ "$created_policy" = 1 ]; then
    $sudo rm -f "$policy"
    trap - EXIT INT TERM
  fi
  # Belt and braces on a systemd host: never leave a server running or
  # enabled because of this install.
  if [ "$pkg" = prometheus ] && [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
    $sudo systemctl disable --now prometheus.service >/dev/null 2>&1 || true
  fi
  if [ "$rc" -ne 0 ]; then
    echo "apt-get install $pkg failed (exit $rc):" >&2
    tail -n 30 "$log" >&2
  else
    echo "installed $pkg" >&2
  fi
  rm -f "$log"
  return "$rc"
}

# look_promtool: sets PROMTOOL to bin/promtool, else the promtool on PATH.
look_promtool() {
  if [ -x "$ROOT/bin/promtool" ]; then
    PROMTOOL=$ROOT/bin/promtool
  else
    PROMTOOL=$(command -v promtool 2>/dev/null || true)
    # A bare PATH (some CI shells) may lack /usr/bin, where Debian puts it.
    if [ -z "$PROMTOOL" ] && [ -x /usr/bin/promtool ]; then PROMTOOL=/usr/bin/promtool; fi
  fi
  [ -n "$PROMTOOL" ]
}

echo "== promtool"
have_promtool=0
if [ -n "${PROMTOOL:-}" ]; then
  if [ -f "$PROMTOOL" ] && [ -x "$PROMTOOL" ]; then
    have_promtool=1
  else
    fail "PROMTOOL=$PROMTOOL is not an executable file"
  fi
elif look_promtool; then
  have_promtool=1
elif in_ci; then
  announce_install prometheus promtool "run 'promtool test rules' on resources/monitoring/alerts.yml" \
    "put promtool on PATH, build bin/promtool once with 'make promtool', or set PROMTOOL=/path/to/promtool."
  install_pkg prometheus || true
  if look_promtool; then have_promtool=1; else fail "promtool is not available (CI=true: not skipping)"; fi
else
  skip promtool \
    "make promtool   (builds the pinned Go module into bin/promtool, found from then on; about 6.5 min, once)" \
    "sudo apt-get install prometheus   (Debian/Ubuntu, ships /usr/bin/promtool; on systemd also: sudo systemctl disable --now prometheus)" \
    "PROMTOOL=/path/to/promtool make test   (a promtool you already have)"
fi
if [ "$have_promtool" = 1 ]; then
  echo "using $PROMTOOL: $("$PROMTOOL" --version 2>&1 | head -n 1)"
  "$PROMTOOL" check rules alerts.yml || fail "promtool check rules alerts.yml"
  "$PROMTOOL" test rules alerts_test.yml || fail "promtool test rules alerts_test.yml"
fi

# find_python: whether python3 is on PATH; under CI=true only, a missing
# one is installed (announced first).
find_python() {
  command -v python3 >/dev/null 2>&1 && return 0
  in_ci || return 1
  announce_install python3 python3 "check the metric names of alerts.yml and dashboard.json" \
    "put python3 on PATH."
  install_pkg python3 || true
  command -v python3 >/dev/null 2>&1
}

echo "== dashboard.json and metric names"
if find_python; then
  python3 -m json.tool dashboard.json >/dev/null || fail "dashboard.json is not valid JSON"
  python3 - <<'PY' || fail "metric name check"
import json, re, sys, os

KAFKA = [
    "kafka_watermark_committed_offset", "kafka_watermark_pending_batches",
    "kafka_watermark_stalled", "kafka_watermark_paused",
    "kafka_watermark_age_seconds", "kafka_watermark_lag",
    "kafka_watermark_commits_total", "kafka_watermark_commit_errors_total",
    "kafka_watermark_late_acks_total", "kafka_watermark_duplicate_acks_total",
    "kafka_watermark_stall_replays_total", "kafka_watermark_replay_exposure_records",
    "kafka_watermark_skipped_records_total",
    "kafka_watermark_commit_metadata_truncated_total",
    "kafka_watermark_lost_records_total", "kafka_watermark_truncated_records_total",
    "kafka_watermark_retention_headroom_seconds", "kafka_watermark_retention_seconds",
    "kafka_watermark_dead_lettered_records_total", "kafka_watermark_dead_letter_errors_total",
    "kafka_watermark_held_records",
    "kafka_watermark_transactions_total", "kafka_watermark_transaction_records_total",
]
# The kafka_share input's (plugin/share_metrics.go).
SHARE = [
    "kafka_share_records_total", "kafka_share_in_flight_records",
    "kafka_share_lock_renewals_total", "kafka_share_lock_expired_total",
    "kafka_share_ack_errors_total",
]
UPCOMING = []
# The commit latency is a Benthos timer, named _ns in Benthos (nanoseconds);
# our prometheus exporter exports timers as histograms in seconds, renaming
# _ns to _seconds (metrics/prometheus/names.go).
TIMERS = ["kafka_watermark_commit_latency_ns", "kafka_watermark_transaction_duration_ns"]
HISTOGRAMS = [t[:-len("_ns")] + "_seconds" for t in TIMERS]
TIMER, HISTOGRAM = TIMERS[0], HISTOGRAMS[0]
BENTHOS = ["input_received", "output_sent", "output_error"]
KNOWN = set(KAFKA + SHARE + UPCOMING + BENTHOS + [h + s for h in HISTOGRAMS for s in ("_bucket", "_sum", "_count")])

KEYWORDS = {"and", "or", "unless", "by", "without", "on", "ignoring",
            "group_left", "group_right", "bool", "offset", "inf", "nan"}
errors = []

def rule_exprs(path):
    """The expr of every rule and the record names, from a rule file,
    without a YAML library: handles plain, quoted and block scalars."""
    exprs, records = [], set()
    lines = open(path).read().splitlines()
    i = 0
    while i < len(lines):
        m = re.match(r"^(\s*)(?:-\s+)?(expr|record):\s*(.*)$", lines[i])
        i += 1
        if not m:
            continue
        key, val = m.group(2), m.group(3).strip()
        if val[:1] in ("|", ">"):
            block, indent = [], len(m.group(1))
            while i < len(lines) and (not lines[i].strip() or
                                      len(lines[i]) - len(lines[i].lstrip()) > indent):
                block.append(lines[i].strip())
                i += 1
            val = " ".join(block)
        elif val[:1] in ("'", '"'):
            val = val[1:-1]
        (exprs.append(val) if key == "expr" else records.add(val))
    return exprs, records

def dashboard_exprs(node, out):
    if isinstance(node, dict):
        for k, v in node.items():
            if k in ("expr", "definition") and isinstance(v, str):
                out.append(v)
            elif k == "query" and isinstance(v, dict) and isinstance(v.get("query"), str):
                out.append(v["query"])
            else:
                dashboard_exprs(v, out)
    elif isinstance(node, list):
        for v in node:
            dashboard_exprs(v, out)
    return out

def metric_names(expr):
    e = re.sub(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'|`[^`]*`', '""', expr)
    e = re.sub(r"\{[^}]*\}", " ", e)                       # label matchers
    e = re.sub(r"\[[^\]]*\]", " ", e)                      # ranges, subqueries
    e = re.sub(r"\$\{[^}]*\}|\$\w+", " 0 ", e)             # Grafana variables
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", e)
    e = re.sub(r"\blabel_values\s*\(([^,()]+),\s*\w+\s*\)", r" (\1) ", e)
    e = re.sub(r"\boffset\s+-?\w+", " ", e)
    e = re.sub(r"(?<![\w:])\d+(\.\d+)?([eE][+-]?\d+)?[smhdwy]?\b", " ", e)
    names = []
    for m in re.finditer(r"[A-Za-z_:][\w:]*", e):
        rest = e[m.end():].lstrip()
        if rest.startswith("(") or m.group(0).lower() in KEYWORDS:
            continue  # function or aggregation, or a keyword
        names.append(m.group(0))
    return names

rules, records = rule_exprs("alerts.yml")
dash = dashboard_exprs(json.load(open("dashboard.json")), [])
if not rules:
    errors.append("alerts.yml: no rule expressions found")
if len(dash) < 10:
    errors.append("dashboard.json: only %d queries found" % len(dash))

used = set()
for where, exprs in (("alerts.yml", rules), ("dashboard.json", dash)):
    for expr in exprs:
        for name in metric_names(expr):
            used.add(name)
            if name not in KNOWN and name not in records:
                errors.append("%s: unknown metric %r in: %s" % (where, name, expr))

for name in KAFKA + SHARE + [h + "_bucket" for h in HISTOGRAMS] + BENTHOS[:2]:
    if not any(name in metric_names(e) for e in dash):
        errors.append("dashboard.json: no panel uses %s" % name)

# The names must still be the ones the input exports, and every metric the
# input exports must be listed here (so a new one is known to the rules).
src = os.path.join("..", "..", "internal", "engine", "metrics.go")
if not os.path.exists(src):
    errors.append("%s is missing: where does the input define its metrics now?" % src)
else:
    code = open(src).read()
    for name in KAFKA + TIMERS:
        if '"%s"' % name not in code:
            errors.append("%s no longer defines metric %s" % (src, name))
    for name in sorted(set(re.findall(r'"(kafka_watermark_\w+)"', code)) - set(KAFKA + TIMERS)):
        errors.append("%s defines metric %s, which test.sh does not list" % (src, name))
src = os.path.join("..", "..", "plugin", "share_metrics.go")
if not os.path.exists(src):
    errors.append("%s is missing: where does the kafka_share input define its metrics now?" % src)
else:
    code = open(src).read()
    for name in SHARE:
        if '"%s"' % name not in code:
            errors.append("%s no longer defines metric %s" % (src, name))
    for name in sorted(set(re.findall(r'"(kafka_share_\w+)"', code)) - set(SHARE)):
        errors.append("%s defines metric %s, which test.sh does not list" % (src, name))
names = os.path.join("..", "..", "metrics", "prometheus", "names.go")
if os.path.exists(names):
    code = open(names).read()
    if not ('"_ns"' in code and '"_seconds"' in code):
        errors.append("%s no longer renames timers from _ns to _seconds: %s is not exported"
                      % (names, HISTOGRAM))

for e in errors:
    print(e, file=sys.stderr)
if errors:
    sys.exit(1)
print("ok: %d rule and %d dashboard expressions use %d known metric names"
      % (len(rules), len(dash), len(used)))
PY
elif in_ci; then
  fail "python3 is not available (CI=true: not skipping)"
else
  if command -v jq >/dev/null 2>&1; then
    jq empty dashboard.json || fail "dashboard.json is not valid JSON"
  fi
  skip python3 "sudo apt-get install python3   (or any python3 on PATH; the check needs its standard library only)"
fi

if [ "$failed" -ne 0 ]; then
  echo "monitoring checks FAILED" >&2
  exit 1
fi
if [ "${#skipped[@]}" -gt 0 ]; then
  list=$(printf '%s, ' "${skipped[@]}")
  echo "monitoring checks passed, except the ones skipped: ${list%, } (see SKIP above)"
else
  echo "monitoring checks passed"
fi
