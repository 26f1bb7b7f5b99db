package status

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/watermark-connect/watermark-connect/internal/kafkaconn"
	"github.com/watermark-connect/watermark-connect/internal/testkit"
)

// run is Run with the test's environment and a short timeout; it returns
// the exit status, stdout and stderr.
func run(t *testing.T, o Options) (int, string, string) {
	t.Helper()
	if o.Lookup == nil {
		o.Lookup = lookupTest
	}
	if o.Timeout == 0 {
		o.Timeout = 10 * time.Second
	}
	var stdout, stderr bytes.Buffer
	code := Run(t.Context(), o, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// closedAddr returns a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

func TestRunExitStatus(t *testing.T) {
	c := newCluster(t, 4, "orders")
	require.NoError(t, createTopic(t, c, "other", 2))
	seedGroup(t, c, "mixed")
	c.commit(t, "healthy", "orders", 0, 100, meta(t, 100, nil, nil))
	c.commit(t, "healthy", "orders", 1, 40, meta(t, 40, nil, nil))
	c.commit(t, "lost", "orders", 0, 100, meta(t, 100, nil, nil))
	c.commit(t, "lost", "orders", 1, 40, meta(t, 40, nil, &testLoss))
	c.commit(t, "dead", "orders", 0, 100, meta(t, 100, nil, &testDeadLetter))
	c.commit(t, "dead", "orders", 1, 40, meta(t, 40, nil, nil))
	c.commit(t, "deadlost", "orders", 0, 100, meta(t, 100, nil, &testDeadLetter))
	c.commit(t, "deadlost", "orders", 1, 40, meta(t, 40, nil, &testLoss))
	// The input cannot write to the dead-letter topic: the batch stays at
	// the watermark, and the stall's reason says why.
	deadStall := testStall
	deadStall.Reason = "dead_letter_write: broker down"
	c.commit(t, "deadstall", "orders", 2, 20, meta(t, 20, nil, &deadStall, &testDeadLetter))

	for _, tc := range []struct {
		name   string
		o      Options
		code   int
		stdout []string // parts of stdout
		stderr string   // a part of stderr; "" for empty
	}{
		{"healthy", Options{SeedBrokers: []string{c.addr}, Group: "healthy"}, ExitHealthy,
			[]string{"orders  0          100", "group healthy: healthy, none of 2 partitions stalled"}, ""},
		// A stall comes first: stalled and lost is ExitStalled.
		{"stalled", Options{SeedBrokers: []string{c.addr}, Group: "mixed"}, ExitStalled,
			[]string{"stalled: offsets 20-29 for", "by watermark-connect@pod-7: http 503", "lost: 20 (offsets 10-29, retention, since 2026-01-01T11:00:00Z)",
				"group mixed: 1 of 6 partitions stalled; 1 of 6 lost records before delivery"}, ""},
		// other/0's stall and loss were written for another offset: no
		// exit status for them.
		{"stalled and lost, but not in the topics asked for", Options{SeedBrokers: []string{c.addr}, Group: "mixed", Topics: []string{"other"}}, ExitHealthy,
			[]string{"group mixed: healthy, none of 2 partitions stalled"}, ""},
		{"lost records, nothing stalled", Options{SeedBrokers: []string{c.addr}, Group: "lost"}, ExitLost,
			[]string{"orders  1          40         100      60   0                no       20    -", "orders/1: lost: 20 (offsets 10-29, retention, since 2026-01-01T11:00:00Z)",
				"group lost: none of 2 partitions stalled; 1 of 2 lost records before delivery"}, ""},
		{"lost records, nothing stalled, json", Options{SeedBrokers: []string{c.addr}, Group: "lost", Format: "json"}, ExitLost,
			[]string{`"healthy": true`, `"cause": "retention"`}, ""},
		// Dead-lettering is by design: it changes no exit status.
		{"dead-lettered records", Options{SeedBrokers: []string{c.addr}, Group: "dead"}, ExitHealthy,
			[]string{"LOST  DEAD-LETTERED", "orders  0          100        100      0    0                no       -     4\n", "orders/0: dead-lettered: 4 (offsets 30-39, http 400, since 2026-01-01T11:30:00Z)",
				"group dead: healthy, none of 2 partitions stalled; 1 of 2 dead-lettered records"}, ""},
		{"dead-lettered records, json", Options{SeedBrokers: []string{c.addr}, Group: "dead", Format: "json"}, ExitHealthy,
			[]string{`"healthy": true`, `"dead_lettered": {`, `"error": "http 400"`, `"since": "2026-01-01T11:30:00.000Z"`}, ""},
		{"dead-lettered and lost records", Options{SeedBrokers: []string{c.addr}, Group: "deadlost"}, ExitLost,
			[]string{"group deadlost: none of 2 partitions stalled; 1 of 2 lost records before delivery; 1 of 2 dead-lettered records"}, ""},
		{"the dead-letter write fails", Options{SeedBrokers: []string{c.addr}, Group: "deadstall"}, ExitStalled,
			[]string{"by watermark-connect@pod-7: dead_letter_write: broker down", "4 (offsets 30-39, http 400, since 2026-01-01T11:30:00Z)",
				"group deadstall: 1 of 1 partition stalled; 1 of 1 dead-lettered records"}, ""},
		{"unknown group", Options{SeedBrokers: []string{c.addr}, Group: "nosuch"}, ExitUnknown,
			nil, `status: unknown group "nosuch"`},
		{"unreachable", Options{SeedBrokers: []string{closedAddr(t)}, Group: "healthy"}, ExitUnknown,
			nil, "status: cannot reach seed brokers 127.0.0.1:"},
		{"no group", Options{SeedBrokers: []string{c.addr}}, ExitUnknown,
			nil, "status: consumer_group: a group name is required"},
		{"no brokers", Options{Group: "g"}, ExitUnknown,
			nil, "status: seed_brokers: at least one broker address is required"},
		{"bad format", Options{SeedBrokers: []string{c.addr}, Group: "healthy", Format: "yaml"}, ExitUnknown,
			nil, `status: --format ("yaml") must be text or json`},
		{"missing topic", Options{SeedBrokers: []string{c.addr}, Group: "healthy", Topics: []string{"nope"}}, ExitUnknown,
			nil, `status: topic "nope": UNKNOWN_TOPIC_OR_PARTITION`},
	} {
		code, stdout, stderr := run(t, tc.o)
		assert.Equal(t, tc.code, code, "%s: exit status; stderr: %s", tc.name, stderr)
		for _, w := range tc.stdout {
			assert.Contains(t, stdout, w, tc.name)
		}
		if tc.stderr == "" {
			assert.Empty(t, stderr, tc.name)
		} else {
			assert.Contains(t, stderr, tc.stderr, tc.name)
			assert.Empty(t, stdout, "%s: nothing on stdout when status cannot tell", tc.name)
		}
	}
}

func TestRunJSON(t *testing.T) {
	c := newCluster(t, 4, "orders")
	require.NoError(t, createTopic(t, c, "other", 2))
	seedGroup(t, c, "mixed")

	code, stdout, stderr := run(t, Options{SeedBrokers: []string{c.addr}, Group: "mixed", Format: "json"})
	require.Equal(t, ExitStalled, code, stderr)
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(stdout), &doc), stdout)
	assert.Equal(t, "mixed", doc["group"])
	assert.Equal(t, false, doc["healthy"])
	parts := doc["partitions"].([]any)
	require.Len(t, parts, 6)
	keys := func(m map[string]any) []string {
		var out []string
		for k := range m {
			out = append(out, k)
		}
		return out
	}
	p0 := parts[0].(map[string]any)
	assert.ElementsMatch(t, []string{"topic", "partition", "committed", "log_end", "lag", "delivered_above", "stalled", "stall", "lost", "dead_lettered",
		"log_start", "lost_below_log_start", "not_consumed"}, keys(p0))
	assert.Nil(t, p0["stall"])
	assert.Nil(t, p0["lost"])
	assert.Nil(t, p0["dead_lettered"])
	lost := parts[1].(map[string]any)["lost"].(map[string]any)
	assert.Equal(t, map[string]any{"first_offset": 10.0, "last_offset": 29.0, "count": 20.0, "since": "2026-01-01T11:00:00.000Z", "cause": "retention"}, lost)
	p2 := parts[2].(map[string]any)
	assert.Equal(t, true, p2["stalled"])
	assert.Equal(t, float64(10), p2["delivered_above"])
	stall := p2["stall"].(map[string]any)
	assert.ElementsMatch(t, []string{"first_offset", "last_offset", "since", "age_s", "attempts", "reason", "member", "mark_only"}, keys(stall))
	assert.Equal(t, "2026-01-01T12:00:00.000Z", stall["since"])
	assert.Equal(t, float64(3), stall["attempts"])
}

