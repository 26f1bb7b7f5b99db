package status

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	// The components a config names besides the input (buffer none, drop,
	// generate, broker): the binary compiles them in, and so do the tests.
	_ "github.com/redpanda-data/benthos/v4/public/components/pure"
	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/watermark-connect/watermark-connect/plugin"
)

// testEnv is the environment the interpolation tests look variables up in.
var testEnv = map[string]string{
	"EMPTY":    "",
	"HOST":     "kafka-0",
	"DOT.NAME": "dotted",
	"LINES":    "one\ntwo",
	"B64":      "Zm9vOmJhcg==", // foo:bar
	"PASSWORD": "hunter2-secret",
}

func lookupTest(name string) (string, bool) {
	v, ok := testEnv[name]
	return v, ok
}

// interpolateCases are the syntax's cases, as Benthos documents them.
var interpolateCases = []struct {
	in, want string
}{
	{"plain text", "plain text"},
	{"${HOST}:9092", "kafka-0:9092"},
	{"${DOT.NAME}", "dotted"},
	{"${EMPTY}", ""},                  // set to "" is not missing
	{"${EMPTY:fallback}", "fallback"}, // "" takes the default
	{"${HOST:fallback}", "kafka-0"},   // a value wins over the default
	{"${UNSET:fallback}", "fallback"}, // unset with a default is fine
	{"${UNSET:}", ""},                 // an empty default
	{"${UNSET::}", ":"},               // the default is everything after the first colon
	{"${UNSET:a,b c}", "a,b c"},       // commas and spaces in a default
	{"${UNSET:tcp://*:2020}", "tcp://*:2020"},
	{"${LINES}", `one\ntwo`}, // newlines never add lines
	{"${B64|base64decode}", "foo:bar"},
	{"${UNSET:Zm9vOmJhcg==|base64decode}", "foo:bar"},
	{"${B64:x|y|base64decode}", "foo:bar"}, // the last '|' starts the function
	// A default may hold whole ${...} (Bloblang), kept verbatim.
	{"${UNSET:${!meta(\"k\")}-${!count(\"c\")}}", "${!meta(\"k\")}-${!count(\"c\")}"},
	// Escapes are literal text.
	{"${{HOST}}", "${HOST}"},
	{"${{UNSET:x}}", "${UNSET:x}"},
	// Not references.
	{"${}", "${}"},
	{"$HOST", "$HOST"},
	{"${HO ST}", "${HO ST}"},
	{"${HOST", "${HOST"},
}

func TestInterpolate(t *testing.T) {
	for _, tc := range interpolateCases {
		got, err := interpolate([]byte(tc.in), lookupTest)
		if err != nil || string(got) != tc.want {
			t.Errorf("interpolate(%q) = %q, %v, want %q, nil", tc.in, got, err, tc.want)
		}
	}
}

func TestInterpolateErrors(t *testing.T) {
	_, err := interpolate([]byte("a: ${NOPE_A}\nb: ${HOST}\nc: ${NOPE_B} ${NOPE_A}\n"), lookupTest)
	var missing *MissingEnvError
	require.True(t, errors.As(err, &missing), "error %v, want a *MissingEnvError", err)
	assert.Equal(t, []string{"NOPE_A", "NOPE_B"}, missing.Names, "each variable once, in order")
	assert.EqualError(t, err, "required environment variables were not set: NOPE_A, NOPE_B")

	_, err = interpolate([]byte("${HOST|rot13}"), lookupTest)
	assert.EqualError(t, err, "unknown env var decode function: rot13")

	// A failed decode names the function and the offset, not the value.
	_, err = interpolate([]byte("${PASSWORD|base64decode}"), lookupTest)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "failed to decode base64-encoded env var")
	assert.NotContains(t, err.Error(), testEnv["PASSWORD"])
}

// benthosInterpolate returns what Benthos's own interpolation (the one run
// uses, through the public StreamBuilder) makes of expr, as the value of a
// string field; ok false when Benthos refuses the config.
func benthosInterpolate(t *testing.T, expr string) (string, bool) {
	t.Helper()
	sb := service.GlobalEnvironment().NewStreamBuilder()
	sb.SetEnvVarLookupFunc(lookupTest)
	conf := fmt.Sprintf("input:\n  %s:\n    seed_brokers: [ x ]\n    topics: [ t ]\n    consumer_group: g\n    client_id: '%s'\n", plugin.InputName, expr)
	if err := sb.SetYAML(conf); err != nil {
		return "", false
	}
	var got string
	require.NoError(t, sb.WalkComponents(func(w *service.WalkedComponent) error {
		if w.Name != plugin.InputName {
			return nil
		}
		v, err := w.ConfigAny()
		require.NoError(t, err)
		got = v.(map[string]any)[plugin.InputName].(map[string]any)["client_id"].(string)
		return nil
	}))
	return got, true
}

// TestInterpolateMatchesBenthos compares interpolate with Benthos's own
// interpolation, which is not public, on the cases above and on 1,000
// strings built from the syntax's pieces (seeded; the seed and the string
// are in every failure message). Benthos replaces an unset variable with ""
// where interpolate reports it: those are compared with the variable set to
// "".
func TestInterpolateMatchesBenthos(t *testing.T) {
	const seed = 20260918
	r := rand.New(rand.NewPCG(seed, 1))
	pieces := []string{"${", "${{", "}", "}}", ":", "|", "base64decode", "rot13", "HOST", "EMPTY", "B64", "LINES",
		"DOT.NAME", "UNSET", "x", " ", "$", "{", "!", "Zm9v", "="}
	var cases []string
	for _, tc := range interpolateCases {
		cases = append(cases, tc.in)
	}
	for range 1000 {
		var b strings.Builder
		for range 1 + r.IntN(8) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		cases = append(cases, b.String())
	}
	for i, expr := range cases {
		got, err := interpolate([]byte(expr), lookupTest)
		var missing *MissingEnvError
		if errors.As(err, &missing) {
			// Benthos's best attempt: the unset variables as "".
			got, err = interpolate([]byte(expr), func(name string) (string, bool) {
				if v, ok := lookupTest(name); ok {
					return v, true
				}
				return "", true
			})
		}
		want, ok := benthosInterpolate(t, expr)
		if ok != (err == nil) || ok && string(got) != want {
			t.Fatalf("seed %d case %d: interpolate(%q) = %q, %v; Benthos gives %q (accepted: %v)", seed, i, expr, got, err, want, ok)
		}
	}
}
