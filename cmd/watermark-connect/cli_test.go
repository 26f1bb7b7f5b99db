package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestVersionIsStampedByLdflags(t *testing.T) {
	t.Parallel()
	for _, flag := range []string{"--version", "-v"} {
		out, code := runBinary(t, nil, flag)
		require.Equal(t, 0, code, out)
		assert.Contains(t, out, "Version: "+testVersion, flag)
		assert.Contains(t, out, "Date: "+testDateBuilt, flag)
	}
}

func TestListShowsOurComponents(t *testing.T) {
	t.Parallel()
	out, code := runBinary(t, nil, "list", "inputs")
	require.Equal(t, 0, code, out)
	assert.Regexp(t, `(?m)^\s*- kafka_watermark$`, out)
	assert.Regexp(t, `(?m)^\s*- generate$`, out, "pure components are compiled in")
	assert.Regexp(t, `(?m)^\s*- file$`, out, "io components are compiled in")

	out, code = runBinary(t, nil, "list", "metrics")
	require.Equal(t, 0, code, out)
	assert.Regexp(t, `(?m)^\s*- prometheus$`, out)
}

func TestLint(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const base = `
input:
  kafka_watermark:
    seed_brokers: [ localhost:9092 ]
    topics: [ orders ]
%s
output:
  drop: {}
`
	good := writeFile(t, dir, "good.yaml", strings.Replace(base, "%s", "    consumer_group: g\n    max_pending_batches: 8", 1))
	// A port that is not a number: run retried it for ever.
	notaport := writeFile(t, dir, "notaport.yaml", strings.Replace(strings.Replace(base, "%s", "    consumer_group: g", 1), "localhost:9092", "localhost:notaport", 1))
	out, code := runBinary(t, nil, "lint", notaport)
	assert.NotEqual(t, 0, code, out)
	assert.Contains(t, out, `notaport.yaml(4,1) seed_brokers: "localhost:notaport" is not a broker address: want host:port`)

	out, code = runBinary(t, nil, "lint", good)
	require.Equal(t, 0, code, out)
	assert.Empty(t, strings.TrimSpace(out))

	for _, tc := range []struct {
		name, fields, want string
	}{
		{"max_pending_batches zero", "    consumer_group: g\n    max_pending_batches: 0", "max_pending_batches"},
		{"no consumer_group", "    max_pending_batches: 8", "consumer_group"},
		{"unknown field", "    consumer_group: g\n    max_pendng_batches: 8", "max_pendng_batches"},
		// What run refused and lint passed (#30), each at its field's line
		// (line 7: the line after consumer_group's).
		{"negative duration", "    consumer_group: g\n    commit_period: -5s", "(7,1) commit_period (-5s) must be positive"},
		{"duration in words", "    consumer_group: g\n    commit_period: 5 seconds", `(7,1) commit_period ("5 seconds") is not a duration`},
		{"size in words", "    consumer_group: g\n    batch_max_bytes: 1 megabyte", `(7,1) batch_max_bytes ("1 megabyte") is not a byte size`},
		{"unknown enum value", "    consumer_group: g\n    start_offset: beginning", `(7,1) start_offset ("beginning") must be one of earliest, latest, committed`},
		{"drain above rebalance", "    consumer_group: g\n    drain_timeout: 50s", "drain_timeout (50s) must be below rebalance_timeout (45s)"},
	} {
		bad := writeFile(t, dir, strings.ReplaceAll(tc.name, " ", "_")+".yaml", strings.Replace(base, "%s", tc.fields, 1))
		out, code := runBinary(t, nil, "lint", bad)
		assert.NotEqual(t, 0, code, "%s: lint must fail; output:\n%s", tc.name, out)
		assert.Contains(t, out, tc.want, tc.name)
		assert.Contains(t, out, filepath.Base(bad), "%s: the error names the file", tc.name)
	}
}