// TestExitStatus pins the order of the exit statuses: a stall comes before
// a loss, and a loss before healthy.
func TestExitStatus(t *testing.T) {
	stall, loss, dead := testStall, testLoss, testDeadLetter
	for _, tc := range []struct {
		name  string
		parts []Partition
		want  int
	}{
		{"no partitions", nil, ExitHealthy},
		{"healthy", []Partition{{Committed: 3}}, ExitHealthy},
		{"stalled", []Partition{{Committed: 3}, {Stall: &stall}}, ExitStalled},
		{"lost", []Partition{{Committed: 3}, {Loss: &loss}}, ExitLost},
		{"stalled and lost, one partition", []Partition{{Stall: &stall, Loss: &loss}}, ExitStalled},
		{"stalled and lost, two partitions", []Partition{{Loss: &loss}, {Stall: &stall}}, ExitStalled},
		// Dead-lettering is by design, whatever else the group shows.
		{"dead-lettered", []Partition{{Committed: 3}, {DeadLetter: &dead}}, ExitHealthy},
		{"dead-lettered and lost", []Partition{{DeadLetter: &dead}, {Loss: &loss}}, ExitLost},
		{"dead-lettered and stalled", []Partition{{DeadLetter: &dead, Stall: &stall}}, ExitStalled},
		// A malformed report is no report.
		{"a malformed loss", []Partition{{MetadataErr: errors.New("loss field ln")}}, ExitHealthy},
	} {
		r := &Report{Group: "g", Partitions: tc.parts}
		assert.Equal(t, tc.want, r.ExitStatus(), tc.name)
		assert.Equal(t, tc.want != ExitStalled, r.Healthy(), "%s: Healthy is about stalls only", tc.name)
	}
	assert.Equal(t, []int{0, 1, 2, 3}, []int{ExitHealthy, ExitStalled, ExitUnknown, ExitLost}, "the exit statuses are a contract")
}

