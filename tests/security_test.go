package tests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// secureInput is the kafka_watermark fields for the SASL_SSL listener.
func secureInput(ca, mechanism, user, password string) string {
	return fmt.Sprintf(`commit_period: 200ms
tls:
  enabled: true
  root_cas_file: %q
sasl:
  - mechanism: %s
    username: %q
    password: %q
`, ca, mechanism, user, password)
}

// TestSecurity covers the SASL_SSL listener: TLS + SCRAM-SHA-512 end to end,
// and the failures a user meets, each with a clear error, retried with
// backoff, committing nothing and never printing a secret.
func TestSecurity(t *testing.T) {
	env := needBroker(t)
	if env.SASLBrokers == "" || env.CA == "" || env.User == "" || env.Password == "" {
		t.Fatal("the broker env lacks KAFKA_SASL_SSL_BROKERS, KAFKA_TLS_CA, KAFKA_SCRAM_USER or KAFKA_SCRAM_PASSWORD")
	}
	k := newKafka(t, env)
	const parts, perPart = 2, 500
	topic := "wm-sec-" + suffix()
	k.createTopic(topic, parts)
	k.produce(topic, parts, perPart, nil)
	end := k.endOffsets(topic)
	wrongPassword := "not-" + env.Password + "-x9"

	// noSecrets fails the test if a log holds the password (or the wrong
	// one the test used).
	noSecrets := func(t *testing.T, what, text string) {
		t.Helper()
		for _, secret := range []string{env.Password, wrongPassword} {
			if strings.Contains(text, secret) {
				t.Errorf("%s contains a password (%q)", what, secret)
			}
		}
	}
	// connectErrors returns the input's connection failures.
	tryingAgainIn := regexp.MustCompile(`trying again in ([0-9.]+[a-zµ]+)`)
	connectErrors := func(p *proc) []logLine {
		return p.grep("Failed to connect to kafka_watermark")
	}

	t.Run("scram_sha512_ok", func(t *testing.T) {
		group := "wm-sec-ok-" + suffix()
		s := newSink(t, topic, parts, 0, 0)
		// The password reaches the config through an environment variable,
		// as a user would pass it.
		conf := pipeline{brokers: env.SASLBrokers, topic: topic, group: group, sinkURL: s.url(), logLevel: "TRACE",
			input: secureInput(env.CA, "SCRAM-SHA-512", env.User, "${WMC_E2E_KAFKA_PASSWORD}")}
		p := startProc(t, "tls-scram", conf.yaml(), "WMC_E2E_KAFKA_PASSWORD="+env.Password)
		k.waitCommitted(group, topic, end, 2*time.Minute)
		s.waitIdle(t, 10*time.Second)
		p.stop(45 * time.Second)
		if n := s.snapshot().coverage(t, end); n != 0 {
			t.Errorf("%d duplicates", n)
		}
		if ls := connectErrors(p); len(ls) > 0 {
			t.Errorf("the input failed to connect %d time(s) with good credentials: %s", len(ls), ls[0].text)
		}
		noSecrets(t, "the TRACE log", p.logText())
	})

	// A tcp block with TLS: kgo refuses a custom dialer together with its
	// own TLS dialer, so the input runs the TLS handshake over the tcp
	// block's dialer itself, with the broker's host as the server name.
	t.Run("tls_over_tcp_block", func(t *testing.T) {
		group := "wm-sec-tcp-" + suffix()
		s := newSink(t, topic, parts, 0, 0)
		conf := pipeline{brokers: env.SASLBrokers, topic: topic, group: group, sinkURL: s.url(),
			input: secureInput(env.CA, "SCRAM-SHA-512", env.User, env.Password) +
				"tcp:\n  connect_timeout: 5s\n  keep_alive:\n    idle: 10s\n"}
		p := startProc(t, "tls-tcp", conf.yaml())
		k.waitCommitted(group, topic, end, 2*time.Minute)
		s.waitIdle(t, 10*time.Second)
		p.stop(45 * time.Second)
		if n := s.snapshot().coverage(t, end); n != 0 {
			t.Errorf("%d duplicates", n)
		}
		if ls := connectErrors(p); len(ls) > 0 {
			t.Errorf("the input failed to connect %d time(s) over the tcp block: %s", len(ls), ls[0].text)
		}
	})

	t.Run("echo_scrubs_secrets", func(t *testing.T) {
		for name, password := range map[string]string{"literal": env.Password, "env": "${WMC_E2E_KAFKA_PASSWORD}"} {
			conf := pipeline{brokers: env.SASLBrokers, topic: topic, group: "wm-sec-echo", sinkURL: "http://127.0.0.1:1/x",
				input: secureInput(env.CA, "SCRAM-SHA-512", env.User, password)}
			dir := t.TempDir()
			path := filepath.Join(dir, "c.yaml")
			if err := os.WriteFile(path, []byte(conf.yaml()), 0o600); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(binary(t), "echo", path)
			cmd.Env = append(os.Environ(), "WMC_E2E_KAFKA_PASSWORD="+env.Password)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("echo (%s password): %v\n%s", name, err, out)
			}
			if !strings.Contains(string(out), "kafka_watermark") || !strings.Contains(string(out), env.User) {
				t.Errorf("echo (%s password) does not show the config:\n%s", name, out)
			}
			noSecrets(t, "echo output ("+name+" password)", string(out))
		}
	})

	// A failing connection: the error names the mechanism and the broker,
	// the input keeps retrying with backoff, and the group commits nothing.
	failing := func(t *testing.T, name, brokers, input string, want ...string) {
		t.Helper()
		group := "wm-sec-" + name + "-" + suffix()
		s := newSink(t, topic, parts, 0, 0)
		conf := pipeline{brokers: brokers, topic: topic, group: group, sinkURL: s.url(), logLevel: "TRACE", input: input}
		start := time.Now()
		p := startProc(t, name, conf.yaml())
		require.Eventually(t, func() bool { return len(connectErrors(p)) > 0 }, 60*time.Second, 50*time.Millisecond,
			"a connection error")
		first := connectErrors(p)[0]
		t.Logf("first error after %v: %s", first.at.Sub(start).Round(time.Millisecond), first.text)
		if d := first.at.Sub(start); d > 20*time.Second {
			t.Errorf("the first connection error took %v: not failing fast", d)
		}
		for _, w := range want {
			if !strings.Contains(first.text, w) {
				t.Errorf("the connection error does not contain %q:\n%s", w, first.text)
			}
		}
		// Retries: several attempts, each after the wait its error names
		// (1s, doubling to 30s: plugin/input.go, connectBackoff), never a
		// hot loop and never a line a second for ever.
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			assert.GreaterOrEqual(c, len(connectErrors(p)), 4, "connection attempts")
		}, 60*time.Second, 50*time.Millisecond, "four connection attempts")
		attempts := connectErrors(p)[:4]
		var waits []time.Duration
		for i, l := range attempts {
			m := tryingAgainIn.FindStringSubmatch(l.text)
			if m == nil {
				t.Fatalf("connection error %d does not say when it tries again:\n%s", i+1, l.text)
			}
			w, err := time.ParseDuration(m[1])
			require.NoError(t, err)
			waits = append(waits, w)
			if i > 0 {
				gap := l.at.Sub(attempts[i-1].at)
				// Lines are stamped as the test reads them: allow a little.
				if gap < waits[i-1]-250*time.Millisecond {
					t.Errorf("attempt %d came %v after the one that said %q", i+1, gap, m[0])
				}
			}
		}
		t.Logf("connection attempts waited %v", waits)
		if !slices.Equal(waits, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second}) {
			t.Errorf("the waits between connection attempts are %v, want 1s doubling", waits)
		}
		if !p.running() {
			t.Fatalf("the process gave up: %v", p.waitErr)
		}
		if s.total() != 0 {
			t.Errorf("the sink received %d records", s.total())
		}
		if c := k.mustCommitted(group, topic); len(c) != 0 {
			t.Errorf("group %s committed %v without a connection", group, fmtOffsets(c))
		}
		p.stop(45 * time.Second)
		noSecrets(t, "the TRACE log", p.logText())
	}

	saslAddr := env.SASLBrokers
	t.Run("wrong_password", func(t *testing.T) {
		t.Log("EXPECTED: the binary below logs level=error SASL_AUTHENTICATION_FAILED connection errors: this case gives it a wrong password")
		failing(t, "wrong-password", saslAddr, secureInput(env.CA, "SCRAM-SHA-512", env.User, wrongPassword),
			"kafka_watermark: cannot reach seed brokers "+saslAddr+" with TLS and SASL SCRAM-SHA-512: ",
			"SASL_AUTHENTICATION_FAILED")
	})
	t.Run("untrusted_ca", func(t *testing.T) {
		if env.UntrustedCA == "" {
			t.Fatal("the broker env lacks KAFKA_TLS_UNTRUSTED_CA")
		}
		t.Log("EXPECTED: the binary below logs level=error \"x509: certificate signed by unknown authority\" connection errors: this case gives it a CA that did not sign the broker's certificate")
		failing(t, "untrusted-ca", saslAddr, secureInput(env.UntrustedCA, "SCRAM-SHA-512", env.User, env.Password),
			"kafka_watermark: cannot reach seed brokers "+saslAddr+" with TLS and SASL SCRAM-SHA-512: ",
			"x509: certificate signed by unknown authority")
	})
	t.Run("plaintext_on_tls_port", func(t *testing.T) {
		t.Log("EXPECTED: the binary below logs level=error connection errors (\"is this a plaintext connection speaking to a tls endpoint?\"): this case connects without TLS to the TLS port")
		failing(t, "plaintext", saslAddr, "commit_period: 200ms\n",
			"kafka_watermark: cannot reach seed brokers "+saslAddr+": ",
			"is this a plaintext connection speaking to a tls endpoint?")
	})
}