// Benthos's echo and lint know which fields are secrets (Secret() in the
// spec): echo must print them scrubbed, whether written in the file or
// resolved from the environment.
func TestEchoScrubsSecrets(t *testing.T) {
	t.Parallel()
	const (
		literal = "literal-hunter2-f00d"
		fromEnv = "env-hunter2-beef"
		token   = "token-hunter2-cafe"
	)
	cfg := writeFile(t, t.TempDir(), "sasl.yaml", `
input:
  kafka_watermark:
    seed_brokers: [ localhost:9092 ]
    topics: [ orders ]
    consumer_group: g
    sasl:
      - mechanism: SCRAM-SHA-512
        username: svc
        password: `+literal+`
      - mechanism: PLAIN
        username: "${WC_TEST_USER}"
        password: "${WC_TEST_PASSWORD}"
      - mechanism: OAUTHBEARER
        token: `+token+`
output:
  drop: {}
`)
	out, code := runBinary(t, []string{"WC_TEST_USER=svc2", "WC_TEST_PASSWORD=" + fromEnv}, "echo", cfg)
	require.Equal(t, 0, code, out)
	for _, secret := range []string{literal, fromEnv, token} {
		assert.NotContains(t, out, secret)
	}
	assert.Equal(t, 3, strings.Count(out, "!!!SECRET_SCRUBBED!!!"), "two passwords and a token scrubbed:\n%s", out)
}

// Every example under config/ must lint clean with the binary's own schema.
// Environment variables an example requires (no default) are set to a
// placeholder, as an operator would set them.
func TestExampleConfigsLint(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..", "config")
	var files []string
	require.NoError(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
			files = append(files, p)
		}
		return err
	}))
	sort.Strings(files)
	require.GreaterOrEqual(t, len(files), 7, "the examples: %v", files)

	required := regexp.MustCompile(`\$\{([A-Za-z0-9_.]+)\}`) // ${VAR} without a :default
	for _, f := range files {
		t.Run(strings.TrimPrefix(filepath.ToSlash(f), "../../"), func(t *testing.T) {
			t.Parallel()
			raw, err := os.ReadFile(f)
			require.NoError(t, err)
			var env []string
			for _, m := range required.FindAllStringSubmatch(string(raw), -1) {
				env = append(env, m[1]+"=placeholder")
			}
			out, code := runBinary(t, env, "lint", f)
			assert.Equal(t, 0, code, "lint %s:\n%s", f, out)
			assert.Empty(t, strings.TrimSpace(out))
		})
	}
}

// Every help page names this binary's documentation and components only:
// no Benthos URL, no example using a component the binary lacks, and every
// `create` example in the help runs.
func TestHelpNamesOnlyWhatThisBinaryHas(t *testing.T) {
	t.Parallel()
	pages := map[string]string{}
	for _, args := range [][]string{{"--help"}, {"echo", "--help"}, {"lint", "--help"}, {"run", "--help"},
		{"streams", "--help"}, {"list", "--help"}, {"create", "--help"}, {"test", "--help"}, {"template", "--help"},
		{"template", "lint", "--help"}, {"blobl", "--help"}, {"blobl", "server", "--help"}, {"demo", "--help"},
		{"status", "--help"}, {"dead-letter", "--help"}, {"dead-letter", "inspect", "--help"}, {"dead-letter", "redrive", "--help"}} {
		out, code := runBinary(t, nil, args...)
		require.Equal(t, 0, code, "%v: %s", args, out)
		pages[strings.Join(args, " ")] = out
	}
	root := pages["--help"]
	assert.Contains(t, root, "watermark-connect - Benthos with the kafka_watermark input", "root tagline")
	assert.Contains(t, root, docsURL, "root help links this project's documentation")

	urlRe := regexp.MustCompile(`https?://[^\s)]+`)
	createRe := regexp.MustCompile(`(?m)^\s*watermark-connect (create [a-z_,]+/\S*)`)
	var creates []string
	for name, out := range pages {
		for _, stale := range []string{"benthos.dev", "mundane", "kafka//", "awk", "nats", "protobuf"} {
			assert.NotContains(t, out, stale, "help of %q", name)
		}
		for _, u := range urlRe.FindAllString(out, -1) {
			assert.True(t, u == docsURL || strings.HasPrefix(u, engineDocsURL+"/"), "help of %q links %s", name, u)
		}
		for _, m := range createRe.FindAllStringSubmatch(out, -1) {
			creates = append(creates, m[1])
		}
	}
	require.Len(t, creates, 3, "the root help's and create's examples")
	for _, c := range creates {
		out, code := runBinary(t, nil, strings.Fields(c)...)
		require.Equal(t, 0, code, "%s: %s", c, out)
		assert.Contains(t, out, "kafka_watermark:", c)
	}
}