// TestRunConfigNeverPrintsThePassword: the password reaches the config
// through an environment variable, as in a Kubernetes secret; neither a
// success, a wrong password nor a config error prints it.
func TestRunConfigNeverPrintsThePassword(t *testing.T) {
	const user, password = "svc", "s3cret-hunter2-f00d"
	c := newClusterWith(t, []kgo.Opt{kgo.SASL(scram.Auth{User: user, Pass: password}.AsSha512Mechanism())},
		kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-512", user, password), kfake.SeedTopics(2, "orders"))
	c.produce(t, "orders", 0, 10)
	c.commit(t, "g", "orders", 0, 10, meta(t, 10, nil, nil))

	config := func(group string) string {
		return writeConfig(t, fmt.Sprintf(`
input:
  kafka_watermark:
    seed_brokers: [ "${BROKER}" ]
    topics: [ orders ]
    consumer_group: %s
    sasl:
      - mechanism: SCRAM-SHA-512
        username: %s
        password: "${KAFKA_PASSWORD}"
output:
  drop: {}
`, group, user))
	}
	env := func(pass string) func(string) (string, bool) {
		return func(name string) (string, bool) {
			switch name {
			case "BROKER":
				return c.addr, true
			case "KAFKA_PASSWORD":
				return pass, true
			}
			return "", false
		}
	}
	wrong := "not-" + password
	for _, tc := range []struct {
		name   string
		o      Options
		code   int
		stderr string
	}{
		{"good password", Options{ConfigPath: config("g"), Lookup: env(password)}, ExitHealthy, ""},
		{"good password, json", Options{ConfigPath: config("g"), Lookup: env(password), Format: "json"}, ExitHealthy, ""},
		{"wrong password", Options{ConfigPath: config("g"), Lookup: env(wrong)}, ExitUnknown, "SASL SCRAM-SHA-512: "},
		{"unknown group", Options{ConfigPath: config("nosuch"), Lookup: env(password)}, ExitUnknown, `unknown group "nosuch"`},
		{"flags override the config", Options{ConfigPath: config("nosuch"), Group: "g", Lookup: env(password)}, ExitHealthy, ""},
		{"unreachable", Options{ConfigPath: config("g"), SeedBrokers: []string{closedAddr(t)}, Lookup: env(password)}, ExitUnknown, "cannot reach seed brokers"},
	} {
		code, stdout, stderr := run(t, tc.o)
		assert.Equal(t, tc.code, code, "%s: exit status; stderr: %s", tc.name, stderr)
		if tc.stderr == "" {
			assert.Empty(t, stderr, tc.name)
		} else {
			assert.Contains(t, stderr, tc.stderr, tc.name)
		}
		for _, secret := range []string{password, wrong} {
			assert.NotContains(t, stdout+stderr, secret, "%s: the output holds a password", tc.name)
		}
	}
}

// The second line of defence: were a message to hold a configured secret,
// it is scrubbed before it is written.
func TestScrub(t *testing.T) {
	assert.Equal(t, "a !!!SECRET_SCRUBBED!!! b !!!SECRET_SCRUBBED!!!", Scrub("a hunter2 b hunter2", []string{"", "x", "hunter2"}))
	assert.Equal(t, "abc", Scrub("abc", []string{"ab"}), "secrets under four bytes are left")
}

// Issue 30: against a listener that accepts and never answers, status
// waited until --timeout and said only "context deadline exceeded". It
// still gives up at --timeout, and now names the address and that it
// accepted the connection and never answered.
func TestRunTimeout(t *testing.T) {
	silent, err := testkit.NewSilent()
	require.NoError(t, err)
	t.Cleanup(silent.Close)
	start := time.Now()
	code, _, stderr := run(t, Options{SeedBrokers: []string{silent.Addr()}, Group: "g", Timeout: 500 * time.Millisecond})
	assert.Equal(t, ExitUnknown, code)
	assert.Contains(t, stderr, "status: no answer within --timeout 500ms: cannot reach seed brokers "+silent.Addr()+
		": broker "+silent.Addr()+" accepted the connection and answered nothing in ")
	assert.Contains(t, stderr, "(not even ApiVersions, the first request on a connection, which a Kafka broker answers at once): context deadline exceeded")
	assert.Less(t, time.Since(start), 5*time.Second)
	assert.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %q", stderr)
}

// The mechanism "none" means no SASL, as in Redpanda Connect: it is skipped,
// not an error.
func TestNewClientSkipsNoneMechanism(t *testing.T) {
	c := newCluster(t, 1, "orders")
	tg := Target{Conn: kafkaconn.Config{SeedBrokers: []string{c.addr}, SASL: []kafkaconn.SASL{{Mechanism: "none"}}}, Group: "g"}
	assert.Empty(t, tg.security())
	cl, err := NewClient(testContext(t), tg)
	require.NoError(t, err)
	cl.Close()

	tg.Conn.SASL = []kafkaconn.SASL{{Mechanism: "GSSAPI"}}
	_, err = NewClient(testContext(t), tg)
	assert.ErrorContains(t, err, `sasl[0].mechanism ("GSSAPI") must be one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER, none`)
}

// Bug (issue 29): Scrub over JSON turned `"healthy": true` into
// `"healthy": !!!SECRET_SCRUBBED!!!` for the password "true": invalid JSON
// that tells the password. ScrubJSON replaces secrets inside strings only,
// in the form encoding/json writes them.
func TestScrubJSON(t *testing.T) {
	var doc bytes.Buffer
	require.NoError(t, json.NewEncoder(&doc).Encode(map[string]any{
		"healthy": true, "count": 1234, "error": `SASL as "true" with "p<w>&1234" failed: true`,
	}))
	secrets := []string{"true", "p<w>&1234", "1234"}
	out := ScrubJSON(doc.String(), secrets)
	var back map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &back), "valid JSON: %s", out)
	assert.Equal(t, true, back["healthy"])
	assert.Equal(t, float64(1234), back["count"], "numbers are not strings: left as they are")
	assert.Equal(t, `SASL as "!!!SECRET_SCRUBBED!!!" with "!!!SECRET_SCRUBBED!!!" failed: !!!SECRET_SCRUBBED!!!`, back["error"])
	for _, s := range secrets {
		assert.NotContains(t, back["error"], s)
	}
	assert.Equal(t, `{"a":"x"}`, ScrubJSON(`{"a":"x"}`, nil))
	assert.Equal(t, `"unclosed !!!SECRET_SCRUBBED!!!`, ScrubJSON(`"unclosed true`, []string{"true"}), "an unclosed string is scrubbed to its end")
}