// Bug (issue 29): a usage error exited 1, which status means "stalled", so
// a probe with `--timeout 5` read stalled for ever; `dead-letter bogus`
// exited 3 ("lost"). Every command exits 2 on a usage error, with one line
// on stderr naming the command, the flag, the value and the form expected,
// and nothing on stdout.
func TestUsageErrorsExit2(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"status", "--timeout", "5"}, `watermark-connect status: --timeout "5" is not a duration with its unit, e.g. "5s"`},
		{[]string{"status", "--bogus"}, "watermark-connect status: no flag --bogus"},
		{[]string{"status", "extra"}, "unexpected arguments [extra]"},
		{[]string{"dead-letter", "bogus"}, `watermark-connect dead-letter: no subcommand "bogus": use one of inspect, redrive`},
		{[]string{"dead-letter", "inspect", "--nope"}, "watermark-connect dead-letter inspect: no flag --nope"},
		{[]string{"dead-letter", "redrive", "--timeout", "1x"}, `watermark-connect dead-letter redrive: --timeout "1x" is not a duration`},
		{[]string{"dead-letter", "redrive", "--batch-size", "many"}, `watermark-connect dead-letter redrive: --batch-size "many" is not a whole number`},
		{[]string{"demo", "--stall-replay-after", "2"}, `watermark-connect demo: --stall-replay-after "2" is not a duration with its unit, e.g. "5s", "2s"`},
	} {
		stdout, stderr, code := runBinarySplit(t, nil, tc.args...)
		assert.Equal(t, 2, code, "%v: exit status; stderr: %s", tc.args, stderr)
		assert.Empty(t, stdout, "%v: stdout", tc.args)
		assert.Contains(t, stderr, tc.want, tc.args)
		assert.Equal(t, 1, strings.Count(stderr, "\n"), "%v: one line on stderr: %q", tc.args, stderr)
	}
	out, code := runBinary(t, nil, "dead-letter")
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, "inspect", "dead-letter alone shows its help")
}

// Regression: `create kafka_watermark`, which the help shows, wrote every
// optional field of the redpanda input's that this input takes only for
// ported configs with its type's zero value (auto_replay_nacks: false,
// partition_buffer_bytes: "", max_yield_batch_bytes: "", checkpoint_limit: 0),
// and lint refused the template however its required fields were filled.
// Filled in, every template the help shows lints clean (and lint runs the
// checks the input runs at start); so do the output's, whose optional
// fields create writes empty, which is absent.
func TestCreateTemplateLintsOnceFilled(t *testing.T) {
	t.Parallel()
	fill := strings.NewReplacer(
		"seed_brokers: [] # No default (required)", "seed_brokers: [ localhost:9092 ]",
		"topics: [] # No default (optional)", "topics: [ orders ]",
		`consumer_group: "" # No default (required)`, "consumer_group: g",
	)
	dir := t.TempDir()
	for i, expr := range []string{"kafka_watermark", "kafka_watermark/mapping/http_client", "kafka_watermark/mapping,log/file",
		"kafka_watermark/mapping/kafka_watermark"} {
		out, code := runBinary(t, nil, "create", expr)
		require.Equal(t, 0, code, out)
		for _, stale := range []string{"auto_replay_nacks", "partition_buffer_bytes", "max_yield_batch_bytes", "checkpoint_limit"} {
			assert.NotContains(t, out, stale, "create %s writes a field kept only for ported configs", expr)
		}
		f := writeFile(t, dir, fmt.Sprintf("create%d.yaml", i), fill.Replace(out))
		lint, code := runBinary(t, nil, "lint", f)
		assert.Equal(t, 0, code, "create %s, filled in, must lint clean:\n%s", expr, lint)
	}
}
